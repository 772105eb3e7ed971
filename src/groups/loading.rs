//! Reading offsets partitions into the groups: at start, when this node becomes an
//! offsets partition's leader, and on the first request that finds one unread; and
//! forgetting a partition's groups when its leadership moves away. Requests wait here
//! until their group's partition is read.

use std::cell::RefCell;
use std::collections::HashSet;

use super::code::{self as e, GroupCode};
use super::coordinator;
use super::group_records::GroupRecord;
use super::host::{GroupHost, Host};
use super::membership;
use super::ops::ListedGroup;
use super::records::OffsetRecord;
use super::{partition_for, OFFSETS_TOPIC};
use crate::broker_error::BrokerError;
use crate::format::batch::{split_batches, RecordsSection};
use crate::format::BatchError;

/// Which offsets partitions this shard has read, and which it is reading.
#[derive(Default)]
struct Loads {
    loaded: HashSet<i32>,
    loading: HashSet<i32>,
    /// Counts unloads: a load that an unload overtook does not count as read.
    unloads: u64,
    expiry_started: bool,
}

thread_local! {
    static LOADS: RefCell<Loads> = RefCell::new(Loads::default());
}

/// Every group this shard coordinates; COORDINATOR_LOAD_IN_PROGRESS while one of its
/// offsets partitions is not read yet.
pub async fn list(shard: &Host) -> Result<Vec<ListedGroup>, GroupCode> {
    for p in owned_offsets_partitions(&**shard)? {
        ensure_loaded(shard, p).await?;
    }
    Ok(coordinator::listed())
}

/// The offsets partitions this shard owns (none while there is no offsets topic).
fn owned_offsets_partitions(shard: &dyn GroupHost) -> Result<Vec<i32>, GroupCode> {
    if !shard.is_ready() {
        return Err(e::COORDINATOR_LOAD_IN_PROGRESS);
    }
    Ok(shard.topic(OFFSETS_TOPIC).map_or(Vec::new(), |meta| {
        (0..meta.owners.len() as i32)
            .filter(|&p| meta.owners[p as usize] as usize == shard.shard_id())
            .filter(|&p| shard.coordinates(OFFSETS_TOPIC, p))
            .collect()
    }))
}

/// Starts reading every offsets partition this shard owns (once its partitions are open),
/// so that groups are ready before their first request.
pub fn start_loading(shard: &Host) {
    for p in owned_offsets_partitions(&**shard).unwrap_or_default() {
        if let Some(load) = begin_load(shard, p) {
            load.detach();
        }
    }
}

/// Ok once offsets partition `p` is read. The first request to find it unread starts
/// the read and waits for it; requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS.
pub(super) async fn ensure_loaded(shard: &Host, p: i32) -> Result<(), GroupCode> {
    if LOADS.with_borrow(|l| l.loaded.contains(&p)) {
        return Ok(());
    }
    match begin_load(shard, p) {
        // The read runs in its own task: a request that goes away does not cut it short.
        Some(load) => load
            .detach()
            .await
            .unwrap_or(Err(e::COORDINATOR_NOT_AVAILABLE)),
        None => Err(e::COORDINATOR_LOAD_IN_PROGRESS),
    }
}

/// A task reading offsets partition `p` into the groups, or `None` if one already is.
fn begin_load(shard: &Host, p: i32) -> Option<glommio::Task<Result<(), GroupCode>>> {
    let fresh = LOADS.with_borrow_mut(|l| !l.loaded.contains(&p) && l.loading.insert(p));
    if !fresh {
        return None;
    }
    let shard = shard.clone();
    let unloads = LOADS.with_borrow(|l| l.unloads);
    Some(crate::tasks::spawn(async move {
        let started = std::time::Instant::now();
        let mut read = load_partition(&shard, p).await;
        if LOADS.with_borrow(|l| l.unloads) != unloads {
            // Leadership moved while reading: what was read may be stale.
            drop_groups_of(&*shard, p);
            read = Err(LoadError::Overtaken { p });
        }
        let start_expiry = LOADS.with_borrow_mut(|l| {
            l.loading.remove(&p);
            if read.is_ok() {
                l.loaded.insert(p);
            }
            assert!(
                !l.loading.contains(&p),
                "a partition is loading or loaded, not both"
            );
            read.is_ok() && !std::mem::replace(&mut l.expiry_started, true)
        });
        if start_expiry {
            coordinator::spawn_offset_expiry(shard.clone());
        }
        let groups = coordinator::group_count();
        if read.is_ok() {
            watch_loaded_sessions(&shard);
        }
        match read {
            Ok(records) => {
                let elapsed_ms = started.elapsed().as_millis() as u64;
                tracing::info!(
                    shard = shard.shard_id(),
                    partition = p,
                    records,
                    groups,
                    elapsed_ms,
                    "offsets partition loaded"
                );
                Ok(())
            }
            Err(why) => {
                tracing::warn!(shard = shard.shard_id(), partition = p, %why, "loading an offsets partition failed");
                Err(e::COORDINATOR_NOT_AVAILABLE)
            }
        }
    }))
}

