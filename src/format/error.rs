//! Typed errors for malformed record batches: each names what is wrong and where.

/// Why a record batch was rejected. Offsets inside the batch are byte positions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    #[error("batch is {len} bytes, shorter than the 61-byte RecordBatch v2 header")]
    TooShort { len: usize },
    #[error("batchLength {declared} declares a batch of {total} bytes but {available} bytes are available")]
    SizeMismatch {
        declared: i32,
        total: u64,
        available: usize,
    },
    #[error("unsupported magic {0}: only RecordBatch v2 (magic 2) is accepted")]
    BadMagic(i8),
    #[error("CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("recordsCount is {declared} but the batch holds {found} records")]
    RecordCountMismatch { declared: i32, found: usize },
    #[error("baseOffset {base_offset} with lastOffsetDelta {last_offset_delta} is not a valid offset range")]
    BadOffsetRange {
        base_offset: i64,
        last_offset_delta: i32,
    },
    #[error("negative recordsCount {0}")]
    NegativeRecordCount(i32),
    #[error("record {index} at byte {pos}: {what}")]
    InvalidRecord {
        index: usize,
        pos: usize,
        what: &'static str,
    },
    #[error("lastOffsetDelta is {declared} but the records' offset deltas end at {found}")]
    LastOffsetDeltaMismatch { declared: i32, found: i64 },
    #[error(
        "record {index} has offsetDelta {found}, expected {expected} (deltas must be 0,1,2,...)"
    )]
    NonContiguousOffsetDelta {
        index: usize,
        expected: i64,
        found: i64,
    },
    #[error(
        "compression codec {0} (attributes bits 0-2) is not one of none, gzip, snappy, lz4, zstd"
    )]
    UnsupportedCompression(i16),
    #[error("{codec} records do not decompress: {reason}")]
    Decompression { codec: &'static str, reason: String },
    #[error("varint at byte {pos} is malformed or too long")]
    BadVarint { pos: usize },
    #[error("batch has no records")]
    NoRecords,
    #[error("batch claims LogAppendTime: producers send CreateTime, the log stamps LogAppendTime")]
    ClientLogAppendTime,
    #[error("empty input: at least one record batch is required")]
    Empty,
    #[error("{0} batches cannot be produced (attributes bits 4-6 are set only by the log or by transaction coordinators)")]
    ReservedAttributes(&'static str),
    #[error("a transactional append is the verified producer's: producer {found_id} epoch {found_epoch} follows producer {verified_id} epoch {verified_epoch}")]
    ForeignProducer {
        verified_id: i64,
        verified_epoch: i16,
        found_id: i64,
        found_epoch: i16,
    },
}
