//! The transaction coordinator of one shard: the transactional ids whose state partition
//! this shard owns (thread-local, reached only through this shard's tasks), loaded from
//! `__transaction_state` before any request for them is answered (until then
//! COORDINATOR_LOAD_IN_PROGRESS), and every change logged there (acks=all) before it is
//! answered. An id with a change in flight is `busy`: other requests for it get
//! CONCURRENT_TRANSACTIONS, which clients retry (Kafka's pending state).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use bytes::Bytes;

use crate::broker_error::BrokerError;
use crate::format::batch::{split_batches, RecordsSection};
use crate::kafka_codes as k;
use crate::protocol::{ErrorCode, ACKS_ALL};
use crate::shard::messages::{Isolation, OpOk, PartitionOp};
use crate::shard::runtime::Shard;
use crate::txn::meta::TxnMeta;
use crate::txn::{partition_for, records, TRANSACTION_STATE_TOPIC};

#[derive(Default)]
struct Coordinator {
    txns: HashMap<String, TxnMeta>,
    /// Ids with a logged change or markers in flight.
    busy: HashSet<String>,
    loaded: HashSet<i32>,
    loading: HashSet<i32>,
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
    TC.with_borrow_mut(|c| c.busy.remove(id));
}

/// Logs `meta` as `id`'s state (durable before it returns), then puts it in force.
pub async fn log_state(shard: &Rc<Shard>, id: &str, meta: TxnMeta) -> Result<(), i16> {
    let p = state_partition(shard, id)?;
    let batch = records::batch(id, Some(&meta), crate::time::now_ms());
    let op = PartitionOp::Produce {
        acks: ACKS_ALL,
        records: Bytes::from(batch),
        transactional: false,
    };
    if let Err(e) = shard.partition_op(TRANSACTION_STATE_TOPIC, p, op).await {
        tracing::warn!(id, error = %e.message, "logging a transaction state failed");
        return Err(k::COORDINATOR_NOT_AVAILABLE);
    }
    TC.with_borrow_mut(|c| c.txns.insert(id.to_string(), meta));
    Ok(())
}

/// Forgets `id` (a tombstone in its state partition, durable first).
pub async fn forget(shard: &Rc<Shard>, id: &str) -> Result<(), i16> {
    let p = state_partition(shard, id)?;
    let batch = records::batch(id, None, crate::time::now_ms());
    let op = PartitionOp::Produce {
        acks: ACKS_ALL,
        records: Bytes::from(batch),
        transactional: false,
    };
    if let Err(e) = shard.partition_op(TRANSACTION_STATE_TOPIC, p, op).await {
        tracing::warn!(id, error = %e.message, "forgetting a transactional id failed");
        return Err(k::COORDINATOR_NOT_AVAILABLE);
    }
    TC.with_borrow_mut(|c| c.txns.remove(id));
    Ok(())
}

/// The state partition of `id`, which this shard must own.
fn state_partition(shard: &Shard, id: &str) -> Result<i32, i16> {
    let meta = shard
        .topic(TRANSACTION_STATE_TOPIC)
        .ok_or(k::COORDINATOR_NOT_AVAILABLE)?;
    let p = partition_for(id, meta.owners.len());
    if meta.owners[p] as usize != shard.id {
        return Err(k::NOT_COORDINATOR);
    }
    Ok(p as i32)
}

/// Ok once `id`'s state partition is read; the first request to find it unread starts
/// the read, requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS.
pub async fn ensure_loaded(shard: &Rc<Shard>, id: &str) -> Result<(), i16> {
    let p = state_partition(shard, id)?;
    if TC.with_borrow(|c| c.loaded.contains(&p)) {
        return Ok(());
    }
    match begin_load(shard, p) {
        // The read runs in its own task: a request that goes away does not cut it short.
        Some(load) => load
            .detach()
            .await
            .unwrap_or(Err(k::COORDINATOR_NOT_AVAILABLE)),
        None => Err(k::COORDINATOR_LOAD_IN_PROGRESS),
    }
}

