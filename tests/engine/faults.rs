//! Injected I/O faults through the storage trait (the simulated disk): ENOSPC fails the
//! produce, corrupts nothing, and the partition works again once space is freed; EIO on a
//! write or an fdatasync poisons the partition until it is reopened and recovered; both
//! during plain appends and during a segment roll.

use crate::common;

use common::run;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::sim::{CrashKind, FaultPoint, SimStorage};
use shardlog::log::{OpenOptions, PartitionLog};
use shardlog::{Error, LogConfig};

fn batch(v: &str) -> Vec<u8> {
    BatchBuilder::new(128)
        .record(RecordSpec::new(None, Some(v.as_bytes())).timestamp(1))
        .build()
}

async fn values(log: &mut PartitionLog) -> Vec<String> {
    log.reopen_if_needed().await.unwrap();
    let mut out = Vec::new();
    let mut next = 0;
    while next < log.log_end_offset() {
        let data = log.read(next, 1 << 16).await.unwrap().to_bytes();
        for (s, h) in split_batches(&data).unwrap() {
            for r in RecordsSection::of(&data[s..s + h.size()], &h)
                .unwrap()
                .decode()
                .unwrap()
            {
                if r.offset >= next {
                    out.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
                }
            }
            next = h.last_offset() + 1;
        }
    }
    out
}

async fn open(sim: &SimStorage, config: &LogConfig) -> PartitionLog {
    PartitionLog::open_with(
        sim.as_storage(),
        "/sim/t-0".as_ref(),
        config.clone(),
        OpenOptions::default(),
    )
    .await
    .unwrap()
}

fn is_errno(e: &Error, errno: i32) -> bool {
    match e {
        Error::Io { source, .. } => source.raw_os_error() == Some(errno),
        _ => false,
    }
}

#[test]
fn enospc_fails_the_write_then_the_partition_recovers_when_space_is_freed() {
    run(|_| async move {
        let sim = SimStorage::new();
        let config = LogConfig::default();
        let mut log = open(&sim, &config).await;
        for i in 0..5 {
            log.append(&batch(&format!("ok{i}"))).await.unwrap();
        }
        log.flush().await.unwrap();

        sim.set_disk_full(true);
        log.append(&batch("lost")).await.unwrap(); // staged in memory only
        let err = log.flush().await.unwrap_err();
        assert!(is_errno(&err, libc::ENOSPC), "{err}");
        assert!(err.to_string().contains("No space left"), "{err}");
        assert!(!log.is_poisoned());
        // Still full: a clear error again, nothing written.
        let err = log.append(&batch("also lost")).await.unwrap_err();
        assert!(is_errno(&err, libc::ENOSPC), "{err}");

        sim.set_disk_full(false);
        log.append(&batch("after")).await.unwrap();
        log.sync().await.unwrap();
        assert_eq!(
            values(&mut log).await,
            ["ok0", "ok1", "ok2", "ok3", "ok4", "after"]
        );
        assert_eq!(log.log_end_offset(), 6);
        // And it survives a power loss exactly.
        std::mem::forget(log);
        sim.crash(CrashKind::PowerLoss);
        let mut log = open(&sim, &config).await;
        assert_eq!(
            values(&mut log).await,
            ["ok0", "ok1", "ok2", "ok3", "ok4", "after"]
        );
    });
}

#[test]
fn eio_on_write_or_fdatasync_poisons_until_reopened() {
    for on_sync in [false, true] {
        run(move |_| async move {
            let sim = SimStorage::new();
            let config = LogConfig::default();
            let mut log = open(&sim, &config).await;
            log.append(&batch("a")).await.unwrap();
            log.sync().await.unwrap();
            log.append(&batch("b")).await.unwrap();
            if on_sync {
                sim.fail_at(FaultPoint::Sync, 1, libc::EIO);
                let err = log.sync().await.unwrap_err();
                assert!(is_errno(&err, libc::EIO), "{err}");
            } else {
                sim.fail_at(FaultPoint::Write, 1, libc::EIO);
                let err = log.flush().await.unwrap_err();
                assert!(is_errno(&err, libc::EIO), "{err}");
            }
            assert!(log.is_poisoned());
            // No retry that could report data durable when it is not.
            assert!(matches!(log.sync().await, Err(Error::Poisoned { .. })));
            assert!(matches!(
                log.append(&batch("c")).await,
                Err(Error::Poisoned { .. })
            ));
            assert!(
                log.close().await.is_err(),
                "a poisoned partition does not close cleanly"
            );
            // Reopen = recovery: "a" is there; "b" only if its write reached the disk.
            let mut log = open(&sim, &config).await;
            let got = values(&mut log).await;
            assert_eq!(got[0], "a");
            assert!(got.len() <= 2);
            log.append(&batch("c")).await.unwrap();
            log.sync().await.unwrap();
            assert_eq!(values(&mut log).await.last().unwrap(), "c");
        });
    }
}

