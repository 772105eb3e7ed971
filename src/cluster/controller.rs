//! What the elected controller writes to etcd, on the cluster thread: new topics (replicas
//! placed as Kafka places them), deleted topics, and new leaders when a leader's node is
//! gone. The decisions are `replication::controller`'s pure functions; this file carries
//! them out. Every write is one etcd transaction that also compares the controller key's
//! creation revision with this controller's epoch, so a deposed controller (paused, cut
//! off, its lease expired) can never change anything, and every partition change compares
//! the revision of the state it was decided on.

use tokio::sync::oneshot;

use crate::cluster::etcd::{Compare, Etcd, Op};
use crate::cluster::topics::{encode_partition, encode_topic, ClusterTopic};
use crate::cluster::{ClusterError, ClusterView, Keys};
use crate::replication::controller::{
    alter_isr, elect, elect_preferred, elect_unclean, imbalanced, place_on_racks, ElectionRefused,
    IsrRefused, PlacementError,
};
use crate::replication::reassignment::complete;
use crate::replication::{IsrChange, PartitionState};

/// A topic change a client asked this node for, answered once etcd holds it (or why not).
#[derive(Debug)]
#[non_exhaustive]
pub enum TopicCommand {
    Create {
        spec: TopicSpec,
        reply: oneshot::Sender<Result<ClusterTopic, TopicRefused>>,
    },
    Delete {
        name: String,
        reply: oneshot::Sender<Result<(), TopicRefused>>,
    },
    Grow {
        name: String,
        count: u32,
        reply: oneshot::Sender<Result<(), TopicRefused>>,
    },
    /// A topic's whole set of config overrides, already validated by the node asked.
    SetConfigs {
        name: String,
        configs: Vec<(String, String)>,
        reply: oneshot::Sender<Result<(), TopicRefused>>,
    },
    /// A leader's ISR change (KIP-497's AlterPartition), checked against the partition's
    /// current state and written only over the revision it was checked on.
    AlterIsr {
        topic: String,
        partition: u32,
        change: IsrChange,
        reply: oneshot::Sender<Result<(), TopicRefused>>,
    },
    /// An internal topic this node needs (created by the controller).
    WantInternal {
        spec: TopicSpec,
        reply: oneshot::Sender<Result<(), TopicRefused>>,
    },
    /// A block of `size` producer ids for this node (any node may claim one): its start.
    ClaimProducerIds {
        size: i64,
        reply: oneshot::Sender<Result<i64, TopicRefused>>,
    },
    /// Elections an operator asked for (Kafka's ElectLeaders), run by the controller.
    ElectLeaders {
        kind: ElectionKind,
        /// None: every partition.
        partitions: Option<Vec<(String, u32)>>,
        reply: oneshot::Sender<Result<Vec<ElectionResult>, TopicRefused>>,
    },
    /// Reassignments an operator asked for (Kafka's AlterPartitionReassignments), run by
    /// the controller.
    Reassign {
        partitions: Vec<ReassignAsked>,
        reply: oneshot::Sender<Result<Vec<ReassignResult>, TopicRefused>>,
    },
    /// This node is stopping: mark it, and answer once the controller has moved what it
    /// led (or after `bound`) with the partitions left (`leaving.rs`).
    Leave {
        bound: std::time::Duration,
        reply: oneshot::Sender<Result<Vec<String>, TopicRefused>>,
    },
    /// A new shared value (any node may), stored if etcd's is still the one at
    /// `expected` (`security.rs`).
    SwapValue {
        of: crate::cluster::SharedValue,
        expected: i64,
        value: Vec<u8>,
        reply: oneshot::Sender<Result<crate::cluster::security::Swapped, TopicRefused>>,
    },
}

impl TopicCommand {
    /// Answers the command with `why` without running it (etcd could not be read).
    pub fn refuse(self, why: TopicRefused) {
        let _ = match self {
            TopicCommand::Create { reply, .. } => reply.send(Err(why)).is_ok(),
            TopicCommand::Delete { reply, .. }
            | TopicCommand::Grow { reply, .. }
            | TopicCommand::SetConfigs { reply, .. }
            | TopicCommand::AlterIsr { reply, .. }
            | TopicCommand::WantInternal { reply, .. } => reply.send(Err(why)).is_ok(),
            TopicCommand::ClaimProducerIds { reply, .. } => reply.send(Err(why)).is_ok(),
            TopicCommand::SwapValue { reply, .. } => reply.send(Err(why)).is_ok(),
            TopicCommand::ElectLeaders { reply, .. } => reply.send(Err(why)).is_ok(),
            TopicCommand::Leave { reply, .. } => reply.send(Err(why)).is_ok(),
            TopicCommand::Reassign { reply, .. } => reply.send(Err(why)).is_ok(),
        };
    }
}

