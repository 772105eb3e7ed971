//! The partition log through real files, real io_uring and direct I/O, checked against the
//! numbers in Kafka's own tests (LogSegmentTest, UnifiedLogTest).

use crate::common;

use common::*;
use shardlog::error::Error;
use shardlog::format::batch::{check_framing_and_crc, split_batches, RecordsSection};
use shardlog::format::{BatchHeader, TimestampType};
use shardlog::log::{
    OpenOptions, PartitionLog, TimestampOffset, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
};
use shardlog::LogConfig;

/// Both indexes of segment `i` as (offset, position) and (timestamp, offset) pairs.
async fn entries(log: &PartitionLog, i: usize) -> (Vec<(i64, u32)>, Vec<(i64, i64)>) {
    let (oi, ti) = log.segments()[i].indexes(log.config()).await.unwrap();
    (
        (0..oi.len())
            .map(|k| (oi.entry(k).offset, oi.entry(k).position))
            .collect(),
        (0..ti.len())
            .map(|k| (ti.entry(k).timestamp, ti.entry(k).offset))
            .collect(),
    )
}

fn small_config() -> LogConfig {
    LogConfig {
        index_interval_bytes: 1,
        ..LogConfig::default()
    }
}

async fn ts_lookup(log: &mut PartitionLog, t: i64) -> Option<(i64, i64)> {
    log.find_offset_by_timestamp(t)
        .await
        .unwrap()
        .map(|r| (r.offset, r.timestamp))
}

/// Kafka LogSegmentTest.testFindOffsetByTimestamp: offsets 40..49 with ts = offset * 10.
#[test]
fn find_by_timestamp_matches_kafka_segment_test() {
    for one_batch in [true, false] {
        run(move |dir| async move {
            let mut log = PartitionLog::open(&dir.join("t-0"), small_config())
                .await
                .unwrap();
            if one_batch {
                let ts: Vec<i64> = (40..50).map(|o| o * 10).collect();
                log.append_with_assigned_offsets(&at_offset(batch_with_timestamps(&ts), 40))
                    .await
                    .unwrap();
            } else {
                for o in 40..50 {
                    log.append_with_assigned_offsets(&at_offset(
                        batch_with_timestamps(&[o * 10]),
                        o,
                    ))
                    .await
                    .unwrap();
                }
            }
            assert_eq!(ts_lookup(&mut log, 420).await, Some((42, 420)));
            assert_eq!(ts_lookup(&mut log, 421).await, Some((43, 430)));
            assert_eq!(ts_lookup(&mut log, 430).await, Some((43, 430)));
            assert_eq!(ts_lookup(&mut log, 431).await, Some((44, 440)));
            assert_eq!(ts_lookup(&mut log, 491).await, None);
            assert_eq!(ts_lookup(&mut log, 401).await, Some((41, 410)));
            assert_eq!(ts_lookup(&mut log, 399).await, Some((40, 400)));
            log.close().await.unwrap();
        });
    }
}

/// Out-of-order CreateTime timestamps: the first record in offset order with ts >= T.
#[test]
fn out_of_order_timestamps_answer_in_offset_order() {
    run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), small_config())
            .await
            .unwrap();
        log.append(&batch_with_timestamps(&[10, 30, 20]))
            .await
            .unwrap();
        assert_eq!(ts_lookup(&mut log, 15).await, Some((1, 30)));
        assert_eq!(ts_lookup(&mut log, 25).await, Some((1, 30)));
        assert_eq!(ts_lookup(&mut log, 5).await, Some((0, 10)));
        assert_eq!(ts_lookup(&mut log, 31).await, None);
        // Same with one record per batch.
        let mut log2 = PartitionLog::open(&dir.join("t-1"), small_config())
            .await
            .unwrap();
        for t in [10, 30, 20] {
            log2.append(&batch_with_timestamps(&[t])).await.unwrap();
        }
        assert_eq!(ts_lookup(&mut log2, 15).await, Some((1, 30)));
        assert_eq!(ts_lookup(&mut log2, 21).await, Some((1, 30)));
    });
}

