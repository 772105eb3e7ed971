//! A shard's part in replication (cluster mode): each partition it owns that this node
//! replicates gets its state from every new view (once per change of leader epoch,
//! partition epoch or this node's registration), and the partitions it leads are ticked
//! (followers that stopped keeping up leave the ISR, acks=all produces past their timeout
//! are answered), with the ISR changes that come back written to etcd through the
//! cluster thread. The followers' fetching is `kafka::replica_fetcher`'s.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use crate::cluster::{ClusterView, TopicRefused};
use crate::partition_ops::{OpOk, PartitionOp};
use crate::replication::controller::IsrRefused;
use crate::replication::{IsrChange, NodeId};
use crate::shard::partition::replica::{ReplicaOp, ReplicaReply};
use crate::shard::runtime::Shard;
use crate::TopicPartition;

/// What a partition was last given: (leader epoch, partition epoch, this node's broker
/// epoch).
type Applied = HashMap<TopicPartition, (i32, i32, i64)>;

/// How often the partitions a shard leads are ticked.
const TICK: Duration = Duration::from_secs(1);

/// The replicated partitions this shard owns, as the last view left them.
#[derive(Default)]
pub struct ReplicaStates {
    applied: Applied,
    /// The internal partitions this node's coordinators serve, with the leader epoch their
    /// state was loaded in (`shard/coordinator_routing.rs`).
    coordinating: HashMap<TopicPartition, i32>,
    /// The partitions this node is not a replica of whose copy is emptied (once per run,
    /// or again after it was a replica).
    stopped: std::collections::HashSet<TopicPartition>,
}

impl ReplicaStates {
    /// Gives each replicated partition this shard owns its state from `view` where it
    /// changed: whether every one took it (a partition not open yet is tried again).
    pub async fn apply(&mut self, shard: &Rc<Shard>, view: &ClusterView) -> bool {
        let me = shard.config().cluster.broker_id;
        let Some(broker_epoch) = view.live_epoch(me) else {
            return false;
        };
        let (here, mut settled) = replicated_here(shard, view, me);
        let mut seen = Applied::new();
        for (tp, state) in here {
            let key = (state.leader_epoch, state.partition_epoch, broker_epoch);
            seen.insert(tp.clone(), key);
            if self.applied.get(&tp) == Some(&key) {
                continue;
            }
            let op = ReplicaOp::Apply {
                state: Box::new(state.clone()),
                me,
                broker_epoch,
                ack_timeout: Duration::from_millis(shard.config().request_timeout_ms),
            };
            match shard
                .partition_op(&tp.topic, tp.partition, PartitionOp::Replica(op))
                .await
            {
                Ok(_) => {
                    tracing::debug!(partition = %tp, leader_epoch = key.0, partition_epoch = key.1, "a replica took its state");
                    let led = (state.leader == Some(me)).then_some(state.leader_epoch);
                    self.follow_coordination(shard, &tp, led);
                }
                Err(e) => {
                    tracing::debug!(partition = %tp, error = %e, "a partition did not take its state yet");
                    seen.remove(&tp);
                    settled = false;
                }
            }
        }
        self.stopped.retain(|tp| !seen.contains_key(tp));
        self.applied = seen;
        settled & self.stop_removed(shard, view, me).await
    }

    /// Stops every partition this node is not a replica of and empties its copy (once):
    /// whether all of them took it.
    async fn stop_removed(&mut self, shard: &Rc<Shard>, view: &ClusterView, me: NodeId) -> bool {
        let mut settled = true;
        for (tp, state) in not_replicated_here(shard, view, me) {
            if self.stopped.contains(&tp) {
                continue;
            }
            let state = Box::new(state);
            let op = PartitionOp::Replica(ReplicaOp::Stop { state });
            match shard.partition_op(&tp.topic, tp.partition, op).await {
                Ok(_) => {
                    self.follow_coordination(shard, &tp, None);
                    self.stopped.insert(tp);
                }
                Err(e) => {
                    tracing::debug!(partition = %tp, error = %e, "a partition moved away did not stop yet");
                    settled = false;
                }
            }
        }
        settled
    }
}