/// A topic to create, already validated by the node that took the request (name, count,
/// configs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: u32,
    pub replication_factor: usize,
    pub configs: Vec<(String, String)>,
}

/// Why the controller did not make a change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TopicRefused {
    #[error("this node is not the controller (the controller is {controller:?}); ask it")]
    NotController { controller: Option<i32> },
    #[error("topic {0:?} already exists")]
    Exists(String),
    #[error("unknown topic {0:?}")]
    Unknown(String),
    #[error("topic {name:?} has {now} partitions: it can only grow, not to {asked}")]
    CannotShrink { name: String, now: u32, asked: u32 },
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error("{0}")]
    Cluster(#[from] ClusterError),
    #[error("the change lost a race with another write to etcd (a new controller, or a concurrent change); retry")]
    Raced,
    #[error("{0}")]
    Isr(#[from] IsrRefused),
}

/// At most this many writes per etcd transaction (etcd's --max-txn-ops is 128 by default).
const OPS_PER_TXN: usize = 100;

/// The controller's standing in one view: its epoch, or why it may not act.
pub(crate) fn my_epoch(view: &ClusterView, me: i32) -> Result<i64, TopicRefused> {
    match view.controller {
        Some(c) if c.id == me => Ok(c.epoch),
        other => Err(TopicRefused::NotController {
            controller: other.map(|c| c.id),
        }),
    }
}

/// The fence of every controller write: the controller key is still this election's.
fn fenced(keys: &Keys, epoch: i64) -> Compare {
    Compare::CreatedAt(keys.controller(), epoch)
}

/// Creates a topic: its partitions' states first (in transactions of at most
/// `OPS_PER_TXN`), then its key, the commit point (a topic is read back only with all its
/// partitions). Each transaction requires the topic key still absent.
pub async fn create_topic(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    spec: TopicSpec,
) -> Result<ClusterTopic, TopicRefused> {
    let epoch = my_epoch(view, me)?;
    if view.topics.contains_key(&spec.name) {
        return Err(TopicRefused::Exists(spec.name));
    }
    let live = live_with_racks(view);
    let (start, shift) = (fastrand::usize(..live.len().max(1)), fastrand::usize(..));
    let placed = place_on_racks(
        spec.partitions as usize,
        spec.replication_factor,
        &live,
        start,
        shift,
    )?;
    let states: Vec<PartitionState> = placed.into_iter().map(|r| first_state(r, view)).collect();
    assert_eq!(
        states.len(),
        spec.partitions as usize,
        "a state per partition"
    );
    let topic_key = keys.topic(&spec.name);
    let guard = [
        fenced(keys, epoch),
        Compare::CreatedAt(topic_key.clone(), 0),
    ];
    // Leftovers of a create a dead controller did not finish.
    let clear = [Op::DeletePrefix(keys.partitions_of(&spec.name))];
    require(etcd.txn(&guard, &clear).await?)?;
    let puts: Vec<Op> = states
        .iter()
        .enumerate()
        .map(|(p, s)| Op::Put(keys.partition(&spec.name, p as u32), encode_partition(s)))
        .collect();
    for chunk in puts.chunks(OPS_PER_TXN) {
        require(etcd.txn(&guard, chunk).await?)?;
    }
    let id = crate::catalog::topics::new_topic_id();
    let value = encode_topic(id, spec.partitions, &spec.configs);
    require(etcd.txn(&guard, &[Op::Put(topic_key, value)]).await?)?;
    tracing::info!(topic = %spec.name, partitions = spec.partitions, replication_factor = spec.replication_factor, "topic created in the cluster");
    let partitions = states
        .into_iter()
        .map(|state| crate::cluster::topics::ClusterPartition {
            state,
            mod_revision: 0,
        });
    Ok(ClusterTopic {
        name: spec.name,
        id,
        configs: spec.configs,
        partitions: partitions.collect(),
        revision: 0,
    })
}

/// Grows a topic to `count` partitions (Kafka's CreatePartitions): the new partitions'
/// states first, placed over the live brokers with the topic's replication factor, then
/// the topic key's count (the commit point), each write requiring the topic key as read.
pub async fn grow_topic(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    (name, count): (&str, u32),
) -> Result<(), TopicRefused> {
    let epoch = my_epoch(view, me)?;
    let topic = (view.topics.get(name)).ok_or_else(|| TopicRefused::Unknown(name.to_string()))?;
    let now = topic.partitions.len() as u32;
    if count <= now {
        return Err(TopicRefused::CannotShrink {
            name: name.to_string(),
            now,
            asked: count,
        });
    }
    let factor = topic.partitions[0].state.replicas.len();
    let live = live_with_racks(view);
    let (start, shift) = (fastrand::usize(..live.len().max(1)), fastrand::usize(..));
    let placed = place_on_racks((count - now) as usize, factor, &live, start, shift)?;
    assert_eq!(
        placed.len(),
        (count - now) as usize,
        "one placement per new partition"
    );
    let topic_key = keys.topic(name);
    let guard = [
        fenced(keys, epoch),
        Compare::ModifiedAt(topic_key.clone(), topic.revision),
    ];
    let puts: Vec<Op> = placed
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let key = keys.partition(name, now + i as u32);
            Op::Put(key, encode_partition(&first_state(r, view)))
        })
        .collect();
    for chunk in puts.chunks(OPS_PER_TXN) {
        require(etcd.txn(&guard, chunk).await?)?;
    }
    let value = encode_topic(topic.id, count, &topic.configs);
    require(etcd.txn(&guard, &[Op::Put(topic_key, value)]).await?)?;
    tracing::info!(topic = %name, from = now, to = count, "partitions added in the cluster");
    Ok(())
}

