//! Kafka's error codes (kafka-wire.md §5) and the maps between them and shardlog's own, one
//! table for the two places that answer in Kafka's terms: the Kafka front end (as
//! `kafka::errors`) and the group coordinator, which implements Kafka's group protocol.

use crate::protocol::ErrorCode;

pub const NONE: i16 = 0;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const REQUEST_TIMED_OUT: i16 = 7;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const INVALID_REQUIRED_ACKS: i16 = 21;
pub const NOT_ENOUGH_REPLICAS: i16 = 19;
pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
pub const FENCED_LEADER_EPOCH: i16 = 74;
pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub const SECURITY_DISABLED: i16 = 54;
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub const ILLEGAL_SASL_STATE: i16 = 34;
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
pub const INVALID_TIMESTAMP: i16 = 32;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub const INVALID_CONFIG: i16 = 40;
pub const NOT_CONTROLLER: i16 = 41;
pub const INVALID_REQUEST: i16 = 42;
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
pub const INVALID_TXN_STATE: i16 = 48;
pub const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
pub const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
pub const CONCURRENT_TRANSACTIONS: i16 = 51;
pub const OPERATION_NOT_ATTEMPTED: i16 = 55;
pub const PRODUCER_FENCED: i16 = 90;
pub const PREFERRED_LEADER_NOT_AVAILABLE: i16 = 80;
pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: i16 = 83;
pub const ELECTION_NOT_NEEDED: i16 = 84;
pub const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub const UNSTABLE_OFFSET_COMMIT: i16 = 88;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const INVALID_RECORD: i16 = 87;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const UNKNOWN_SERVER_ERROR: i16 = -1;

/// The Kafka code for a shardlog error. `record_errors` says whether the request version
/// knows INVALID_RECORD (Produce v8+); older ones get CORRUPT_MESSAGE.
pub fn kafka_code(code: ErrorCode, record_errors: bool) -> i16 {
    use ErrorCode as E;
    let invalid_record = if record_errors {
        INVALID_RECORD
    } else {
        CORRUPT_MESSAGE
    };
    match code {
        E::None => NONE,
        E::UnknownTopic | E::UnknownPartition => UNKNOWN_TOPIC_OR_PARTITION,
        E::CorruptBatch => CORRUPT_MESSAGE,
        E::InvalidMagic | E::InvalidBatch | E::CompactedTopicNullKey => invalid_record,
        E::UnsupportedCompression => UNSUPPORTED_COMPRESSION_TYPE,
        E::OffsetOutOfRange => OFFSET_OUT_OF_RANGE,
        E::OutOfOrderSequence => OUT_OF_ORDER_SEQUENCE_NUMBER,
        E::InvalidProducerEpoch => INVALID_PRODUCER_EPOCH,
        E::GroupNotEmpty => NON_EMPTY_GROUP,
        E::GroupNotFound => GROUP_ID_NOT_FOUND,
        E::InvalidTxnState => INVALID_TXN_STATE,
        E::BatchTooLarge | E::FrameTooLarge => MESSAGE_TOO_LARGE,
        E::TopicAlreadyExists => TOPIC_ALREADY_EXISTS,
        // Kafka's answer to a write, truncation or deletion of an internal topic.
        E::InvalidTopicName | E::InternalTopic => INVALID_TOPIC_EXCEPTION,
        E::InvalidConfig => INVALID_CONFIG,
        E::StorageError | E::CorruptStorage | E::PartitionPoisoned | E::RemoteManifestMissing => {
            KAFKA_STORAGE_ERROR
        }
        E::InvalidAcks => INVALID_REQUIRED_ACKS,
        E::NotEnoughReplicas => NOT_ENOUGH_REPLICAS,
        E::NotEnoughReplicasAfterAppend => NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        E::NotLeader => NOT_LEADER_OR_FOLLOWER,
        E::FencedLeaderEpoch => FENCED_LEADER_EPOCH,
        E::UnknownLeaderEpoch => UNKNOWN_LEADER_EPOCH,
        E::RequestTimedOut => REQUEST_TIMED_OUT,
        E::NotCoordinator => NOT_COORDINATOR,
        E::InvalidTimestamp => INVALID_TIMESTAMP,
        // Retriable: the client refreshes metadata and tries again.
        E::NotReady => LEADER_NOT_AVAILABLE,
        E::ShuttingDown => NOT_LEADER_OR_FOLLOWER,
        E::MalformedRequest | E::InvalidRequest | E::TopicChangeOnKafkaApi => INVALID_REQUEST,
        E::UnsupportedApiKey | E::UnsupportedVersion => UNSUPPORTED_VERSION,
        E::AdminNotAllowed | E::ClusterAuthorizationFailed => CLUSTER_AUTHORIZATION_FAILED,
        E::TopicAuthorizationFailed => TOPIC_AUTHORIZATION_FAILED,
        E::GroupAuthorizationFailed => GROUP_AUTHORIZATION_FAILED,
        E::UnsupportedSaslMechanism => UNSUPPORTED_SASL_MECHANISM,
        E::IllegalSaslState => ILLEGAL_SASL_STATE,
        E::SaslAuthenticationFailed => SASL_AUTHENTICATION_FAILED,
        E::Internal | E::TooManyConnections => UNKNOWN_SERVER_ERROR,
    }
}

/// A Kafka error code as Kafka's tools print it: its name and number,
/// `LEADER_NOT_AVAILABLE (5)`; an unknown code as `error 1234`.
pub fn describe(code: i16) -> String {
    use kafka_protocol::error::ResponseError;
    match ResponseError::try_from_code(code) {
        None => "NONE (0)".to_string(),
        Some(ResponseError::Unknown(code)) => format!("error {code}"),
        Some(e) => format!("{} ({code})", upper_snake(&format!("{e:?}"))),
    }
}

/// Whether a client should retry after `code` (Kafka's retriable errors: a coordinator
/// loading, a partition without its leader yet, a timeout), except an unknown topic or
/// partition, which a tool reports at once (a typo should not wait out the timeout).
pub fn is_retriable(code: i16) -> bool {
    use kafka_protocol::error::ResponseError;
    code != UNKNOWN_TOPIC_OR_PARTITION
        && ResponseError::try_from_code(code).is_some_and(|e| e.is_retriable())
}

/// `LeaderNotAvailable` -> `LEADER_NOT_AVAILABLE`.
fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_kafka_names_them() {
        assert_eq!(describe(5), "LEADER_NOT_AVAILABLE (5)");
        assert_eq!(describe(14), "COORDINATOR_LOAD_IN_PROGRESS (14)");
        assert_eq!(describe(87), "INVALID_RECORD (87)");
        assert_eq!(describe(-1), "UNKNOWN_SERVER_ERROR (-1)");
        assert_eq!(describe(9999), "error 9999");
        assert!(is_retriable(5) && is_retriable(14) && is_retriable(16) && is_retriable(7));
        assert!(!is_retriable(3) && !is_retriable(29) && !is_retriable(0));
    }
}