/// Each write of a roll (flush of the old tail, index files, checkpoint, the new segment's
/// first flush) fails once, with ENOSPC or EIO: afterwards the log holds exactly the
/// acknowledged records, in order, and keeps working (after a reopen for EIO).
#[test]
fn faults_during_a_roll_lose_nothing_acknowledged() {
    for (errno, on_sync, pre_flush) in [
        (libc::ENOSPC, false, true),
        (libc::ENOSPC, false, false),
        (libc::EIO, false, true),
        (libc::EIO, false, false),
        (libc::EIO, true, false),
    ] {
        for nth in 1..=7u64 {
            run(move |_| async move {
                let sim = SimStorage::new();
                let one = batch("r-00");
                let config = LogConfig {
                    segment_bytes: 3 * one.len() as u64,
                    ..LogConfig::default()
                };
                let mut log = open(&sim, &config).await;
                let mut acked: Vec<String> = Vec::new();
                let mut pending = Vec::new();
                for i in 0..3 {
                    let v = format!("r-{i:02}");
                    log.append(&batch(&v)).await.unwrap();
                    pending.push(v);
                }
                let mut acked_flushed = |a: &mut Vec<String>| a.append(&mut pending);
                if pre_flush {
                    log.flush().await.unwrap();
                    acked_flushed(&mut acked);
                }
                let writes_before = if on_sync {
                    sim.count(FaultPoint::Sync)
                } else {
                    sim.count(FaultPoint::Write)
                };
                if on_sync {
                    sim.fail_at(FaultPoint::Sync, nth, errno);
                } else {
                    sim.fail_at(FaultPoint::Write, nth, errno);
                }
                // This append rolls (the segment is full) and the flush writes the new tail.
                let r = async {
                    log.append(&batch("r-03")).await?;
                    log.flush().await
                }
                .await;
                let writes_used = if on_sync {
                    sim.count(FaultPoint::Sync)
                } else {
                    sim.count(FaultPoint::Write)
                } - writes_before;
                sim.clear_faults();
                let rolled_ok = r.is_ok();
                if nth > writes_used {
                    assert!(rolled_ok, "the fault was never hit, yet the roll failed");
                }
                if rolled_ok {
                    acked_flushed(&mut acked);
                    acked.push("r-03".into());
                } else {
                    let e = r.unwrap_err();
                    assert!(
                        is_errno(&e, errno) || matches!(e, Error::Poisoned { .. }),
                        "errno {errno} write {nth}: {e}"
                    );
                }
                if errno == libc::EIO && !rolled_ok {
                    assert!(log.is_poisoned(), "write {nth}");
                    std::mem::forget(log);
                    sim.crash(CrashKind::ProcessKill);
                    log = open(&sim, &config).await;
                }
                let got = values(&mut log).await;
                assert!(
                    got.len() >= acked.len() && got.len() <= 4,
                    "errno {errno} write {nth}: {got:?}"
                );
                let expected_prefix: Vec<String> =
                    (0..got.len()).map(|i| format!("r-{i:02}")).collect();
                assert_eq!(got, expected_prefix, "errno {errno} write {nth}");
                assert_eq!(got[..acked.len()], acked[..], "errno {errno} write {nth}");
                // The partition keeps working.
                log.append(&batch("after")).await.unwrap();
                log.sync().await.unwrap();
                let mut all = values(&mut log).await;
                assert_eq!(all.pop().unwrap(), "after");
                assert_eq!(all, got, "errno {errno} write {nth}");
            });
        }
    }
}

/// A partition of three sealed segments (every batch indexed) and an active one, reopened
/// with a page cache that is then emptied, so every read goes to the simulated device.
async fn sealed_partition(sim: &SimStorage) -> (PartitionLog, LogConfig, u64) {
    let (log, config, one, _) = sealed_partition_and_cache(sim).await;
    (log, config, one)
}

