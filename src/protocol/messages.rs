//! Request and response bodies (PROTOCOL.md). Each message is declared once, in the two
//! tables below: its fields in wire order, each with the name its decode errors give. The
//! enums, their encoders and their decoders are generated from those declarations (with
//! `field::Field` giving each type's encoding), so adding a message touches one row.

use bytes::Bytes;

use super::field::{wire_struct, Field};
use super::frame::{Frame, FrameBuilder};
use super::groups::{GroupInfo, OffsetCommitEntry};
use super::metrics::MetricsResponse;
use super::multi::{FetchEntry, Fetched, ProduceEntry, Produced};
use super::wire::{WireError, WireReader, WireWriter};
use super::{ApiKey, ErrorCode};
use crate::io::chain::ByteChain;

/// acks values on the wire: 0, 1, or -1 (all).
pub const ACKS_NONE: i16 = 0;
pub const ACKS_LEADER: i16 = 1;
pub const ACKS_ALL: i16 = -1;

/// The request table: `Name { field: Type = "error name", ... }`, or `Name` for a request
/// with no body. Each name is also its `ApiKey`.
macro_rules! requests {
    ($(
        $(#[$meta:meta])*
        $name:ident $({ $($field:ident : $ty:ty = $label:literal),* $(,)? })?;
    )*) => {
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Request {
            $( $(#[$meta])* $name $({ $($field: $ty),* })?, )*
        }

        impl Request {
            pub fn api_key(&self) -> ApiKey {
                match self {
                    $( Request::$name { .. } => ApiKey::$name, )*
                }
            }

            fn put_fields(&self, w: &mut WireWriter) {
                match self {
                    $( Request::$name $({ $($field),* })? => { $($( $field.put(w); )*)? } )*
                }
            }

            /// Payload bytes (records) of the request, to size its buffer once.
            fn payload(&self) -> usize {
                match self {
                    $( Request::$name $({ $($field),* })? => 0 $($( + $field.payload() )*)?, )*
                }
            }

            /// Decodes a request body for a known api key (version already checked).
            pub fn decode_body(key: ApiKey, r: &mut WireReader<'_>) -> Result<Request, WireError> {
                let req = match key {
                    $( ApiKey::$name => Request::$name $({ $($field: Field::get(r, $label)?),* })?, )*
                };
                r.finish()?;
                Ok(req)
            }
        }
    };
}

requests! {
    ApiVersions;
    /// `topics: None` asks for every topic.
    Metadata { topics: Option<Vec<String>> = "topic" };
    CreateTopic {
        name: String = "topic name",
        partitions: i32 = "partitions",
        configs: Vec<(String, String)> = "config",
    };
    DeleteTopic { name: String = "topic name" };
    /// Kafka's CreatePartitions: grow a topic to `count` partitions (never shrink).
    CreatePartitions { topic: String = "topic name", count: i32 = "partition count" };
    /// Kafka's OffsetDelete: drop a group's commits for these (topic, partition)s.
    OffsetDelete { group: String = "group", partitions: Vec<(String, i32)> = "partition" };
    Produce {
        topic: String = "topic name",
        partition: i32 = "partition",
        acks: i16 = "acks",
        records: Bytes = "records",
    };
    Fetch {
        topic: String = "topic name",
        partition: i32 = "partition",
        offset: i64 = "offset",
        max_bytes: i32 = "max_bytes",
    };
    ListOffsets {
        topic: String = "topic name",
        partition: i32 = "partition",
        timestamp: i64 = "timestamp",
    };
    /// Make the next lookups cold (loopback only unless the server allows remote admin).
    DropCaches { drop_kernel_page_cache: bool = "drop_kernel_page_cache" };
    Stats;
    /// Kafka's DeleteRecords: records below `offset` (-1: the log end) are no longer served.
    DeleteRecords {
        topic: String = "topic name",
        partition: i32 = "partition",
        offset: i64 = "offset",
    };
    /// Kafka's AlterConfigs (incremental): set some keys, return others to their defaults.
    AlterConfigs {
        topic: String = "topic name",
        set: Vec<(String, String)> = "config",
        delete: Vec<String> = "config key",
    };
    /// Offsets, sizes and segment counts per partition (null: every topic).
    DescribeLogs { topics: Option<Vec<String>> = "topic" };
    /// Roll the active segment of one partition (-1: every partition).
    RollSegments { topic: String = "topic name", partition: i32 = "partition" };
    /// Run retention and a cleaning pass on every partition of a topic now.
    RunLogMaintenance { topic: String = "topic name" };
    /// Commit offsets for a group from outside it (only while it has no members).
    OffsetCommit { group: String = "group", offsets: Vec<OffsetCommitEntry> = "offset" };
    /// A group's committed offsets for `topics` (null: all).
    OffsetFetch { group: String = "group", topics: Option<Vec<String>> = "topic" };
    ListGroups;
    DescribeGroup { group: String = "group" };
    DeleteGroup { group: String = "group" };
    Metrics;
    /// A lookup by time in one round trip: ListOffsets, then a Fetch at the offset found.
    FetchAtTime {
        topic: String = "topic name",
        partition: i32 = "partition",
        timestamp: i64 = "timestamp",
        max_bytes: i32 = "max_bytes",
    };
    /// Produce to several partitions in one request (acks as Produce's).
    MultiProduce { acks: i16 = "acks", partitions: Vec<ProduceEntry> = "partition" };
    /// Fetch from several partitions in one request, at most `max_bytes` in all.
    MultiFetch { max_bytes: i32 = "max_bytes", partitions: Vec<FetchEntry> = "partition" };
    /// Fetch with Kafka's read_committed isolation: records below the last stable offset,
    /// and the aborted transactions they overlap (which a reader skips).
    FetchCommitted {
        topic: String = "topic name",
        partition: i32 = "partition",
        offset: i64 = "offset",
        max_bytes: i32 = "max_bytes",
    };
    /// On a SASL listener, before anything but ApiVersions: the mechanism to use.
    SaslHandshake { mechanism: String = "mechanism" };
    /// One token of the chosen mechanism.
    SaslAuthenticate { auth_bytes: Bytes = "auth bytes" };
    /// The server's listeners, so a tool given one address can reach the other protocol.
    DescribeListeners;
    /// Rebuild lost manifests of a tiered topic from its segment objects (-1: every
    /// partition).
    RebuildRemoteManifest { topic: String = "topic name", partition: i32 = "partition" };
    /// The nodes (native listeners, racks, epochs), the controller and each partition's
    /// leader, leader epoch, replicas and ISR (`topics: None` asks for every topic).
    ClusterMetadata { topics: Option<Vec<String>> = "topic" };
}

/// Request header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
}

impl Request {
    /// Encodes a whole request frame (size prefix included).
    pub fn encode_frame(&self, correlation_id: i32) -> Vec<u8> {
        let mut w = WireWriter::frame(128 + self.payload());
        let key = self.api_key();
        w.i16(key as i16).i16(key.versions().1).i32(correlation_id);
        self.put_fields(&mut w);
        let frame = w.finish_frame();
        assert!(
            frame.len() >= 4 + 8,
            "a request frame holds its size and header"
        );
        frame
    }

    /// Reads the 8-byte request header from a frame body.
    pub fn decode_header(r: &mut WireReader<'_>) -> Result<RequestHeader, WireError> {
        Ok(RequestHeader {
            api_key: r.i16("api_key")?,
            api_version: r.i16("api_version")?,
            correlation_id: r.i32("correlation_id")?,
        })
    }
}

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ShardInfo {
        pub shard: i32 = "shard",
        pub host: String = "host",
        pub port: i32 = "port",
    }
}

wire_struct! {
    /// One partition's outcome of RebuildRemoteManifest: the error (and why), or what the
    /// rebuilt manifest holds and what the operator should know.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RebuiltManifest {
        pub partition: i32 = "partition",
        pub error_code: ErrorCode = "error_code",
        pub error_message: String = "error_message",
        pub segments: i32 = "segments",
        pub log_start_offset: i64 = "log_start_offset",
        pub next_offset: i64 = "next_offset",
        pub notes: Vec<String> = "note count",
    }
}

