//! Topics as the cluster holds them in etcd: one key per topic (its id, partition count and
//! config overrides, written once at creation) and one key per partition (its replicas,
//! ISR, leader and epochs: KRaft's PartitionRecord), so a leader change or an ISR change is
//! a compare-and-swap on one small key. Records never go to etcd.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::catalog::topics::{parse_topic_id, topic_id_text};
use crate::cluster::etcd::KeyValue;
use crate::cluster::Keys;
use crate::replication::{NodeId, PartitionState};

/// A topic every node of the cluster serves the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterTopic {
    pub name: String,
    pub id: uuid::Uuid,
    /// The overrides it was created with, by name.
    pub configs: Vec<(String, String)>,
    /// Partition `p` is `partitions[p]`.
    pub partitions: Vec<ClusterPartition>,
    /// The etcd revision the topic key was last written at (the compare of a change).
    pub revision: i64,
}

/// One partition's state and the etcd revision it was read at (the compare of its next
/// change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterPartition {
    pub state: PartitionState,
    pub mod_revision: i64,
}

/// The topic key's value.
pub fn encode_topic(id: uuid::Uuid, partitions: u32, configs: &[(String, String)]) -> Vec<u8> {
    let configs: serde_json::Map<String, Value> = configs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({ "id": topic_id_text(id), "partitions": partitions, "configs": configs })
        .to_string()
        .into_bytes()
}

/// A partition key's value.
pub fn encode_partition(state: &PartitionState) -> Vec<u8> {
    assert!(
        state.leader.is_none_or(|l| state.isr.contains(&l)),
        "a leader outside the ISR is never written"
    );
    json!({
        "replicas": state.replicas,
        "isr": state.isr,
        "leader": state.leader.unwrap_or(-1),
        "leader_epoch": state.leader_epoch,
        "leader_broker_epoch": state.leader_broker_epoch,
        "partition_epoch": state.partition_epoch,
        "adding": state.adding,
        "removing": state.removing,
    })
    .to_string()
    .into_bytes()
}

fn decode_partition(value: &[u8]) -> Option<PartitionState> {
    let v: Value = serde_json::from_slice(value).ok()?;
    let ids = |field: &str| -> Option<Vec<NodeId>> {
        let list = v[field].as_array()?.iter();
        list.map(|n| NodeId::try_from(n.as_i64()?).ok()).collect()
    };
    let leader = i32::try_from(v["leader"].as_i64()?).ok()?;
    let state = PartitionState {
        replicas: ids("replicas")?,
        isr: ids("isr")?,
        leader: (leader >= 0).then_some(leader),
        leader_epoch: i32::try_from(v["leader_epoch"].as_i64()?).ok()?,
        leader_broker_epoch: v["leader_broker_epoch"].as_i64()?,
        partition_epoch: i32::try_from(v["partition_epoch"].as_i64()?).ok()?,
        // Absent before reassignment existed, and while none is under way.
        adding: ids("adding").unwrap_or_default(),
        removing: ids("removing").unwrap_or_default(),
    };
    let sane = state.leader.is_none_or(|l| state.isr.contains(&l)) && !state.replicas.is_empty();
    sane.then_some(state)
}

/// The topic key's parts: (id, partition count, configs).
type TopicValue = (uuid::Uuid, u32, Vec<(String, String)>);

fn decode_topic(value: &[u8]) -> Option<TopicValue> {
    let v: Value = serde_json::from_slice(value).ok()?;
    let id = parse_topic_id(v["id"].as_str()?)?;
    let partitions = u32::try_from(v["partitions"].as_u64()?).ok()?;
    let configs = v["configs"].as_object()?.iter();
    let configs = configs.map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())));
    Some((id, partitions, configs.collect::<Option<_>>()?))
}