/// The live brokers as placement takes them: (id, rack), by id. A node in controlled
/// shutdown gets no new replicas.
fn live_with_racks(view: &ClusterView) -> Vec<(i32, Option<String>)> {
    let staying = view.brokers.iter().filter(|b| !b.shutting_down);
    staying.map(|b| (b.id, b.rack.clone())).collect()
}

/// A new partition's state: the first replica leads. Its ISR is the leader alone until
/// replica fetching lands: a replica that holds nothing is never counted in sync, so no
/// election can pick one.
fn first_state(replicas: Vec<i32>, view: &ClusterView) -> PartitionState {
    let leader = replicas[0];
    let epoch = view.live_epoch(leader);
    assert!(epoch.is_some(), "replicas are placed on live brokers");
    PartitionState {
        isr: vec![leader],
        leader: Some(leader),
        leader_epoch: 0,
        leader_broker_epoch: epoch.unwrap_or(-1),
        partition_epoch: 0,
        replicas,
        adding: Vec::new(),
        removing: Vec::new(),
    }
}

fn require(applied: bool) -> Result<(), TopicRefused> {
    if applied {
        Ok(())
    } else {
        Err(TopicRefused::Raced)
    }
}

/// Deletes a topic: its key and its partitions' keys in one transaction.
pub async fn delete_topic(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    name: &str,
) -> Result<(), TopicRefused> {
    let epoch = my_epoch(view, me)?;
    if !view.topics.contains_key(name) {
        return Err(TopicRefused::Unknown(name.to_string()));
    }
    let ops = [
        Op::Delete(keys.topic(name)),
        Op::DeletePrefix(keys.partitions_of(name)),
    ];
    require(etcd.txn(&[fenced(keys, epoch)], &ops).await?)?;
    tracing::info!(topic = %name, "topic deleted from the cluster");
    Ok(())
}

/// What one pass of elections changed: partition states written, and new leaders among
/// them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Elected {
    pub writes: usize,
    pub leaders: usize,
}

