//! Kafka RecordBatch magic 2: the 61-byte header, CRC-32C, validation and the two in-place
//! rewrites the log performs (assigning the base offset, stamping LogAppendTime).
//!
//! Format (big-endian; FORMAT.md has the full table):
//! `baseOffset i64 | batchLength i32 | partitionLeaderEpoch i32 | magic i8 | crc u32 |
//!  attributes i16 | lastOffsetDelta i32 | baseTimestamp i64 | maxTimestamp i64 |
//!  producerId i64 | producerEpoch i16 | baseSequence i32 | recordsCount i32 | records`.
//! The CRC covers bytes 21..end (attributes to the end), so baseOffset and
//! partitionLeaderEpoch can be rewritten without recomputing it.

use super::compression::Codec;
pub use super::header::*;
use super::record::{Record, RecordIter};
use super::BatchError;

/// What a full validation learned about a batch's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordsSummary {
    /// Largest record timestamp (-1 when there are no records).
    pub max_record_timestamp: i64,
    /// Smallest record timestamp (i64::MAX when there are no records).
    pub min_record_timestamp: i64,
    /// Largest offsetDelta seen (-1 when there are no records).
    pub max_offset_delta: i64,
    /// First record whose offsetDelta is not its index (deltas must be 0, 1, 2, ...).
    pub first_gap: Option<(usize, i64)>,
    /// Index of the first record without a key (compacted topics refuse it).
    pub first_null_key: Option<usize>,
}

/// Full validation: framing, CRC, then every record (lengths, varints, count), after
/// decompressing them when the batch is compressed.
pub fn validate(batch: &[u8]) -> Result<(BatchHeader, RecordsSummary), BatchError> {
    let h = check_framing_and_crc(batch)?;
    if h.records_count < 0 {
        return Err(BatchError::NegativeRecordCount(h.records_count));
    }
    let mut summary = RecordsSummary {
        max_record_timestamp: -1,
        min_record_timestamp: i64::MAX,
        max_offset_delta: -1,
        first_gap: None,
        first_null_key: None,
    };
    let mut found = 0usize;
    for record in RecordsSection::of(batch, &h)?.iter() {
        let r = record?;
        let delta = r.offset - h.base_offset;
        summary.max_record_timestamp = summary.max_record_timestamp.max(r.timestamp);
        summary.min_record_timestamp = summary.min_record_timestamp.min(r.timestamp);
        summary.max_offset_delta = summary.max_offset_delta.max(delta);
        if r.key.is_none() && summary.first_null_key.is_none() {
            summary.first_null_key = Some(found);
        }
        if delta != found as i64 && summary.first_gap.is_none() {
            summary.first_gap = Some((found, delta));
        }
        found += 1;
    }
    if found != h.records_count as usize {
        return Err(BatchError::RecordCountMismatch {
            declared: h.records_count,
            found,
        });
    }
    Ok((h, summary))
}

/// Rules a producer's batch must follow on top of `validate`: at least one record, offset
/// deltas 0,1,2,... with lastOffsetDelta = count - 1, and CreateTime (the log, not the
/// client, stamps LogAppendTime).
/// What a producer may send. `in_transaction`: the producer's transaction was verified by
/// the coordinator, so transactional batches (bit 4) are allowed; control batches and the
/// delete horizon are the log's alone.
pub fn check_produce_rules(
    header: &BatchHeader,
    summary: &RecordsSummary,
    in_transaction: bool,
) -> Result<(), BatchError> {
    if header.records_count == 0 {
        return Err(BatchError::NoRecords);
    }
    if header.timestamp_type() == TimestampType::LogAppendTime {
        return Err(BatchError::ClientLogAppendTime);
    }
    let transactional = (!in_transaction).then_some((TRANSACTIONAL_BIT, "transactional"));
    let reserved = [
        (CONTROL_BIT, "control"),
        (DELETE_HORIZON_BIT, "delete-horizon"),
    ];
    for (bit, what) in reserved.into_iter().chain(transactional) {
        if header.attributes & bit != 0 {
            return Err(BatchError::ReservedAttributes(what));
        }
    }
    if header.last_offset_delta as i64 != header.records_count as i64 - 1
        || summary.max_offset_delta != header.last_offset_delta as i64
    {
        return Err(BatchError::LastOffsetDeltaMismatch {
            declared: header.last_offset_delta,
            found: summary.max_offset_delta,
        });
    }
    if let Some((index, found)) = summary.first_gap {
        return Err(BatchError::NonContiguousOffsetDelta {
            index,
            expected: index as i64,
            found,
        });
    }
    Ok(())
}

