//! One segment: a `.log` file of record batches plus its sparse `.index` and `.timeindex`.
//! The active segment keeps its indexes in memory ([`IndexState`]); they are written when it
//! is sealed or closed. A sealed segment reads its indexes page by page through the shard's
//! page cache ([`PagedIndexes`]) and keeps only a small summary in memory.

use crate::metrics::{self, Stage};
use std::path::{Path, PathBuf};

use super::crc_memo::{CachedCrcs, CrcMemo, NoCrcMemo};
use super::index_state::IndexState;
use super::offset_index::{IndexHit, OffsetIndex, OffsetPosition};
use super::paged_index::PagedIndexes;
use super::recovery::{scan_segment, ScanOutcome};
use super::scan::{find_batch, find_batch_from, FoundBatch};
use super::stale_index::StaleIndex;
use super::time_index::{TimeHit, TimeIndex};
use super::{segment_path, LogIo, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::batch::{check_framing_and_crc_with, RecordsSection, HEADER_SIZE};
use crate::format::cursor::BatchCursor;
use crate::format::{BatchError, BatchHeader};
use crate::io::chain::{ByteChain, ByteRun};
use crate::io::{LogFile, OpenMode};

/// Bytes a lookup reads from the index position in one go: enough to cover the
/// index interval and a typical batch, so a cold lookup costs one log read.
const LOOKUP_READ: usize = 32 * 1024;

pub struct Segment {
    io: LogIo,
    dir: PathBuf,
    log: LogFile,
    idx: IndexState,
    /// Set once sealed: lookups go through the index files instead of `idx`'s entries.
    paged: Option<PagedIndexes>,
    created_ms: i64,
    /// Counts this segment in the shard's open-segment gauge while it lives.
    _open: metrics::OpenSegment,
}

/// What recovery did to a segment's `.log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub file: PathBuf,
    pub position: u64,
    pub bytes_dropped: u64,
    pub reason: String,
    /// Only zero padding was dropped (normal after an unclean stop: nothing is lost).
    pub padding: bool,
}

impl Segment {
    fn assemble(io: LogIo, dir: &Path, log: LogFile, idx: IndexState) -> Self {
        Segment {
            io,
            dir: dir.to_path_buf(),
            log,
            idx,
            paged: None,
            created_ms: crate::time::now_ms(),
            _open: metrics::OpenSegment::new(),
        }
    }

    /// Switches a sealed segment whose index files match `idx` to paged lookups, freeing
    /// the in-memory entries.
    async fn page_out_indexes(&mut self, config: &LogConfig) {
        let base = self.idx.base_offset;
        let open = |suffix| {
            let path = segment_path(&self.dir, base, suffix);
            let storage = self.io.storage.clone();
            async move { storage.open(&path, OpenMode::ReadOnly).await }
        };
        match (open(INDEX_SUFFIX).await, open(TIME_INDEX_SUFFIX).await) {
            (Ok(of), Ok(tf)) => {
                self.paged = Some(PagedIndexes::new(
                    &self.idx.offset_index,
                    of,
                    &self.idx.time_index,
                    tf,
                    base,
                    self.io.cache.clone(),
                ));
                self.idx.offset_index = OffsetIndex::new(base, config.max_offset_index_entries());
                self.idx.time_index = TimeIndex::new(base, config.max_time_index_entries());
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(dir = %self.dir.display(), base, error = %e, "keeping indexes in memory");
            }
        }
    }

    async fn offset_lookup_hit(&self, target: i64) -> Result<IndexHit> {
        let lookup = async {
            match &self.paged {
                Some(p) => p.offset_lookup_hit(target).await,
                None => Ok(self.idx.offset_index.lookup_hit(target)),
            }
        };
        metrics::timed(Stage::IndexLookup, lookup).await
    }

