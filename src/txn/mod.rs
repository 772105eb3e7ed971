//! Transactions (Kafka's KIP-98): the state of a transactional id (`meta.rs`) and its
//! records in the transaction state log (`records.rs`). The coordinator (`coordinator.rs`,
//! its operations in `ops.rs`) runs on each shard through the narrow `host.rs` interface the
//! shard implements, backed by the internal compacted topic `__transaction_state` (Kafka's schema, `records.rs`). A
//! transactional id belongs to the shard owning its state partition
//! (`abs(java hashCode(id)) % partitions`, Kafka's rule, as for groups); requests for it are
//! routed there over the mesh. The coordinator hands out producer ids and epochs (fencing
//! older instances), records which partitions a transaction wrote to, and ends it by writing
//! a marker into each (`PartitionOp::WriteMarker`), made durable before it logs the
//! transaction complete. The partitions' side (open transactions, the last stable offset,
//! the aborted-transaction index) is the log's (`log/transactions.rs`).

pub mod code;
pub mod completion;
pub mod coordinator;
pub mod host;
pub mod load;
pub mod meta;
pub mod ops;
pub mod records;
pub mod service;

pub use crate::catalog::internal_topics::TRANSACTION_STATE_TOPIC;

/// The state partition (and so the coordinator) of a transactional id.
pub fn partition_for(id: &str, partitions: usize) -> usize {
    crate::groups::partition_for(id, partitions)
}
