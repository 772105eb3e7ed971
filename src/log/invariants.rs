//! The partition's stated invariants, asserted after every change of its segment list
//! (open, roll, retention, cleaning, recovery after ENOSPC) and, for the offsets and the
//! active segment, after every append (O(1): an append changes only the tail):
//! - at least one segment; base offsets strictly increase, and each segment ends at or
//!   before the next one starts (gaps are allowed: compaction, assigned offsets);
//! - only the last segment (the active one) is writable;
//! - first base <= log start <= visible end <= log end, and the recovery point <= log end.
//!
//! A violation is a bug that would serve or lose records silently: it panics (the server
//! turns a panic into exit status 70 and recovers on restart) rather than go on.

use super::partition::PartitionLog;

impl PartitionLog {
    /// Every invariant: after a change of the segment list.
    pub(super) fn assert_invariants(&self) {
        self.assert_segments(self.segments.windows(2));
        self.assert_offsets();
    }

    /// After an append, which changes only the active segment and the offsets: the last
    /// pair of segments and the offsets.
    pub(super) fn assert_tail_invariants(&self) {
        let from = self.segments.len().saturating_sub(2);
        self.assert_segments(self.segments[from..].windows(2));
        self.assert_offsets();
    }

    fn assert_segments<'a>(&self, pairs: impl Iterator<Item = &'a [super::Segment]>) {
        let dir = self.dir.display();
        assert!(!self.segments.is_empty(), "{dir}: no segments");
        for pair in pairs {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                a.base_offset() < b.base_offset() && a.next_offset() <= b.base_offset(),
                "{dir}: segment {} (ends at {}) overlaps or follows segment {}",
                a.base_offset(),
                a.next_offset(),
                b.base_offset()
            );
            assert!(
                a.is_sealed(),
                "{dir}: segment {} is writable but not the active one",
                a.base_offset()
            );
        }
    }

    fn assert_offsets(&self) {
        let dir = self.dir.display();
        let log_end = self.log_end_offset();
        let first = self.segments[0].base_offset();
        assert!(
            first <= self.log_start_offset
                && self.log_start_offset <= self.visible_end
                && self.visible_end <= log_end,
            "{dir}: offsets out of order: first base {first}, log start {}, visible end {}, log end {log_end}",
            self.log_start_offset,
            self.visible_end
        );
        assert!(
            self.recovery_point <= log_end,
            "{dir}: recovery point {} past the log end {log_end}",
            self.recovery_point
        );
    }
}
