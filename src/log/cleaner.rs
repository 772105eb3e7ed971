//! Log compaction (Kafka's `LogCleaner`), in three steps so the partition keeps serving
//! while its log is cleaned:
//! 1. [`PartitionLog::cleaning_plan`] (on the partition's task): is the log due, and which
//!    sealed segments are cleanable (never the active segment, nor any segment holding
//!    records younger than min.compaction.lag.ms)?
//! 2. [`CleaningPlan::run`] (anywhere on the shard, low priority, rate-limited): map each
//!    key of the dirty range to its latest offset, within a memory budget (a dirty range
//!    with more keys is cleaned in several passes), then rewrite every cleanable segment up
//!    to the end of the map into `<base>.log.cleaned` (+ index files), keeping a record only
//!    if no later record has its key, and dropping tombstones whose delete horizon passed.
//!    Sealed segments never change, so this reads them through its own descriptors.
//! 3. [`PartitionLog::commit_cleaning`] (on the partition's task): per segment, rename
//!    `.cleaned` to `.swap` (the commit point: the loader finishes a swap), the old files
//!    to `.deleted`, the swap files to their final names; then checkpoint where the dirty
//!    range now starts (`cleaner-offset-checkpoint`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::batch_stream::{BatchStream, Next, BACKGROUND};
use super::checkpoint::CLEANER_OFFSET;
use super::cleaner_view::SegmentRef;
use super::file_names::segment_path;
use super::index_state::IndexState;
use super::partition::PartitionLog;
use super::segment::Segment;
use super::txn_index::AbortedTxn;
use super::{CLEANED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::batch::{check_framing_and_crc, RecordsSection};
use crate::format::retain::{retain_records, stamp_delete_horizon, Retained};
use crate::format::BatchError;
use crate::format::BatchHeader;
use crate::io::storage::{with_suffix, write_new_file_synced};
use crate::io::{LogFile, OpenMode, Storage, StorageFile};

/// Bytes a key costs in the map besides its own length (hash table slot, offset, Vec).
const MAP_ENTRY_OVERHEAD: usize = 48;

/// Server-wide limits of the cleaner.
#[derive(Debug, Clone, Copy)]
pub struct CleanerLimits {
    /// log.cleaner.dedupe.buffer.size: memory for the key map of one pass.
    pub dedupe_buffer_bytes: usize,
    /// log.cleaner.io.max.bytes.per.second: read + write rate (0: unlimited).
    pub io_bytes_per_second: u64,
}

impl Default for CleanerLimits {
    fn default() -> Self {
        CleanerLimits {
            dedupe_buffer_bytes: 128 << 20,
            io_bytes_per_second: 0,
        }
    }
}

/// What to clean, taken from the partition at one moment.
pub struct CleaningPlan {
    storage: Rc<dyn Storage>,
    dir: PathBuf,
    config: LogConfig,
    now_ms: i64,
    /// First offset not compacted yet.
    first_dirty: i64,
    /// Cleanable sealed segments, oldest first.
    segments: Vec<SegmentRef>,
    /// Aborted transactions whose records may lie in the cleanable segments: their
    /// records are removed whatever their keys, and never shadow committed ones.
    aborted: Vec<AbortedTxn>,
    /// During the copy: producers with records of their current transaction kept since
    /// their last marker (a marker whose transaction kept none may go, KIP-534).
    kept_txn_data: std::cell::RefCell<std::collections::HashSet<i64>>,
}

/// One rewritten segment waiting to be swapped in.
struct CleanedSegment {
    original: SegmentRef,
    size: u64,
}

/// The output of [`CleaningPlan::run`].
pub struct CleanedLog {
    plan: CleaningPlan,
    cleaned: Vec<CleanedSegment>,
    /// Offsets below this were mapped: the dirty range starts here after the commit.
    map_end: i64,
    /// Earliest delete horizon of a tombstone kept.
    tombstone_horizon: Option<i64>,
    pub stats: CleanStats,
}

/// What a cleaning did (for logs, tests and the benchmark).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_kept: u64,
    pub records_removed: u64,
    pub segments_cleaned: usize,
    pub keys_mapped: usize,
    /// Peak bytes of the key map.
    pub map_bytes: usize,
}

