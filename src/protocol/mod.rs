//! The shardlog wire protocol (PROTOCOL.md has the byte tables): length-prefixed frames over
//! TCP; requests carry api key, api version and correlation id; responses carry the
//! correlation id, an error code and a message. Shared by the server and the client.

mod doc_check;
pub mod error_code;
pub mod field;
pub mod frame;
pub mod groups;
pub mod messages;
pub mod metrics;
pub mod multi;
pub mod wire;

pub use error_code::ErrorCode;
pub use messages::*;
pub use wire::{WireError, WireReader, WireWriter};

/// Bytes of the size prefix of every frame.
pub const SIZE_PREFIX: usize = 4;
/// Request header after the size: api_key i16, api_version i16, correlation_id i32.
pub const REQUEST_HEADER: usize = 8;
/// Default largest frame a server accepts (the size prefix excluded).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 << 20;

/// API keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
#[non_exhaustive]
pub enum ApiKey {
    ApiVersions = 0,
    Metadata = 1,
    CreateTopic = 2,
    DeleteTopic = 3,
    Produce = 4,
    Fetch = 5,
    ListOffsets = 6,
    DropCaches = 7,
    Stats = 8,
    DeleteRecords = 9,
    AlterConfigs = 10,
    DescribeLogs = 11,
    RollSegments = 12,
    RunLogMaintenance = 13,
    OffsetCommit = 14,
    OffsetFetch = 15,
    ListGroups = 16,
    DescribeGroup = 17,
    DeleteGroup = 18,
    Metrics = 19,
    FetchAtTime = 20,
    MultiProduce = 21,
    MultiFetch = 22,
    CreatePartitions = 23,
    OffsetDelete = 24,
    SaslHandshake = 25,
    SaslAuthenticate = 26,
    FetchCommitted = 27,
    DescribeListeners = 28,
    RebuildRemoteManifest = 29,
    ClusterMetadata = 30,
}

impl ApiKey {
    pub const ALL: [ApiKey; 31] = [
        ApiKey::ApiVersions,
        ApiKey::Metadata,
        ApiKey::CreateTopic,
        ApiKey::DeleteTopic,
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::ListOffsets,
        ApiKey::DropCaches,
        ApiKey::Stats,
        ApiKey::DeleteRecords,
        ApiKey::AlterConfigs,
        ApiKey::DescribeLogs,
        ApiKey::RollSegments,
        ApiKey::RunLogMaintenance,
        ApiKey::OffsetCommit,
        ApiKey::OffsetFetch,
        ApiKey::ListGroups,
        ApiKey::DescribeGroup,
        ApiKey::DeleteGroup,
        ApiKey::Metrics,
        ApiKey::FetchAtTime,
        ApiKey::MultiProduce,
        ApiKey::MultiFetch,
        ApiKey::CreatePartitions,
        ApiKey::OffsetDelete,
        ApiKey::SaslHandshake,
        ApiKey::SaslAuthenticate,
        ApiKey::FetchCommitted,
        ApiKey::DescribeListeners,
        ApiKey::RebuildRemoteManifest,
        ApiKey::ClusterMetadata,
    ];

    /// Produce, Fetch, ListOffsets, FetchAtTime and the multi-partition ones: the requests the stage metrics time (admin and
    /// observability requests are counted per API but kept out of the stages).
    pub fn is_data_path(self) -> bool {
        matches!(
            self,
            ApiKey::Produce
                | ApiKey::Fetch
                | ApiKey::FetchCommitted
                | ApiKey::ListOffsets
                | ApiKey::FetchAtTime
                | ApiKey::MultiProduce
                | ApiKey::MultiFetch
        )
    }

    pub fn from_i16(v: i16) -> Option<Self> {
        Self::ALL.into_iter().find(|k| *k as i16 == v)
    }

    /// Supported version range (min, max). Every API is at version 0 but DescribeLogs,
    /// whose v1 reply added the data directory and the cleaner's view, v2 the remote tier
    /// and v3 its state (an older client is told UNSUPPORTED_VERSION rather than
    /// misreading it).
    pub fn versions(self) -> (i16, i16) {
        match self {
            ApiKey::DescribeLogs => (3, 3),
            _ => (0, 0),
        }
    }
}