    /// Where the batch holding `offset` most likely starts and how much to read there so
    /// that one read covers it: from the index hit when every batch has an index entry
    /// (batches larger than the index interval), verified against the header read.
    /// `want`: bytes the caller needs from the batch's start. With a good guess of the
    /// batch's size only `max(size, want)` is read (a cold lookup of one batch reads just
    /// it); otherwise `min_read` from the floor entry.
    async fn locate(
        &mut self,
        offset: i64,
        min_read: usize,
        want: usize,
    ) -> Result<Option<(FoundBatch, ByteChain)>> {
        let hit = self.offset_lookup_hit(offset).await?;
        let spacing = |a: Option<OffsetPosition>, b: Option<OffsetPosition>| match (a, b) {
            (Some(a), Some(b)) => Some((b.position - a.position) as usize),
            _ => None,
        };
        // The batch after the floor entry's batch starts at the next entry when every batch
        // is indexed; its size is about the spacing of the entries around it.
        let guess = match hit.next {
            Some(next) if offset > hit.floor.offset && next.offset >= offset => {
                let size = spacing(hit.next, hit.after_next)
                    .or(spacing(Some(hit.floor), hit.next))
                    .unwrap_or(0);
                Some((next.position as u64, size))
            }
            Some(_) if offset == hit.floor.offset => Some((
                hit.floor.position as u64,
                spacing(Some(hit.floor), hit.next).unwrap_or(0),
            )),
            _ => None,
        };
        if let Some((pos, size)) = guess {
            let read = if size >= HEADER_SIZE {
                size.max(want)
            } else {
                min_read
            };
            let data = self.log.read_chain(pos, read).await?;
            if let Ok(h) = BatchHeader::parse(&data.copy_range(0, HEADER_SIZE)) {
                if h.base_offset <= offset && offset <= h.last_offset() {
                    let found = FoundBatch {
                        position: pos,
                        header: h,
                    };
                    return Ok(Some((found, data)));
                }
            }
        }
        // Walk from the floor entry, starting with one read that usually covers it all.
        let start = hit.floor.position as u64;
        let ahead = self.log.read_chain(start, min_read).await?;
        let prefetched = ahead.copy_range(0, ahead.len());
        let found = find_batch_from(&mut self.log, start, &prefetched, |h| {
            h.last_offset() >= offset
        })
        .await?;
        Ok(found.map(|f| {
            let skip = (f.position - start) as usize;
            (f, ahead.slice(skip, ahead.len()))
        }))
    }

    /// The batch holding `offset` (where it starts and its header); `None` when no batch
    /// here reaches it.
    pub async fn batch_holding(&mut self, offset: i64) -> Result<Option<FoundBatch>> {
        let located = self.locate(offset, HEADER_SIZE, HEADER_SIZE).await?;
        Ok(located.map(|(found, _)| found))
    }

    async fn time_lookup(&self, target: i64) -> Result<TimeHit> {
        let lookup = async {
            match &self.paged {
                Some(p) => p.time_lookup_hit(target).await,
                None => Ok(self.idx.time_index.lookup_hit(target)),
            }
        };
        metrics::timed(Stage::IndexLookup, lookup).await
    }

    /// Both indexes with every entry (read back from the files for a sealed segment).
    pub async fn indexes(&self, config: &LogConfig) -> Result<(OffsetIndex, TimeIndex)> {
        match &self.paged {
            Some(p) => {
                p.load(
                    config.max_offset_index_entries(),
                    config.max_time_index_entries(),
                )
                .await
            }
            None => Ok((self.idx.offset_index.clone(), self.idx.time_index.clone())),
        }
    }

    /// Creates a new empty active segment.
    pub async fn create(
        io: LogIo,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
    ) -> Result<Self> {
        let path = segment_path(dir, base_offset, LOG_SUFFIX);
        let log = LogFile::create(io.storage.as_ref(), &path, io.cache.clone()).await?;
        Ok(Self::assemble(
            io,
            dir,
            log,
            IndexState::new(base_offset, config),
        ))
    }