wire_struct! {
    /// One listener of the server: which protocol it speaks ("native" or "kafka"), under
    /// which security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), where it is bound.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ListenerInfo {
        pub protocol: String = "protocol",
        pub security_protocol: String = "security_protocol",
        pub host: String = "host",
        pub port: i32 = "port",
    }
}

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PartitionMetadata {
        pub partition: i32 = "partition",
        pub owner_shard: i32 = "owner_shard",
    }
}

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TopicMetadata {
        pub name: String = "topic name",
        pub error_code: ErrorCode = "error_code",
        pub partitions: Vec<PartitionMetadata> = "partition count",
        pub configs: Vec<(String, String)> = "config",
    }
}

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct MetadataResponse {
        pub shards: Vec<ShardInfo> = "shard count",
        pub topics: Vec<TopicMetadata> = "topic count",
    }
}

impl MetadataResponse {
    /// Port of a shard's own listener, if reported.
    pub fn shard_port(&self, shard: i32) -> Option<i32> {
        self.shards
            .iter()
            .find(|s| s.shard == shard)
            .map(|s| s.port)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicMetadata> {
        self.topics.iter().find(|t| t.name == name)
    }
}

wire_struct! {
    /// A node of the cluster at its native listener (one node outside cluster mode).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct NodeInfo {
        pub node_id: i32 = "node_id",
        pub host: String = "host",
        pub port: i32 = "port",
        /// `broker.rack`; empty without one.
        pub rack: String = "rack",
        /// The node's registration epoch (a restarted node registers with a larger one);
        /// 0 outside cluster mode.
        pub epoch: i64 = "epoch",
        /// In controlled shutdown: its leaderships are moving away.
        pub shutting_down: bool = "shutting_down",
    }
}

