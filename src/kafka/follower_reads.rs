//! Fetching from the closest replica (KIP-392). A consumer that names its rack
//! (`client.rack`, Fetch v11+ `rack_id`) may be sent by the leader to an in-sync follower in
//! that rack (`replica.selector.class` = Kafka's RackAwareReplicaSelector): the leader's
//! answer then carries no records, only `preferred_read_replica`. Any follower serves a
//! v11+ consumer fetch, up to its own high watermark (the last stable offset for
//! read_committed), as Kafka's followers do; an older fetch still needs the leader.

use kafka_protocol::messages::FetchRequest;

use super::cluster::{live_brokers, node_id, not_leader};
use super::refusal::Refusal;
use super::Context;
use crate::cluster::ClusterView;
use crate::replication::PartitionState;

/// The first Fetch version with `rack_id` and `preferred_read_replica`.
const CLIENT_METADATA_VERSION: i16 = 11;

/// Why this node may not serve a consumer's fetch of the partition: as `not_leader` says,
/// except that a replica of it serves a fetch that carries client metadata (v11+).
pub fn refusal(ctx: &Context<'_>, topic: &str, partition: i32) -> Option<Refusal> {
    let refused = not_leader(ctx, topic, partition)?;
    match ctx.version >= CLIENT_METADATA_VERSION && replicates(ctx, topic, partition) {
        true => None,
        false => Some(refused),
    }
}

/// Whether this node is one of the partition's replicas in the cluster view.
fn replicates(ctx: &Context<'_>, topic: &str, partition: i32) -> bool {
    let view = ctx.shard.cluster();
    let state = view.as_deref().and_then(|v| placement(v, topic, partition));
    state.is_some_and(|s| s.replicas.contains(&node_id(ctx)))
}

/// The partition's replicas, ISR and leader in the cluster view.
fn placement<'v>(view: &'v ClusterView, topic: &str, partition: i32) -> Option<&'v PartitionState> {
    let placed = view.topics.get(topic)?;
    Some(
        &placed
            .partitions
            .get(usize::try_from(partition).ok()?)?
            .state,
    )
}

/// Kafka's RackAwareReplicaSelector, on the leader: the in-sync follower the consumer
/// should read from instead (the first of the assignment's order in the consumer's rack,
/// reachable on the listener the consumer uses), or None when the leader itself is in
/// that rack, no follower is, the consumer names no rack or the selector is off.
pub fn preferred_replica(
    ctx: &Context<'_>,
    request: &FetchRequest,
    topic: &str,
    partition: i32,
) -> Option<i32> {
    let settings = &ctx.shard.config().cluster;
    let rack = request.rack_id.as_str();
    if !settings.rack_aware_reads || ctx.version < CLIENT_METADATA_VERSION || rack.is_empty() {
        return None;
    }
    let view = ctx.shard.cluster()?;
    let me = node_id(ctx);
    if settings.rack == rack || !view.leads(me, topic, u32::try_from(partition).ok()?) {
        return None;
    }
    let state = placement(&view, topic, partition)?;
    let followers: Vec<i32> = (state.replicas.iter())
        .filter(|id| **id != me && state.isr.contains(id))
        .copied()
        .collect();
    if followers.is_empty() {
        return None; // no in-sync follower: the brokers' list is not built
    }
    let reachable = live_brokers(ctx);
    let in_rack =
        |id: &i32| (reachable.iter()).any(|b| b.id == *id && b.rack.as_deref() == Some(rack));
    followers.into_iter().find(in_rack)
}