    /// Opens a segment that needs no recovery (below the recovery point, or after a clean
    /// shutdown). Its `.log` ends at its last batch; index files that are missing or fail
    /// the sanity check are rebuilt from the `.log`.
    pub async fn open(
        io: LogIo,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        active: bool,
    ) -> Result<Self> {
        let mut seg = Self::open_log(io, dir, base_offset, config, active).await?;
        if !seg.load_state(config).await? && !active {
            seg.write_indexes().await?;
        }
        if !active {
            seg.page_out_indexes(config).await;
        }
        Ok(seg)
    }

    /// Opens a sealed segment whose files are read-only (the remote tier's objects): as
    /// `open`, but indexes that are missing or stale are rebuilt in memory only (and stay
    /// there); good index files are read page by page, as a sealed local segment's are.
    pub async fn open_read_only(
        io: LogIo,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
    ) -> Result<Self> {
        let mut seg = Self::open_log(io, dir, base_offset, config, false).await?;
        if seg.load_state(config).await? {
            seg.page_out_indexes(config).await;
        }
        assert!(seg.log.is_sealed(), "a read-only segment takes no appends");
        Ok(seg)
    }

    /// The segment with its `.log` open at the size the storage reports, indexes empty.
    async fn open_log(
        io: LogIo,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        active: bool,
    ) -> Result<Self> {
        let log_path = segment_path(dir, base_offset, LOG_SUFFIX);
        let size = {
            let f = io
                .storage
                .open(&log_path, OpenMode::ReadOnly)
                .await
                .map_err(|e| Error::io("open", &log_path, e))?;
            let size = f
                .size()
                .await
                .map_err(|e| Error::io("stat", &log_path, e))?;
            let _ = f.close().await;
            size
        };
        let log = if active {
            LogFile::open_for_append(io.storage.as_ref(), &log_path, size, io.cache.clone()).await?
        } else {
            LogFile::open_sealed(io.storage.as_ref(), &log_path, size, io.cache.clone()).await?
        };
        Ok(Self::assemble(
            io,
            dir,
            log,
            IndexState::new(base_offset, config),
        ))
    }

    /// Loads the indexes and the tail's state from the files, or rebuilds them from the
    /// `.log` when the files are missing or stale; says whether the files were used.
    async fn load_state(&mut self, config: &LogConfig) -> Result<bool> {
        match self.load_indexes(config).await {
            Ok(()) => {
                self.load_tail_state().await?;
                Ok(true)
            }
            Err(why) => {
                let log_path = self.log.path().display().to_string();
                tracing::warn!(segment = %log_path, reason = %why, "rebuilding index files from the log");
                self.rebuild_indexes(config).await?;
                Ok(false)
            }
        }
    }

    /// Opens a segment after an unclean shutdown: validates every batch from byte 0,
    /// rebuilds the indexes, and truncates the `.log` at the first invalid batch (which is
    /// then reported). `min_next_offset` is the end of the previous segment.
    pub async fn recover(
        io: LogIo,
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        min_next_offset: i64,
        active: bool,
    ) -> Result<(Self, Option<Truncation>)> {
        let log_path = segment_path(dir, base_offset, LOG_SUFFIX);
        let file = io
            .storage
            .open(&log_path, OpenMode::ReadWrite)
            .await
            .map_err(|e| Error::io("open", &log_path, e))?;
        let scan = scan_segment(
            file.clone(),
            &log_path,
            base_offset,
            min_next_offset,
            config,
        )
        .await?;
        let truncation = truncate_to_valid(file.as_ref(), &log_path, &scan).await?;
        // What was read back may sit in the device's volatile cache after a crash: make it
        // durable before a checkpoint can claim it is (an empty file holds nothing to).
        if scan.file_size > 0 {
            file.fdatasync()
                .await
                .map_err(|e| Error::io("fdatasync", &log_path, e))?;
        }
        let _ = file.close().await;
        let storage = io.storage.clone();
        let log = if active {
            LogFile::open_for_append(
                storage.as_ref(),
                &log_path,
                scan.valid_size,
                io.cache.clone(),
            )
            .await?
        } else {
            LogFile::open_sealed(
                storage.as_ref(),
                &log_path,
                scan.valid_size,
                io.cache.clone(),
            )
            .await?
        };
        let mut seg = Self::assemble(io, dir, log, scan.state);
        if !active {
            seg.idx.add_final_time_entry();
            seg.write_indexes().await?;
            seg.page_out_indexes(config).await;
        }
        Ok((seg, truncation))
    }