/// At start, once the shard's partitions are open: reads every state partition this shard
/// owns, so prepared transactions are completed and open ones time out even if no client
/// of theirs comes back (an undecided transaction would hold its partitions' LSO).
pub fn start_loading(shard: &Rc<Shard>) {
    let Some(meta) = shard.topic(TRANSACTION_STATE_TOPIC) else {
        return;
    };
    for (p, &owner) in meta.owners.iter().enumerate() {
        if owner as usize == shard.id {
            if let Some(load) = begin_load(shard, p as i32) {
                load.detach();
            }
        }
    }
}

/// A task reading state partition `p`, or `None` if one already is (or it was read).
fn begin_load(shard: &Rc<Shard>, p: i32) -> Option<glommio::Task<Result<(), i16>>> {
    let fresh = TC.with_borrow_mut(|c| !c.loaded.contains(&p) && c.loading.insert(p));
    if !fresh {
        return None;
    }
    let shard = shard.clone();
    Some(crate::tasks::spawn(async move {
        let read = load(&shard, p).await;
        if read.is_ok() && !TC.with_borrow_mut(|c| std::mem::replace(&mut c.scan_started, true)) {
            super::txn_ops::spawn_timeout_scan(shard.clone());
        }
        read
    }))
}

async fn load(shard: &Rc<Shard>, p: i32) -> Result<(), i16> {
    let started = std::time::Instant::now();
    let read = read_partition(shard, p).await;
    let loaded = TC.with_borrow_mut(|c| {
        c.loading.remove(&p);
        let found = read.as_ref().ok().cloned().unwrap_or_default();
        for (id, meta) in found {
            match meta {
                Some(m) => c.txns.insert(id, m),
                None => c.txns.remove(&id),
            };
        }
        if read.is_ok() {
            c.loaded.insert(p);
        }
        c.txns.len()
    });
    match read {
        Ok(records) => {
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let n = records.len();
            tracing::info!(
                shard = shard.id,
                partition = p,
                records = n,
                ids = loaded,
                elapsed_ms,
                "transaction state partition loaded"
            );
            super::txn_ops::finish_prepared(shard, p);
            Ok(())
        }
        Err(e) => {
            tracing::warn!(shard = shard.id, partition = p, error = %e.message, "loading a transaction state partition failed");
            Err(k::COORDINATOR_NOT_AVAILABLE)
        }
    }
}

type StateRecord = (String, Option<TxnMeta>);

/// Every record of state partition `p`, in log order (later ones win).
async fn read_partition(shard: &Rc<Shard>, p: i32) -> Result<Vec<StateRecord>, BrokerError> {
    let topic = TRANSACTION_STATE_TOPIC;
    let mut next = match shard.partition_op(topic, p, PartitionOp::Describe).await? {
        OpOk::Partition(s) => s.log_start_offset,
        other => return Err(unexpected(other)),
    };
    let mut out = Vec::new();
    loop {
        let op = PartitionOp::Fetch {
            offset: next,
            max_bytes: 1 << 20,
            at_least_one: true,
            isolation: Isolation::ReadUncommitted,
        };
        let data = match shard.partition_op(topic, p, op).await? {
            OpOk::Fetched { records, .. } => records.to_bytes(),
            other => return Err(unexpected(other)),
        };
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

fn unexpected(other: OpOk) -> BrokerError {
    BrokerError::new(ErrorCode::Internal, format!("unexpected reply {other:?}"))
}

/// The ids of state partition `p` this shard coordinates.
pub fn ids_of_partition(shard: &Shard, p: i32) -> Vec<String> {
    TC.with_borrow(|c| {
        c.txns
            .keys()
            .filter(|id| state_partition(shard, id) == Ok(p))
            .cloned()
            .collect()
    })
}
