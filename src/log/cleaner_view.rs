//! Why the cleaner will or will not compact a partition now: Kafka's dirty ratio and its
//! inputs, computed once for the cleaner's own decision (`cleaning_plan`) and for operators
//! (`log-dirs`), so what they see is what the cleaner decides on.

use super::partition::PartitionLog;

/// A sealed segment the cleaner may rewrite (older than min.compaction.lag.ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SegmentRef {
    pub base: i64,
    pub size: u64,
    pub next_offset: i64,
}

/// The cleaner's view of one compacted partition at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CleanerView {
    /// First offset not compacted yet (the cleaner checkpoint, at least the log start).
    pub first_dirty: i64,
    /// Cleanable bytes at or above `first_dirty`.
    pub dirty_bytes: u64,
    /// Cleanable bytes below `first_dirty` (compacted before).
    pub clean_bytes: u64,
    /// Bytes the cleaner may not touch yet: the active segment, and sealed segments
    /// holding records younger than min.compaction.lag.ms.
    pub uncleanable_bytes: u64,
    /// The oldest dirty record is older than max.compaction.lag.ms.
    pub overdue: bool,
    /// A tombstone kept by the last cleaning has passed its delete horizon.
    pub tombstones_expired: bool,
    /// Wall-clock ms of this process's last cleaning of the partition (None: not since
    /// the server started).
    pub last_cleaned_ms: Option<i64>,
}

impl CleanerView {
    /// Dirty bytes over all cleanable bytes (Kafka's `cleanableRatio`).
    pub fn dirty_ratio(&self) -> f64 {
        self.dirty_bytes as f64 / (self.clean_bytes + self.dirty_bytes).max(1) as f64
    }

    /// Whether the cleaner will clean at its next check, with `min_ratio` the partition's
    /// min.cleanable.dirty.ratio.
    pub fn due(&self, min_ratio: f64) -> bool {
        (self.dirty_bytes > 0 && self.dirty_ratio() > min_ratio)
            || self.overdue
            || self.tombstones_expired
    }
}

impl PartitionLog {
    /// The cleaner's view now; `None` when the policy does not compact.
    pub fn cleaner_view(&self, now_ms: i64) -> Option<CleanerView> {
        if !self.config.cleanup_policy.compacts() {
            return None;
        }
        Some(self.view_of(&self.cleanable_segments(now_ms), now_ms))
    }

    /// Sealed segments, oldest first, up to the first one holding a record younger than
    /// min.compaction.lag.ms or a record of an undecided transaction (the active segment is
    /// never cleanable; Kafka never cleans past the first unstable offset).
    pub(super) fn cleanable_segments(&self, now_ms: i64) -> Vec<SegmentRef> {
        let lag_bound = now_ms.saturating_sub(self.config.min_compaction_lag_ms);
        let stable = self.last_stable_offset();
        self.segments[..self.segments.len() - 1]
            .iter()
            .take_while(|s| s.is_empty() || s.largest_timestamp() <= lag_bound)
            .take_while(|s| s.next_offset() <= stable)
            .map(|s| SegmentRef {
                base: s.base_offset(),
                size: s.size(),
                next_offset: s.next_offset(),
            })
            .collect()
    }

    /// The view from the cleaner checkpoint kept in memory (read at open, written by each
    /// cleaning): no file is read, so DescribeLogs and every cleaning check stay cheap.
    pub(super) fn view_of(&self, cleanable: &[SegmentRef], now_ms: i64) -> CleanerView {
        let first_dirty = self.cleaner_checkpoint.max(self.log_start_offset);
        let (clean, dirty): (Vec<&SegmentRef>, Vec<&SegmentRef>) =
            cleanable.iter().partition(|s| s.next_offset <= first_dirty);
        let cleanable_bytes: u64 = cleanable.iter().map(|s| s.size).sum();
        let overdue = dirty.first().is_some_and(|d| {
            let seg = self.segments.iter().find(|s| s.base_offset() == d.base);
            seg.is_some_and(|s| {
                now_ms.saturating_sub(s.first_batch_timestamp()) > self.config.max_compaction_lag_ms
            })
        });
        let view = CleanerView {
            first_dirty,
            dirty_bytes: dirty.iter().map(|s| s.size).sum(),
            clean_bytes: clean.iter().map(|s| s.size).sum(),
            uncleanable_bytes: self.size_bytes().saturating_sub(cleanable_bytes),
            overdue,
            tombstones_expired: self.tombstone_horizon.is_some_and(|h| now_ms >= h),
            last_cleaned_ms: self.last_cleaned_ms,
        };
        // The three byte counts partition the log.
        assert_eq!(
            view.dirty_bytes + view.clean_bytes + view.uncleanable_bytes,
            self.size_bytes()
        );
        view
    }
}
