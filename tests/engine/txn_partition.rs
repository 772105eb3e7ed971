//! A partition's side of transactions through the real partition log: transactional batches
//! hold the last stable offset until their marker, aborted transactions are indexed in
//! Kafka's `.txnindex` (34-byte entries, in the segment holding the marker) and found by a
//! read's range, zombies and misuse are refused and change nothing, and everything is
//! rebuilt after a roll, a clean close and a crash (process kill and power loss on the
//! simulated disk), with an undecided transaction still holding the LSO.

use crate::common;

use common::sim_log::open_sim;

use shardlog::error::Error;
use shardlog::format::batch::{set_producer, set_transactional};
use shardlog::format::control::{read_marker, EndTxnMarker};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::sim::{CrashKind, SimStorage};
use shardlog::log::txn_index::{AbortedTxns, TXN_INDEX_SUFFIX};
use shardlog::log::PartitionLog;
use shardlog::LogConfig;

/// `n` records of producer `pid`/`epoch` from sequence `seq`, transactional or not.
fn batch(pid: i64, epoch: i16, seq: i32, n: usize, transactional: bool) -> Vec<u8> {
    let keys: Vec<String> = (0..n)
        .map(|i| format!("k{}", (seq as usize + i) % 3))
        .collect();
    let mut b = BatchBuilder::new(256);
    for key in &keys {
        b.push(
            RecordSpec::new(Some(key.as_bytes()), Some(b"v")).timestamp(shardlog::time::now_ms()),
        );
    }
    let mut bytes = b.build();
    set_producer(&mut bytes, pid, epoch, seq);
    if transactional {
        set_transactional(&mut bytes);
    }
    bytes
}

fn commit() -> EndTxnMarker {
    EndTxnMarker {
        commit: true,
        coordinator_epoch: 0,
    }
}

fn abort() -> EndTxnMarker {
    EndTxnMarker {
        commit: false,
        coordinator_epoch: 0,
    }
}

async fn txn(log: &mut PartitionLog, pid: i64, seq: i32, n: usize) -> i64 {
    let b = batch(pid, 0, seq, n, true);
    log.append_transactional(&b).await.unwrap().base_offset
}

