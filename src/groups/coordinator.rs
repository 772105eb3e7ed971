//! The group coordinator of one shard: the groups whose offsets partition this shard owns
//! (thread-local, reached only through this shard's tasks), loaded from the offsets log,
//! and the requests that read or write committed offsets. Membership is in `membership.rs`.
//!
//! A coordinator answers only from a loaded state: `loading.rs` reads each offsets
//! partition into this table (once per process, or again after its leadership came back)
//! and until then a group's requests get COORDINATOR_LOAD_IN_PROGRESS (retriable; the
//! native protocol's NotReady), never an empty answer.

use std::cell::RefCell;
use std::collections::HashMap;

use super::code::{self as e, GroupCode};
use super::group::{Group, State};
use super::group_records::{restore, GroupRecord};
use super::host::{GroupHost, Host};
use super::ops::{GroupDescription, ListedGroup, OffsetToCommit};
use super::records::{batch, Committed, OffsetRecord};
use super::{partition_for, OFFSETS_TOPIC};
use crate::TopicPartition;

#[derive(Default)]
struct Coordinator {
    groups: HashMap<String, Group>,
    /// Offsets sent inside a producer's transaction, by (offsets partition, producer id):
    /// in force once its commit marker is written, dropped by an abort.
    pending_txn: HashMap<(i32, i64), Vec<OffsetRecord>>,
}

thread_local! {
    static COORDINATOR: RefCell<Coordinator> = RefCell::new(Coordinator::default());
}

/// Runs `f` on the group (created Empty if unknown); a group left with nothing in it
/// (no members, offsets or pending work) is forgotten again.
pub fn with_group<T>(name: &str, f: impl FnOnce(&mut Group) -> T) -> T {
    COORDINATOR.with_borrow_mut(|c| {
        let g = c.groups.entry(name.to_string()).or_default();
        let out = f(g);
        let vacant = g.state == State::Empty
            && g.members.is_empty()
            && g.pending.is_empty()
            && g.offsets.is_empty()
            && g.pending_txn_offsets == 0
            && g.nudge.is_none()
            && !g.expiry_running;
        if vacant {
            c.groups.remove(name);
        }
        out
    })
}

fn exists(name: &str) -> bool {
    COORDINATOR.with_borrow(|c| c.groups.contains_key(name))
}

pub(super) fn group_count() -> usize {
    COORDINATOR.with_borrow(|c| c.groups.len())
}

/// Every group this shard holds: name, protocol type, state.
pub(super) fn listed() -> Vec<ListedGroup> {
    COORDINATOR.with_borrow(|c| {
        c.groups
            .iter()
            .map(|(name, g)| {
                let protocol_type = g.protocol_type.clone().unwrap_or_else(|| "consumer".into());
                (name.clone(), protocol_type, g.state.name().to_string())
            })
            .collect()
    })
}

/// Takes the groups whose name `doomed` picks out of the table.
pub(super) fn remove_groups(doomed: impl Fn(&str) -> bool) -> Vec<Group> {
    COORDINATOR.with_borrow_mut(|c| {
        let names: Vec<String> = (c.groups.keys())
            .filter(|name| doomed(name))
            .cloned()
            .collect();
        names.iter().filter_map(|n| c.groups.remove(n)).collect()
    })
}

/// Drops the transactional offsets held for offsets partition `p` (it is unloaded: the
/// next read finds them again, with their markers).
pub(super) fn forget_pending_of(p: i32) {
    COORDINATOR.with_borrow_mut(|c| c.pending_txn.retain(|(partition, _), _| *partition != p));
}

/// Groups with members and no session watcher yet (just read from the log).
pub(super) fn unwatched_groups_with_members() -> Vec<String> {
    COORDINATOR.with_borrow(|c| {
        c.groups
            .iter()
            .filter(|(_, g)| !g.members.is_empty() && !g.expiry_running)
            .map(|(name, _)| name.clone())
            .collect()
    })
}

