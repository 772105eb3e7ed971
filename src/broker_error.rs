//! The one error of broker operations: what kind it is (the native protocol's code, which
//! each front end maps once: natively as is, to Kafka's numbers in `kafka_codes`) and what
//! to tell the client. Engine errors become one at the partition (`shard::partition_actor`),
//! group outcomes through `GroupCode::native`; only the wire edge turns it into the
//! protocol's (code, message) pair.

use crate::protocol::ErrorCode;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct BrokerError {
    pub code: ErrorCode,
    pub message: String,
}

pub type BrokerResult<T> = Result<T, BrokerError>;

impl BrokerError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        assert_ne!(code, ErrorCode::None, "an error has an error code");
        BrokerError {
            code,
            message: message.into(),
        }
    }

    /// The wire's (code, message) pair.
    pub fn into_wire(self) -> (ErrorCode, String) {
        (self.code, self.message)
    }
}