#[test]
fn special_timestamp_targets() {
    run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), small_config())
            .await
            .unwrap();
        assert_eq!(ts_lookup(&mut log, MAX_TIMESTAMP).await, None);
        assert_eq!(
            log.find_offset_by_timestamp(EARLIEST_TIMESTAMP)
                .await
                .unwrap(),
            Some(TimestampOffset {
                offset: 0,
                timestamp: -1
            })
        );
        log.append(&batch_with_timestamps(&[5, 50, 7]))
            .await
            .unwrap();
        log.append(&batch_with_timestamps(&[50, 9])).await.unwrap();
        assert_eq!(ts_lookup(&mut log, LATEST_TIMESTAMP).await, Some((5, -1)));
        assert_eq!(ts_lookup(&mut log, EARLIEST_TIMESTAMP).await, Some((0, -1)));
        // The first record carrying the largest timestamp.
        assert_eq!(ts_lookup(&mut log, MAX_TIMESTAMP).await, Some((1, 50)));
        assert!(log.find_offset_by_timestamp(-4).await.is_err());
    });
}

/// Kafka UnifiedLogTest.testSizeBasedLogRoll: 11 appends, segment.bytes = 10 * (s - 1).
#[test]
fn rolls_on_size() {
    run(|dir| async move {
        let batch = single(1_000, 20);
        let s = batch.len() as u64;
        let config = LogConfig {
            segment_bytes: 10 * (s - 1),
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for _ in 0..11 {
            log.append(&batch).await.unwrap();
        }
        assert_eq!(log.segments().len(), 2);
        assert_eq!(log.segments()[1].base_offset(), 9);
        assert_eq!(log.log_end_offset(), 11);
    });
}

#[test]
fn empty_segment_never_rolls_on_time_but_full_one_does() {
    run(|dir| async move {
        let config = LogConfig {
            segment_ms: 100,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        // The active segment is empty and was created long "before" this timestamp.
        log.append(&single(1_000_000, 10)).await.unwrap();
        assert_eq!(log.segments().len(), 1);
        // Within segment.ms of the first batch's timestamp: no roll.
        log.append(&single(1_000_100, 10)).await.unwrap();
        assert_eq!(log.segments().len(), 1);
        // More than segment.ms after it: roll (timestamp based, not wall clock).
        log.append(&single(1_000_101, 10)).await.unwrap();
        assert_eq!(log.segments().len(), 2);
        assert_eq!(log.segments()[1].base_offset(), 2);
    });
}

#[test]
fn rolls_when_an_index_is_full() {
    run(|dir| async move {
        let config = LogConfig {
            index_interval_bytes: 1,
            segment_index_bytes: 24, // 3 offset entries, 2 time entries (1 usable)
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for i in 0..10 {
            log.append(&single(100 + i, 10)).await.unwrap();
        }
        assert!(log.segments().len() > 1);
        for i in 0..log.segments().len() {
            let (oi, ti) = entries(&log, i).await;
            assert!(oi.len() <= 3);
            assert!(ti.len() <= 2);
        }
        for off in 0..10 {
            let data = log.read(off, 1).await.unwrap().to_bytes();
            let h = BatchHeader::parse(&data).unwrap();
            assert_eq!(h.base_offset, off);
        }
    });
}

#[test]
fn oversize_batch_is_rejected_and_nothing_is_written() {
    run(|dir| async move {
        let config = LogConfig {
            segment_bytes: 200,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        log.append(&single(1, 10)).await.unwrap();
        let big = single(2, 300);
        match log.append(&big).await {
            Err(Error::RecordBatchTooLarge {
                size, limit: 200, ..
            }) => assert_eq!(size, big.len()),
            other => panic!("expected RecordBatchTooLarge, got {other:?}"),
        }
        assert_eq!(log.log_end_offset(), 1);
        assert_eq!(log.size_bytes(), single(1, 10).len() as u64);
        log.append(&single(3, 10)).await.unwrap();
        assert_eq!(log.log_end_offset(), 2);
    });
}

#[test]
fn invalid_batches_change_nothing() {
    run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), small_config())
            .await
            .unwrap();
        let good = single(1, 10);
        let mut corrupt = single(2, 10);
        let n = corrupt.len();
        corrupt[n - 2] ^= 0xff;
        let mut both = good.clone();
        both.extend_from_slice(&corrupt);
        let err = log.append(&both).await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidBatch { at, .. } if at == good.len()),
            "{err}"
        );
        let mut magic = good.clone();
        magic[16] = 1;
        assert!(matches!(
            log.append(&magic).await,
            Err(Error::InvalidBatch { .. })
        ));
        assert!(matches!(
            log.append(&[]).await,
            Err(Error::InvalidBatch { .. })
        ));
        assert!(matches!(
            log.append(&good[..good.len() - 1]).await,
            Err(Error::InvalidBatch { .. })
        ));
        assert_eq!(log.log_end_offset(), 0);
        assert_eq!(log.size_bytes(), 0);
        log.append(&good).await.unwrap();
        assert_eq!(log.log_end_offset(), 1);
    });
}

