//! The coordinator's operations, each on the id's coordinator shard, with Kafka's rules
//! (`TransactionCoordinator`): InitProducerId (epochs, fencing an open transaction, KIP-360
//! bumps), AddPartitionsToTxn, the produce check that a partition is in the producer's
//! transaction (KIP-890 part 1), EndTxn (logged Prepare*, markers, logged Complete*), and
//! the abort of transactions past their timeout. Codes are Kafka's; the front end turns
//! PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for the old versions that expect it.

use std::rc::Rc;
use std::time::Duration;

use glommio::sync::Semaphore;

use super::txn_coordinator::{self as tc, claim, release};
use crate::broker_error::BrokerError;
use crate::format::control::EndTxnMarker;
use crate::kafka_codes as k;
use crate::shard::messages::{OpOk, PartitionOp, ShardOp};
use crate::shard::runtime::Shard;
use crate::txn::meta::{TxnMeta, TxnState, MAX_EPOCH};
use crate::TopicPartition;

#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TxnOp {
    /// `producer_id`/`epoch` -1 unless the producer asks to bump its own (KIP-360).
    InitProducerId {
        timeout_ms: i32,
        producer_id: i64,
        epoch: i16,
    },
    AddPartitions {
        producer_id: i64,
        epoch: i16,
        partitions: Vec<TopicPartition>,
    },
    /// May this producer write to this partition in its open transaction?
    Verify {
        producer_id: i64,
        epoch: i16,
        partition: TopicPartition,
    },
    EndTxn {
        producer_id: i64,
        epoch: i16,
        commit: bool,
    },
    Describe,
    List,
}

#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TxnReply {
    Code(i16),
    Producer { producer_id: i64, epoch: i16 },
    Described(TxnMeta),
    Listed(Vec<(String, TxnMeta)>),
}

pub async fn handle(shard: &Rc<Shard>, id: String, op: TxnOp) -> TxnReply {
    if let TxnOp::List = op {
        return TxnReply::Listed(tc::all());
    }
    if let Err(code) = tc::ensure_loaded(shard, &id).await {
        return TxnReply::Code(code);
    }
    match op {
        TxnOp::InitProducerId {
            timeout_ms,
            producer_id,
            epoch,
        } => init_producer_id(shard, &id, timeout_ms, (producer_id, epoch)).await,
        TxnOp::AddPartitions {
            producer_id,
            epoch,
            partitions,
        } => TxnReply::Code(add_partitions(shard, &id, (producer_id, epoch), partitions).await),
        TxnOp::Verify {
            producer_id,
            epoch,
            partition,
        } => TxnReply::Code(verify(&id, (producer_id, epoch), &partition)),
        TxnOp::EndTxn {
            producer_id,
            epoch,
            commit,
        } => TxnReply::Code(end_txn(shard, &id, (producer_id, epoch), commit).await),
        TxnOp::Describe => match tc::get(&id) {
            Some(m) if m.state != TxnState::Dead => TxnReply::Described(m),
            _ => TxnReply::Code(k::TRANSACTIONAL_ID_NOT_FOUND),
        },
        TxnOp::List => unreachable!("answered above"),
    }
}

/// The id's state for a request of producer `(id, epoch)`: INVALID_PRODUCER_ID_MAPPING for
/// another producer, PRODUCER_FENCED for another epoch.
fn producer_state(id: &str, (producer_id, epoch): (i64, i16)) -> Result<TxnMeta, i16> {
    let meta = tc::get(id).ok_or(k::INVALID_PRODUCER_ID_MAPPING)?;
    if meta.producer_id != producer_id {
        return Err(k::INVALID_PRODUCER_ID_MAPPING);
    }
    if meta.epoch != epoch {
        return Err(k::PRODUCER_FENCED);
    }
    Ok(meta)
}

async fn init_producer_id(
    shard: &Rc<Shard>,
    id: &str,
    timeout_ms: i32,
    asked: (i64, i16),
) -> TxnReply {
    if !claim(id) {
        return TxnReply::Code(k::CONCURRENT_TRANSACTIONS);
    }
    let r = init_claimed(shard, id, timeout_ms, asked).await;
    release(id);
    r.unwrap_or_else(TxnReply::Code)
}

