//! Messages shards exchange over glommio's channel mesh. Everything here is `Send`: it
//! crosses cores by value; nothing is shared. What one partition is asked and answers is
//! `crate::partition_ops`, which the remote tier speaks too.

use crate::partition_ops::{Isolation, OpResult, PartitionOp};

use crate::TopicPartition;

/// One partition of a fetch across partitions: where to read from and at most how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRead {
    pub tp: TopicPartition,
    pub offset: i64,
    pub max_bytes: usize,
}

#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ShardOp {
    Partition {
        tp: TopicPartition,
        op: PartitionOp,
    },
    /// Several partition ops this shard owns, run at once (multi-partition requests).
    Partitions(Vec<(TopicPartition, PartitionOp)>),
    /// Fetches from partitions this shard owns, in order, sharing `max_bytes` (a
    /// MultiFetch's share).
    FetchInOrder {
        reads: Vec<FetchRead>,
        max_bytes: usize,
        first_at_least_one: bool,
        isolation: Isolation,
    },
    /// One step of an admin change, applied by every shard.
    Catalog(crate::catalog::admin_host::CatalogChange),
    /// An operation of a service the shard runs (`crate::service`): the group and
    /// transaction coordinators, topic admin, security changes, producer ids.
    Service(crate::service::Call),
    /// Clear this shard's caches (page cache, OS cache of its files); reply with its stats.
    DropCaches,
    /// Reply with this shard's stats.
    Stats,
    /// The shard's metrics snapshot.
    Metrics,
    /// "I have no connections left": sent by each shard at shutdown, so partitions close only
    /// after no shard can forward to them any more.
    Drained,
    /// Long poll: completes when the log end of any of these partitions this shard owns
    /// passes the offset beside it, or after `timeout_ms`. The requester cancels it
    /// (`MeshMsg::Cancel`) when it stops waiting.
    WaitForAppends {
        waits: Vec<(TopicPartition, i64)>,
        timeout_ms: u64,
        /// Whose end: consumers' (the high watermark) or followers' (the acknowledged log
        /// end).
        reader: Reader,
    },
}

/// Who waits in a long poll, and so which end: a consumer waits for the high watermark to
/// move, a follower for the acknowledged log end (which runs ahead of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reader {
    Consumer,
    Follower,
}

impl ShardOp {
    /// Whether a requester that stops waiting cancels the op on the peer: only waits, which
    /// change nothing. Every other op runs to its end once sent (an admin step cut in the
    /// middle would leave the shards disagreeing).
    pub fn cancellable(&self) -> bool {
        matches!(self, ShardOp::WaitForAppends { .. })
    }
}

#[derive(Debug)]
#[non_exhaustive]
pub enum MeshMsg {
    Request {
        id: u64,
        from: usize,
        op: ShardOp,
    },
    Response {
        id: u64,
        result: OpResult,
    },
    /// The requester of a cancellable op stopped waiting: the peer drops it, no reply.
    Cancel {
        id: u64,
        from: usize,
    },
}