#[test]
fn read_semantics_match_kafka() {
    run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), small_config())
            .await
            .unwrap();
        for i in 0..5 {
            log.append(&batch_with_timestamps(&[i, i, i]))
                .await
                .unwrap();
        }
        assert_eq!(log.log_end_offset(), 15);
        // Offset in the middle of a batch: the whole batch that contains it.
        let data = log.read(7, 1).await.unwrap().to_bytes();
        let parts = split_batches(&data).unwrap();
        assert_eq!(
            parts.len(),
            1,
            "at least one batch even if larger than max_bytes"
        );
        assert_eq!(parts[0].1.base_offset, 6);
        // max_bytes large: all remaining batches, whole.
        let data = log.read(7, 1 << 20).await.unwrap().to_bytes();
        assert_eq!(split_batches(&data).unwrap().len(), 3);
        // Log end: empty; beyond: out of range.
        assert!(log.read(15, 100).await.unwrap().to_bytes().is_empty());
        assert!(matches!(
            log.read(16, 100).await,
            Err(Error::OffsetOutOfRange {
                offset: 16,
                log_start: 0,
                log_end: 15
            })
        ));
        assert!(matches!(
            log.read(-1, 100).await,
            Err(Error::OffsetOutOfRange { .. })
        ));
    });
}

/// Kafka UnifiedLogTest.testReadAtLogGap: a read inside a gap returns the next batch.
#[test]
fn read_from_a_gap_returns_the_next_batch() {
    run(|dir| async move {
        let config = LogConfig {
            segment_bytes: 300,
            ..small_config()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for o in (0..50).step_by(5) {
            log.append_with_assigned_offsets(&at_offset(single(o, 20), o))
                .await
                .unwrap();
        }
        assert!(log.segments().len() > 1);
        for target in 0..46 {
            let data = log.read(target, 1).await.unwrap().to_bytes();
            let h = BatchHeader::parse(&data).unwrap();
            let expect = (target + 4) / 5 * 5;
            assert_eq!(h.base_offset, expect, "read at {target}");
        }
        assert!(matches!(
            log.append_with_assigned_offsets(&at_offset(single(1, 20), 10))
                .await,
            Err(Error::NonMonotonicOffset { .. })
        ));
    });
}

#[test]
fn log_append_time_rewrites_timestamps_and_crc() {
    run(|dir| async move {
        let config = LogConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..small_config()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        let before = shardlog::time::now_ms();
        let info = log
            .append(&batch_with_timestamps(&[1, 2, 3]))
            .await
            .unwrap();
        let stamped = info.log_append_time.unwrap();
        assert!(stamped >= before);
        let data = log.read(0, 1 << 20).await.unwrap().to_bytes();
        let h = check_framing_and_crc(&data).unwrap();
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(h.max_timestamp, stamped);
        assert!(RecordsSection::of(&data, &h)
            .unwrap()
            .decode()
            .unwrap()
            .iter()
            .all(|r| r.timestamp == stamped));
        assert_eq!(ts_lookup(&mut log, 3).await, Some((0, stamped)));
    });
}

#[test]
fn create_time_max_timestamp_is_recomputed_from_records() {
    run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), small_config())
            .await
            .unwrap();
        let mut b = batch_with_timestamps(&[10, 90, 20]);
        // Lie about maxTimestamp (and keep the CRC valid): the log stores the real one.
        shardlog::format::batch::set_max_timestamp(&mut b, TimestampType::CreateTime, 5);
        log.append(&b).await.unwrap();
        let data = log.read(0, 1 << 20).await.unwrap().to_bytes();
        let h = check_framing_and_crc(&data).unwrap();
        assert_eq!(h.max_timestamp, 90);
        assert_eq!(ts_lookup(&mut log, 50).await, Some((1, 90)));
    });
}

