//! Sealed-segment indexes read page by page through the shard's page cache (Kafka's lazy,
//! mmapped index, without mmap). A sealed segment keeps only a summary in memory, the first
//! key of every index page; a lookup finds the page in the summary and reads that one page
//! (from the cache, or one device read when cold), so the entries are loaded lazily on first
//! use and dropped with the rest of the cache under memory pressure or by `DropCaches`.

use std::rc::Rc;

use super::offset_index::{
    IndexHit, OffsetEntry, OffsetIndex, OffsetPosition, ENTRY_SIZE as OFFSET_ENTRY,
};
use super::sparse_index::{count_at_or_below, decode_entries, IndexError};
use super::time_index::{TimeEntry, TimeHit, TimeIndex, TimestampOffset, ENTRY_SIZE as TIME_ENTRY};
use crate::error::{Error, Result};
use crate::io::awake::awake_until;
use crate::io::cache::{next_file_id, read_through, SharedPageCache, PAGE};
use crate::io::StorageFile;

/// Offset-index entries per 4 KiB page (8-byte entries align with pages).
const OFFSET_PER_PAGE: usize = PAGE as usize / OFFSET_ENTRY;
/// 12-byte time-index entries do not align with pages: each page holds the entries that
/// start and end inside it, and the one entry crossing into the next page (if any) is kept
/// in memory, so a lookup still reads exactly one page.
#[derive(Debug, Clone, Copy)]
struct TimePage {
    /// Index of the first entry entirely inside the page, its timestamp and offset.
    first: usize,
    first_ts: i64,
    first_rel: u32,
    /// Entries entirely inside the page.
    count: usize,
    /// The entry crossing the page's end: (timestamp, relative offset).
    crossing: Option<(i64, u32)>,
}

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
    time_pages: Vec<TimePage>,
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
        let mut time_pages = Vec::new();
        let n = time_index.len();
        let page = PAGE as usize;
        let mut p = 0usize;
        while p * page < n * TIME_ENTRY {
            let first = (p * page).div_ceil(TIME_ENTRY);
            let end = ((p + 1) * page / TIME_ENTRY).min(n);
            if first < n {
                let crossing_idx = (p + 1) * page / TIME_ENTRY;
                let crossing = (!((p + 1) * page).is_multiple_of(TIME_ENTRY) && crossing_idx < n)
                    .then(|| {
                        let e = time_index.entry(crossing_idx);
                        (e.timestamp, (e.offset - base_offset) as u32)
                    });
                let e = time_index.entry(first);
                time_pages.push(TimePage {
                    first,
                    first_ts: e.timestamp,
                    first_rel: (e.offset - base_offset) as u32,
                    count: end.saturating_sub(first),
                    crossing,
                });
            }
            p += 1;
        }
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
            time_pages,
            cache,
        }
    }

    async fn read(&self, f: &PagedFile, pos: u64, len: usize) -> Result<Vec<u8>> {
        let path = f.file.path();
        // A lookup waits for this page: waited for awake.
        let data = match &self.cache {
            Some(c) => awake_until(read_through(c, f.file.as_ref(), f.id, pos, len))
                .await
                .map(|chain| chain.copy_range(0, len)),
            None => awake_until(f.file.read_at(pos, len)).await,
        }
        .map_err(|e| Error::io("read index", path, e))?;
        if data.len() < len {
            let what = format!("the file is shorter than its {} entries", f.entries);
            return Err(Error::corruption(path, pos + data.len() as u64, what));
        }
        Ok(data)
    }

    /// Drops cached pages found damaged, so the next lookup reads the device again.
    fn forget(&self, f: &PagedFile, pos: u64, len: usize) {
        if let Some(cache) = &self.cache {
            cache.borrow_mut().forget(f.id, pos, len);
        }
    }

    /// The entries of an offset-index page read back, checked like a loaded index: the
    /// page must start with the entry its summary recorded and increase from there.
    fn offset_page(&self, page: usize, first: usize, bytes: &[u8]) -> Result<Vec<OffsetPosition>> {
        let path = self.offsets.file.path();
        let at = (first * OFFSET_ENTRY) as u64;
        let entries: Vec<OffsetEntry> = decode_entries(first, bytes, None)
            .map_err(|e| Error::corruption(path, at, e.to_string()))?;
        if let Some(starts) = entries.first().map(|e| e.rel) {
            if starts != self.offset_summary[page] {
                let summary = self.offset_summary[page];
                let what = format!("page starts at +{starts}, its summary says +{summary}");
                return Err(Error::corruption(path, at, what));
            }
        }
        let base = self.base_offset;
        Ok(entries
            .into_iter()
            .map(|e| OffsetPosition {
                offset: base + e.rel as i64,
                position: e.position,
            })
            .collect())
    }

    /// The entries of a time-index page read back, checked as `offset_page` does.
    fn time_page(&self, page: &TimePage, bytes: &[u8]) -> Result<Vec<TimestampOffset>> {
        let path = self.times.file.path();
        let at = (page.first * TIME_ENTRY) as u64;
        let entries: Vec<TimeEntry> = decode_entries(page.first, bytes, None)
            .map_err(|e| Error::corruption(path, at, e.to_string()))?;
        if let Some(starts) = entries.first().map(|e| e.timestamp) {
            if starts != page.first_ts {
                let what = format!(
                    "page starts at {starts}, its summary says {}",
                    page.first_ts
                );
                return Err(Error::corruption(path, at, what));
            }
        }
        Ok(entries
            .into_iter()
            .map(|e| self.time_entry(e.timestamp, e.rel))
            .collect())
    }

    /// The floor entry and the (up to) two entries after it that sit in the same page.
    pub async fn offset_lookup_hit(&self, target: i64) -> Result<IndexHit> {
        let none = OffsetPosition {
            offset: self.base_offset,
            position: 0,
        };
        let miss = IndexHit {
            floor: none,
            next: None,
            after_next: None,
        };
        let rel = target.saturating_sub(self.base_offset);
        if rel < 0 || self.offset_summary.is_empty() {
            return Ok(miss);
        }
        let rel = rel.min(u32::MAX as i64) as u32;
        let page = count_at_or_below(&self.offset_summary, rel, |&r| r);
        if page == 0 {
            return Ok(miss);
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
        let entries = self.offset_page(page - 1, first, &bytes).inspect_err(|_| {
            self.forget(&self.offsets, (first * OFFSET_ENTRY) as u64, bytes.len())
        })?;
        let n = count_at_or_below(&entries, rel as i64, |e| e.offset - self.base_offset);
        Ok(IndexHit {
            floor: if n == 0 { none } else { entries[n - 1] },
            next: entries.get(n).copied(),
            after_next: entries.get(n + 1).copied(),
        })
    }

    /// Largest time entry with timestamp <= target, or (-1, base).
    /// `TimeIndex::lookup_hit` reading at most one page: `next` comes from that page, its
    /// crossing entry or the next page's summary.
    pub async fn time_lookup_hit(&self, target: i64) -> Result<TimeHit> {
        let p = count_at_or_below(&self.time_pages, target, |tp| tp.first_ts);
        // The first entry of the page after `p - 1`, held in its summary.
        let next_page = self.time_pages.get(p).map(|np| {
            let e = self.time_entry(np.first_ts, np.first_rel);
            (np.first, e)
        });
        let none = TimestampOffset {
            timestamp: -1,
            offset: self.base_offset,
        };
        let Some(page) = p.checked_sub(1).map(|i| self.time_pages[i]) else {
            return Ok(self.hit(none, next_page));
        };
        let crossing = page.crossing.map(|(ts, rel)| {
            let e = self.time_entry(ts, rel);
            (page.first + page.count, e)
        });
        // The crossing entry follows every entry of the page: if it qualifies, it is the
        // floor (the next page starts above the target).
        if let Some((_, e)) = crossing.filter(|(_, e)| e.timestamp <= target) {
            return Ok(self.hit(e, next_page));
        }
        let bytes = self
            .read(
                &self.times,
                (page.first * TIME_ENTRY) as u64,
                page.count * TIME_ENTRY,
            )
            .await?;
        let entries = self.time_page(&page, &bytes).inspect_err(|_| {
            self.forget(&self.times, (page.first * TIME_ENTRY) as u64, bytes.len())
        })?;
        let n = count_at_or_below(&entries, target, |e| e.timestamp);
        let floor = n.checked_sub(1).map_or(none, |i| entries[i]);
        let next = entries
            .get(n)
            .map(|&e| (page.first + n, e))
            .or(crossing)
            .or(next_page);
        Ok(self.hit(floor, next))
    }

    /// A hit whose `next` is entry `i` of the index, kept only when it may bound a search.
    fn hit(&self, floor: TimestampOffset, next: Option<(usize, TimestampOffset)>) -> TimeHit {
        TimeHit {
            floor,
            next: next
                .filter(|&(i, _)| TimeHit::bounding(i, self.times.entries))
                .map(|(_, e)| e),
        }
    }

    fn time_entry(&self, timestamp: i64, rel: u32) -> TimestampOffset {
        TimestampOffset {
            timestamp,
            offset: self.base_offset + rel as i64,
        }
    }

    /// Every entry, read back (tools and tests).
    pub async fn load(
        &self,
        max_offset: usize,
        max_time: usize,
    ) -> Result<(OffsetIndex, TimeIndex)> {
        let ob = self
            .read(&self.offsets, 0, self.offsets.entries * OFFSET_ENTRY)
            .await?;
        let tb = self
            .read(&self.times, 0, self.times.entries * TIME_ENTRY)
            .await?;
        let corrupt =
            |f: &PagedFile, e: IndexError| Error::corruption(f.file.path(), 0, e.to_string());
        let oi = OffsetIndex::decode(self.base_offset, &ob, max_offset)
            .map_err(|what| corrupt(&self.offsets, what))?;
        let ti = TimeIndex::decode(self.base_offset, &tb, max_time)
            .map_err(|what| corrupt(&self.times, what))?;
        Ok((oi, ti))
    }

    pub async fn close(self) {
        let _ = self.offsets.file.close().await;
        let _ = self.times.file.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::sim::SimStorage;
    use crate::io::{OpenMode, PageCache, Storage};

    /// Paged lookups equal in-memory lookups for every target, across page boundaries
    /// (including time entries that cross a page), cold and warm.
    #[test]
    fn paged_lookups_match_in_memory_ones() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                let base = 1_000;
                let mut oi = OffsetIndex::new(base, 100_000);
                let mut ti = TimeIndex::new(base, 100_000);
                for i in 0..2_000i64 {
                    oi.append(base + 3 * i + 1, (i * 100 + 7) as u32).unwrap();
                    ti.maybe_append(50_000 + 5 * i, base + 3 * i + 1, false);
                }
                sim.write_file_atomic("/d/x.index".as_ref(), oi.encode())
                    .await
                    .unwrap();
                sim.write_file_atomic("/d/x.timeindex".as_ref(), ti.encode())
                    .await
                    .unwrap();
                let of = sim
                    .open("/d/x.index".as_ref(), OpenMode::ReadOnly)
                    .await
                    .unwrap();
                let tf = sim
                    .open("/d/x.timeindex".as_ref(), OpenMode::ReadOnly)
                    .await
                    .unwrap();
                let cache = PageCache::shared(64 * 1024);
                let paged = PagedIndexes::new(&oi, of, &ti, tf, base, Some(cache.clone()));
                for round in 0..2 {
                    if round == 1 {
                        cache.borrow_mut().clear();
                    }
                    for t in (base - 5..base + 6_010).step_by(7) {
                        assert_eq!(
                            paged.offset_lookup_hit(t).await.unwrap().floor,
                            oi.lookup(t),
                            "offset {t}"
                        );
                    }
                    for t in (49_990..60_010).step_by(3) {
                        assert_eq!(
                            paged.time_lookup_hit(t).await.unwrap(),
                            ti.lookup_hit(t),
                            "time {t}"
                        );
                    }
                }
                let (o2, t2) = paged.load(100_000, 100_000).await.unwrap();
                assert_eq!(o2.encode(), oi.encode());
                assert_eq!(t2.encode(), ti.encode());
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
