//! Broker-level defaults of topic configs: Kafka's dynamic broker configs `log.retention.ms`
//! & co, set with `kafka-configs --entity-type brokers --entity-default` (the cluster
//! default) or `--entity-name 0` (this broker, which wins over the cluster default). They
//! are the base every topic's own overrides apply on, so changing one changes every topic
//! that does not override it, live. Durable in `<data-dir>/__shardlog_meta/broker.properties`
//! (FORMAT.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::broker_error::BrokerError;
pub use crate::catalog::error::LoadError;
use crate::catalog::topics::{AdminError, META_DIR};
use crate::config::LogConfig;
use crate::io::storage::Storage;
use crate::protocol::ErrorCode;

/// (broker config, the topic config it is the default of), Kafka's names.
pub const BROKER_SYNONYMS: &[(&str, &str)] = &[
    ("log.segment.bytes", "segment.bytes"),
    ("log.roll.ms", "segment.ms"),
    ("log.index.size.max.bytes", "segment.index.bytes"),
    ("log.index.interval.bytes", "index.interval.bytes"),
    ("log.message.timestamp.type", "message.timestamp.type"),
    ("log.retention.ms", "retention.ms"),
    ("log.retention.bytes", "retention.bytes"),
    ("log.cleanup.policy", "cleanup.policy"),
    ("log.cleaner.delete.retention.ms", "delete.retention.ms"),
    (
        "log.cleaner.min.cleanable.ratio",
        "min.cleanable.dirty.ratio",
    ),
    ("log.cleaner.min.compaction.lag.ms", "min.compaction.lag.ms"),
    ("log.cleaner.max.compaction.lag.ms", "max.compaction.lag.ms"),
    ("log.segment.delete.delay.ms", "file.delete.delay.ms"),
    (
        "log.message.timestamp.before.max.ms",
        "message.timestamp.before.max.ms",
    ),
    (
        "log.message.timestamp.after.max.ms",
        "message.timestamp.after.max.ms",
    ),
    ("log.local.retention.ms", "local.retention.ms"),
    ("log.local.retention.bytes", "local.retention.bytes"),
    ("message.max.bytes", "max.message.bytes"),
    ("min.insync.replicas", "min.insync.replicas"),
    ("compression.type", "compression.type"),
    ("log.flush.interval.messages", "flush.messages"),
    ("log.flush.interval.ms", "flush.ms"),
    ("log.preallocate", "preallocate"),
    ("log.roll.jitter.ms", "segment.jitter.ms"),
    (
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
    ),
    (
        "log.message.downconversion.enable",
        "message.downconversion.enable",
    ),
];

/// Dynamic broker configs Kafka documents that configure nothing shardlog has (Kerberos:
/// GSSAPI is not offered), with Kafka's defaults: accepted when they parse as Kafka's
/// numbers, kept and described, so clients that set them (librdkafka's 0081) work.
pub const INERT_BROKER_KEYS: &[(&str, &str)] = &[
    ("sasl.kerberos.min.time.before.relogin", "60000"),
    ("sasl.kerberos.ticket.renew.jitter", "0.05"),
    ("sasl.kerberos.ticket.renew.window.factor", "0.8"),
];

fn inert_default(broker_key: &str) -> Option<&'static str> {
    INERT_BROKER_KEYS
        .iter()
        .find(|(k, _)| *k == broker_key)
        .map(|(_, v)| *v)
}

/// Which broker resource a dynamic config belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// `--entity-default`: resource name "".
    Cluster,
    /// `--entity-name 0`: this broker.
    Broker,
}

impl Scope {
    /// The scope a broker resource name stands for on broker `me` (its broker.id; 0 on a
    /// single node). Another broker's configs are that broker's to change.
    pub fn of_resource(name: &str, me: i32) -> Result<Scope, AdminError> {
        match name {
            "" => Ok(Scope::Cluster),
            id if id.parse() == Ok(me) => Ok(Scope::Broker),
            other => Err(BrokerError::new(
                ErrorCode::InvalidRequest,
                format!("unexpected broker id {other:?}: this broker is {me} (or \"\" for the cluster default); ask broker {other} itself"),
            )),
        }
    }
}

