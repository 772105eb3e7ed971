//! Encoder for v2 batches: used by clients, tools, tests and benchmarks.

use super::batch::*;
use super::compression::Codec;
use super::varint::{put_varint, put_varlong};

/// One record to encode.
#[derive(Debug, Clone, Default)]
pub struct RecordSpec<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub timestamp: i64,
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
}

impl<'a> RecordSpec<'a> {
    pub fn new(key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        RecordSpec {
            key,
            value,
            ..Default::default()
        }
    }

    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = ts;
        self
    }

    pub fn header(mut self, key: &'a str, value: Option<&'a [u8]>) -> Self {
        self.headers.push((key, value));
        self
    }
}

/// Builds one uncompressed CreateTime batch. baseOffset is 0 (the log assigns offsets);
/// baseTimestamp is the first record's timestamp, maxTimestamp the largest.
#[derive(Debug, Default)]
pub struct BatchBuilder<'a> {
    records: Vec<RecordSpec<'a>>,
    capacity_hint: usize,
    codec: Option<Codec>,
}

fn put_nullable(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

/// Appends one record (length prefix included) to `out`; `scratch` is reused between calls.
pub(crate) fn put_record<'h>(
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    timestamp_delta: i64,
    offset_delta: i32,
    (key, value): (Option<&[u8]>, Option<&[u8]>),
    headers: impl ExactSizeIterator<Item = (&'h [u8], Option<&'h [u8]>)>,
) {
    scratch.clear();
    scratch.push(0); // attributes
    put_varlong(scratch, timestamp_delta);
    put_varint(scratch, offset_delta);
    put_nullable(scratch, key);
    put_nullable(scratch, value);
    put_varint(scratch, headers.len() as i32);
    for (k, v) in headers {
        put_nullable(scratch, Some(k));
        put_nullable(scratch, v);
    }
    put_varint(out, scratch.len() as i32);
    out.extend_from_slice(scratch);
}

impl<'a> BatchBuilder<'a> {
    /// `capacity_hint`: expected encoded size, to avoid reallocations.
    pub fn new(capacity_hint: usize) -> Self {
        BatchBuilder {
            records: Vec::new(),
            capacity_hint,
            codec: None,
        }
    }

    /// Compresses the records section with `codec` (Kafka's compression.type).
    pub fn compression(mut self, codec: Codec) -> Self {
        self.codec = Some(codec);
        self
    }

    pub fn record(mut self, r: RecordSpec<'a>) -> Self {
        self.records.push(r);
        self
    }

    pub fn push(&mut self, r: RecordSpec<'a>) {
        self.records.push(r);
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Encodes the batch (at least one record is expected; an empty batch is legal Kafka but
    /// useless, so it is encoded too with timestamps -1).
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.capacity_hint.max(HEADER_SIZE + 16));
        out.resize(HEADER_SIZE, 0);
        let base_ts = self.records.first().map(|r| r.timestamp).unwrap_or(-1);
        let max_ts = self.records.iter().map(|r| r.timestamp).max().unwrap_or(-1);
        let mut scratch = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            let headers = r.headers.iter().map(|(k, v)| (k.as_bytes(), *v));
            put_record(
                &mut out,
                &mut scratch,
                r.timestamp.wrapping_sub(base_ts),
                i as i32,
                (r.key, r.value),
                headers,
            );
        }
        if let Some(codec) = self.codec.filter(|c| *c != Codec::None) {
            let compressed = codec.compress(&out[HEADER_SIZE..]);
            out.truncate(HEADER_SIZE);
            out.extend_from_slice(&compressed);
            out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&(codec as i16).to_be_bytes());
        }
        let n = self.records.len() as i32;
        let batch_length = (out.len() - LOG_OVERHEAD) as i32;
        out[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&batch_length.to_be_bytes());
        out[LEADER_EPOCH_AT..LEADER_EPOCH_AT + 4].copy_from_slice(&(-1i32).to_be_bytes());
        out[MAGIC_AT] = MAGIC_V2 as u8;
        out[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
            .copy_from_slice(&(n - 1).max(0).to_be_bytes());
        out[BASE_TIMESTAMP_AT..BASE_TIMESTAMP_AT + 8].copy_from_slice(&base_ts.to_be_bytes());
        out[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&max_ts.to_be_bytes());
        out[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&(-1i64).to_be_bytes());
        out[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].copy_from_slice(&(-1i16).to_be_bytes());
        out[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&(-1i32).to_be_bytes());
        out[RECORDS_COUNT_AT..RECORDS_COUNT_AT + 4].copy_from_slice(&n.to_be_bytes());
        let crc = compute_crc(&out);
        out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        // The header written frames exactly the bytes built.
        assert_eq!(BatchHeader::parse(&out).map(|h| h.size()), Ok(out.len()));
        out
    }
}
