//! The page cache's map: extents, each a run of whole pages of one file held in one
//! allocation (what one device read brought in, or the tail of one write), found by any page
//! they cover and evicted least-recently-used as a whole. A 1 MiB read is one entry, one
//! allocation and one LRU touch, where 4 KiB entries made it 256 of each.
//!
//! Extents of a file never overlap: inserting one takes its pages from the extents it
//! overlaps (newer bytes win).

use bytes::Bytes;
use lru::LruCache;

use super::checked_ranges::CheckedRanges;
use super::intervals::{holding, meeting, FileIntervals};

pub const PAGE: u64 = 4096;

/// A run of pages `[page, page + pages)` of one file, cached or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// The cached bytes of these pages: `pages` whole pages, fewer bytes only where the
    /// extent ends its (sealed) file.
    Cached { page: u64, pages: u64, data: Bytes },
    /// Pages no extent holds.
    Missing { page: u64, pages: u64 },
}

pub(crate) struct Extents {
    /// Bytes of each extent by (file id, first page), least recently used first.
    lru: LruCache<(u64, u64), Bytes>,
    /// Each extent's end page by (file id, first page), in file order: the extent covering
    /// a page is the last one starting at or before it.
    by_pos: FileIntervals,
    /// Pages held by all extents (a short last page counts whole).
    pages: u64,
    /// Byte ranges whose batches were CRC-checked in these extents' bytes; a range's part
    /// goes with any extent under it.
    checked: CheckedRanges,
}

fn pages_of(len: usize) -> u64 {
    (len as u64).div_ceil(PAGE)
}

impl Extents {
    pub fn new() -> Self {
        Extents {
            lru: LruCache::unbounded(),
            by_pos: FileIntervals::new(),
            pages: 0,
            checked: CheckedRanges::default(),
        }
    }