wire_struct! {
    /// Where a partition lives in the cluster.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PartitionPlacement {
        pub partition: i32 = "partition",
        /// -1 while no live node leads it.
        pub leader: i32 = "leader",
        /// -1 outside cluster mode (as Kafka's Metadata says for a single node).
        pub leader_epoch: i32 = "leader_epoch",
        pub replicas: Vec<i32> = "replica count",
        pub isr: Vec<i32> = "isr count",
        /// Replicas whose nodes are not live.
        pub offline: Vec<i32> = "offline count",
    }
}

wire_struct! {
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TopicPlacement {
        pub name: String = "topic name",
        pub error_code: ErrorCode = "error_code",
        pub partitions: Vec<PartitionPlacement> = "partition count",
    }
}

wire_struct! {
    /// The cluster as the answering node sees it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ClusterMetadataResponse {
        pub cluster_id: String = "cluster_id",
        /// -1 while no controller is elected.
        pub controller_id: i32 = "controller_id",
        /// The controller's epoch (etcd revision of its election); 0 outside cluster mode.
        pub controller_epoch: i64 = "controller_epoch",
        /// The answering node.
        pub node_id: i32 = "this node",
        pub nodes: Vec<NodeInfo> = "node count",
        pub topics: Vec<TopicPlacement> = "topic count",
    }
}

impl ClusterMetadataResponse {
    pub fn node(&self, id: i32) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.node_id == id)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicPlacement> {
        self.topics.iter().find(|t| t.name == name)
    }
}

wire_struct! {
    /// Server counters, summed over shards (cumulative since start).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct StatsResponse {
        pub shards: i32 = "shards",
        pub device_reads: i64 = "device_reads",
        pub cache_hits: i64 = "cache_hits",
        pub cache_misses: i64 = "cache_misses",
        pub cache_bytes: i64 = "cache_bytes",
        pub cache_budget_bytes: i64 = "cache_budget_bytes",
        pub rss_bytes: i64 = "rss_bytes",
        /// The server's wall clock when it answered (epoch ms).
        pub clock_ms: i64 = "clock_ms",
    }
}

wire_struct! {
    /// One partition's log as DescribeLogs reports it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct PartitionLogInfo {
        pub partition: i32 = "partition",
        pub owner_shard: i32 = "owner_shard",
        pub log_start_offset: i64 = "log_start_offset",
        pub log_end_offset: i64 = "log_end_offset",
        pub size_bytes: i64 = "size_bytes",
        pub segments: i32 = "segments",
        /// The cleaner's view (`log::CleanerView`); -1 when the topic does not compact.
        pub cleaner: CleanerInfo = "cleaner",
        /// The remote tier (v2); -1 when the topic is not tiered.
        pub remote: RemoteLogInfo = "remote",
    }
}

