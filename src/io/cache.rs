//! Per-shard read cache of 4 KiB pages of the files a shard reads (segment `.log` files and
//! index files), filled on write (the tail just written) and on read, bounded by a byte
//! budget and evicted least-recently-used. One cache per shard, used only by that shard's
//! executor: `Rc<RefCell<..>>`, no locks, nothing shared across cores.
//!
//! Pages are keyed by (file id, page number). File ids are unique per open file handle, so a
//! file that is truncated and reopened (recovery) never sees its old pages; those age out.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytes::Bytes;
use lru::LruCache;

use super::chain::ByteChain;
use super::StorageFile;

pub const PAGE: u64 = 4096;
/// Pages of each write that are cached: the tail just written.
pub const TAIL_PAGES: usize = 16;

/// A cached page: `PAGE` bytes, or fewer for the last page of a sealed file. Its own
/// allocation (so the budget is exact), shared with the replies that send it.
pub type Page = Bytes;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub bytes: u64,
    pub budget_bytes: u64,
    /// Bytes read ahead of sequential readers since start.
    pub read_ahead_bytes: u64,
}

pub struct PageCache {
    pages: LruCache<(u64, u64), Page>,
    budget_pages: usize,
    /// Bytes of appenders' staging buffers counted against the same budget.
    staging_bytes: usize,
    /// Read-ahead bytes in flight now (granted by `grant_read_ahead`).
    read_ahead_in_flight: u64,
    read_ahead_total: u64,
    hits: u64,
    misses: u64,
}

pub type SharedPageCache = Rc<RefCell<PageCache>>;

thread_local! {
    static NEXT_FILE_ID: Cell<u64> = const { Cell::new(1) };
}

