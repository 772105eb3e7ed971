//! Error codes carried in every response (0 = success). Each bad input has its own code.

use crate::error::Error;
use crate::format::BatchError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
#[non_exhaustive]
pub enum ErrorCode {
    None = 0,
    /// A frame or request body that does not parse.
    MalformedRequest = 1,
    UnsupportedApiKey = 2,
    UnsupportedVersion = 3,
    UnknownTopic = 4,
    UnknownPartition = 5,
    /// A record batch whose CRC-32C does not match its bytes.
    CorruptBatch = 6,
    /// A record batch with a magic other than 2.
    InvalidMagic = 7,
    /// A record batch that is malformed in any other way.
    InvalidBatch = 8,
    OffsetOutOfRange = 9,
    /// A batch larger than the topic's segment.bytes or max.message.bytes.
    BatchTooLarge = 10,
    /// A frame larger than the server's max frame size (the connection is then closed).
    FrameTooLarge = 11,
    TopicAlreadyExists = 12,
    InvalidTopicName = 13,
    InvalidConfig = 14,
    /// An I/O error on the server's storage.
    StorageError = 15,
    /// Stored data failed its checksum or framing (names file and position).
    CorruptStorage = 16,
    /// The partition refuses writes after an I/O failure until the server restarts.
    PartitionPoisoned = 17,
    InvalidAcks = 18,
    InvalidTimestamp = 19,
    ShuttingDown = 20,
    /// A request that parses but asks for something impossible (e.g. 0 partitions).
    InvalidRequest = 21,
    Internal = 22,
    /// DropCaches from a non-loopback peer while allow.remote.admin is off.
    AdminNotAllowed = 23,
    /// Retriable: the server is still opening partitions, or an earlier admin operation on
    /// the same name is still being finished.
    NotReady = 24,
    /// The shard is at max.connections.per.shard; sent once, then the connection is closed.
    TooManyConnections = 25,
    /// A record without a key was produced to a compacted topic (nothing was written).
    CompactedTopicNullKey = 26,
    /// A batch names a compression codec other than none, gzip, snappy, lz4 or zstd.
    UnsupportedCompression = 27,
    /// An idempotent producer's batch does not follow its last sequence (nothing written).
    OutOfOrderSequence = 28,
    /// An idempotent producer's epoch is older than one the partition has seen.
    InvalidProducerEpoch = 29,
    /// A group with active members refuses what only an inactive group allows (commits
    /// from outside it, deletion).
    GroupNotEmpty = 30,
    /// No such consumer group.
    GroupNotFound = 31,
    /// A client asked to write, truncate, delete, create or reconfigure an internal topic
    /// (`__consumer_offsets`): only the server does that.
    InternalTopic = 32,
    /// A producer's batch does not fit its transaction's state (a non-transactional batch
    /// while its transaction is open); Kafka's INVALID_TXN_STATE.
    InvalidTxnState = 33,
    /// The principal may not do this to the topic (its ACLs; Kafka's 29).
    TopicAuthorizationFailed = 34,
    /// The principal may not do this to the group (Kafka's 30).
    GroupAuthorizationFailed = 35,
    /// The principal may not do this to the cluster (Kafka's 31).
    ClusterAuthorizationFailed = 36,
    /// SaslHandshake named a mechanism the listener does not offer (Kafka's 33).
    UnsupportedSaslMechanism = 37,
    /// A SASL request out of turn (Kafka's 34).
    IllegalSaslState = 38,
    /// Wrong credentials, an unknown user or a malformed exchange, all alike (Kafka's 58).
    SaslAuthenticationFailed = 39,
    /// acks=all to a topic whose min.insync.replicas exceeds the replicas in sync (one
    /// node holds one); nothing was written (Kafka's 19).
    NotEnoughReplicas = 40,
    /// A tiered partition that has uploaded before has no manifest in the bucket: its
    /// uploads and remote retention are stopped until `topics rebuild-manifest` (Kafka's
    /// KAFKA_STORAGE_ERROR).
    RemoteManifestMissing = 41,
    /// Cluster mode: this node does not lead the partition (Kafka's NOT_LEADER_OR_FOLLOWER).
    NotLeader = 42,
    /// A replica's request names an older leader epoch than the leader's (Kafka's 74).
    FencedLeaderEpoch = 43,
    /// A replica's request names a newer leader epoch than this node knows (Kafka's 75).
    UnknownLeaderEpoch = 44,
    /// acks=all: written, but the in-sync replicas fell below min.insync.replicas before
    /// they all had it (Kafka's 20).
    NotEnoughReplicasAfterAppend = 45,
    /// acks=all: the in-sync replicas did not all have the batch within the produce's
    /// timeout (Kafka's REQUEST_TIMED_OUT, 7); it may still be committed later.
    RequestTimedOut = 46,
    /// Cluster mode: the group's or transactional id's coordinator is another node (it
    /// leads the key's partition of the internal topic); find it again (Kafka's 16).
    NotCoordinator = 47,
    /// Cluster mode: a topic change (create, delete, add partitions, alter configs) goes
    /// through the Kafka API, whose node hands it to the controller; the native API
    /// changes one node only and refuses it.
    TopicChangeOnKafkaApi = 48,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 49] = [
        ErrorCode::None,
        ErrorCode::MalformedRequest,
        ErrorCode::UnsupportedApiKey,
        ErrorCode::UnsupportedVersion,
        ErrorCode::UnknownTopic,
        ErrorCode::UnknownPartition,
        ErrorCode::CorruptBatch,
        ErrorCode::InvalidMagic,
        ErrorCode::InvalidBatch,
        ErrorCode::OffsetOutOfRange,
        ErrorCode::BatchTooLarge,
        ErrorCode::FrameTooLarge,
        ErrorCode::TopicAlreadyExists,
        ErrorCode::InvalidTopicName,
        ErrorCode::InvalidConfig,
        ErrorCode::StorageError,
        ErrorCode::CorruptStorage,
        ErrorCode::PartitionPoisoned,
        ErrorCode::InvalidAcks,
        ErrorCode::InvalidTimestamp,
        ErrorCode::ShuttingDown,
        ErrorCode::InvalidRequest,
        ErrorCode::Internal,
        ErrorCode::AdminNotAllowed,
        ErrorCode::NotReady,
        ErrorCode::TooManyConnections,
        ErrorCode::CompactedTopicNullKey,
        ErrorCode::UnsupportedCompression,
        ErrorCode::OutOfOrderSequence,
        ErrorCode::InvalidProducerEpoch,
        ErrorCode::GroupNotEmpty,
        ErrorCode::GroupNotFound,
        ErrorCode::InternalTopic,
        ErrorCode::InvalidTxnState,
        ErrorCode::TopicAuthorizationFailed,
        ErrorCode::GroupAuthorizationFailed,
        ErrorCode::ClusterAuthorizationFailed,
        ErrorCode::UnsupportedSaslMechanism,
        ErrorCode::IllegalSaslState,
        ErrorCode::SaslAuthenticationFailed,
        ErrorCode::NotEnoughReplicas,
        ErrorCode::RemoteManifestMissing,
        ErrorCode::NotLeader,
        ErrorCode::FencedLeaderEpoch,
        ErrorCode::UnknownLeaderEpoch,
        ErrorCode::NotEnoughReplicasAfterAppend,
        ErrorCode::RequestTimedOut,
        ErrorCode::NotCoordinator,
        ErrorCode::TopicChangeOnKafkaApi,
    ];

    pub fn from_i16(v: i16) -> Option<Self> {
        Self::ALL.into_iter().find(|c| *c as i16 == v)
    }

    /// The engine error a request ran into, as a wire code.
    pub fn of(e: &Error) -> Self {
        match e {
            Error::Io { .. } => ErrorCode::StorageError,
            Error::Corruption { .. } => ErrorCode::CorruptStorage,
            Error::InvalidBatch { source, .. } => match source {
                BatchError::CrcMismatch { .. } | BatchError::Decompression { .. } => {
                    ErrorCode::CorruptBatch
                }
                BatchError::UnsupportedCompression(_) => ErrorCode::UnsupportedCompression,
                BatchError::BadMagic(_) => ErrorCode::InvalidMagic,
                _ => ErrorCode::InvalidBatch,
            },
            Error::OffsetOutOfRange { .. } => ErrorCode::OffsetOutOfRange,
            Error::RecordBatchTooLarge { .. } => ErrorCode::BatchTooLarge,
            Error::InvalidConfig { .. } => ErrorCode::InvalidConfig,
            Error::Poisoned { .. } => ErrorCode::PartitionPoisoned,
            Error::NonMonotonicOffset { .. } => ErrorCode::InvalidBatch,
            Error::InvalidTimestamp(_) | Error::TimestampOutOfRange { .. } => {
                ErrorCode::InvalidTimestamp
            }
            Error::CompactedTopicNullKey { .. } => ErrorCode::CompactedTopicNullKey,
            Error::OutOfOrderSequence { .. } => ErrorCode::OutOfOrderSequence,
            Error::InvalidProducerEpoch { .. } => ErrorCode::InvalidProducerEpoch,
            Error::InvalidTxnState { .. } => ErrorCode::InvalidTxnState,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}({})", self, *self as i16)
    }
}