/// The offsets partition of a group, once this shard has opened its partitions.
pub(super) fn offsets_partition(shard: &dyn GroupHost, group: &str) -> Result<i32, GroupCode> {
    if !shard.is_ready() {
        return Err(e::COORDINATOR_LOAD_IN_PROGRESS);
    }
    let meta = shard
        .topic(OFFSETS_TOPIC)
        .ok_or(e::COORDINATOR_NOT_AVAILABLE)?;
    let p = partition_for(group, meta.owners.len()) as i32;
    if meta.owners[p as usize] as usize != shard.shard_id() || !shard.coordinates(OFFSETS_TOPIC, p)
    {
        return Err(e::NOT_COORDINATOR);
    }
    Ok(p)
}

/// A group's stored membership replaces what an earlier record of the log said (its
/// offsets and pending transactional offsets are kept: they are records of their own).
pub(super) fn apply_group(rec: GroupRecord) {
    with_group(&rec.group, |g| {
        let offsets = std::mem::take(&mut g.offsets);
        let pending_txn_offsets = g.pending_txn_offsets;
        let expiry_running = g.expiry_running;
        *g = rec.value.map(restore).unwrap_or_default();
        g.offsets = offsets;
        g.pending_txn_offsets = pending_txn_offsets;
        g.expiry_running = expiry_running;
    });
}

pub(super) fn apply(rec: OffsetRecord) {
    let key = TopicPartition::new(rec.topic, rec.partition);
    with_group(&rec.group, |g| match rec.value {
        Some(c) => {
            g.offsets.insert(key, c);
        }
        None => {
            g.offsets.remove(&key);
        }
    });
}

/// Applies records just written to the offsets log; what a later OffsetFetch reads is then
/// exactly what the log holds (checked after each).
fn apply_written(records: Vec<OffsetRecord>) {
    for rec in records {
        let (group, key, value) = (
            rec.group.clone(),
            TopicPartition::new(&*rec.topic, rec.partition),
            rec.value.clone(),
        );
        apply(rec);
        assert_eq!(
            fetch_offsets(&group, Some(vec![key]))
                .pop()
                .and_then(|f| f.1),
            value,
            "a written commit reads back as written"
        );
    }
}

/// Every `offsets.retention.check.interval.ms`: commits of groups without members that are
/// older than `offsets.retention.minutes`, and commits for topics that no longer exist, are
/// deleted (tombstones in the offsets log), as Kafka's offset expiration does.
pub(super) fn spawn_offset_expiry(shard: Host) {
    crate::tasks::spawn(async move {
        let every =
            std::time::Duration::from_millis(shard.settings().offsets_retention_check_interval_ms);
        loop {
            glommio::timer::sleep(every).await;
            if shard.shutting_down() {
                return;
            }
            expire_offsets(&shard).await;
        }
    })
    .detach();
}

async fn expire_offsets(shard: &Host) {
    let now = crate::time::now_ms();
    let retention = shard.settings().offsets_retention_minutes as i64 * 60_000;
    // (group, its expired commits, whether the group goes with them: an Empty group whose
    // last commit expires is forgotten, its metadata record deleted, as Kafka does).
    let doomed: Vec<(String, Vec<OffsetRecord>, bool)> = COORDINATOR.with_borrow(|c| {
        c.groups
            .iter()
            .map(|(name, g)| {
                let records = g
                    .offsets
                    .iter()
                    .filter(|(tp, committed)| {
                        shard.topic(&tp.topic).is_none()
                            || (g.members.is_empty()
                                && committed.commit_timestamp.saturating_add(retention) < now)
                    })
                    .map(|(tp, _)| OffsetRecord {
                        group: name.clone(),
                        topic: tp.topic.clone(),
                        partition: tp.partition,
                        value: None,
                    })
                    .collect::<Vec<_>>();
                let forget = g.state == State::Empty && records.len() == g.offsets.len();
                (name.clone(), records, forget)
            })
            .filter(|(_, r, _)| !r.is_empty())
            .collect()
    });
    for (group, records, forget) in doomed {
        let tombstone = forget.then(|| GroupRecord::tombstone(&group));
        if write(shard, &group, &records, tombstone.as_ref(), now).await == e::NONE {
            tracing::info!(group, expired = records.len(), "committed offsets expired");
            apply_written(records);
        }
    }
}

