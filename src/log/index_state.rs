//! The per-segment derived state that indexing maintains: both sparse indexes, the segment's
//! max timestamp, the segment.ms clock and the next offset. Built batch by batch, by appends
//! and by recovery/rebuild scans alike, with Kafka's `LogSegment.append` rule:
//! remember where the batch starts; if its maxTimestamp beats the segment's, that becomes the
//! segment max (with the batch's last offset); then, if more than `index.interval.bytes` were
//! appended since the last entry (strictly more), add an offset entry (batch last offset,
//! batch start) and a time entry (segment max so far, its offset); finally count the batch.

use super::offset_index::OffsetIndex;
use super::sparse_index::IndexError;
use super::time_index::TimeIndex;
use crate::config::LogConfig;
use crate::format::BatchHeader;

#[derive(Debug, Clone)]
pub struct IndexState {
    pub base_offset: i64,
    pub offset_index: OffsetIndex,
    pub time_index: TimeIndex,
    /// Largest batch maxTimestamp (-1: none) and that batch's last offset.
    pub max_timestamp: i64,
    pub offset_of_max_timestamp: i64,
    /// maxTimestamp of the first batch: the clock segment.ms is measured against.
    pub rolling_base_timestamp: Option<i64>,
    pub bytes_since_last_index_entry: u64,
    /// One past the last offset (the base offset when empty).
    pub next_offset: i64,
}

impl IndexState {
    pub fn new(base_offset: i64, config: &LogConfig) -> Self {
        IndexState {
            base_offset,
            offset_index: OffsetIndex::new(base_offset, config.max_offset_index_entries()),
            time_index: TimeIndex::new(base_offset, config.max_time_index_entries()),
            max_timestamp: -1,
            offset_of_max_timestamp: -1,
            rolling_base_timestamp: None,
            bytes_since_last_index_entry: 0,
            next_offset: base_offset,
        }
    }

    /// Whether a batch may follow the ones counted so far (offsets only grow): checked
    /// before its bytes are written, and again when it is counted.
    pub fn admits(&self, h: &BatchHeader) -> Result<(), IndexError> {
        if h.base_offset < self.next_offset {
            return Err(IndexError::Behind {
                base: h.base_offset,
                next: self.next_offset,
            });
        }
        Ok(())
    }

    /// Accounts for one batch stored at `position`. An entry that would break an index's
    /// order is an error (a bug upstream), never silently dropped; a full index just stops
    /// getting entries, as Kafka's does.
    pub fn add_batch(
        &mut self,
        h: &BatchHeader,
        position: u64,
        config: &LogConfig,
    ) -> Result<(), IndexError> {
        self.admits(h)?;
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.offset_of_max_timestamp = h.last_offset();
        }
        if self.bytes_since_last_index_entry > config.index_interval_bytes {
            if !self.offset_index.is_full() {
                let position = u32::try_from(position)
                    .map_err(|_| IndexError::PositionTooLarge { position })?;
                self.offset_index.append(h.last_offset(), position)?;
            }
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp, false);
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += h.size() as u64;
        if position == 0 && h.max_timestamp >= 0 {
            self.rolling_base_timestamp = Some(h.max_timestamp);
        }
        self.next_offset = h.last_offset() + 1;
        // The newest timestamp seen names an offset this segment holds.
        assert!(
            self.offset_of_max_timestamp < self.next_offset,
            "max timestamp at {} beyond {}",
            self.offset_of_max_timestamp,
            self.next_offset
        );
        assert!(self
            .offset_index
            .last()
            .is_none_or(|e| e.offset < self.next_offset));
        Ok(())
    }

    /// The entry written when the segment stops being active (roll or close).
    pub fn add_final_time_entry(&mut self) {
        self.time_index
            .maybe_append(self.max_timestamp, self.offset_of_max_timestamp, true);
    }
}
