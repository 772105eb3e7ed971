//! A partition's log: ordered segments, the roll policy, offset assignment, reads and
//! Kafka-style lookups by timestamp. One `PartitionLog` is owned by one task on one shard;
//! its methods take `&mut self` and nothing in it is shared across threads.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::checkpoint::{LOG_START_OFFSET, RECOVERY_POINT};
use super::loader::{load, OpenOptions};
use super::producer_state::{self, ProducerState};
use super::segment::{Segment, Truncation};
use super::txn_index::{AbortedTxn, AbortedTxns};
use super::{LogIo, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::batch::{
    self, set_base_offset, set_header_max_timestamp, set_partition_leader_epoch,
    split_batches_located, NO_PARTITION_LEADER_EPOCH,
};
use crate::format::HEADER_SIZE;
use crate::format::{BatchError, BatchHeader, TimestampType};
use crate::io::chain::ByteChain;
use crate::io::{DmaStorage, Storage};

/// Directory of a partition inside the data directory: `<topic>-<partition>`, as Kafka.
pub fn partition_dir(data_dir: &Path, topic: &str, partition: u32) -> PathBuf {
    data_dir.join(partition_dir_name(topic, partition))
}

/// The name of a partition's directory: `<topic>-<partition>`.
pub fn partition_dir_name(topic: &str, partition: u32) -> String {
    format!("{topic}-{partition}")
}

/// Result of an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    /// The timestamp stamped on the batches for LogAppendTime topics.
    pub log_append_time: Option<i64>,
    pub batches: usize,
    pub bytes: usize,
}

/// Answer to a lookup by timestamp: the offset found and that record's timestamp (-1 for
/// the earliest/latest targets, which carry no record). The time index's entry type.
pub use super::time_index::TimestampOffset;

pub struct PartitionLog {
    pub(super) io: LogIo,
    pub(super) dir: PathBuf,
    pub(super) config: LogConfig,
    /// Sorted by base offset; the last one is the active segment.
    pub(super) segments: Vec<Segment>,
    pub(super) log_start_offset: i64,
    /// The log end readers see. With `acknowledged_reads` it moves only when appended
    /// records are acknowledged as written (a successful flush or sync), so records of a
    /// failed append are never served and their offsets, if reused after a reload, were
    /// never seen. Without it, every append moves it.
    pub(super) visible_end: i64,
    pub(super) acknowledged_reads: bool,
    /// Offset below which everything is durable (fdatasync'd); checkpointed on roll/close.
    pub(super) recovery_point: i64,
    /// Set by a failed write or fdatasync (EIO, ...): writes are refused until the partition
    /// is opened again, which recovers it.
    pub(super) poisoned: Option<String>,
    /// Set by ENOSPC: the tail is recovered from disk before the next operation, so the
    /// partition works again once space is freed.
    pub(super) needs_reopen: Option<String>,
    /// What the last open's recovery truncated.
    pub(super) truncations: Vec<Truncation>,
    /// Files renamed to `.deleted` by retention or cleaning, removed once due (wall-clock
    /// ms, `file.delete.delay.ms` after the rename).
    pub(super) pending_removals: Vec<(i64, PathBuf)>,
    /// Earliest delete horizon of a tombstone the last cleaning kept: once it passes, the
    /// log is cleanable again so the tombstone goes.
    pub(super) tombstone_horizon: Option<i64>,
    /// Wall-clock ms of the last cleaning since this process opened the partition.
    pub(super) last_cleaned_ms: Option<i64>,
    /// The cleaner checkpoint (`cleaner-offset-checkpoint`), read at open.
    pub(super) cleaner_checkpoint: i64,
    /// The active segment's index files on disk: (segment base, entries written).
    active_indexes_written: Option<IndexFilesState>,
    /// When they were last written or tried to be (a failing write is retried no sooner).
    active_indexes_tried_at: Option<std::time::Instant>,
    /// When the log was last fdatasync'd (flush.ms counts from it).
    synced_at: std::time::Instant,
    /// Idempotent producers' epochs and last batches (retries are not stored twice).
    pub(super) producers: ProducerState,
    /// Aborted transactions (the `.txnindex` entries of every segment).
    pub(super) aborted: AbortedTxns,
    /// Tiered logs: the offset below which the remote tier holds every record (committed
    /// uploads); local retention deletes only below it. `None`: nothing copied yet.
    pub(super) remote_copied_end: Option<i64>,
    /// The leader epochs whose records the log holds, and where each starts
    /// (`leader-epoch-checkpoint`).
    pub(super) epochs: crate::replication::EpochCache,
    /// The leader epoch stamped on appended batches (a leader's; -1 otherwise).
    pub(super) stamp_epoch: i32,
    /// A replicated partition's high watermark: readers see nothing at or above it.
    /// `None`: a partition on one node, whose readers see every acknowledged record.
    pub(super) high_watermark: Option<i64>,
    /// Whether anything was appended, truncated, rolled or recovered since the partition
    /// opened as it was left (`Loaded::as_left`). If not, its files already say what a
    /// close would write, and a close writes nothing: thousands of idle partitions close
    /// without a file write or sync each.
    pub(super) changed_since_open: bool,
    /// How many times the tail was loaded again from disk (a reopen after ENOSPC, a
    /// follower's truncation): a durability mark taken before names a log that may be gone.
    pub(super) reloads: u64,
}