/// Dynamic broker configs that are no topic's default: replication throttles (Kafka's
/// leader/follower.replication.throttled.rate, bytes per second, what `kafka-reassign-partitions
/// --throttle` sets on the brokers of a move). They override the server's static value.
pub const THROTTLE_RATE_KEYS: [&str; 2] = [
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
];

/// A throttle rate as it is stored: bytes per second, at least 1.
pub fn parse_rate(key: &str, v: &str) -> Result<u64, AdminError> {
    let rate = v.trim().parse::<u64>().ok().filter(|&r| r >= 1);
    rate.ok_or_else(|| {
        invalid(
            key,
            "must be a whole number of bytes per second, at least 1",
        )
    })
}

/// The dynamic broker configs of both scopes, by broker config name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerDefaults {
    pub cluster: BTreeMap<String, String>,
    pub broker: BTreeMap<String, String>,
}

/// The topic config a broker config name is the default of.
pub fn topic_key_of(broker_key: &str) -> Option<&'static str> {
    BROKER_SYNONYMS
        .iter()
        .find(|(b, _)| *b == broker_key)
        .map(|(_, t)| *t)
}

/// The broker config name of a topic config.
pub fn broker_key_of(topic_key: &str) -> Option<&'static str> {
    BROKER_SYNONYMS
        .iter()
        .find(|(_, t)| *t == topic_key)
        .map(|(b, _)| *b)
}

impl BrokerDefaults {
    fn scope(&self, scope: Scope) -> &BTreeMap<String, String> {
        match scope {
            Scope::Cluster => &self.cluster,
            Scope::Broker => &self.broker,
        }
    }

    /// The value in force for a broker config and the scope it comes from (this broker's
    /// own value wins over the cluster default).
    pub fn get(&self, broker_key: &str) -> Option<(&str, Scope)> {
        let own = self
            .broker
            .get(broker_key)
            .map(|v| (v.as_str(), Scope::Broker));
        own.or_else(|| {
            self.cluster
                .get(broker_key)
                .map(|v| (v.as_str(), Scope::Cluster))
        })
    }

    /// Kafka's defaults with the dynamic broker configs applied: what a topic without
    /// overrides runs with.
    pub fn base(&self) -> Result<LogConfig, AdminError> {
        let mut log = LogConfig::default();
        for (broker_key, topic_key) in BROKER_SYNONYMS {
            if let Some((v, _)) = self.get(broker_key) {
                log.set(topic_key, v).map_err(|e| invalid(broker_key, e))?;
            }
        }
        log.validate().map_err(|e| invalid("broker defaults", e))?;
        Ok(log)
    }

    /// These defaults with `set` applied to `scope` and the keys in `delete` removed from it,
    /// validated (each key dynamic, each value valid, the whole base valid); `self` is
    /// unchanged when anything is refused.
    pub fn altered(
        &self,
        scope: Scope,
        set: &[(String, String)],
        delete: &[String],
    ) -> Result<Self, AdminError> {
        let mut next = self.clone();
        let map = match scope {
            Scope::Cluster => &mut next.cluster,
            Scope::Broker => &mut next.broker,
        };
        for k in delete {
            check_known(k)?;
            map.remove(k);
        }
        for (k, v) in set {
            match inert_default(k) {
                Some(_) if v.trim().parse::<f64>().is_ok_and(|n| n >= 0.0) => {}
                Some(_) => return Err(invalid(k, "must be a number >= 0")),
                None if THROTTLE_RATE_KEYS.contains(&k.as_str()) => {
                    parse_rate(k, v)?;
                }
                None => {
                    let topic_key = check_dynamic(k)?;
                    LogConfig::default()
                        .set(topic_key, v.trim())
                        .map_err(|e| invalid(k, e))?;
                }
            }
            map.insert(k.clone(), v.trim().to_string());
        }
        next.base()?;
        Ok(next)
    }

