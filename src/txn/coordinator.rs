//! The transaction coordinator of one shard: the transactional ids whose state partition
//! this shard owns (thread-local, reached only through this shard's tasks), loaded from
//! `__transaction_state` before any request for them is answered (until then
//! COORDINATOR_LOAD_IN_PROGRESS), and every change logged there (acks=all) before it is
//! answered. An id with a change in flight is `busy`: other requests for it get
//! CONCURRENT_TRANSACTIONS, which clients retry (Kafka's pending state).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use super::code::{self as e, TxnCode};
use super::host::{TxnHost, TxnHostRc};
use super::meta::{TxnMeta, MAX_EPOCH};
use super::{partition_for, records, TRANSACTION_STATE_TOPIC};

#[derive(Default)]
struct Coordinator {
    txns: HashMap<String, TxnMeta>,
    /// Ids with a logged change or markers in flight.
    busy: HashSet<String>,
    loaded: HashSet<i32>,
    loading: HashSet<i32>,
    /// Counts unloads: a load that an unload overtook does not count as read.
    unloads: u64,
    scan_started: bool,
}

thread_local! {
    static TC: RefCell<Coordinator> = RefCell::new(Coordinator::default());
}

/// The id's state, if any.
pub fn get(id: &str) -> Option<TxnMeta> {
    TC.with_borrow(|c| c.txns.get(id).cloned())
}

/// Every id this shard coordinates, with its state.
pub fn all() -> Vec<(String, TxnMeta)> {
    TC.with_borrow(|c| c.txns.iter().map(|(i, m)| (i.clone(), m.clone())).collect())
}

/// Marks `id` busy; false if it already was (the caller answers CONCURRENT_TRANSACTIONS).
pub fn claim(id: &str) -> bool {
    TC.with_borrow_mut(|c| c.busy.insert(id.to_string()))
}

pub fn release(id: &str) {
    let was_busy = TC.with_borrow_mut(|c| c.busy.remove(id));
    // Every release ends a claim: a second one would let two changes of `id` interleave.
    assert!(was_busy, "transactional id {id:?} released without a claim");
}

/// Logs `meta` as `id`'s state (durable before it returns), then puts it in force.
pub async fn log_state(host: &TxnHostRc, id: &str, meta: TxnMeta) -> Result<(), TxnCode> {
    // What is logged is what a restart puts back in force: a real producer and an epoch
    // that bumps never carried past the last one (a new producer id takes over there).
    assert!(meta.producer_id >= 0, "{id:?} logged with no producer id");
    assert!(meta.epoch <= MAX_EPOCH, "{id:?} logged past the last epoch");
    let p = state_partition(&**host, id)?;
    let batch = records::batch(id, Some(&meta), crate::time::now_ms());
    if let Err(e) = host.append_state(p, Bytes::from(batch)).await {
        tracing::warn!(id, error = %e.message(), "logging a transaction state failed");
        return Err(e::COORDINATOR_NOT_AVAILABLE);
    }
    TC.with_borrow_mut(|c| c.txns.insert(id.to_string(), meta));
    Ok(())
}

/// Forgets `id` (a tombstone in its state partition, durable first).
pub async fn forget(host: &TxnHostRc, id: &str) -> Result<(), TxnCode> {
    let p = state_partition(&**host, id)?;
    let batch = records::batch(id, None, crate::time::now_ms());
    if let Err(e) = host.append_state(p, Bytes::from(batch)).await {
        tracing::warn!(id, error = %e.message(), "forgetting a transactional id failed");
        return Err(e::COORDINATOR_NOT_AVAILABLE);
    }
    TC.with_borrow_mut(|c| c.txns.remove(id));
    Ok(())
}

/// The state partition of `id`, which this shard must own.
pub(super) fn state_partition(host: &dyn TxnHost, id: &str) -> Result<i32, TxnCode> {
    let meta = host
        .topic(TRANSACTION_STATE_TOPIC)
        .ok_or(e::COORDINATOR_NOT_AVAILABLE)?;
    let p = partition_for(id, meta.owners.len());
    let here = meta.owners[p] as usize == host.shard_id();
    if !here || !host.coordinates(TRANSACTION_STATE_TOPIC, p as i32) {
        return Err(e::NOT_COORDINATOR);
    }
    Ok(p as i32)
}

/// The ids of state partition `p` this shard coordinates.
pub fn ids_of_partition(host: &dyn TxnHost, p: i32) -> Vec<String> {
    TC.with_borrow(|c| {
        c.txns
            .keys()
            .filter(|id| state_partition(host, id) == Ok(p))
            .cloned()
            .collect()
    })
}

/// Whether state partition `p` has been read.
pub(super) fn is_loaded(p: i32) -> bool {
    TC.with_borrow(|c| c.loaded.contains(&p))
}

/// Marks state partition `p` as being read; false if it already is, or was read. Returns
/// the unload count to hand to `finish_loading`.
pub(super) fn begin_loading(p: i32) -> Option<u64> {
    TC.with_borrow_mut(|c| (!c.loaded.contains(&p) && c.loading.insert(p)).then_some(c.unloads))
}

/// In cluster mode, when this node stops leading state partition `p` (or leads it in a new
/// leader epoch, after another leader may have written): its ids are forgotten here, and
/// the partition must be read again before it serves.
pub fn unload(host: &dyn TxnHost, p: i32) {
    let partitions = host
        .topic(TRANSACTION_STATE_TOPIC)
        .map_or(0, |m| m.owners.len());
    let dropped = TC.with_borrow_mut(|c| {
        let before = c.txns.len();
        c.txns
            .retain(|id, _| partition_for(id, partitions) as i32 != p);
        c.loaded.remove(&p);
        c.unloads += 1;
        before - c.txns.len()
    });
    assert!(
        !is_loaded(p),
        "an unloaded partition is read again before it serves"
    );
    if dropped > 0 {
        tracing::info!(
            shard = host.shard_id(),
            partition = p,
            ids = dropped,
            "transaction state partition unloaded: another node coordinates its ids now"
        );
    }
}

/// True the first time only: the timeout scan starts after the first load.
pub(super) fn first_scan() -> bool {
    TC.with_borrow_mut(|c| !std::mem::replace(&mut c.scan_started, true))
}

/// Ends the read of state partition `p`: its records (later ones win) are in force if it
/// succeeded, and it counts as read; returns how many ids this shard now coordinates.
/// A read an unload overtook (`unloads` is the count `begin_loading` returned) is dropped.
pub(super) fn finish_loading(
    p: i32,
    unloads: u64,
    read: Option<&[(String, Option<TxnMeta>)]>,
) -> usize {
    TC.with_borrow_mut(|c| {
        let was_loading = c.loading.remove(&p);
        assert!(
            was_loading,
            "state partition {p} loaded without being claimed"
        );
        let read = read.filter(|_| c.unloads == unloads);
        for (id, meta) in read.unwrap_or_default() {
            match meta {
                Some(m) => c.txns.insert(id.clone(), m.clone()),
                None => c.txns.remove(id),
            };
        }
        if read.is_some() {
            c.loaded.insert(p);
        }
        c.txns.len()
    })
}
