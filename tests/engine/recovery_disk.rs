//! Recovery on the real disk (direct I/O, real files): garbage after the last batch, a
//! truncated last batch, an in-process "kill -9" (no close: zero padding, no index files),
//! damaged or missing index files, leftovers of interrupted operations, and a flipped bit in
//! a sealed segment, which must be reported (file and position), never served.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use shardlog::error::Error;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::log::PartitionLog;
use shardlog::LogConfig;

fn rec(i: i64, len: usize) -> Vec<u8> {
    let v = format!("{i}:{}", "x".repeat(len));
    BatchBuilder::new(len + 100)
        .record(RecordSpec::new(None, Some(v.as_bytes())).timestamp(1_000 + i * 10))
        .build()
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 300,
        ..LogConfig::default()
    }
}

async fn write_n(dir: &Path, n: i64, close: bool) -> Vec<u64> {
    let mut log = PartitionLog::open(dir, config()).await.unwrap();
    let mut sizes = Vec::new();
    for i in 0..n {
        let b = rec(i, 50 + (i as usize * 7) % 90);
        sizes.push(b.len() as u64);
        log.append(&b).await.unwrap();
    }
    log.flush().await.unwrap();
    if close {
        log.close().await.unwrap();
    } else {
        // kill -9: no close, no sealing, no index files for the active segment.
        std::mem::forget(log);
    }
    sizes
}

/// Every record by offset and by timestamp, against what was written.
async fn check_all(log: &mut PartitionLog, n: i64) {
    assert_eq!(log.log_end_offset(), n);
    for i in 0..n {
        let data = log.read(i, 1).await.unwrap().to_bytes();
        let parts = split_batches(&data).unwrap();
        let (s, h) = parts[0];
        assert_eq!(h.base_offset, i);
        let section = RecordsSection::of(&data[s..s + h.size()], &h).unwrap();
        let r = &section.decode().unwrap()[0];
        assert!(r.value.unwrap().starts_with(format!("{i}:").as_bytes()));
        let found = log
            .find_offset_by_timestamp(1_000 + i * 10)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((found.offset, found.timestamp), (i, 1_000 + i * 10));
        let found = log
            .find_offset_by_timestamp(1_000 + i * 10 - 5)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.offset, i);
    }
}

fn active_log(dir: &Path) -> PathBuf {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

#[test]
fn garbage_after_the_last_batch_is_truncated_and_reported() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        write_n(&dir, 40, true).await;
        let active = active_log(&dir);
        let valid = std::fs::metadata(&active).unwrap().len();
        let mut bytes = std::fs::read(&active).unwrap();
        bytes.extend((0..777).map(|i| (i * 31 % 251) as u8 | 1));
        std::fs::write(&active, &bytes).unwrap();
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        let t = &log.recovery_truncations()[0];
        assert_eq!(
            (t.file.clone(), t.position, t.bytes_dropped),
            (active.clone(), valid, 777)
        );
        assert_eq!(std::fs::metadata(&active).unwrap().len(), valid);
        check_all(&mut log, 40).await;
        log.append(&rec(40, 10)).await.unwrap();
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        assert!(log.recovery_truncations().is_empty());
        check_all(&mut log, 41).await;
    });
}

#[test]
fn a_truncated_last_batch_is_dropped() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        let sizes = write_n(&dir, 40, true).await;
        let active = active_log(&dir);
        let len = std::fs::metadata(&active).unwrap().len();
        let last = *sizes.last().unwrap();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&active)
            .unwrap();
        f.set_len(len - last / 2).unwrap();
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        let t = &log.recovery_truncations()[0];
        assert_eq!(t.position, len - last);
        assert!(t.reason.contains("torn write"), "{}", t.reason);
        check_all(&mut log, 39).await;
    });
}

