//! Time index (`.timeindex`): sparse map from timestamp to offset.
//!
//! Format: 12-byte entries, big-endian `timestamp i64 | relativeOffset i32`. An entry (T, O)
//! means "the largest timestamp seen up to offset O is T". Timestamps strictly increase: an
//! entry is added only when its timestamp is greater than the last one's. The index counts
//! as full one slot early, so the final max-timestamp entry written on roll/close always fits.
//! Decoding, the sanity checks and the search are `sparse_index.rs`'s, shared with the
//! offset index.

use super::sparse_index::{count_at_or_below, IndexEntry, IndexError, SparseIndex};

pub const ENTRY_SIZE: usize = TimeEntry::SIZE;

/// One stored entry as the file holds it: (timestamp, relative offset), unchecked
/// (dump-log shows entries as they are, bad ones too).
pub fn decode_entry(e: &[u8]) -> (i64, i32) {
    (
        i64::from_be_bytes(e[..8].try_into().expect("8 bytes")),
        i32::from_be_bytes(e[8..12].try_into().expect("4 bytes")),
    )
}

/// A `.timeindex` entry as held in memory: the largest timestamp seen up to the relative
/// offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: i64,
    pub rel: u32,
}

impl IndexEntry for TimeEntry {
    const SIZE: usize = 12;

    fn decode(i: usize, bytes: &[u8]) -> Result<Self, IndexError> {
        let (timestamp, rel) = decode_entry(bytes);
        if rel < 0 {
            let field = "relative offset";
            return Err(IndexError::Negative { entry: i, field });
        }
        Ok(TimeEntry {
            timestamp,
            rel: rel as u32,
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&(self.rel as i32).to_be_bytes());
    }

    /// Timestamps strictly increase; offsets never go back.
    fn follows(&self, prev: &Self) -> bool {
        self.timestamp > prev.timestamp && self.rel >= prev.rel
    }
}

/// One decoded entry with the absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: i64,
    pub offset: i64,
}

/// A time-index lookup: the floor entry (largest timestamp <= the target) and the entry
/// after it, `next`, when that entry is not the index's last.
///
/// Why `next` bounds the search: entries are offered at every offset-index entry with the
/// segment's max timestamp so far, and kept when it beats the last one. So no offset-index
/// entry written before `next` saw a max timestamp above `floor`'s, and every record up to
/// the last offset-index entry below `next.offset` has a timestamp <= `floor.timestamp`.
/// That needs an index that never turned an entry away for being full, which holds when
/// `next` is not its last entry (a full index takes only the final entry, written at roll
/// or close). Segments roll as soon as an index fills, as Kafka's do, so this only guards
/// index files written some other way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeHit {
    pub floor: TimestampOffset,
    pub next: Option<TimestampOffset>,
}

impl TimeHit {
    /// Whether entry `i` of an index of `len` entries may be a `next`.
    pub fn bounding(i: usize, len: usize) -> bool {
        i + 1 < len
    }
}

/// The `.timeindex` of a segment, held in memory.
pub type TimeIndex = SparseIndex<TimeEntry>;

impl SparseIndex<TimeEntry> {
    /// Full one slot early: the last slot is reserved for the entry written on roll/close.
    pub fn is_full(&self) -> bool {
        self.len() >= self.max_entries().saturating_sub(1)
    }

    /// The absolute form of a stored entry.
    pub fn absolute(&self, e: TimeEntry) -> TimestampOffset {
        TimestampOffset {
            timestamp: e.timestamp,
            offset: self.base_offset() + e.rel as i64,
        }
    }

    pub fn entry(&self, i: usize) -> TimestampOffset {
        self.absolute(self.entries()[i])
    }

    /// The last entry, or Kafka's empty-index sentinel (-1, base offset).
    pub fn last_entry(&self) -> TimestampOffset {
        self.floor(self.len())
    }

    /// Adds (timestamp, offset) if the timestamp is greater than the last entry's. With
    /// `final_entry` the reserved last slot may be used (roll/close).
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64, final_entry: bool) -> bool {
        let full = if final_entry {
            self.len() >= self.max_entries()
        } else {
            self.is_full()
        };
        let Some(rel) = self.relative(offset).filter(|_| !full) else {
            return false;
        };
        if timestamp <= self.last_entry().timestamp {
            return false;
        }
        self.push(TimeEntry { timestamp, rel }).is_ok()
    }

    /// Largest entry with timestamp <= target; (-1, base offset) when there is none.
    pub fn lookup(&self, target: i64) -> TimestampOffset {
        self.lookup_hit(target).floor
    }

    /// The floor entry for `target` and, when it bounds the answer, the entry after it.
    pub fn lookup_hit(&self, target: i64) -> TimeHit {
        let n = count_at_or_below(self.entries(), target, |e| e.timestamp);
        TimeHit {
            floor: self.floor(n),
            next: TimeHit::bounding(n, self.len()).then(|| self.entry(n)),
        }
    }

    fn floor(&self, n: usize) -> TimestampOffset {
        match n {
            0 => TimestampOffset {
                timestamp: -1,
                offset: self.base_offset(),
            },
            n => self.entry(n - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's TimeIndexTest.testLookUp: entries (i*10, i*10) for i in 1..=29... here a
    /// smaller version with the same shape.
    #[test]
    fn lookup_is_largest_lower_bound() {
        let mut idx = TimeIndex::new(0, 30);
        assert_eq!(idx.lookup(100).offset, 0);
        for i in 1..10 {
            assert!(idx.maybe_append(i * 10, i * 10, false));
        }
        assert_eq!(
            idx.lookup(9),
            TimestampOffset {
                timestamp: -1,
                offset: 0
            }
        );
        assert_eq!(idx.lookup(10).offset, 10);
        assert_eq!(idx.lookup(19).offset, 10);
        assert_eq!(idx.lookup(20).offset, 20);
        assert_eq!(idx.lookup(1_000).offset, 90);
    }

    #[test]
    fn equal_or_smaller_timestamps_are_skipped() {
        let mut idx = TimeIndex::new(0, 30);
        assert!(idx.maybe_append(10, 1, false));
        assert!(!idx.maybe_append(10, 2, false));
        assert!(!idx.maybe_append(5, 3, false));
        assert!(idx.maybe_append(11, 4, false));
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn last_slot_is_reserved_for_the_final_entry() {
        let mut idx = TimeIndex::new(0, 3);
        assert!(idx.maybe_append(1, 1, false));
        assert!(idx.maybe_append(2, 2, false));
        assert!(idx.is_full());
        assert!(!idx.maybe_append(3, 3, false));
        assert!(idx.maybe_append(3, 3, true));
        assert_eq!(idx.len(), 3);
    }

    #[test]
    fn encode_decode_and_sanity() {
        let mut idx = TimeIndex::new(7, 10);
        idx.maybe_append(100, 8, false);
        idx.maybe_append(200, 12, false);
        let bytes = idx.encode();
        assert_eq!(bytes.len(), 24);
        let back = TimeIndex::decode(7, &bytes, 10).unwrap();
        assert_eq!(back.last_entry().offset, 12);
        let mut swapped = bytes[12..].to_vec();
        swapped.extend_from_slice(&bytes[..12]);
        assert!(TimeIndex::decode(7, &swapped, 10).is_err());
        assert!(TimeIndex::decode(7, &bytes[..20], 10).is_err());
    }
}
