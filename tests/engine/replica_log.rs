//! The partition log as replication uses it, through real files and io_uring: a leader's
//! epoch stamped into every batch it appends and recorded in `leader-epoch-checkpoint`
//! (Kafka's text), a high watermark that bounds what consumers see while followers read to
//! the log end, and truncation from the end across segments that a reopen agrees with,
//! with the producer state and the epoch history cut back too.

use crate::common;

use shardlog::error::Error;
use shardlog::format::batch::set_producer;
use shardlog::format::cursor::BatchCursor;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::log::{PartitionLog, LATEST_TIMESTAMP};
use shardlog::replication::EpochEntry;
use shardlog::LogConfig;

/// A batch of `n` records from idempotent producer 9 starting at sequence `seq`.
fn batch(seq: i32, n: usize) -> Vec<u8> {
    let values: Vec<String> = (0..n).map(|i| format!("value {seq}+{i}")).collect();
    let mut b = BatchBuilder::new(256);
    for v in &values {
        b.push(RecordSpec::new(Some(b"k"), Some(v.as_bytes())).timestamp(1_000 + seq as i64));
    }
    let mut bytes = b.build();
    set_producer(&mut bytes, 9, 0, seq);
    bytes
}

/// (base offset, leader epoch) of every batch a read returned.
fn stamped(data: &shardlog::io::chain::ByteChain) -> Vec<(i64, i32)> {
    BatchCursor::new(data)
        .map(|b| b.unwrap().1)
        .map(|h| (h.base_offset, h.partition_leader_epoch))
        .collect()
}

/// Base offsets of every batch a follower would copy (reads stop at a segment's end).
async fn copied_bases(log: &mut PartitionLog) -> Vec<i64> {
    let mut bases = Vec::new();
    let mut next = 0;
    while next < log.replica_end_offset() {
        let data = log.read_for_replica(next, 1 << 20).await.unwrap();
        let read = stamped(&data);
        assert!(!read.is_empty(), "a read below the end returns a batch");
        bases.extend(read.iter().map(|(b, _)| *b));
        let last = BatchCursor::new(&data).last().unwrap().unwrap().1;
        next = last.last_offset() + 1;
    }
    bases
}

fn entries(log: &PartitionLog) -> Vec<(i32, i64)> {
    let e = log.leader_epochs().entries().iter();
    e.map(
        |&EpochEntry {
             epoch,
             start_offset,
         }| (epoch, start_offset),
    )
    .collect()
}

#[test]
fn a_leader_stamps_its_epoch_and_the_history_survives_a_reopen() {
    common::run(|dir| async move {
        let path = dir.join("t-0");
        let mut log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        log.append(&batch(0, 2)).await.unwrap();
        log.set_leader_epoch(3).await.unwrap();
        log.append(&batch(2, 3)).await.unwrap();
        log.set_leader_epoch(5).await.unwrap();
        log.append(&batch(5, 1)).await.unwrap();
        log.append(&batch(6, 1)).await.unwrap();
        let all = log.read(0, 1 << 20).await.unwrap();
        assert_eq!(stamped(&all), [(0, -1), (2, 3), (5, 5), (6, 5)]);
        assert_eq!(entries(&log), [(3, 2), (5, 5)]);
        let file = std::fs::read_to_string(path.join("leader-epoch-checkpoint")).unwrap();
        assert_eq!(file, "0\n2\n3 2\n5 5\n");
        log.close().await.unwrap();
        let log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        assert_eq!(entries(&log), [(3, 2), (5, 5)]);
        log.close().await.unwrap();
    });
}

