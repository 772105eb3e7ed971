//! This shard's replication quotas (cluster mode): its share of the node's
//! leader.replication.throttled.rate (what its leaders send to throttled followers) and
//! follower.replication.throttled.rate (what its followers copy for throttled replicas).
//! Kept per shard thread, as everything on a shard is, so no lock is taken.

use std::cell::RefCell;
use std::time::Instant;

use crate::replication::quota::Quota;
use crate::replication::Millis;
use crate::shard::runtime::Shard;

/// Which side of replication a quota holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Side {
    Leader,
    Follower,
}

thread_local! {
    static QUOTAS: RefCell<[Option<Quota>; 2]> = const { RefCell::new([None, None]) };
    static EPOCH: Instant = Instant::now();
}

fn now() -> Millis {
    EPOCH.with(|start| start.elapsed().as_millis() as Millis)
}

/// This shard's share of the node's rate on `side` (set dynamically, or in the config
/// file); None when unlimited.
fn share(shard: &Shard, side: Side) -> Option<u64> {
    let cluster = &shard.config().cluster;
    let [leader_key, follower_key] = crate::catalog::broker_defaults::THROTTLE_RATE_KEYS;
    let rate = match side {
        Side::Leader => (shard.dynamic_throttle_rate(leader_key))
            .unwrap_or(cluster.leader_replication_throttled_rate),
        Side::Follower => (shard.dynamic_throttle_rate(follower_key))
            .unwrap_or(cluster.follower_replication_throttled_rate),
    };
    let unlimited = rate >= i64::MAX as u64;
    (!unlimited).then(|| (rate / shard.shard_count().max(1) as u64).max(1))
}

fn with<T>(shard: &Shard, side: Side, f: impl FnOnce(&mut Quota, Millis) -> T) -> Option<T> {
    let rate = share(shard, side)?;
    QUOTAS.with(|quotas| {
        let mut quotas = quotas.borrow_mut();
        let now = now();
        let slot = &mut quotas[side as usize];
        // A changed rate (altered live) starts a new quota.
        if slot.as_ref().is_some_and(|q| q.rate() != rate) {
            *slot = None;
        }
        let quota = slot.get_or_insert_with(|| Quota::new(rate, now));
        assert_eq!(quota.rate(), rate);
        Some(f(quota, now))
    })
}

/// Whether throttled replicas must wait on this side now.
pub fn exceeded(shard: &Shard, side: Side) -> bool {
    with(shard, side, |q, now| q.exceeded(now)).unwrap_or(false)
}

/// `bytes` of throttled replicas went out on this side.
pub fn record(shard: &Shard, side: Side, bytes: usize) {
    with(shard, side, |q, now| q.record(bytes as u64, now));
}

/// Whether copying `topic`-`partition` to `follower` is throttled on this node's `side`:
/// the topic's list for that side names this node's replica, and the follower is not in
/// sync (Kafka throttles only replicas catching up).
pub fn throttles(
    shard: &Shard,
    side: Side,
    (topic, partition): (&str, i32),
    follower: i32,
) -> bool {
    if share(shard, side).is_none() {
        return false;
    }
    let Some(meta) = shard.topic(topic) else {
        return false;
    };
    let lists = &meta.config.log.throttled;
    let list = match side {
        Side::Leader => &lists.leader,
        Side::Follower => &lists.follower,
    };
    let me = shard.config().cluster.broker_id;
    if !crate::config::names_replica(list, partition, me) {
        return false;
    }
    let view = shard.cluster();
    let state = view.as_ref().and_then(|v| {
        let p = v
            .topics
            .get(topic)?
            .partitions
            .get(usize::try_from(partition).ok()?)?;
        Some(p.state.isr.contains(&follower))
    });
    state == Some(false)
}