/// Latest offset per key over a dirty range, within a byte budget.
struct KeyMap {
    latest: HashMap<Vec<u8>, i64>,
    bytes: usize,
}

impl KeyMap {
    fn record_cost(key: &[u8]) -> usize {
        key.len() + MAP_ENTRY_OVERHEAD
    }
}

/// CPU the cleaner uses before it lets the shard's other task queues run. Its reads are
/// usually ready ahead of it, so without this it would keep the executor for whole segments
/// and requests arriving meanwhile would wait.
const CPU_SLICE: Duration = Duration::from_micros(50);

/// Paces the cleaner: reads and writes to a byte rate (sleeping when ahead of it), and CPU
/// in short slices (yielding its task queue after each).
struct Throttle {
    rate: u64,
    started: Instant,
    bytes: u64,
    slice_started: Instant,
}

impl Throttle {
    fn new(rate: u64) -> Self {
        Throttle {
            rate,
            started: Instant::now(),
            bytes: 0,
            slice_started: Instant::now(),
        }
    }

    async fn account(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
        if self.slice_started.elapsed() >= CPU_SLICE {
            // A timer, not a mere yield: with this task pending, the executor polls the
            // reactor, so requests that arrived meanwhile are seen and run first (a yielded
            // queue would be picked again before any new event is noticed).
            glommio::timer::sleep(Duration::from_micros(1)).await;
            self.slice_started = Instant::now();
        }
        if self.rate == 0 {
            return;
        }
        let due = Duration::from_secs_f64(self.bytes as f64 / self.rate as f64);
        let elapsed = self.started.elapsed();
        if due > elapsed + Duration::from_millis(5) {
            glommio::timer::sleep(due - elapsed).await;
        }
    }
}

impl PartitionLog {
    /// Whether the log is due for cleaning (or `force`d), and what to clean. `None` when
    /// the policy does not compact or nothing is cleanable.
    pub async fn cleaning_plan(
        &mut self,
        now_ms: i64,
        force: bool,
    ) -> Result<Option<CleaningPlan>> {
        if !self.config.cleanup_policy.compacts() || self.is_poisoned() {
            return Ok(None);
        }
        self.reopen_if_needed().await?;
        let cleanable = self.cleanable_segments(now_ms);
        let view = self.view_of(&cleanable, now_ms);
        let due = force || view.due(self.config.min_cleanable_dirty_ratio);
        tracing::debug!(dir = %self.dir.display(), ?view, ratio = view.dirty_ratio(), force, cleanable = cleanable.len(), "cleaning check");
        if !due || cleanable.is_empty() {
            return Ok(None);
        }
        Ok(Some(CleaningPlan {
            storage: self.io.storage.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            now_ms,
            first_dirty: view.first_dirty,
            aborted: self.aborted.overlapping_entries(cleanable[0].base),
            kept_txn_data: Default::default(),
            segments: cleanable,
        }))
    }

