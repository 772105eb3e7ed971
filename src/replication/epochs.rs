//! A replica's leader-epoch history (Kafka's `leader-epoch-checkpoint`): for each leader
//! epoch whose records the log holds, the offset of its first record. It answers "where
//! does my log stop agreeing with yours" (OffsetForLeaderEpoch, Fetch's diverging epoch)
//! without reading the log.

use super::{Epoch, Offset, UNDEFINED};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: Epoch,
    pub start_offset: Offset,
}

/// Entries in increasing epoch and start offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochCache {
    entries: Vec<EpochEntry>,
}

impl EpochCache {
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn latest(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// Records that `epoch` starts at `start` (a leader's first offset in its epoch, or the
    /// first record of that epoch a follower copies). Entries at or past it described
    /// records since truncated and go, as Kafka's cache drops them.
    pub fn assign(&mut self, epoch: Epoch, start: Offset) {
        if self.latest().is_some_and(|l| l.epoch == epoch) {
            return;
        }
        self.entries
            .retain(|e| e.epoch < epoch && e.start_offset < start);
        self.entries.push(EpochEntry {
            epoch,
            start_offset: start,
        });
        self.assert_ordered();
    }

    /// The log was truncated to end at `end`: epochs that started at or after it go.
    pub fn truncate_from_end(&mut self, end: Offset) {
        self.entries.retain(|e| e.start_offset < end);
    }

    /// OffsetForLeaderEpoch (KIP-279): the largest epoch at most `requested`, and where it
    /// ends in this log (the next epoch's start, or `log_end` for the latest); (-1, -1)
    /// when this log holds no such epoch.
    pub fn end_offset_for(&self, requested: Epoch, log_end: Offset) -> (Epoch, Offset) {
        let undefined = (UNDEFINED as Epoch, UNDEFINED);
        let Some(i) = self.entries.iter().rposition(|e| e.epoch <= requested) else {
            return undefined;
        };
        let end = self
            .entries
            .get(i + 1)
            .map_or(log_end, |next| next.start_offset);
        assert!(
            end <= log_end,
            "epoch {} ends at {end}, past the log end {log_end}",
            self.entries[i].epoch
        );
        (self.entries[i].epoch, end)
    }

    fn assert_ordered(&self) {
        let ordered = self
            .entries
            .windows(2)
            .all(|w| w[0].epoch < w[1].epoch && w[0].start_offset <= w[1].start_offset);
        assert!(ordered, "epoch entries out of order: {:?}", self.entries);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(Epoch, Offset)]) -> EpochCache {
        let mut c = EpochCache::default();
        for &(e, s) in entries {
            c.assign(e, s);
        }
        c
    }

    #[test]
    fn an_epoch_ends_where_the_next_begins_and_the_latest_at_the_log_end() {
        let c = cache(&[(1, 0), (3, 10), (4, 25)]);
        assert_eq!(c.end_offset_for(1, 30), (1, 10));
        assert_eq!(
            c.end_offset_for(2, 30),
            (1, 10),
            "an unknown epoch answers the one below"
        );
        assert_eq!(c.end_offset_for(3, 30), (3, 25));
        assert_eq!(c.end_offset_for(4, 30), (4, 30));
        assert_eq!(c.end_offset_for(9, 30), (4, 30));
        assert_eq!(c.end_offset_for(0, 30), (-1, -1));
    }

    #[test]
    fn assigning_drops_what_a_truncation_left_behind_and_truncation_drops_later_epochs() {
        let mut c = cache(&[(1, 0), (2, 10), (3, 20)]);
        c.truncate_from_end(15);
        assert_eq!(
            c.latest(),
            Some(EpochEntry {
                epoch: 2,
                start_offset: 10
            })
        );
        c.assign(5, 12);
        assert_eq!(c.entries().len(), 3);
        c.assign(6, 12);
        let epochs: Vec<Epoch> = c.entries().iter().map(|e| e.epoch).collect();
        assert_eq!(epochs, [1, 2, 6], "epoch 5 held no record");
        c.assign(6, 40);
        assert_eq!(
            c.latest().unwrap().start_offset,
            12,
            "an epoch's start never moves"
        );
    }
}