impl ReplicaStates {
    /// A coordinator follows its internal partition's leadership: it loads the partition's
    /// state when this node becomes its leader (or leads it in a new epoch, after another
    /// leader may have written to it) and forgets it when another node leads it.
    fn follow_coordination(&mut self, shard: &Rc<Shard>, tp: &TopicPartition, led: Option<i32>) {
        if !crate::catalog::internal_topics::is_internal(&tp.topic) {
            return;
        }
        let before = self.coordinating.get(tp).copied();
        if before == led {
            return;
        }
        if before.is_some() {
            crate::shard::coordinator_routing::unload(shard, tp);
        }
        match led {
            Some(epoch) => {
                self.coordinating.insert(tp.clone(), epoch);
                crate::shard::coordinator_routing::load(shard, tp);
            }
            None => {
                self.coordinating.remove(tp);
            }
        }
    }
}

/// The partitions this shard owns that this node leads in `view`, with their states.
fn led_here(
    shard: &Shard,
    view: &ClusterView,
    me: NodeId,
) -> Vec<(TopicPartition, crate::replication::PartitionState)> {
    let (here, _) = replicated_here(shard, view, me);
    let led = here
        .into_iter()
        .filter(|(tp, _)| view.leads(me, &tp.topic, tp.partition as u32));
    led.collect()
}

/// A partition this shard owns and its state in the view.
type Owned = (TopicPartition, crate::replication::PartitionState);

/// The partitions this shard owns whose replicas include this node, with their states,
/// and whether this node has its copy of every cluster topic yet (else this is asked
/// again soon).
pub(crate) fn replicated_here(shard: &Shard, view: &ClusterView, me: NodeId) -> (Vec<Owned>, bool) {
    let (owned, complete) = owned_here(shard, view);
    let here = owned.into_iter().filter(|(_, s)| s.replicas.contains(&me));
    (here.collect(), complete)
}

/// The partitions this shard owns whose replicas do not include this node (never did,
/// or a reassignment moved them away), with their states.
fn not_replicated_here(shard: &Shard, view: &ClusterView, me: NodeId) -> Vec<Owned> {
    let (owned, _) = owned_here(shard, view);
    owned
        .into_iter()
        .filter(|(_, s)| !s.replicas.contains(&me))
        .collect()
}

/// The cluster partitions this shard owns, and whether this node has its copy of every
/// cluster topic yet.
fn owned_here(shard: &Shard, view: &ClusterView) -> (Vec<Owned>, bool) {
    let mut out = Vec::new();
    let mut complete = true;
    for topic in view.topics.values() {
        let local = shard.topic(&topic.name).filter(|m| m.topic_id == topic.id);
        let Some(local) = local else {
            complete = false;
            continue;
        };
        for (p, partition) in topic.partitions.iter().enumerate() {
            let owned = local
                .owners
                .get(p)
                .is_some_and(|&o| o as usize == shard.id());
            if owned {
                let tp = TopicPartition::new(&*topic.name, p as i32);
                out.push((tp, partition.state.clone()));
            }
        }
    }
    (out, complete)
}

impl Shard {
    /// Ticks, every second, the partitions this shard leads; their ISR changes go to etcd.
    pub(in crate::shard) fn tick_led_partitions(self: &Rc<Self>) {
        let shard = self.clone();
        crate::tasks::spawn(async move {
            while !shard.is_shutting_down() {
                glommio::timer::sleep(TICK).await;
                shard.tick_once().await;
            }
        })
        .detach();
    }

    async fn tick_once(self: &Rc<Self>) {
        let (Some(view), Some(link)) = (self.cluster(), self.cluster_link()) else {
            return;
        };
        let me = self.config().cluster.broker_id;
        let max_lag = Duration::from_millis(self.config().cluster.replica_lag_time_max_ms);
        let mut lags = Vec::new();
        for (tp, state) in led_here(self, &view, me) {
            let op = PartitionOp::Replica(ReplicaOp::Tick { max_lag });
            let reply = self.partition_op(&tp.topic, tp.partition, op).await;
            let Ok(OpOk::Replica(ReplicaReply::Ticked {
                isr_change,
                lags: of,
            })) = reply
            else {
                continue;
            };
            lags.extend(of.into_iter().map(|(follower, records, ms)| {
                crate::metrics::FollowerLag {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    follower,
                    records,
                    ms,
                    adding: state.adding.contains(&follower),
                }
            }));
            if let Some(change) = isr_change {
                propose_isr(self, &link, tp, change).await;
            }
        }
        // The partitions this shard leads now: one that moved away reports no lag.
        crate::metrics::set_follower_lags(lags);
    }
}

