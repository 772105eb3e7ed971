//! A sealed segment's tail as a segment of its own: what a new leader copies when the
//! remote tier, written by an earlier leader whose segments rolled at other offsets, ends
//! inside one of its local segments. The tail starts at a batch boundary; its `.log` is the
//! local file from that batch's position, and both indexes are the local ones rebased:
//! entries below the cut dropped, offsets relative to the new base, positions less the
//! cut's (the time index keeps its maxima, which only ever overstate, so a lookup stays
//! right and at worst scans a little more).

use super::offset_index::OffsetIndex;
use super::time_index::TimeIndex;

/// The indexes of a segment's tail, encoded as Kafka's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebasedIndexes {
    pub offset_index: Vec<u8>,
    pub time_index: Vec<u8>,
}

/// Rebases a sealed segment's indexes to its tail from `base` (an offset whose batch
/// starts at byte `position` of the `.log`).
pub(super) fn rebase(
    offsets: &OffsetIndex,
    times: &TimeIndex,
    base: i64,
    position: u64,
) -> RebasedIndexes {
    let mut tail_offsets = OffsetIndex::new(base, offsets.max_entries());
    for e in (0..offsets.len()).map(|i| offsets.entry(i)) {
        if e.offset >= base {
            assert!(
                u64::from(e.position) >= position,
                "an entry past the cut lies past its position"
            );
            let moved = (u64::from(e.position) - position) as u32;
            // The source index is sorted and no larger, so every entry fits in order.
            let appended = tail_offsets.append(e.offset, moved);
            assert!(appended.is_ok(), "a rebased entry fits: {appended:?}");
        }
    }
    let mut tail_times = TimeIndex::new(base, times.max_entries());
    for e in (0..times.len()).map(|i| times.entry(i)) {
        if e.offset >= base {
            tail_times.maybe_append(e.timestamp, e.offset, true);
        }
    }
    assert!(tail_offsets.len() <= offsets.len());
    assert!(tail_times.len() <= times.len());
    RebasedIndexes {
        offset_index: tail_offsets.encode(),
        time_index: tail_times.encode(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_below_the_cut_go_and_the_rest_move() {
        let mut offsets = OffsetIndex::new(100, 10);
        for (o, p) in [(104, 4096), (110, 8192), (120, 12288)] {
            offsets.append(o, p).unwrap();
        }
        let mut times = TimeIndex::new(100, 10);
        for (t, o) in [(5, 104), (7, 110), (9, 120)] {
            assert!(times.maybe_append(t, o, false));
        }
        let tail = rebase(&offsets, &times, 110, 8000);
        let back = OffsetIndex::decode(110, &tail.offset_index, 10).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back.entry(0).offset, back.entry(0).position), (110, 192));
        assert_eq!((back.entry(1).offset, back.entry(1).position), (120, 4288));
        let back = TimeIndex::decode(110, &tail.time_index, 10).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!((back.entry(0).timestamp, back.entry(0).offset), (7, 110));
    }
}