/// Elects a leader for every partition whose leader is gone (or restarted, or leaving in
/// a controlled shutdown) and drops dead and leaving brokers from ISRs, each as a
/// compare-and-swap on the state it read.
pub async fn elect_leaders(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
) -> Result<Elected, ClusterError> {
    let Ok(epoch) = my_epoch(view, me) else {
        return Ok(Elected::default());
    };
    let mut changed = Elected::default();
    for topic in view.topics.values() {
        for (p, partition) in topic.partitions.iter().enumerate() {
            // A reassignment whose new replicas are in sync completes in the same write.
            let elected = elect(&partition.state, view);
            let settled = elected.as_ref().unwrap_or(&partition.state);
            let Some(next) = complete(settled, view).or(elected) else {
                continue;
            };
            let at = (topic.name.as_str(), p as u32);
            if write_state(etcd, keys, epoch, at, partition, &next).await? {
                changed.writes += 1;
                let new_leader =
                    next.leader.is_some() && next.leader_epoch > partition.state.leader_epoch;
                changed.leaders += usize::from(new_leader);
            }
        }
    }
    assert!(changed.leaders <= changed.writes, "a new leader is a write");
    Ok(changed)
}

/// Writes a partition's next state, fenced by this controller's epoch and the revision
/// the state was read at: whether it landed.
pub(crate) async fn write_state(
    etcd: &Etcd,
    keys: &Keys,
    epoch: i64,
    (topic, p): (&str, u32),
    current: &crate::cluster::ClusterPartition,
    next: &PartitionState,
) -> Result<bool, ClusterError> {
    assert!(
        next.leader_epoch >= current.state.leader_epoch,
        "epochs never go back"
    );
    assert!(
        next.partition_epoch > current.state.partition_epoch,
        "every change moves the partition epoch"
    );
    let key = keys.partition(topic, p);
    let guard = [
        fenced(keys, epoch),
        Compare::ModifiedAt(key.clone(), current.mod_revision),
    ];
    let landed = etcd
        .txn(&guard, &[Op::Put(key, encode_partition(next))])
        .await?;
    if landed {
        tracing::info!(topic, partition = p, leader = ?next.leader, leader_epoch = next.leader_epoch, isr = ?next.isr, replicas = ?next.replicas, "partition state changed");
    }
    if landed && current.state.reassigning() && !next.reassigning() {
        tracing::info!(topic, partition = p, replicas = ?next.replicas, "reassignment completed");
    }
    Ok(landed)
}

/// Kafka's two elections an operator asks for (ElectLeaders' election_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionKind {
    /// Leadership back to the first assigned replica, if in sync.
    Preferred,
    /// A partition without a live leader led by a live replica outside the ISR (loses
    /// what only the ISR held).
    Unclean,
}

/// One partition's outcome of an election asked for.
pub type ElectionOutcome = Result<(), ElectionAnswer>;

/// A partition (topic, index) and its election's outcome.
pub type ElectionResult = (String, u32, ElectionOutcome);

/// Why an election asked for did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElectionAnswer {
    #[error("unknown topic or partition {0}")]
    Unknown(String),
    #[error(transparent)]
    Refused(#[from] ElectionRefused),
    #[error("the partition changed while it was being elected; retry")]
    Raced,
}

/// Runs the elections asked for (`partitions`, or every partition when None) as this
/// controller: one outcome per partition asked for; for every partition, only those
/// that needed one (Kafka's answer to a null list).
pub async fn elect_asked(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    (kind, partitions): (ElectionKind, Option<Vec<(String, u32)>>),
) -> Result<Vec<ElectionResult>, TopicRefused> {
    let epoch = my_epoch(view, me)?;
    let all = partitions.is_none();
    let asked = partitions.unwrap_or_else(|| every_partition(view));
    let mut out = Vec::with_capacity(asked.len());
    for (topic, p) in asked {
        let outcome = elect_one(etcd, keys, view, epoch, (&topic, p), kind).await?;
        if !(all && outcome == Err(ElectionAnswer::Refused(ElectionRefused::NotNeeded))) {
            out.push((topic, p, outcome));
        }
    }
    Ok(out)
}

fn every_partition(view: &ClusterView) -> Vec<(String, u32)> {
    let topics = view.topics.values();
    let each = topics.flat_map(|t| (0..t.partitions.len() as u32).map(|p| (t.name.clone(), p)));
    each.collect()
}