#[test]
fn kill_without_close_recovers_every_flushed_record() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        write_n(&dir, 60, false).await;
        let active = active_log(&dir);
        // The direct-I/O tail is padded to 4 KiB and the active segment has no index files.
        assert_eq!(std::fs::metadata(&active).unwrap().len() % 4096, 0);
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        let t = &log.recovery_truncations()[0];
        assert!(t.reason.contains("zero padding"), "{}", t.reason);
        check_all(&mut log, 60).await;
        // The rebuilt index is as good as one written at close.
        let last = log.segments().last().unwrap();
        let (oi, _) = last.indexes(log.config()).await.unwrap();
        assert!(!oi.is_empty() || last.size() < 300);
    });
}

#[test]
fn damaged_or_missing_index_files_are_rebuilt() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        write_n(&dir, 80, true).await;
        let mut indexes: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e == "index" || e == "timeindex")
            })
            .collect();
        indexes.sort();
        assert!(indexes.len() >= 6);
        // .index of segment 0: garbage of a wrong size; .timeindex of segment 0: entries out
        // of order; .index of segment 1: missing; .timeindex of segment 1: truncated to 0
        // while its log is not empty is still sane (time index may be empty) - keep.
        std::fs::write(&indexes[0], [7u8; 13]).unwrap();
        let ti = std::fs::read(&indexes[1]).unwrap();
        if ti.len() >= 24 {
            let mut swapped = ti[12..24].to_vec();
            swapped.extend_from_slice(&ti[..12]);
            swapped.extend_from_slice(&ti[24..]);
            std::fs::write(&indexes[1], swapped).unwrap();
        }
        std::fs::remove_file(&indexes[2]).unwrap();
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        check_all(&mut log, 80).await;
        assert!(indexes[2].exists(), "missing index rewritten");
    });
}

#[test]
fn leftovers_of_interrupted_operations_are_resolved() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        write_n(&dir, 40, true).await;
        std::fs::write(dir.join("00000000000000099999.index"), [0u8; 8]).unwrap();
        std::fs::write(dir.join("00000000000000099999.timeindex"), [0u8; 12]).unwrap();
        std::fs::write(dir.join("00000000000000000000.log.deleted"), b"old").unwrap();
        std::fs::write(dir.join("00000000000000000000.log.cleaned"), b"half").unwrap();
        std::fs::write(dir.join("recovery-point-offset-checkpoint.tmp"), b"0\n").unwrap();
        // A swap of segment 0 with identical content: completing it must keep the data.
        let seg0 = dir.join("00000000000000000000.log");
        std::fs::copy(&seg0, dir.join("00000000000000000000.log.swap")).unwrap();
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for gone in ["99999", ".deleted", ".cleaned", ".swap", ".tmp"] {
            assert!(
                !names.iter().any(|n| n.contains(gone)),
                "{gone} left in {names:?}"
            );
        }
        check_all(&mut log, 40).await;
    });
}

#[test]
fn a_flipped_bit_in_a_sealed_segment_is_reported_never_served() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        write_n(&dir, 80, true).await;
        let seg0 = dir.join("00000000000000000000.log");
        let mut bytes = std::fs::read(&seg0).unwrap();
        // Flip a bit inside the value of the third batch.
        let mut pos = 0usize;
        for _ in 0..2 {
            let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap()) as usize;
            pos += 12 + len;
        }
        let third = pos;
        bytes[third + 70] ^= 0x08;
        std::fs::write(&seg0, &bytes).unwrap();
        // A clean reopen trusts sealed segments below the recovery point (no rescan)...
        let mut log = PartitionLog::open(&dir, config()).await.unwrap();
        assert!(log.recovery_truncations().is_empty());
        // ...but reads verify every batch's CRC.
        match log.read(2, 1).await {
            Err(Error::Corruption { file, pos, what }) => {
                assert_eq!(file, seg0);
                assert_eq!(pos, third as u64);
                assert!(what.contains("CRC"), "{what}");
            }
            other => panic!("expected a corruption error, got {other:?}"),
        }
        assert!(matches!(
            log.find_offset_by_timestamp(1_000 + 2 * 10).await,
            Err(Error::Corruption { .. })
        ));
        // Everything else stays readable.
        for i in [0, 1, 3, 4, 50, 79] {
            let data = log.read(i, 1).await.unwrap().to_bytes();
            assert_eq!(split_batches(&data).unwrap()[0].1.base_offset, i);
        }
        // A read that starts before it stops short of it: batches 0 and 1 only; the next
        // read, at offset 2, gets the error.
        let data = log.read(0, 1 << 20).await.unwrap().to_bytes();
        let offsets: Vec<i64> = split_batches(&data)
            .unwrap()
            .iter()
            .map(|(_, h)| h.base_offset)
            .collect();
        assert_eq!(offsets, vec![0, 1]);
    });
}