    /// Swaps the cleaned segments in (see the module comment). Segments that retention or
    /// another cleaning changed meanwhile are not swapped; their cleaned files are removed.
    pub async fn commit_cleaning(&mut self, done: CleanedLog) -> Result<CleanStats> {
        let ends = (self.log_start_offset, self.visible_end);
        let mut swapped = 0;
        let mut result = Ok(());
        for c in &done.cleaned {
            if result.is_ok() && self.still_holds(&c.original) {
                result = self.swap_in(c, done.plan.now_ms).await;
                swapped += result.is_ok() as usize;
            } else {
                remove_cleaned_files(self.io.storage.as_ref(), &self.dir, c.original.base).await;
            }
        }
        // One directory fsync for every swap of the pass (each swap is safe at any point on
        // its own; this makes them durable before the checkpoint says they happened).
        if swapped > 0 && result.is_ok() {
            result = self.sync_dir().await;
        }
        self.note_failure(result)?;
        if swapped == done.cleaned.len() {
            let end = done.map_end.max(self.log_start_offset);
            CLEANER_OFFSET
                .write(self.io.storage.as_ref(), &self.dir, end)
                .await?;
            self.cleaner_checkpoint = end;
            self.tombstone_horizon = done.tombstone_horizon;
            self.last_cleaned_ms = Some(crate::time::now_ms());
        }
        let mut stats = done.stats;
        stats.segments_cleaned = swapped;
        // Cleaning removes records inside the log (sealed segments only), never its ends.
        assert_eq!((self.log_start_offset, self.visible_end), ends);
        tracing::info!(dir = %self.dir.display(), ?stats, "cleaned");
        Ok(stats)
    }

    /// First offset not compacted yet (the cleaner checkpoint, at least the log start).
    pub async fn cleaner_offset(&self) -> i64 {
        self.cleaner_checkpoint.max(self.log_start_offset)
    }

    /// The sealed segment the plan saw is still in the log, unchanged.
    fn still_holds(&self, original: &SegmentRef) -> bool {
        let n = self.segments.len();
        self.segments[..n - 1].iter().any(|s| {
            s.base_offset() == original.base
                && s.size() == original.size
                && s.next_offset() == original.next_offset
        })
    }

    async fn swap_in(&mut self, c: &CleanedSegment, now_ms: i64) -> Result<()> {
        self.changed_since_open = true;
        let base = c.original.base;
        let at = self
            .segments
            .iter()
            .position(|s| s.base_offset() == base)
            .expect("checked by still_holds");
        // An emptied segment goes, unless it is the first (it holds the log start offset).
        let drop_it = c.size == 0 && at > 0;
        if !drop_it {
            self.rename_cleaned_to_swap(base).await?;
        }
        let old = self.segments.remove(at);
        old.abandon().await;
        let deleted = self.rename_segment_files_deleted(base).await?;
        if drop_it {
            remove_cleaned_files(self.io.storage.as_ref(), &self.dir, base).await;
        } else {
            for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                let target = segment_path(&self.dir, base, suffix);
                rename(
                    self.io.storage.as_ref(),
                    &with_suffix(&target, SWAP_SUFFIX),
                    &target,
                )
                .await?;
            }
        }
        self.sync_dir().await?;
        let due = now_ms.saturating_add(self.config.file_delete_delay_ms);
        self.pending_removals
            .extend(deleted.into_iter().map(|p| (due, p)));
        if !drop_it {
            let seg = Segment::open(self.io.clone(), &self.dir, base, &self.config, false).await?;
            assert_eq!(
                seg.size(),
                c.size,
                "the swapped-in segment is the cleaned one"
            );
            self.segments.insert(at, seg);
        }
        self.assert_invariants();
        Ok(())
    }

    /// The commit point of a swap: the `.log` first, so once its `.swap` exists the loader
    /// completes the swap.
    async fn rename_cleaned_to_swap(&self, base: i64) -> Result<()> {
        for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
            let target = segment_path(&self.dir, base, suffix);
            rename(
                self.io.storage.as_ref(),
                &with_suffix(&target, CLEANED_SUFFIX),
                &with_suffix(&target, SWAP_SUFFIX),
            )
            .await?;
        }
        Ok(())
    }

    /// Plans, runs and commits one cleaning pass in place (tests and the benchmark; the
    /// server runs the middle step outside the partition's task).
    pub async fn clean_now(
        &mut self,
        now_ms: i64,
        limits: CleanerLimits,
    ) -> Result<Option<CleanStats>> {
        let Some(plan) = self.cleaning_plan(now_ms, true).await? else {
            return Ok(None);
        };
        let cleaned = plan.run(limits).await?;
        self.commit_cleaning(cleaned).await.map(Some)
    }
}

