//! Retention (Kafka's `UnifiedLog.deleteOldSegments`) and DeleteRecords: the log start
//! offset moves forward and whole segments below it go, crash-safely: the segment's files
//! are renamed to `.deleted` (the loader removes such leftovers), the directory is
//! fsync'd, the new log start offset is checkpointed, and the files are removed
//! `file.delete.delay.ms` later.

use std::path::PathBuf;

use super::checkpoint::LOG_START_OFFSET;
use super::file_names::segment_path;
use super::partition::PartitionLog;
use super::segment::Segment;
use super::txn_index::TXN_INDEX_SUFFIX;
use super::{DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use crate::error::{Error, Result};
use crate::io::storage::with_suffix;

/// Bounds how long a loop of synchronous file-system calls keeps the shard: after each
/// slice it yields, so requests of other tasks run in between.
struct Slice(std::time::Instant);

impl Slice {
    const LENGTH: std::time::Duration = std::time::Duration::from_micros(500);

    fn start() -> Self {
        Slice(std::time::Instant::now())
    }

    async fn yield_if_spent(&mut self) {
        if self.0.elapsed() >= Self::LENGTH {
            futures_lite::future::yield_now().await;
            self.0 = std::time::Instant::now();
        }
    }
}

/// What one retention pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    pub segments_deleted: usize,
    pub bytes_deleted: u64,
    /// `.deleted` files removed because their delay passed.
    pub files_removed: usize,
}

impl RetentionOutcome {
    fn add(&mut self, o: RetentionOutcome) {
        self.segments_deleted += o.segments_deleted;
        self.bytes_deleted += o.bytes_deleted;
        self.files_removed += o.files_removed;
    }
}

/// Why a segment may go, as Kafka's three rules put it.
enum Rule {
    /// The next segment starts at or below the log start offset.
    StartOffset,
    /// The log is larger than retention.bytes by at least this segment's size.
    Size { excess: i64 },
    /// The segment's newest record is older than retention.ms.
    Time { now_ms: i64 },
}

impl Rule {
    fn allows(&mut self, log: &PartitionLog, seg: &Segment, next: Option<&Segment>) -> bool {
        // A tiered log deletes by size or time only what the remote tier already holds
        // (Kafka's UnifiedLog: up to the highest offset copied); DeleteRecords goes anyway.
        if !matches!(self, Rule::StartOffset) && !log.copied_to_remote(seg) {
            return false;
        }
        match self {
            Rule::StartOffset => next.is_some_and(|n| n.base_offset() <= log.log_start_offset),
            Rule::Size { excess } => {
                let size = seg.size() as i64;
                let ok = *excess - size >= 0;
                if ok {
                    *excess -= size;
                }
                ok
            }
            Rule::Time { now_ms } => {
                *now_ms - seg.largest_timestamp() > log.config.local_retention_ms()
            }
        }
    }
}

impl PartitionLog {
    /// Kafka's retention pass: segments below the log start offset always go; with a
    /// cleanup.policy containing `delete`, also the oldest segments beyond retention.bytes
    /// and those older than retention.ms (for a tiered log: the local retention, and only
    /// segments already copied). Then `.deleted` files whose delay passed are removed.
    pub async fn apply_retention(&mut self, now_ms: i64) -> Result<RetentionOutcome> {
        self.reopen_if_needed().await?;
        let (start_before, end_before) = (self.log_start_offset, self.visible_end);
        let mut out = self.delete_by(Rule::StartOffset, now_ms).await?;
        if self.config.cleanup_policy.deletes() {
            let retention_bytes = self.config.local_retention_bytes();
            if retention_bytes >= 0 {
                let excess = self.size_bytes() as i64 - retention_bytes;
                out.add(self.delete_by(Rule::Size { excess }, now_ms).await?);
            }
            if self.config.local_retention_ms() >= 0 {
                out.add(self.delete_by(Rule::Time { now_ms }, now_ms).await?);
            }
        }
        out.files_removed = self.remove_due_files(now_ms).await;
        // Retention removes from the front only: the start moves up, the end never back.
        assert!(self.log_start_offset >= start_before);
        assert!(self.visible_end >= end_before);
        Ok(out)
    }

    /// Kafka's `deletableSegments`: from the oldest, while the rule allows it, never an empty
    /// active segment, and only segments wholly acknowledged (below the visible end).
    fn deletable_count(&self, mut rule: Rule) -> usize {
        let mut n = 0;
        while let Some(seg) = self.segments.get(n) {
            let next = self.segments.get(n + 1);
            let last_and_empty = next.is_none() && seg.is_empty();
            let upper = next.map_or(self.log_end_offset(), |s| s.base_offset());
            if last_and_empty || self.visible_end < upper || !rule.allows(self, seg, next) {
                break;
            }
            n += 1;
        }
        n
    }