/// Kafka's index rule: an entry when more than index.interval.bytes were appended since the
/// last one (strictly), for the batch's last offset at its start position.
#[test]
fn index_entries_follow_kafka_rule() {
    run(|dir| async move {
        let batch = batch_with_timestamps(&[1, 2]);
        let s = batch.len() as u64;
        let config = LogConfig {
            index_interval_bytes: s,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config.clone())
            .await
            .unwrap();
        for i in 0..7 {
            let ts = [10 * i, 10 * i + 1];
            log.append(&batch_with_timestamps(&ts)).await.unwrap();
        }
        // Entries at the 3rd, 5th and 7th batch (batch i has offsets 2i, 2i+1).
        let (oi, ti) = entries(&log, 0).await;
        assert_eq!(
            oi,
            vec![(5, 2 * s as u32), (9, 4 * s as u32), (13, 6 * s as u32)]
        );
        assert_eq!(ti, vec![(21, 5), (41, 9), (61, 13)]);
        // The same after sealing, read back through the index files.
        log.close().await.unwrap();
        let log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        let (oi2, ti2) = entries(&log, 0).await;
        assert_eq!(oi2, oi);
        // Sealing adds the final max-timestamp entry (61 is already the max: none added).
        assert_eq!(ti2, ti);
    });
}

#[test]
fn reopen_keeps_everything_and_appends_continue() {
    run(|dir| async move {
        let config = LogConfig {
            segment_bytes: 4096,
            index_interval_bytes: 256,
            ..LogConfig::default()
        };
        let pdir = dir.join("orders-3");
        let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
        for i in 0..100i64 {
            log.append(&single(1_000 + (i * 37) % 500, 50 + (i as usize % 7) * 13))
                .await
                .unwrap();
        }
        async fn summary(
            log: &PartitionLog,
        ) -> Vec<(i64, u64, i64, i64, Vec<(i64, u32)>, Vec<(i64, i64)>)> {
            let mut out = Vec::new();
            for (i, s) in log.segments().iter().enumerate() {
                let (oi, ti) = entries(log, i).await;
                out.push((
                    s.base_offset(),
                    s.size(),
                    s.next_offset(),
                    s.max_timestamp(),
                    oi,
                    ti,
                ));
            }
            out
        }
        let mut all = Vec::new();
        for o in 0..100 {
            all.push(log.read(o, 1).await.unwrap().to_bytes());
        }
        log.close().await.unwrap();

        let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
        let after = summary(&log).await;
        assert!(after.len() > 3);
        assert_eq!(log.log_end_offset(), 100);
        for o in 0..100 {
            assert_eq!(log.read(o, 1).await.unwrap().to_bytes(), all[o as usize]);
        }
        // The file is trimmed to its data on close.
        let active = log.segments().last().unwrap();
        assert_eq!(
            std::fs::metadata(active.log_file().path()).unwrap().len(),
            active.size()
        );
        // Close again without appends and compare the full state.
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
        assert_eq!(summary(&log).await, after);
        // Appends continue after the last offset, in the reopened (partial) tail block.
        let info = log.append(&single(5_000, 30)).await.unwrap();
        assert_eq!(info.base_offset, 100);
        assert_eq!(ts_lookup(&mut log, 4_999).await, Some((100, 5_000)));
        log.close().await.unwrap();
        let mut log = PartitionLog::open(&pdir, config).await.unwrap();
        assert_eq!(log.log_end_offset(), 101);
        for o in 0..100 {
            assert_eq!(log.read(o, 1).await.unwrap().to_bytes(), all[o as usize]);
        }
        assert_eq!(ts_lookup(&mut log, 4_999).await, Some((100, 5_000)));
    });
}

#[test]
fn missing_or_damaged_index_files_are_rebuilt_on_open() {
    run(|dir| async move {
        let config = LogConfig {
            segment_bytes: 2048,
            index_interval_bytes: 100,
            ..LogConfig::default()
        };
        let pdir = dir.join("t-0");
        let mut log = PartitionLog::open(&pdir, config.clone()).await.unwrap();
        for i in 0..60 {
            log.append(&single(i * 10, 40)).await.unwrap();
        }
        log.close().await.unwrap();
        let first_index = pdir.join("00000000000000000000.index");
        let first_time = pdir.join("00000000000000000000.timeindex");
        std::fs::remove_file(&first_index).unwrap();
        let mut bytes = std::fs::read(&first_time).unwrap();
        bytes.truncate(bytes.len() - 5);
        std::fs::write(&first_time, bytes).unwrap();
        let mut log = PartitionLog::open(&pdir, config).await.unwrap();
        assert!(!entries(&log, 0).await.0.is_empty());
        for i in 0..60 {
            assert_eq!(ts_lookup(&mut log, i * 10).await, Some((i, i * 10)));
            let h = BatchHeader::parse(&log.read(i, 1).await.unwrap().to_bytes()).unwrap();
            assert_eq!(h.base_offset, i);
        }
    });
}

