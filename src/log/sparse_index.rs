//! Kafka's AbstractIndex idea: an index file is a sorted array of fixed-size entries, each
//! pairing a search key with a value. One codec, one sanity check and one search serve
//! both indexes (`.index`: relative offset -> position; `.timeindex`: timestamp -> relative
//! offset), whether they are held in memory (`offset_index.rs`, `time_index.rs`), read page
//! by page (`paged_index.rs`) or dumped (`tools/dump_log.rs`).

/// Why an index (or one entry of it) cannot be used: the file must be rebuilt, or an
/// append broke the index's order (a bug upstream, reported rather than stored).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("size {len} is not a multiple of {entry_size}")]
    Size { len: usize, entry_size: usize },
    #[error("entry {entry} has a negative {field}")]
    Negative { entry: usize, field: &'static str },
    #[error("entry {entry} ({detail}) is out of order")]
    OutOfOrder { entry: usize, detail: String },
    #[error("{entries} entries exceed the capacity {capacity}")]
    OverCapacity { entries: usize, capacity: usize },
    #[error("the index is full")]
    Full,
    #[error("offset {offset} does not fit the relative range")]
    NotRelative { offset: i64 },
    #[error("batch base offset {base} is below the segment's next offset {next}")]
    Behind { base: i64, next: i64 },
    #[error("position {position} does not fit an index entry")]
    PositionTooLarge { position: u64 },
}

/// Refuses an index holding more entries than its capacity.
pub fn check_capacity<E>(entries: &[E], capacity: usize) -> Result<(), IndexError> {
    if entries.len() > capacity {
        return Err(IndexError::OverCapacity {
            entries: entries.len(),
            capacity,
        });
    }
    Ok(())
}

/// One entry of an index file as it is stored (big-endian fields).
pub trait IndexEntry: Copy + std::fmt::Debug {
    /// Bytes per entry.
    const SIZE: usize;
    /// Decodes the `i`-th stored entry, refusing what no single entry may hold.
    fn decode(i: usize, bytes: &[u8]) -> Result<Self, IndexError>;
    fn encode(&self, out: &mut Vec<u8>);
    /// Whether this entry may follow `prev` (Kafka's ordering rules for the index).
    fn follows(&self, prev: &Self) -> bool;
}

/// Decodes stored entries with Kafka's sanity checks: a whole number of entries, each one
/// valid and following the one before (`prev`: the entry before `bytes`, if any). `first`
/// numbers the entries in errors.
pub fn decode_entries<E: IndexEntry>(
    first: usize,
    bytes: &[u8],
    mut prev: Option<E>,
) -> Result<Vec<E>, IndexError> {
    if !bytes.len().is_multiple_of(E::SIZE) {
        return Err(IndexError::Size {
            len: bytes.len(),
            entry_size: E::SIZE,
        });
    }
    let mut out = Vec::with_capacity(bytes.len() / E::SIZE);
    for (i, chunk) in bytes.chunks_exact(E::SIZE).enumerate() {
        let entry = E::decode(first + i, chunk)?;
        if prev.is_some_and(|p| !entry.follows(&p)) {
            let detail = format!("{entry:?}");
            return Err(IndexError::OutOfOrder {
                entry: first + i,
                detail,
            });
        }
        prev = Some(entry);
        out.push(entry);
    }
    assert_eq!(out.len() * E::SIZE, bytes.len());
    Ok(out)
}

pub fn encode_entries<E: IndexEntry>(entries: &[E]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() * E::SIZE);
    for e in entries {
        e.encode(&mut out);
    }
    assert_eq!(out.len(), entries.len() * E::SIZE);
    out
}

/// The one search: how many entries have a key <= `target` (the floor entry is the last
/// of them; none when 0).
pub fn count_at_or_below<T, K: Ord>(entries: &[T], target: K, key: impl Fn(&T) -> K) -> usize {
    entries.partition_point(|e| key(e) <= target)
}

/// An index held in memory: its entries (relative to the segment's base offset) and its
/// capacity. Each index adds its own lookups (`offset_index.rs`, `time_index.rs`).
#[derive(Debug, Clone)]
pub struct SparseIndex<E> {
    base_offset: i64,
    entries: Vec<E>,
    max_entries: usize,
}

impl<E: IndexEntry> SparseIndex<E> {
    pub fn new(base_offset: i64, max_entries: usize) -> Self {
        SparseIndex {
            base_offset,
            entries: Vec::new(),
            max_entries,
        }
    }

    /// Decodes an index file with Kafka's sanity checks (a whole number of entries, each
    /// following the one before, within capacity). `Err` says why it must be rebuilt.
    pub fn decode(base_offset: i64, bytes: &[u8], max_entries: usize) -> Result<Self, IndexError> {
        let entries = decode_entries(0, bytes, None)?;
        check_capacity(&entries, max_entries)?;
        Ok(SparseIndex {
            base_offset,
            entries,
            max_entries,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        encode_entries(&self.entries)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub(crate) fn entries(&self) -> &[E] {
        &self.entries
    }

    pub(crate) fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// An offset relative to the base, if it fits an entry.
    pub(crate) fn relative(&self, offset: i64) -> Option<u32> {
        let rel = offset - self.base_offset;
        (0..=i32::MAX as i64).contains(&rel).then_some(rel as u32)
    }

    /// Adds an entry after the last one; one that does not follow it is refused.
    pub(crate) fn push(&mut self, entry: E) -> Result<(), IndexError> {
        if self.entries.last().is_some_and(|last| !entry.follows(last)) {
            let detail = format!("{entry:?}");
            let index = self.entries.len();
            return Err(IndexError::OutOfOrder {
                entry: index,
                detail,
            });
        }
        self.entries.push(entry);
        assert!(self.entries.len() <= self.max_entries.max(1));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::offset_index::OffsetEntry;
    use crate::log::time_index::TimeEntry;

    #[test]
    fn entries_round_trip_and_out_of_order_ones_are_refused() {
        let offsets = [
            OffsetEntry {
                rel: 0,
                position: 0,
            },
            OffsetEntry {
                rel: 5,
                position: 4096,
            },
        ];
        let bytes = encode_entries(&offsets);
        assert_eq!(
            decode_entries::<OffsetEntry>(0, &bytes, None).unwrap(),
            offsets
        );
        // The second entry again after the first page: not increasing.
        assert!(decode_entries(2, &bytes[8..], Some(offsets[1])).is_err());
        assert!(decode_entries::<OffsetEntry>(0, &bytes[..7], None).is_err());
        let times = [
            TimeEntry {
                timestamp: 10,
                rel: 3,
            },
            TimeEntry {
                timestamp: 11,
                rel: 3,
            },
        ];
        let bytes = encode_entries(&times);
        assert_eq!(decode_entries::<TimeEntry>(0, &bytes, None).unwrap(), times);
        let reversed = encode_entries(&[times[1], times[0]]);
        assert!(decode_entries::<TimeEntry>(0, &reversed, None).is_err());
    }

    #[test]
    fn the_search_counts_keys_at_or_below_the_target() {
        let keys = [2u32, 5, 9];
        assert_eq!(count_at_or_below(&keys, 1, |k| *k), 0);
        assert_eq!(count_at_or_below(&keys, 5, |k| *k), 2);
        assert_eq!(count_at_or_below(&keys, 100, |k| *k), 3);
    }
}
