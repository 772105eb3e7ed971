//! Encoder for v2 batches: used by clients, tools, tests and benchmarks.

use super::batch::*;
use super::varint::{put_varint, put_varlong, varint_len, varlong_len};

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
}

fn nullable_len(field: Option<&[u8]>) -> usize {
    match field {
        None => varint_len(-1),
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
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

impl<'a> BatchBuilder<'a> {
    /// `capacity_hint`: expected encoded size, to avoid reallocations.
    pub fn new(capacity_hint: usize) -> Self {
        BatchBuilder {
            records: Vec::new(),
            capacity_hint,
        }
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
        let mut body = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            body.clear();
            body.push(0); // attributes
            put_varlong(&mut body, r.timestamp.wrapping_sub(base_ts));
            put_varint(&mut body, i as i32);
            put_nullable(&mut body, r.key);
            put_nullable(&mut body, r.value);
            put_varint(&mut body, r.headers.len() as i32);
            for (k, v) in &r.headers {
                put_nullable(&mut body, Some(k.as_bytes()));
                put_nullable(&mut body, *v);
            }
            debug_assert_eq!(
                body.len(),
                1 + varlong_len(r.timestamp.wrapping_sub(base_ts))
                    + varint_len(i as i32)
                    + nullable_len(r.key)
                    + nullable_len(r.value)
                    + varint_len(r.headers.len() as i32)
                    + r.headers
                        .iter()
                        .map(|(k, v)| nullable_len(Some(k.as_bytes())) + nullable_len(*v))
                        .sum::<usize>()
            );
            put_varint(&mut out, body.len() as i32);
            out.extend_from_slice(&body);
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
        out
    }
}
