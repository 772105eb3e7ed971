//! The cluster as one node sees it: the live brokers with their listeners and epochs, and
//! the controller with its epoch. Built from one etcd range (so it is one consistent
//! revision), immutable once built, and handed to every shard by value.

use serde_json::{json, Value};

use crate::cluster::etcd::KeyValue;
use crate::cluster::topics::ClusterTopic;
use crate::cluster::Keys;

/// A Kafka listener as other nodes and clients reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The listener's security protocol name (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    pub name: String,
    pub host: String,
    pub port: u16,
}

/// A live node's registration (its etcd key, held by its lease).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistration {
    pub id: i32,
    /// Grows with every registration of the id (the key's creation revision, KIP-380).
    pub epoch: i64,
    /// The data directory's id: a restart of the same node is told apart from another node
    /// that was given the same broker.id by mistake.
    pub directory: String,
    pub listeners: Vec<Endpoint>,
    /// The native protocol's address.
    pub native: String,
    /// The node is stopping (SIGTERM): the controller moves its leaderships to in-sync
    /// followers and takes it out of every ISR it is not the last member of (Kafka's
    /// controlled shutdown); it leads nothing new and joins no ISR.
    pub shutting_down: bool,
    /// Its rack (Kafka's broker.rack), if it has one.
    pub rack: Option<String>,
}

/// The controller and its epoch (the controller key's creation revision: a new election
/// always has a larger one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerInfo {
    pub id: i32,
    pub epoch: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterView {
    /// The etcd revision the view was read at.
    pub revision: i64,
    /// Live brokers, by id.
    pub brokers: Vec<BrokerRegistration>,
    pub controller: Option<ControllerInfo>,
    /// The cluster's topics, by name (complete ones only).
    pub topics: std::collections::BTreeMap<String, ClusterTopic>,
    /// Internal topics a node asked the controller for, by name.
    pub wanted: std::collections::BTreeMap<String, crate::cluster::TopicSpec>,
    /// The cluster's SCRAM credentials and ACLs, by name (`security.rs`).
    pub security: std::collections::BTreeMap<String, crate::cluster::security::StoredValue>,
    /// The cluster-wide dynamic broker configs, when set (`Keys::broker_defaults`).
    pub broker_defaults: Option<crate::cluster::security::StoredValue>,
}

impl BrokerRegistration {
    /// The value stored in the broker's key.
    pub fn encode(&self) -> Vec<u8> {
        let listeners: Vec<Value> = self
            .listeners
            .iter()
            .map(|l| json!({ "name": l.name, "host": l.host, "port": l.port }))
            .collect();
        let value = json!({
            "id": self.id,
            "directory": self.directory,
            "listeners": listeners,
            "native": self.native,
            "shutting_down": self.shutting_down,
            "rack": self.rack,
        });
        value.to_string().into_bytes()
    }

    /// A registration read back (the epoch is the key's creation revision).
    pub fn decode(kv: &KeyValue) -> Option<BrokerRegistration> {
        let v: Value = serde_json::from_slice(&kv.value).ok()?;
        let listeners = v["listeners"].as_array()?.iter().map(endpoint);
        Some(BrokerRegistration {
            id: i32::try_from(v["id"].as_i64()?).ok()?,
            epoch: kv.create_revision,
            directory: v["directory"].as_str()?.to_string(),
            listeners: listeners.collect::<Option<Vec<_>>>()?,
            native: v["native"].as_str().unwrap_or_default().to_string(),
            shutting_down: v["shutting_down"].as_bool().unwrap_or(false),
            rack: v["rack"].as_str().map(str::to_string),
        })
    }

    /// Where to reach it, for an error message.
    pub fn describe(&self) -> String {
        let listeners: Vec<String> = self
            .listeners
            .iter()
            .map(|l| format!("{}://{}:{}", l.name, l.host, l.port))
            .collect();
        format!("listeners {}, epoch {}", listeners.join(","), self.epoch)
    }
}

fn endpoint(v: &Value) -> Option<Endpoint> {
    Some(Endpoint {
        name: v["name"].as_str()?.to_string(),
        host: v["host"].as_str()?.to_string(),
        port: u16::try_from(v["port"].as_u64()?).ok()?,
    })
}

/// The controller key's value.
pub fn encode_controller(id: i32) -> Vec<u8> {
    json!({ "id": id }).to_string().into_bytes()
}

