//! One record inside a v2 batch:
//! `length varint | attributes i8 | timestampDelta varlong | offsetDelta varint |
//!  keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value |
//!  headerCount varint | (headerKeyLength varint | key | headerValueLength varint | value)*`.
//! The bytes after `length` must be exactly `length` long.

use super::header::BatchHeader;
use super::varint::{get_varint, get_varlong};
use super::BatchError;

/// A record header (key is UTF-8 in Kafka; kept as bytes here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader<'a> {
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
}

/// A decoded record, borrowing its key, value and headers from the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// Absolute offset: batch baseOffset + offsetDelta.
    pub offset: i64,
    /// Absolute timestamp: baseTimestamp + timestampDelta, or the batch maxTimestamp for
    /// LogAppendTime batches.
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Vec<RecordHeader<'a>>,
    /// Sequence number (baseSequence + offsetDelta, or -1).
    pub sequence: i32,
}

/// Iterator over the records of one uncompressed batch.
pub struct RecordIter<'a> {
    batch: &'a [u8],
    header: BatchHeader,
    pos: usize,
    index: usize,
    done: bool,
}

impl<'a> RecordIter<'a> {
    /// Records of `header`'s batch, encoded in `buf` from `start` to its end.
    pub(crate) fn new(buf: &'a [u8], start: usize, header: BatchHeader) -> Self {
        RecordIter {
            batch: buf,
            header,
            pos: start,
            index: 0,
            done: false,
        }
    }

    fn invalid(&mut self, what: &'static str) -> Option<Result<Record<'a>, BatchError>> {
        self.done = true;
        Some(Err(BatchError::InvalidRecord {
            index: self.index,
            pos: self.pos,
            what,
        }))
    }
}

/// Reads a nullable byte field (`len varint`, -1 = null) inside `[*pos, end)`.
fn bytes_field<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    end: usize,
) -> Result<Option<&'a [u8]>, &'static str> {
    let len = get_varint(&buf[..end], pos).map_err(|_| "malformed length varint")?;
    if len < -1 {
        return Err("negative field length");
    }
    if len == -1 {
        return Ok(None);
    }
    let len = len as usize;
    if *pos + len > end {
        return Err("field extends past the record");
    }
    let out = &buf[*pos..*pos + len];
    *pos += len;
    Ok(Some(out))
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let total = self.batch.len();
        if self.index == self.header.records_count.max(0) as usize {
            self.done = true;
            if self.pos != total {
                return self.invalid("bytes left after the last record");
            }
            return None;
        }
        if self.pos >= total {
            self.done = true;
            return Some(Err(BatchError::RecordCountMismatch {
                declared: self.header.records_count,
                found: self.index,
            }));
        }
        match self.record_at(self.pos) {
            Ok((record, end)) => {
                self.pos = end;
                self.index += 1;
                Some(Ok(record))
            }
            Err(what) => self.invalid(what),
        }
    }
}

impl<'a> RecordIter<'a> {
    /// The record starting at `start` and where it ends; or what is wrong with it.
    fn record_at(&self, start: usize) -> Result<(Record<'a>, usize), &'static str> {
        let mut p = start;
        let length = get_varint(self.batch, &mut p).map_err(|_| "malformed record length")?;
        if length < 0 {
            return Err("negative record length");
        }
        let end = p + length as usize;
        if end > self.batch.len() {
            return Err("record length extends past the batch");
        }
        let body = &self.batch[..end];
        if p >= end {
            return Err("record shorter than its attributes byte");
        }
        p += 1; // attributes: unused in v2
        let ts_delta = get_varlong(body, &mut p).map_err(|_| "malformed timestampDelta")?;
        let offset_delta = get_varint(body, &mut p).map_err(|_| "malformed offsetDelta")?;
        if !(0..=self.header.last_offset_delta).contains(&offset_delta) {
            return Err("offsetDelta outside the batch's offsets");
        }
        let offset = (self.header.base_offset)
            .checked_add(offset_delta as i64)
            .ok_or("offset overflows")?;
        let key = bytes_field(self.batch, &mut p, end)?;
        let value = bytes_field(self.batch, &mut p, end)?;
        let headers = headers(self.batch, &mut p, end)?;
        if p != end {
            return Err("record length does not match its fields");
        }
        let record = Record {
            offset,
            timestamp: self.timestamp_of(ts_delta),
            key,
            value,
            headers,
            sequence: self.sequence_of(offset_delta),
        };
        Ok((record, end))
    }

    fn timestamp_of(&self, ts_delta: i64) -> i64 {
        let h = &self.header;
        match h.timestamp_type() {
            super::TimestampType::LogAppendTime => h.max_timestamp,
            super::TimestampType::CreateTime => h.base_timestamp.wrapping_add(ts_delta),
        }
    }

    fn sequence_of(&self, offset_delta: i32) -> i32 {
        let base = self.header.base_sequence;
        if base == -1 {
            return -1;
        }
        ((base as i64 + offset_delta as i64) % (i32::MAX as i64 + 1)) as i32
    }
}

/// The header count and headers of a record, inside `[*pos, end)`.
fn headers<'a>(
    batch: &'a [u8],
    pos: &mut usize,
    end: usize,
) -> Result<Vec<RecordHeader<'a>>, &'static str> {
    let count = get_varint(&batch[..end], pos).map_err(|_| "malformed header count")?;
    if count < 0 {
        return Err("negative header count");
    }
    // Each header needs at least two bytes: bound the allocation by what is left.
    if count as usize > (end - *pos) / 2 {
        return Err("header count exceeds the record's bytes");
    }
    let mut headers = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let key = bytes_field(batch, pos, end)?.ok_or("null header key")?;
        let value = bytes_field(batch, pos, end)?;
        headers.push(RecordHeader { key, value });
    }
    Ok(headers)
}