    async fn load_indexes(&mut self, config: &LogConfig) -> std::result::Result<(), StaleIndex> {
        let base = self.idx.base_offset;
        let index_path = segment_path(&self.dir, base, INDEX_SUFFIX);
        let time_path = segment_path(&self.dir, base, TIME_INDEX_SUFFIX);
        if !self.io.storage.exists(&index_path) || !self.io.storage.exists(&time_path) {
            // An empty segment has no entries to index: a new partition closed before its
            // first append leaves no index files, and needs none.
            return match self.log.size() {
                0 => Ok(()),
                _ => Err(StaleIndex::Missing),
            };
        }
        let bytes = self
            .io
            .storage
            .read_file(&index_path)
            .await
            .map_err(StaleIndex::unreadable(&index_path))?;
        let oi = OffsetIndex::decode(base, &bytes, config.max_offset_index_entries())
            .map_err(StaleIndex::corrupt(&index_path))?;
        let bytes = self
            .io
            .storage
            .read_file(&time_path)
            .await
            .map_err(StaleIndex::unreadable(&time_path))?;
        let ti = TimeIndex::decode(base, &bytes, config.max_time_index_entries())
            .map_err(StaleIndex::corrupt(&time_path))?;
        if let Some(last) = oi.last() {
            if last.position as u64 >= self.log.size() {
                return Err(StaleIndex::PastLogEnd {
                    position: last.position as u64,
                    log_end: self.log.size(),
                });
            }
        }
        if self.log.size() == 0 && !oi.is_empty() {
            return Err(StaleIndex::EntriesForEmptyLog);
        }
        self.idx.offset_index = oi;
        self.idx.time_index = ti;
        Ok(())
    }

    /// After loading index files: the next offset by walking from the last index entry; the
    /// max timestamp from the time index's final entry (written at close).
    async fn load_tail_state(&mut self) -> Result<()> {
        let start = self
            .idx
            .offset_index
            .last()
            .map_or(0, |e| e.position as u64);
        let mut last: Option<BatchHeader> = None;
        find_batch(&mut self.log, start, |h| {
            last = Some(*h);
            false
        })
        .await?;
        self.idx.next_offset = last.map_or(self.idx.base_offset, |h| h.last_offset() + 1);
        let t = self.idx.time_index.last_entry();
        if t.timestamp >= 0 {
            self.idx.max_timestamp = t.timestamp;
            self.idx.offset_of_max_timestamp = t.offset;
        }
        if self.log.size() > 0 {
            let first = find_batch(&mut self.log, 0, |_| true).await?;
            self.idx.rolling_base_timestamp =
                first.map(|f| f.header.max_timestamp).filter(|&t| t >= 0);
        }
        Ok(())
    }

    /// Rebuilds the derived state by walking every batch header.
    pub async fn rebuild_indexes(&mut self, config: &LogConfig) -> Result<()> {
        let mut idx = IndexState::new(self.idx.base_offset, config);
        let mut position = 0u64;
        let mut refused = None;
        find_batch(&mut self.log, 0, |h| {
            if let Err(why) = idx.add_batch(h, position, config) {
                refused = Some((position, why));
                return true;
            }
            position += h.size() as u64;
            false
        })
        .await?;
        if let Some((position, why)) = refused {
            return Err(Error::corruption(
                self.log.path(),
                position,
                why.to_string(),
            ));
        }
        if self.log.is_sealed() {
            idx.add_final_time_entry();
        }
        self.idx = idx;
        Ok(())
    }