impl ClusterView {
    /// The view of every key under the cluster's root, read at `revision`. Keys it cannot
    /// read are skipped (and logged): one bad value never hides the rest of the cluster.
    pub fn from_keys(keys: &Keys, revision: i64, kvs: &[KeyValue]) -> ClusterView {
        let mut view = ClusterView {
            revision,
            ..ClusterView::default()
        };
        let brokers = keys.brokers();
        for kv in kvs {
            if kv.key.starts_with(&brokers) {
                match BrokerRegistration::decode(kv) {
                    Some(b) => view.brokers.push(b),
                    None => {
                        tracing::warn!(key = %kv.key, "an unreadable broker registration in etcd; skipped")
                    }
                }
            } else if kv.key == keys.controller() {
                let v: Option<Value> = serde_json::from_slice(&kv.value).ok();
                let id = v
                    .and_then(|v| v["id"].as_i64())
                    .and_then(|id| i32::try_from(id).ok());
                view.controller = id.map(|id| ControllerInfo {
                    id,
                    epoch: kv.create_revision,
                });
            }
        }
        let wanted = kvs.iter().filter(|kv| kv.key.starts_with(&keys.wanted("")));
        for spec in wanted.filter_map(|kv| crate::cluster::internal_topics::decode(keys, kv)) {
            view.wanted.insert(spec.name.clone(), spec);
        }
        view.brokers.sort_by_key(|b| b.id);
        view.topics = crate::cluster::topics::from_keys(keys, kvs);
        view.security = crate::cluster::security::from_keys(keys, kvs);
        view.broker_defaults =
            crate::cluster::security::one_from_keys(&keys.broker_defaults(), kvs);
        view
    }

    pub fn broker(&self, id: i32) -> Option<&BrokerRegistration> {
        self.brokers.iter().find(|b| b.id == id)
    }

    /// A live broker's epoch (None: not registered, so dead to the cluster).
    pub fn live_epoch(&self, id: i32) -> Option<i64> {
        self.broker(id).map(|b| b.epoch)
    }

    /// Whether a live broker is in controlled shutdown.
    pub fn shutting_down(&self, id: i32) -> bool {
        self.broker(id).is_some_and(|b| b.shutting_down)
    }

    /// Whether `broker` leads the partition in this view: named leader, and elected while
    /// registered as it is now (a restarted leader leads again only once re-elected).
    pub fn leads(&self, broker: i32, topic: &str, partition: u32) -> bool {
        self.leader_epoch_of(broker, topic, partition).is_some()
    }

    /// The leader epoch in which `broker` leads the partition, if it leads it (a live
    /// registration the leadership was given to).
    pub fn leader_epoch_of(&self, broker: i32, topic: &str, partition: u32) -> Option<i32> {
        let state = self
            .topics
            .get(topic)
            .and_then(|t| t.partitions.get(partition as usize))?;
        let leads = state.state.leader == Some(broker)
            && self.live_epoch(broker) == Some(state.state.leader_broker_epoch);
        leads.then_some(state.state.leader_epoch)
    }
}

/// The controller decides on the brokers of one view.
impl crate::replication::controller::Liveness for ClusterView {
    fn epoch(&self, node: i32) -> Option<i64> {
        self.live_epoch(node)
    }

    fn leaving(&self, node: i32) -> bool {
        self.shutting_down(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: Vec<u8>, create_revision: i64) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value,
            create_revision,
            mod_revision: create_revision,
            lease: 1,
        }
    }

    #[test]
    fn a_view_reads_brokers_and_the_controller_and_skips_what_it_cannot_read() {
        let keys = Keys::new("c");
        let b = |id: i32| BrokerRegistration {
            id,
            epoch: 0,
            directory: format!("d{id}"),
            listeners: vec![Endpoint {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9000 + id as u16,
            }],
            native: format!("127.0.0.1:{}", 8000 + id),
            shutting_down: id == 2,
            rack: (id == 1).then(|| "eu-1a".to_string()),
        };
        let kvs = [
            kv(&keys.broker(2), b(2).encode(), 12),
            kv(&keys.broker(1), b(1).encode(), 11),
            kv(&keys.broker(3), b"not json".to_vec(), 13),
            kv(&keys.controller(), encode_controller(2), 14),
        ];
        let view = ClusterView::from_keys(&keys, 20, &kvs);
        let ids: Vec<(i32, i64)> = view.brokers.iter().map(|b| (b.id, b.epoch)).collect();
        assert_eq!(ids, [(1, 11), (2, 12)]);
        assert_eq!(view.broker(1).unwrap().listeners, b(1).listeners);
        assert_eq!(view.controller, Some(ControllerInfo { id: 2, epoch: 14 }));
        assert_eq!(
            (view.shutting_down(1), view.shutting_down(2)),
            (false, true)
        );
        assert_eq!(view.revision, 20);
    }
}