/// The server keeps serving everyone when a fetch hits a corrupt sealed batch.
#[test]
fn server_reports_corrupt_storage_and_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (server, port) = start_server(&dir, 2, |_| {});
    client(move || async move {
        let mut c = shardlog::client::Client::connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        c.create_topic("c", 1, vec![("segment.bytes".into(), "2000".into())])
            .await
            .unwrap();
        for i in 0..30 {
            c.produce("c", 0, shardlog::protocol::ACKS_ALL, rec(i, 100).into())
                .await
                .unwrap();
        }
    });
    server.stop().unwrap();
    let seg0 = dir.join("c-0").join("00000000000000000000.log");
    let mut bytes = std::fs::read(&seg0).unwrap();
    bytes[100] ^= 0x01;
    std::fs::write(&seg0, bytes).unwrap();
    let (server, port) = start_server(&dir, 2, |_| {});
    client(move || async move {
        let mut c = shardlog::client::Client::connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        let err = c.fetch("c", 0, 0, 100).await.unwrap_err();
        assert_eq!(
            err.code(),
            Some(shardlog::protocol::ErrorCode::CorruptStorage)
        );
        assert!(
            err.to_string().contains("00000000000000000000.log"),
            "{err}"
        );
        let f = c.fetch("c", 0, 25, 100).await.unwrap();
        assert!(!f.records.is_empty());
        c.produce("c", 0, shardlog::protocol::ACKS_ALL, rec(30, 10).into())
            .await
            .unwrap();
    });
    server.stop().unwrap();
}

/// The active segment is grown ahead of its writes (so appends overwrite allocated blocks
/// instead of extending the file); a kill leaves zeros past the last batch, which recovery
/// drops, and a seal trims the file to its last byte.
#[test]
fn an_active_segment_is_allocated_ahead_of_its_writes_and_trimmed_when_sealed() {
    run(|tmp| async move {
        let dir = tmp.join("t-0");
        let big = LogConfig {
            segment_bytes: 64 << 20,
            ..config()
        };
        let mut log = PartitionLog::open(&dir, big.clone()).await.unwrap();
        let mut written = 0u64;
        for i in 0..300 {
            let b = rec(i, 10_000);
            written += b.len() as u64;
            log.append(&b).await.unwrap();
        }
        log.flush().await.unwrap();
        let active = active_log(&dir);
        let on_disk = std::fs::metadata(&active).unwrap().len();
        assert!(
            on_disk >= written + (1 << 20) && on_disk.is_multiple_of(4096),
            "{on_disk} bytes on disk for {written} written"
        );
        std::mem::forget(log);
        let mut log = PartitionLog::open(&dir, big.clone()).await.unwrap();
        let t = &log.recovery_truncations()[0];
        assert_eq!((t.position, t.bytes_dropped), (written, on_disk - written));
        assert!(t.reason.contains("zero padding"), "{}", t.reason);
        check_all(&mut log, 300).await;
        log.close().await.unwrap();
        assert_eq!(std::fs::metadata(&active).unwrap().len(), written);
        let mut log = PartitionLog::open(&dir, big).await.unwrap();
        assert!(log.recovery_truncations().is_empty());
        check_all(&mut log, 300).await;
    });
}