    pub fn base_offset(&self) -> i64 {
        self.idx.base_offset
    }

    /// One past the last offset stored (the base offset when empty).
    pub fn next_offset(&self) -> i64 {
        self.idx.next_offset
    }

    pub fn size(&self) -> u64 {
        self.log.size()
    }

    pub fn is_empty(&self) -> bool {
        self.log.size() == 0
    }

    /// Read-only: every segment but the active one.
    pub fn is_sealed(&self) -> bool {
        self.log.is_sealed()
    }

    pub fn max_timestamp(&self) -> i64 {
        self.idx.max_timestamp
    }

    /// Kafka's `largestTimestamp`, which retention.ms compares with: the newest record's
    /// timestamp, or when no record has one, when this segment was created or opened.
    pub fn largest_timestamp(&self) -> i64 {
        if self.idx.max_timestamp >= 0 {
            self.idx.max_timestamp
        } else {
            self.created_ms
        }
    }

    /// The first batch's max timestamp (max.compaction.lag.ms is measured from it); the
    /// creation or open time when it has none.
    pub fn first_batch_timestamp(&self) -> i64 {
        self.idx.rolling_base_timestamp.unwrap_or(self.created_ms)
    }

    pub fn log_file(&self) -> &LogFile {
        &self.log
    }

    /// Kafka's roll decision for an incoming batch (`LogSegment.shouldRoll`).
    pub fn should_roll(&self, config: &LogConfig, incoming: &BatchHeader, now_ms: i64) -> bool {
        let size = self.log.size();
        let time_waited = match self.idx.rolling_base_timestamp {
            Some(t) => incoming.max_timestamp - t,
            None => now_ms - self.created_ms,
        };
        size + incoming.size() as u64 > config.segment_bytes
            || (size > 0
                && time_waited > config.segment_ms
                && now_ms - self.created_ms >= config.min_time_roll_interval_ms)
            || self.idx.offset_index.is_full()
            || self.idx.time_index.is_full()
            || incoming.last_offset() - self.idx.base_offset > i32::MAX as i64
    }

    /// Appends one batch whose offsets are already assigned, given as consecutive parts
    /// (header and records, so callers need not copy the records to rewrite the header).
    pub async fn append(
        &mut self,
        parts: &[&[u8]],
        h: &BatchHeader,
        config: &LogConfig,
    ) -> Result<()> {
        let position = self.log.size();
        if self.idx.admits(h).is_err() {
            return Err(Error::NonMonotonicOffset {
                base_offset: h.base_offset,
                log_end: self.idx.next_offset,
            });
        }
        for part in parts {
            self.log.append(part).await?;
        }
        self.idx
            .add_batch(h, position, config)
            .map_err(|why| Error::corruption(self.log.path(), position, why.to_string()))
    }

    /// Gives back the active file's staging memory while idle (see `LogFile`).
    pub fn release_idle_memory(&mut self) {
        self.log.release_idle_memory();
    }

    /// Writes the appended bytes to the device (acks=1 semantics).
    pub async fn flush(&mut self) -> Result<()> {
        self.log.flush().await
    }

    /// Flushes and fdatasyncs the `.log` (acks=all semantics).
    pub async fn sync(&mut self) -> Result<()> {
        self.log.sync().await
    }

    /// Makes the segment read-only: the final max-timestamp time entry, the `.log` trimmed
    /// and synced, and both index files written; then it is read through them.
    pub async fn seal(&mut self, config: &LogConfig) -> Result<()> {
        if self.log.is_sealed() {
            return Ok(());
        }
        self.seal_files().await?;
        self.page_out_indexes(config).await;
        self.log.reopen_read_only(self.io.storage.as_ref()).await;
        Ok(())
    }