wire_struct! {
    /// A tiered partition's two tiers (every field -1 when its topic is not tiered).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RemoteLogInfo {
        /// The first offset the local log holds (`log_start_offset` is the whole log's).
        pub local_log_start_offset: i64 = "local_log_start_offset",
        /// The first offset the remote tier serves; -1 while it holds none.
        pub remote_log_start_offset: i64 = "remote_log_start_offset",
        /// Bytes of `.log` in the remote tier, and its segments.
        pub remote_size_bytes: i64 = "remote_size_bytes",
        pub remote_segments: i32 = "remote_segments",
        /// Bytes of local segments not yet copied (the active segment included).
        pub upload_lag_bytes: i64 = "upload_lag_bytes",
        /// None, or why the remote tier is stopped (RemoteManifestMissing).
        pub state: ErrorCode = "remote_state",
    }
}

impl Default for RemoteLogInfo {
    fn default() -> Self {
        Self::NOT_TIERED
    }
}

impl RemoteLogInfo {
    pub const NOT_TIERED: RemoteLogInfo = RemoteLogInfo {
        local_log_start_offset: -1,
        remote_log_start_offset: -1,
        remote_size_bytes: -1,
        remote_segments: -1,
        upload_lag_bytes: -1,
        state: ErrorCode::None,
    };
}

wire_struct! {
    /// Why a compacted partition is or is not cleaned now (every field -1 and `due`
    /// false when its topic does not compact).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct CleanerInfo {
        /// First offset not compacted yet (the cleaner checkpoint).
        pub first_dirty_offset: i64 = "first_dirty_offset",
        pub dirty_bytes: i64 = "dirty_bytes",
        pub clean_bytes: i64 = "clean_bytes",
        /// The active segment and segments inside min.compaction.lag.ms.
        pub uncleanable_bytes: i64 = "uncleanable_bytes",
        /// The cleaner cleans at its next check.
        pub due: bool = "due",
        /// Epoch ms of the last cleaning since the server started; -1 none.
        pub last_cleaned_ms: i64 = "last_cleaned_ms",
    }
}

impl Default for CleanerInfo {
    fn default() -> Self {
        CleanerInfo::NOT_COMPACTED
    }
}

impl CleanerInfo {
    pub const NOT_COMPACTED: CleanerInfo = CleanerInfo {
        first_dirty_offset: -1,
        dirty_bytes: -1,
        clean_bytes: -1,
        uncleanable_bytes: -1,
        due: false,
        last_cleaned_ms: -1,
    };

    /// Dirty over cleanable bytes (Kafka's dirty ratio); None when not compacted.
    pub fn dirty_ratio(&self) -> Option<f64> {
        (self.dirty_bytes >= 0)
            .then(|| self.dirty_bytes as f64 / (self.dirty_bytes + self.clean_bytes).max(1) as f64)
    }
}

wire_struct! {
    /// A DescribeLogs reply: the data directory, its disk, and the partitions asked for.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct LogDirInfo {
        pub log_dir: String = "log dir",
        pub total_bytes: i64 = "total_bytes",
        pub usable_bytes: i64 = "usable_bytes",
        pub topics: Vec<TopicLogInfo> = "topic count",
    }
}

wire_struct! {
    /// One topic in a DescribeLogs reply.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct TopicLogInfo {
        pub name: String = "topic name",
        pub error_code: ErrorCode = "error_code",
        /// Config keys set explicitly (the rest are defaults).
        pub overrides: Vec<String> = "config key",
        pub partitions: Vec<PartitionLogInfo> = "partition count",
    }
}