/// Large batches exercise several chunk writes in flight; reads of data still staged or in
/// flight must see exactly what was appended.
#[test]
fn large_appends_and_reads_of_unflushed_data() {
    run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), LogConfig::default())
            .await
            .unwrap();
        let mut batches = Vec::new();
        for i in 0..12 {
            let value: Vec<u8> = (0..(700_000 + i * 4099))
                .map(|j| (j * 31 + i) as u8)
                .collect();
            let b = shardlog::format::BatchBuilder::new(value.len() + 100)
                .record(shardlog::format::RecordSpec::new(None, Some(&value)).timestamp(i as i64))
                .build();
            log.append(&b).await.unwrap();
            batches.push(b);
            // Read back before any flush: from memory and from writes in flight.
            let got = log.read(i as i64, 1).await.unwrap().to_bytes();
            assert_eq!(got.len(), batches[i].len());
            check_framing_and_crc(&got).unwrap();
        }
        log.flush().await.unwrap();
        log.sync().await.unwrap();
        for (i, b) in batches.iter().enumerate() {
            let got = log.read(i as i64, 1).await.unwrap().to_bytes();
            assert_eq!(&got[12..], &b[12..], "batch {i}");
        }
    });
}

#[test]
fn acknowledged_reads_hide_appends_until_they_are_written() {
    run(|dir| async move {
        let storage = shardlog::io::DmaStorage::new(dir.clone());
        let opts = OpenOptions {
            acknowledged_reads: true,
            ..OpenOptions::default()
        };
        let pdir = dir.join("t-0");
        let mut log = PartitionLog::open_with(storage, &pdir, LogConfig::default(), opts)
            .await
            .unwrap();
        log.append(&single(1, 100)).await.unwrap();
        assert_eq!(log.visible_end_offset(), 0);
        assert!(log.read(0, 1 << 20).await.unwrap().to_bytes().is_empty());
        assert_eq!(
            log.find_offset_by_timestamp(-1)
                .await
                .unwrap()
                .unwrap()
                .offset,
            0
        );
        assert_eq!(log.find_offset_by_timestamp(0).await.unwrap(), None);
        log.flush().await.unwrap();
        assert_eq!(log.visible_end_offset(), 1);
        assert_eq!(
            log.read(0, 1 << 20).await.unwrap().to_bytes().len(),
            single(1, 100).len()
        );
        // Idle: the 1 MiB staging buffer goes, the tail stays, appends go on. (After a
        // flush the partial tail block is held apart from staging, as the head.)
        assert_eq!(log.staging_bytes(), (1 << 20) + 4096);
        log.release_idle_memory();
        assert_eq!(log.staging_bytes(), 4096);
        log.append(&single(2, 5000)).await.unwrap();
        assert_eq!(log.staging_bytes(), 1 << 20);
        log.sync().await.unwrap();
        assert_eq!(base_offsets(&mut log).await, vec![0, 1]);
        log.close().await.unwrap();
        let mut log = open_default(&pdir).await;
        assert_eq!(log.log_end_offset(), 2);
        assert_eq!(
            log.read(1, 1).await.unwrap().to_bytes().len(),
            single(2, 5000).len()
        );
    });
}