impl Shard {
    /// What operators alert on, from the view this shard holds: the partitions it owns and
    /// leads short of their replicas or of min.insync.replicas; on shard 0 (so sums over
    /// shards stay right) the controller's offline partitions and the cluster thread's
    /// counters. All zero on a single node.
    pub(in crate::shard) fn replication_gauges(&self) -> crate::metrics::ReplicationGauges {
        let mut g = crate::metrics::ReplicationGauges::default();
        let (shrinks, expands) = crate::metrics::isr_changes();
        (g.isr_shrinks, g.isr_expands) = (shrinks, expands);
        let (Some(view), Some(link)) = (self.cluster(), self.cluster_link()) else {
            return g;
        };
        let me = self.config().cluster.broker_id;
        let topics = self.topics.borrow();
        for (tp, state) in led_here(self, &view, me) {
            let meta = topics.get(&*tp.topic);
            let min_isr = meta.map_or(1, |m| m.config.log.min_insync_replicas);
            let isr = state.isr.len();
            g.under_replicated_partitions += u64::from(isr < state.replicas.len());
            g.under_min_isr_partitions += u64::from(isr < min_isr.max(1) as usize);
            g.reassigning_partitions += u64::from(state.reassigning());
        }
        if self.id == 0 {
            cluster_wide(&mut g, &view, me, &link.counters);
        }
        g
    }
}

/// Shard 0's part of the replication gauges: the controller's and the cluster thread's.
fn cluster_wide(
    g: &mut crate::metrics::ReplicationGauges,
    view: &ClusterView,
    me: NodeId,
    counters: &crate::cluster::ClusterCounters,
) {
    use crate::cluster::ClusterCounters as C;
    let controlling = view.controller.is_some_and(|c| c.id == me);
    g.active_controller = u64::from(controlling);
    if controlling {
        let partitions = view.topics.values().flat_map(|t| t.partitions.iter());
        g.offline_partitions = partitions.filter(|p| p.state.leader.is_none()).count() as u64;
    }
    g.controller_changes = C::get(&counters.controller_changes);
    g.leader_elections = C::get(&counters.leader_elections);
    g.unclean_leader_elections = C::get(&counters.unclean_leader_elections);
    assert!(
        g.unclean_leader_elections <= g.leader_elections,
        "an unclean election is an election"
    );
}

/// Sends a leader's ISR change to etcd. A stale refusal (a newer state already there) is
/// fine: the partition's next state says what stands. A change that adds an ineligible
/// replica is refused for good, so the leader drops it (its high watermark would wait for
/// that replica otherwise).
pub async fn propose_isr(
    shard: &Rc<Shard>,
    link: &crate::cluster::ClusterLink,
    tp: TopicPartition,
    change: IsrChange,
) {
    let isr = change.isr.clone();
    let now = shard.cluster().and_then(|v| {
        let topic = v.topics.get(&*tp.topic)?;
        Some(topic.partitions.get(tp.partition as usize)?.state.isr.len())
    });
    let shrink = now.is_some_and(|n| isr.len() < n);
    let asked = (tp.topic.to_string(), tp.partition as u32);
    match link.alter_isr(asked.0, asked.1, change.clone()).await {
        Ok(()) => {
            crate::metrics::record_isr_change(shrink);
            tracing::debug!(partition = %tp, ?isr, "ISR change written")
        }
        Err(TopicRefused::Isr(IsrRefused::Ineligible)) => {
            tracing::debug!(partition = %tp, ?isr, "ISR change refused: a replica it adds is not eligible; dropped");
            let op = PartitionOp::Replica(ReplicaOp::IsrRefused { change });
            let _ = shard.partition_op(&tp.topic, tp.partition, op).await;
        }
        Err(e) => tracing::debug!(partition = %tp, ?isr, error = %e, "ISR change not written"),
    }
}