    /// These defaults with the cluster scope replaced (a cluster's shared value).
    pub fn with_cluster(&self, cluster: BTreeMap<String, String>) -> BrokerDefaults {
        BrokerDefaults {
            cluster,
            broker: self.broker.clone(),
        }
    }

    /// The cluster scope as a cluster shares it (etcd): the file's `cluster.` lines.
    pub fn cluster_text(&self) -> String {
        let text = BrokerDefaults::default()
            .with_cluster(self.cluster.clone())
            .encode();
        let read = Self::parse_cluster_text(&text).ok();
        assert_eq!(
            read.as_ref(),
            Some(&self.cluster),
            "the shared text reads back"
        );
        text
    }

    /// A cluster scope read back from [`Self::cluster_text`]; refused (nothing to use)
    /// when it has anything but known `cluster.` keys.
    pub fn parse_cluster_text(text: &str) -> Result<BTreeMap<String, String>, AdminError> {
        let read = Self::decode(text)?;
        match read.broker.is_empty() {
            true => Ok(read.cluster),
            false => Err(invalid("cluster defaults", "holds a broker. key")),
        }
    }

    /// The keys a scope sets (for the legacy AlterConfigs, which replaces them all).
    pub fn keys_of(&self, scope: Scope) -> Vec<String> {
        self.scope(scope).keys().cloned().collect()
    }

    fn encode(&self) -> String {
        let mut s = String::from(HEADER);
        s.push('\n');
        for (prefix, map) in [
            (CLUSTER_PREFIX, &self.cluster),
            (BROKER_PREFIX, &self.broker),
        ] {
            for (k, v) in map {
                s.push_str(&format!("{prefix}{k}={v}\n"));
            }
        }
        s
    }

    fn decode(text: &str) -> Result<Self, AdminError> {
        let pairs = crate::config::parse_properties(text).map_err(|e| invalid("file", e))?;
        let mut out = BrokerDefaults::default();
        for (k, v) in pairs {
            if let Some(k) = k.strip_prefix(CLUSTER_PREFIX) {
                out.cluster.insert(k.to_string(), v.to_string());
            } else if let Some(k) = k.strip_prefix(BROKER_PREFIX) {
                out.broker.insert(k.to_string(), v.to_string());
            } else {
                return Err(invalid(k, "not a cluster. or broker. key"));
            }
        }
        let keys = out.cluster.keys().chain(out.broker.keys());
        for k in keys {
            check_known(k)?;
        }
        out.base()?;
        Ok(out)
    }

    /// Reads the file; none means no dynamic configs.
    pub async fn load(storage: &dyn Storage, data_dir: &Path) -> Result<Self, LoadError> {
        let path = file_path(data_dir);
        if !storage.exists(&path) {
            return Ok(BrokerDefaults::default());
        }
        let fail = |why: String| LoadError {
            path: path.clone(),
            why,
        };
        let bytes = storage
            .read_file(&path)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| fail("not UTF-8".into()))?;
        Self::decode(&text).map_err(|e| fail(e.message()))
    }

    /// Writes the file atomically (the commit point of a broker config change).
    pub async fn persist(&self, storage: &dyn Storage, data_dir: &Path) -> std::io::Result<()> {
        let text = self.encode();
        assert!(Self::decode(&text).is_ok_and(|back| &back == self));
        storage.create_dir_all(&data_dir.join(META_DIR))?;
        storage
            .write_file_atomic(&file_path(data_dir), text.into_bytes())
            .await
    }
}

const HEADER: &str = "# shardlog dynamic broker configs v1";
const CLUSTER_PREFIX: &str = "cluster.";
const BROKER_PREFIX: &str = "broker.";

fn file_path(data_dir: &Path) -> PathBuf {
    data_dir.join(META_DIR).join("broker.properties")
}

fn invalid(key: &str, why: impl std::fmt::Display) -> AdminError {
    BrokerError::new(ErrorCode::InvalidConfig, format!("{key}: {why}"))
}

/// The topic config a dynamic broker config sets, or why it cannot be set at run time.
/// A dynamic broker config this server accepts: a topic config's default, or inert.
fn check_known(broker_key: &str) -> Result<(), AdminError> {
    let known = inert_default(broker_key).is_some() || THROTTLE_RATE_KEYS.contains(&broker_key);
    match known {
        true => Ok(()),
        false => check_dynamic(broker_key).map(|_| ()),
    }
}