/// Which index files are on disk: the segment's base offset and entries (offset, time).
type IndexFilesState = (i64, (usize, usize));

/// The active segment's index files are rewritten at most this often while it changes.
const ACTIVE_INDEX_WRITE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

struct PreparedBatch {
    start: usize,
    header: BatchHeader,
    max_record_timestamp: i64,
    /// The header as it will be stored (offsets and timestamps assigned).
    head: [u8; HEADER_SIZE],
}

/// A request's batches: producers send one per partition, held inline without allocating.
type PreparedBatches = smallvec::SmallVec<[PreparedBatch; 1]>;

impl PartitionLog {
    /// Opens (or creates) the partition in `dir` on the real disk (direct I/O), recovering
    /// it from its checkpoint as after an unclean shutdown (always safe).
    pub async fn open(dir: &Path, config: LogConfig) -> Result<Self> {
        let storage = DmaStorage::new(dir.parent().unwrap_or(dir));
        Self::open_with(storage, dir, config, OpenOptions::default()).await
    }

    /// Opens the partition through any storage (tests use the simulated disk).
    pub async fn open_with(
        storage: Rc<dyn Storage>,
        dir: &Path,
        config: LogConfig,
        opts: OpenOptions,
    ) -> Result<Self> {
        config.validate()?;
        let io = LogIo {
            storage: storage.clone(),
            cache: opts.cache.clone(),
        };
        let acknowledged_reads = opts.acknowledged_reads;
        let loaded = load(storage.clone(), dir, &config, opts).await?;
        let visible_end = loaded.segments.last().map_or(0, |s| s.next_offset());
        let checkpointed = LOG_START_OFFSET.read(storage.as_ref(), dir).await;
        let cleaner_checkpoint = super::checkpoint::CLEANER_OFFSET
            .read(storage.as_ref(), dir)
            .await;
        let (mut producers, mut aborted) =
            producer_state::rebuild(storage.as_ref(), dir, &loaded.segments, visible_end).await?;
        producers.count_on_shard();
        let log_start_offset = checkpointed
            .max(loaded.segments[0].base_offset())
            .min(visible_end);
        aborted.drop_below(log_start_offset);
        let mut epochs = super::leader_epochs::read(storage.as_ref(), dir).await;
        epochs.truncate_from_end(visible_end);
        tracing::debug!(
            dir = %dir.display(),
            segments = loaded.segments.len(),
            log_end = loaded.segments.last().map(|s| s.next_offset()),
            "partition opened"
        );
        let log = PartitionLog {
            io,
            dir: dir.to_path_buf(),
            config,
            segments: loaded.segments,
            log_start_offset,
            visible_end,
            acknowledged_reads,
            recovery_point: loaded.recovery_point,
            poisoned: None,
            needs_reopen: None,
            truncations: loaded.truncations,
            pending_removals: Vec::new(),
            tombstone_horizon: None,
            last_cleaned_ms: None,
            cleaner_checkpoint,
            active_indexes_written: None,
            active_indexes_tried_at: None,
            synced_at: std::time::Instant::now(),
            producers,
            aborted,
            remote_copied_end: None,
            epochs,
            stamp_epoch: NO_PARTITION_LEADER_EPOCH,
            high_watermark: None,
            changed_since_open: !loaded.as_left,
            reloads: 0,
        };
        log.assert_invariants();
        Ok(log)
    }

    /// Truncations the last open's recovery performed (file, position, bytes dropped).
    pub fn recovery_truncations(&self) -> &[Truncation] {
        &self.truncations
    }

    /// Offset below which every record is known durable.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The log end readers see: one past the last record acknowledged as written, and, in
    /// a replicated partition, below the high watermark. Fetch, lookups and "latest" stop
    /// here.
    pub fn visible_end_offset(&self) -> i64 {
        self.high_watermark
            .map_or(self.visible_end, |hw| hw.min(self.visible_end))
    }

