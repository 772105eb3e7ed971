//! Transaction markers: the control batches a transaction's end writes into each of its
//! partitions, in Kafka's layout (`EndTransactionMarker`, `ControlRecordType`): attributes
//! with the transactional and control bits, the transaction's producer id and epoch,
//! baseSequence -1, one record whose key is `version i16 (0), type i16 (0 ABORT, 1 COMMIT)`
//! and whose value is `version i16 (0), coordinator_epoch i32`.

use super::batch::{
    compute_crc, BatchHeader, RecordsSection, ATTRIBUTES_AT, CONTROL_BIT, CRC_AT, TRANSACTIONAL_BIT,
};
use super::builder::{BatchBuilder, RecordSpec};

/// A transaction's outcome, as its marker records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    pub commit: bool,
    pub coordinator_epoch: i32,
}

const ABORT: i16 = 0;
const COMMIT: i16 = 1;

/// The marker batch of `producer_id`'s transaction (offsets assigned by the log).
pub fn marker_batch(producer_id: i64, epoch: i16, marker: EndTxnMarker, timestamp: i64) -> Vec<u8> {
    let kind = if marker.commit { COMMIT } else { ABORT };
    let mut key = [0u8; 4];
    key[2..].copy_from_slice(&kind.to_be_bytes());
    let mut value = [0u8; 6];
    value[2..].copy_from_slice(&marker.coordinator_epoch.to_be_bytes());
    let mut batch = BatchBuilder::new(96)
        .record(RecordSpec::new(Some(&key), Some(&value)).timestamp(timestamp))
        .build();
    super::batch::set_producer(&mut batch, producer_id, epoch, -1);
    let attributes = TRANSACTIONAL_BIT | CONTROL_BIT;
    batch[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = compute_crc(&batch);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(
        read_marker(&batch),
        Some(marker),
        "a marker reads back as written"
    );
    batch
}

/// The marker a control batch carries; `None` for any other batch, or a control record
/// of another type or version (Kafka's readers skip those too).
pub fn read_marker(batch: &[u8]) -> Option<EndTxnMarker> {
    let header = BatchHeader::parse(batch).ok()?;
    if !header.is_control() {
        return None;
    }
    let records = RecordsSection::of(batch, &header).ok()?;
    let record = records.iter().next()?.ok()?;
    marker_of_record(record.key?, record.value)
}

/// The marker a control record's key and value describe (`None`: another control type
/// or version).
pub fn marker_of_record(key: &[u8], value: Option<&[u8]>) -> Option<EndTxnMarker> {
    if key.len() != 4 || key[..2] != [0, 0] {
        return None;
    }
    let commit = match i16::from_be_bytes([key[2], key[3]]) {
        ABORT => false,
        COMMIT => true,
        _ => return None,
    };
    let coordinator_epoch = match value {
        Some(v) if v.len() >= 6 => i32::from_be_bytes([v[2], v[3], v[4], v[5]]),
        _ => 0,
    };
    Some(EndTxnMarker {
        commit,
        coordinator_epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_are_control_batches_of_the_producer() {
        for commit in [true, false] {
            let marker = EndTxnMarker {
                commit,
                coordinator_epoch: 7,
            };
            let batch = marker_batch(42, 3, marker, 1_000);
            let h = BatchHeader::parse(&batch).unwrap();
            assert!(h.is_control() && h.is_transactional());
            assert_eq!(
                (h.producer_id, h.producer_epoch, h.base_sequence),
                (42, 3, -1)
            );
            assert_eq!(h.records_count, 1);
            super::super::batch::validate(&batch).unwrap();
            assert_eq!(read_marker(&batch), Some(marker));
        }
        let plain = BatchBuilder::new(64)
            .record(RecordSpec::new(None, Some(b"v")))
            .build();
        assert_eq!(read_marker(&plain), None);
    }
}
