//! Per-partition log configuration (Kafka's topic-level names), validated in one place.

use crate::error::{Error, Result};
use crate::format::TimestampType;

/// Kafka's smallest allowed segment.bytes (one empty batch header fits).
pub const MIN_SEGMENT_BYTES: u64 = 14;

/// Topic-level settings that shape a partition's log. Defaults are Kafka's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// segment.bytes: roll when the next batch would not fit.
    pub segment_bytes: u64,
    /// segment.ms: roll when the incoming batch is this much newer than the segment's first.
    pub segment_ms: i64,
    /// index.interval.bytes: bytes between sparse index entries (strictly more than this).
    pub index_interval_bytes: u64,
    /// segment.index.bytes: maximum size of each index file (sets the entry capacity).
    pub segment_index_bytes: u64,
    /// message.timestamp.type.
    pub timestamp_type: TimestampType,
    /// Wall-clock time a segment must have been active before segment.ms may roll it. Record
    /// timestamps are client-controlled: without this, timestamps leaping past segment.ms
    /// would roll (and fdatasync, and add files) on every produce. 0 (the engine default)
    /// is Kafka's rule exactly; the server sets `log.roll.min.interval.ms`.
    pub min_time_roll_interval_ms: i64,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 << 20,
            timestamp_type: TimestampType::CreateTime,
            min_time_roll_interval_ms: 0,
        }
    }
}

fn invalid(key: &str, reason: impl Into<String>) -> Error {
    Error::InvalidConfig {
        key: key.to_string(),
        reason: reason.into(),
    }
}

impl LogConfig {
    /// Checks every bound. Positions in the index are 32-bit, so a segment cannot exceed
    /// i32::MAX bytes; an index must hold at least two entries (time index reserves one).
    pub fn validate(&self) -> Result<()> {
        if self.segment_bytes < MIN_SEGMENT_BYTES || self.segment_bytes > i32::MAX as u64 {
            return Err(invalid(
                "segment.bytes",
                format!(
                    "{} is outside [{MIN_SEGMENT_BYTES}, {}]",
                    self.segment_bytes,
                    i32::MAX
                ),
            ));
        }
        if self.segment_ms < 1 {
            return Err(invalid("segment.ms", "must be at least 1"));
        }
        if self.index_interval_bytes > i32::MAX as u64 {
            return Err(invalid("index.interval.bytes", "must fit in 32 bits"));
        }
        if self.segment_index_bytes < 24 || self.segment_index_bytes > i32::MAX as u64 {
            return Err(invalid(
                "segment.index.bytes",
                format!("{} is outside [24, {}]", self.segment_index_bytes, i32::MAX),
            ));
        }
        Ok(())
    }

    /// Entry capacity of the offset index (8-byte entries).
    pub fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes / 8) as usize
    }

    /// Entry capacity of the time index (12-byte entries).
    pub fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes / 12) as usize
    }
}
