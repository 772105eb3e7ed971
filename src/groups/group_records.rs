//! Group-metadata records of the offsets log, in Kafka's schema (`GroupMetadataKey`
//! version 2, `GroupMetadataValue` version 3) so a group's membership survives a restart
//! as it does in Kafka (FORMAT.md):
//! - key: int16 2, string group;
//! - value: int16 3, string protocol type, int32 generation, nullable string protocol,
//!   nullable string leader, int64 state timestamp, int32 count of members, each: string
//!   member id, nullable string group instance id, string client id, string client host,
//!   int32 rebalance timeout, int32 session timeout, bytes subscription, bytes assignment.
//!
//! A null value (tombstone) forgets the group. Written when a generation's assignments are
//! in force (the leader's SyncGroup), when a group empties, and when it is deleted.

use bytes::{Buf, BufMut, Bytes};

use super::group::{Group, Member, State};
use crate::format::schema_string::{get_str, put_str};
use crate::protocol::wire::{WireError, WireReader, WireWriter};

const KEY_GROUP_METADATA: i16 = 2;
const VALUE_VERSION: i16 = 3;

/// One member as stored: the subscription is its metadata for the chosen protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A group's stored state: Stable with these members, or Empty when there are none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub state_timestamp: i64,
    pub members: Vec<StoredMember>,
}

/// The group's metadata (`Some`) or its deletion (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    pub group: String,
    pub value: Option<GroupMetadata>,
}

impl GroupRecord {
    /// What `g` stores now: its generation and each member with its assignment.
    pub fn of(name: &str, g: &Group, now_ms: i64) -> GroupRecord {
        let protocol = g.protocol.clone().unwrap_or_default();
        let members = g
            .members
            .iter()
            .map(|(id, m)| StoredMember {
                member_id: id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                subscription: m.metadata_for(&protocol),
                assignment: m.assignment.clone(),
            })
            .collect();
        GroupRecord {
            group: name.to_string(),
            value: Some(GroupMetadata {
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                generation: g.generation,
                protocol: g.protocol.clone(),
                leader: g.leader.clone(),
                state_timestamp: now_ms,
                members,
            }),
        }
    }

    pub fn tombstone(name: &str) -> GroupRecord {
        GroupRecord {
            group: name.to_string(),
            value: None,
        }
    }

    pub fn key(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(4 + self.group.len());
        k.put_i16(KEY_GROUP_METADATA);
        put_str(&mut k, &self.group);
        k
    }

    pub fn value(&self) -> Option<Vec<u8>> {
        let v = self.value.as_ref()?;
        let mut w = WireWriter::with_capacity(64 + 128 * v.members.len());
        w.i16(VALUE_VERSION)
            .string(&v.protocol_type)
            .i32(v.generation)
            .nullable_string(v.protocol.as_deref())
            .nullable_string(v.leader.as_deref())
            .i64(v.state_timestamp)
            .i32(v.members.len() as i32);
        for m in &v.members {
            w.string(&m.member_id)
                .nullable_string(m.group_instance_id.as_deref())
                .string(&m.client_id)
                .string(&m.client_host)
                .i32(m.rebalance_timeout_ms)
                .i32(m.session_timeout_ms)
                .bytes(&m.subscription)
                .bytes(&m.assignment);
        }
        Some(w.buf)
    }

    /// Decodes a group-metadata record; `None` for other keys or bytes that are not one.
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Option<GroupRecord> {
        let mut k = key;
        if k.remaining() < 2 || k.get_i16() != KEY_GROUP_METADATA {
            return None;
        }
        let group = get_str(&mut k)?;
        if k.has_remaining() {
            return None;
        }
        let value = match value {
            None => None,
            Some(v) => Some(decode_value(v).ok()?),
        };
        Some(GroupRecord { group, value })
    }
}

fn decode_value(v: &[u8]) -> Result<GroupMetadata, WireError> {
    let mut r = WireReader::new(v);
    if r.i16("group metadata version")? != VALUE_VERSION {
        return Err(WireError {
            what: "group metadata version",
            pos: 0,
        });
    }
    let protocol_type = r.string("protocol type")?;
    let generation = r.i32("generation")?;
    let protocol = r.nullable_string("protocol")?;
    let leader = r.nullable_string("leader")?;
    let state_timestamp = r.i64("state timestamp")?;
    // A member takes at least 24 bytes (four empty strings, two timeouts, two empty bytes).
    let n = r.count("members", 24)?.unwrap_or(0);
    let mut members = Vec::with_capacity(n);
    for _ in 0..n {
        members.push(StoredMember {
            member_id: r.string("member id")?,
            group_instance_id: r.nullable_string("group instance id")?,
            client_id: r.string("client id")?,
            client_host: r.string("client host")?,
            rebalance_timeout_ms: r.i32("rebalance timeout")?,
            session_timeout_ms: r.i32("session timeout")?,
            subscription: r.bytes("subscription")?,
            assignment: r.bytes("assignment")?,
        });
    }
    r.finish()?;
    Ok(GroupMetadata {
        protocol_type,
        generation,
        protocol,
        leader,
        state_timestamp,
        members,
    })
}

