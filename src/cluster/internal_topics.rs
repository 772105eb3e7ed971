//! The internal topics (`__consumer_offsets`, `__transaction_state`) in cluster mode: the
//! cluster's, replicated like any topic, created on first use as Kafka does. A node that
//! needs one and is not the controller writes a *wanted* key (the topic's partition count,
//! replication factor and configs from its settings); the controller creates every wanted
//! topic at its next heartbeat (at once when it asked itself) and removes the key. A
//! replication factor of 0 asks for min(3, live brokers) at that moment; any other waits
//! until that many brokers are live.

use serde_json::{json, Value};

use crate::cluster::controller::{create_topic, TopicRefused, TopicSpec};
use crate::cluster::etcd::{Etcd, KeyValue, Op};
use crate::cluster::{ClusterError, ClusterView, Keys};

/// The replicas an internal topic gets when its setting is 0 and enough brokers are live.
const DEFAULT_REPLICAS: usize = 3;

/// Asks for an internal topic: created now if this node is the controller, else left for
/// the controller in a wanted key.
pub async fn want(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    spec: TopicSpec,
) -> Result<(), TopicRefused> {
    assert!(crate::catalog::internal_topics::is_internal(&spec.name));
    if view.topics.contains_key(&spec.name) {
        return Ok(());
    }
    if view.controller.is_some_and(|c| c.id == me) {
        return create_wanted(etcd, keys, view, me, spec).await;
    }
    if !view.wanted.contains_key(&spec.name) {
        let put = Op::Put(keys.wanted(&spec.name), encode(&spec));
        etcd.txn(&[], &[put]).await?;
        tracing::info!(topic = %spec.name, "asked the controller for an internal topic");
    }
    Ok(())
}

/// On the controller, at each heartbeat: creates every wanted internal topic it can (the
/// others wait for more live brokers); how many it created.
pub async fn create_all_wanted(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
) -> Result<usize, ClusterError> {
    if view.controller.is_none_or(|c| c.id != me) {
        return Ok(0);
    }
    let mut created = 0;
    for spec in view.wanted.values() {
        match create_wanted(etcd, keys, view, me, spec.clone()).await {
            Ok(()) => created += 1,
            Err(TopicRefused::Cluster(e)) => return Err(e),
            Err(why) => {
                tracing::warn!(topic = %spec.name, %why, "an internal topic is not created yet (retried at the next heartbeat)")
            }
        }
    }
    Ok(created)
}

/// Creates a wanted internal topic (if it is not there yet) and removes its wanted key.
async fn create_wanted(
    etcd: &Etcd,
    keys: &Keys,
    view: &ClusterView,
    me: i32,
    mut spec: TopicSpec,
) -> Result<(), TopicRefused> {
    let name = spec.name.clone();
    if !view.topics.contains_key(&name) {
        if spec.replication_factor == 0 {
            spec.replication_factor = view.brokers.len().clamp(1, DEFAULT_REPLICAS);
        }
        let topic = create_topic(etcd, keys, view, me, spec).await?;
        let replicas = topic.partitions[0].state.replicas.len();
        tracing::info!(topic = %name, replicas, "created an internal topic in the cluster");
    }
    etcd.txn(&[], &[Op::Delete(keys.wanted(&name))]).await?;
    Ok(())
}

/// A wanted key's value.
fn encode(spec: &TopicSpec) -> Vec<u8> {
    let configs: Vec<Value> = spec.configs.iter().map(|(k, v)| json!([k, v])).collect();
    json!({
        "partitions": spec.partitions,
        "replication_factor": spec.replication_factor,
        "configs": configs,
    })
    .to_string()
    .into_bytes()
}

/// The wanted internal topic a key holds (None: not a wanted key, or unreadable).
pub fn decode(keys: &Keys, kv: &KeyValue) -> Option<TopicSpec> {
    let name = kv.key.strip_prefix(&keys.wanted(""))?;
    if !crate::catalog::internal_topics::is_internal(name) {
        return None;
    }
    let v: Value = serde_json::from_slice(&kv.value).ok()?;
    let pair = |p: &Value| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string()));
    let configs = v["configs"].as_array()?.iter().map(pair);
    Some(TopicSpec {
        name: name.to_string(),
        partitions: u32::try_from(v["partitions"].as_u64()?).ok()?,
        replication_factor: usize::try_from(v["replication_factor"].as_u64()?).ok()?,
        configs: configs.collect::<Option<_>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wanted_key_reads_back() {
        let keys = Keys::new("c");
        let spec = TopicSpec {
            name: "__consumer_offsets".into(),
            partitions: 50,
            replication_factor: 0,
            configs: vec![("cleanup.policy".into(), "compact".into())],
        };
        let kv = KeyValue {
            key: keys.wanted(&spec.name),
            value: encode(&spec),
            create_revision: 3,
            mod_revision: 3,
            lease: 0,
        };
        let back = decode(&keys, &kv).expect("readable");
        assert_eq!(
            (
                back.name,
                back.partitions,
                back.replication_factor,
                back.configs
            ),
            (spec.name, 50, 0, spec.configs)
        );
        let other = KeyValue {
            key: keys.wanted("orders"),
            ..kv
        };
        assert!(
            decode(&keys, &other).is_none(),
            "only internal topics are wanted"
        );
    }
}
