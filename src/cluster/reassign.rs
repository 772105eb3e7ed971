//! Reassignments as the controller carries them out (Kafka's
//! AlterPartitionReassignments): each partition's start, replacement or cancel is one
//! compare-and-swap of its state in etcd, fenced by this controller's epoch, so a
//! reassignment lives in etcd and the next controller finishes it. The decisions are
//! `replication::reassignment`'s; completing one happens at each heartbeat
//! (`controller::elect_leaders`), once the new replicas are in sync.

use crate::cluster::controller::{
    my_epoch, write_state, ReassignAnswer, ReassignAsked, ReassignResult,
};
use crate::cluster::etcd::Etcd;
use crate::cluster::{ClusterError, ClusterView, Keys, TopicRefused};
use crate::replication::reassignment::{cancel, start};
use crate::replication::NodeId;

/// Starts, replaces or cancels each reassignment asked for, as this controller: one
/// outcome per partition, in the order asked.
pub async fn reassign_asked(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: NodeId,
    asked: Vec<ReassignAsked>,
) -> Result<Vec<ReassignResult>, TopicRefused> {
    let epoch = my_epoch(view, me)?;
    let mut out = Vec::with_capacity(asked.len());
    for (topic, p, target) in asked {
        let outcome = reassign_one(etcd, keys, view, epoch, (&topic, p), target).await?;
        out.push((topic, p, outcome));
    }
    Ok(out)
}

async fn reassign_one(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    epoch: i64,
    (topic, p): (&str, u32),
    target: Option<Vec<NodeId>>,
) -> Result<Result<(), ReassignAnswer>, ClusterError> {
    let current = view
        .topics
        .get(topic)
        .and_then(|t| t.partitions.get(p as usize));
    let Some(current) = current else {
        return Ok(Err(ReassignAnswer::Unknown(format!("{topic}-{p}"))));
    };
    let next = match &target {
        Some(target) => start(&current.state, target, view),
        None => cancel(&current.state, view).map(Some),
    };
    let next = match next {
        Ok(Some(next)) => next,
        Ok(None) => return Ok(Ok(())),
        Err(why) => return Ok(Err(why.into())),
    };
    if !write_state(etcd, keys, epoch, (topic, p), current, &next).await? {
        return Ok(Err(ReassignAnswer::Raced));
    }
    match &target {
        Some(target) => {
            tracing::info!(topic, partition = p, ?target, replicas = ?next.replicas, adding = ?next.adding, removing = ?next.removing, "reassignment started")
        }
        None => {
            tracing::info!(topic, partition = p, replicas = ?next.replicas, "reassignment cancelled")
        }
    }
    Ok(Ok(()))
}

/// The reassignments under way in `view`, as (topic, partition, replicas, adding,
/// removing), by topic and partition (Kafka's ListPartitionReassignments).
pub fn under_way(view: &ClusterView) -> Vec<(String, u32, &crate::replication::PartitionState)> {
    let mut out = Vec::new();
    for topic in view.topics.values() {
        for (p, partition) in topic.partitions.iter().enumerate() {
            if partition.state.reassigning() {
                out.push((topic.name.clone(), p as u32, &partition.state));
            }
        }
    }
    out
}
