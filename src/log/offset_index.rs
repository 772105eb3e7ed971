//! Offset index (`.index`): sparse map from offset to byte position in the segment's `.log`.
//!
//! Format: 8-byte entries, big-endian `relativeOffset i32 | position i32`, where
//! relativeOffset = offset - segment base offset. Entries strictly increase in both fields.
//! The whole index lives in memory; the file is written when the segment is sealed or closed.

/// One decoded entry, with the absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    pub offset: i64,
    pub position: u32,
}

pub const ENTRY_SIZE: usize = 8;

/// One stored entry as the file holds it: (relative offset, position). The one codec of
/// `.index` entries: the in-memory index, the paged reader and dump-log use it.
pub fn decode_entry(e: &[u8]) -> (i32, i32) {
    let field = |r: std::ops::Range<usize>| i32::from_be_bytes(e[r].try_into().expect("4 bytes"));
    (field(0..4), field(4..8))
}

fn encode_entry(rel: u32, position: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&(rel as i32).to_be_bytes());
    out.extend_from_slice(&(position as i32).to_be_bytes());
}

/// Kafka's sanity rules for entry `i` after `prev`: no negative field, both fields strictly
/// increasing. Returns the entry as stored in memory.
pub fn check_entry(
    i: usize,
    (rel, pos): (i32, i32),
    prev: Option<(u32, u32)>,
) -> Result<(u32, u32), String> {
    if rel < 0 || pos < 0 {
        return Err(format!("entry {i} has a negative offset or position"));
    }
    if let Some((prev_rel, prev_pos)) = prev {
        if rel as u32 <= prev_rel || pos as u32 <= prev_pos {
            return Err(format!("entry {i} does not increase"));
        }
    }
    Ok((rel as u32, pos as u32))
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

#[derive(Debug, Clone)]
pub struct OffsetIndex {
    base_offset: i64,
    /// (relative offset, position)
    entries: Vec<(u32, u32)>,
    max_entries: usize,
}

impl OffsetIndex {
    pub fn new(base_offset: i64, max_entries: usize) -> Self {
        OffsetIndex {
            base_offset,
            entries: Vec::new(),
            max_entries,
        }
    }

    /// Decodes an index file and runs Kafka's sanity checks (size a multiple of 8, offsets
    /// and positions increasing, last offset >= base). `Err` says why it must be rebuilt.
    pub fn decode(base_offset: i64, bytes: &[u8], max_entries: usize) -> Result<Self, String> {
        if !bytes.len().is_multiple_of(ENTRY_SIZE) {
            return Err(format!(
                "size {} is not a multiple of {ENTRY_SIZE}",
                bytes.len()
            ));
        }
        let mut entries: Vec<(u32, u32)> = Vec::with_capacity(bytes.len() / ENTRY_SIZE);
        for (i, e) in bytes.chunks_exact(ENTRY_SIZE).enumerate() {
            let entry = check_entry(i, decode_entry(e), entries.last().copied())?;
            entries.push(entry);
        }
        if entries.len() > max_entries {
            return Err(format!(
                "{} entries exceed the capacity {max_entries}",
                entries.len()
            ));
        }
        Ok(OffsetIndex {
            base_offset,
            entries,
            max_entries,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * ENTRY_SIZE);
        for &(rel, pos) in &self.entries {
            encode_entry(rel, pos, &mut out);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    pub fn entry(&self, i: usize) -> OffsetPosition {
        let (rel, position) = self.entries[i];
        OffsetPosition {
            offset: self.base_offset + rel as i64,
            position,
        }
    }

    pub fn last(&self) -> Option<OffsetPosition> {
        (!self.entries.is_empty()).then(|| self.entry(self.entries.len() - 1))
    }

    /// Adds an entry. Callers uphold Kafka's invariants (not full, offset and position larger
    /// than the last entry's); a violation is a bug, reported rather than stored.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<(), String> {
        if self.is_full() {
            return Err("offset index is full".into());
        }
        let rel = offset - self.base_offset;
        if !(0..=i32::MAX as i64).contains(&rel) {
            return Err(format!("offset {offset} does not fit the relative range"));
        }
        if let Some(&(last_rel, last_pos)) = self.entries.last() {
            if rel as u32 <= last_rel || position <= last_pos {
                return Err(format!("entry ({offset}, {position}) does not increase"));
            }
        }
        self.entries.push((rel as u32, position));
        Ok(())
    }

    /// The floor entry for `target` and the two entries after it.
    pub fn lookup_hit(&self, target: i64) -> IndexHit {
        let floor = self.lookup(target);
        let rel = (target.saturating_sub(self.base_offset)).clamp(-1, u32::MAX as i64);
        let n = if rel < 0 {
            0
        } else {
            self.entries.partition_point(|&(r, _)| r <= rel as u32)
        };
        let at = |i: usize| (i < self.entries.len()).then(|| self.entry(i));
        IndexHit {
            floor,
            next: at(n),
            after_next: at(n + 1),
        }
    }

    /// Largest entry with offset <= target; (base offset, 0) when there is none.
    pub fn lookup(&self, target: i64) -> OffsetPosition {
        let rel = target.saturating_sub(self.base_offset);
        if rel < 0 {
            return OffsetPosition {
                offset: self.base_offset,
                position: 0,
            };
        }
        let rel = rel.min(u32::MAX as i64) as u32;
        let n = self.entries.partition_point(|&(r, _)| r <= rel);
        if n == 0 {
            OffsetPosition {
                offset: self.base_offset,
                position: 0,
            }
        } else {
            self.entry(n - 1)
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
