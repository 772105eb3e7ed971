//! The one error of broker operations. An engine error and a replication refusal travel
//! unchanged (a caller can still ask the engine's error what range the log holds);
//! everything else is a refusal with its kind (the native protocol's code, which each
//! front end maps once: natively as is, to Kafka's numbers in `kafka_codes`) and what to
//! tell the client. Only the wire edge turns it into the protocol's (code, message) pair.

use std::sync::Arc;

use crate::protocol::ErrorCode;
use crate::replication::ReplicaError;

#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// The storage engine's own error. Shared, because one error may answer several
    /// waiters and cross shards, and `std::io::Error` does not clone.
    #[error(transparent)]
    Engine(Arc<crate::Error>),
    /// A replica's refusal (not the leader, a fenced epoch, too few in sync).
    #[error(transparent)]
    Replica(ReplicaError),
    /// Any other refusal: its kind and words.
    #[error("{message}")]
    Refused { code: ErrorCode, message: String },
}

pub type BrokerResult<T> = Result<T, BrokerError>;

impl BrokerError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        assert_ne!(code, ErrorCode::None, "an error has an error code");
        BrokerError::Refused {
            code,
            message: message.into(),
        }
    }

    /// The error's kind, as the native protocol numbers it.
    pub fn code(&self) -> ErrorCode {
        let code = match self {
            BrokerError::Engine(e) => ErrorCode::of(e),
            BrokerError::Replica(r) => replica_code(r),
            BrokerError::Refused { code, .. } => *code,
        };
        assert_ne!(code, ErrorCode::None, "an error has an error code");
        code
    }

    /// What to tell the client.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The engine's error, when that is what this is.
    pub fn engine(&self) -> Option<&crate::Error> {
        match self {
            BrokerError::Engine(e) => Some(e),
            _ => None,
        }
    }

    /// The wire's (code, message) pair.
    pub fn into_wire(self) -> (ErrorCode, String) {
        (self.code(), self.message())
    }
}

impl From<crate::Error> for BrokerError {
    fn from(e: crate::Error) -> Self {
        BrokerError::Engine(Arc::new(e))
    }
}

impl From<ReplicaError> for BrokerError {
    fn from(e: ReplicaError) -> Self {
        BrokerError::Replica(e)
    }
}

/// Errors compare by what the client is told (kind and words): the engine's `io::Error`
/// has no equality of its own.
impl PartialEq for BrokerError {
    fn eq(&self, other: &Self) -> bool {
        self.code() == other.code() && self.message() == other.message()
    }
}

impl Eq for BrokerError {}

fn replica_code(e: &ReplicaError) -> ErrorCode {
    match e {
        ReplicaError::NotLeader => ErrorCode::NotLeader,
        ReplicaError::FencedLeaderEpoch => ErrorCode::FencedLeaderEpoch,
        ReplicaError::UnknownLeaderEpoch => ErrorCode::UnknownLeaderEpoch,
        ReplicaError::NotEnoughReplicas => ErrorCode::NotEnoughReplicas,
        ReplicaError::OffsetOutOfRange => ErrorCode::OffsetOutOfRange,
    }
}
