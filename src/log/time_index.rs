//! Time index (`.timeindex`): sparse map from timestamp to offset.
//!
//! Format: 12-byte entries, big-endian `timestamp i64 | relativeOffset i32`. An entry (T, O)
//! means "the largest timestamp seen up to offset O is T". Timestamps strictly increase: an
//! entry is added only when its timestamp is greater than the last one's. The index counts
//! as full one slot early, so the final max-timestamp entry written on roll/close always fits.

pub const ENTRY_SIZE: usize = 12;

/// One stored entry as the file holds it: (timestamp, relative offset). The one codec of
/// `.timeindex` entries: the in-memory index, the paged reader and dump-log use it.
pub fn decode_entry(e: &[u8]) -> (i64, i32) {
    (
        i64::from_be_bytes(e[..8].try_into().expect("8 bytes")),
        i32::from_be_bytes(e[8..12].try_into().expect("4 bytes")),
    )
}

fn encode_entry(timestamp: i64, rel: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(&(rel as i32).to_be_bytes());
}

/// Kafka's sanity rules for entry `i` after `prev`: a non-negative relative offset,
/// timestamps strictly increasing, offsets not decreasing. Returns the entry as stored.
pub fn check_entry(
    i: usize,
    (ts, rel): (i64, i32),
    prev: Option<(i64, u32)>,
) -> Result<(i64, u32), String> {
    if rel < 0 {
        return Err(format!("entry {i} has a negative relative offset"));
    }
    if let Some((prev_ts, prev_rel)) = prev {
        if ts <= prev_ts || (rel as u32) < prev_rel {
            return Err(format!("entry {i} ({ts}, +{rel}) is out of order"));
        }
    }
    Ok((ts, rel as u32))
}

/// One decoded entry with the absolute offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: i64,
    pub offset: i64,
}

#[derive(Debug, Clone)]
pub struct TimeIndex {
    base_offset: i64,
    /// (timestamp, relative offset)
    entries: Vec<(i64, u32)>,
    max_entries: usize,
}

impl TimeIndex {
    pub fn new(base_offset: i64, max_entries: usize) -> Self {
        TimeIndex {
            base_offset,
            entries: Vec::new(),
            max_entries,
        }
    }

    /// Decodes a time index file with Kafka's sanity checks (size a multiple of 12, last
    /// timestamp >= first, offsets not decreasing and >= base).
    pub fn decode(base_offset: i64, bytes: &[u8], max_entries: usize) -> Result<Self, String> {
        if !bytes.len().is_multiple_of(ENTRY_SIZE) {
            return Err(format!(
                "size {} is not a multiple of {ENTRY_SIZE}",
                bytes.len()
            ));
        }
        let mut entries: Vec<(i64, u32)> = Vec::with_capacity(bytes.len() / ENTRY_SIZE);
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
        Ok(TimeIndex {
            base_offset,
            entries,
            max_entries,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * ENTRY_SIZE);
        for &(ts, rel) in &self.entries {
            encode_entry(ts, rel, &mut out);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Full one slot early: the last slot is reserved for the entry written on roll/close.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries.saturating_sub(1)
    }

    pub fn entry(&self, i: usize) -> TimestampOffset {
        let (timestamp, rel) = self.entries[i];
        TimestampOffset {
            timestamp,
            offset: self.base_offset + rel as i64,
        }
    }

    /// The last entry, or Kafka's empty-index sentinel (-1, base offset).
    pub fn last_entry(&self) -> TimestampOffset {
        match self.entries.last() {
            Some(_) => self.entry(self.entries.len() - 1),
            None => TimestampOffset {
                timestamp: -1,
                offset: self.base_offset,
            },
        }
    }

    /// Adds (timestamp, offset) if the timestamp is greater than the last entry's. With
    /// `final_entry` the reserved last slot may be used (roll/close).
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64, final_entry: bool) -> bool {
        let full = if final_entry {
            self.entries.len() >= self.max_entries
        } else {
            self.is_full()
        };
        if full || timestamp <= self.last_entry().timestamp {
            return false;
        }
        let rel = offset - self.base_offset;
        if !(0..=i32::MAX as i64).contains(&rel) {
            return false;
        }
        if let Some(&(_, last_rel)) = self.entries.last() {
            if (rel as u32) < last_rel {
                return false;
            }
        }
        self.entries.push((timestamp, rel as u32));
        true
    }

    /// Largest entry with timestamp <= target; (-1, base offset) when there is none.
    pub fn lookup(&self, target: i64) -> TimestampOffset {
        let n = self.entries.partition_point(|&(ts, _)| ts <= target);
        if n == 0 {
            TimestampOffset {
                timestamp: -1,
                offset: self.base_offset,
            }
        } else {
            self.entry(n - 1)
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