    /// The files of a seal: the final time entry, the `.log` trimmed and synced, both
    /// index files written (nothing reads them back: a close may defer their renames).
    async fn seal_files(&mut self) -> Result<()> {
        self.idx.add_final_time_entry();
        self.log.seal().await?;
        self.write_indexes().await
    }

    /// Entries in the in-memory indexes (the active segment's), to tell when they changed.
    pub fn index_entries(&self) -> (usize, usize) {
        (self.idx.offset_index.len(), self.idx.time_index.len())
    }

    /// Writes both index files from the in-memory entries (atomically, each).
    pub(super) async fn write_indexes(&self) -> Result<()> {
        let base = self.idx.base_offset;
        let index_path = segment_path(&self.dir, base, INDEX_SUFFIX);
        self.io
            .storage
            .write_file_atomic(&index_path, self.idx.offset_index.encode())
            .await
            .map_err(|e| Error::io("write", &index_path, e))?;
        let time_path = segment_path(&self.dir, base, TIME_INDEX_SUFFIX);
        self.io
            .storage
            .write_file_atomic(&time_path, self.idx.time_index.encode())
            .await
            .map_err(|e| Error::io("write", &time_path, e))
    }

    /// Writes the index files in place without a sync, for tools reading a live segment:
    /// an active segment's index files are never trusted after a crash (its recovery
    /// rebuilds them from the `.log`) and are written durably when it is sealed or closed.
    pub(super) async fn write_live_indexes(&self) -> Result<()> {
        assert!(
            !self.log.is_sealed(),
            "a sealed segment's index files are final"
        );
        let base = self.idx.base_offset;
        let index_path = segment_path(&self.dir, base, INDEX_SUFFIX);
        let storage = self.io.storage.as_ref();
        (storage
            .overwrite_file(&index_path, self.idx.offset_index.encode())
            .await)
            .map_err(|e| Error::io("write", &index_path, e))?;
        let time_path = segment_path(&self.dir, base, TIME_INDEX_SUFFIX);
        (storage
            .overwrite_file(&time_path, self.idx.time_index.encode())
            .await)
            .map_err(|e| Error::io("write", &time_path, e))
    }

    /// Seals and closes the segment.
    pub async fn close(mut self) -> Result<()> {
        if !self.log.is_sealed() {
            self.seal_files().await?;
        }
        self.close_as_left().await
    }

    /// Closes a segment whose files are as they were when it was opened (nothing appended):
    /// its index files already hold its entries, so only the files are closed.
    pub async fn close_as_left(mut self) -> Result<()> {
        if let Some(p) = self.paged.take() {
            p.close().await;
        }
        self.log.close().await
    }

    /// Drops the segment without writing anything (after a failure, before a reopen).
    pub async fn abandon(mut self) {
        if let Some(p) = self.paged.take() {
            p.close().await;
        }
        self.log.abandon().await;
    }

    /// Reads whole batches starting with the one containing `offset`: as many as fit in
    /// `max_bytes`, but always at least one. `None` when no batch here reaches `offset`.
    /// The bytes are the page cache's own pages (no copy on a cache hit).
    /// With `at_least_one == false`, a first batch larger than `max_bytes` gives nothing.
    pub async fn read(
        &mut self,
        offset: i64,
        max_bytes: usize,
        at_least_one: bool,
    ) -> Result<Option<ByteChain>> {
        // One index page and, usually, one log read (see `locate`).
        let read_ahead = LOOKUP_READ.max(max_bytes);
        let Some((found, mut data)) = self.locate(offset, read_ahead, max_bytes).await? else {
            return Ok(None);
        };
        if !at_least_one && found.header.size() > max_bytes {
            return Ok(Some(ByteChain::default()));
        }
        let want = max_bytes.max(found.header.size());
        if data.len() < found.header.size() {
            data = self.log.read_chain(found.position, want).await?;
        }
        data.truncate(want);
        // Whole batches only; serve the batches before a corrupt one, and report it when it
        // comes first.
        let memo = CachedCrcs {
            log: &self.log,
            position: found.position,
            data: &data,
        };
        let valid = self.verified_prefix(found.position, &data, &memo)?;
        data.truncate(valid);
        // What is served is whole, checked batches from the one found, within the bound
        // (the first batch alone may pass it when at least one is asked for).
        assert!(data.is_empty() || valid >= found.header.size());
        assert!(data.len() <= want);
        Ok(Some(data))
    }