async fn init_claimed(
    shard: &Rc<Shard>,
    id: &str,
    timeout_ms: i32,
    (asked_pid, asked_epoch): (i64, i16),
) -> Result<TxnReply, i16> {
    let now = crate::time::now_ms();
    let meta = match tc::get(id) {
        Some(m) if m.state != TxnState::Dead => m,
        _ => TxnMeta::new(new_producer_id(shard).await?, timeout_ms, now),
    };
    match meta.state {
        s if s.is_preparing() => return Err(k::CONCURRENT_TRANSACTIONS),
        // A new instance while a transaction is open: abort it under a bumped epoch (its
        // markers fence the old instance everywhere); the client retries and gets the next.
        TxnState::Ongoing => {
            fence_and_abort(shard, id, meta).await?;
            return Err(k::CONCURRENT_TRANSACTIONS);
        }
        _ => {}
    }
    if asked_pid >= 0 && meta.epoch >= 0 {
        if asked_pid != meta.producer_id {
            return Err(k::PRODUCER_FENCED);
        }
        if asked_epoch == meta.last_epoch && asked_epoch != meta.epoch {
            // A bump whose reply was lost: the current epoch again.
            return Ok(producer(&meta));
        }
        if asked_epoch != meta.epoch {
            return Err(k::PRODUCER_FENCED);
        }
    }
    let mut next = meta.clone();
    if meta.epoch >= MAX_EPOCH {
        next.producer_id = new_producer_id(shard).await?;
        next.epoch = 0;
        next.last_epoch = -1;
    } else {
        next.epoch = meta.epoch + 1;
        next.last_epoch = meta.epoch;
    }
    next.timeout_ms = timeout_ms;
    next.state = TxnState::Empty;
    next.partitions.clear();
    next.start_ms = -1;
    next.update_ms = now;
    tc::log_state(shard, id, next.clone()).await?;
    Ok(producer(&next))
}

fn producer(m: &TxnMeta) -> TxnReply {
    TxnReply::Producer {
        producer_id: m.producer_id,
        epoch: m.epoch,
    }
}

async fn new_producer_id(shard: &Rc<Shard>) -> Result<i64, i16> {
    match shard.allocate_producer_id().await {
        Ok(OpOk::ProducerId(pid)) => Ok(pid),
        _ => Err(k::COORDINATOR_NOT_AVAILABLE),
    }
}

async fn add_partitions(
    shard: &Rc<Shard>,
    id: &str,
    producer: (i64, i16),
    partitions: Vec<TopicPartition>,
) -> i16 {
    if !claim(id) {
        return k::CONCURRENT_TRANSACTIONS;
    }
    let r = add_claimed(shard, id, producer, partitions).await;
    release(id);
    r.err().unwrap_or(k::NONE)
}

async fn add_claimed(
    shard: &Rc<Shard>,
    id: &str,
    producer: (i64, i16),
    partitions: Vec<TopicPartition>,
) -> Result<(), i16> {
    let meta = producer_state(id, producer)?;
    if meta.state.is_preparing() {
        return Err(k::CONCURRENT_TRANSACTIONS);
    }
    let ongoing = meta.state == TxnState::Ongoing;
    if ongoing && partitions.iter().all(|p| meta.partitions.contains(p)) {
        return Ok(());
    }
    let now = crate::time::now_ms();
    let mut next = meta;
    if !ongoing {
        next.start_ms = now;
        next.partitions.clear();
    }
    next.state = TxnState::Ongoing;
    next.partitions.extend(partitions);
    next.update_ms = now;
    tc::log_state(shard, id, next).await
}

/// KIP-890 part 1: a transactional batch is written only to a partition its producer's
/// open transaction added (else a hanging transaction could pin the LSO for ever).
fn verify(id: &str, producer: (i64, i16), partition: &TopicPartition) -> i16 {
    match producer_state(id, producer) {
        Err(k::PRODUCER_FENCED) => k::INVALID_PRODUCER_EPOCH,
        Err(code) => code,
        Ok(m) if m.state == TxnState::Ongoing && m.partitions.contains(partition) => k::NONE,
        Ok(_) => k::INVALID_TXN_STATE,
    }
}

