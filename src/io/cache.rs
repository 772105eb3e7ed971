//! Per-shard read cache of the 4 KiB pages of the files a shard reads (segment `.log` files
//! and index files), filled on write (the tail just written) and on read, bounded by a byte
//! budget and evicted least-recently-used. One cache per shard, used only by that shard's
//! executor: `Rc<RefCell<..>>`, no locks, nothing shared across cores.
//!
//! Pages are held in extents (`extents.rs`): what one device read brought in stays one
//! allocation, shared by the replies that send it, and is evicted whole.
//!
//! Pages are keyed by (file id, page number). File ids are unique per open file handle, so a
//! file that is truncated and reopened (recovery) never sees its old pages; those age out.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytes::Bytes;

use super::chain::ByteChain;
use super::extents::{Extents, Piece};
use super::StorageFile;

pub use super::extents::PAGE;
/// Pages of each write that are cached: the tail just written.
pub const TAIL_PAGES: usize = 16;

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
    extents: Extents,
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
            extents: Extents::new(),
            budget_pages: (budget_bytes / PAGE) as usize,
            staging_bytes: 0,
            read_ahead_in_flight: 0,
            read_ahead_total: 0,
            hits: 0,
            misses: 0,
        }))
    }

    /// Pages `[first, end)` of `file` as cached and missing runs; counts each page as a
    /// hit or a miss.
    fn lookup(&mut self, file: u64, first: u64, end: u64) -> Vec<Piece> {
        let pieces = self.extents.lookup(file, first, end);
        for piece in &pieces {
            match piece {
                Piece::Cached { pages, .. } => self.hits += pages,
                Piece::Missing { pages, .. } => self.misses += pages,
            }
        }
        pieces
    }

    /// Caches `data` (whole pages, the last shorter only at the end of a sealed file) as the
    /// pages of `file` from `page` on, evicting the least recently used extents beyond the
    /// budget.
    fn insert(&mut self, file: u64, page: u64, data: Bytes) {
        if self.budget_pages > 0 && !data.is_empty() {
            self.extents.insert(file, page, data);
            self.evict_to_budget();
        }
    }

    /// Extents beyond what the budget leaves after staging go, least recently used first.
    fn evict_to_budget(&mut self) {
        let staging_pages = self.staging_bytes.div_ceil(PAGE as usize) as u64;
        let budget = self.budget_pages as u64;
        while self.extents.pages() + staging_pages > budget && self.extents.pop_lru() {}
        // Cached pages never push the shard over its budget (staging alone may).
        assert!(self.extents.is_empty() || self.extents.pages() + staging_pages <= budget);
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
        assert!(
            granted == full || granted == min,
            "a grant is one of the two sizes"
        );
        granted
    }

    /// Returns staging bytes granted by `grant_staging`.
    pub fn release_staging(&mut self, bytes: usize) {
        assert!(
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
        assert!(
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
        assert_eq!(pos % PAGE, 0);
        let pages = data.len() / PAGE as usize;
        let first = pages.saturating_sub(TAIL_PAGES);
        let tail = &data[first * PAGE as usize..pages * PAGE as usize];
        self.insert(
            file,
            pos / PAGE + first as u64,
            Bytes::copy_from_slice(tail),
        );
    }

    /// Drops the pages of `file` covering `[pos, pos + len)`: bytes found damaged must be
    /// read from the device again, not served from memory.
    pub fn forget(&mut self, file: u64, pos: u64, len: usize) {
        let first = pos / PAGE;
        let end = (pos + len as u64).div_ceil(PAGE);
        self.extents.remove_overlapping(file, first, end);
    }

    pub fn clear(&mut self) {
        self.extents.clear();
    }

    /// Whether `batch` (the bytes of `file` at `pos`, as a read returned them) is cached
    /// bytes whose CRC was checked while cached: a second reader need not compute it.
    pub fn crc_checked(&self, file: u64, pos: u64, batch: &ByteChain) -> bool {
        self.extents.crc_checked(file, pos, batch.parts())
    }

    /// Records that `batch` (the bytes of `file` at `pos`) passed its CRC check.
    pub fn note_crc_checked(&mut self, file: u64, pos: u64, batch: &ByteChain) {
        self.extents.note_crc_checked(file, pos, batch.parts())
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits,
            misses: self.misses,
            bytes: self.extents.pages() * PAGE,
            budget_bytes: self.budget_bytes(),
            read_ahead_bytes: self.read_ahead_total,
        }
    }
}

/// Reads `[pos, pos + len)` of `file` through the cache: cached extents are shared, not
/// copied; each run of missing pages is read from the device (page-aligned) and cached.
/// Returns fewer bytes only at the end of the file.
pub async fn read_through(
    cache: &SharedPageCache,
    file: &dyn StorageFile,
    file_id: u64,
    pos: u64,
    len: usize,
) -> std::io::Result<ByteChain> {
    let end = pos + len as u64;
    let first = pos / PAGE;
    let pieces = cache
        .borrow_mut()
        .lookup(file_id, first, end.div_ceil(PAGE));
    let mut out = ByteChain::default();
    let mut at = first * PAGE; // file position of the next piece's first byte
    for piece in pieces {
        let (parts, whole) = match piece {
            Piece::Cached { pages, data, .. } => {
                let whole = data.len() as u64 == pages * PAGE;
                (vec![data], whole)
            }
            Piece::Missing { page, pages } => {
                read_missing(cache, file, file_id, page, pages).await?
            }
        };
        for part in parts {
            push_overlap(&mut out, &part, at, pos, end);
            at += part.len() as u64;
        }
        if !whole {
            break; // end of file
        }
    }
    // Exactly what was asked, or fewer bytes at the end of the file, never more.
    assert!(out.len() <= len, "read {} of {len}", out.len());
    Ok(out)
}

/// Pushes the part of `part` (the file's bytes from `at`) that lies in `[pos, end)`.
fn push_overlap(out: &mut ByteChain, part: &Bytes, at: u64, pos: u64, end: u64) {
    let len = part.len() as u64;
    let a = pos.saturating_sub(at).min(len);
    let b = end.saturating_sub(at).min(len);
    if a < b {
        out.push(part.slice(a as usize..b as usize));
    }
}

/// Reads pages `[page, page + pages)` from the device and caches them, one extent per
/// device read. Returns the extents and whether all the pages were there (false at the end
/// of the file).
async fn read_missing(
    cache: &SharedPageCache,
    file: &dyn StorageFile,
    file_id: u64,
    page: u64,
    pages: u64,
) -> std::io::Result<(Vec<Bytes>, bool)> {
    let want = pages * PAGE;
    let read = file.read_extents(page * PAGE, want as usize).await?;
    let got: u64 = read.iter().map(|e| e.len() as u64).sum();
    // Device reads give whole pages, the last one short only at the end of the file.
    assert!(got <= want, "read {got} of {want}");
    debug_assert!(read
        .iter()
        .rev()
        .skip(1)
        .all(|e| (e.len() as u64).is_multiple_of(PAGE)));
    let mut c = cache.borrow_mut();
    let mut at = page;
    for extent in &read {
        c.insert(file_id, at, extent.clone());
        at += (extent.len() as u64).div_ceil(PAGE);
    }
    Ok((read, got == want))
}