#[test]
fn consumers_stop_at_the_high_watermark_and_followers_read_to_the_log_end() {
    common::run(|dir| async move {
        let mut log = PartitionLog::open(&dir.join("t-0"), LogConfig::default())
            .await
            .unwrap();
        for seq in 0..5 {
            log.append(&batch(seq, 1)).await.unwrap();
        }
        log.set_high_watermark(Some(2));
        assert_eq!(log.visible_end_offset(), 2);
        let read = log.read(0, 1 << 20).await.unwrap();
        assert_eq!(stamped(&read).len(), 2, "below the high watermark only");
        // Between the high watermark and the log end: nothing yet, not an error.
        assert!(log.read(3, 1 << 20).await.unwrap().is_empty());
        assert!(matches!(
            log.read(6, 1 << 20).await,
            Err(Error::OffsetOutOfRange { .. })
        ));
        let latest = log
            .find_offset_by_timestamp(LATEST_TIMESTAMP)
            .await
            .unwrap();
        assert_eq!(latest.unwrap().offset, 2);
        assert!(log.last_stable_offset() <= 2);
        let copied = log.read_for_replica(0, 1 << 20).await.unwrap();
        assert_eq!(stamped(&copied).len(), 5);
        assert_eq!(log.replica_end_offset(), 5);
        log.set_high_watermark(None);
        assert_eq!(log.visible_end_offset(), 5);
        log.close().await.unwrap();
    });
}