#[test]
fn staging_buffers_share_the_shards_budget() {
    run(|dir| async move {
        let cache = shardlog::io::PageCache::shared(4 << 20);
        let storage = shardlog::io::DmaStorage::new(dir.clone());
        let mut logs = Vec::new();
        for p in 0..6 {
            let opts = OpenOptions {
                cache: Some(cache.clone()),
                ..OpenOptions::default()
            };
            let pdir = dir.join(format!("t-{p}"));
            let log = PartitionLog::open_with(storage.clone(), &pdir, LogConfig::default(), opts)
                .await
                .unwrap();
            logs.push(log);
        }
        // A partition opened and not written holds no buffer.
        assert_eq!(cache.borrow().staging_bytes(), 0);
        for (p, log) in logs.iter_mut().enumerate() {
            log.append(&single(0, 3000 + p)).await.unwrap();
        }
        // Half the 4 MiB budget holds two full 1 MiB buffers; the rest get 64 KiB ones.
        assert_eq!(cache.borrow().staging_bytes(), (2 << 20) + 4 * (64 << 10));
        for (p, log) in logs.iter_mut().enumerate() {
            for i in 1..40 {
                log.append(&single(i, 3000 + p)).await.unwrap();
            }
            log.flush().await.unwrap();
        }
        for log in logs.iter_mut() {
            log.release_idle_memory();
        }
        assert_eq!(cache.borrow().staging_bytes(), 0);
        for (p, log) in logs.into_iter().enumerate() {
            let mut log = log;
            log.append(&single(99, 10)).await.unwrap();
            log.sync().await.unwrap();
            let offsets: Vec<i64> = {
                let mut out = Vec::new();
                let mut next = 0;
                loop {
                    let data = log.read(next, 1 << 20).await.unwrap().to_bytes();
                    if data.is_empty() {
                        break;
                    }
                    for (_, h) in split_batches(&data).unwrap() {
                        out.push(h.base_offset);
                        next = h.last_offset() + 1;
                    }
                }
                out
            };
            assert_eq!(offsets, (0..41).collect::<Vec<_>>(), "partition {p}");
            log.close().await.unwrap();
        }
        assert_eq!(cache.borrow().staging_bytes(), 0);
    });
}

#[test]
fn a_log_opened_again_holds_only_its_tail_block_until_appended() {
    run(|dir| async move {
        let pdir = dir.join("t-0");
        let mut log = open_default(&pdir).await;
        assert_eq!(log.staging_bytes(), 0, "a new log takes no buffer");
        log.append(&single(0, 700)).await.unwrap();
        log.close().await.unwrap();
        let mut log = open_default(&pdir).await;
        assert_eq!(log.staging_bytes(), 4096, "the partial tail block only");
        log.append(&single(1, 900)).await.unwrap();
        assert_eq!(
            log.staging_bytes(),
            (1 << 20) + 4096,
            "a chunk and the head"
        );
        log.sync().await.unwrap();
        assert_eq!(base_offsets(&mut log).await, vec![0, 1]);
        log.close().await.unwrap();
        let mut log = open_default(&pdir).await;
        assert_eq!(base_offsets(&mut log).await, vec![0, 1]);
    });
}

#[test]
fn an_idle_log_whose_end_is_on_a_block_holds_no_buffer() {
    run(|dir| async move {
        let pdir = dir.join("t-0");
        let mut log = open_default(&pdir).await;
        // Empty and idle: no buffer at all (thousands of idle partitions hold nothing).
        log.release_idle_memory();
        assert_eq!(log.staging_bytes(), 0);
        // One batch of exactly one block: after a flush the end is on a block again.
        let len = (0..4096)
            .find(|&n| single(1, n).len() == 4096)
            .expect("a value length that makes a 4 KiB batch");
        log.append(&single(1, len)).await.unwrap();
        log.flush().await.unwrap();
        log.release_idle_memory();
        assert_eq!(log.staging_bytes(), 0);
        log.append(&single(2, 100)).await.unwrap();
        assert_eq!(log.staging_bytes(), 1 << 20);
        log.flush().await.unwrap();
        log.release_idle_memory();
        assert_eq!(log.staging_bytes(), 4096, "a partial last block is kept");
        log.close().await.unwrap();
        let mut log = open_default(&pdir).await;
        assert_eq!(log.log_end_offset(), 2);
        assert_eq!(base_offsets(&mut log).await, vec![0, 1]);
        // Parked, then closed: the close still seals (trims what was allocated ahead).
        log.close().await.unwrap();
        let mut log = open_default(&pdir).await;
        log.release_idle_memory();
        log.close().await.unwrap();
        let reopened = open_default(&pdir).await;
        assert_eq!(reopened.log_end_offset(), 2);
        reopened.close().await.unwrap();
    });
}