    /// One past the last offset: the offset the next record gets. After an ENOSPC failure
    /// this still counts the unwritten tail until the next operation (or
    /// `reopen_if_needed`) reloads it from disk.
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Total bytes of all `.log` files.
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.size()).sum()
    }

    pub(super) fn active(&self) -> &Segment {
        self.segments
            .last()
            .expect("a partition always has a segment")
    }

    pub(super) fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .last_mut()
            .expect("a partition always has a segment")
    }

    /// Refuses writes on a poisoned partition; recovers the tail first after ENOSPC.
    pub(super) async fn check_healthy(&mut self) -> Result<()> {
        if let Some(cause) = &self.poisoned {
            return Err(Error::Poisoned {
                path: self.dir.clone(),
                cause: cause.clone(),
            });
        }
        self.reopen_if_needed().await
    }

    /// After ENOSPC the in-memory tail may hold bytes that never reached the disk: reload
    /// the partition from disk (recovery truncates any partial write) before going on.
    pub async fn reopen_if_needed(&mut self) -> Result<()> {
        let Some(cause) = self.needs_reopen.clone() else {
            return Ok(());
        };
        self.changed_since_open = true;
        let loaded = load(
            self.io.storage.clone(),
            &self.dir,
            &self.config,
            OpenOptions {
                clean_shutdown: false,
                cache: self.io.cache.clone(),
                ..OpenOptions::default()
            },
        )
        .await
        .map_err(|e| {
            tracing::warn!(dir = %self.dir.display(), error = %e, "partition still cannot recover");
            e
        })?;
        let old = std::mem::replace(&mut self.segments, loaded.segments);
        for seg in old {
            seg.abandon().await;
        }
        self.recovery_point = loaded.recovery_point;
        self.reloads += 1;
        self.truncations = loaded.truncations;
        self.needs_reopen = None;
        self.aborted.truncate_from(self.log_end_offset());
        // What survived on disk is what readers may see now.
        self.visible_end = self.log_end_offset();
        self.assert_invariants();
        tracing::info!(dir = %self.dir.display(), %cause, log_end = self.log_end_offset(), "partition recovered after running out of space");
        Ok(())
    }

    /// Records an I/O failure. ENOSPC leaves the partition usable once space is freed (its
    /// tail is reloaded from disk first); any other failure poisons it until it is reopened,
    /// so nothing is ever reported written or durable that may not be.
    pub(super) fn note_failure<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            match e {
                Error::Io { .. } if e.is_resource_shortage() => {
                    tracing::warn!(dir = %self.dir.display(), error = %e, "out of a resource (space, files, memory); the partition reloads its tail before the next write");
                    self.needs_reopen.get_or_insert_with(|| e.to_string());
                }
                Error::Io { .. } | Error::Poisoned { .. }
                    if self.needs_reopen.is_none() && self.poisoned.is_none() =>
                {
                    tracing::error!(dir = %self.dir.display(), error = %e, "partition poisoned");
                    self.poisoned = Some(e.to_string());
                }
                _ => {}
            }
        }
        r
    }

    /// After a successful append: readable now, unless reads wait for acknowledgement.
    pub(super) fn note_appended(&mut self) {
        if !self.acknowledged_reads {
            self.visible_end = self.log_end_offset();
        }
    }

    /// Validates every batch in `input` before anything is written: framing, magic, CRC,
    /// records, offset deltas, timestamp type, and size against segment.bytes.
    fn prepare(&self, input: &[u8], in_transaction: bool) -> Result<PreparedBatches> {
        let bad = |at: usize, source: BatchError| Error::InvalidBatch { at, source };
        let mut out = PreparedBatches::new();
        for located in batch::located_batches(input) {
            let (start, header) = located.map_err(|(at, e)| bad(at, e))?;
            let bytes = &input[start..start + header.size()];
            for (key, limit) in [
                ("segment.bytes", self.config.segment_bytes),
                ("max.message.bytes", self.config.max_message_bytes),
            ] {
                if header.size() as u64 > limit {
                    let size = header.size();
                    return Err(Error::RecordBatchTooLarge { size, limit, key });
                }
            }
            let (header, summary) = batch::validate(bytes).map_err(|e| bad(start, e))?;
            batch::check_produce_rules(&header, &summary, in_transaction)
                .map_err(|e| bad(start, e))?;
            if let (true, Some(record)) = (
                self.config.cleanup_policy.compacts(),
                summary.first_null_key,
            ) {
                return Err(Error::CompactedTopicNullKey { at: start, record });
            }
            self.config.check_timestamps(
                summary.min_record_timestamp,
                summary.max_record_timestamp,
                crate::time::now_ms(),
            )?;
            check_one_producer(
                out.first().map(|b: &PreparedBatch| &b.header),
                &header,
                in_transaction,
            )
            .map_err(|e| bad(start, e))?;
            out.push(PreparedBatch {
                start,
                header,
                max_record_timestamp: summary.max_record_timestamp,
                head: bytes[..HEADER_SIZE].try_into().expect("validated size"),
            });
        }
        Ok(out)
    }

    /// The batches in the topic's compression.type when it names a codec they are not in
    /// (Kafka's broker-side recompression); `None`: stored as the producer sent them.
    fn recompressed(&self, input: &[u8]) -> Result<Option<Vec<u8>>> {
        let crate::config::TopicCompression::Codec(codec) = self.config.compression else {
            return Ok(None);
        };
        let bad = |at: usize, source: BatchError| Error::InvalidBatch { at, source };
        let parts = split_batches_located(input).map_err(|(at, e)| bad(at, e))?;
        if parts.iter().all(|(_, h)| h.codec().ok() == Some(codec)) {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(input.len());
        for (start, header) in parts {
            let batch = &input[start..start + header.size()];
            let again = crate::format::batch::recompressed(batch, &header, codec)
                .map_err(|e| bad(start, e))?;
            out.extend_from_slice(&again);
        }
        Ok(Some(out))
    }

    /// Appends one or more v2 batches (as a producer sends them), assigning offsets from the
    /// log end. Either every batch is accepted or none is written. Transactional batches
    /// are refused: they come through `append_transactional`.
    pub async fn append(&mut self, input: &[u8]) -> Result<AppendInfo> {
        self.append_as(input, false).await
    }

    /// As `append`, for a producer whose transaction the coordinator verified: its
    /// transactional batches open (or extend) its transaction on this partition.
    pub async fn append_transactional(&mut self, input: &[u8]) -> Result<AppendInfo> {
        self.append_as(input, true).await
    }

    async fn append_as(&mut self, input: &[u8], in_transaction: bool) -> Result<AppendInfo> {
        self.check_healthy().await?;
        let recompressed = self.recompressed(input)?;
        let input = recompressed.as_deref().unwrap_or(input);
        let mut prepared = self.prepare(input, in_transaction)?;
        let now = crate::time::now_ms();
        let log_append_time =
            (self.config.timestamp_type == TimestampType::LogAppendTime).then_some(now);
        if let Some(original) = self
            .producers
            .check_all(prepared.iter().map(|p| &p.header))?
        {
            return Ok(AppendInfo {
                base_offset: original.first_offset,
                last_offset: original.last_offset,
                log_append_time: log_append_time.map(|_| original.timestamp),
                batches: 0,
                bytes: 0,
            });
        }
        let mut next = self.log_end_offset();
        // Only the 61-byte headers are rewritten (a copy of each); record bytes go from the
        // request straight to the appender.
        for p in &mut prepared {
            let body = &input[p.start + HEADER_SIZE..p.start + p.header.size()];
            set_base_offset(&mut p.head, next);
            set_partition_leader_epoch(&mut p.head, self.stamp_epoch);
            match log_append_time {
                Some(t) => {
                    set_header_max_timestamp(&mut p.head, body, TimestampType::LogAppendTime, t)
                }
                None => {
                    // Kafka recomputes maxTimestamp from the records for CreateTime.
                    let max = p.max_record_timestamp;
                    if max != p.header.max_timestamp {
                        set_header_max_timestamp(&mut p.head, body, TimestampType::CreateTime, max);
                    }
                }
            }
            next += p.header.last_offset_delta as i64 + 1;
        }
        let base_offset = self.log_end_offset();
        let r = self.write_batches(input, &prepared, now).await;
        self.note_failure(r)?;
        self.note_appended();
        self.assert_tail_invariants();
        Ok(AppendInfo {
            base_offset,
            last_offset: next - 1,
            log_append_time,
            batches: prepared.len(),
            bytes: input.len(),
        })
    }

    /// Appends batches whose offsets were assigned elsewhere (a replica, a cleaner, a
    /// restore): offsets must be at or past the log end and increasing; gaps are allowed.
    pub async fn append_with_assigned_offsets(&mut self, input: &[u8]) -> Result<AppendInfo> {
        self.check_healthy().await?;
        let parts = split_batches_located(input)
            .map_err(|(at, source)| Error::InvalidBatch { at, source })?;
        let mut prepared = Vec::with_capacity(parts.len());
        let mut next = self.log_end_offset();
        for (start, h) in parts {
            let (header, summary) =
                batch::validate(&input[start..start + h.size()]).map_err(|e| {
                    Error::InvalidBatch {
                        at: start,
                        source: e,
                    }
                })?;
            if header.size() as u64 > self.config.segment_bytes {
                return Err(Error::RecordBatchTooLarge {
                    size: header.size(),
                    limit: self.config.segment_bytes,
                    key: "segment.bytes",
                });
            }
            if header.base_offset < next {
                return Err(Error::NonMonotonicOffset {
                    base_offset: header.base_offset,
                    log_end: next,
                });
            }
            next = header.last_offset() + 1;
            prepared.push(PreparedBatch {
                start,
                header,
                max_record_timestamp: summary.max_record_timestamp,
                head: input[start..start + HEADER_SIZE]
                    .try_into()
                    .expect("validated size"),
            });
        }
        let base_offset = prepared[0].header.base_offset;
        let r = self
            .write_batches(input, &prepared, crate::time::now_ms())
            .await;
        self.note_failure(r)?;
        self.note_appended();
        self.assert_tail_invariants();
        Ok(AppendInfo {
            base_offset,
            last_offset: next - 1,
            log_append_time: None,
            batches: prepared.len(),
            bytes: input.len(),
        })
    }

    async fn write_batches(
        &mut self,
        input: &[u8],
        prepared: &[PreparedBatch],
        now: i64,
    ) -> Result<()> {
        for p in prepared {
            let body = &input[p.start + HEADER_SIZE..p.start + p.header.size()];
            // Re-read the header: offsets and timestamps were rewritten.
            let header = BatchHeader::parse_head(&p.head, p.header.size()).map_err(|e| {
                Error::InvalidBatch {
                    at: p.start,
                    source: e,
                }
            })?;
            if self.active().should_roll(&self.config, &header, now) {
                self.roll(header.base_offset).await?;
            }
            self.note_epoch(&header).await?;
            // Disjoint fields: the active segment appends while the config is read.
            let active = self.segments.last_mut().expect("a partition has a segment");
            active
                .append(&[&p.head, body], &header, &self.config)
                .await?;
            // Per batch: a roll before the next one snapshots the state with this one in it.
            let marker_bytes = header.is_control().then(|| [&p.head[..], body].concat());
            self.changed_since_open = true;
            let done =
                self.producers
                    .apply(&header, marker_bytes.as_deref().unwrap_or_default(), now);
            let first_unstable = self.producers.first_unstable_offset();
            if let Some(e) = done.and_then(|d| AbortedTxn::of(&d, first_unstable)) {
                self.aborted.push(e);
            }
        }
        Ok(())
    }

    /// Seals the active segment (fdatasync'd) and starts a new one at `base_offset`; the
    /// recovery point moves to the new segment and is checkpointed.
    pub(super) async fn roll(&mut self, base_offset: i64) -> Result<()> {
        let active = self.active_mut();
        if active.is_empty() && active.base_offset() == base_offset {
            return Ok(());
        }
        self.changed_since_open = true;
        let config = self.config.clone();
        let active = self.active_mut();
        active.seal(&config).await?;
        let (sealed_base, sealed_next) = (self.active().base_offset(), self.active().next_offset());
        self.aborted
            .write_segment(
                self.io.storage.as_ref(),
                &self.dir,
                sealed_base,
                sealed_next,
            )
            .await?;
        self.recovery_point = self.recovery_point.max(self.active().next_offset());
        let seg = Segment::create(self.io.clone(), &self.dir, base_offset, &self.config).await?;
        tracing::debug!(dir = %self.dir.display(), base_offset, "rolled segment");
        self.segments.push(seg);
        self.assert_invariants();
        self.io
            .storage
            .sync_dir(&self.dir)
            .await
            .map_err(|e| Error::io("fsync directory", &self.dir, e))?;
        RECOVERY_POINT
            .write(self.io.storage.as_ref(), &self.dir, self.recovery_point)
            .await?;
        let now = crate::time::now_ms();
        let storage = self.io.storage.clone();
        producer_state::write_snapshot(
            storage.as_ref(),
            &self.dir,
            base_offset,
            &mut self.producers,
            now,
        )
        .await
    }

    /// Rolls the active segment now if it holds anything (`topics roll`, and before a
    /// cleaning that should include the newest records).
    pub async fn roll_now(&mut self) -> Result<()> {
        self.check_healthy().await?;
        if self.active().is_empty() {
            return Ok(());
        }
        let end = self.log_end_offset();
        let r = self.roll(end).await;
        self.note_failure(r)
    }

    /// Applies a changed topic config without a restart: retention and compaction settings
    /// at their next pass, segment.bytes and segment.ms at the next roll decision,
    /// index.interval.bytes for new index entries, segment.index.bytes for new segments.
    pub fn set_config(&mut self, config: LogConfig) -> Result<()> {
        config.validate()?;
        let min_roll = self.config.min_time_roll_interval_ms;
        self.config = LogConfig {
            min_time_roll_interval_ms: min_roll,
            ..config
        };
        Ok(())
    }

    /// Gives back staging memory while the partition is idle (the server calls it when no
    /// request came for a while); the next append takes it again.
    pub fn release_idle_memory(&mut self) {
        self.active_mut().release_idle_memory();
    }

    /// Staging memory the active segment holds now.
    pub fn staging_bytes(&self) -> usize {
        self.active().log_file().staging_bytes()
    }

    /// Writes everything appended to the device (acks=1: survives a process kill).
    pub async fn flush(&mut self) -> Result<()> {
        self.check_healthy().await?;
        let r = self.active_mut().flush().await;
        self.note_failure(r)?;
        // Readers' end only moves forward: what they were shown stays readable.
        assert!(
            self.log_end_offset() >= self.visible_end,
            "flush moved the end back"
        );
        self.visible_end = self.log_end_offset();
        Ok(())
    }

    /// Flushes and fdatasyncs (acks=all: survives power loss). Sealed segments were synced
    /// when they were sealed.
    pub async fn sync(&mut self) -> Result<()> {
        self.check_healthy().await?;
        let r = self.active_mut().sync().await;
        self.note_failure(r)?;
        assert!(
            self.log_end_offset() >= self.recovery_point.max(self.visible_end),
            "a sync never makes less durable or less visible"
        );
        self.recovery_point = self.log_end_offset();
        self.visible_end = self.log_end_offset();
        self.synced_at = std::time::Instant::now();
        Ok(())
    }

    /// Whether the topic's flush.messages or flush.ms call for an fdatasync now (records
    /// appended since the last one).
    pub fn flush_due(&self) -> bool {
        let unsynced = (self.log_end_offset() - self.recovery_point).max(0) as u64;
        unsynced > 0 && self.config.flush_due(unsynced, self.synced_at.elapsed())
    }

    /// When `write_active_indexes` will next write them: now, or once the last try is
    /// `ACTIVE_INDEX_WRITE_INTERVAL` old. `None` while they are current or cannot be
    /// written (they lag durable data, or the log is unhealthy).
    pub fn active_indexes_due_at(&self) -> Option<std::time::Instant> {
        if !self.active_indexes_writable() {
            return None;
        }
        let now = std::time::Instant::now();
        let next = |at: std::time::Instant| (at + ACTIVE_INDEX_WRITE_INTERVAL).max(now);
        Some(self.active_indexes_tried_at.map_or(now, next))
    }

    /// Whether the active segment's index files on disk lag its in-memory indexes.
    pub fn active_indexes_stale(&self) -> bool {
        let now = (self.active().base_offset(), self.active().index_entries());
        match self.active_indexes_written {
            Some(written) => written != now,
            // Nothing to write for an empty index (a freshly opened partition costs no I/O).
            None => now.1 != (0, 0),
        }
    }

    /// Whether the index files lag and may be written now: every entry must point at
    /// durable data.
    fn active_indexes_writable(&self) -> bool {
        let healthy = !self.is_poisoned() && self.needs_reopen.is_none();
        healthy && self.recovery_point >= self.log_end_offset() && self.active_indexes_stale()
    }

    /// Writes the active segment's `.index` and `.timeindex` in place so they exist on disk
    /// while the partition runs (dump-log works on a live partition), when they lag, every
    /// entry points at durable data, and the last try is `ACTIVE_INDEX_WRITE_INTERVAL` old
    /// (or `now`). A failure is logged, not fatal: the files are rebuilt from the `.log`
    /// whenever they disagree with it.
    pub async fn write_active_indexes(&mut self, now: bool) {
        if !self.active_indexes_writable() {
            return;
        }
        let due = (self.active_indexes_tried_at)
            .is_none_or(|at| at.elapsed() >= ACTIVE_INDEX_WRITE_INTERVAL);
        if !(due || now) {
            return;
        }
        let state = (self.active().base_offset(), self.active().index_entries());
        self.active_indexes_tried_at = Some(std::time::Instant::now());
        match self.active().write_live_indexes().await {
            Ok(()) => self.active_indexes_written = Some(state),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "writing the active segment's index files")
            }
        }
    }

    /// Closes cleanly: the active segment is flushed, synced and trimmed, and its index
    /// files written, so a reopen finds everything as it was.
    pub async fn close(self) -> Result<()> {
        if self.poisoned.is_some() || self.needs_reopen.is_some() {
            // Writing anything now could claim data that is not there: leave the disk to
            // recovery at the next open.
            let dir = self.dir.clone();
            self.discard().await;
            return Err(Error::Poisoned {
                path: dir,
                cause: "closed without flushing after an I/O failure".into(),
            });
        }
        if !self.changed_since_open {
            return self.close_as_left().await;
        }
        let log_end = self.log_end_offset();
        let active_base = self.active().base_offset();
        let mut first_err = self
            .aborted
            .write_segment(self.io.storage.as_ref(), &self.dir, active_base, log_end)
            .await
            .err();
        for seg in self.segments {
            if let Err(e) = seg.close().await {
                first_err.get_or_insert(e);
            }
        }
        if first_err.is_none() {
            if let Err(e) = RECOVERY_POINT
                .write(self.io.storage.as_ref(), &self.dir, log_end)
                .await
            {
                first_err = Some(e);
            }
        }
        if first_err.is_none() {
            let storage = self.io.storage.as_ref();
            let hw = self.high_watermark;
            first_err = checkpoint_high_watermark(storage, &self.dir, hw, log_end)
                .await
                .err();
        }
        if first_err.is_none() {
            let (storage, now) = (self.io.storage.as_ref(), crate::time::now_ms());
            let mut producers = self.producers;
            if let Err(e) =
                producer_state::write_snapshot(storage, &self.dir, log_end, &mut producers, now)
                    .await
            {
                first_err = Some(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Closes a partition nothing changed since it opened as it was left: its index files,
    /// recovery point and producer snapshot already say what a close would write, so only
    /// its files are closed (and a replica's high watermark checkpointed: it moves without
    /// appends).
    async fn close_as_left(self) -> Result<()> {
        assert!(!self.changed_since_open, "only an unchanged partition");
        let (storage, hw) = (self.io.storage.as_ref(), self.high_watermark);
        let log_end = self.log_end_offset();
        let mut first_err = checkpoint_high_watermark(storage, &self.dir, hw, log_end)
            .await
            .err();
        for seg in self.segments {
            if let Err(e) = seg.close_as_left().await {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Closes without writing anything (the partition is being deleted): writes in flight
    /// are waited for, nothing is flushed, sealed or checkpointed.
    pub async fn discard(self) {
        for seg in self.segments {
            seg.abandon().await;
        }
    }

    /// Makes the next reads cold as far as this partition goes: fdatasync the active
    /// segment, then ask the OS to drop its cached pages of every file of the partition.
    /// (The shard's page cache is cleared by the shard.)
    pub async fn drop_os_caches(&mut self) -> Result<()> {
        if self.poisoned.is_none() && self.needs_reopen.is_none() {
            self.sync().await?;
        }
        let names = self
            .io
            .storage
            .list(&self.dir)
            .map_err(|e| Error::io("list", &self.dir, e))?;
        for name in names {
            let path = self.dir.join(name);
            self.io
                .storage
                .drop_os_cache(&path)
                .map_err(|e| Error::io("posix_fadvise", &path, e))?;
        }
        Ok(())
    }

    /// Reads whole batches from the batch containing `offset`, up to `max_bytes` (at least
    /// one batch). `offset == log end` gives an empty result.
    pub async fn read(&mut self, offset: i64, max_bytes: usize) -> Result<ByteChain> {
        self.read_bounded(offset, max_bytes, true).await
    }

    /// [`Self::read`], where `at_least_one == false` makes `max_bytes` strict: a first batch
    /// larger than it gives an empty result (a multi-partition fetch's later partitions).
    pub async fn read_bounded(
        &mut self,
        offset: i64,
        max_bytes: usize,
        at_least_one: bool,
    ) -> Result<ByteChain> {
        let end = self.visible_end_offset();
        self.read_below(offset, max_bytes, at_least_one, end).await
    }

    /// Whole batches from the one holding `offset` that start below `end` (the high
    /// watermark for a consumer, the acknowledged log end for a follower). An offset up
    /// to the log end is in range (a consumer ahead of the high watermark reads nothing);
    /// past it, OffsetOutOfRange.
    pub(super) async fn read_below(
        &mut self,
        offset: i64,
        max_bytes: usize,
        at_least_one: bool,
        end: i64,
    ) -> Result<ByteChain> {
        self.reopen_if_needed().await?;
        assert!(
            end <= self.visible_end,
            "reads stop at acknowledged records"
        );
        if offset < self.log_start_offset || offset > self.visible_end {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start: self.log_start_offset,
                log_end: self.visible_end,
            });
        }
        let first = self
            .segments
            .partition_point(|s| s.base_offset() <= offset)
            .saturating_sub(1);
        if offset >= end {
            return Ok(ByteChain::default());
        }
        for seg in &mut self.segments[first..] {
            if let Some(data) = seg.read(offset, max_bytes, at_least_one).await? {
                let visible = visible_prefix(data, end);
                // Strict reads never exceed their bound; others by at most their first batch.
                assert!(at_least_one || visible.len() <= max_bytes);
                assert!(
                    first_batch_reaches(&visible, offset),
                    "a read starts at the batch holding {offset}, never below it"
                );
                return Ok(visible);
            }
        }
        Ok(ByteChain::default())
    }

    /// Kafka's `fetchOffsetByTimestamp`: for a target T >= 0, the first record in offset
    /// order with timestamp >= T; `EARLIEST_TIMESTAMP`, `LATEST_TIMESTAMP` and
    /// `MAX_TIMESTAMP` as in Kafka. `None` means no such record (not an error).
    pub async fn find_offset_by_timestamp(
        &mut self,
        target: i64,
    ) -> Result<Option<TimestampOffset>> {
        self.reopen_if_needed().await?;
        match target {
            EARLIEST_TIMESTAMP => Ok(Some(TimestampOffset {
                offset: self.log_start_offset,
                timestamp: -1,
            })),
            LATEST_TIMESTAMP => Ok(Some(TimestampOffset {
                offset: self.visible_end_offset(),
                timestamp: -1,
            })),
            MAX_TIMESTAMP => {
                let max = self.segments.iter().map(|s| s.max_timestamp()).max();
                match max {
                    Some(m) if m >= 0 => self.search_timestamp(m).await,
                    _ => Ok(None),
                }
            }
            t if t < 0 => Err(Error::InvalidTimestamp(t)),
            t => self.search_timestamp(t).await,
        }
    }

    async fn search_timestamp(&mut self, target: i64) -> Result<Option<TimestampOffset>> {
        let start = self.log_start_offset;
        let visible_end = self.visible_end_offset();
        // The first segment whose max timestamp reaches the target usually answers; a later
        // one only when that segment's matches all lie below the log start.
        for seg in self
            .segments
            .iter_mut()
            .filter(|s| s.max_timestamp() >= target && s.next_offset() > start)
        {
            if let Some((offset, timestamp)) = seg.find_offset_by_timestamp(target, start).await? {
                // Kafka's offsetsForTimes: the answer is a record at or after the target time,
                // at or above the log start.
                assert!(
                    offset >= start && timestamp >= target,
                    "{offset}@{timestamp}"
                );
                return Ok((offset < visible_end).then_some(TimestampOffset { offset, timestamp }));
            }
        }
        Ok(None)
    }
}

/// Whether the first batch of a read holds `offset` or lies above it (compaction may have
/// removed the offset itself), never wholly below it.
fn first_batch_reaches(data: &ByteChain, offset: i64) -> bool {
    match crate::format::cursor::BatchCursor::new(data).next() {
        Some(Ok((_, h))) => h.last_offset() >= offset,
        _ => data.is_empty(),
    }
}

/// The whole batches of `data` (as a segment read returns them) that start below
/// `visible_end`: records not yet acknowledged as written are never served.
pub(super) fn visible_prefix(data: ByteChain, visible_end: i64) -> ByteChain {
    let mut end = 0usize;
    for step in crate::format::cursor::BatchCursor::new(&data) {
        match step {
            Ok((at, h)) if h.base_offset < visible_end => end = at + h.size(),
            _ => break,
        }
    }
    assert!(end <= data.len());
    data.slice(0, end)
}

/// A transactional append was verified for one producer (its first batch's): every batch
/// in it must be that producer's, at that epoch, or a batch nobody verified would open a
/// transaction no coordinator ends (and hold the last stable offset for ever).
fn check_one_producer(
    first: Option<&BatchHeader>,
    next: &BatchHeader,
    in_transaction: bool,
) -> std::result::Result<(), BatchError> {
    let Some(first) = first.filter(|_| in_transaction) else {
        return Ok(());
    };
    if (first.producer_id, first.producer_epoch) == (next.producer_id, next.producer_epoch) {
        return Ok(());
    }
    Err(BatchError::ForeignProducer {
        verified_id: first.producer_id,
        verified_epoch: first.producer_epoch,
        found_id: next.producer_id,
        found_epoch: next.producer_epoch,
    })
}

/// A replicated partition's high watermark (at most the log end), at a close; nothing for
/// a partition on one node.
async fn checkpoint_high_watermark(
    storage: &dyn crate::io::Storage,
    dir: &Path,
    hw: Option<i64>,
    log_end: i64,
) -> Result<()> {
    let Some(hw) = hw else {
        return Ok(());
    };
    super::checkpoint::HIGH_WATERMARK
        .write(storage, dir, hw.min(log_end).max(0))
        .await
}
