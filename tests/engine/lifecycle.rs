//! Retention, DeleteRecords and compaction on the real engine (real files, io_uring, direct
//! I/O), checked against Kafka's rules and against a model (a plain list of records).

use crate::common;

use common::*;
use shardlog::config::CleanupPolicy;
use shardlog::error::Error;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::log::{CleanerLimits, PartitionLog};
use shardlog::LogConfig;

const HOUR: i64 = 3_600_000;

/// Every record from the log start as (offset, key, value, timestamp).
type Row = (i64, Option<Vec<u8>>, Option<Vec<u8>>, i64);

async fn all_records(log: &mut PartitionLog) -> Vec<Row> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    while next < log.visible_end_offset() {
        let data = log.read(next, 1 << 20).await.unwrap().to_bytes();
        if data.is_empty() {
            break;
        }
        for (start, h) in split_batches(&data).unwrap() {
            let bytes = &data[start..start + h.size()];
            for r in RecordsSection::of(bytes, &h).unwrap().decode().unwrap() {
                if r.offset >= next {
                    out.push((
                        r.offset,
                        r.key.map(<[u8]>::to_vec),
                        r.value.map(<[u8]>::to_vec),
                        r.timestamp,
                    ));
                }
            }
            next = h.last_offset() + 1;
        }
    }
    out
}

fn keyed(key: &str, value: Option<&str>, ts: i64) -> Vec<u8> {
    BatchBuilder::new(128)
        .record(RecordSpec::new(Some(key.as_bytes()), value.map(str::as_bytes)).timestamp(ts))
        .build()
}

fn files_ending(dir: &std::path::Path, suffix: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(suffix)
        })
        .count()
}

fn small_segments(policy: CleanupPolicy) -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        cleanup_policy: policy,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

#[test]
fn time_retention_empties_an_idle_partition_the_kafka_way() {
    run(|dir| async move {
        let pdir = dir.join("t-0");
        let now = shardlog::time::now_ms();
        let config = LogConfig {
            retention_ms: 60_000,
            file_delete_delay_ms: 60_000,
            ..small_segments(CleanupPolicy::Delete)
        };
        let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
        for i in 0..12 {
            log.append(&single(now - 48 * HOUR + i, 100)).await.unwrap();
        }
        log.flush().await.unwrap();
        let segments = log.segments().len();
        assert!(segments > 3, "{segments} segments");
        let out = log.apply_retention(now).await.unwrap();
        // Every segment qualified, the active one too: rolled, then all deleted.
        assert_eq!(out.segments_deleted, segments);
        assert_eq!(log.segments().len(), 1);
        assert_eq!(log.log_start_offset(), 12);
        assert_eq!(log.log_end_offset(), 12);
        match log.read(3, 1000).await {
            Err(Error::OffsetOutOfRange { log_start: 12, .. }) => {}
            other => panic!("{other:?}"),
        }
        // Renamed, waiting for file.delete.delay.ms.
        assert_eq!(files_ending(&pdir, ".log.deleted"), segments);
        assert_eq!(log.remove_due_files(now + 59_000).await, 0);
        assert!(log.remove_due_files(now + 60_000).await >= segments);
        assert_eq!(files_ending(&pdir, ".deleted"), 0);
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&pdir, config).await.unwrap();
        assert_eq!(log.log_start_offset(), 12);
        log.append(&single(now, 10)).await.unwrap();
        assert_eq!(all_records(&mut log).await.len(), 1);
        log.close().await.unwrap();
    });
}

