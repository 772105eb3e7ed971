//! A transactional id's state at its coordinator (Kafka's `TransactionMetadata`): the
//! producer id and epoch it hands out, the open transaction's partitions, and the state
//! machine of Kafka's `TransactionState` (the ids are the ones logged).

use std::collections::BTreeSet;

use crate::TopicPartition;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    /// In memory only: an Ongoing transaction being aborted to fence its producer.
    PrepareEpochFence,
}

impl TxnState {
    /// The logged `TransactionStatus`.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort | TxnState::PrepareEpochFence => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
        }
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            _ => return None,
        })
    }

    /// The name DescribeTransactions and ListTransactions use.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Markers are being written: the id takes no other request meanwhile.
    pub fn is_preparing(self) -> bool {
        matches!(
            self,
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMeta {
    pub producer_id: i64,
    pub epoch: i16,
    /// The epoch before the last bump (-1 none): a retried bump whose reply was lost.
    pub last_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    pub start_ms: i64,
    pub update_ms: i64,
}

/// The last epoch before a producer id is exhausted (Kafka's `Short.MAX_VALUE - 1`).
pub const MAX_EPOCH: i16 = i16::MAX - 1;

impl TxnMeta {
    /// A new id's state before its first bump (epoch -1, as Kafka starts it).
    pub fn new(producer_id: i64, timeout_ms: i32, now_ms: i64) -> TxnMeta {
        TxnMeta {
            producer_id,
            epoch: -1,
            last_epoch: -1,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            update_ms: now_ms,
        }
    }

    /// Whether the id has been idle longer than `expiration_ms` with no transaction open
    /// or being ended (Kafka's transactional.id.expiration.ms).
    pub fn expired(&self, now_ms: i64, expiration_ms: i64) -> bool {
        let idle = matches!(
            self.state,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        );
        idle && self.update_ms.saturating_add(expiration_ms) <= now_ms
    }

    /// Whether an Ongoing transaction has outlived its timeout.
    pub fn timed_out(&self, now_ms: i64) -> bool {
        self.state == TxnState::Ongoing && self.start_ms + self.timeout_ms as i64 <= now_ms
    }
}