    /// Checks framing and CRC of the batches in bytes read from `position`, so corrupt
    /// bytes on disk are reported (file and position), never served. Returns the length of
    /// the prefix of whole valid batches; an error when the very first batch is bad.
    fn verified_prefix<R: ByteRun + ?Sized>(
        &self,
        position: u64,
        data: &R,
        memo: &dyn CrcMemo,
    ) -> Result<usize> {
        let len = data.run_len();
        let mut at = 0usize;
        for step in BatchCursor::new(data) {
            let checked = step.and_then(|(pos, h)| {
                let header = data.range(pos, pos + HEADER_SIZE);
                let known = memo.known(pos, pos + h.size());
                check_framing_and_crc_with(&header, h.size(), |a, b| match known {
                    // Bytes checked before carry the CRC that was found right then.
                    true => h.crc,
                    false => data.crc32c_of(pos + a, pos + b),
                })
                .map(|h| (pos, h, known))
                .map_err(|e| (pos, e))
            });
            match checked {
                Ok((pos, h, known)) => {
                    if !known {
                        memo.note(pos, pos + h.size());
                    }
                    at += h.size();
                }
                // A batch cut off by the read's end is not served (nor an error).
                Err((_, BatchError::SizeMismatch { .. })) if at > 0 => break,
                Err((_, e)) if at == 0 => {
                    let what = e.to_string();
                    tracing::error!(file = %self.log.path().display(), position, %what, "corrupt batch in the log");
                    // A flip on the way from the device must not stay in memory.
                    self.log.forget_cached(position, len);
                    return Err(Error::corruption(self.log.path(), position, what));
                }
                Err(_) => break,
            }
        }
        assert!(at <= len);
        Ok(at)
    }

    fn verify_batches(&self, position: u64, data: &[u8]) -> Result<()> {
        self.verified_prefix(position, data, &NoCrcMemo).map(|_| ())
    }

    async fn read_batch(&mut self, found: &FoundBatch) -> Result<Vec<u8>> {
        let data = self
            .log
            .read_at(found.position, found.header.size())
            .await?;
        self.verify_batches(found.position, &data)?;
        Ok(data)
    }

    /// The first offset that may hold a record with a timestamp >= `target`. Entry (T, O):
    /// every record up to O has a timestamp <= T, so with T < target the answer lies after
    /// O (with T == target it may be in O's batch). With a bounding next entry (see
    /// `TimeHit`) it also lies after the last offset-index entry below the next entry's
    /// offset: when many batches share one millisecond, that skips all but the last.
    /// Says also whether the answer is pinned to the first batch or two from there: with
    /// T == target it is in O's batch (the first to reach T), and so it is with the bound.
    async fn search_start(&self, target: i64, hit: &TimeHit) -> Result<(i64, bool)> {
        let floor = hit.floor;
        if floor.timestamp >= target {
            return Ok((floor.offset, true));
        }
        let after_floor = if floor.timestamp >= 0 {
            floor.offset + 1
        } else {
            floor.offset
        };
        let Some(next) = hit.next else {
            return Ok((after_floor, false));
        };
        let below = self.offset_lookup_hit(next.offset - 1).await?.floor;
        // The offset index's "no entry" answer is (base offset, 0), not an entry.
        if below.offset <= self.idx.base_offset {
            return Ok((after_floor, false));
        }
        let from = after_floor.max(below.offset + 1);
        // The next entry's record qualifies (its timestamp is above the target), so the
        // answer is at or before it.
        assert!(
            next.timestamp > target && from <= next.offset,
            "{from} {next:?}"
        );
        Ok((from, true))
    }