async fn rename(storage: &dyn Storage, from: &Path, to: &Path) -> Result<()> {
    storage
        .rename(from, to)
        .await
        .map_err(|e| Error::io("rename", from, e))
}

async fn remove_cleaned_files(storage: &dyn Storage, dir: &Path, base: i64) {
    for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
        let p = with_suffix(&segment_path(dir, base, suffix), CLEANED_SUFFIX);
        if storage.exists(&p) {
            if let Err(e) = storage.remove(&p).await {
                tracing::warn!(file = %p.display(), error = %e, "could not remove a cleaned file; the next open removes it");
            }
        }
    }
}

/// The batches of a sealed segment, each checked (framing, CRC), read through a
/// descriptor of its own.
struct SealedBatches {
    stream: BatchStream,
    file: Rc<dyn StorageFile>,
    path: PathBuf,
}

impl SealedBatches {
    async fn open(storage: &dyn Storage, dir: &Path, seg: &SegmentRef) -> Result<Self> {
        let path = segment_path(dir, seg.base, LOG_SUFFIX);
        let file = storage
            .open(&path, OpenMode::ReadOnly)
            .await
            .map_err(|e| Error::io("open", &path, e))?;
        Ok(SealedBatches {
            stream: BatchStream::new(file.clone(), &path, seg.size, BACKGROUND),
            file,
            path,
        })
    }

    /// The next batch and where it starts, or `None` at the end.
    async fn next(&mut self) -> Result<Option<(u64, &[u8], BatchHeader)>> {
        match self.stream.next().await? {
            Next::End => Ok(None),
            Next::Stop {
                position, reason, ..
            } => Err(Error::corruption(&self.path, position, reason)),
            Next::Batch { position, bytes } => {
                let h = check_framing_and_crc(bytes)
                    .map_err(|e| Error::corruption(&self.path, position, e.to_string()))?;
                Ok(Some((position, bytes, h)))
            }
        }
    }

    async fn close(self) {
        let _ = self.file.close().await;
    }
}

impl CleaningPlan {
    /// Offset the dirty range starts at.
    pub fn first_dirty(&self) -> i64 {
        self.first_dirty
    }

    /// What becomes of a transaction marker (Kafka's rule, KIP-534): it stays while its
    /// transaction has records left; once none is, it is stamped with a delete horizon,
    /// and a cleaning after the horizon removes it.
    fn marker_outcome(
        &self,
        bytes: &[u8],
        h: &BatchHeader,
        new_horizon: i64,
    ) -> std::result::Result<Retained, BatchError> {
        if self.kept_txn_data.borrow_mut().remove(&h.producer_id) {
            return Ok(Retained::All);
        }
        match h.delete_horizon_ms() {
            Some(t) if self.now_ms >= t => Ok(Retained::Nothing),
            Some(_) => Ok(Retained::All),
            None => stamp_delete_horizon(bytes, h, new_horizon).map(Retained::Some),
        }
    }

    /// Whether a data batch belongs to an aborted transaction (its producer's, spanning it).
    fn is_aborted(&self, h: &BatchHeader) -> bool {
        h.is_transactional()
            && !h.is_control()
            && self.aborted.iter().any(|a| {
                a.producer_id == h.producer_id
                    && a.first_offset <= h.base_offset
                    && h.last_offset() <= a.last_offset
            })
    }