#[test]
fn the_high_watermark_is_checkpointed_and_read_back_within_the_log() {
    common::run(|dir| async move {
        let path = dir.join("t-0");
        let mut log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        assert_eq!(log.checkpointed_high_watermark().await, 0, "none yet");
        for seq in 0..4 {
            log.append(&batch(seq, 1)).await.unwrap();
        }
        log.set_high_watermark(Some(2));
        log.checkpoint_high_watermark().await.unwrap();
        let file = std::fs::read_to_string(path.join("replication-offset-checkpoint")).unwrap();
        assert_eq!(file, "0\n2\n");
        log.set_high_watermark(Some(3));
        log.close().await.unwrap();
        let log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        assert_eq!(
            log.checkpointed_high_watermark().await,
            3,
            "a clean close writes it"
        );
        log.close().await.unwrap();
        std::fs::write(path.join("replication-offset-checkpoint"), "0\n99\n").unwrap();
        let log = PartitionLog::open(&path, LogConfig::default())
            .await
            .unwrap();
        assert_eq!(
            log.checkpointed_high_watermark().await,
            4,
            "never past the log end"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn truncation_cuts_whole_batches_across_segments_and_a_reopen_agrees() {
    common::run(|dir| async move {
        let path = dir.join("t-0");
        let config = LogConfig {
            segment_bytes: 300,
            index_interval_bytes: 1,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&path, config.clone()).await.unwrap();
        log.set_leader_epoch(1).await.unwrap();
        for seq in (0..20).step_by(2) {
            log.append(&batch(seq, 2)).await.unwrap();
            if seq == 10 {
                log.set_leader_epoch(2).await.unwrap();
            }
        }
        let segments_before = log.segments().len();
        assert!(segments_before >= 3, "{segments_before} segments");
        assert_eq!(entries(&log), [(1, 0), (2, 12)]);
        log.set_high_watermark(Some(9));

        // Offset 9 is inside the batch of offsets 8-9: the whole batch goes.
        assert_eq!(log.truncate_to(9).await.unwrap(), 8);
        assert_eq!((log.log_end_offset(), log.replica_end_offset()), (8, 8));
        assert_eq!(
            log.visible_end_offset(),
            8,
            "the high watermark follows the cut"
        );
        assert!(log.segments().len() < segments_before);
        assert_eq!(entries(&log), [(1, 0)], "epoch 2 started past the cut");
        assert_eq!(copied_bases(&mut log).await, [0, 2, 4, 6]);

        // The producer state went back too: the next sequence is the cut batch's.
        assert!(
            log.append(&batch(10, 1)).await.is_err(),
            "a gap in sequence"
        );
        let again = log.append(&batch(8, 2)).await.unwrap();
        assert_eq!((again.base_offset, again.last_offset), (8, 9));
        assert_eq!(
            entries(&log),
            [(1, 0), (2, 8)],
            "epoch 2 starts again at the new end"
        );
        log.close().await.unwrap();

        let mut log = PartitionLog::open(&path, config).await.unwrap();
        assert_eq!(log.log_end_offset(), 10);
        assert_eq!(copied_bases(&mut log).await, [0, 2, 4, 6, 8]);
        assert_eq!(entries(&log), [(1, 0), (2, 8)]);
        assert!(matches!(
            log.truncate_to(-1).await,
            Err(Error::OffsetOutOfRange { .. })
        ));
        assert_eq!(
            log.truncate_to(50).await.unwrap(),
            10,
            "past the end: nothing to cut"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn an_emptied_log_starts_at_the_leaders_start_and_a_reopen_agrees() {
    common::run(|dir| async move {
        let path = dir.join("t-0");
        let config = LogConfig {
            segment_bytes: 300,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&path, config.clone()).await.unwrap();
        log.set_leader_epoch(1).await.unwrap();
        for seq in (0..12).step_by(2) {
            log.append(&batch(seq, 2)).await.unwrap();
        }
        assert!(log.segments().len() >= 2);
        log.set_high_watermark(Some(12));

        log.empty_and_start_at(40).await.unwrap();
        let ends = (log.log_start_offset(), log.log_end_offset());
        assert_eq!(ends, (40, 40));
        assert_eq!((log.segments().len(), log.visible_end_offset()), (1, 40));
        assert!(
            entries(&log).is_empty(),
            "no epoch of the old records is kept"
        );
        let names: Vec<String> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log") || n.ends_with(".snapshot"))
            .collect();
        assert_eq!(names, ["00000000000000000040.log"], "only the new segment");

        // A copy from the leader goes on at 40, and a new producer's batch is taken.
        let mut copy = batch(0, 3);
        copy[..8].copy_from_slice(&40i64.to_be_bytes());
        log.append_with_assigned_offsets(&copy).await.unwrap();
        assert_eq!(log.log_end_offset(), 43);
        log.close().await.unwrap();

        let log = PartitionLog::open(&path, config).await.unwrap();
        let ends = (log.log_start_offset(), log.log_end_offset());
        assert_eq!(ends, (40, 43), "a reopen agrees");
        log.close().await.unwrap();
    });
}

/// A new leader whose remote tier ends inside one of its segments copies that segment's
/// tail: the `.log` from the batch at the cut, and both indexes rebased to it.
#[test]
fn a_segment_the_remote_tier_ends_inside_is_copied_from_that_batch() {
    use shardlog::log::offset_index::OffsetIndex;
    use shardlog::log::time_index::TimeIndex;
    common::run(|dir| async move {
        let config = LogConfig {
            segment_bytes: 2048,
            index_interval_bytes: 1,
            remote_storage_enable: true,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::open(&dir.join("t-0"), config).await.unwrap();
        for seq in 0..60 {
            log.append(&batch(seq, 1)).await.unwrap();
        }
        let whole = log.segments_to_copy(0, 1).await.unwrap().remove(0);
        assert_eq!((whole.base_offset, whole.log_position), (0, 0));
        assert!(whole.rebased.is_none() && whole.last_offset > 6);
        let tail = log.segments_to_copy(5, 1).await.unwrap().remove(0);
        assert_eq!((tail.base_offset, tail.last_offset), (5, whole.last_offset));
        assert!(tail.log_position > 0);
        assert_eq!(tail.size_bytes, whole.size_bytes - tail.log_position);
        // The tail's .log starts with the batch at the cut.
        let (_, log_path) = tail.files.iter().find(|(s, _)| *s == ".log").unwrap();
        let bytes = std::fs::read(log_path).unwrap();
        let cut = &bytes[tail.log_position as usize..];
        let first = BatchCursor::new(cut).next().unwrap().unwrap().1;
        assert_eq!(first.base_offset, 5);
        // Its indexes come rebased, in place of the local files.
        assert!(tail
            .files
            .iter()
            .all(|(s, _)| *s != ".index" && *s != ".timeindex"));
        let rebased = tail.rebased.unwrap();
        let index = OffsetIndex::decode(5, &rebased.offset_index, 1000).unwrap();
        assert!(!index.is_empty());
        let e = index.entry(0);
        assert!(e.offset >= 5);
        let at = &cut[e.position as usize..];
        let indexed = BatchCursor::new(at).next().unwrap().unwrap().1;
        assert!(indexed.base_offset <= e.offset && e.offset <= indexed.last_offset());
        let times = TimeIndex::decode(5, &rebased.time_index, 1000).unwrap();
        assert!((0..times.len()).all(|i| times.entry(i).offset >= 5));
        log.close().await.unwrap();
    });
}