/// A process-unique (per thread) id for a newly opened file handle.
pub fn next_file_id() -> u64 {
    NEXT_FILE_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

impl PageCache {
    pub fn shared(budget_bytes: u64) -> SharedPageCache {
        Rc::new(RefCell::new(PageCache {
            pages: LruCache::unbounded(),
            budget_pages: (budget_bytes / PAGE) as usize,
            staging_bytes: 0,
            read_ahead_in_flight: 0,
            read_ahead_total: 0,
            hits: 0,
            misses: 0,
        }))
    }

    pub fn get(&mut self, file: u64, page: u64) -> Option<Page> {
        let got = self.pages.get(&(file, page)).cloned();
        if got.is_some() {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        got
    }

    /// Caches `p` as page `page` of `file`, evicting the least recently used pages beyond
    /// the budget.
    pub fn insert(&mut self, file: u64, page: u64, p: Page) -> Page {
        debug_assert!(p.len() <= PAGE as usize);
        if self.budget_pages > 0 {
            self.pages.put((file, page), p.clone());
            self.evict_to_budget();
        }
        p
    }

    /// Pages beyond what the budget leaves after staging go, least recently used first.
    fn evict_to_budget(&mut self) {
        let staging_pages = self.staging_bytes.div_ceil(PAGE as usize);
        while self.pages.len() + staging_pages > self.budget_pages && self.pages.pop_lru().is_some()
        {
        }
        // Cached pages never push the shard over its budget (staging alone may).
        debug_assert!(
            self.pages.is_empty() || self.pages.len() + staging_pages <= self.budget_pages
        );
    }

    /// Grants an appender's staging buffer from the shard's budget: `full` bytes while
    /// staging stays within half the budget (cached pages make room), else `min` bytes,
    /// always granted, so a shard with many active partitions gets smaller write chunks
    /// instead of unbounded memory. With no budget (cache off) `full` is always granted.
    pub fn grant_staging(&mut self, full: usize, min: usize) -> usize {
        let budget = self.budget_pages * PAGE as usize;
        let granted = if budget == 0 || self.staging_bytes + full <= budget / 2 {
            full
        } else {
            min
        };
        self.staging_bytes += granted;
        self.evict_to_budget();
        debug_assert!(
            granted == full || granted == min,
            "a grant is one of the two sizes"
        );
        granted
    }

    /// Returns staging bytes granted by `grant_staging`.
    pub fn release_staging(&mut self, bytes: usize) {
        debug_assert!(
            bytes <= self.staging_bytes,
            "released more staging than granted"
        );
        self.staging_bytes = self.staging_bytes.saturating_sub(bytes);
    }

    /// The cache's byte budget.
    pub fn budget_bytes(&self) -> u64 {
        self.budget_pages as u64 * PAGE
    }

    /// Grants `bytes` of read-ahead while the shard's read-ahead in flight stays within a
    /// quarter of the budget (never with no budget: there is nowhere to put the pages).
    pub fn grant_read_ahead(&mut self, bytes: u64) -> bool {
        if self.read_ahead_in_flight + bytes > self.budget_bytes() / 4 {
            return false;
        }
        self.read_ahead_in_flight += bytes;
        self.read_ahead_total += bytes;
        true
    }

    /// Gives back read-ahead granted by `grant_read_ahead` (done or cancelled).
    pub fn release_read_ahead(&mut self, bytes: u64) {
        debug_assert!(
            bytes <= self.read_ahead_in_flight,
            "released more read-ahead than granted"
        );
        self.read_ahead_in_flight = self.read_ahead_in_flight.saturating_sub(bytes);
    }

    /// Staging bytes granted now.
    pub fn staging_bytes(&self) -> usize {
        self.staging_bytes
    }

    /// Caches the last full pages (up to `TAIL_PAGES`) of `data`, just written at
    /// page-aligned `pos` of `file`: readers near the tail hit them, and a large sequential
    /// write does not flush everything else out of the cache.
    pub fn insert_written(&mut self, file: u64, pos: u64, data: &[u8]) {
        if self.budget_pages == 0 {
            return;
        }
        debug_assert_eq!(pos % PAGE, 0);
        let pages = data.len() / PAGE as usize;
        for i in pages.saturating_sub(TAIL_PAGES)..pages {
            let at = i * PAGE as usize;
            let page = Bytes::copy_from_slice(&data[at..at + PAGE as usize]);
            self.insert(file, pos / PAGE + i as u64, page);
        }
    }

    /// Drops the pages of `file` covering `[pos, pos + len)`: bytes found damaged must be
    /// read from the device again, not served from memory.
    pub fn forget(&mut self, file: u64, pos: u64, len: usize) {
        let first = pos / PAGE;
        let end = (pos + len as u64).div_ceil(PAGE);
        for page in first..end {
            self.pages.pop(&(file, page));
        }
    }

    pub fn clear(&mut self) {
        self.pages.clear();
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits,
            misses: self.misses,
            bytes: self.pages.len() as u64 * PAGE,
            budget_bytes: self.budget_bytes(),
            read_ahead_bytes: self.read_ahead_total,
        }
    }
}

/// Reads `[pos, pos + len)` of `file` through the cache: cached pages are shared, not
/// copied; each run of missing pages is read with one device read (page-aligned) and
/// cached. Returns fewer bytes only at the end of the file.
pub async fn read_through(
    cache: &SharedPageCache,
    file: &dyn StorageFile,
    file_id: u64,
    pos: u64,
    len: usize,
) -> std::io::Result<ByteChain> {
    if len == 0 {
        return Ok(ByteChain::default());
    }
    let end = pos + len as u64;
    let first = pos / PAGE;
    let last = (end - 1) / PAGE;
    let mut pages: Vec<Option<Page>> = {
        let mut c = cache.borrow_mut();
        (first..=last).map(|p| c.get(file_id, p)).collect()
    };
    fill_missing(cache, file, file_id, first, &mut pages).await?;
    let mut out = ByteChain::default();
    for (k, page) in pages.iter().enumerate() {
        let Some(page) = page else { break };
        let page_start = (first + k as u64) * PAGE;
        let a = pos.saturating_sub(page_start) as usize;
        let b = ((end - page_start) as usize).min(page.len());
        if a >= b {
            break;
        }
        out.push(page.slice(a..b));
        if page.len() < PAGE as usize {
            break;
        }
    }
    // Exactly what was asked, or fewer bytes at the end of the file, never more.
    debug_assert!(out.len() <= len, "read {} of {len}", out.len());
    Ok(out)
}

/// Reads each run of `None` pages (pages `first..`) with one device read and caches them;
/// stops at the end of the file.
async fn fill_missing(
    cache: &SharedPageCache,
    file: &dyn StorageFile,
    file_id: u64,
    first: u64,
    pages: &mut [Option<Page>],
) -> std::io::Result<()> {
    let mut i = 0;
    while i < pages.len() {
        if pages[i].is_some() {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < pages.len() && pages[j].is_none() {
            j += 1;
        }
        let start = (first + i as u64) * PAGE;
        let read = file.read_pages(start, (j - i) * PAGE as usize).await?;
        // A device read gives whole pages, the last one short only at the end of the file.
        debug_assert!(read.len() <= j - i);
        debug_assert!(read.iter().rev().skip(1).all(|p| p.len() == PAGE as usize));
        let complete = read.len() == j - i && read.last().is_none_or(|p| p.len() == PAGE as usize);
        let mut c = cache.borrow_mut();
        for (k, page) in read.into_iter().enumerate() {
            pages[i + k] = Some(c.insert(file_id, first + (i + k) as u64, page));
        }
        if !complete {
            break; // end of file
        }
        i = j;
    }
    Ok(())
}
