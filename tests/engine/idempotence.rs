//! Idempotent producers through the real partition log: a retried batch is answered with its
//! original offsets and not stored twice, sequence gaps and fenced epochs are refused and
//! change nothing, and the producer state survives a clean restart, a roll, and a crash
//! (process kill and power loss on the simulated disk).

use crate::common;

use common::sim_log::open_sim;

use shardlog::error::Error;
use shardlog::format::batch::set_producer;
use shardlog::format::compression::Codec;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::sim::{CrashKind, SimStorage};
use shardlog::log::PartitionLog;
use shardlog::LogConfig;

/// A batch of `n` records from producer `pid`/`epoch` starting at sequence `seq`.
fn batch(pid: i64, epoch: i16, seq: i32, n: usize, codec: Codec) -> Vec<u8> {
    let values: Vec<String> = (0..n).map(|i| format!("{seq}+{i}")).collect();
    let mut b = BatchBuilder::new(256).compression(codec);
    for v in &values {
        b.push(RecordSpec::new(Some(b"k"), Some(v.as_bytes())).timestamp(1_000));
    }
    let mut bytes = b.build();
    set_producer(&mut bytes, pid, epoch, seq);
    bytes
}

async fn append(log: &mut PartitionLog, b: &[u8]) -> shardlog::Result<(i64, i64)> {
    log.append(b).await.map(|i| (i.base_offset, i.last_offset))
}

#[test]
fn retries_are_not_stored_twice_and_gaps_and_fenced_epochs_are_refused() {
    common::run(|dir| async move {
        let config = LogConfig::default();
        let path = dir.join("t-0");
        let mut log = PartitionLog::open(&path, config.clone()).await.unwrap();
        let first = batch(5, 0, 0, 3, Codec::Zstd);
        assert_eq!(append(&mut log, &first).await.unwrap(), (0, 2));
        // A retry of the same batch: the original offsets, nothing written.
        assert_eq!(append(&mut log, &first).await.unwrap(), (0, 2));
        assert_eq!(log.log_end_offset(), 3);
        assert_eq!(
            append(&mut log, &batch(5, 0, 3, 2, Codec::None))
                .await
                .unwrap(),
            (3, 4)
        );
        let gap = append(&mut log, &batch(5, 0, 9, 1, Codec::None))
            .await
            .unwrap_err();
        assert!(
            matches!(
                gap,
                Error::OutOfOrderSequence {
                    expected: 5,
                    found: 9,
                    ..
                }
            ),
            "{gap}"
        );
        // A bumped epoch starts at 0 and fences the old one.
        assert_eq!(
            append(&mut log, &batch(5, 1, 0, 1, Codec::None))
                .await
                .unwrap(),
            (5, 5)
        );
        let fenced = append(&mut log, &batch(5, 0, 5, 1, Codec::None))
            .await
            .unwrap_err();
        assert!(
            matches!(fenced, Error::InvalidProducerEpoch { current: 1, .. }),
            "{fenced}"
        );
        assert_eq!(log.log_end_offset(), 6);
        // Non-idempotent batches are never deduplicated.
        let plain = BatchBuilder::new(64)
            .record(RecordSpec::new(None, Some(b"x")).timestamp(1))
            .build();
        assert_eq!(append(&mut log, &plain).await.unwrap(), (6, 6));
        assert_eq!(append(&mut log, &plain).await.unwrap(), (7, 7));
        // The state survives a clean restart and a roll.
        log.roll_now().await.unwrap();
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&path, config).await.unwrap();
        assert_eq!(
            append(&mut log, &batch(5, 1, 0, 1, Codec::None))
                .await
                .unwrap(),
            (5, 5)
        );
        assert!(append(&mut log, &batch(5, 0, 5, 1, Codec::None))
            .await
            .is_err());
        assert_eq!(
            append(&mut log, &batch(5, 1, 1, 1, Codec::None))
                .await
                .unwrap(),
            (8, 8)
        );
        log.close().await.unwrap();
    });
}

/// After a crash, the state is rebuilt from the last snapshot plus the log after it: a
/// retry of any durable batch is still recognised, whichever way the machine died.
#[test]
fn the_producer_state_is_rebuilt_after_a_crash() {
    for kind in [CrashKind::ProcessKill, CrashKind::PowerLoss] {
        common::run(move |_| async move {
            let sim = SimStorage::new();
            let mut log = open_sim(&sim).await;
            for seq in 0..4 {
                let b = batch(9, 0, seq * 2, 2, Codec::Gzip);
                assert_eq!(append(&mut log, &b).await.unwrap().0, seq as i64 * 2);
                if seq == 1 {
                    // A snapshot at the roll, then two more batches after it.
                    log.roll_now().await.unwrap();
                }
            }
            log.sync().await.unwrap();
            sim.crash(kind);
            drop(log);
            let mut log = open_sim(&sim).await;
            assert_eq!(log.log_end_offset(), 8, "{kind:?}");
            for seq in 0..4 {
                // The last 5 batches are remembered: each retry gets its original offsets.
                let b = batch(9, 0, seq * 2, 2, Codec::Gzip);
                let at = seq as i64 * 2;
                assert_eq!(
                    append(&mut log, &b).await.unwrap(),
                    (at, at + 1),
                    "{kind:?}"
                );
            }
            let next = batch(9, 0, 8, 1, Codec::None);
            assert_eq!(append(&mut log, &next).await.unwrap(), (8, 8), "{kind:?}");
        });
    }
}