/// The base offset of every batch in the first MiB of the log.
/// The partition in `pdir` on the real disk, with the default config.
async fn open_default(pdir: &std::path::Path) -> PartitionLog {
    PartitionLog::open(pdir, LogConfig::default())
        .await
        .unwrap()
}

async fn base_offsets(log: &mut PartitionLog) -> Vec<i64> {
    let all = log.read(0, 1 << 20).await.unwrap().to_bytes();
    let batches = split_batches(&all).unwrap();
    batches.iter().map(|(_, h)| h.base_offset).collect()
}

/// Every file of a directory with its size and modification time.
fn files_as_left(dir: &std::path::Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, m.len(), m.modified().unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_partition_unchanged_since_a_clean_open_closes_without_writing() {
    run(|dir| async move {
        let pdir = dir.join("t-0");
        let open = |clean_shutdown: bool| {
            let (storage, pdir) = (shardlog::io::DmaStorage::new(dir.clone()), pdir.clone());
            let opts = OpenOptions {
                clean_shutdown,
                ..OpenOptions::default()
            };
            async move {
                PartitionLog::open_with(storage, &pdir, LogConfig::default(), opts)
                    .await
                    .unwrap()
            }
        };
        // A new partition closes as created, and opens cleanly afterwards.
        open(false).await.close().await.unwrap();
        let mut log = open(true).await;
        for ts in [10, 20, 30] {
            log.append(&single(ts, 100)).await.unwrap();
        }
        log.close().await.unwrap();
        let before = files_as_left(&pdir);
        // A clean start with nothing appended: the close writes nothing at all.
        std::thread::sleep(std::time::Duration::from_millis(20));
        open(true).await.close().await.unwrap();
        assert_eq!(files_as_left(&pdir), before);
        // What it left opens as before, cleanly or recovering, and takes appends.
        let mut log = open(true).await;
        assert_eq!(log.log_end_offset(), 3);
        let found = log.find_offset_by_timestamp(20).await.unwrap().unwrap();
        assert_eq!(found.offset, 1);
        log.append(&single(40, 100)).await.unwrap();
        log.close().await.unwrap();
        let log = open(false).await;
        assert_eq!(log.log_end_offset(), 4);
        assert!(log.recovery_truncations().is_empty());
        log.close().await.unwrap();
    });
}

/// An idle partition opened after an unclean stop rewrites nothing: its recovery point
/// already names its end, and its empty `.log` needs no recovery write.
#[test]
fn an_idle_partition_opened_after_an_unclean_stop_leaves_its_files_as_they_were() {
    run(|dir| async move {
        let pdir = dir.join("t-0");
        let open_unclean = || {
            let (storage, pdir) = (shardlog::io::DmaStorage::new(dir.clone()), pdir.clone());
            async move {
                PartitionLog::open_with(
                    storage,
                    &pdir,
                    LogConfig::default(),
                    OpenOptions::default(),
                )
                .await
                .unwrap()
            }
        };
        open_unclean().await.close().await.unwrap();
        let before = files_as_left(&pdir);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let log = open_unclean().await;
        assert_eq!(log.log_end_offset(), 0);
        assert!(log.recovery_truncations().is_empty());
        log.close().await.unwrap();
        assert_eq!(files_as_left(&pdir), before);
    });
}

#[test]
fn overwrite_file_replaces_contents_in_place_creating_growing_or_cutting_the_file() {
    use shardlog::io::Storage;
    run(|dir| async move {
        let storage = shardlog::io::DmaStorage::new(dir.clone());
        let path = dir.join("00000000000000000000.index");
        storage.overwrite_file(&path, vec![1; 100]).await.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![1; 100], "created");
        storage.overwrite_file(&path, vec![2; 9000]).await.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![2; 9000], "grown");
        storage.overwrite_file(&path, vec![3; 10]).await.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![3; 10], "cut to length");
        let missing_dir = dir.join("gone/x.index");
        assert!(storage.overwrite_file(&missing_dir, vec![4]).await.is_err());
        // The sibling: a new file, refused when it exists.
        storage
            .create_file_with(&dir.join("new"), vec![5; 7], true)
            .await
            .unwrap();
        assert_eq!(std::fs::read(dir.join("new")).unwrap(), vec![5; 7]);
        assert!(storage
            .create_file_with(&dir.join("new"), vec![6], false)
            .await
            .is_err());
    });
}