#[test]
fn time_retention_stops_at_the_first_segment_that_does_not_qualify() {
    run(|dir| async move {
        let now = shardlog::time::now_ms();
        let config = LogConfig {
            retention_ms: HOUR,
            ..small_segments(CleanupPolicy::Delete)
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        // Old, then one recent record, then old again (out of order).
        let stamps: Vec<i64> = (0..6)
            .map(|i| now - 2 * HOUR + i)
            .chain([now])
            .chain((0..6).map(|i| now - 3 * HOUR + i))
            .collect();
        for t in &stamps {
            log.append(&single(*t, 100)).await.unwrap();
        }
        log.flush().await.unwrap();
        log.apply_retention(now).await.unwrap();
        let first = log.log_start_offset();
        let left: Vec<i64> = all_records(&mut log).await.iter().map(|r| r.3).collect();
        assert!(left.contains(&now), "the recent record stays");
        // What remains starts with the segment holding the recent record.
        let seg_of_recent = log
            .segments()
            .iter()
            .position(|s| s.max_timestamp() == now)
            .unwrap();
        assert_eq!(seg_of_recent, 0, "start {first}");
        log.close().await.unwrap();
    });
}

#[test]
fn size_retention_keeps_the_newest_bytes() {
    run(|dir| async move {
        let now = shardlog::time::now_ms();
        let config = LogConfig {
            retention_bytes: 1000,
            segment_bytes: 1000,
            ..small_segments(CleanupPolicy::Delete)
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for i in 0..40 {
            log.append(&single(now + i, 100)).await.unwrap();
        }
        log.flush().await.unwrap();
        let total = log.size_bytes();
        let sizes: Vec<u64> = log.segments().iter().map(|s| s.size()).collect();
        // Kafka's rule: delete the oldest while total - retention.bytes >= its size.
        let mut excess = total as i64 - 1000;
        let expect = sizes
            .iter()
            .take_while(|&&s| {
                let ok = excess - s as i64 >= 0;
                if ok {
                    excess -= s as i64;
                }
                ok
            })
            .count();
        let out = log.apply_retention(now).await.unwrap();
        assert_eq!(out.segments_deleted, expect);
        assert!(log.size_bytes() >= 1000 && log.size_bytes() < 1000 + sizes[0]);
        assert_eq!(log.log_start_offset(), log.segments()[0].base_offset());
        log.close().await.unwrap();
    });
}

#[test]
fn delete_records_moves_the_start_and_retention_drops_segments_below_it() {
    run(|dir| async move {
        let pdir = dir.join("t-0");
        let now = shardlog::time::now_ms();
        let config = small_segments(CleanupPolicy::Compact);
        let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
        for i in 0..30 {
            log.append(&keyed(&format!("k{i}"), Some("v"), now + i))
                .await
                .unwrap();
        }
        log.flush().await.unwrap();
        assert!(matches!(
            log.delete_records_before(31).await,
            Err(Error::OffsetOutOfRange { .. })
        ));
        assert_eq!(log.delete_records_before(17).await.unwrap(), 17);
        // Never backwards.
        assert_eq!(log.delete_records_before(5).await.unwrap(), 17);
        let before = log.segments().len();
        // Start-offset retention applies to compacted topics too.
        let out = log.apply_retention(now).await.unwrap();
        assert!(out.segments_deleted > 0 && log.segments().len() < before);
        assert!(log.segments()[0].base_offset() <= 17);
        assert_eq!(log.log_start_offset(), 17);
        let first = all_records(&mut log).await[0].0;
        assert_eq!(first, 17);
        // A lookup by a timestamp below the start answers from the start.
        let found = log.find_offset_by_timestamp(now).await.unwrap().unwrap();
        assert_eq!(found.offset, 17);
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&pdir, config).await.unwrap();
        assert_eq!(log.log_start_offset(), 17);
        assert_eq!(all_records(&mut log).await.len(), 13);
        log.close().await.unwrap();
    });
}

#[test]
fn a_compacted_topic_refuses_records_without_a_key_and_writes_nothing() {
    run(|dir| async move {
        let config = small_segments(CleanupPolicy::Compact);
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        let mut two = keyed("a", Some("1"), 1);
        two.extend(batch_with_timestamps(&[2]));
        let e = log.append(&two).await.unwrap_err();
        assert!(matches!(e, Error::CompactedTopicNullKey { .. }), "{e}");
        assert!(e
            .to_string()
            .contains("Compacted topic cannot accept message without key"));
        assert_eq!(log.log_end_offset(), 0);
        log.close().await.unwrap();
    });
}

/// Kafka's example: keys 0,1,0,1,0 at offsets 0..4; after cleaning, [3, 4] remain (plus
/// the active segment, which is never cleaned).
#[test]
fn compaction_keeps_the_latest_record_per_key() {
    run(|dir| async move {
        let now = shardlog::time::now_ms();
        let config = LogConfig {
            segment_bytes: 1 << 20,
            ..small_segments(CleanupPolicy::Compact)
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for (i, k) in ["0", "1", "0", "1", "0"].iter().enumerate() {
            log.append(&keyed(k, Some(&format!("v{i}")), now))
                .await
                .unwrap();
        }
        log.flush().await.unwrap();
        let end = log.log_end_offset();
        log.delete_records_before(0).await.unwrap();
        // Roll so the five records are cleanable.
        log.roll_now().await.unwrap();
        let stats = log
            .clean_now(now, CleanerLimits::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((stats.records_kept, stats.records_removed), (2, 3));
        let offsets: Vec<i64> = all_records(&mut log).await.iter().map(|r| r.0).collect();
        assert_eq!(offsets, vec![3, 4]);
        assert_eq!(log.log_end_offset(), end);
        log.close().await.unwrap();
    });
}

/// The model: which records a full cleaning keeps. Records at or past `clean_end` (the
/// active segment) stay; below it, the last record of each key stays, unless it is a
/// tombstone whose horizon passed.
fn model_after_cleaning(all: &[Row], clean_end: i64, tombstones_expired: bool) -> Vec<Row> {
    let mut last = std::collections::HashMap::new();
    for r in all.iter().filter(|r| r.0 < clean_end) {
        last.insert(r.1.clone(), r.0);
    }
    all.iter()
        .filter(|r| {
            r.0 >= clean_end || (last[&r.1] == r.0 && !(r.2.is_none() && tombstones_expired))
        })
        .cloned()
        .collect()
}

#[test]
fn random_compaction_and_delete_records_match_the_model_with_a_tiny_key_map() {
    for seed in 0..4u64 {
        run(move |dir| async move {
            let mut rng = fastrand::Rng::with_seed(seed);
            let pdir = dir.join("t-0");
            let now = shardlog::time::now_ms();
            let config = LogConfig {
                segment_bytes: 300 + rng.u64(0..600),
                delete_retention_ms: HOUR,
                ..small_segments(CleanupPolicy::Compact)
            };
            let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
            for i in 0..300 {
                let key = format!("key{}", rng.u32(0..20));
                let value = (rng.u8(..) % 6 != 0).then(|| format!("v{i}"));
                log.append(&keyed(&key, value.as_deref(), now - HOUR + i))
                    .await
                    .unwrap();
                if rng.u8(..) % 80 == 0 {
                    // DeleteRecords then a retention pass: the model loses everything below.
                    log.flush().await.unwrap();
                    let before = all_records(&mut log).await;
                    let start = rng.i64(log.log_start_offset()..=log.log_end_offset());
                    log.delete_records_before(start).await.unwrap();
                    log.apply_retention(now).await.unwrap();
                    let model: Vec<Row> = before.into_iter().filter(|r| r.0 >= start).collect();
                    assert_eq!(
                        all_records(&mut log).await,
                        model,
                        "seed {seed}: start {start}"
                    );
                    assert!(log.segments()[0].base_offset() <= start);
                }
                if rng.u8(..) % 50 == 0 {
                    log.flush().await.unwrap();
                    let limits = CleanerLimits {
                        dedupe_buffer_bytes: 300 * (1 + rng.usize(0..6)),
                        io_bytes_per_second: 0,
                    };
                    let before = all_records(&mut log).await;
                    let clean_end = log.segments().last().unwrap().base_offset();
                    // Passes until the dirty range is consumed.
                    for _ in 0..200 {
                        let st = log.clean_now(now, limits).await.unwrap();
                        if st.is_none() {
                            break;
                        }
                        if log.cleaner_offset().await >= clean_end {
                            break;
                        }
                    }
                    assert_eq!(
                        all_records(&mut log).await,
                        model_after_cleaning(&before, clean_end, false),
                        "seed {seed} after record {i}"
                    );
                }
            }
            log.flush().await.unwrap();
            log.roll_now().await.unwrap();
            let before = all_records(&mut log).await;
            let end = log.log_end_offset();
            log.clean_now(now, CleanerLimits::default()).await.unwrap();
            let kept_tombstones = model_after_cleaning(&before, end, false);
            assert_eq!(all_records(&mut log).await, kept_tombstones);
            // A reopen reads the same.
            log.close().await.unwrap();
            let mut log = PartitionLog::open(&pdir, config).await.unwrap();
            assert_eq!(all_records(&mut log).await, kept_tombstones);
            // Past the tombstones' horizon, a cleaning drops them.
            log.clean_now(now + 2 * HOUR, CleanerLimits::default())
                .await
                .unwrap();
            assert_eq!(
                all_records(&mut log).await,
                model_after_cleaning(&before, end, true)
            );
            assert_eq!(log.log_end_offset(), end);
            log.close().await.unwrap();
        });
    }
}

#[test]
fn the_cleaner_keeps_to_its_byte_rate() {
    run(|dir| async move {
        let now = shardlog::time::now_ms();
        let config = LogConfig {
            segment_bytes: 256 << 10,
            ..small_segments(CleanupPolicy::Compact)
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        let value = "v".repeat(1000);
        for i in 0..2000 {
            log.append(&keyed(&format!("k{}", i % 100), Some(&value), now))
                .await
                .unwrap();
        }
        log.roll_now().await.unwrap();
        let limits = CleanerLimits {
            dedupe_buffer_bytes: 1 << 20,
            io_bytes_per_second: 4 << 20,
        };
        let start = std::time::Instant::now();
        let stats = log.clean_now(now, limits).await.unwrap().unwrap();
        let took = start.elapsed().as_secs_f64();
        let moved = (stats.bytes_read + stats.bytes_written) as f64;
        // Never faster than the rate (it may be slower on a loaded machine).
        assert!(
            moved / took <= (4 << 20) as f64 * 1.1,
            "{moved} bytes in {took} s"
        );
        log.close().await.unwrap();
    });
}

/// Compressed batches are compacted like any other: the kept records are written back in a
/// batch compressed with the batch's own codec.
#[test]
fn compaction_rewrites_compressed_batches_with_their_codec() {
    use shardlog::format::compression::Codec;
    run(|dir| async move {
        let now = shardlog::time::now_ms();
        let config = LogConfig {
            segment_bytes: 1 << 20,
            ..small_segments(CleanupPolicy::Compact)
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for (i, codec) in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd]
            .into_iter()
            .enumerate()
        {
            // Each batch: key "a" (overwritten by the next batch) and a key of its own.
            let (va, vb) = (format!("a{i}"), format!("own{i}"));
            let own = format!("k{i}");
            let batch = BatchBuilder::new(256)
                .compression(codec)
                .record(RecordSpec::new(Some(b"a"), Some(va.as_bytes())).timestamp(now))
                .record(RecordSpec::new(Some(own.as_bytes()), Some(vb.as_bytes())).timestamp(now))
                .build();
            log.append(&batch).await.unwrap();
        }
        log.roll_now().await.unwrap();
        let stats = log
            .clean_now(now, CleanerLimits::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((stats.records_kept, stats.records_removed), (5, 3));
        let kept: Vec<(i64, Vec<u8>)> = all_records(&mut log)
            .await
            .into_iter()
            .map(|r| (r.0, r.2.unwrap()))
            .collect();
        let want: Vec<(i64, Vec<u8>)> = [
            (1, "own0"),
            (3, "own1"),
            (5, "own2"),
            (6, "a3"),
            (7, "own3"),
        ]
        .iter()
        .map(|(o, v)| (*o, v.as_bytes().to_vec()))
        .collect();
        assert_eq!(kept, want);
        let data = log.read(0, 1 << 20).await.unwrap().to_bytes();
        let codecs: Vec<&str> = split_batches(&data)
            .unwrap()
            .iter()
            .map(|(_, h)| h.compression())
            .collect();
        assert_eq!(codecs, vec!["gzip", "snappy", "lz4", "zstd"]);
        log.close().await.unwrap();
    });
}