#[test]
fn open_transactions_hold_the_lso_and_their_markers_release_it() {
    common::run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), LogConfig::default())
            .await
            .unwrap();
        // A client cannot write transactional or control batches outside a transaction.
        let e = log.append(&batch(1, 0, 0, 1, true)).await.unwrap_err();
        assert!(matches!(e, Error::InvalidBatch { .. }), "{e}");
        assert_eq!(log.log_end_offset(), 0, "nothing written");
        let a = txn(&mut log, 1, 0, 2).await;
        log.append(&batch(2, 0, 0, 3, false)).await.unwrap();
        let c = txn(&mut log, 3, 0, 1).await;
        assert_eq!(
            log.last_stable_offset(),
            a,
            "producer 1's transaction is open"
        );
        // Producer 1 may not write outside its open transaction.
        let e = log.append(&batch(1, 0, 2, 1, false)).await.unwrap_err();
        assert!(matches!(e, Error::InvalidTxnState { .. }), "{e}");
        log.append_marker(1, 0, commit()).await.unwrap();
        assert_eq!(
            log.last_stable_offset(),
            c,
            "now producer 3's is the first open"
        );
        let marker = log.append_marker(3, 0, abort()).await.unwrap().base_offset;
        assert_eq!(log.last_stable_offset(), log.log_end_offset());
        assert_eq!(log.aborted_transactions(0, marker + 1), vec![(3, c)]);
        assert_eq!(
            log.aborted_transactions(0, c),
            vec![],
            "a read ending before it"
        );
        assert_eq!(
            log.aborted_transactions(marker + 1, 100),
            vec![],
            "a read after it"
        );
        // A zombie's marker (an older epoch than the partition has seen) is refused.
        log.append_marker(1, 4, abort()).await.unwrap();
        let end = log.log_end_offset();
        let e = log.append_marker(1, 3, commit()).await.unwrap_err();
        assert!(matches!(e, Error::InvalidProducerEpoch { .. }), "{e}");
        assert_eq!(log.log_end_offset(), end, "nothing written");
        // The marker is a control batch Kafka's readers recognise.
        let data = log.read(marker, 1 << 20).await.unwrap().to_bytes();
        assert_eq!(read_marker(&data), Some(abort()));
        let data = log.read(end - 1, 1 << 20).await.unwrap().to_bytes();
        assert_eq!(
            read_marker(&data),
            Some(abort()),
            "the zombie fence's marker"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn aborted_transactions_are_indexed_per_segment_and_survive_a_restart() {
    common::run(|dir| async move {
        let path = dir.join("t-0");
        let mut log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        let first = txn(&mut log, 7, 0, 2).await;
        let m1 = log.append_marker(7, 0, abort()).await.unwrap().base_offset;
        log.roll_now().await.unwrap();
        let second = txn(&mut log, 8, 0, 1).await;
        let m2 = log.append_marker(8, 0, abort()).await.unwrap().base_offset;
        let committed = txn(&mut log, 9, 0, 1).await;
        log.append_marker(9, 0, commit()).await.unwrap();
        let open = txn(&mut log, 10, 0, 1).await;
        let before = log.aborted_transactions(0, i64::MAX);
        assert_eq!(before, vec![(7, first), (8, second)]);
        assert!(committed > second);
        log.close().await.unwrap();
        // The sealed segment's file holds its one entry, in Kafka's 34 bytes.
        let sealed = path.join(format!("{:020}{TXN_INDEX_SUFFIX}", 0));
        let names: Vec<_> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let bytes = std::fs::read(&sealed).unwrap_or_else(|e| panic!("{e}: {names:?}"));
        let entries = AbortedTxns::parse_file(&bytes).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!((entries[0].producer_id, entries[0].last_offset), (7, m1));
        let log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        assert_eq!(log.aborted_transactions(0, i64::MAX), before);
        assert_eq!(log.aborted_transactions(m2 + 1, i64::MAX), vec![]);
        assert_eq!(
            log.last_stable_offset(),
            open,
            "the open one still holds the LSO"
        );
        log.close().await.unwrap();
    });
}

/// After a crash the index and the open transactions come back from the last snapshot's
/// segment files plus a replay of the log after it, whichever way the machine died.
#[test]
fn a_crash_keeps_aborted_transactions_indexed_and_undecided_ones_open() {
    for kind in [CrashKind::ProcessKill, CrashKind::PowerLoss] {
        common::run(move |_| async move {
            let sim = SimStorage::new();
            let mut log = open_sim(&sim).await;
            let early = txn(&mut log, 1, 0, 1).await;
            log.append_marker(1, 0, abort()).await.unwrap();
            // Producer 2's transaction spans the roll (and the snapshot it writes).
            let spanning = txn(&mut log, 2, 0, 1).await;
            log.roll_now().await.unwrap();
            txn(&mut log, 2, 1, 1).await;
            log.append_marker(2, 0, abort()).await.unwrap();
            let undecided = txn(&mut log, 3, 0, 2).await;
            log.sync().await.unwrap();
            sim.crash(kind);
            drop(log);
            let mut log = open_sim(&sim).await;
            assert_eq!(
                log.aborted_transactions(0, i64::MAX),
                vec![(1, early), (2, spanning)],
                "{kind:?}"
            );
            assert_eq!(log.last_stable_offset(), undecided, "{kind:?}");
            log.append_marker(3, 0, abort()).await.unwrap();
            assert_eq!(log.last_stable_offset(), log.log_end_offset());
            assert_eq!(
                log.aborted_transactions(undecided, i64::MAX),
                vec![(3, undecided)]
            );
        });
    }
}

/// Kafka's cleaner rules for transactional data: an aborted transaction's records go
/// whatever their keys and never shadow a committed value of the same key; a marker stays
/// while its transaction has records left, and once none is it is stamped with a delete
/// horizon and removed by a cleaning after it (KIP-534).
#[test]
fn compaction_drops_aborted_records_and_keeps_committed_values_and_markers() {
    common::run(|dir| async move {
        let mut config = LogConfig::default();
        config.cleanup_policy = shardlog::config::CleanupPolicy::parse("compact").unwrap();
        config.min_cleanable_dirty_ratio = 0.0;
        config.delete_retention_ms = 0;
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        // k0 committed by producer 1, then written again by producer 2's aborted transaction.
        txn(&mut log, 1, 0, 1).await;
        log.append_marker(1, 0, commit()).await.unwrap();
        let aborted = txn(&mut log, 2, 0, 1).await;
        log.append_marker(2, 0, abort()).await.unwrap();
        log.roll_now().await.unwrap();
        let end = log.log_end_offset();
        let stats = clean(&mut log).await;
        assert_eq!(stats.records_removed, 1, "{stats:?}");
        assert_eq!(log.log_end_offset(), end);
        // The committed record and both markers remain; the aborted record is gone, and
        // its marker, with nothing left of its transaction, carries a delete horizon.
        let batches = batches_of(&mut log).await;
        let shape: Vec<(i64, bool, bool)> =
            batches.iter().map(|b| (b.0, b.1, b.2.is_some())).collect();
        let want = vec![(0, false, false), (1, true, false), (3, true, true)];
        assert_eq!(shape, want, "aborted at {aborted}");
        // A cleaning after the horizon removes that marker; the other stays.
        clean(&mut log).await;
        let left: Vec<(i64, bool)> = batches_of(&mut log)
            .await
            .iter()
            .map(|b| (b.0, b.1))
            .collect();
        assert_eq!(left, vec![(0, false), (1, true)]);
        assert_eq!(log.log_end_offset(), end, "the log end never moves back");
        log.close().await.unwrap();
    });
}

async fn clean(log: &mut PartitionLog) -> shardlog::log::CleanStats {
    let plan = log
        .cleaning_plan(shardlog::time::now_ms(), true)
        .await
        .unwrap();
    let done = plan.expect("due").run(Default::default()).await.unwrap();
    log.commit_cleaning(done).await.unwrap()
}

/// (base offset, control, delete horizon) of every batch from the log start.
async fn batches_of(log: &mut PartitionLog) -> Vec<(i64, bool, Option<i64>)> {
    let data = log
        .read(log.log_start_offset(), 1 << 20)
        .await
        .unwrap()
        .to_bytes();
    shardlog::format::batch::split_batches(&data)
        .unwrap()
        .into_iter()
        .map(|(_, h)| (h.base_offset, h.is_control(), h.delete_horizon_ms()))
        .collect()
}

/// A transactional append is one verified producer's: a batch of another producer behind
/// it (nobody verified it, no coordinator would ever end its transaction) refuses the
/// whole append, and the last stable offset stays where it was.
#[test]
fn a_transactional_append_with_another_producers_batch_is_refused_whole() {
    common::run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), LogConfig::default())
            .await
            .unwrap();
        let mut two = batch(1, 0, 0, 2, true);
        two.extend_from_slice(&batch(9, 0, 0, 1, true));
        let e = log.append_transactional(&two).await.unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidBatch {
                    source: shardlog::format::BatchError::ForeignProducer { found_id: 9, .. },
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(log.log_end_offset(), 0, "nothing written");
        assert_eq!(log.last_stable_offset(), 0);
        // The same producer's batches may come together.
        let mut same = batch(1, 0, 0, 2, true);
        same.extend_from_slice(&batch(1, 0, 2, 1, true));
        log.append_transactional(&same).await.unwrap();
        assert_eq!(log.log_end_offset(), 3);
    });
}