    async fn delete_by(&mut self, rule: Rule, now_ms: i64) -> Result<RetentionOutcome> {
        let n = self.deletable_count(rule);
        if n == 0 {
            return Ok(RetentionOutcome::default());
        }
        if n == self.segments.len() {
            // Every segment qualifies, the active one too: roll so an empty one remains.
            let end = self.log_end_offset();
            let r = self.roll(end).await;
            self.note_failure(r)?;
        }
        self.delete_oldest(n, now_ms).await
    }

    /// Deletes the `n` oldest segments (never the active one) and moves the log start
    /// offset to the first remaining segment.
    async fn delete_oldest(&mut self, n: usize, now_ms: i64) -> Result<RetentionOutcome> {
        assert!(
            n < self.segments.len(),
            "the active segment is never deleted"
        );
        self.changed_since_open |= n > 0;
        let gone: Vec<Segment> = self.segments.drain(..n).collect();
        // Only wholly acknowledged segments go: a reader was never shown less than them.
        assert!(gone
            .last()
            .is_none_or(|s| s.next_offset() <= self.visible_end));
        let bytes: u64 = gone.iter().map(|s| s.size()).sum();
        let mut renamed = Vec::new();
        let mut slice = Slice::start();
        for seg in gone {
            let base = seg.base_offset();
            seg.abandon().await;
            renamed.extend(self.rename_segment_files_deleted(base).await?);
            slice.yield_if_spent().await;
        }
        self.sync_dir().await?;
        let start = self.segments[0].base_offset();
        self.advance_log_start(start).await?;
        // Nothing below the new first segment is served any more.
        assert!(self.log_start_offset >= start);
        let due = now_ms.saturating_add(self.config.file_delete_delay_ms);
        self.pending_removals
            .extend(renamed.into_iter().map(|p| (due, p)));
        tracing::info!(dir = %self.dir.display(), segments = n, bytes, log_start = self.log_start_offset, "retention deleted segments");
        Ok(RetentionOutcome {
            segments_deleted: n,
            bytes_deleted: bytes,
            files_removed: 0,
        })
    }

    /// Renames a segment's files to `<name>.deleted`; returns the new paths.
    pub(super) async fn rename_segment_files_deleted(&self, base: i64) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for suffix in [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ] {
            let from = segment_path(&self.dir, base, suffix);
            if !self.io.storage.exists(&from) {
                continue;
            }
            let to = with_suffix(&from, DELETED_SUFFIX);
            self.io
                .storage
                .rename(&from, &to)
                .await
                .map_err(|e| Error::io("rename", &from, e))?;
            out.push(to);
        }
        Ok(out)
    }

    pub(super) async fn sync_dir(&self) -> Result<()> {
        self.io
            .storage
            .sync_dir(&self.dir)
            .await
            .map_err(|e| Error::io("fsync directory", &self.dir, e))
    }

    /// Moves the log start offset forward (never back) and checkpoints it.
    async fn advance_log_start(&mut self, offset: i64) -> Result<()> {
        if offset <= self.log_start_offset {
            return Ok(());
        }
        self.changed_since_open = true;
        assert!(
            offset <= self.visible_end,
            "log start {offset} past the visible end {}",
            self.visible_end
        );
        LOG_START_OFFSET
            .write(self.io.storage.as_ref(), &self.dir, offset)
            .await?;
        self.log_start_offset = offset;
        self.aborted.drop_below(offset);
        self.assert_invariants();
        Ok(())
    }

    /// Kafka's DeleteRecords: records below `offset` are no longer served (-1: the visible
    /// end, Kafka's high watermark). The segments wholly below go with the next retention
    /// pass. Returns the new log start offset (Kafka's low watermark).
    pub async fn delete_records_before(&mut self, offset: i64) -> Result<i64> {
        self.reopen_if_needed().await?;
        let target = if offset == -1 {
            self.visible_end
        } else {
            offset
        };
        if target < 0 || target > self.visible_end {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start: self.log_start_offset,
                log_end: self.visible_end,
            });
        }
        self.advance_log_start(target).await?;
        Ok(self.log_start_offset)
    }

    /// Removes `.deleted` files whose delay has passed; a file that cannot be removed now is
    /// tried again at the next pass (and by the loader at the next open in any case). Unlinks
    /// run off the shard's thread, and the pass yields between them.
    pub async fn remove_due_files(&mut self, now_ms: i64) -> usize {
        let storage = self.io.storage.clone();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_removals)
            .into_iter()
            .partition(|(at, _)| *at <= now_ms);
        self.pending_removals = later;
        let mut removed = 0;
        let mut slice = Slice::start();
        for (at, path) in due {
            match storage.remove(&path).await {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "could not remove a deleted segment file; retrying later");
                    self.pending_removals.push((at, path));
                }
            }
            slice.yield_if_spent().await;
        }
        removed
    }

    /// Files waiting for their `file.delete.delay.ms` to pass.
    pub fn pending_file_removals(&self) -> usize {
        self.pending_removals.len()
    }
}