/// The records of a framing-checked batch: borrowed from the batch when it is
/// uncompressed, decompressed (once) when it is not.
pub struct RecordsSection<'a> {
    bytes: std::borrow::Cow<'a, [u8]>,
    start: usize,
    header: BatchHeader,
}

impl<'a> RecordsSection<'a> {
    pub fn of(batch: &'a [u8], header: &BatchHeader) -> Result<Self, BatchError> {
        let codec = header.codec()?;
        let (bytes, start) = match codec {
            Codec::None => (std::borrow::Cow::Borrowed(batch), HEADER_SIZE),
            _ => (
                std::borrow::Cow::Owned(codec.decompress(&batch[HEADER_SIZE..])?),
                0,
            ),
        };
        Ok(RecordsSection {
            bytes,
            start,
            header: *header,
        })
    }

    /// Each item is a record or the error that stops the iteration; iteration also stops
    /// after `recordsCount` records and reports trailing bytes as an error.
    pub fn iter(&self) -> RecordIter<'_> {
        RecordIter::new(&self.bytes, self.start, self.header)
    }

    /// Every record, or the first error.
    pub fn decode(&self) -> Result<Vec<Record<'_>>, BatchError> {
        self.iter().collect()
    }
}

/// Marks a batch as part of a transaction (attribute bit 4) and recomputes the CRC.
pub fn set_transactional(batch: &mut [u8]) {
    let attributes = be_i16(batch, ATTRIBUTES_AT) | TRANSACTIONAL_BIT;
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Rewrites baseOffset in place. The CRC does not cover it, so it stays valid.
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    assert!(base_offset >= 0, "offsets are never negative");
    batch[BASE_OFFSET_AT..BASE_OFFSET_AT + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// `batch` with its records section in `codec` (a topic's compression.type): the same
/// records and header fields, with the codec bits, batchLength and CRC made to match. The
/// records decompress within the usual bound.
pub fn recompressed(
    batch: &[u8],
    header: &BatchHeader,
    codec: Codec,
) -> Result<Vec<u8>, BatchError> {
    let section = &batch[HEADER_SIZE..header.size()];
    let raw = match header.codec()? {
        Codec::None => std::borrow::Cow::Borrowed(section),
        from => std::borrow::Cow::Owned(from.decompress(section)?),
    };
    let body = codec.compress(&raw);
    let mut out = Vec::with_capacity(HEADER_SIZE + body.len());
    out.extend_from_slice(&batch[..HEADER_SIZE]);
    out.extend_from_slice(&body);
    let attributes = (be_i16(&out, ATTRIBUTES_AT) & !0x07) | codec as i16;
    out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    // batchLength counts what follows it.
    let length = i32::try_from(out.len() - LEADER_EPOCH_AT)
        .map_err(|_| BatchError::TooShort { len: out.len() })?;
    out[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    // What was written reads back as the same batch in the new codec.
    let again = BatchHeader::parse(&out)?;
    assert_eq!(
        again.size(),
        out.len(),
        "the new length frames the new batch"
    );
    assert_eq!(again.codec()?, codec, "the codec bits name the new codec");
    assert_eq!(
        again.records_count, header.records_count,
        "no record lost or added"
    );
    Ok(out)
}

/// Sets the idempotent producer fields (producerId, producerEpoch, baseSequence) and
/// recomputes the CRC, which covers them.
pub fn set_producer(batch: &mut [u8], producer_id: i64, epoch: i16, base_sequence: i32) {
    assert!(producer_id >= -1, "a producer id, or none");
    assert!(base_sequence >= -1, "a sequence, or none");
    batch[PRODUCER_ID_AT..PRODUCER_ID_AT + 8].copy_from_slice(&producer_id.to_be_bytes());
    batch[PRODUCER_EPOCH_AT..PRODUCER_EPOCH_AT + 2].copy_from_slice(&epoch.to_be_bytes());
    batch[BASE_SEQUENCE_AT..BASE_SEQUENCE_AT + 4].copy_from_slice(&base_sequence.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// What partitionLeaderEpoch holds in every stored batch: shardlog is one node with no
/// leader elections (Kafka's NO_PARTITION_LEADER_EPOCH). Clients write 0 or -1.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;

/// Rewrites partitionLeaderEpoch in place (Kafka stamps it on append). Outside the CRC.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    assert!(
        epoch >= NO_PARTITION_LEADER_EPOCH,
        "a leader epoch, or none"
    );
    batch[LEADER_EPOCH_AT..LEADER_EPOCH_AT + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Rewrites maxTimestamp and the timestamp-type bit, then recomputes the CRC, as Kafka's
/// `DefaultRecordBatch.setMaxTimestamp` does.
pub fn set_max_timestamp(batch: &mut [u8], kind: TimestampType, max_timestamp: i64) {
    let mut attributes = be_i16(batch, ATTRIBUTES_AT) & !TIMESTAMP_TYPE_BIT;
    if kind == TimestampType::LogAppendTime {
        attributes |= TIMESTAMP_TYPE_BIT;
    }
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Gives every record of a batch whose timestampDeltas are all 0 the timestamp `ts`
/// (baseTimestamp and maxTimestamp), and recomputes the CRC. Load generators reuse one
/// encoded batch this way instead of encoding each request.
pub fn restamp_uniform(batch: &mut [u8], ts: i64) {
    batch[BASE_TIMESTAMP_AT..BASE_TIMESTAMP_AT + 8].copy_from_slice(&ts.to_be_bytes());
    batch[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&ts.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// As [`set_max_timestamp`] for a header held apart from its records (`body` = the bytes
/// after the 61-byte header): the CRC is computed over the new header fields and the body.
pub fn set_header_max_timestamp(
    head: &mut [u8; HEADER_SIZE],
    body: &[u8],
    kind: TimestampType,
    max_timestamp: i64,
) {
    let mut attributes = be_i16(head, ATTRIBUTES_AT) & !TIMESTAMP_TYPE_BIT;
    if kind == TimestampType::LogAppendTime {
        attributes |= TIMESTAMP_TYPE_BIT;
    }
    head[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    head[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&head[ATTRIBUTES_AT..]), body);
    head[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Splits a buffer holding several whole batches into `(start, header)` pairs after checking
/// each one's framing. Trailing bytes that are not a whole batch are an error.
pub fn split_batches(buf: &[u8]) -> Result<Vec<(usize, BatchHeader)>, BatchError> {
    split_batches_located(buf).map_err(|(_, e)| e)
}

/// [`split_batches`], with the byte position of the batch a framing error is in.
pub fn split_batches_located(buf: &[u8]) -> Result<Vec<(usize, BatchHeader)>, (usize, BatchError)> {
    located_batches(buf).collect()
}

/// The batches of a buffer of whole batches, one step at a time (nothing collected): each
/// is `(start, header)` or the framing error at a position; an empty buffer is an error.
pub fn located_batches(buf: &[u8]) -> impl Iterator<Item = super::cursor::Step> + '_ {
    let empty = buf.is_empty().then_some(Err((0, BatchError::Empty)));
    empty
        .into_iter()
        .chain(super::cursor::BatchCursor::new(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BatchBuilder, RecordSpec};

    #[test]
    fn crc32c_matches_kafka_vector() {
        assert_eq!(crc32c::crc32c(b"Some String"), 608512271);
    }

    fn sample() -> Vec<u8> {
        BatchBuilder::new(1_000)
            .record(RecordSpec::new(Some(b"k1"), Some(b"v1")).timestamp(1_000))
            .record(RecordSpec::new(None, None).timestamp(1_005))
            .record(
                RecordSpec::new(Some(b"k3"), Some(b"hello"))
                    .timestamp(999)
                    .header("h", Some(b"x")),
            )
            .build()
    }

    #[test]
    fn encode_decode_round_trip() {
        let batch = sample();
        let (h, summary) = validate(&batch).unwrap();
        assert_eq!(h.records_count, 3);
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.max_timestamp, 1_005);
        assert_eq!(summary.max_record_timestamp, 1_005);
        assert_eq!(h.size(), batch.len());
        let section = RecordsSection::of(&batch, &h).unwrap();
        let recs = section.decode().unwrap();
        assert_eq!(recs[0].key, Some(&b"k1"[..]));
        assert_eq!(recs[1].key, None);
        assert_eq!(recs[1].value, None, "tombstone");
        assert_eq!(recs[2].timestamp, 999);
        let headers: Vec<_> = recs[2].headers.iter().collect();
        assert_eq!(headers.len(), 1);
        assert_eq!(headers[0].key, b"h");
        assert_eq!(headers[0].value, Some(&b"x"[..]));
        assert_eq!(recs[2].offset, 2);
    }

    #[test]
    fn offset_rewrite_keeps_crc_valid() {
        let mut batch = sample();
        set_base_offset(&mut batch, 12_345);
        let (h, _) = validate(&batch).unwrap();
        assert_eq!(h.base_offset, 12_345);
        assert_eq!(
            RecordsSection::of(&batch, &h).unwrap().decode().unwrap()[2].offset,
            12_347
        );
    }

    #[test]
    fn log_append_time_rewrites_crc() {
        let mut batch = sample();
        set_max_timestamp(&mut batch, TimestampType::LogAppendTime, 77);
        let (h, _) = validate(&batch).unwrap();
        assert_eq!(h.timestamp_type(), TimestampType::LogAppendTime);
        // Every record reads the batch's LogAppendTime.
        assert!(RecordsSection::of(&batch, &h)
            .unwrap()
            .decode()
            .unwrap()
            .iter()
            .all(|r| r.timestamp == 77));
    }

    #[test]
    fn producers_must_send_contiguous_offset_deltas() {
        let batch = BatchBuilder::new(100)
            .record(RecordSpec::new(None, Some(b"a")).timestamp(1))
            .record(RecordSpec::new(None, Some(b"b")).timestamp(1))
            .build();
        let (h, summary) = validate(&batch).unwrap();
        assert_eq!(check_produce_rules(&h, &summary, false), Ok(()));
        // Second record: length, attributes, timestampDelta (0), offsetDelta (1 = 0x02).
        let second = HEADER_SIZE + 1 + batch[HEADER_SIZE] as usize / 2;
        let with_delta = |delta: u8| {
            let mut b = batch.clone();
            assert_eq!(b[second + 3], 0x02);
            b[second + 3] = delta;
            let crc = compute_crc(&b);
            b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
            b
        };
        let (h, summary) = validate(&with_delta(0x00)).unwrap(); // offsetDelta 0 again
        assert!(matches!(
            check_produce_rules(&h, &summary, false),
            Err(BatchError::NonContiguousOffsetDelta {
                index: 1,
                expected: 1,
                found: 0
            }) | Err(BatchError::LastOffsetDeltaMismatch { .. })
        ));
        // offsetDelta 2 is past lastOffsetDelta 1: no offset of the batch.
        assert!(matches!(
            validate(&with_delta(0x04)),
            Err(BatchError::InvalidRecord { index: 1, .. })
        ));
    }

    #[test]
    fn restamp_uniform_keeps_the_batch_valid() {
        let mut b = BatchBuilder::new(64)
            .record(RecordSpec::new(None, Some(b"a")).timestamp(5))
            .record(RecordSpec::new(None, Some(b"b")).timestamp(5))
            .build();
        restamp_uniform(&mut b, 99);
        let (h, summary) = validate(&b).unwrap();
        assert_eq!((h.base_timestamp, h.max_timestamp), (99, 99));
        assert_eq!(summary.max_record_timestamp, 99);
    }

    #[test]
    fn header_only_rewrite_equals_whole_batch_rewrite() {
        for kind in [TimestampType::LogAppendTime, TimestampType::CreateTime] {
            let mut whole = sample();
            let mut head: [u8; HEADER_SIZE] = whole[..HEADER_SIZE].try_into().unwrap();
            let body = whole[HEADER_SIZE..].to_vec();
            set_header_max_timestamp(&mut head, &body, kind, 4242);
            set_max_timestamp(&mut whole, kind, 4242);
            assert_eq!(&whole[..HEADER_SIZE], &head[..]);
        }
    }

    #[test]
    fn corruption_is_detected_with_specific_errors() {
        let batch = sample();
        let mut flipped = batch.clone();
        flipped[HEADER_SIZE + 3] ^= 0x40;
        assert!(matches!(
            validate(&flipped),
            Err(BatchError::CrcMismatch { .. })
        ));

        let mut magic = batch.clone();
        magic[MAGIC_AT] = 1;
        assert_eq!(validate(&magic), Err(BatchError::BadMagic(1)));

        assert!(matches!(
            validate(&batch[..batch.len() - 1]),
            Err(BatchError::SizeMismatch { .. })
        ));
        assert!(matches!(
            validate(&batch[..30]),
            Err(BatchError::TooShort { len: 30 })
        ));

        // Wrong record count with a recomputed CRC: caught by record validation.
        let mut count = batch.clone();
        count[RECORDS_COUNT_AT..RECORDS_COUNT_AT + 4].copy_from_slice(&4i32.to_be_bytes());
        let crc = compute_crc(&count);
        count[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(validate(&count).is_err());

        // Flagged gzip, but the records are not gzip: a decompression error.
        let mut compressed = batch.clone();
        compressed[ATTRIBUTES_AT + 1] |= 1;
        let crc = compute_crc(&compressed);
        compressed[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate(&compressed),
            Err(BatchError::Decompression { codec: "gzip", .. })
        ));
        // Codec values 5-7 are reserved.
        let mut reserved = batch.clone();
        reserved[ATTRIBUTES_AT + 1] |= 6;
        let crc = compute_crc(&reserved);
        reserved[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            validate(&reserved),
            Err(BatchError::UnsupportedCompression(6))
        );
    }

    #[test]
    fn record_length_lies_are_rejected() {
        let batch = sample();
        // Make the first record's length varint claim one more byte, fix the CRC.
        let mut bad = batch.clone();
        bad[HEADER_SIZE] += 2; // zigzag: +1 in value
        let crc = compute_crc(&bad);
        bad[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate(&bad),
            Err(BatchError::InvalidRecord { .. })
        ));
    }

    #[test]
    fn split_finds_each_batch() {
        let a = sample();
        let mut both = a.clone();
        both.extend_from_slice(&a);
        let parts = split_batches(&both).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].0, a.len());
        both.push(0);
        assert!(split_batches(&both).is_err());
        assert_eq!(split_batches(&[]), Err(BatchError::Empty));
    }
}