/// Restores a group from its stored state: Stable with its members (each with a fresh
/// session, as Kafka gives members of a loaded group), or Empty.
pub fn restore(meta: GroupMetadata) -> Group {
    let protocol = meta.protocol.clone().unwrap_or_default();
    let members: std::collections::BTreeMap<String, Member> = meta
        .members
        .into_iter()
        .map(|m| {
            let mut member = Member {
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                session_timeout_ms: m.session_timeout_ms,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                protocols: vec![(protocol.clone(), m.subscription)],
                assignment: m.assignment,
                join_waiter: None,
                sync_waiter: None,
                deadline: std::time::Instant::now(),
            };
            member.touch();
            (m.member_id, member)
        })
        .collect();
    let stable = !members.is_empty();
    Group {
        state: if stable { State::Stable } else { State::Empty },
        protocol_type: (!meta.protocol_type.is_empty()).then_some(meta.protocol_type),
        protocol: meta.protocol.filter(|_| stable),
        generation: meta.generation,
        leader: meta.leader.filter(|l| members.contains_key(l)),
        members,
        ..Group::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> GroupRecord {
        GroupRecord {
            group: "g".into(),
            value: Some(GroupMetadata {
                protocol_type: "consumer".into(),
                generation: 7,
                protocol: Some("range".into()),
                leader: Some("m1".into()),
                state_timestamp: 1_700_000_000_000,
                members: vec![StoredMember {
                    member_id: "m1".into(),
                    group_instance_id: None,
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: 300_000,
                    session_timeout_ms: 45_000,
                    subscription: Bytes::from_static(b"sub"),
                    assignment: Bytes::from_static(b"asg"),
                }],
            }),
        }
    }

    #[test]
    fn group_metadata_round_trips_in_kafkas_schema() {
        let rec = stored();
        assert_eq!(rec.key(), b"\x00\x02\x00\x01g");
        let value = rec.value().unwrap();
        assert_eq!(&value[..2], b"\x00\x03");
        assert_eq!(
            GroupRecord::decode(&rec.key(), Some(&value)),
            Some(rec.clone())
        );
        assert_eq!(
            GroupRecord::decode(&rec.key(), None),
            Some(GroupRecord::tombstone("g"))
        );
        // Truncated values, other key versions and a lying member count are refused.
        assert_eq!(GroupRecord::decode(&rec.key(), Some(&value[..20])), None);
        assert_eq!(GroupRecord::decode(b"\x00\x01\x00\x01g", None), None);
        let mut lying = value.clone();
        // version 2, "consumer" 10, generation 4, "range" 7, "m1" 4, timestamp 8.
        let count_at = 2 + 10 + 4 + 7 + 4 + 8;
        assert_eq!(&value[count_at..count_at + 4], &1i32.to_be_bytes());
        lying[count_at..count_at + 4].copy_from_slice(&1_000_000i32.to_be_bytes());
        assert_eq!(GroupRecord::decode(&rec.key(), Some(&lying)), None);
    }

    #[test]
    fn a_restored_group_is_stable_with_fresh_sessions_or_empty() {
        let Some(meta) = stored().value else {
            unreachable!()
        };
        let g = restore(meta.clone());
        assert_eq!((g.state, g.generation), (State::Stable, 7));
        assert_eq!(g.leader.as_deref(), Some("m1"));
        let m = &g.members["m1"];
        assert_eq!(m.metadata_for("range"), Bytes::from_static(b"sub"));
        assert_eq!(m.assignment, Bytes::from_static(b"asg"));
        assert!(m.deadline > std::time::Instant::now());
        // What a restored group stores again is what was stored.
        let again = GroupRecord::of("g", &g, meta.state_timestamp);
        assert_eq!(again.value.as_ref(), Some(&meta));
        let empty = restore(GroupMetadata {
            members: Vec::new(),
            leader: None,
            protocol: None,
            ..meta
        });
        assert_eq!((empty.state, empty.generation), (State::Empty, 7));
        assert!(empty.leader.is_none() && empty.members.is_empty());
    }
}