async fn elect_one(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    epoch: i64,
    (topic, p): (&str, u32),
    kind: ElectionKind,
) -> Result<ElectionOutcome, ClusterError> {
    let current = view
        .topics
        .get(topic)
        .and_then(|t| t.partitions.get(p as usize));
    let Some(current) = current else {
        return Ok(Err(ElectionAnswer::Unknown(format!("{topic}-{p}"))));
    };
    let next = match kind {
        ElectionKind::Preferred => elect_preferred(&current.state, view),
        ElectionKind::Unclean => elect_unclean(&current.state, view),
    };
    let next = match next {
        Ok(next) => next,
        Err(why) => return Ok(Err(why.into())),
    };
    if kind == ElectionKind::Unclean {
        tracing::warn!(topic, partition = p, leader = ?next.leader, "unclean leader election, as asked: records only the lost in-sync replicas held are gone");
    }
    match write_state(etcd, keys, epoch, (topic, p), current, &next).await? {
        true => Ok(Ok(())),
        false => Ok(Err(ElectionAnswer::Raced)),
    }
}

/// Kafka's `auto.leader.rebalance.enable`: preferred elections for the partitions of
/// every broker whose share of lost leaderships is above `percentage`. How many moved.
pub async fn rebalance_leaders(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    percentage: u32,
) -> Result<usize, ClusterError> {
    let Ok(epoch) = my_epoch(view, me) else {
        return Ok(0);
    };
    let mut at = Vec::new();
    for topic in view.topics.values() {
        for (p, partition) in topic.partitions.iter().enumerate() {
            at.push((topic.name.as_str(), p as u32, partition));
        }
    }
    let states: Vec<&PartitionState> = at.iter().map(|(_, _, c)| &c.state).collect();
    let mut moved = 0;
    for (i, next) in imbalanced(&states, percentage, view) {
        let (topic, p, current) = at[i];
        if write_state(etcd, keys, epoch, (topic, p), current, &next).await? {
            moved += 1;
        }
    }
    if moved > 0 {
        tracing::info!(
            moved,
            "leaderships moved back to preferred replicas (auto.leader.rebalance.enable)"
        );
    }
    Ok(moved)
}

/// Writes a leader's ISR change if it stands on the partition's current state (made by
/// its current leader on its current partition epoch, naming live replicas), as a
/// compare-and-swap on the revision that state was read at.
pub async fn change_isr(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    (topic, partition): (&str, u32),
    change: &IsrChange,
) -> Result<(), TopicRefused> {
    let current = view
        .topics
        .get(topic)
        .and_then(|t| t.partitions.get(partition as usize))
        .ok_or_else(|| TopicRefused::Unknown(format!("{topic}-{partition}")))?;
    let next = alter_isr(&current.state, change, view)?;
    assert!(
        next.partition_epoch > current.state.partition_epoch,
        "an ISR change moves the partition epoch"
    );
    let key = keys.partition(topic, partition);
    let guard = [Compare::ModifiedAt(key.clone(), current.mod_revision)];
    require(
        etcd.txn(&guard, &[Op::Put(key, encode_partition(&next))])
            .await?,
    )?;
    tracing::info!(topic, partition, isr = ?next.isr, partition_epoch = next.partition_epoch, "ISR changed");
    Ok(())
}

/// Replaces a topic's config overrides: a compare-and-swap on the topic key as read (any
/// node may write it; a concurrent change makes this one retry, never lost silently).
pub async fn set_topic_configs(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    name: &str,
    configs: &[(String, String)],
) -> Result<(), TopicRefused> {
    let topic = (view.topics.get(name)).ok_or_else(|| TopicRefused::Unknown(name.to_string()))?;
    let key = keys.topic(name);
    let guard = [Compare::ModifiedAt(key.clone(), topic.revision)];
    let value = encode_topic(topic.id, topic.partitions.len() as u32, configs);
    require(etcd.txn(&guard, &[Op::Put(key, value)]).await?)?;
    tracing::info!(topic = %name, ?configs, "topic configs changed in the cluster");
    Ok(())
}

/// A partition (topic, index) and its target replicas (None: cancel the reassignment).
pub type ReassignAsked = (String, u32, Option<Vec<crate::replication::NodeId>>);

/// A partition and the outcome of its reassignment asked for.
pub type ReassignResult = (String, u32, Result<(), ReassignAnswer>);

/// Why a reassignment asked for did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReassignAnswer {
    #[error("unknown topic or partition {0}")]
    Unknown(String),
    #[error(transparent)]
    Refused(#[from] crate::replication::reassignment::ReassignRefused),
    #[error("the partition changed while it was being reassigned; retry")]
    Raced,
}
