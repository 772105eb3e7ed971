//! Rewriting a batch with only some of its records, as Kafka's cleaner does
//! (`MemoryRecords.filterTo`): the batch keeps its base offset and its lastOffsetDelta (so
//! the log end never moves back and producer sequences stay valid), its producer fields and
//! leader epoch; maxTimestamp is recomputed from the kept records (CreateTime); and when the
//! batch keeps a tombstone, its delete horizon (attributes bit 6, with baseTimestamp holding
//! the horizon, KIP-534) is set so a later cleaning knows when the tombstone may go. A
//! compressed batch is rewritten compressed with its own codec, as Kafka's cleaner does.

use super::batch::*;
use super::builder::put_record;
use super::record::Record;
use super::BatchError;

/// What is left of a batch.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retained {
    /// Every record, with nothing to change: the original bytes stand.
    All,
    /// No record.
    Nothing,
    /// A rewritten batch.
    Some(Vec<u8>),
}

/// Filters the records of a validated `batch`. `delete_horizon` is stamped on
/// the batch when it has none yet and keeps a tombstone.
pub fn retain_records(
    batch: &[u8],
    h: &BatchHeader,
    delete_horizon: i64,
    mut keep: impl FnMut(&Record<'_>) -> bool,
) -> Result<Retained, BatchError> {
    let section = RecordsSection::of(batch, h)?;
    let all = section.decode()?;
    let kept: Vec<&Record<'_>> = all.iter().filter(|r| keep(r)).collect();
    let keeps_tombstone = kept.iter().any(|r| r.value.is_none());
    let horizon = match h.delete_horizon_ms() {
        Some(existing) => Some(existing),
        None if keeps_tombstone => Some(delete_horizon),
        None => None,
    };
    if kept.is_empty() {
        return Ok(Retained::Nothing);
    }
    if kept.len() == all.len() && horizon == h.delete_horizon_ms() {
        return Ok(Retained::All);
    }
    Ok(Retained::Some(encode(batch, h, &kept, horizon)?))
}

/// The batch with `horizon` stamped as its delete horizon (bit 6, baseTimestamp), its
/// records unchanged: a transaction marker whose transaction has no record left (KIP-534).
pub fn stamp_delete_horizon(
    batch: &[u8],
    h: &BatchHeader,
    horizon: i64,
) -> Result<Vec<u8>, BatchError> {
    let section = RecordsSection::of(batch, h)?;
    let all = section.decode()?;
    let kept: Vec<&Record<'_>> = all.iter().collect();
    encode(batch, h, &kept, Some(horizon))
}

fn encode(
    batch: &[u8],
    h: &BatchHeader,
    kept: &[&Record<'_>],
    horizon: Option<i64>,
) -> Result<Vec<u8>, BatchError> {
    let base_ts = horizon.unwrap_or(h.base_timestamp);
    let mut records = Vec::with_capacity(batch.len());
    let mut scratch = Vec::new();
    for r in kept {
        let headers = r.headers.iter().map(|x| (x.key, x.value));
        put_record(
            &mut records,
            &mut scratch,
            r.timestamp.wrapping_sub(base_ts),
            (r.offset - h.base_offset) as i32,
            (r.key, r.value),
            headers,
        );
    }
    let mut out = Vec::with_capacity(HEADER_SIZE + records.len());
    out.extend_from_slice(&batch[..HEADER_SIZE]);
    out.extend_from_slice(&h.codec()?.compress(&records));
    let max_ts = match h.timestamp_type() {
        TimestampType::LogAppendTime => h.max_timestamp,
        TimestampType::CreateTime => kept.iter().map(|r| r.timestamp).max().unwrap_or(-1),
    };
    let mut attributes = h.attributes;
    if horizon.is_some() {
        attributes |= DELETE_HORIZON_BIT;
    }
    let batch_length = (out.len() - LOG_OVERHEAD) as i32;
    out[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&batch_length.to_be_bytes());
    out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    out[BASE_TIMESTAMP_AT..BASE_TIMESTAMP_AT + 8].copy_from_slice(&base_ts.to_be_bytes());
    out[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&max_ts.to_be_bytes());
    out[RECORDS_COUNT_AT..RECORDS_COUNT_AT + 4].copy_from_slice(&(kept.len() as i32).to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BatchBuilder, RecordSpec};

    #[test]
    fn kept_records_keep_offsets_timestamps_and_the_last_offset_delta() {
        let mut b = BatchBuilder::new(256);
        for (k, v, ts) in [
            (b"a", Some(&b"1"[..]), 100),
            (b"b", None, 130),
            (b"a", Some(&b"2"[..]), 120),
        ] {
            b.push(RecordSpec::new(Some(k), v).timestamp(ts));
        }
        let mut bytes = b.build();
        set_base_offset(&mut bytes, 40);
        let (h, _) = validate(&bytes).unwrap();
        // Keep the tombstone of b and the second a.
        let Retained::Some(out) = retain_records(&bytes, &h, 5000, |r| r.offset != 40).unwrap()
        else {
            panic!("expected a rewrite")
        };
        let (h2, _) = validate(&out).unwrap();
        assert_eq!((h2.base_offset, h2.last_offset()), (40, 42));
        assert_eq!(h2.delete_horizon_ms(), Some(5000));
        assert_eq!(h2.max_timestamp, 130);
        let got: Vec<(i64, i64, bool)> = RecordsSection::of(&out, &h2)
            .unwrap()
            .decode()
            .unwrap()
            .iter()
            .map(|r| (r.offset, r.timestamp, r.value.is_none()))
            .collect();
        assert_eq!(got, vec![(41, 130, true), (42, 120, false)]);
        assert_eq!(
            retain_records(&bytes, &h, 0, |_| false).unwrap(),
            Retained::Nothing
        );
        let (hb, _) = validate(&out).unwrap();
        assert_eq!(
            retain_records(&out, &hb, 0, |_| true).unwrap(),
            Retained::All
        );
    }
}
