//! The messages of replication's steps on a partition's task (`replica_actor.rs` runs
//! them): plain data, so the shard's message enums can carry them.

use std::time::Duration;

use bytes::Bytes;

use crate::io::chain::ByteChain;
use crate::replication::{Epoch, FetchAnswer, FetchRequest, IsrChange, NodeId, PartitionState};

/// What replication asks of a partition's task.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ReplicaOp {
    /// The partition's state as etcd holds it, for this node (its id and broker epoch);
    /// acks=all produces wait at most `ack_timeout` for the in-sync replicas.
    Apply {
        state: Box<PartitionState>,
        me: NodeId,
        broker_epoch: i64,
        ack_timeout: Duration,
    },
    /// A follower's fetch, on the leader; `eligible`: the follower's node is live and not
    /// in controlled shutdown (it may join the ISR); `max_bytes` 0: its progress is taken,
    /// but no records go (a throttled follower over the quota).
    Fetch {
        request: FetchRequest,
        max_bytes: usize,
        eligible: bool,
    },
    /// The follower's next fetch, if it follows a leader.
    NextFetch,
    /// The leader's answer to this follower's fetch `answered`.
    Received {
        answered: FetchRequest,
        answer: LeaderAnswer,
    },
    /// On the leader: the store refused its ISR change for good (a replica it adds is not
    /// eligible); the change is dropped.
    IsrRefused {
        change: crate::replication::IsrChange,
    },
    /// On the leader: followers that stopped keeping up leave the ISR (`max_lag`), and
    /// acks=all produces past their deadline are answered.
    Tick { max_lag: Duration },
    /// This node is no longer a replica (a reassignment moved the partition off it): it
    /// stops leading and fetching, and its copy is emptied (Kafka's StopReplica with
    /// delete), unless `state` is older than one it applied.
    Stop { state: Box<PartitionState> },
}

/// What a leader answered a follower.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LeaderAnswer {
    Records {
        records: Bytes,
        high_watermark: i64,
    },
    Diverging {
        epoch: Epoch,
        end_offset: i64,
    },
    /// OFFSET_OUT_OF_RANGE below the leader's log start: the follower's log starts over
    /// there.
    StartsAt {
        log_start: i64,
    },
}

/// The results of replication's ops.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ReplicaReply {
    Applied,
    /// A leader's answer to a follower.
    Fetched {
        answer: FetchAnswer,
        records: ByteChain,
        log_start_offset: i64,
        log_end_offset: i64,
        isr_change: Option<IsrChange>,
    },
    NextFetch(Option<(NodeId, FetchRequest)>),
    /// A leader's answer to a fetch below its log start (OFFSET_OUT_OF_RANGE, with the
    /// log start the follower starts over at).
    BelowLogStart {
        log_start_offset: i64,
    },
    /// A follower took in its leader's answer: its log end now.
    Followed {
        log_end: i64,
    },
    /// A leader's tick: an ISR change for the caller to write to etcd, and how far
    /// behind each follower is (follower, records, milliseconds).
    Ticked {
        isr_change: Option<IsrChange>,
        lags: Vec<(NodeId, i64, i64)>,
    },
}