    /// Builds the key map and writes the cleaned segments. On failure, every `.cleaned`
    /// file written is removed (the loader would remove them at the next open anyway).
    pub async fn run(self, limits: CleanerLimits) -> Result<CleanedLog> {
        let mut throttle = Throttle::new(limits.io_bytes_per_second);
        let mut stats = CleanStats::default();
        let (map, map_end) = self.build_map(limits, &mut throttle, &mut stats).await?;
        stats.keys_mapped = map.latest.len();
        stats.map_bytes = map.bytes;
        let mut cleaned = Vec::new();
        let mut horizon: Option<i64> = None;
        for seg in self.segments.iter().filter(|s| s.base < map_end) {
            match self
                .clean_segment(seg, &map, &mut throttle, &mut stats)
                .await
            {
                Ok((size, h)) => {
                    horizon = match (horizon, h) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    cleaned.push(CleanedSegment {
                        original: *seg,
                        size,
                    });
                }
                Err(e) => {
                    for c in cleaned.iter().map(|c| c.original).chain([*seg]) {
                        remove_cleaned_files(self.storage.as_ref(), &self.dir, c.base).await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(CleanedLog {
            plan: self,
            cleaned,
            map_end,
            tombstone_horizon: horizon,
            stats,
        })
    }

    /// Maps each key of the dirty range to its latest offset, stopping (at a batch start)
    /// when the budget is spent; returns the map and the offset it ends at.
    async fn build_map(
        &self,
        limits: CleanerLimits,
        throttle: &mut Throttle,
        stats: &mut CleanStats,
    ) -> Result<(KeyMap, i64)> {
        let mut map = KeyMap {
            latest: HashMap::new(),
            bytes: 0,
        };
        let dirty = self
            .segments
            .iter()
            .filter(|s| s.next_offset > self.first_dirty);
        for seg in dirty {
            let mut batches = SealedBatches::open(self.storage.as_ref(), &self.dir, seg).await?;
            let full = self
                .map_segment(&mut batches, &mut map, limits, throttle, stats)
                .await;
            batches.close().await;
            throttle.account(seg.size as usize).await;
            if let Some(stopped_at) = full? {
                return Ok((map, stopped_at.max(self.first_dirty)));
            }
        }
        let end = self
            .segments
            .last()
            .map_or(self.first_dirty, |s| s.next_offset);
        Ok((map, end.max(self.first_dirty)))
    }

    /// Adds one segment's keys to the map; `Some(offset)` when the budget ran out at the
    /// batch starting there.
    async fn map_segment(
        &self,
        batches: &mut SealedBatches,
        map: &mut KeyMap,
        limits: CleanerLimits,
        throttle: &mut Throttle,
        stats: &mut CleanStats,
    ) -> Result<Option<i64>> {
        let path = batches.path.clone();
        while let Some((position, bytes, h)) = batches.next().await? {
            stats.bytes_read += bytes.len() as u64;
            throttle.account(bytes.len()).await;
            // Transaction markers are not keyed data: they are kept whole (copy_latest); an
            // aborted transaction's records must not shadow committed values of their keys.
            if h.last_offset() < self.first_dirty || h.is_control() || self.is_aborted(&h) {
                continue;
            }
            // Worst case for this batch: every record a new key.
            let worst = bytes.len() + h.records_count.max(0) as usize * MAP_ENTRY_OVERHEAD;
            if !map.latest.is_empty() && map.bytes + worst > limits.dedupe_buffer_bytes {
                return Ok(Some(h.base_offset));
            }
            let corrupt = |e: BatchError| Error::corruption(&path, position, e.to_string());
            for r in RecordsSection::of(bytes, &h).map_err(corrupt)?.iter() {
                let r = r.map_err(corrupt)?;
                let (Some(key), true) = (r.key, r.offset >= self.first_dirty) else {
                    continue;
                };
                match map.latest.get_mut(key) {
                    Some(o) => *o = r.offset,
                    None => {
                        map.bytes += KeyMap::record_cost(key);
                        map.latest.insert(key.to_vec(), r.offset);
                    }
                }
            }
        }
        Ok(None)
    }

    /// Writes the cleaned copy of one segment as `<base>.log.cleaned` with its index files;
    /// returns its size and the earliest tombstone delete horizon it keeps.
    async fn clean_segment(
        &self,
        seg: &SegmentRef,
        map: &KeyMap,
        throttle: &mut Throttle,
        stats: &mut CleanStats,
    ) -> Result<(u64, Option<i64>)> {
        let log_path = with_suffix(
            &segment_path(&self.dir, seg.base, LOG_SUFFIX),
            CLEANED_SUFFIX,
        );
        if self.storage.exists(&log_path) {
            remove_cleaned_files(self.storage.as_ref(), &self.dir, seg.base).await;
        }
        let mut out = LogFile::create_background(self.storage.as_ref(), &log_path).await?;
        let mut batches = SealedBatches::open(self.storage.as_ref(), &self.dir, seg).await?;
        let copied = self
            .copy_latest(seg.base, &mut batches, &mut out, map, throttle, stats)
            .await;
        batches.close().await;
        let (idx, horizon) = match copied {
            Ok(done) => done,
            Err(e) => {
                out.abandon().await;
                return Err(e);
            }
        };
        out.seal().await?;
        let size = out.size();
        out.close().await?;
        for (suffix, bytes) in [
            (INDEX_SUFFIX, idx.offset_index.encode()),
            (TIME_INDEX_SUFFIX, idx.time_index.encode()),
        ] {
            let p = with_suffix(&segment_path(&self.dir, seg.base, suffix), CLEANED_SUFFIX);
            write_new_file_synced(self.storage.as_ref(), &p, &bytes)
                .await
                .map_err(|e| Error::io("write", &p, e))?;
        }
        Ok((size, horizon))
    }

    /// Copies the records to keep into `out`, batch by batch, indexing as it goes.
    async fn copy_latest(
        &self,
        base: i64,
        batches: &mut SealedBatches,
        out: &mut LogFile,
        map: &KeyMap,
        throttle: &mut Throttle,
        stats: &mut CleanStats,
    ) -> Result<(IndexState, Option<i64>)> {
        let mut idx = IndexState::new(base, &self.config);
        let new_horizon = self.now_ms.saturating_add(self.config.delete_retention_ms);
        let mut kept_horizon: Option<i64> = None;
        let path = batches.path.clone();
        while let Some((position, bytes, h)) = batches.next().await? {
            stats.bytes_read += bytes.len() as u64;
            throttle.account(bytes.len()).await;
            let expired = h.delete_horizon_ms().is_some_and(|t| self.now_ms >= t);
            let (mut kept, mut removed) = (0u64, 0u64);
            let retained = if h.is_control() {
                self.marker_outcome(bytes, &h, new_horizon)
            } else if self.is_aborted(&h) {
                // Kafka's rule: aborted data goes, whatever its keys.
                removed = h.records_count.max(0) as u64;
                Ok(Retained::Nothing)
            } else {
                retain_records(bytes, &h, new_horizon, |r| {
                    let latest = r
                        .key
                        .is_none_or(|k| map.latest.get(k).is_none_or(|&o| r.offset >= o));
                    let keep = latest && !(r.value.is_none() && expired);
                    *(if keep { &mut kept } else { &mut removed }) += 1;
                    keep
                })
            }
            .map_err(|e| Error::corruption(&path, position, e.to_string()))?;
            stats.records_kept += kept;
            stats.records_removed += removed;
            let rewritten;
            let out_bytes: &[u8] = match retained {
                Retained::Nothing => continue,
                Retained::All => bytes,
                Retained::Some(b) => {
                    rewritten = b;
                    &rewritten
                }
            };
            let h2 = check_framing_and_crc(out_bytes).expect("a rewritten batch is well formed");
            if h2.is_transactional() && !h2.is_control() {
                self.kept_txn_data.borrow_mut().insert(h2.producer_id);
            }
            if let Some(t) = h2.delete_horizon_ms() {
                kept_horizon = Some(kept_horizon.map_or(t, |k| k.min(t)));
            }
            idx.add_batch(&h2, out.size(), &self.config)
                .map_err(|why| Error::corruption(out.path(), out.size(), why.to_string()))?;
            out.append(out_bytes).await?;
            stats.bytes_written += out_bytes.len() as u64;
        }
        idx.add_final_time_entry();
        Ok((idx, kept_horizon))
    }
}