/// The response table: `Name(binding: Type = "error name")`, `Name { fields }` or `Name`,
/// then the request keys it answers.
macro_rules! responses {
    ($(
        $(#[$meta:meta])*
        $name:ident
            $(( $body:ident : $bty:ty = $blabel:literal ))?
            $({ $($field:ident : $ty:ty = $label:literal),* $(,)? })?
            for $($key:ident),+;
    )*) => {
        /// Successful response bodies.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum ResponseBody {
            $( $(#[$meta])* $name $(($bty))? $({ $($field: $ty),* })?, )*
        }

        impl ResponseBody {
            /// Writes a body; records go in as the slices they are.
            fn put_fields(&self, f: &mut FrameBuilder) {
                match self {
                    $( ResponseBody::$name $(($body))? $({ $($field),* })? => {
                        $( $body.put(f); )?
                        $($( $field.put(f); )*)?
                    } )*
                }
            }

            /// Decodes the body answering a request of kind `key`.
            fn decode(key: ApiKey, r: &mut WireReader<'_>) -> Result<ResponseBody, WireError> {
                Ok(match key {
                    $( $(ApiKey::$key)|+ => ResponseBody::$name
                        $((Field::get(r, $blabel)?))?
                        $({ $($field: Field::get(r, $label)?),* })?, )*
                })
            }
        }
    };
}

responses! {
    ApiVersions(versions: Vec<(i16, i16, i16)> = "api count") for ApiVersions;
    Metadata(metadata: MetadataResponse = "metadata") for Metadata;
    CreateTopic for CreateTopic;
    DeleteTopic for DeleteTopic;
    Produce {
        base_offset: i64 = "base_offset",
        last_offset: i64 = "last_offset",
        log_append_time: i64 = "log_append_time",
    } for Produce;
    Fetch {
        log_start_offset: i64 = "log_start_offset",
        log_end_offset: i64 = "log_end_offset",
        records: ByteChain = "records",
    } for Fetch;
    /// (producer id, first offset) of each aborted transaction the records overlap.
    FetchCommitted {
        log_start_offset: i64 = "log_start_offset",
        last_stable_offset: i64 = "last_stable_offset",
        aborted: Vec<(i64, i64)> = "aborted transaction",
        records: ByteChain = "records",
    } for FetchCommitted;
    /// `offset == -1 && timestamp == -1` means "no answer" (as Kafka).
    ListOffsets { offset: i64 = "offset", timestamp: i64 = "timestamp" } for ListOffsets;
    MultiProduce(produced: Vec<Produced> = "partition count") for MultiProduce;
    MultiFetch(fetched: Vec<Fetched> = "partition count") for MultiFetch;
    /// ListOffsets' answer and the Fetch at it (no records when nothing qualifies).
    FetchAtTime {
        offset: i64 = "offset",
        timestamp: i64 = "timestamp",
        log_start_offset: i64 = "log_start_offset",
        log_end_offset: i64 = "log_end_offset",
        records: ByteChain = "records",
    } for FetchAtTime;
    /// For DropCaches (after dropping) and Stats.
    Stats(stats: StatsResponse = "stats") for DropCaches, Stats;
    Metrics(metrics: MetricsResponse = "metrics") for Metrics;
    DeleteRecords { low_watermark: i64 = "low_watermark" } for DeleteRecords;
    DescribeLogs(logs: LogDirInfo = "log dir") for DescribeLogs;
    /// What RunLogMaintenance did, summed over the topic's partitions.
    LogMaintenance {
        segments_deleted: i64 = "segments_deleted",
        bytes_deleted: i64 = "bytes_deleted",
        records_removed: i64 = "records_removed",
    } for RunLogMaintenance;
    /// Per partition of an OffsetCommit or OffsetDelete: its outcome.
    OffsetCommit(codes: Vec<(String, i32, ErrorCode)> = "partition count") for OffsetCommit, OffsetDelete;
    /// Committed (topic, partition, offset, metadata).
    OffsetFetch(offsets: Vec<OffsetCommitEntry> = "offset count") for OffsetFetch;
    /// (group, protocol type, state)
    ListGroups(groups: Vec<(String, String, String)> = "group count") for ListGroups;
    DescribeGroup(group: GroupInfo = "group") for DescribeGroup;
    /// The mechanisms the listener offers.
    SaslHandshake(mechanisms: Vec<String> = "mechanism count") for SaslHandshake;
    /// The mechanism's reply token, and how long the session lasts (ms; 0: for ever).
    SaslAuthenticate {
        auth_bytes: Bytes = "auth bytes",
        session_lifetime_ms: i64 = "session_lifetime_ms",
    } for SaslAuthenticate;
    DescribeListeners(listeners: Vec<ListenerInfo> = "listener count") for DescribeListeners;
    RebuildRemoteManifest(rebuilt: Vec<RebuiltManifest> = "partition count") for RebuildRemoteManifest;
    ClusterMetadata(cluster: ClusterMetadataResponse = "cluster metadata") for ClusterMetadata;
    /// AlterConfigs, RollSegments, DeleteGroup and CreatePartitions.
    Empty for AlterConfigs, RollSegments, DeleteGroup, CreatePartitions;
}

/// A decoded response: either an error (code + message) or a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub correlation_id: i32,
    pub result: Result<ResponseBody, (ErrorCode, String)>,
}

impl Response {
    /// Encodes a response frame (size prefix included).
    pub fn encode_frame(&self) -> Vec<u8> {
        self.encode().to_vec()
    }

    /// Encodes a response frame whose records (Fetch, FetchAtTime) stay the slices they
    /// are.
    pub fn encode(&self) -> Frame {
        let mut f = FrameBuilder::default();
        f.w.i32(self.correlation_id);
        match &self.result {
            Err((code, msg)) => {
                assert_ne!(*code, ErrorCode::None, "an error reply names an error");
                f.w.i16(*code as i16).nullable_string(Some(msg));
            }
            Ok(body) => {
                f.w.i16(0).nullable_string(None);
                body.put_fields(&mut f);
            }
        }
        f.finish()
    }

    /// Decodes a response frame body (size prefix removed) to a request of kind `key`.
    pub fn decode(key: ApiKey, frame: &Bytes) -> Result<Response, WireError> {
        let mut r = WireReader::from_bytes(frame);
        let correlation_id = r.i32("correlation_id")?;
        let code = r.i16("error_code")?;
        let msg = r.nullable_string("error_message")?;
        if code != 0 {
            let code = ErrorCode::from_i16(code).unwrap_or(ErrorCode::Internal);
            return Ok(Response {
                correlation_id,
                result: Err((code, msg.unwrap_or_default())),
            });
        }
        let body = ResponseBody::decode(key, &mut r)?;
        r.finish()?;
        Ok(Response {
            correlation_id,
            result: Ok(body),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(req: Request) {
        let frame = req.encode_frame(42);
        assert_eq!(
            i32::from_be_bytes(frame[..4].try_into().unwrap()) as usize,
            frame.len() - 4
        );
        let body = Bytes::from(frame[4..].to_vec());
        let mut r = WireReader::from_bytes(&body);
        let h = Request::decode_header(&mut r).unwrap();
        assert_eq!(h.correlation_id, 42);
        let key = ApiKey::from_i16(h.api_key).unwrap();
        assert_eq!(Request::decode_body(key, &mut r).unwrap(), req);
    }

    #[test]
    fn requests_round_trip() {
        round_trip(Request::ApiVersions);
        round_trip(Request::DescribeListeners);
        round_trip(Request::RebuildRemoteManifest {
            topic: "t".into(),
            partition: -1,
        });
        round_trip(Request::Metadata { topics: None });
        round_trip(Request::Metadata {
            topics: Some(vec!["a".into(), "b".into()]),
        });
        round_trip(Request::CreateTopic {
            name: "orders".into(),
            partitions: 8,
            configs: vec![("segment.bytes".into(), "1024".into())],
        });
        round_trip(Request::DeleteTopic { name: "x".into() });
        round_trip(Request::Produce {
            topic: "t".into(),
            partition: 3,
            acks: -1,
            records: Bytes::from_static(b"abc"),
        });
        round_trip(Request::Fetch {
            topic: "t".into(),
            partition: 0,
            offset: 5,
            max_bytes: 100,
        });
        round_trip(Request::ListOffsets {
            topic: "t".into(),
            partition: 1,
            timestamp: -3,
        });
        round_trip(Request::DropCaches {
            drop_kernel_page_cache: true,
        });
        round_trip(Request::Stats);
        round_trip(Request::Metrics);
        round_trip(Request::MultiProduce {
            acks: -1,
            partitions: vec![super::super::multi::ProduceEntry {
                topic: "t".into(),
                partition: 3,
                records: Bytes::from_static(b"abc"),
            }],
        });
        round_trip(Request::MultiFetch {
            max_bytes: 1 << 20,
            partitions: vec![super::super::multi::FetchEntry {
                topic: "t".into(),
                partition: 3,
                offset: 9,
                max_bytes: 4096,
            }],
        });
        round_trip(Request::FetchAtTime {
            topic: "t".into(),
            partition: 1,
            timestamp: 1_700_000_000_000,
            max_bytes: 4096,
        });
        round_trip(Request::DeleteRecords {
            topic: "t".into(),
            partition: 2,
            offset: -1,
        });
        round_trip(Request::AlterConfigs {
            topic: "t".into(),
            set: vec![("retention.ms".into(), "1000".into())],
            delete: vec!["segment.bytes".into()],
        });
        round_trip(Request::DescribeLogs { topics: None });
        round_trip(Request::RollSegments {
            topic: "t".into(),
            partition: -1,
        });
        round_trip(Request::RunLogMaintenance { topic: "t".into() });
    }

    #[test]
    fn lying_counts_and_lengths_are_errors() {
        // Metadata with a count of 1e9 topics in a tiny frame.
        let mut w = WireWriter::new();
        w.i32(1_000_000_000);
        let mut r = WireReader::new(&w.buf);
        assert!(Request::decode_body(ApiKey::Metadata, &mut r).is_err());
        // Produce whose records length exceeds the frame.
        let mut w = WireWriter::new();
        w.string("t").i32(0).i16(1).i32(1000);
        let mut r = WireReader::new(&w.buf);
        assert!(Request::decode_body(ApiKey::Produce, &mut r).is_err());
        // Trailing bytes.
        let mut w = WireWriter::new();
        w.string("t").i8(0);
        let mut r = WireReader::new(&w.buf);
        assert!(Request::decode_body(ApiKey::DeleteTopic, &mut r).is_err());
    }

    #[test]
    fn responses_round_trip() {
        let resp = Response {
            correlation_id: 7,
            result: Ok(ResponseBody::Metadata(MetadataResponse {
                shards: vec![ShardInfo {
                    shard: 0,
                    host: "127.0.0.1".into(),
                    port: 7412,
                }],
                topics: vec![TopicMetadata {
                    name: "t".into(),
                    error_code: ErrorCode::None,
                    partitions: vec![PartitionMetadata {
                        partition: 0,
                        owner_shard: 0,
                    }],
                    configs: vec![("k".into(), "v".into())],
                }],
            })),
        };
        let frame = resp.encode_frame();
        let body = Bytes::from(frame[4..].to_vec());
        assert_eq!(Response::decode(ApiKey::Metadata, &body).unwrap(), resp);
        let err = Response {
            correlation_id: 9,
            result: Err((ErrorCode::UnknownTopic, "no topic x".into())),
        };
        let body = Bytes::from(err.encode_frame()[4..].to_vec());
        assert_eq!(Response::decode(ApiKey::Fetch, &body).unwrap(), err);
    }

    #[test]
    fn cluster_metadata_round_trips() {
        let resp = Response {
            correlation_id: 3,
            result: Ok(ResponseBody::ClusterMetadata(ClusterMetadataResponse {
                cluster_id: "c".into(),
                controller_id: 2,
                controller_epoch: 41,
                node_id: 1,
                nodes: vec![NodeInfo {
                    node_id: 1,
                    host: "127.0.0.1".into(),
                    port: 7411,
                    rack: "r1".into(),
                    epoch: 17,
                    shutting_down: true,
                }],
                topics: vec![TopicPlacement {
                    name: "t".into(),
                    error_code: ErrorCode::None,
                    partitions: vec![PartitionPlacement {
                        partition: 0,
                        leader: 1,
                        leader_epoch: 4,
                        replicas: vec![1, 2, 3],
                        isr: vec![1, 2],
                        offline: vec![3],
                    }],
                }],
            })),
        };
        let body = Bytes::from(resp.encode_frame()[4..].to_vec());
        assert_eq!(
            Response::decode(ApiKey::ClusterMetadata, &body).unwrap(),
            resp
        );
    }

    #[test]
    fn metrics_round_trip_with_whole_histograms() {
        let mut d = crate::metrics::Distribution::latency();
        d.record(42_000);
        let report = crate::metrics::MetricsReport {
            shards: 2,
            distributions: vec![crate::metrics::NamedDistribution {
                name: "stage.device_read".into(),
                dist: d,
            }],
            values: vec![("device_reads".into(), 7)],
        };
        let resp = Response {
            correlation_id: 3,
            result: Ok(ResponseBody::Metrics(
                super::super::metrics::MetricsResponse::of(&report),
            )),
        };
        let body = Bytes::from(resp.encode_frame()[4..].to_vec());
        let back = Response::decode(ApiKey::Metrics, &body).unwrap();
        assert_eq!(back, resp);
        let Ok(ResponseBody::Metrics(m)) = back.result else {
            panic!("not a metrics body")
        };
        let r = m.report().unwrap();
        assert_eq!(r.value("device_reads"), Some(7));
        let got = r.distribution("stage.device_read").unwrap();
        assert_eq!((got.count_recorded(), got.sum), (1, 42_000));
    }
}