    /// Kafka's `LogSegment.findOffsetByTimestamp`: the first record at or after
    /// `start_offset` whose timestamp is >= `target`, as (offset, timestamp).
    pub async fn find_offset_by_timestamp(
        &mut self,
        target: i64,
        start_offset: i64,
    ) -> Result<Option<(i64, i64)>> {
        let hit = self.time_lookup(target).await?;
        let (from, pinned) = self.search_start(target, &hit).await?;
        let from = from.max(start_offset);
        if from >= self.idx.next_offset {
            return Ok(None);
        }
        // The batch holding `from`, usually with one log read (see `locate`). Not pinned,
        // read ahead: the record may be a few batches on (measured: reading just the batch
        // made those lookups do more reads, not fewer). Pinned, `locate`'s guess reads just
        // the batch when every batch is indexed.
        let want = if pinned { 0 } else { LOOKUP_READ };
        let Some((mut found, ahead)) = self.locate(from, LOOKUP_READ, want).await? else {
            return Ok(None);
        };
        // Records are decoded here: one buffer is simpler than the shared pages.
        let mut data = ahead.copy_range(0, ahead.len());
        loop {
            if found.header.max_timestamp >= target {
                if data.len() < found.header.size() {
                    data = self.read_batch(&found).await?;
                }
                let batch = &data[..found.header.size()];
                self.verify_batches(found.position, batch)?;
                let corrupt = |e: BatchError| {
                    Error::corruption(self.log.path(), found.position, e.to_string())
                };
                let section = RecordsSection::of(batch, &found.header).map_err(corrupt)?;
                let records = section.decode().map_err(corrupt)?;
                if let Some(r) = records
                    .iter()
                    .find(|r| r.timestamp >= target && r.offset >= start_offset)
                {
                    return Ok(Some((r.offset, r.timestamp)));
                }
            }
            // On to the next batch, reusing what was read past this one.
            let next_pos = found.position + found.header.size() as u64;
            data.drain(..found.header.size().min(data.len()));
            let Some(next) = find_batch_from(&mut self.log, next_pos, &data, |h| {
                h.max_timestamp >= target
            })
            .await?
            else {
                return Ok(None);
            };
            data.drain(..((next.position - next_pos) as usize).min(data.len()));
            found = next;
        }
    }
}

/// Cuts a recovered `.log` back to its valid prefix (what the scan verified), if anything
/// follows it, and says what was dropped.
async fn truncate_to_valid(
    file: &dyn crate::io::StorageFile,
    log_path: &Path,
    scan: &ScanOutcome,
) -> Result<Option<Truncation>> {
    if scan.valid_size >= scan.file_size {
        return Ok(None);
    }
    metrics::record_recovery_truncation();
    let t = Truncation {
        file: log_path.to_path_buf(),
        position: scan.valid_size,
        bytes_dropped: scan.file_size - scan.valid_size,
        reason: scan
            .stop_reason
            .clone()
            .unwrap_or_else(|| "trailing bytes".into()),
        padding: scan.stopped_at_padding,
    };
    // The shard reports the truncations once it has opened its partitions.
    tracing::debug!(
        file = %t.file.display(),
        position = t.position,
        bytes_dropped = t.bytes_dropped,
        reason = %t.reason,
        "truncating log after unclean shutdown"
    );
    file.truncate(scan.valid_size)
        .await
        .map_err(|e| Error::io("truncate", log_path, e))?;
    Ok(Some(t))
}
