//! Byte ranges of cached files whose record batches passed their CRC-32C check while held
//! in the page cache, so a later read of the same cached bytes (a second consumer group, a
//! re-read) need not compute it again: the check is there for what the device returns, and
//! these bytes came from it once and were checked then. Ranges of a file are merged; the
//! page cache removes a range's part whenever an extent under it goes (evicted, replaced,
//! forgotten), so a range never outlives the bytes that were checked.

use super::intervals::{holding, meeting, FileIntervals};

/// Ranges held at most (a reader hopping over tiny batches could otherwise make one per
/// batch): past it, new ranges are not recorded and their bytes are checked every time.
pub const MAX_RANGES: usize = 1 << 16;

#[derive(Default)]
pub struct CheckedRanges {
    /// `[start, end)` by (file id, start): disjoint, and never touching (merged).
    ranges: FileIntervals,
}

impl CheckedRanges {
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether all of `[start, end)` of `file` is checked.
    pub fn contains(&self, file: u64, start: u64, end: u64) -> bool {
        holding(&self.ranges, file, start).is_some_and(|(_, e)| e >= end)
    }

    /// Records `[start, end)` of `file` as checked, merged with the ranges it overlaps or
    /// touches (unless `MAX_RANGES` are held and it would add one).
    pub fn insert(&mut self, file: u64, start: u64, end: u64) {
        assert!(start < end, "a checked range holds a batch");
        let joined = meeting(&self.ranges, file, start, end, true);
        if joined.is_empty() && self.ranges.len() >= MAX_RANGES {
            return;
        }
        let from = joined.iter().map(|r| r.0).fold(start, u64::min);
        let to = joined.iter().map(|r| r.1).fold(end, u64::max);
        for (s, _) in joined {
            self.ranges.remove(&(file, s));
        }
        self.ranges.insert((file, from), to);
        assert!(self.len() <= MAX_RANGES);
    }

    /// Forgets `[start, end)` of `file`: the ranges it overlaps keep only what lies outside
    /// (while the bound allows: a range split in two past it loses its right part).
    pub fn remove(&mut self, file: u64, start: u64, end: u64) {
        for (s, e) in meeting(&self.ranges, file, start, end, false) {
            self.ranges.remove(&(file, s));
            if s < start {
                self.ranges.insert((file, s), start);
            }
            if e > end && self.ranges.len() < MAX_RANGES {
                self.ranges.insert((file, end), e);
            }
        }
        assert!(self.len() <= MAX_RANGES);
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_answer_for_whole_spans_only() {
        let mut c = CheckedRanges::default();
        c.insert(1, 100, 200);
        c.insert(1, 200, 300); // touches: merged
        c.insert(1, 400, 500);
        c.insert(2, 0, 1000); // another file
        assert_eq!(c.len(), 3);
        assert!(c.contains(1, 100, 300));
        assert!(c.contains(1, 150, 250));
        assert!(!c.contains(1, 250, 450), "the gap 300..400 is not checked");
        assert!(!c.contains(1, 50, 150));
        assert!(!c.contains(3, 0, 1));
        c.insert(1, 250, 450); // bridges both
        assert_eq!(c.len(), 2);
        assert!(c.contains(1, 100, 500));
    }

    #[test]
    fn removing_a_span_keeps_what_lies_outside_it() {
        let mut c = CheckedRanges::default();
        c.insert(1, 0, 1000);
        c.remove(1, 400, 600);
        assert!(c.contains(1, 0, 400));
        assert!(c.contains(1, 600, 1000));
        assert!(!c.contains(1, 300, 500));
        c.remove(1, 0, 4096);
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn past_the_bound_new_ranges_are_not_recorded_but_merges_still_are() {
        let mut c = CheckedRanges::default();
        for i in 0..MAX_RANGES as u64 {
            c.insert(1, i * 10, i * 10 + 5);
        }
        c.insert(1, 1 << 40, (1 << 40) + 5);
        assert_eq!(c.len(), MAX_RANGES);
        assert!(!c.contains(1, 1 << 40, (1 << 40) + 5));
        c.insert(1, 5, 10); // joins 0..5 and 10..15: one fewer
        assert_eq!(c.len(), MAX_RANGES - 1);
        assert!(c.contains(1, 0, 15));
    }
}
