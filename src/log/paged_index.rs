//! Sealed-segment indexes read page by page through the shard's page cache (Kafka's lazy,
//! mmapped index, without mmap). A sealed segment keeps only a summary in memory, the first
//! key of every index page; a lookup finds the page in the summary and reads that one page
//! (from the cache, or one device read when cold), so the entries are loaded lazily on first
//! use and dropped with the rest of the cache under memory pressure or by `DropCaches`.

use std::rc::Rc;

use super::offset_index::{OffsetIndex, OffsetPosition, ENTRY_SIZE as OFFSET_ENTRY};
use super::time_index::{TimeIndex, TimestampOffset, ENTRY_SIZE as TIME_ENTRY};
use crate::io::cache::{next_file_id, read_through, SharedPageCache, PAGE};
use crate::io::StorageFile;

/// Offset-index entries per 4 KiB page (8-byte entries align with pages).
const OFFSET_PER_PAGE: usize = PAGE as usize / OFFSET_ENTRY;
/// Time-index entries per group (12-byte entries; a group fits in one page, but may start
/// mid-page, so a group read touches at most two pages).
const TIME_PER_GROUP: usize = PAGE as usize / TIME_ENTRY;

struct PagedFile {
    file: Rc<dyn StorageFile>,
    id: u64,
    entries: usize,
}

pub struct PagedIndexes {
    base_offset: i64,
    offsets: PagedFile,
    /// First relative offset of each page of the offset index.
    offset_summary: Vec<u32>,
    times: PagedFile,
    /// First timestamp of each group of the time index.
    time_summary: Vec<i64>,
    cache: Option<SharedPageCache>,
}

impl PagedIndexes {
    /// Builds the summaries from in-memory indexes whose files (`offset_file`,
    /// `time_file`) hold the same entries.
    pub fn new(
        offset_index: &OffsetIndex,
        offset_file: Rc<dyn StorageFile>,
        time_index: &TimeIndex,
        time_file: Rc<dyn StorageFile>,
        base_offset: i64,
        cache: Option<SharedPageCache>,
    ) -> Self {
        let offset_summary = (0..offset_index.len())
            .step_by(OFFSET_PER_PAGE)
            .map(|i| (offset_index.entry(i).offset - base_offset) as u32)
            .collect();
        let time_summary = (0..time_index.len())
            .step_by(TIME_PER_GROUP)
            .map(|i| time_index.entry(i).timestamp)
            .collect();
        PagedIndexes {
            base_offset,
            offsets: PagedFile {
                file: offset_file,
                id: next_file_id(),
                entries: offset_index.len(),
            },
            offset_summary,
            times: PagedFile {
                file: time_file,
                id: next_file_id(),
                entries: time_index.len(),
            },
            time_summary,
            cache,
        }
    }

    pub fn offset_entries(&self) -> usize {
        self.offsets.entries
    }

    pub fn time_entries(&self) -> usize {
        self.times.entries
    }

    async fn read(&self, f: &PagedFile, pos: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let data = match &self.cache {
            Some(c) => read_through(c, f.file.as_ref(), f.id, pos, len).await?,
            None => f.file.read_at(pos, len).await?,
        };
        if data.len() < len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "index file {} is shorter than its {} entries",
                    f.file.path().display(),
                    f.entries
                ),
            ));
        }
        Ok(data)
    }

    /// Largest offset entry <= target, or (base, 0).
    pub async fn offset_lookup(&self, target: i64) -> std::io::Result<OffsetPosition> {
        let none = OffsetPosition {
            offset: self.base_offset,
            position: 0,
        };
        let rel = target - self.base_offset;
        if rel < 0 || self.offset_summary.is_empty() {
            return Ok(none);
        }
        let rel = rel.min(u32::MAX as i64) as u32;
        let page = self.offset_summary.partition_point(|&r| r <= rel);
        if page == 0 {
            return Ok(none);
        }
        let first = (page - 1) * OFFSET_PER_PAGE;
        let n = (self.offsets.entries - first).min(OFFSET_PER_PAGE);
        let bytes = self
            .read(
                &self.offsets,
                (first * OFFSET_ENTRY) as u64,
                n * OFFSET_ENTRY,
            )
            .await?;
        let mut best = none;
        for e in bytes.chunks_exact(OFFSET_ENTRY) {
            let r = u32::from_be_bytes(e[..4].try_into().unwrap());
            if r > rel {
                break;
            }
            best = OffsetPosition {
                offset: self.base_offset + r as i64,
                position: u32::from_be_bytes(e[4..].try_into().unwrap()),
            };
        }
        Ok(best)
    }

    /// Largest time entry with timestamp <= target, or (-1, base).
    pub async fn time_lookup(&self, target: i64) -> std::io::Result<TimestampOffset> {
        let none = TimestampOffset {
            timestamp: -1,
            offset: self.base_offset,
        };
        let group = self.time_summary.partition_point(|&t| t <= target);
        if group == 0 {
            return Ok(none);
        }
        let first = (group - 1) * TIME_PER_GROUP;
        let n = (self.times.entries - first).min(TIME_PER_GROUP);
        let bytes = self
            .read(&self.times, (first * TIME_ENTRY) as u64, n * TIME_ENTRY)
            .await?;
        let mut best = none;
        for e in bytes.chunks_exact(TIME_ENTRY) {
            let ts = i64::from_be_bytes(e[..8].try_into().unwrap());
            if ts > target {
                break;
            }
            best = TimestampOffset {
                timestamp: ts,
                offset: self.base_offset + i32::from_be_bytes(e[8..].try_into().unwrap()) as i64,
            };
        }
        Ok(best)
    }

    /// Every entry, read back (tools and tests).
    pub async fn load(
        &self,
        max_offset: usize,
        max_time: usize,
    ) -> std::io::Result<(OffsetIndex, TimeIndex)> {
        let ob = self
            .read(&self.offsets, 0, self.offsets.entries * OFFSET_ENTRY)
            .await?;
        let tb = self
            .read(&self.times, 0, self.times.entries * TIME_ENTRY)
            .await?;
        let oi = OffsetIndex::decode(self.base_offset, &ob, max_offset)
            .map_err(std::io::Error::other)?;
        let ti =
            TimeIndex::decode(self.base_offset, &tb, max_time).map_err(std::io::Error::other)?;
        Ok((oi, ti))
    }

    pub async fn close(self) {
        let _ = self.offsets.file.close().await;
        let _ = self.times.file.close().await;
    }
}
