//! Records of the transaction state log (`__transaction_state`), in Kafka's schema
//! (`TransactionLogKey`/`TransactionLogValue` version 0) so the topic reads as Kafka's:
//! - key: int16 0, string transactional id;
//! - value: int16 0, int64 producer id, int16 epoch, int32 timeout ms, int8 status,
//!   nullable array of { string topic, array of int32 partitions } (null when Empty),
//!   int64 last update ms, int64 start ms. A null value (tombstone) forgets the id.
//!
//! Arrays are int32 count + items, strings int16 length + UTF-8.

use std::collections::BTreeMap;

use bytes::{Buf, BufMut};

use super::meta::{TxnMeta, TxnState};
use crate::format::schema_string::{get_str, put_str};
use crate::format::{BatchBuilder, RecordSpec};
use crate::TopicPartition;

const VERSION: i16 = 0;

pub fn key(id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + id.len());
    k.put_i16(VERSION);
    put_str(&mut k, id);
    k
}

pub fn value(m: &TxnMeta) -> Vec<u8> {
    let mut v = Vec::with_capacity(64);
    v.put_i16(VERSION);
    v.put_i64(m.producer_id);
    v.put_i16(m.epoch);
    v.put_i32(m.timeout_ms);
    v.put_i8(m.state.id());
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in &m.partitions {
        by_topic.entry(&tp.topic).or_default().push(tp.partition);
    }
    match m.state {
        TxnState::Empty => v.put_i32(-1),
        _ => {
            v.put_i32(by_topic.len() as i32);
            for (topic, partitions) in by_topic {
                put_str(&mut v, topic);
                v.put_i32(partitions.len() as i32);
                partitions.iter().for_each(|p| v.put_i32(*p));
            }
        }
    }
    v.put_i64(m.update_ms);
    v.put_i64(m.start_ms);
    v
}

/// A record of the log: (id, its state or `None` for a tombstone); `None` for bytes that
/// are not one.
pub fn decode(key: &[u8], value: Option<&[u8]>) -> Option<(String, Option<TxnMeta>)> {
    let mut k = key;
    if k.remaining() < 2 || k.get_i16() != VERSION {
        return None;
    }
    let id = get_str(&mut k)?;
    if k.has_remaining() {
        return None;
    }
    let Some(mut v) = value else {
        return Some((id, None));
    };
    if v.remaining() < 2 + 8 + 2 + 4 + 1 + 4 || v.get_i16() != VERSION {
        return None;
    }
    let (producer_id, epoch, timeout_ms) = (v.get_i64(), v.get_i16(), v.get_i32());
    let state = TxnState::from_id(v.get_i8())?;
    let partitions = decode_partitions(&mut v)?;
    if v.remaining() != 16 {
        return None;
    }
    let (update_ms, start_ms) = (v.get_i64(), v.get_i64());
    let meta = TxnMeta {
        producer_id,
        epoch,
        last_epoch: -1,
        timeout_ms,
        state,
        partitions,
        start_ms,
        update_ms,
    };
    Some((id, Some(meta)))
}

fn decode_partitions(v: &mut &[u8]) -> Option<std::collections::BTreeSet<TopicPartition>> {
    let mut out = std::collections::BTreeSet::new();
    let topics = v.get_i32();
    for _ in 0..topics.max(0) {
        let topic = get_str(v)?;
        if v.remaining() < 4 {
            return None;
        }
        let n = v.get_i32();
        if n < 0 || v.remaining() < n as usize * 4 {
            return None;
        }
        for _ in 0..n {
            out.insert(TopicPartition::new(topic.as_str(), v.get_i32()));
        }
    }
    Some(out)
}

/// The one-record batch logging `id`'s state (`None`: its tombstone).
pub fn batch(id: &str, meta: Option<&TxnMeta>, now_ms: i64) -> Vec<u8> {
    let (k, v) = (key(id), meta.map(value));
    // What is logged reads back as the state it records (checked before the write).
    debug_assert!(decode(&k, v.as_deref()).is_some_and(|(back, m)| back == id
        && m.map(|m| (m.producer_id, m.epoch, m.state))
            == meta.map(|m| (m.producer_id, m.epoch, m.state))));
    BatchBuilder::new(128)
        .record(RecordSpec::new(Some(&k), v.as_deref()).timestamp(now_ms))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_in_kafkas_schema() {
        let mut m = TxnMeta::new(42, 60_000, 1_000);
        m.epoch = 3;
        m.state = TxnState::Ongoing;
        m.start_ms = 900;
        m.partitions.insert(TopicPartition::new("a", 1));
        m.partitions.insert(TopicPartition::new("a", 0));
        m.partitions.insert(TopicPartition::new("b", 7));
        let (k, v) = (key("tx"), value(&m));
        assert_eq!(k, b"\x00\x00\x00\x02tx");
        let (id, back) = decode(&k, Some(&v)).unwrap();
        assert_eq!((id.as_str(), back), ("tx", Some(m.clone())));
        // Empty logs a null partition array.
        m.state = TxnState::Empty;
        m.partitions.clear();
        let v = value(&m);
        assert_eq!(decode(&k, Some(&v)).unwrap().1, Some(m));
        assert_eq!(decode(&k, None), Some(("tx".into(), None)));
        assert_eq!(decode(&k, Some(&v[..10])), None);
        assert_eq!(decode(b"\x00\x01\x00\x02tx", None), None);
    }
}