/// `sealed_partition`, and the page cache it reads through.
async fn sealed_partition_and_cache(
    sim: &SimStorage,
) -> (PartitionLog, LogConfig, u64, shardlog::io::SharedPageCache) {
    let one = batch("r-00").len() as u64;
    let config = LogConfig {
        segment_bytes: 10 * one,
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let mut log = open(sim, &config).await;
    for i in 0..35 {
        log.append(&batch(&format!("r-{i:02}"))).await.unwrap();
    }
    log.close().await.unwrap();
    let cache = shardlog::io::PageCache::shared(1 << 20);
    let log = PartitionLog::open_with(
        sim.as_storage(),
        "/sim/t-0".as_ref(),
        config.clone(),
        OpenOptions {
            clean_shutdown: true,
            cache: Some(cache.clone()),
            ..OpenOptions::default()
        },
    )
    .await
    .unwrap();
    cache.borrow_mut().clear();
    (log, config, one, cache)
}

fn all_values() -> Vec<String> {
    (0..35).map(|i| format!("r-{i:02}")).collect()
}

/// Reads that fail with EIO surface as I/O errors naming the file; nothing is poisoned and
/// the same read succeeds once the device answers again.
#[test]
fn a_failed_read_names_the_file_and_poisons_nothing() {
    run(|_| async move {
        let sim = SimStorage::new();
        let (mut log, _, _) = sealed_partition(&sim).await;
        for offset in [0, 12, 25] {
            sim.fail_at(FaultPoint::Read, 1, libc::EIO);
            let err = log.read(offset, 1 << 16).await.unwrap_err();
            assert!(is_errno(&err, libc::EIO), "{err}");
            assert!(err.to_string().contains("/sim/t-0/000"), "{err}");
            assert!(!log.is_poisoned());
        }
        assert_eq!(values(&mut log).await, all_values());
    });
}

/// Bits flipped on the way from the device (a bad sector, a bus error) are caught by the
/// CRC: the read serves the batches before the damaged one, then reports the damaged one
/// by file and position. Nothing damaged stays in the page cache: once the flips stop, the
/// same reads return the right records.
#[test]
fn flipped_bits_in_a_read_are_reported_by_file_and_position_and_not_cached() {
    run(|_| async move {
        let sim = SimStorage::new();
        let (mut log, _, one) = sealed_partition(&sim).await;
        let seg = std::path::Path::new("/sim/t-0/00000000000000000010.log");
        // Batch 13 (the fourth of the second segment), a byte inside its records.
        let batch_pos = 3 * one;
        sim.corrupt_reads(seg, batch_pos + one - 3..batch_pos + one - 2);
        let served = log.read(10, 1 << 16).await.unwrap().to_bytes();
        assert_eq!(
            split_batches(&served).unwrap().len(),
            3,
            "the batches before it"
        );
        match log.read(13, 1 << 16).await.unwrap_err() {
            Error::Corruption { file, pos, what } => {
                assert_eq!((file.as_path(), pos), (seg, batch_pos), "{what}");
            }
            other => panic!("expected a corruption error, got {other}"),
        }
        sim.clear_faults();
        assert_eq!(values(&mut log).await, all_values());
    });
}

/// A batch whose CRC was checked while cached is not checked again while those bytes stay
/// cached, but the check never outlives them: once the cache drops them, bits flipped on the
/// next device read are caught as on the first.
#[test]
fn a_crc_checked_in_cached_bytes_is_checked_again_after_they_leave_the_cache() {
    run(|_| async move {
        let sim = SimStorage::new();
        let (mut log, _, one, cache) = sealed_partition_and_cache(&sim).await;
        let seg = std::path::Path::new("/sim/t-0/00000000000000000010.log");
        assert_eq!(values(&mut log).await, all_values()); // checked and cached
        sim.corrupt_reads(seg, 3 * one + one - 3..3 * one + one - 2);
        // Served from the cache: the device's flips are not seen.
        assert_eq!(values(&mut log).await, all_values());
        cache.borrow_mut().clear();
        match log.read(13, 1 << 16).await.unwrap_err() {
            Error::Corruption { file, pos, .. } => {
                assert_eq!((file.as_path(), pos), (seg, 3 * one))
            }
            other => panic!("expected a corruption error, got {other}"),
        }
        sim.clear_faults();
        assert_eq!(values(&mut log).await, all_values());
    });
}

/// A damaged page of a sealed segment's offset or time index, read lazily long after the
/// segment was loaded, is checked like a loaded index: an error naming the index file,
/// never a wrong position or a panic; healthy again once the reads are.
#[test]
fn a_damaged_index_page_is_reported_not_trusted() {
    for suffix in ["index", "timeindex"] {
        run(move |_| async move {
            let sim = SimStorage::new();
            let (mut log, _, _) = sealed_partition(&sim).await;
            // Lookups by time stop in the first segment (every timestamp is 1).
            let base = if suffix == "index" { 10 } else { 0 };
            let index = format!("/sim/t-0/{base:020}.{suffix}");
            let index = std::path::Path::new(&index);
            sim.corrupt_reads(index, 0..8);
            let err = if suffix == "index" {
                log.read(14, 1 << 16).await.map(|_| ()).unwrap_err()
            } else {
                log.find_offset_by_timestamp(1)
                    .await
                    .map(|_| ())
                    .unwrap_err()
            };
            match &err {
                Error::Corruption { file, .. } => assert_eq!(file, index, "{err}"),
                other => panic!("{suffix}: expected a corruption error, got {other}"),
            }
            sim.clear_faults();
            assert_eq!(values(&mut log).await, all_values());
        });
    }
}
