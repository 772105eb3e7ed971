//! Offsets sent inside a producer's transaction (Kafka's TxnOffsetCommit, KIP-98/447):
//! written to the group's offsets partition at once, as the producer's transactional batch,
//! and held aside until the transaction's marker reaches that partition (the transaction
//! coordinator tells the group coordinator; a restart's read of the partition finds the
//! marker itself): a commit puts them in force, an abort drops them. Meanwhile a
//! require_stable OffsetFetch (read_committed consumers) gets UNSTABLE_OFFSET_COMMIT.

use super::code::{self as e, GroupCode};
use super::coordinator::{
    commit_records, group_has_pending, hold_pending, mark_written, partition_of, with_group,
    write_txn,
};
use super::group::Group;
use super::host::Host;
use super::ops::OffsetToCommit;
use super::records::{batch, OffsetRecord};
use crate::TopicPartition;

/// Kafka's rule for a transactional commit's group metadata (v3; older clients send none):
/// a member id, if given, must be a member; a generation, if given, the current one.
fn allowed(g: &mut Group, member_id: &str, generation: i32) -> GroupCode {
    if !member_id.is_empty() {
        let Some(m) = g.members.get_mut(member_id) else {
            return e::UNKNOWN_MEMBER_ID;
        };
        m.touch();
    }
    if generation >= 0 && generation != g.generation {
        return e::ILLEGAL_GENERATION;
    }
    e::NONE
}

pub async fn commit(
    shard: &Host,
    group: &str,
    (member_id, instance): (&str, Option<&str>),
    generation: i32,
    (producer_id, epoch): (i64, i16),
    offsets: Vec<OffsetToCommit>,
) -> Vec<(TopicPartition, GroupCode)> {
    let allowed = with_group(group, |g| {
        match super::static_members::check_fenced(g, member_id, instance) {
            e::NONE => allowed(g, member_id, generation),
            fenced => fenced,
        }
    });
    let now = crate::time::now_ms();
    let (mut codes, records) = commit_records(shard, group, allowed, offsets, now);
    let written = write(shard, group, (producer_id, epoch), &records, now).await;
    mark_written(&mut codes, written);
    codes
}

/// Writes `records` as producer `(producer_id, epoch)`'s transactional batch and holds
/// them until its transaction ends.
async fn write(
    shard: &Host,
    group: &str,
    (producer_id, epoch): (i64, i16),
    records: &[OffsetRecord],
    now: i64,
) -> GroupCode {
    if records.is_empty() {
        return e::NONE;
    }
    let p = match partition_of(&**shard, group) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let mut bytes = batch(records, None, now);
    crate::format::batch::set_producer(&mut bytes, producer_id, epoch, -1);
    crate::format::batch::set_transactional(&mut bytes);
    let written = write_txn(shard, group, p, bytes).await;
    if written == e::NONE {
        hold_pending(p, producer_id, records.to_vec());
        // Held until the transaction ends: a require_stable read waits for it.
        assert!(has_pending(group), "held offsets make the group unstable");
    }
    written
}

/// Whether offsets sent to `group` inside a transaction wait for its end.
pub fn has_pending(group: &str) -> bool {
    group_has_pending(group)
}
