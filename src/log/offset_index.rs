//! Offset index (`.index`): sparse map from offset to byte position in the segment's `.log`.
//!
//! Format: 8-byte entries, big-endian `relativeOffset i32 | position i32`, where
//! relativeOffset = offset - segment base offset. Entries strictly increase in both fields.
//! The whole index lives in memory; the file is written when the segment is sealed or closed.
//! Decoding, the sanity checks and the search are `sparse_index.rs`'s, shared with the time
//! index.

use super::sparse_index::{count_at_or_below, IndexEntry, IndexError, SparseIndex};

/// One decoded entry, with the absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    pub offset: i64,
    pub position: u32,
}

pub const ENTRY_SIZE: usize = OffsetEntry::SIZE;

/// One stored entry as the file holds it: (relative offset, position), unchecked (dump-log
/// shows entries as they are, bad ones too).
pub fn decode_entry(e: &[u8]) -> (i32, i32) {
    let field = |r: std::ops::Range<usize>| i32::from_be_bytes(e[r].try_into().expect("4 bytes"));
    (field(0..4), field(4..8))
}

/// An `.index` entry as held in memory: relative offset -> position in the `.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    pub rel: u32,
    pub position: u32,
}

impl IndexEntry for OffsetEntry {
    const SIZE: usize = 8;

    fn decode(i: usize, bytes: &[u8]) -> Result<Self, IndexError> {
        let (rel, position) = decode_entry(bytes);
        if rel < 0 || position < 0 {
            let field = "offset or position";
            return Err(IndexError::Negative { entry: i, field });
        }
        Ok(OffsetEntry {
            rel: rel as u32,
            position: position as u32,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.rel as i32).to_be_bytes());
        out.extend_from_slice(&(self.position as i32).to_be_bytes());
    }

    /// Both the offset and the position strictly increase.
    fn follows(&self, prev: &Self) -> bool {
        self.rel > prev.rel && self.position > prev.position
    }
}

/// A lookup's floor entry and the (up to) two entries after it: when batches are larger
/// than the index interval every batch has an entry, so the next entry is the very next
/// batch and the spacing of entries predicts its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHit {
    pub floor: OffsetPosition,
    pub next: Option<OffsetPosition>,
    pub after_next: Option<OffsetPosition>,
}

/// The `.index` of a segment, held in memory.
pub type OffsetIndex = SparseIndex<OffsetEntry>;

impl SparseIndex<OffsetEntry> {
    pub fn is_full(&self) -> bool {
        self.len() >= self.max_entries()
    }

    /// The absolute form of a stored entry.
    pub fn absolute(&self, e: OffsetEntry) -> OffsetPosition {
        OffsetPosition {
            offset: self.base_offset() + e.rel as i64,
            position: e.position,
        }
    }

    pub fn entry(&self, i: usize) -> OffsetPosition {
        self.absolute(self.entries()[i])
    }

    pub fn last(&self) -> Option<OffsetPosition> {
        self.entries().last().map(|&e| self.absolute(e))
    }

    /// Adds an entry. Callers uphold Kafka's invariants (not full, offset and position larger
    /// than the last entry's); a violation is a bug, reported rather than stored.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<(), IndexError> {
        if self.is_full() {
            return Err(IndexError::Full);
        }
        let rel = self
            .relative(offset)
            .ok_or(IndexError::NotRelative { offset })?;
        self.push(OffsetEntry { rel, position })
    }

    /// Entries with an offset <= `target` (0 below the base).
    fn count_at_or_below(&self, target: i64) -> usize {
        let rel = target.saturating_sub(self.base_offset());
        if rel < 0 {
            return 0;
        }
        let rel = rel.min(u32::MAX as i64) as u32;
        count_at_or_below(self.entries(), rel, |e| e.rel)
    }

    pub fn lookup_hit(&self, target: i64) -> IndexHit {
        let n = self.count_at_or_below(target);
        let at = |i: usize| (i < self.len()).then(|| self.entry(i));
        IndexHit {
            floor: self.floor(n),
            next: at(n),
            after_next: at(n + 1),
        }
    }

    /// The largest entry with an offset <= `target`; (base offset, 0) when there is none.
    pub fn lookup(&self, target: i64) -> OffsetPosition {
        self.floor(self.count_at_or_below(target))
    }

    fn floor(&self, n: usize) -> OffsetPosition {
        match n {
            0 => OffsetPosition {
                offset: self.base_offset(),
                position: 0,
            },
            n => self.entry(n - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's OffsetIndexTest.lookupExtremeCases / randomLookupTest in miniature.
    #[test]
    fn lookup_is_largest_lower_bound() {
        let mut idx = OffsetIndex::new(45, 30);
        assert_eq!(
            idx.lookup(45),
            OffsetPosition {
                offset: 45,
                position: 0
            }
        );
        for i in 0..10 {
            idx.append(45 + 2 * i + 1, (i * 100 + 50) as u32).unwrap();
        }
        assert_eq!(idx.lookup(44).offset, 45, "below the first entry");
        assert_eq!(idx.lookup(45).position, 0);
        assert_eq!(idx.lookup(46).offset, 46);
        assert_eq!(idx.lookup(47).offset, 46);
        assert_eq!(idx.lookup(48).offset, 48);
        assert_eq!(idx.lookup(10_000).offset, 45 + 19);
        assert_eq!(idx.lookup(10_000).position, 950);
    }

    #[test]
    fn appends_must_increase_and_respect_capacity() {
        let mut idx = OffsetIndex::new(0, 2);
        idx.append(5, 10).unwrap();
        assert!(idx.append(5, 20).is_err());
        assert!(idx.append(6, 10).is_err());
        idx.append(6, 11).unwrap();
        assert!(idx.is_full());
        assert!(idx.append(7, 12).is_err());
    }

    #[test]
    fn encode_decode_and_sanity() {
        let mut idx = OffsetIndex::new(100, 10);
        idx.append(101, 4096).unwrap();
        idx.append(150, 9000).unwrap();
        let bytes = idx.encode();
        assert_eq!(bytes.len(), 16);
        assert_eq!(&bytes[..8], &[0, 0, 0, 1, 0, 0, 0x10, 0]);
        let back = OffsetIndex::decode(100, &bytes, 10).unwrap();
        assert_eq!(back.last().unwrap().offset, 150);
        assert!(OffsetIndex::decode(100, &bytes[..12], 10).is_err());
        let mut swapped = bytes[8..].to_vec();
        swapped.extend_from_slice(&bytes[..8]);
        assert!(OffsetIndex::decode(100, &swapped, 10).is_err());
    }
}
