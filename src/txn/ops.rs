//! The coordinator's operations, each on the id's coordinator shard, with Kafka's rules
//! (`TransactionCoordinator`): InitProducerId (epochs, fencing an open transaction, KIP-360
//! bumps), AddPartitionsToTxn, the produce check that a partition is in the producer's
//! transaction (KIP-890 part 1), EndTxn (logged Prepare*, markers, logged Complete*), and
//! the abort of transactions past their timeout. Codes are Kafka's; the front end turns
//! PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for the old versions that expect it.

use super::code::{self as e, TxnCode};
use super::completion::{fence_and_abort, spawn_completion};
use super::coordinator::{self as tc, claim, release};
use super::host::TxnHostRc;
use super::meta::{TxnMeta, TxnState, MAX_EPOCH};
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
    Code(TxnCode),
    Producer { producer_id: i64, epoch: i16 },
    Described(TxnMeta),
    Listed(Vec<(String, TxnMeta)>),
}

pub async fn handle(host: &TxnHostRc, id: String, op: TxnOp) -> TxnReply {
    if let TxnOp::List = op {
        return TxnReply::Listed(tc::all());
    }
    if let Err(code) = super::load::ensure_loaded(host, &id).await {
        return TxnReply::Code(code);
    }
    match op {
        TxnOp::InitProducerId {
            timeout_ms,
            producer_id,
            epoch,
        } => init_producer_id(host, &id, timeout_ms, (producer_id, epoch)).await,
        TxnOp::AddPartitions {
            producer_id,
            epoch,
            partitions,
        } => TxnReply::Code(add_partitions(host, &id, (producer_id, epoch), partitions).await),
        TxnOp::Verify {
            producer_id,
            epoch,
            partition,
        } => TxnReply::Code(verify(&id, (producer_id, epoch), &partition)),
        TxnOp::EndTxn {
            producer_id,
            epoch,
            commit,
        } => TxnReply::Code(end_txn(host, &id, (producer_id, epoch), commit).await),
        TxnOp::Describe => match tc::get(&id) {
            Some(m) if m.state != TxnState::Dead => TxnReply::Described(m),
            _ => TxnReply::Code(e::TRANSACTIONAL_ID_NOT_FOUND),
        },
        TxnOp::List => unreachable!("answered above"),
    }
}

/// The id's state for a request of producer `(id, epoch)`: INVALID_PRODUCER_ID_MAPPING for
/// another producer, PRODUCER_FENCED for another epoch.
fn producer_state(id: &str, (producer_id, epoch): (i64, i16)) -> Result<TxnMeta, TxnCode> {
    let meta = tc::get(id).ok_or(e::INVALID_PRODUCER_ID_MAPPING)?;
    if meta.producer_id != producer_id {
        return Err(e::INVALID_PRODUCER_ID_MAPPING);
    }
    if meta.epoch != epoch {
        return Err(e::PRODUCER_FENCED);
    }
    Ok(meta)
}

async fn init_producer_id(
    host: &TxnHostRc,
    id: &str,
    timeout_ms: i32,
    asked: (i64, i16),
) -> TxnReply {
    if !claim(id) {
        return TxnReply::Code(e::CONCURRENT_TRANSACTIONS);
    }
    let r = init_claimed(host, id, timeout_ms, asked).await;
    release(id);
    r.unwrap_or_else(TxnReply::Code)
}

