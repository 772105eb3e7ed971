//! The engine's error type. It keeps three families apart, because callers handle them
//! differently: I/O failures (which operation, which path), corruption of stored data (which
//! file, which position, what), and caller mistakes (bad batch, offset out of range, ...).

use std::path::PathBuf;

use crate::format::BatchError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("I/O error during {op} on {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("corrupt data in {} at position {pos}: {what}", file.display())]
    Corruption {
        file: PathBuf,
        pos: u64,
        what: String,
    },
    #[error(
        "producer {producer_id} epoch {epoch} is fenced: the partition has seen epoch {current}"
    )]
    InvalidProducerEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
    #[error("producer {producer_id}: {why}")]
    InvalidTxnState { producer_id: i64, why: &'static str },
    #[error("producer {producer_id} epoch {epoch}: sequence {found} is out of order, expected {expected}")]
    OutOfOrderSequence {
        producer_id: i64,
        epoch: i16,
        expected: i32,
        found: i32,
    },
    #[error("invalid record batch at byte {at} of the request: {source}")]
    InvalidBatch {
        at: usize,
        #[source]
        source: BatchError,
    },
    #[error("offset {offset} is out of range: the log holds [{log_start}, {log_end})")]
    OffsetOutOfRange {
        offset: i64,
        log_start: i64,
        log_end: i64,
    },
    #[error("record batch of {size} bytes is larger than {key} ({limit})")]
    RecordBatchTooLarge {
        size: usize,
        limit: u64,
        /// The topic config that bounds it (segment.bytes, max.message.bytes).
        key: &'static str,
    },
    #[error("invalid config {key}: {reason}")]
    InvalidConfig { key: String, reason: String },
    #[error(
        "partition {} refuses writes after an earlier I/O failure ({cause}); reopen it to recover",
        path.display()
    )]
    Poisoned { path: PathBuf, cause: String },
    #[error("{0} is not a timestamp target: use >= 0, -1 (latest), -2 (earliest) or -3 (max)")]
    InvalidTimestamp(i64),
    #[error("Compacted topic cannot accept message without key (record {record} of the batch at byte {at} of the request)")]
    CompactedTopicNullKey { at: usize, record: usize },
    #[error("Timestamp {timestamp} of message is out of range. The timestamp should be within [{earliest}, {latest}] (message.timestamp.before.max.ms / message.timestamp.after.max.ms)")]
    TimestampOutOfRange {
        timestamp: i64,
        earliest: i64,
        latest: i64,
    },
    #[error("batch base offset {base_offset} is below the log end offset {log_end}")]
    NonMonotonicOffset { base_offset: i64, log_end: i64 },
}

/// Whether an I/O failure is a shortage that goes away when the resource is freed (space,
/// quota, file descriptors, memory), as opposed to a failure of the device: the partition is
/// then reloaded from disk before its next operation instead of being poisoned.
pub fn is_resource_shortage(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EMFILE | libc::ENFILE | libc::ENOMEM)
    ) || matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::OutOfMemory
    )
}

impl Error {
    /// [`is_resource_shortage`] of the underlying I/O error.
    pub fn is_resource_shortage(&self) -> bool {
        matches!(self, Error::Io { source, .. } if is_resource_shortage(source))
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corruption(file: impl Into<PathBuf>, pos: u64, what: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            pos,
            what: what.into(),
        }
    }
}