/// The complete topics among `kvs` (a topic key and every one of its partition keys). A
/// topic key whose partitions are not all there is skipped: a create still under way, or
/// a controller that died between its writes (the next create of the name overwrites).
pub fn from_keys(keys: &Keys, kvs: &[KeyValue]) -> BTreeMap<String, ClusterTopic> {
    let mut states: BTreeMap<(&str, u32), ClusterPartition> = BTreeMap::new();
    let partitions = keys.partitions();
    for kv in kvs.iter().filter(|kv| kv.key.starts_with(&partitions)) {
        let rest = &kv.key[partitions.len()..];
        let parsed = rest.rsplit_once('/').and_then(|(topic, p)| {
            let state = decode_partition(&kv.value)?;
            Some(((topic, p.parse().ok()?), state))
        });
        match parsed {
            Some((at, state)) => {
                let mod_revision = kv.mod_revision;
                states.insert(
                    at,
                    ClusterPartition {
                        state,
                        mod_revision,
                    },
                );
            }
            None => tracing::warn!(key = %kv.key, "an unreadable partition state in etcd; skipped"),
        }
    }
    let prefix = keys.topics();
    let mut topics = BTreeMap::new();
    for kv in kvs.iter().filter(|kv| kv.key.starts_with(&prefix)) {
        let name = &kv.key[prefix.len()..];
        // A name becomes directory and file names on every node: one that no create would
        // accept (a key written by hand, say `../x`) is not served.
        if let Err(why) = crate::catalog::topics::validate_topic_name(name) {
            tracing::warn!(key = %kv.key, error = %why.message(), "a topic in etcd with a name no create accepts; skipped");
            continue;
        }
        let Some((id, count, configs)) = decode_topic(&kv.value) else {
            tracing::warn!(key = %kv.key, "an unreadable topic in etcd; skipped");
            continue;
        };
        let parts: Option<Vec<ClusterPartition>> = (0..count)
            .map(|p| states.get(&(name, p)).cloned())
            .collect();
        let Some(partitions) = parts else {
            tracing::debug!(
                topic = name,
                "a topic whose partitions are not all in etcd yet"
            );
            continue;
        };
        let topic = ClusterTopic {
            name: name.to_string(),
            id,
            configs,
            partitions,
            revision: kv.mod_revision,
        };
        topics.insert(name.to_string(), topic);
    }
    topics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: String, value: Vec<u8>, rev: i64) -> KeyValue {
        KeyValue {
            key,
            value,
            create_revision: rev,
            mod_revision: rev,
            lease: 0,
        }
    }

    fn state(leader: Option<NodeId>) -> PartitionState {
        PartitionState {
            replicas: vec![2, 3, 1],
            isr: vec![2],
            leader,
            leader_epoch: 3,
            leader_broker_epoch: 17,
            partition_epoch: 5,
            adding: vec![],
            removing: vec![],
        }
    }

    #[test]
    fn a_topic_is_read_back_only_with_all_its_partitions() {
        let keys = Keys::new("c");
        let id = crate::catalog::topics::new_topic_id();
        let configs = vec![("retention.ms".to_string(), "1000".to_string())];
        let kvs = [
            kv(keys.topic("t"), encode_topic(id, 2, &configs), 10),
            kv(
                keys.partition("t", 0),
                encode_partition(&state(Some(2))),
                11,
            ),
            kv(keys.partition("t", 1), encode_partition(&state(None)), 12),
            kv(keys.topic("half"), encode_topic(id, 2, &[]), 13),
            kv(
                keys.partition("half", 0),
                encode_partition(&state(None)),
                14,
            ),
            kv(keys.partition("t.x", 0), b"{bad".to_vec(), 15),
            // Written by hand: names no create accepts, with their partitions.
            kv(keys.topic("../up"), encode_topic(id, 1, &[]), 16),
            kv(
                keys.partition("../up", 0),
                encode_partition(&state(None)),
                17,
            ),
            kv(keys.topic("a/b"), encode_topic(id, 1, &[]), 18),
            kv(keys.partition("a/b", 0), encode_partition(&state(None)), 19),
        ];
        let topics = from_keys(&keys, &kvs);
        assert_eq!(topics.keys().collect::<Vec<_>>(), ["t"]);
        let t = &topics["t"];
        assert_eq!((t.id, t.configs.clone()), (id, configs));
        assert_eq!(t.partitions[0].state, state(Some(2)));
        assert_eq!(t.partitions[1].state.leader, None);
        assert_eq!(t.partitions[1].mod_revision, 12);
    }
}
