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

/// A record's headers, checked when the record was read and decoded again on each
/// iteration rather than collected: reading a record allocates nothing, whatever it carries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RecordHeaders<'a> {
    /// The encoded headers, after their count.
    encoded: &'a [u8],
    count: usize,
}

impl<'a> RecordHeaders<'a> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter {
            encoded: self.encoded,
            pos: 0,
            left: self.count,
        }
    }
}

impl std::fmt::Debug for RecordHeaders<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The headers of a record, in order.
pub struct HeaderIter<'a> {
    encoded: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = RecordHeader<'a>;

    fn next(&mut self) -> Option<RecordHeader<'a>> {
        if self.left == 0 {
            assert_eq!(
                self.pos,
                self.encoded.len(),
                "the headers end where checked"
            );
            return None;
        }
        self.left -= 1;
        let header = next_header(self.encoded, &mut self.pos, self.encoded.len());
        Some(header.expect("headers are checked when their record is read"))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for HeaderIter<'_> {}

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
    pub headers: RecordHeaders<'a>,
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

/// The header count and headers of a record, inside `[*pos, end)`: each is checked here,
/// once, so iterating them later cannot fail.
fn headers<'a>(
    batch: &'a [u8],
    pos: &mut usize,
    end: usize,
) -> Result<RecordHeaders<'a>, &'static str> {
    let count = get_varint(&batch[..end], pos).map_err(|_| "malformed header count")?;
    if count < 0 {
        return Err("negative header count");
    }
    // Each header needs at least two bytes.
    if count as usize > (end - *pos) / 2 {
        return Err("header count exceeds the record's bytes");
    }
    let start = *pos;
    for _ in 0..count {
        next_header(batch, pos, end)?;
    }
    Ok(RecordHeaders {
        encoded: &batch[start..*pos],
        count: count as usize,
    })
}

/// The header at `*pos` (a non-null key and a nullable value), inside `[*pos, end)`.
fn next_header<'a>(
    buf: &'a [u8],
    pos: &mut usize,
    end: usize,
) -> Result<RecordHeader<'a>, &'static str> {
    let key = bytes_field(buf, pos, end)?.ok_or("null header key")?;
    let value = bytes_field(buf, pos, end)?;
    Ok(RecordHeader { key, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The encodings below are zigzag varints of small numbers: n >= 0 is 2n, -1 is 1.
    fn headers_of(encoded: &[u8]) -> Result<RecordHeaders<'_>, &'static str> {
        let mut pos = 0;
        let headers = headers(encoded, &mut pos, encoded.len())?;
        assert_eq!(pos, encoded.len(), "the walk ends after the last header");
        Ok(headers)
    }

    #[test]
    fn headers_are_checked_once_and_decoded_on_each_iteration() {
        // Two headers: h (null value), k = v.
        let encoded = [4, 2, b'h', 1, 2, b'k', 2, b'v'];
        let headers = headers_of(&encoded).unwrap();
        assert_eq!(headers.len(), 2);
        let expected = vec![
            RecordHeader {
                key: b"h",
                value: None,
            },
            RecordHeader {
                key: b"k",
                value: Some(b"v"),
            },
        ];
        assert_eq!(headers.iter().collect::<Vec<_>>(), expected);
        assert_eq!(headers.iter().collect::<Vec<_>>(), expected, "again");
        assert_eq!(headers.iter().len(), 2);
        assert_eq!(format!("{headers:?}"), format!("{expected:?}"));
        let none = headers_of(&[0]).unwrap();
        assert!(none.is_empty());
        assert_eq!(none.iter().next(), None);
    }

    #[test]
    fn malformed_headers_are_refused_when_read() {
        let cases: [(&[u8], &str); 4] = [
            (&[2, 1, 0], "null header key"),
            (&[10, 2, b'h'], "header count exceeds the record's bytes"),
            (&[2, 10, b'a', b'b'], "field extends past the record"),
            (&[1], "negative header count"),
        ];
        for (encoded, why) in cases {
            assert_eq!(headers_of(encoded).unwrap_err(), why, "{encoded:?}");
        }
    }
}
