//! Loading a shard's transaction state: each state partition this shard owns is read once
//! (at start, or by the first request that finds it unread, which meanwhile gets
//! COORDINATOR_LOAD_IN_PROGRESS); transactions it left prepared are then completed and the
//! timeout scan starts.

use super::code::{self as e, TxnCode};
use super::coordinator::{self as tc, state_partition};
use super::host::{TxnHost, TxnHostRc};
use super::meta::TxnMeta;
use super::{completion, records, TRANSACTION_STATE_TOPIC};
use crate::broker_error::BrokerError;
use crate::format::batch::{split_batches, RecordsSection};
use crate::protocol::ErrorCode;

/// Ok once `id`'s state partition is read; the first request to find it unread starts
/// the read, requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS.
pub async fn ensure_loaded(host: &TxnHostRc, id: &str) -> Result<(), TxnCode> {
    let p = state_partition(&**host, id)?;
    if tc::is_loaded(p) {
        return Ok(());
    }
    match begin_load(host, p) {
        // The read runs in its own task: a request that goes away does not cut it short.
        Some(load) => load
            .detach()
            .await
            .unwrap_or(Err(e::COORDINATOR_NOT_AVAILABLE)),
        None => Err(e::COORDINATOR_LOAD_IN_PROGRESS),
    }
}

/// At start, once the shard's partitions are open: reads every state partition this shard
/// owns, so prepared transactions are completed and open ones time out even if no client
/// of theirs comes back (an undecided transaction would hold its partitions' LSO).
pub fn start_loading(host: &TxnHostRc) {
    let Some(meta) = host.topic(TRANSACTION_STATE_TOPIC) else {
        return;
    };
    for (p, &owner) in meta.owners.iter().enumerate() {
        if owner as usize == host.shard_id() {
            load_now(host, p as i32);
        }
    }
}

/// Reads state partition `p` now, if this node coordinates its ids (in cluster mode: once
/// it became its leader).
pub fn load_now(host: &TxnHostRc, p: i32) {
    if !host.coordinates(TRANSACTION_STATE_TOPIC, p) {
        return;
    }
    if let Some(load) = begin_load(host, p) {
        load.detach();
    }
}

/// A task reading state partition `p`, or `None` if one already is (or it was read).
fn begin_load(host: &TxnHostRc, p: i32) -> Option<glommio::Task<Result<(), TxnCode>>> {
    let unloads = tc::begin_loading(p)?;
    let host = host.clone();
    Some(crate::tasks::spawn(async move {
        let read = load(&host, p, unloads).await;
        if read.is_ok() && tc::first_scan() {
            completion::spawn_timeout_scan(host.clone());
        }
        read
    }))
}

async fn load(host: &TxnHostRc, p: i32, unloads: u64) -> Result<(), TxnCode> {
    let started = std::time::Instant::now();
    let read = read_partition(&**host, p).await;
    let loaded = tc::finish_loading(p, unloads, read.as_deref().ok());
    if !tc::is_loaded(p) && read.is_ok() {
        tracing::info!(partition = p, "a transaction state partition's leadership moved while it was read; it is read again on the next request");
        return Err(e::COORDINATOR_LOAD_IN_PROGRESS);
    }
    match read {
        Ok(records) => {
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let n = records.len();
            tracing::info!(
                shard = host.shard_id(),
                partition = p,
                records = n,
                ids = loaded,
                elapsed_ms,
                "transaction state partition loaded"
            );
            completion::finish_prepared(host, p);
            Ok(())
        }
        Err(e) => {
            tracing::warn!(shard = host.shard_id(), partition = p, error = %e.message(), "loading a transaction state partition failed");
            Err(e::COORDINATOR_NOT_AVAILABLE)
        }
    }
}

type StateRecord = (String, Option<TxnMeta>);

/// Every record of state partition `p`, in log order (later ones win).
async fn read_partition(host: &dyn TxnHost, p: i32) -> Result<Vec<StateRecord>, BrokerError> {
    let mut next = host.state_log_start(p).await?;
    let mut out = Vec::new();
    loop {
        let data = host.read_state(p, next, 1 << 20).await?;
        if data.is_empty() {
            return Ok(out);
        }
        let bad = |e: crate::format::BatchError| {
            BrokerError::new(ErrorCode::CorruptStorage, e.to_string())
        };
        for (start, h) in split_batches(&data).map_err(bad)? {
            let section = RecordsSection::of(&data[start..start + h.size()], &h).map_err(bad)?;
            for r in section.iter() {
                let r = r.map_err(bad)?;
                let decoded = r.key.and_then(|key| records::decode(key, r.value));
                if let (true, Some(rec)) = (r.offset >= next, decoded) {
                    out.push(rec);
                }
            }
            next = h.last_offset() + 1;
        }
    }
}