async fn end_txn(shard: &Rc<Shard>, id: &str, producer: (i64, i16), commit: bool) -> i16 {
    if !claim(id) {
        return k::CONCURRENT_TRANSACTIONS;
    }
    let meta = match producer_state(id, producer) {
        Ok(m) => m,
        Err(code) => {
            release(id);
            return code;
        }
    };
    let code = match (meta.state, commit) {
        (TxnState::Ongoing, _) => return prepare(shard, id, meta, commit).await,
        (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => k::NONE,
        (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
            k::CONCURRENT_TRANSACTIONS
        }
        _ => k::INVALID_TXN_STATE,
    };
    release(id);
    code
}

/// Logs Prepare{Commit,Abort} (the decision, durable before the reply, as Kafka answers)
/// and leaves the id busy while the markers are written in the background.
async fn prepare(shard: &Rc<Shard>, id: &str, meta: TxnMeta, commit: bool) -> i16 {
    let mut next = meta;
    next.state = match commit {
        true => TxnState::PrepareCommit,
        false => TxnState::PrepareAbort,
    };
    next.update_ms = crate::time::now_ms();
    if let Err(code) = tc::log_state(shard, id, next.clone()).await {
        release(id);
        return code;
    }
    spawn_completion(shard.clone(), id.to_string(), next);
    k::NONE
}

/// Aborts an Ongoing transaction under the next epoch (a new instance of its id took
/// over, or it timed out): its producer is fenced on every partition by the markers.
async fn fence_and_abort(shard: &Rc<Shard>, id: &str, meta: TxnMeta) -> Result<(), i16> {
    let mut next = meta;
    if next.epoch < MAX_EPOCH {
        next.last_epoch = next.epoch;
        next.epoch += 1;
    }
    next.state = TxnState::PrepareAbort;
    next.update_ms = crate::time::now_ms();
    tc::log_state(shard, id, next.clone()).await?;
    write_markers(shard, id, &next).await;
    Ok(())
}

/// Writes the markers of a prepared transaction, then logs it complete; the id stays busy
/// until then. Retries until every marker is durable (a partition may be briefly
/// unavailable); a restart re-drives it from the logged Prepare* state.
fn spawn_completion(shard: Rc<Shard>, id: String, meta: TxnMeta) {
    crate::tasks::spawn(async move {
        write_markers(&shard, &id, &meta).await;
        release(&id);
    })
    .detach();
}

async fn write_markers(shard: &Rc<Shard>, id: &str, meta: &TxnMeta) {
    let commit = meta.state == TxnState::PrepareCommit;
    let marker = EndTxnMarker {
        commit,
        coordinator_epoch: 0,
    };
    let producer = (meta.producer_id, meta.epoch);
    for tp in &meta.partitions {
        let mut delay = Duration::from_millis(10);
        loop {
            match write_marker(shard, tp, producer, marker).await {
                Ok(()) => break,
                // A deleted topic has nothing left to mark.
                Err(e) if e.code == crate::protocol::ErrorCode::UnknownTopic => break,
                Err(e) if shard.shutting_down.get() => {
                    tracing::warn!(id, %tp.topic, tp.partition, error = %e.message, "marker not written before shutdown; the next start writes it");
                    return;
                }
                Err(e) => {
                    tracing::warn!(id, %tp.topic, tp.partition, error = %e.message, "writing a transaction marker failed; retrying");
                    glommio::timer::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
    let mut done = meta.clone();
    done.state = match commit {
        true => TxnState::CompleteCommit,
        false => TxnState::CompleteAbort,
    };
    done.partitions.clear();
    done.update_ms = crate::time::now_ms();
    if tc::log_state(shard, id, done).await.is_err() {
        tracing::warn!(
            id,
            "logging a completed transaction failed; the next start completes it"
        );
    }
}

/// Writes one marker of producer `(id, epoch)` into `tp`, durably; in an offsets partition
/// the group coordinator then applies or drops the offsets sent inside the transaction.
/// The coordinator's path and WriteTxnMarkers' (an operator ending a hanging transaction).
pub async fn write_marker(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    (producer_id, epoch): (i64, i16),
    marker: EndTxnMarker,
) -> Result<(), BrokerError> {
    let op = PartitionOp::WriteMarker {
        producer_id,
        epoch,
        marker,
    };
    shard.partition_op(&tp.topic, tp.partition, op).await?;
    let offsets = tp.topic == crate::groups::OFFSETS_TOPIC;
    if offsets && !complete_offsets(shard, tp.partition, producer_id, marker.commit).await {
        return Err(BrokerError::new(
            crate::protocol::ErrorCode::NotReady,
            "the group coordinator did not take the transaction's end; retry",
        ));
    }
    Ok(())
}

/// Tells the group coordinator of offsets partition `p` that producer `producer_id`'s
/// transaction ended there; whether it took note (else the marker is written again: a
/// second marker completes nothing).
async fn complete_offsets(shard: &Rc<Shard>, p: i32, producer_id: i64, commit: bool) -> bool {
    let Some(meta) = shard.topic(crate::groups::OFFSETS_TOPIC) else {
        return true;
    };
    let op = ShardOp::CompleteTxnOffsets {
        partition: p,
        producer_id,
        commit,
    };
    let owner = meta.owners[p as usize] as usize;
    let reply = match owner == shard.id {
        true => Box::pin(shard.execute(op)).await,
        false => shard.remote(owner, op).await,
    };
    match reply {
        Ok(OpOk::Group(crate::groups::ops::GroupReply::Code(code))) if code.is_ok() => true,
        other => {
            tracing::warn!(
                p,
                producer_id,
                ?other,
                "completing transactional offsets failed; retrying"
            );
            false
        }
    }
}

/// After a load: transactions logged Prepare* (the coordinator stopped while writing
/// their markers) are completed now.
pub fn finish_prepared(shard: &Rc<Shard>, p: i32) {
    for id in tc::ids_of_partition(shard, p) {
        let Some(meta) = tc::get(&id) else { continue };
        if meta.state.is_preparing() && claim(&id) {
            tracing::info!(
                id,
                state = meta.state.name(),
                "completing a prepared transaction after a restart"
            );
            spawn_completion(shard.clone(), id, meta);
        }
    }
}

/// Every cleanup interval: Ongoing transactions past their timeout are aborted under a
/// bumped epoch (the late producer's next request is fenced).
pub fn spawn_timeout_scan(shard: Rc<Shard>) {
    crate::tasks::spawn(async move {
        let every = shard
            .config
            .transaction_abort_timed_out_transaction_cleanup_interval_ms;
        loop {
            glommio::timer::sleep(Duration::from_millis(every)).await;
            if shard.shutting_down.get() {
                return;
            }
            scan(&shard, crate::time::now_ms()).await;
        }
    })
    .detach();
}

/// Timed-out transactions one shard aborts at once: their state-log records and markers
/// then share fdatasyncs (appends waiting together are flushed together), so a restart
/// that finds thousands of them due clears them at the disk's pace, not one sync at a time.
const CONCURRENT_CLEANUPS: u64 = 64;

/// One pass: transactions past their timeout are aborted; ids idle past
/// `transactional.id.expiration.ms` are forgotten. Up to CONCURRENT_CLEANUPS at a time; the
/// pass ends when all of them have.
async fn scan(shard: &Rc<Shard>, now: i64) {
    let idle = shard.config.transactional_id_expiration_ms;
    let slots = Rc::new(Semaphore::new(CONCURRENT_CLEANUPS));
    for (id, meta) in tc::all() {
        let abort = meta.timed_out(now);
        if !(abort || meta.expired(now, idle)) || !claim(&id) {
            continue;
        }
        let Ok(slot) = slots.acquire_static_permit(1).await else {
            release(&id);
            return;
        };
        let shard = shard.clone();
        crate::tasks::spawn(async move {
            if abort {
                let producer_id = meta.producer_id;
                tracing::info!(id, producer_id, "aborting a transaction past its timeout");
                let _ = fence_and_abort(&shard, &id, meta).await;
            } else {
                tracing::info!(id, "forgetting an idle transactional id");
                let _ = tc::forget(&shard, &id).await;
            }
            release(&id);
            drop(slot);
        })
        .detach();
    }
    // Every cleanup of this pass has ended once all slots are free again.
    let _ = slots.acquire(CONCURRENT_CLEANUPS).await;
}