/// Why an offsets partition could not be loaded (its groups answer
/// COORDINATOR_NOT_AVAILABLE until a later load succeeds).
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("offsets partition {p}: {why}")]
    Read { p: i32, why: BrokerError },
    #[error("offsets partition {p}: {why}")]
    Batch { p: i32, why: BatchError },
    #[error("offsets partition {p}: its leadership moved while it was read")]
    Overtaken { p: i32 },
}

/// In cluster mode, when this node stops leading offsets partition `p` (or leads it in a
/// new leader epoch, after another leader may have written): its groups are forgotten,
/// their parked joins and syncs answered NOT_COORDINATOR, and the partition must be read
/// again before it serves.
pub fn unload(shard: &dyn GroupHost, p: i32) {
    let dropped = drop_groups_of(shard, p);
    LOADS.with_borrow_mut(|l| {
        l.loaded.remove(&p);
        l.unloads += 1;
    });
    coordinator::forget_pending_of(p);
    assert!(
        LOADS.with_borrow(|l| !l.loaded.contains(&p)),
        "an unloaded partition is read again before it serves"
    );
    if dropped > 0 {
        tracing::info!(
            shard = shard.shard_id(),
            partition = p,
            groups = dropped,
            "offsets partition unloaded: another node coordinates its groups now"
        );
    }
}

/// Reads offsets partition `p` now (this node became its leader).
pub fn load_now(shard: &Host, p: i32) {
    if let Some(load) = begin_load(shard, p) {
        load.detach();
    }
}

/// Forgets the groups of offsets partition `p`: how many.
fn drop_groups_of(shard: &dyn GroupHost, p: i32) -> usize {
    let partitions = shard.topic(OFFSETS_TOPIC).map_or(0, |m| m.owners.len());
    if partitions == 0 {
        return 0;
    }
    let dropped = coordinator::remove_groups(|name| partition_for(name, partitions) as i32 == p);
    let n = dropped.len();
    for mut g in dropped {
        membership::release_waiters(&mut g);
    }
    n
}

async fn load_partition(shard: &Host, p: i32) -> Result<usize, LoadError> {
    let read = |why| LoadError::Read { p, why };
    let mut next = 0i64;
    let mut applied = 0;
    loop {
        let data = match shard.read_offsets(p, next, 1 << 20).await {
            Ok(data) => data,
            // Below the log start (compaction or retention moved it): start there.
            Err(below)
                if below.code() == crate::protocol::ErrorCode::OffsetOutOfRange && next == 0 =>
            {
                match shard.offsets_log_start(p).await {
                    Ok(start) if start > 0 => {
                        next = start;
                        continue;
                    }
                    Ok(_) => return Err(read(below)),
                    Err(why) => return Err(read(why)),
                }
            }
            Err(why) => return Err(read(why)),
        };
        if data.is_empty() {
            return Ok(applied);
        }
        let batch_error = |why| LoadError::Batch { p, why };
        for (start, h) in split_batches(&data).map_err(batch_error)? {
            let section =
                RecordsSection::of(&data[start..start + h.size()], &h).map_err(batch_error)?;
            let batch = &data[start..start + h.size()];
            if h.is_control() {
                // A transaction's end: its offsets count now, or never.
                if let Some(m) = crate::format::control::read_marker(batch) {
                    applied += coordinator::complete_pending(p, h.producer_id, m.commit);
                }
                next = h.last_offset() + 1;
                continue;
            }
            for r in section.iter() {
                let r = r.map_err(batch_error)?;
                if r.offset < next {
                    continue;
                }
                let Some(key) = r.key else { continue };
                if let Some(rec) = GroupRecord::decode(key, r.value) {
                    coordinator::apply_group(rec);
                    applied += 1;
                    continue;
                }
                let Some(rec) = OffsetRecord::decode(key, r.value) else {
                    continue;
                };
                if h.is_transactional() {
                    coordinator::hold_pending(p, h.producer_id, vec![rec]);
                } else {
                    coordinator::apply(rec);
                    applied += 1;
                }
            }
            next = h.last_offset() + 1;
        }
    }
}

/// Loaded groups with members get a session watcher: a member that never comes back
/// after a restart leaves once its session times out, as in Kafka.
fn watch_loaded_sessions(shard: &Host) {
    for name in coordinator::unwatched_groups_with_members() {
        coordinator::with_group(&name, |g| membership::watch_sessions(shard, &name, g));
    }
}

/// After the transaction coordinator wrote producer `producer_id`'s marker into offsets
/// partition `p`: its offsets there count now (commit) or never (abort). The partition is
/// read first if it was not (the read then finds the marker itself).
pub async fn complete_txn(shard: &Host, p: i32, producer_id: i64, commit: bool) -> GroupCode {
    if let Err(code) = ensure_loaded(shard, p).await {
        return code;
    }
    coordinator::complete_pending(p, producer_id, commit);
    e::NONE
}
