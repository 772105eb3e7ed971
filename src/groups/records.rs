//! Records of the offsets log (`__consumer_offsets`), in Kafka's own schema so the topic
//! reads as Kafka's does (FORMAT.md):
//! - key, version 1 (an offset commit): int16 1, string group, string topic, int32
//!   partition; value, version 3: int16 3, int64 offset, int32 leader epoch, string
//!   metadata, int64 commit timestamp. A null value (tombstone) deletes the commit.
//!
//! Strings are int16 length + UTF-8. The topic is compacted, so the latest commit per
//! (group, topic, partition) is what survives.

use bytes::{Buf, BufMut};

use super::group_records::GroupRecord;
pub use super::ops::Committed;
use crate::format::{BatchBuilder, RecordSpec};

const KEY_OFFSET_COMMIT: i16 = 1;
const VALUE_VERSION: i16 = 3;

/// A commit (`Some`) or its deletion (`None`) for (group, topic, partition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRecord {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub value: Option<Committed>,
}

pub use crate::format::schema_string::{get_str, put_str, MAX_STRING};

impl OffsetRecord {
    pub fn key(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(12 + self.group.len() + self.topic.len());
        k.put_i16(KEY_OFFSET_COMMIT);
        put_str(&mut k, &self.group);
        put_str(&mut k, &self.topic);
        k.put_i32(self.partition);
        k
    }

    pub fn value(&self) -> Option<Vec<u8>> {
        let c = self.value.as_ref()?;
        let mut v = Vec::with_capacity(26 + c.metadata.len());
        v.put_i16(VALUE_VERSION);
        v.put_i64(c.offset);
        v.put_i32(c.leader_epoch);
        put_str(&mut v, &c.metadata);
        v.put_i64(c.commit_timestamp);
        Some(v)
    }

    /// Decodes a commit of the offsets log; `None` for keys of other kinds (group
    /// metadata, `group_records.rs`) or bytes that are not a commit.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Option<OffsetRecord> {
        let mut k = key;
        if k.remaining() < 2 || k.get_i16() != KEY_OFFSET_COMMIT {
            return None;
        }
        let group = get_str(&mut k)?;
        let topic = get_str(&mut k)?;
        if k.remaining() != 4 {
            return None;
        }
        let partition = k.get_i32();
        let value = match value {
            None => None,
            Some(mut v) => {
                if v.remaining() < 2 || v.get_i16() != VALUE_VERSION || v.remaining() < 12 {
                    return None;
                }
                let offset = v.get_i64();
                let leader_epoch = v.get_i32();
                let metadata = get_str(&mut v)?;
                if v.remaining() != 8 {
                    return None;
                }
                Some(Committed {
                    offset,
                    leader_epoch,
                    metadata,
                    commit_timestamp: v.get_i64(),
                })
            }
        };
        Some(OffsetRecord {
            group,
            topic,
            partition,
            value,
        })
    }
}

/// One batch holding `records` and, when given, the group's metadata record (a commit of
/// several partitions, or a deletion of a group with its offsets, is one atomic append).
pub fn batch(records: &[OffsetRecord], group: Option<&GroupRecord>, now_ms: i64) -> Vec<u8> {
    let mut encoded: Vec<(Vec<u8>, Option<Vec<u8>>)> =
        records.iter().map(|r| (r.key(), r.value())).collect();
    for ((k, v), r) in encoded.iter().zip(records) {
        // What is written reads back as the commit it records (checked before the write).
        debug_assert_eq!(OffsetRecord::decode(k, v.as_deref()).as_ref(), Some(r));
    }
    if let Some(g) = group {
        let (k, v) = (g.key(), g.value());
        debug_assert_eq!(GroupRecord::decode(&k, v.as_deref()).as_ref(), Some(g));
        encoded.push((k, v));
    }
    let size: usize = encoded
        .iter()
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len) + 32)
        .sum();
    let mut b = BatchBuilder::new(size + 128);
    for (k, v) in &encoded {
        b.push(RecordSpec::new(Some(k), v.as_deref()).timestamp(now_ms));
    }
    b.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_and_tombstones_round_trip_in_kafkas_schema() {
        let commit = OffsetRecord {
            group: "g".into(),
            topic: "orders".into(),
            partition: 3,
            value: Some(Committed {
                offset: 42,
                leader_epoch: -1,
                metadata: "m".into(),
                commit_timestamp: 1_700_000_000_000,
            }),
        };
        let key = commit.key();
        // int16 1, "g", "orders", int32 3.
        assert_eq!(key, b"\x00\x01\x00\x01g\x00\x06orders\x00\x00\x00\x03");
        let value = commit.value().unwrap();
        assert_eq!(
            OffsetRecord::decode(&key, Some(&value)),
            Some(commit.clone())
        );
        let tombstone = OffsetRecord {
            value: None,
            ..commit
        };
        assert_eq!(OffsetRecord::decode(&key, None), Some(tombstone));
        assert_eq!(OffsetRecord::decode(b"\x00\x02\x00\x01g", None), None);
        assert_eq!(OffsetRecord::decode(&key[..5], None), None);
        assert_eq!(OffsetRecord::decode(&key, Some(&value[..9])), None);
    }
}