async fn init_claimed(
    host: &TxnHostRc,
    id: &str,
    timeout_ms: i32,
    (asked_pid, asked_epoch): (i64, i16),
) -> Result<TxnReply, TxnCode> {
    let now = crate::time::now_ms();
    let meta = match tc::get(id) {
        Some(m) if m.state != TxnState::Dead => m,
        _ => TxnMeta::new(new_producer_id(host).await?, timeout_ms, now),
    };
    match meta.state {
        s if s.is_preparing() => return Err(e::CONCURRENT_TRANSACTIONS),
        // A new instance while a transaction is open: abort it under a bumped epoch (its
        // markers fence the old instance everywhere); the client retries and gets the next.
        TxnState::Ongoing => {
            fence_and_abort(host, id, meta).await?;
            return Err(e::CONCURRENT_TRANSACTIONS);
        }
        _ => {}
    }
    if asked_pid >= 0 && meta.epoch >= 0 {
        if asked_pid != meta.producer_id {
            return Err(e::PRODUCER_FENCED);
        }
        if asked_epoch == meta.last_epoch && asked_epoch != meta.epoch {
            // A bump whose reply was lost: the current epoch again.
            return Ok(producer(&meta));
        }
        if asked_epoch != meta.epoch {
            return Err(e::PRODUCER_FENCED);
        }
    }
    let mut next = meta.clone();
    if meta.epoch >= MAX_EPOCH {
        next.producer_id = new_producer_id(host).await?;
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
    // Fencing: the answer is a newer epoch of the same producer, or a new producer.
    assert!(next.epoch > meta.epoch || next.producer_id != meta.producer_id);
    assert!(
        next.epoch <= MAX_EPOCH,
        "{id:?} given an epoch past the last"
    );
    tc::log_state(host, id, next.clone()).await?;
    Ok(producer(&next))
}

fn producer(m: &TxnMeta) -> TxnReply {
    TxnReply::Producer {
        producer_id: m.producer_id,
        epoch: m.epoch,
    }
}

async fn new_producer_id(host: &TxnHostRc) -> Result<i64, TxnCode> {
    let id = host
        .allocate_producer_id()
        .await
        .map_err(|_| e::COORDINATOR_NOT_AVAILABLE)?;
    assert!(id >= 0, "producer id {id} handed out");
    Ok(id)
}

async fn add_partitions(
    host: &TxnHostRc,
    id: &str,
    producer: (i64, i16),
    partitions: Vec<TopicPartition>,
) -> TxnCode {
    if !claim(id) {
        return e::CONCURRENT_TRANSACTIONS;
    }
    let r = add_claimed(host, id, producer, partitions).await;
    release(id);
    r.err().unwrap_or(e::NONE)
}

async fn add_claimed(
    host: &TxnHostRc,
    id: &str,
    producer: (i64, i16),
    partitions: Vec<TopicPartition>,
) -> Result<(), TxnCode> {
    let meta = producer_state(id, producer)?;
    if meta.state.is_preparing() {
        return Err(e::CONCURRENT_TRANSACTIONS);
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
    // An open transaction has a start: its timeout counts from there.
    assert!(next.start_ms >= 0, "{id:?} open with no start time");
    tc::log_state(host, id, next).await
}

/// KIP-890 part 1: a transactional batch is written only to a partition its producer's
/// open transaction added (else a hanging transaction could pin the LSO for ever).
fn verify(id: &str, producer: (i64, i16), partition: &TopicPartition) -> TxnCode {
    match producer_state(id, producer) {
        Err(e::PRODUCER_FENCED) => e::INVALID_PRODUCER_EPOCH,
        Err(code) => code,
        Ok(m) if m.state == TxnState::Ongoing && m.partitions.contains(partition) => e::NONE,
        Ok(_) => e::INVALID_TXN_STATE,
    }
}

async fn end_txn(host: &TxnHostRc, id: &str, producer: (i64, i16), commit: bool) -> TxnCode {
    if !claim(id) {
        return e::CONCURRENT_TRANSACTIONS;
    }
    let meta = match producer_state(id, producer) {
        Ok(m) => m,
        Err(code) => {
            release(id);
            return code;
        }
    };
    let code = match (meta.state, commit) {
        (TxnState::Ongoing, _) => return prepare(host, id, meta, commit).await,
        (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => e::NONE,
        (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
            e::CONCURRENT_TRANSACTIONS
        }
        _ => e::INVALID_TXN_STATE,
    };
    release(id);
    code
}

/// Logs Prepare{Commit,Abort} (the decision, durable before the reply, as Kafka answers)
/// and leaves the id busy while the markers are written in the background.
async fn prepare(host: &TxnHostRc, id: &str, meta: TxnMeta, commit: bool) -> TxnCode {
    let mut next = meta;
    next.state = match commit {
        true => TxnState::PrepareCommit,
        false => TxnState::PrepareAbort,
    };
    next.update_ms = crate::time::now_ms();
    assert!(
        next.state.is_preparing(),
        "{id:?} ends through a prepare state"
    );
    if let Err(code) = tc::log_state(host, id, next.clone()).await {
        release(id);
        return code;
    }
    spawn_completion(host.clone(), id.to_string(), next);
    e::NONE
}
