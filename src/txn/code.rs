//! What a transaction coordinator answers, typed (as `groups/code.rs` types the group
//! coordinator's): Kafka's transaction outcomes. One table maps them to Kafka's numbers,
//! with Kafka's rule for clients too old to know PRODUCER_FENCED.
//!
//! The constants below give each outcome its Kafka name, so the coordinator reads as
//! Kafka's `TransactionCoordinator` does.

use crate::kafka_codes as k;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TxnCode {
    #[default]
    None,
    /// The id has a change or markers in flight (clients retry).
    ConcurrentTransactions,
    CoordinatorLoadInProgress,
    /// The state log could not be read or written, or the coordinator is unreachable.
    CoordinatorNotAvailable,
    NotCoordinator,
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTxnState,
    /// A newer instance of the id took over (KIP-588).
    ProducerFenced,
    TransactionalIdNotFound,
    TransactionalIdAuthorizationFailed,
}

impl TxnCode {
    pub fn is_ok(self) -> bool {
        self == TxnCode::None
    }

    /// Kafka's number; PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for request versions
    /// that predate it (`knows_fenced` false), as Kafka's front end does.
    pub fn kafka(self, knows_fenced: bool) -> i16 {
        use TxnCode as T;
        match self {
            T::None => k::NONE,
            T::ConcurrentTransactions => k::CONCURRENT_TRANSACTIONS,
            T::CoordinatorLoadInProgress => k::COORDINATOR_LOAD_IN_PROGRESS,
            T::CoordinatorNotAvailable => k::COORDINATOR_NOT_AVAILABLE,
            T::NotCoordinator => k::NOT_COORDINATOR,
            T::InvalidProducerEpoch => k::INVALID_PRODUCER_EPOCH,
            T::InvalidProducerIdMapping => k::INVALID_PRODUCER_ID_MAPPING,
            T::InvalidTxnState => k::INVALID_TXN_STATE,
            T::ProducerFenced if knows_fenced => k::PRODUCER_FENCED,
            T::ProducerFenced => k::INVALID_PRODUCER_EPOCH,
            T::TransactionalIdNotFound => k::TRANSACTIONAL_ID_NOT_FOUND,
            T::TransactionalIdAuthorizationFailed => k::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        }
    }
}

pub const NONE: TxnCode = TxnCode::None;
pub const CONCURRENT_TRANSACTIONS: TxnCode = TxnCode::ConcurrentTransactions;
pub const COORDINATOR_LOAD_IN_PROGRESS: TxnCode = TxnCode::CoordinatorLoadInProgress;
pub const COORDINATOR_NOT_AVAILABLE: TxnCode = TxnCode::CoordinatorNotAvailable;
pub const NOT_COORDINATOR: TxnCode = TxnCode::NotCoordinator;
pub const INVALID_PRODUCER_EPOCH: TxnCode = TxnCode::InvalidProducerEpoch;
pub const INVALID_PRODUCER_ID_MAPPING: TxnCode = TxnCode::InvalidProducerIdMapping;
pub const INVALID_TXN_STATE: TxnCode = TxnCode::InvalidTxnState;
pub const PRODUCER_FENCED: TxnCode = TxnCode::ProducerFenced;
pub const TRANSACTIONAL_ID_NOT_FOUND: TxnCode = TxnCode::TransactionalIdNotFound;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_is_told_only_to_versions_that_know_it() {
        assert_eq!(PRODUCER_FENCED.kafka(true), k::PRODUCER_FENCED);
        assert_eq!(PRODUCER_FENCED.kafka(false), k::INVALID_PRODUCER_EPOCH);
        assert_eq!(NONE.kafka(false), k::NONE);
        assert!(NONE.is_ok());
        assert!(!CONCURRENT_TRANSACTIONS.is_ok());
    }
}
