//! What the group coordinator needs of the shard that runs it, as one narrow interface:
//! its place among the shards, the settings, the catalog's view of topics, and reads and
//! appends on the offsets partitions it owns. The shard runtime implements it; nothing in
//! `groups/` names the runtime, so the coordinator never calls back up into it.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use bytes::Bytes;

use crate::broker_error::BrokerError;
use crate::catalog::topics::TopicMeta;
use crate::settings::ServerConfig;

pub type HostFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
pub type HostResult<T> = Result<T, BrokerError>;

/// The shard a coordinator runs on (cheap to clone: a reference count).
pub type Host = Rc<dyn GroupHost>;

/// What every coordinator (groups, transactions) asks of the shard it runs on.
pub trait CoordinatorHost {
    fn shard_id(&self) -> usize;
    fn shutting_down(&self) -> bool;
    fn settings(&self) -> &ServerConfig;
    fn topic(&self, name: &str) -> Option<TopicMeta>;
    /// Whether this node coordinates the keys of an internal topic's partition: always on
    /// a single node; in cluster mode while it leads the partition.
    fn coordinates(&self, topic: &str, partition: i32) -> bool;
}

pub trait GroupHost: CoordinatorHost {
    /// Whether the shard has opened its partitions (before that, groups are not loaded).
    fn is_ready(&self) -> bool;
    /// Record batches of an offsets partition from `offset`, at most about `max_bytes`
    /// (at least one batch); empty at the log end.
    fn read_offsets(
        &self,
        partition: i32,
        offset: i64,
        max_bytes: usize,
    ) -> HostFuture<'_, HostResult<Bytes>>;
    /// The log start offset of an offsets partition.
    fn offsets_log_start(&self, partition: i32) -> HostFuture<'_, HostResult<i64>>;
    /// Appends a batch to an offsets partition, durably (acks=all).
    fn append_offsets(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>>;
    /// Appends a transactional batch (offsets sent inside a producer's transaction) to an
    /// offsets partition, durably; it counts once its transaction's marker is written.
    fn append_txn_offsets(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>>;
}
