//! One segment: a `.log` file of record batches plus its sparse `.index` and `.timeindex`.
//!
//! Index entries follow Kafka's `LogSegment.append` exactly: remember where the batch
//! starts; append it; if its maxTimestamp beats the segment's, that becomes the segment max
//! (with the batch's last offset); then, if more than `index.interval.bytes` were appended
//! since the last entry (strictly more), add an offset entry (batch last offset, batch start)
//! and a time entry (segment max so far, its offset); finally count this batch's bytes.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::offset_index::OffsetIndex;
use super::scan::{find_batch, whole_batches_len, FoundBatch};
use super::time_index::TimeIndex;
use super::{segment_file_name, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::batch::{check_framing_and_crc, decode_records};
use crate::format::BatchHeader;
use crate::io::{read_whole_file, write_whole_file, LogFile};

pub struct Segment {
    base_offset: i64,
    dir: PathBuf,
    log: LogFile,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    /// Largest batch maxTimestamp in the segment (-1: none) and that batch's last offset.
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    /// maxTimestamp of the first batch: the clock segment.ms is measured against.
    rolling_base_timestamp: Option<i64>,
    created_ms: i64,
    bytes_since_last_index_entry: u64,
    /// One past the last offset in the segment (base offset when empty).
    next_offset: i64,
}

impl Segment {
    fn path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
        dir.join(segment_file_name(base_offset, suffix))
    }

    /// Creates a new empty active segment.
    pub async fn create(dir: &Path, base_offset: i64, config: &LogConfig) -> Result<Self> {
        let log = LogFile::create(&Self::path(dir, base_offset, LOG_SUFFIX)).await?;
        Ok(Segment {
            base_offset,
            dir: dir.to_path_buf(),
            log,
            offset_index: OffsetIndex::new(base_offset, config.max_offset_index_entries()),
            time_index: TimeIndex::new(base_offset, config.max_time_index_entries()),
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            rolling_base_timestamp: None,
            created_ms: crate::time::now_ms(),
            bytes_since_last_index_entry: 0,
            next_offset: base_offset,
        })
    }

    /// Opens a cleanly closed segment. Its `.log` ends at its last batch (trimmed at close);
    /// index files that are missing or fail the sanity check are rebuilt from the `.log`.
    pub async fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        active: bool,
    ) -> Result<Self> {
        let log_path = Self::path(dir, base_offset, LOG_SUFFIX);
        let size = std::fs::metadata(&log_path)
            .map_err(|e| Error::io("stat", &log_path, e))?
            .len();
        let log = if active {
            LogFile::open_for_append(&log_path, size).await?
        } else {
            LogFile::open_sealed(&log_path, size).await?
        };
        let mut seg = Segment {
            base_offset,
            dir: dir.to_path_buf(),
            log,
            offset_index: OffsetIndex::new(base_offset, config.max_offset_index_entries()),
            time_index: TimeIndex::new(base_offset, config.max_time_index_entries()),
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            rolling_base_timestamp: None,
            created_ms: crate::time::now_ms(),
            bytes_since_last_index_entry: 0,
            next_offset: base_offset,
        };
        match seg.load_indexes(config).await {
            Ok(()) => seg.load_tail_state().await?,
            Err(why) => {
                tracing::warn!(
                    segment = %log_path.display(),
                    reason = %why,
                    "index files unusable, rebuilding from the log"
                );
                seg.rebuild_indexes(config).await?;
            }
        }
        Ok(seg)
    }

    async fn load_indexes(&mut self, config: &LogConfig) -> std::result::Result<(), String> {
        let index_path = Self::path(&self.dir, self.base_offset, INDEX_SUFFIX);
        let time_path = Self::path(&self.dir, self.base_offset, TIME_INDEX_SUFFIX);
        if !index_path.exists() || !time_path.exists() {
            return Err("index file missing".into());
        }
        let bytes = read_whole_file(&index_path)
            .await
            .map_err(|e| e.to_string())?;
        let oi = OffsetIndex::decode(self.base_offset, &bytes, config.max_offset_index_entries())
            .map_err(|e| format!("{}: {e}", index_path.display()))?;
        let bytes = read_whole_file(&time_path)
            .await
            .map_err(|e| e.to_string())?;
        let ti = TimeIndex::decode(self.base_offset, &bytes, config.max_time_index_entries())
            .map_err(|e| format!("{}: {e}", time_path.display()))?;
        if let Some(last) = oi.last() {
            if last.position as u64 >= self.log.size() {
                return Err(format!(
                    "offset index points at {} past the log end {}",
                    last.position,
                    self.log.size()
                ));
            }
        }
        self.offset_index = oi;
        self.time_index = ti;
        Ok(())
    }

    /// After loading indexes: finds the next offset by walking from the last index entry, and
    /// takes the max timestamp from the time index's final entry (written at close).
    async fn load_tail_state(&mut self) -> Result<()> {
        let start = self.offset_index.last().map_or(0, |e| e.position as u64);
        let mut last: Option<BatchHeader> = None;
        find_batch(&mut self.log, start, |h| {
            last = Some(*h);
            false
        })
        .await?;
        self.next_offset = last.map_or(self.base_offset, |h| h.last_offset() + 1);
        let t = self.time_index.last_entry();
        if t.timestamp >= 0 {
            self.max_timestamp = t.timestamp;
            self.offset_of_max_timestamp = t.offset;
        }
        if self.log.size() > 0 {
            let first = find_batch(&mut self.log, 0, |_| true).await?;
            self.rolling_base_timestamp = first.map(|f| f.header.max_timestamp).filter(|&t| t >= 0);
        }
        Ok(())
    }

    /// Rebuilds both indexes and the segment's timestamps by walking every batch header and
    /// applying the same rule as `append`.
    pub async fn rebuild_indexes(&mut self, config: &LogConfig) -> Result<()> {
        self.offset_index = OffsetIndex::new(self.base_offset, config.max_offset_index_entries());
        self.time_index = TimeIndex::new(self.base_offset, config.max_time_index_entries());
        self.max_timestamp = -1;
        self.offset_of_max_timestamp = -1;
        self.rolling_base_timestamp = None;
        self.bytes_since_last_index_entry = 0;
        self.next_offset = self.base_offset;
        let mut headers = Vec::new();
        find_batch(&mut self.log, 0, |h| {
            headers.push(*h);
            false
        })
        .await?;
        let mut position = 0u64;
        for h in headers {
            self.index_batch(&h, position, config);
            position += h.size() as u64;
        }
        if self.log.is_sealed() {
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp, true);
        }
        Ok(())
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// One past the last offset stored (the base offset when empty).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    pub fn size(&self) -> u64 {
        self.log.size()
    }

    pub fn is_empty(&self) -> bool {
        self.log.size() == 0
    }

    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }

    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    pub fn log_file(&self) -> &LogFile {
        &self.log
    }

    /// Kafka's roll decision for an incoming batch (`LogSegment.shouldRoll`).
    pub fn should_roll(&self, config: &LogConfig, incoming: &BatchHeader, now_ms: i64) -> bool {
        let size = self.log.size();
        let time_waited = match self.rolling_base_timestamp {
            Some(t) => incoming.max_timestamp - t,
            None => now_ms - self.created_ms,
        };
        size + incoming.size() as u64 > config.segment_bytes
            || (size > 0 && time_waited > config.segment_ms)
            || self.offset_index.is_full()
            || self.time_index.is_full()
            || incoming.last_offset() - self.base_offset > i32::MAX as i64
    }

    fn index_batch(&mut self, h: &BatchHeader, position: u64, config: &LogConfig) {
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.offset_of_max_timestamp = h.last_offset();
        }
        if self.bytes_since_last_index_entry > config.index_interval_bytes {
            // Both appends uphold their invariants here: positions and offsets only grow.
            let _ = self.offset_index.append(h.last_offset(), position as u32);
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp, false);
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += h.size() as u64;
        if self.rolling_base_timestamp.is_none() && position == 0 && h.max_timestamp >= 0 {
            self.rolling_base_timestamp = Some(h.max_timestamp);
        }
        self.next_offset = h.last_offset() + 1;
    }

    /// Appends one batch whose offsets are already assigned.
    pub async fn append(
        &mut self,
        batch: &[u8],
        h: &BatchHeader,
        config: &LogConfig,
    ) -> Result<()> {
        let position = self.log.size();
        self.log.append(batch).await?;
        self.index_batch(h, position, config);
        Ok(())
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
    /// and synced, and both index files written.
    pub async fn seal(&mut self) -> Result<()> {
        self.time_index
            .maybe_append(self.max_timestamp, self.offset_of_max_timestamp, true);
        self.log.seal().await?;
        self.write_indexes().await
    }

    async fn write_indexes(&self) -> Result<()> {
        let index_path = Self::path(&self.dir, self.base_offset, INDEX_SUFFIX);
        write_whole_file(&index_path, &self.offset_index.encode()).await?;
        let time_path = Self::path(&self.dir, self.base_offset, TIME_INDEX_SUFFIX);
        write_whole_file(&time_path, &self.time_index.encode()).await
    }

    /// Seals and closes the segment.
    pub async fn close(mut self) -> Result<()> {
        self.seal().await?;
        self.log.close().await
    }

    /// Reads whole batches starting with the one containing `offset`: as many as fit in
    /// `max_bytes`, but always at least one. `None` when no batch here reaches `offset`.
    pub async fn read(&mut self, offset: i64, max_bytes: usize) -> Result<Option<Bytes>> {
        let start = self.offset_index.lookup(offset).position as u64;
        let Some(found) = find_batch(&mut self.log, start, |h| h.last_offset() >= offset).await?
        else {
            return Ok(None);
        };
        let want = max_bytes.max(found.header.size());
        let mut data = self.log.read_at(found.position, want).await?;
        let keep = whole_batches_len(&data).max(found.header.size());
        data.truncate(keep);
        self.verify_batches(found.position, &data)?;
        Ok(Some(Bytes::from(data)))
    }

    /// Checks framing and CRC of every batch in a buffer read from `position`, so corrupt
    /// bytes on disk are reported, never served.
    fn verify_batches(&self, position: u64, data: &[u8]) -> Result<()> {
        let mut at = 0usize;
        while at < data.len() {
            let rest = &data[at..];
            let len = whole_batches_len(rest);
            let h = BatchHeader::parse(rest).map_err(|e| {
                Error::corruption(self.log.path(), position + at as u64, e.to_string())
            })?;
            if len == 0 || h.size() > rest.len() {
                return Err(Error::corruption(
                    self.log.path(),
                    position + at as u64,
                    "truncated batch",
                ));
            }
            check_framing_and_crc(&rest[..h.size()]).map_err(|e| {
                Error::corruption(self.log.path(), position + at as u64, e.to_string())
            })?;
            at += h.size();
        }
        Ok(())
    }

    async fn read_batch(&mut self, found: &FoundBatch) -> Result<Vec<u8>> {
        let data = self
            .log
            .read_at(found.position, found.header.size())
            .await?;
        self.verify_batches(found.position, &data)?;
        Ok(data)
    }

    /// Kafka's `LogSegment.findOffsetByTimestamp`: the first record at or after
    /// `start_offset` whose timestamp is >= `target`, as (offset, timestamp).
    pub async fn find_offset_by_timestamp(
        &mut self,
        target: i64,
        start_offset: i64,
    ) -> Result<Option<(i64, i64)>> {
        let from = self.time_index.lookup(target).offset.max(start_offset);
        let mut position = self.offset_index.lookup(from).position as u64;
        loop {
            let Some(found) =
                find_batch(&mut self.log, position, |h| h.max_timestamp >= target).await?
            else {
                return Ok(None);
            };
            let data = self.read_batch(&found).await?;
            let records = decode_records(&data, &found.header)
                .map_err(|e| Error::corruption(self.log.path(), found.position, e.to_string()))?;
            if let Some(r) = records
                .iter()
                .find(|r| r.timestamp >= target && r.offset >= start_offset)
            {
                return Ok(Some((r.offset, r.timestamp)));
            }
            position = found.position + found.header.size() as u64;
        }
    }
}