/// Kafka's rules for who may commit: a member of the current generation (not while the
/// group waits for the leader's assignments), or anyone (generation -1, no member id)
/// while the group has no members.
fn commit_allowed(g: &mut Group, member_id: &str, generation: i32) -> GroupCode {
    if generation < 0 && member_id.is_empty() {
        return if g.members.is_empty() {
            e::NONE
        } else {
            e::UNKNOWN_MEMBER_ID
        };
    }
    let Some(m) = g.members.get_mut(member_id) else {
        return e::UNKNOWN_MEMBER_ID;
    };
    m.touch();
    if generation != g.generation {
        e::ILLEGAL_GENERATION
    } else if g.state == State::CompletingRebalance {
        e::REBALANCE_IN_PROGRESS
    } else {
        e::NONE
    }
}

/// (member id, static instance id) of whoever asks.
type Who<'a> = (&'a str, Option<&'a str>);

pub(super) async fn commit(
    shard: &Host,
    group: &str,
    (member_id, instance): Who<'_>,
    generation: i32,
    offsets: Vec<OffsetToCommit>,
) -> Vec<(TopicPartition, GroupCode)> {
    let allowed = with_group(
        group,
        |g| match crate::groups::static_members::check_fenced(g, member_id, instance) {
            e::NONE => commit_allowed(g, member_id, generation),
            fenced => fenced,
        },
    );
    let now = crate::time::now_ms();
    let asked = offsets.len();
    let (mut codes, records) = commit_records(shard, group, allowed, offsets, now);
    assert_eq!(codes.len(), asked, "one code per offset");
    assert!(records.len() <= asked, "a record per offset that passed");
    let written = write(shard, group, &records, None, now).await;
    mark_written(&mut codes, written);
    if written == e::NONE {
        apply_written(records);
    }
    codes
}

/// One commit's code per partition (`allowed`, or the partition's own check) and the
/// records of those that passed, to be written.
pub(super) fn commit_records(
    shard: &Host,
    group: &str,
    allowed: GroupCode,
    offsets: Vec<OffsetToCommit>,
    now: i64,
) -> (Vec<(TopicPartition, GroupCode)>, Vec<OffsetRecord>) {
    let mut codes = Vec::with_capacity(offsets.len());
    let mut records = Vec::new();
    for commit in offsets {
        let OffsetToCommit {
            tp: TopicPartition { topic, partition },
            offset,
            leader_epoch,
            metadata,
        } = commit;
        let code = match allowed {
            e::NONE => check_partition(shard, &topic, partition, &metadata),
            refused => refused,
        };
        if code == e::NONE {
            let value = Committed {
                offset,
                leader_epoch,
                metadata,
                commit_timestamp: now,
            };
            records.push(OffsetRecord {
                group: group.to_string(),
                topic: topic.clone(),
                partition,
                value: Some(value),
            });
        }
        codes.push((TopicPartition { topic, partition }, code));
    }
    (codes, records)
}

/// The write's outcome becomes the code of every partition that passed its checks.
pub(super) fn mark_written(codes: &mut [(TopicPartition, GroupCode)], written: GroupCode) {
    for c in codes.iter_mut().filter(|c| c.1 == e::NONE) {
        c.1 = written;
    }
}

/// Appends `records` (and the group's metadata record, when given) to the group's offsets
/// partition with acks=all; Kafka's code.
async fn write(
    shard: &Host,
    group: &str,
    records: &[OffsetRecord],
    group_record: Option<&GroupRecord>,
    now: i64,
) -> GroupCode {
    if records.is_empty() && group_record.is_none() {
        return e::NONE;
    }
    // A group's records all go to its own offsets partition.
    debug_assert!(records.iter().all(|r| r.group == group));
    assert!(group_record.is_none_or(|m| m.group == group));
    let Some(meta) = shard.topic(OFFSETS_TOPIC) else {
        return e::COORDINATOR_NOT_AVAILABLE;
    };
    let p = partition_for(group, meta.owners.len());
    match shard
        .append_offsets(p as i32, batch(records, group_record, now).into())
        .await
    {
        Ok(_) => e::NONE,
        Err(why) => {
            tracing::warn!(group, %why, "writing to the offsets log failed");
            GroupCode::Log(why.code())
        }
    }
}

