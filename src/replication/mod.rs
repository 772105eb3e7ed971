//! Replication as Kafka does it, as state machines without I/O: what one replica of a
//! partition decides as leader or follower (`replica.rs`: LEO, high watermark, ISR,
//! leader epochs, truncation after a leader change, KIP-101/279/320), its epoch history
//! (`epochs.rs`, Kafka's leader-epoch-checkpoint), and what the controller decides
//! (`controller.rs`: replica placement, clean leader election, ISR changes). Nothing here
//! reads a file, a socket or a clock: the caller passes the log end offset, the time and
//! the partition state read from etcd, and carries out what comes back. The seeded
//! simulator (`tests/engine/replication_sim/`) drives these same functions through lost,
//! late, reordered and duplicated messages, crashes, pauses and clock jumps.

pub mod controller;
pub mod epochs;
pub mod quota;
pub mod reassignment;
pub mod replica;

pub use epochs::{EpochCache, EpochEntry};
pub use replica::{FetchAnswer, FetchRequest, IsrChange, Replica, Role};

/// A broker's id (Kafka's broker.id).
pub type NodeId = i32;
/// A leader epoch (Kafka's partitionLeaderEpoch).
pub type Epoch = i32;
/// An offset in a partition's log.
pub type Offset = i64;
/// Milliseconds on the caller's clock (only differences are used).
pub type Millis = i64;

/// Kafka's answer for an epoch or offset it does not have (UNDEFINED_EPOCH,
/// UNDEFINED_EPOCH_OFFSET).
pub const UNDEFINED: i64 = -1;

/// A partition's replication state as the cluster's store holds it (KRaft's
/// PartitionRecord): every change is a compare-and-swap on the store's revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// The assignment, preferred leader first.
    pub replicas: Vec<NodeId>,
    pub isr: Vec<NodeId>,
    /// None: offline (no in-sync replica is alive).
    pub leader: Option<NodeId>,
    pub leader_epoch: Epoch,
    /// The broker epoch of the leader's registration when it was elected: a restarted
    /// leader (a new registration) is not the leader until elected again.
    pub leader_broker_epoch: i64,
    /// Grows with every change of this state (KIP-497's partition epoch).
    pub partition_epoch: i32,
    /// A reassignment under way (KRaft's addingReplicas / removingReplicas): `replicas`
    /// is then the target followed by the original replicas leaving; both empty otherwise.
    pub adding: Vec<NodeId>,
    pub removing: Vec<NodeId>,
}

impl PartitionState {
    /// Whether a reassignment is under way.
    pub fn reassigning(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// The replicas a reassignment moves to (the replicas when none is under way).
    pub fn target(&self) -> Vec<NodeId> {
        let staying = self.replicas.iter().filter(|r| !self.removing.contains(r));
        staying.copied().collect()
    }

    /// The replicas before the reassignment under way (the replicas when none is).
    pub fn original(&self) -> Vec<NodeId> {
        let before = self.replicas.iter().filter(|r| !self.adding.contains(r));
        before.copied().collect()
    }
}

/// The errors the replication protocol answers with (Kafka's codes at the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicaError {
    #[error("this node does not lead the partition (NOT_LEADER_OR_FOLLOWER)")]
    NotLeader,
    #[error("the request's leader epoch is older than the leader's (FENCED_LEADER_EPOCH)")]
    FencedLeaderEpoch,
    #[error("the request's leader epoch is newer than the leader's (UNKNOWN_LEADER_EPOCH)")]
    UnknownLeaderEpoch,
    #[error("the in-sync replicas are fewer than min.insync.replicas (NOT_ENOUGH_REPLICAS)")]
    NotEnoughReplicas,
    #[error("the fetch offset is past the leader's log end (OFFSET_OUT_OF_RANGE)")]
    OffsetOutOfRange,
}
