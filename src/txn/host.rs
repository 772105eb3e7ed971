//! What the transaction coordinator needs of the shard that runs it, as one narrow
//! interface: its place among the shards, the settings, the catalog's view of topics, reads
//! and appends on the state partitions it owns, producer ids, and markers. The shard runtime
//! implements it; nothing in `txn/` names the runtime, so the coordinator never calls back
//! up into it (the `groups/host.rs` pattern).

use std::rc::Rc;

use bytes::Bytes;

use crate::format::control::EndTxnMarker;
pub use crate::groups::host::{CoordinatorHost, HostFuture, HostResult};
use crate::TopicPartition;

/// The shard a transaction coordinator runs on (cheap to clone: a reference count).
pub type TxnHostRc = Rc<dyn TxnHost>;

pub trait TxnHost: CoordinatorHost {
    /// The log start offset of a state partition.
    fn state_log_start(&self, partition: i32) -> HostFuture<'_, HostResult<i64>>;
    /// Record batches of a state partition from `offset`, at most about `max_bytes` (at
    /// least one batch); empty at the log end.
    fn read_state(
        &self,
        partition: i32,
        offset: i64,
        max_bytes: usize,
    ) -> HostFuture<'_, HostResult<Bytes>>;
    /// Appends a batch to a state partition, durably (acks=all).
    fn append_state(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>>;
    /// A producer id never handed out before (from the controller's persisted blocks).
    fn allocate_producer_id(&self) -> HostFuture<'_, HostResult<i64>>;
    /// Writes the marker ending producer `(id, epoch)`'s transaction into `tp`, durably.
    fn write_marker<'a>(
        &'a self,
        tp: &'a TopicPartition,
        producer: (i64, i16),
        marker: EndTxnMarker,
    ) -> HostFuture<'a, HostResult<()>>;
    /// In cluster mode, when another node leads `tp`: the marker written there (an error
    /// to retry while it has no leader). `None`: this node writes it (`write_marker`).
    fn marker_elsewhere<'a>(
        &'a self,
        tp: &'a TopicPartition,
        producer: (i64, i16),
        marker: EndTxnMarker,
    ) -> Option<HostFuture<'a, HostResult<()>>>;
    /// Tells the group coordinator of offsets partition `partition` that producer
    /// `producer_id`'s transaction ended there; whether it took note.
    fn complete_txn_offsets(
        &self,
        partition: i32,
        producer_id: i64,
        commit: bool,
    ) -> HostFuture<'_, bool>;
}

/// What a transaction coordinator asks of another node of the cluster, over Kafka's own
/// protocol. The Kafka layer implements it (`kafka/txn_peers.rs`) and installs it on each
/// shard at start, so neither the coordinator nor the shard runtime names a protocol.
pub trait PeerCalls {
    /// Writes the marker ending producer `(id, epoch)`'s transaction into `tp` on `leader`
    /// (Kafka's WriteTxnMarkers), durably; an error to retry otherwise.
    fn write_marker<'a>(
        &'a self,
        view: &'a crate::cluster::ClusterView,
        leader: i32,
        tp: &'a TopicPartition,
        producer: (i64, i16),
        marker: EndTxnMarker,
    ) -> HostFuture<'a, HostResult<()>>;
}
