//! How transactions end: the markers of a prepared transaction written into every
//! partition it touched (durable, retried until they are) and then its completion logged;
//! transactions logged Prepare* before a restart completed after the load; Ongoing ones past
//! their timeout aborted under a bumped epoch; ids idle past their expiry forgotten.

use std::rc::Rc;
use std::time::Duration;

use glommio::sync::Semaphore;

use super::code::TxnCode;
use super::coordinator::{self as tc, claim, release};
use super::host::TxnHostRc;
use super::meta::{TxnMeta, TxnState, MAX_EPOCH};
use crate::broker_error::BrokerError;
use crate::format::control::EndTxnMarker;
use crate::TopicPartition;

/// Aborts an Ongoing transaction under the next epoch (a new instance of its id took
/// over, or it timed out): its producer is fenced on every partition by the markers.
pub(super) async fn fence_and_abort(
    host: &TxnHostRc,
    id: &str,
    meta: TxnMeta,
) -> Result<(), TxnCode> {
    let mut next = meta;
    if next.epoch < MAX_EPOCH {
        next.last_epoch = next.epoch;
        next.epoch += 1;
    }
    next.state = TxnState::PrepareAbort;
    next.update_ms = crate::time::now_ms();
    tc::log_state(host, id, next.clone()).await?;
    write_markers(host, id, &next).await;
    Ok(())
}

/// Writes the markers of a prepared transaction, then logs it complete; the id stays busy
/// until then. Retries until every marker is durable (a partition may be briefly
/// unavailable); a restart re-drives it from the logged Prepare* state.
pub(super) fn spawn_completion(host: TxnHostRc, id: String, meta: TxnMeta) {
    crate::tasks::spawn(async move {
        write_markers(&host, &id, &meta).await;
        release(&id);
    })
    .detach();
}

async fn write_markers(host: &TxnHostRc, id: &str, meta: &TxnMeta) {
    // Markers follow a logged decision: a restart re-drives them from it.
    assert!(
        meta.state.is_preparing(),
        "{id:?}: markers without a decision"
    );
    let commit = meta.state == TxnState::PrepareCommit;
    let marker = EndTxnMarker {
        commit,
        coordinator_epoch: 0,
    };
    let producer = (meta.producer_id, meta.epoch);
    for tp in &meta.partitions {
        let mut delay = Duration::from_millis(10);
        loop {
            match write_marker(host, tp, producer, marker).await {
                Ok(()) => break,
                // A deleted topic has nothing left to mark.
                Err(e) if e.code() == crate::protocol::ErrorCode::UnknownTopic => break,
                Err(e) if host.shutting_down() => {
                    tracing::warn!(id, %tp.topic, tp.partition, error = %e.message(), "marker not written before shutdown; the next start writes it");
                    return;
                }
                Err(e) => {
                    tracing::warn!(id, %tp.topic, tp.partition, error = %e.message(), "writing a transaction marker failed; retrying");
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
    if tc::log_state(host, id, done).await.is_err() {
        tracing::warn!(
            id,
            "logging a completed transaction failed; the next start completes it"
        );
    }
}

/// The coordinator's marker for `tp`: written here, or in cluster mode sent to the node
/// that leads `tp` (Kafka's WriteTxnMarkers), which writes it with `write_marker_here`.
pub async fn write_marker(
    host: &TxnHostRc,
    tp: &TopicPartition,
    producer: (i64, i16),
    marker: EndTxnMarker,
) -> Result<(), BrokerError> {
    match host.marker_elsewhere(tp, producer, marker) {
        Some(sent) => sent.await,
        None => write_marker_here(host, tp, producer, marker).await,
    }
}

/// Writes one marker of producer `(id, epoch)` into `tp` on this node, durably; in an
/// offsets partition the group coordinator then applies or drops the offsets sent inside
/// the transaction. WriteTxnMarkers' path (from a coordinator on another node, or an
/// operator ending a hanging transaction): never sent on, so it cannot loop.
pub async fn write_marker_here(
    host: &TxnHostRc,
    tp: &TopicPartition,
    (producer_id, epoch): (i64, i16),
    marker: EndTxnMarker,
) -> Result<(), BrokerError> {
    host.write_marker(tp, (producer_id, epoch), marker).await?;
    let offsets = tp.topic == crate::groups::OFFSETS_TOPIC;
    if offsets && !complete_offsets(host, tp.partition, producer_id, marker.commit).await {
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
async fn complete_offsets(host: &TxnHostRc, p: i32, producer_id: i64, commit: bool) -> bool {
    if host.topic(crate::groups::OFFSETS_TOPIC).is_none() {
        return true;
    }
    let took = host.complete_txn_offsets(p, producer_id, commit).await;
    if !took {
        tracing::warn!(
            p,
            producer_id,
            "completing transactional offsets failed; retrying"
        );
    }
    took
}

/// After a load: transactions logged Prepare* (the coordinator stopped while writing
/// their markers) are completed now.
pub fn finish_prepared(host: &TxnHostRc, p: i32) {
    for id in tc::ids_of_partition(&**host, p) {
        let Some(meta) = tc::get(&id) else { continue };
        if meta.state.is_preparing() && claim(&id) {
            tracing::info!(
                id,
                state = meta.state.name(),
                "completing a prepared transaction after a restart"
            );
            spawn_completion(host.clone(), id, meta);
        }
    }
}

/// Every cleanup interval: Ongoing transactions past their timeout are aborted under a
/// bumped epoch (the late producer's next request is fenced).
pub fn spawn_timeout_scan(host: TxnHostRc) {
    crate::tasks::spawn(async move {
        let every = host
            .settings()
            .transaction_abort_timed_out_transaction_cleanup_interval_ms;
        loop {
            glommio::timer::sleep(Duration::from_millis(every)).await;
            if host.shutting_down() {
                return;
            }
            scan(&host, crate::time::now_ms()).await;
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
async fn scan(host: &TxnHostRc, now: i64) {
    let idle = host.settings().transactional_id_expiration_ms;
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
        let host = host.clone();
        crate::tasks::spawn(async move {
            if abort {
                let producer_id = meta.producer_id;
                tracing::info!(id, producer_id, "aborting a transaction past its timeout");
                let _ = fence_and_abort(&host, &id, meta).await;
            } else {
                tracing::info!(id, "forgetting an idle transactional id");
                let _ = tc::forget(&host, &id).await;
            }
            release(&id);
            drop(slot);
        })
        .detach();
    }
    // Every cleanup of this pass has ended once all slots are free again.
    let _ = slots.acquire(CONCURRENT_CLEANUPS).await;
}