    /// Pages held.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    pub fn is_empty(&self) -> bool {
        self.by_pos.is_empty()
    }

    /// The first page of the first extent of `file` starting at or after `page`.
    fn next_start(&self, file: u64, page: u64) -> Option<u64> {
        let (&(_, start), _) = self.by_pos.range((file, page)..(file, u64::MAX)).next()?;
        Some(start)
    }

    /// Pages `[first, end)` of `file` split into cached and missing runs, in file order.
    /// Extents used become the most recently used. Stops after a cached run that ends its
    /// file (fewer bytes than its pages).
    pub fn lookup(&mut self, file: u64, first: u64, end: u64) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut page = first;
        while page < end {
            let Some((start, extent_end)) = holding(&self.by_pos, file, page) else {
                let until = self.next_start(file, page).map_or(end, |n| n.min(end));
                pieces.push(Piece::Missing {
                    page,
                    pages: until - page,
                });
                page = until;
                continue;
            };
            let until = extent_end.min(end);
            let extent = self
                .lru
                .get(&(file, start))
                .expect("indexed extents are held");
            let from = ((page - start) * PAGE) as usize;
            let to = (((until - start) * PAGE) as usize).min(extent.len());
            let data = extent.slice(from..to);
            let short = data.len() < ((until - page) * PAGE) as usize;
            pieces.push(Piece::Cached {
                page,
                pages: until - page,
                data,
            });
            if short {
                break;
            }
            page = until;
        }
        pieces
    }

    /// Caches `data` (whole pages, the last shorter only at the end of a sealed file) as
    /// pages from `page` of `file`. Newer bytes win: extents it overlaps lose those pages,
    /// and what they keep outside it is copied into extents of its own (rare: reads of one
    /// file seldom overlap), so each extent's pages are its whole allocation.
    pub fn insert(&mut self, file: u64, page: u64, data: Bytes) {
        assert!(!data.is_empty(), "an extent holds at least one byte");
        let end = page + pages_of(data.len());
        for (start, old) in self.take_overlapping(file, page, end) {
            if start < page {
                let head = ((page - start) * PAGE) as usize;
                self.put(file, start, Bytes::copy_from_slice(&old[..head]));
            }
            let tail = (end.saturating_sub(start) * PAGE) as usize;
            if tail < old.len() {
                self.put(file, end, Bytes::copy_from_slice(&old[tail..]));
            }
        }
        self.put(file, page, data);
        assert_eq!(self.lru.len(), self.by_pos.len());
    }

    fn put(&mut self, file: u64, page: u64, data: Bytes) {
        let end = page + pages_of(data.len());
        self.pages += end - page;
        let replaced = self.by_pos.insert((file, page), end);
        assert!(replaced.is_none(), "extents of a file never overlap");
        self.lru.put((file, page), data);
    }

    /// Removes and returns (first page, bytes) of every extent of `file` holding any of
    /// pages `[first, end)`.
    fn take_overlapping(&mut self, file: u64, first: u64, end: u64) -> Vec<(u64, Bytes)> {
        let starts = meeting(&self.by_pos, file, first, end, false);
        starts
            .into_iter()
            .map(|(start, _)| {
                self.remove_indexed(file, start);
                let data = self
                    .lru
                    .pop(&(file, start))
                    .expect("indexed extents are held");
                (start, data)
            })
            .collect()
    }

    /// Drops every extent of `file` holding any of pages `[first, end)`.
    pub fn remove_overlapping(&mut self, file: u64, first: u64, end: u64) {
        self.take_overlapping(file, first, end);
    }

    fn remove_indexed(&mut self, file: u64, start: u64) {
        let end = self.by_pos.remove(&(file, start)).expect("indexed");
        self.pages -= end - start;
        self.checked.remove(file, start * PAGE, end * PAGE);
    }

    /// Whether `parts` (the bytes of `file` from `pos` on, in order) are the cached extents'
    /// own bytes at those positions, not copies or bytes an extent held before it went.
    fn holds(&self, file: u64, mut pos: u64, parts: &[Bytes]) -> bool {
        parts.iter().all(|part| {
            let held = holding(&self.by_pos, file, pos / PAGE).is_some_and(|(start, _)| {
                let extent = self
                    .lru
                    .peek(&(file, start))
                    .expect("indexed extents are held");
                let offset = (pos - start * PAGE) as usize;
                offset + part.len() <= extent.len()
                    && extent.as_ptr().wrapping_add(offset) == part.as_ptr()
            });
            pos += part.len() as u64;
            held
        })
    }

    /// Whether the batch bytes `parts` at `pos` of `file` are cached bytes whose CRC was
    /// checked while cached.
    pub fn crc_checked(&self, file: u64, pos: u64, parts: &[Bytes]) -> bool {
        let end = pos + parts.iter().map(|p| p.len() as u64).sum::<u64>();
        self.checked.contains(file, pos, end) && self.holds(file, pos, parts)
    }

    /// Records that the batch bytes `parts` at `pos` of `file` passed their CRC check,
    /// when they are the cache's own bytes (a batch partly served from elsewhere is not).
    pub fn note_crc_checked(&mut self, file: u64, pos: u64, parts: &[Bytes]) {
        let end = pos + parts.iter().map(|p| p.len() as u64).sum::<u64>();
        if pos < end && self.holds(file, pos, parts) {
            self.checked.insert(file, pos, end);
        }
    }

    /// Drops the least recently used extent; false when there is none.
    pub fn pop_lru(&mut self) -> bool {
        let Some(((file, start), _)) = self.lru.pop_lru() else {
            return false;
        };
        self.remove_indexed(file, start);
        true
    }

    pub fn clear(&mut self) {
        self.lru.clear();
        self.by_pos.clear();
        self.pages = 0;
        self.checked.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(pages: u64, fill: u8) -> Bytes {
        Bytes::from(vec![fill; (pages * PAGE) as usize])
    }

    fn shape(pieces: &[Piece]) -> Vec<(bool, u64, u64, usize)> {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Cached { page, pages, data } => (true, *page, *pages, data.len()),
                Piece::Missing { page, pages } => (false, *page, *pages, 0),
            })
            .collect()
    }

    #[test]
    fn a_lookup_splits_a_range_into_cached_slices_and_missing_runs() {
        let mut e = Extents::new();
        e.insert(1, 4, bytes(4, b'a')); // pages 4..8
        e.insert(1, 10, bytes(2, b'b')); // pages 10..12
        e.insert(2, 0, bytes(64, b'c')); // another file
        let got = e.lookup(1, 2, 11);
        let p = PAGE as usize;
        assert_eq!(
            shape(&got),
            vec![
                (false, 2, 2, 0),
                (true, 4, 4, 4 * p),
                (false, 8, 2, 0),
                (true, 10, 1, p)
            ]
        );
        // A lookup starting inside an extent gets the slice from that page on.
        let got = e.lookup(1, 6, 7);
        assert_eq!(shape(&got), vec![(true, 6, 1, p)]);
        assert_eq!(
            e.lookup(3, 0, 2),
            vec![Piece::Missing { page: 0, pages: 2 }]
        );
        assert_eq!(e.pages(), 4 + 2 + 64);
    }

    #[test]
    fn an_extent_ending_its_file_short_ends_the_lookup() {
        let mut e = Extents::new();
        e.insert(1, 0, Bytes::from(vec![7u8; PAGE as usize + 100]));
        assert_eq!(e.pages(), 2);
        let got = e.lookup(1, 0, 5);
        assert_eq!(shape(&got), vec![(true, 0, 2, PAGE as usize + 100)]);
    }

    fn cached_fill(pieces: &[Piece]) -> Vec<(u64, u64, u8)> {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Cached { page, pages, data } => {
                    let fill = data[0];
                    assert!(data.iter().all(|&b| b == fill), "one extent per piece here");
                    (*page, *pages, fill)
                }
                Piece::Missing { page, pages } => (*page, *pages, 0),
            })
            .collect()
    }

    #[test]
    fn an_insert_takes_the_pages_it_overlaps_and_keeps_the_rest() {
        let mut e = Extents::new();
        e.insert(1, 0, bytes(4, b'a')); // 0..4
        e.insert(1, 4, bytes(4, b'b')); // 4..8
        e.insert(1, 8, bytes(4, b'c')); // 8..12
        e.insert(1, 12, bytes(4, b'd')); // 12..16
        e.insert(1, 6, bytes(4, b'x')); // 6..10: 4..8 keeps 4..6, 8..12 keeps 10..12
        assert_eq!(e.pages(), 16);
        let got = e.lookup(1, 0, 16);
        assert_eq!(
            cached_fill(&got),
            vec![
                (0, 4, b'a'),
                (4, 2, b'b'),
                (6, 4, b'x'),
                (10, 2, b'c'),
                (12, 4, b'd')
            ]
        );
        // Inside one extent: it is split around the newer bytes.
        e.insert(1, 1, bytes(1, b'y'));
        let got = e.lookup(1, 0, 4);
        assert_eq!(
            cached_fill(&got),
            vec![(0, 1, b'a'), (1, 1, b'y'), (2, 2, b'a')]
        );
        // Over several: the covered ones go whole.
        e.insert(1, 0, bytes(16, b'z'));
        assert_eq!(cached_fill(&e.lookup(1, 0, 16)), vec![(0, 16, b'z')]);
        assert_eq!(e.pages(), 16);
    }

    #[test]
    fn an_overlapping_insert_keeps_the_short_end_of_a_sealed_file() {
        let mut e = Extents::new();
        e.insert(1, 0, Bytes::from(vec![b'a'; 3 * PAGE as usize + 10])); // pages 0..4
        e.insert(1, 0, bytes(2, b'b'));
        let got = e.lookup(1, 0, 8);
        assert_eq!(
            shape(&got),
            vec![
                (true, 0, 2, 2 * PAGE as usize),
                (true, 2, 2, PAGE as usize + 10)
            ]
        );
    }

    #[test]
    fn a_checked_crc_holds_only_for_the_same_cached_bytes() {
        let mut e = Extents::new();
        let a = bytes(4, b'a');
        e.insert(1, 0, a.clone()); // pages 0..4
        let batch = [a.slice(100..5000), a.slice(5000..9000)];
        assert!(!e.crc_checked(1, 100, &batch));
        e.note_crc_checked(1, 100, &batch);
        assert!(e.crc_checked(1, 100, &batch));
        // A copy of the same bytes is not the cache's: its CRC is computed.
        let copy = [Bytes::copy_from_slice(&a[100..9000])];
        assert!(!e.crc_checked(1, 100, &copy));
        e.note_crc_checked(1, 100, &copy);
        // The same pages read again into a new extent: the old check does not carry over.
        let b = bytes(4, b'a');
        e.insert(1, 0, b.clone());
        assert!(!e.crc_checked(1, 100, &batch));
        assert!(!e.crc_checked(1, 100, &[b.slice(100..9000)]));
        // Nor past an eviction.
        e.note_crc_checked(1, 100, &[b.slice(100..9000)]);
        assert!(e.crc_checked(1, 100, &[b.slice(100..9000)]));
        assert!(e.pop_lru());
        assert!(!e.crc_checked(1, 100, &[b.slice(100..9000)]));
    }

    #[test]
    fn eviction_takes_the_least_recently_used_extent_whole() {
        let mut e = Extents::new();
        e.insert(1, 0, bytes(8, b'a'));
        e.insert(1, 8, bytes(2, b'b'));
        e.lookup(1, 0, 1); // 0..8 is now the most recently used
        assert!(e.pop_lru());
        assert_eq!(e.pages(), 8);
        assert_eq!(shape(&e.lookup(1, 8, 10)), vec![(false, 8, 2, 0)]);
        e.remove_overlapping(1, 7, 8);
        assert!(e.is_empty());
        assert_eq!(e.pages(), 0);
        assert!(!e.pop_lru());
    }
}
