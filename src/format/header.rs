//! The RecordBatch v2 header (61 bytes, big-endian; FORMAT.md has the full table): its
//! field offsets and attribute bits, parsing and framing checks, and the CRC-32C, which
//! covers bytes 21..end (attributes to the end), so baseOffset and partitionLeaderEpoch can
//! be rewritten without recomputing it.

use super::compression::Codec;
use super::BatchError;

pub const HEADER_SIZE: usize = 61;
pub const MAGIC_V2: i8 = 2;
/// Bytes before `batchLength` ends: a batch occupies `LOG_OVERHEAD + batchLength` bytes.
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal `batchLength` (a header with zero records).
pub const MIN_BATCH_LENGTH: i32 = (HEADER_SIZE - LOG_OVERHEAD) as i32;

pub(crate) const BASE_OFFSET_AT: usize = 0;
pub(crate) const LENGTH_AT: usize = 8;
pub(crate) const LEADER_EPOCH_AT: usize = 12;
pub(crate) const MAGIC_AT: usize = 16;
pub(crate) const CRC_AT: usize = 17;
pub(crate) const ATTRIBUTES_AT: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_AT: usize = 23;
pub(crate) const BASE_TIMESTAMP_AT: usize = 27;
pub(crate) const MAX_TIMESTAMP_AT: usize = 35;
pub(crate) const PRODUCER_ID_AT: usize = 43;
pub(crate) const PRODUCER_EPOCH_AT: usize = 51;
pub(crate) const BASE_SEQUENCE_AT: usize = 53;
pub(crate) const RECORDS_COUNT_AT: usize = 57;

pub(crate) const COMPRESSION_MASK: i16 = 0x07;
pub(crate) const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(crate) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(crate) const CONTROL_BIT: i16 = 0x20;
pub(crate) const DELETE_HORIZON_BIT: i16 = 0x40;

/// Which clock a batch's timestamps come from (attributes bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    /// The name Kafka's tools print (`CreateTime`, `LogAppendTime`).
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

pub(crate) fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
pub(crate) fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(std::array::from_fn(|i| b[at + i]))
}
pub(crate) fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(std::array::from_fn(|i| b[at + i]))
}

/// The fixed-size header of a v2 batch, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Decodes the header at the start of `buf` and checks the magic byte and that
    /// `batchLength` is at least a header's worth. Does not check the CRC or the records.
    pub fn parse(buf: &[u8]) -> Result<Self, BatchError> {
        if buf.len() < HEADER_SIZE {
            return Err(BatchError::TooShort { len: buf.len() });
        }
        let h = BatchHeader {
            base_offset: be_i64(buf, BASE_OFFSET_AT),
            batch_length: be_i32(buf, LENGTH_AT),
            partition_leader_epoch: be_i32(buf, LEADER_EPOCH_AT),
            magic: buf[MAGIC_AT] as i8,
            crc: be_i32(buf, CRC_AT) as u32,
            attributes: be_i16(buf, ATTRIBUTES_AT),
            last_offset_delta: be_i32(buf, LAST_OFFSET_DELTA_AT),
            base_timestamp: be_i64(buf, BASE_TIMESTAMP_AT),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP_AT),
            producer_id: be_i64(buf, PRODUCER_ID_AT),
            producer_epoch: be_i16(buf, PRODUCER_EPOCH_AT),
            base_sequence: be_i32(buf, BASE_SEQUENCE_AT),
            records_count: be_i32(buf, RECORDS_COUNT_AT),
        };
        if h.magic != MAGIC_V2 {
            return Err(BatchError::BadMagic(h.magic));
        }
        // Offsets of a batch must exist: last_offset() never overflows.
        if h.last_offset_delta < 0
            || h.base_offset < 0
            || h.base_offset
                .checked_add(h.last_offset_delta as i64)
                .is_none()
        {
            return Err(BatchError::BadOffsetRange {
                base_offset: h.base_offset,
                last_offset_delta: h.last_offset_delta,
            });
        }
        if h.batch_length < MIN_BATCH_LENGTH {
            return Err(BatchError::SizeMismatch {
                declared: h.batch_length,
                total: (h.batch_length as i64 + LOG_OVERHEAD as i64).max(0) as u64,
                available: buf.len(),
            });
        }
        // What callers walk by: a parsed batch is at least a header long.
        assert!(h.size() >= HEADER_SIZE, "a {}-byte batch parsed", h.size());
        Ok(h)
    }

    /// Parses a header held apart from its records; `size` is the whole batch's size.
    pub fn parse_head(head: &[u8; HEADER_SIZE], size: usize) -> Result<Self, BatchError> {
        let h = Self::parse(head)?;
        if h.size() != size {
            return Err(BatchError::SizeMismatch {
                declared: h.batch_length,
                total: h.size() as u64,
                available: size,
            });
        }
        Ok(h)
    }

    /// Total bytes the batch occupies in the log.
    pub fn size(&self) -> usize {
        assert!(self.batch_length >= 0, "a parsed batch has a length");
        LOG_OVERHEAD + self.batch_length as usize
    }

    pub fn last_offset(&self) -> i64 {
        assert!(
            self.last_offset_delta >= 0,
            "a parsed batch's offsets ascend"
        );
        self.base_offset + self.last_offset_delta as i64
    }

    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Compression codec name as Kafka prints it.
    pub fn compression(&self) -> &'static str {
        Codec::from_attributes(self.attributes).map_or("unknown", Codec::name)
    }

    /// The compression codec; the reserved values 5-7 are an error.
    pub fn codec(&self) -> Result<Codec, BatchError> {
        Codec::from_attributes(self.attributes).ok_or(BatchError::UnsupportedCompression(
            self.attributes & COMPRESSION_MASK,
        ))
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }

    /// The delete horizon (compaction) when attributes bit 6 is set.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_BIT != 0).then_some(self.base_timestamp)
    }

    /// Last sequence number as Kafka computes it (-1 without idempotence).
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == -1 {
            -1
        } else {
            // Sequences wrap at i32::MAX, as in Kafka's DefaultRecordBatch.incrementSequence.
            let next = self.base_sequence as i64 + self.last_offset_delta as i64;
            (next % (i32::MAX as i64 + 1)) as i32
        }
    }
}

/// CRC-32C of the CRC-covered part of a whole batch (bytes 21..end).
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES_AT..])
}

/// Checks the batch's header, size and CRC (cheap: no record decoding). `batch` must be
/// exactly one batch.
pub fn check_framing_and_crc(batch: &[u8]) -> Result<BatchHeader, BatchError> {
    check_framing_and_crc_with(batch, batch.len(), |a, b| crc32c::crc32c(&batch[a..b]))
}

/// [`check_framing_and_crc`] for a batch whose bytes are not in one buffer: `header` holds
/// its first bytes (at least the 61-byte header), `available` is how many bytes it has,
/// and `crc_of(a, b)` gives the CRC-32C of its bytes `[a, b)`.
pub fn check_framing_and_crc_with(
    header: &[u8],
    available: usize,
    crc_of: impl FnOnce(usize, usize) -> u32,
) -> Result<BatchHeader, BatchError> {
    let h = BatchHeader::parse(header)?;
    if h.size() != available {
        return Err(BatchError::SizeMismatch {
            declared: h.batch_length,
            total: h.size() as u64,
            available,
        });
    }
    let computed = crc_of(ATTRIBUTES_AT, h.size());
    if computed != h.crc {
        return Err(BatchError::CrcMismatch {
            stored: h.crc,
            computed,
        });
    }
    Ok(h)
}