pub(super) fn fetch_offsets(
    group: &str,
    partitions: Option<Vec<TopicPartition>>,
) -> Vec<(TopicPartition, Option<Committed>)> {
    let asked = partitions.as_ref().map(Vec::len);
    let found = COORDINATOR.with_borrow(|c| {
        let g = c.groups.get(group);
        match partitions {
            Some(ps) => ps
                .into_iter()
                .map(|tp| {
                    let found = g.and_then(|g| g.offsets.get(&tp).cloned());
                    (tp, found)
                })
                .collect(),
            None => g.map_or(Vec::new(), |g| {
                g.offsets
                    .iter()
                    .map(|(tp, c)| (tp.clone(), Some(c.clone())))
                    .collect()
            }),
        }
    });
    // Partitions asked by name are each answered (unknown ones with no commit).
    assert!(asked.is_none_or(|n| n == found.len()));
    found
}

pub(super) fn describe(group: &str) -> GroupDescription {
    if !exists(group) {
        // What Kafka answers for a group it does not know.
        return GroupDescription {
            state: State::Dead.name().into(),
            ..Default::default()
        };
    }
    with_group(group, |g| GroupDescription {
        state: g.state.name().into(),
        protocol_type: g.protocol_type.clone().unwrap_or_default(),
        protocol: g.protocol.clone().unwrap_or_default(),
        members: g.describe_members(),
    })
}

/// Tombstones of every committed offset of the group (or of `only`).
fn tombstones(group: &str, g: &Group, only: Option<&[TopicPartition]>) -> Vec<OffsetRecord> {
    g.offsets
        .keys()
        .filter(|k| only.is_none_or(|o| o.contains(k)))
        .map(|tp| OffsetRecord {
            group: group.to_string(),
            topic: tp.topic.clone(),
            partition: tp.partition,
            value: None,
        })
        .collect()
}

pub(super) async fn delete(shard: &Host, group: &str) -> GroupCode {
    if !exists(group) {
        return e::GROUP_ID_NOT_FOUND;
    }
    let doomed = with_group(group, |g| {
        (g.members.is_empty() && g.pending.is_empty()).then(|| tombstones(group, g, None))
    });
    let Some(records) = doomed else {
        return e::NON_EMPTY_GROUP;
    };
    // The offsets and the group's metadata go in one batch.
    let forget = GroupRecord::tombstone(group);
    let written = write(shard, group, &records, Some(&forget), crate::time::now_ms()).await;
    if written == e::NONE {
        apply_written(records);
    }
    written
}

pub(super) async fn delete_offsets(
    shard: &Host,
    group: &str,
    partitions: Vec<TopicPartition>,
) -> Vec<(TopicPartition, GroupCode)> {
    if !exists(group) {
        return partitions
            .into_iter()
            .map(|tp| (tp, e::GROUP_ID_NOT_FOUND))
            .collect();
    }
    // Kafka refuses only partitions of topics the members subscribe to; members'
    // subscriptions are opaque here, so any member refuses them all.
    let records = with_group(group, |g| {
        g.members
            .is_empty()
            .then(|| tombstones(group, g, Some(&partitions)))
    });
    let Some(records) = records else {
        return partitions
            .into_iter()
            .map(|tp| (tp, e::GROUP_SUBSCRIBED_TO_TOPIC))
            .collect();
    };
    let written = write(shard, group, &records, None, crate::time::now_ms()).await;
    if written == e::NONE {
        apply_written(records);
    }
    partitions.into_iter().map(|tp| (tp, written)).collect()
}