fn check_dynamic(broker_key: &str) -> Result<&'static str, AdminError> {
    if let Some(topic_key) = topic_key_of(broker_key) {
        return Ok(topic_key);
    }

    let why = match crate::settings::keys::server_key(broker_key) {
        Ok(_) => "cannot be updated dynamically: set it in the server's config file and restart",
        Err(_) => "is not a broker config shardlog knows",
    };
    let dynamic: Vec<&str> = BROKER_SYNONYMS.iter().map(|(b, _)| *b).collect();
    Err(invalid(
        broker_key,
        format!("{why} (dynamic broker configs: {})", dynamic.join(", ")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clusters_shared_value_is_the_cluster_scope_only() {
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let d = BrokerDefaults::default()
            .altered(Scope::Cluster, &set("log.retention.ms", "1000"), &[])
            .unwrap()
            .altered(Scope::Broker, &set("log.segment.bytes", "1048576"), &[])
            .unwrap();
        let text = d.cluster_text();
        assert!(!text.contains("broker."), "{text}");
        let cluster = BrokerDefaults::parse_cluster_text(&text).unwrap();
        assert_eq!(cluster, d.cluster);
        let installed = BrokerDefaults::default().with_cluster(cluster);
        assert_eq!(
            installed.get("log.retention.ms"),
            Some(("1000", Scope::Cluster))
        );
        let foreign = "broker.log.retention.ms=5\n";
        assert!(BrokerDefaults::parse_cluster_text(foreign).is_err());
        assert!(BrokerDefaults::parse_cluster_text("cluster.num.partitions=3\n").is_err());
    }

    #[test]
    fn the_broker_value_wins_over_the_cluster_default_and_round_trips() {
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let d = BrokerDefaults::default()
            .altered(Scope::Cluster, &set("log.retention.ms", "1000"), &[])
            .unwrap()
            .altered(Scope::Broker, &set("log.retention.ms", "2000"), &[])
            .unwrap();
        assert_eq!(d.base().unwrap().retention_ms, 2000);
        assert_eq!(d.get("log.retention.ms"), Some(("2000", Scope::Broker)));
        let back = BrokerDefaults::decode(&d.encode()).unwrap();
        assert_eq!(back, d);
        let d = d
            .altered(Scope::Broker, &[], &["log.retention.ms".into()])
            .unwrap();
        assert_eq!(d.get("log.retention.ms"), Some(("1000", Scope::Cluster)));
    }

    #[test]
    fn static_unknown_and_invalid_keys_are_refused_with_the_reason() {
        let d = BrokerDefaults::default();
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let e = d
            .altered(Scope::Cluster, &set("num.partitions", "3"), &[])
            .unwrap_err();
        assert!(e.message().contains("cannot be updated dynamically"), "{e}");
        let e = d
            .altered(Scope::Cluster, &set("no.such", "3"), &[])
            .unwrap_err();
        assert!(e.message().contains("not a broker config"), "{e}");
        let e = d
            .altered(Scope::Cluster, &set("log.retention.ms", "soon"), &[])
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidConfig);
        assert!(Scope::of_resource("7", 0).is_err());
        assert_eq!(Scope::of_resource("7", 7).unwrap(), Scope::Broker);
        assert_eq!(Scope::of_resource("", 7).unwrap(), Scope::Cluster);
        let rate = "leader.replication.throttled.rate";
        let throttled = d
            .altered(Scope::Broker, &set(rate, "1048576"), &[])
            .unwrap();
        assert_eq!(throttled.get(rate), Some(("1048576", Scope::Broker)));
        for bad in ["0", "-5", "fast"] {
            let e = d.altered(Scope::Broker, &set(rate, bad), &[]).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidConfig, "{bad}: {e}");
        }
        // Every synonym names a real topic config.
        for (_, t) in BROKER_SYNONYMS {
            LogConfig::key(t).unwrap();
        }
    }
}