/// Writes the group's metadata record (acks=all); Kafka's code.
pub(super) async fn store(shard: &Host, rec: &GroupRecord) -> GroupCode {
    write(shard, &rec.group, &[], Some(rec), crate::time::now_ms()).await
}

/// Stores an emptied group from a task of its own (for changes nothing waits on: a join
/// phase that ended with no member, sessions that expired). The record is taken when the
/// task runs, from the group as it is then: Empty, or a tombstone if nothing is left of it
/// (no members, no offsets: forgotten, as Kafka forgets a Dead group); nothing if members
/// joined meanwhile. Appended in the order of the group's changes, it never overwrites a
/// later state with an older one. Callers hold the coordinator borrowed (an expiry runs
/// inside `with_group`): the task starts after they return.
pub(super) fn store_detached(shard: &Host, name: &str) {
    let (shard, name) = (shard.clone(), name.to_string());
    crate::tasks::spawn_later(async move {
        let rec = COORDINATOR.with_borrow(|c| match c.groups.get(&name) {
            None => Some(GroupRecord::tombstone(&name)),
            Some(g) if g.state == State::Empty => {
                Some(GroupRecord::of(&name, g, crate::time::now_ms()))
            }
            Some(_) => None,
        });
        let Some(rec) = rec else { return };
        let code = store(&shard, &rec).await;
        if code != e::NONE {
            tracing::warn!(group = rec.group, ?code, "storing group metadata failed");
        }
    })
    .detach();
}

/// Holds offsets sent inside producer `producer_id`'s transaction until its end.
pub(super) fn hold_pending(p: i32, producer_id: i64, records: Vec<OffsetRecord>) {
    for r in &records {
        // Pending offsets keep their group alive until the transaction ends.
        with_group(&r.group, |g| g.pending_txn_offsets += 1);
    }
    COORDINATOR.with_borrow_mut(|c| {
        c.pending_txn
            .entry((p, producer_id))
            .or_default()
            .extend(records)
    });
}

/// Ends the offsets producer `producer_id`'s transaction sent to offsets partition `p`:
/// applied on commit, dropped on abort; how many were applied.
pub(super) fn complete_pending(p: i32, producer_id: i64, commit: bool) -> usize {
    let records = COORDINATOR
        .with_borrow_mut(|c| c.pending_txn.remove(&(p, producer_id)))
        .unwrap_or_default();
    for r in &records {
        with_group(&r.group, |g| g.pending_txn_offsets -= 1);
    }
    let n = records.len();
    if commit {
        apply_written(records);
    }
    if commit {
        n
    } else {
        0
    }
}

/// Whether offsets sent to `group` inside a transaction wait for its end.
pub(super) fn group_has_pending(group: &str) -> bool {
    COORDINATOR.with_borrow(|c| {
        c.groups
            .get(group)
            .is_some_and(|g| g.pending_txn_offsets > 0)
    })
}

/// The offsets partition of `group` (this shard must coordinate it).
pub(super) fn partition_of(shard: &dyn GroupHost, group: &str) -> Result<i32, GroupCode> {
    offsets_partition(shard, group)
}

/// Appends `batch` (a producer's transactional batch of commits) to the group's offsets
/// partition; Kafka's code.
pub(super) async fn write_txn(shard: &Host, group: &str, p: i32, batch: Vec<u8>) -> GroupCode {
    match shard.append_txn_offsets(p, batch.into()).await {
        Ok(()) => e::NONE,
        Err(why) => {
            tracing::warn!(group, %why, "writing transactional offsets failed");
            GroupCode::Log(why.code())
        }
    }
}

/// Kafka's check of a commit (offsets and metadata size) for one partition.
fn check_partition(shard: &Host, topic: &str, partition: i32, metadata: &str) -> GroupCode {
    let known = shard
        .topic(topic)
        .is_some_and(|t| (0..t.owners.len() as i32).contains(&partition));
    if !known {
        return e::UNKNOWN_TOPIC_OR_PARTITION;
    }
    if metadata.len() > shard.settings().offset_metadata_max_bytes {
        return e::OFFSET_METADATA_TOO_LARGE;
    }
    e::NONE
}
