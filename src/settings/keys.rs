//! Every server setting is one row of [`SERVER_KEYS`]: its name, how to read it, how to
//! set it from text, and its own bounds, so a key cannot be parsed in one place and missed
//! in another. Defaults are `ServerConfig::default()` read through the table; rules that
//! relate several keys are in `ServerConfig::validate`. A test checks the table against the
//! README.

use std::fmt::{Debug, Display};
use std::ops::RangeBounds;
use std::path::PathBuf;

use crate::security::listeners::ClientAuth;
use crate::settings::cluster::RACK_AWARE_SELECTOR;
use crate::settings::{
    bad, parse_listen, parse_optional_listen, ServerConfig, SettingsError,
    MAX_INFLIGHT_LARGE_REQUESTS_PER_CONNECTION,
};

pub struct ServerKey {
    pub name: &'static str,
    pub get: fn(&ServerConfig) -> String,
    pub set: fn(&mut ServerConfig, &str) -> Result<(), SettingsError>,
    /// This key's own bounds.
    pub check: fn(&ServerConfig) -> Result<(), SettingsError>,
}

fn number<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, SettingsError> {
    v.parse()
        .map_err(|_| bad(key, format!("{v:?} is not a number")))
}

fn boolean(key: &str, v: &str) -> Result<bool, SettingsError> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(key, format!("{v:?} is not true or false"))),
    }
}

fn within<T: PartialOrd + Display, R: RangeBounds<T> + Debug>(
    key: &str,
    v: T,
    range: R,
) -> Result<(), SettingsError> {
    if range.contains(&v) {
        Ok(())
    } else {
        Err(bad(key, format!("{v} is outside {range:?}")))
    }
}

/// Kafka's `super.users`: principals separated by `;` (a DN may hold commas).
fn parse_super_users(v: &str) -> Result<Vec<String>, SettingsError> {
    let users: Vec<String> = v
        .split(';')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(String::from)
        .collect();
    match users.iter().find(|u| !u.contains(':')) {
        Some(u) => Err(bad(
            "super.users",
            format!("{u:?} is not a principal (User:NAME)"),
        )),
        None => Ok(users),
    }
}

fn unbounded(_: &ServerConfig) -> Result<(), SettingsError> {
    Ok(())
}

macro_rules! number_key {
    ($name:literal, $($field:ident).+, $range:expr) => {
        ServerKey {
            name: $name,
            get: |c| c.$($field).+.to_string(),
            set: |c, v| {
                c.$($field).+ = number($name, v)?;
                Ok(())
            },
            check: |c| within($name, c.$($field).+, $range),
        }
    };
}

macro_rules! boolean_key {
    ($name:literal, $($field:ident).+) => {
        ServerKey {
            name: $name,
            get: |c| c.$($field).+.to_string(),
            set: |c, v| {
                c.$($field).+ = boolean($name, v)?;
                Ok(())
            },
            check: unbounded,
        }
    };
}

/// A key whose value is kept as given, trimmed (a file path, a name); the rules that
/// relate it to other keys are checked with them.
macro_rules! text_key {
    ($name:literal, $($field:ident).+) => {
        ServerKey {
            name: $name,
            get: |c| c.$($field).+.clone(),
            set: |c, v| {
                c.$($field).+ = v.trim().to_string();
                Ok(())
            },
            check: unbounded,
        }
    };
}

const DAY_MS: u64 = 86_400_000;

pub const SERVER_KEYS: &[ServerKey] = &[
    ServerKey {
        name: "data.dir",
        get: |c| c.data_dir.display().to_string(),
        set: |c, v| {
            c.data_dir = PathBuf::from(v);
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "listen",
        get: |c| c.listen.to_string(),
        set: |c, v| {
            c.listen = parse_listen(v)?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "kafka.listen",
        get: |c| c.kafka_listen.map_or("off".to_string(), |a| a.to_string()),
        set: |c, v| {
            c.kafka_listen = parse_optional_listen(v)?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "listeners",
        get: |c| crate::security::listeners::format(&c.listeners),
        set: |c, v| {
            c.listeners =
                crate::security::listeners::parse(v).map_err(|e| bad("listeners", e.0))?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "sasl.enabled.mechanisms",
        get: |c| {
            let names: Vec<&str> = c.sasl_enabled_mechanisms.iter().map(|m| m.name()).collect();
            names.join(",")
        },
        set: |c, v| {
            c.sasl_enabled_mechanisms = v
                .split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(|m| {
                    crate::security::SaslMechanism::from_name(m).ok_or_else(|| {
                        bad(
                            "sasl.enabled.mechanisms",
                            format!("{m:?}: SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            Ok(())
        },
        check: |c| match c.sasl_enabled_mechanisms.is_empty() {
            true => Err(bad(
                "sasl.enabled.mechanisms",
                "needs at least one mechanism",
            )),
            false => Ok(()),
        },
    },
    boolean_key!("allow.insecure.listeners", allow_insecure_listeners),
    ServerKey {
        name: "metrics.security.protocol",
        get: |c| c.metrics_security_protocol.name().to_string(),
        set: |c, v| {
            use crate::security::SecurityProtocol::{Plaintext, Ssl};
            c.metrics_security_protocol = match v {
                "PLAINTEXT" => Plaintext,
                "SSL" => Ssl,
                other => {
                    let why = format!("{other:?}: PLAINTEXT (HTTP) or SSL (HTTPS)");
                    return Err(bad("metrics.security.protocol", why));
                }
            };
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "native.security.protocol",
        get: |c| c.native_security_protocol.name().to_string(),
        set: |c, v| {
            let protocol = crate::security::SecurityProtocol::ALL
                .into_iter()
                .find(|p| p.name() == v);
            c.native_security_protocol = protocol.ok_or_else(|| {
                bad(
                    "native.security.protocol",
                    format!("{v:?}: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
                )
            })?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "inter.broker.listener.name",
        get: |c| c.inter_broker.listener.name().to_string(),
        set: |c, v| {
            let all = crate::security::SecurityProtocol::ALL;
            let protocol = all.into_iter().find(|p| p.name() == v.trim());
            c.inter_broker.listener = protocol.ok_or_else(|| {
                let why = format!("{v:?}: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL");
                bad("inter.broker.listener.name", why)
            })?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "sasl.mechanism.inter.broker.protocol",
        get: |c| {
            c.inter_broker
                .sasl_mechanism
                .map_or("", |m| m.name())
                .to_string()
        },
        set: |c, v| {
            let v = v.trim();
            let mechanism = crate::security::SaslMechanism::from_name(v);
            c.inter_broker.sasl_mechanism = match (v.is_empty(), mechanism) {
                (true, _) => None,
                (false, Some(m)) => Some(m),
                (false, None) => {
                    let why = format!("{v:?}: SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN");
                    return Err(bad("sasl.mechanism.inter.broker.protocol", why));
                }
            };
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "sasl.jaas.config",
        get: |c| match c.inter_broker.login {
            Some(_) => crate::settings::inter_broker::HIDDEN.to_string(),
            None => String::new(),
        },
        set: |c, v| {
            c.inter_broker.login = crate::settings::inter_broker::parse_jaas(v)?;
            Ok(())
        },
        check: unbounded,
    },
    boolean_key!("authorizer.enable", authorizer.enabled),
    boolean_key!(
        "allow.everyone.if.no.acl.found",
        authorizer.allow_everyone_if_no_acl_found
    ),
    ServerKey {
        name: "super.users",
        get: |c| c.authorizer.super_users.join(";"),
        set: |c, v| {
            c.authorizer.super_users = parse_super_users(v)?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "ssl.keystore.location",
        get: |c| {
            c.ssl_keystore_location
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string())
        },
        set: |c, v| {
            c.ssl_keystore_location = (!v.is_empty()).then(|| PathBuf::from(v));
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "ssl.keystore.type",
        get: |_| "PEM".to_string(),
        set: |_, v| match v {
            "PEM" => Ok(()),
            other => Err(bad(
                "ssl.keystore.type",
                format!("{other:?}: only PEM (KIP-651)"),
            )),
        },
        check: unbounded,
    },
    ServerKey {
        name: "ssl.client.auth",
        get: |c| c.ssl_client_auth.name().to_string(),
        set: |c, v| {
            c.ssl_client_auth = ClientAuth::from_name(v).ok_or_else(|| {
                bad(
                    "ssl.client.auth",
                    format!("{v:?}: none, requested or required"),
                )
            })?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "ssl.truststore.location",
        get: |c| {
            c.ssl_truststore_location
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string())
        },
        set: |c, v| {
            c.ssl_truststore_location = (!v.is_empty()).then(|| PathBuf::from(v));
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "ssl.truststore.type",
        get: |_| "PEM".to_string(),
        set: |_, v| match v {
            "PEM" => Ok(()),
            other => Err(bad(
                "ssl.truststore.type",
                format!("{other:?}: only PEM (KIP-651)"),
            )),
        },
        check: unbounded,
    },
    ServerKey {
        name: "ssl.principal.mapping.rules",
        get: |c| c.ssl_principal_mapping_rules.clone(),
        set: |c, v| {
            crate::security::principal_mapping::PrincipalMapper::parse(v)
                .map_err(|e| bad("ssl.principal.mapping.rules", e))?;
            c.ssl_principal_mapping_rules = v.to_string();
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "metrics.listen",
        get: |c| {
            c.metrics_listen
                .map_or("off".to_string(), |a| a.to_string())
        },
        set: |c, v| {
            c.metrics_listen = parse_optional_listen(v)?;
            Ok(())
        },
        check: unbounded,
    },
    ServerKey {
        name: "advertised.host",
        get: |c| c.advertised_host.clone(),
        set: |c, v| {
            c.advertised_host = v.to_string();
            Ok(())
        },
        check: unbounded,
    },
    number_key!("shards", shards, 1..),
    ServerKey {
        name: "cluster.etcd.endpoints",
        get: |c| c.cluster.etcd_endpoints.clone(),
        set: |c, v| {
            c.cluster.etcd_endpoints = v.trim().to_string();
            Ok(())
        },
        check: |c| crate::settings::cluster::endpoints(&c.cluster.etcd_endpoints).map(|_| ()),
    },
    text_key!("cluster.etcd.ssl.ca.location", cluster.etcd_ca_location),
    text_key!(
        "cluster.etcd.ssl.certificate.location",
        cluster.etcd_certificate_location
    ),
    text_key!("cluster.etcd.ssl.key.location", cluster.etcd_key_location),
    ServerKey {
        name: "cluster.name",
        get: |c| c.cluster.name.clone(),
        set: |c, v| {
            c.cluster.name = v.trim().to_string();
            Ok(())
        },
        check: |c| crate::settings::cluster::check_name(&c.cluster.name),
    },
    number_key!("broker.id", cluster.broker_id, 0..=(i32::MAX - 1)),
    ServerKey {
        name: "broker.rack",
        get: |c| c.cluster.rack.clone(),
        set: |c, v| {
            c.cluster.rack = v.trim().to_string();
            Ok(())
        },
        check: |c| {
            let rack = &c.cluster.rack;
            match rack.len() <= 255 && !rack.chars().any(char::is_control) {
                true => Ok(()),
                false => Err(bad(
                    "broker.rack",
                    format!("{rack:?}: at most 255 characters, none a control character"),
                )),
            }
        },
    },
    ServerKey {
        name: "replica.selector.class",
        get: |c| match c.cluster.rack_aware_reads {
            true => RACK_AWARE_SELECTOR.to_string(),
            false => String::new(),
        },
        set: |c, v| {
            c.cluster.rack_aware_reads = match v.trim() {
                "" => false,
                RACK_AWARE_SELECTOR => true,
                other => {
                    return Err(bad(
                        "replica.selector.class",
                        format!("{other:?}: the one selector is {RACK_AWARE_SELECTOR} (empty: the leader serves)"),
                    ))
                }
            };
            Ok(())
        },
        check: unbounded,
    },
    // Kafka's KRaft name for the same id.
    number_key!("node.id", cluster.broker_id, 0..=(i32::MAX - 1)),
    number_key!(
        "broker.session.timeout.ms",
        cluster.session_timeout_ms,
        2_000..=DAY_MS
    ),
    number_key!(
        "broker.heartbeat.interval.ms",
        cluster.heartbeat_interval_ms,
        100..=DAY_MS
    ),
    number_key!(
        "replica.lag.time.max.ms",
        cluster.replica_lag_time_max_ms,
        100..=DAY_MS
    ),
    boolean_key!(
        "auto.leader.rebalance.enable",
        cluster.auto_leader_rebalance
    ),
    number_key!(
        "leader.imbalance.check.interval.seconds",
        cluster.leader_imbalance_check_interval_s,
        1..=86_400
    ),
    number_key!(
        "leader.imbalance.per.broker.percentage",
        cluster.leader_imbalance_per_broker_percentage,
        0..=100
    ),
    boolean_key!("controlled.shutdown.enable", cluster.controlled_shutdown),
    number_key!(
        "controlled.shutdown.max.retries",
        cluster.controlled_shutdown_max_retries,
        0..=1_000
    ),
    number_key!(
        "controlled.shutdown.retry.backoff.ms",
        cluster.controlled_shutdown_retry_backoff_ms,
        10..=DAY_MS
    ),
    number_key!(
        "leader.replication.throttled.rate",
        cluster.leader_replication_throttled_rate,
        1..=(i64::MAX as u64)
    ),
    number_key!(
        "follower.replication.throttled.rate",
        cluster.follower_replication_throttled_rate,
        1..=(i64::MAX as u64)
    ),
    ServerKey {
        name: "remote.storage.url",
        get: |c| c.remote_storage_url.clone(),
        set: |c, v| {
            c.remote_storage_url = v.to_string();
            Ok(())
        },
        check: |c| {
            let url = &c.remote_storage_url;
            let known = [
                "s3://", "s3a://", "gs://", "az://", "abfs://", "abfss://", "azure://", "file:///",
            ];
            match url.is_empty() || known.iter().any(|k| url.starts_with(k)) {
                true => Ok(()),
                false => Err(bad(
                    "remote.storage.url",
                    format!("{url:?}: use s3://BUCKET/PREFIX, gs://, az:// or file:///PATH"),
                )),
            }
        },
    },
    ServerKey {
        name: "remote.storage.endpoint",
        get: |c| c.remote_storage_endpoint.clone(),
        set: |c, v| {
            c.remote_storage_endpoint = v.to_string();
            Ok(())
        },
        check: unbounded,
    },
    number_key!(
        "remote.upload.interval.ms",
        remote_upload_interval_ms,
        100..=DAY_MS
    ),
    number_key!("remote.cache.bytes", remote_cache_bytes, (1 << 20)..),
    boolean_key!("remote.read.replica", remote_read_replica),
    number_key!(
        "connections.max.reauth.ms",
        connections_max_reauth_ms,
        0..=(i64::MAX as u64)
    ),
    number_key!("max.frame.bytes", max_frame_bytes, 1024..=(1 << 30)),
    number_key!(
        "max.inflight.bytes.per.connection",
        max_inflight_bytes_per_connection,
        1..
    ),
    number_key!(
        "max.inflight.large.requests.per.connection",
        max_inflight_large_requests_per_connection,
        1..=MAX_INFLIGHT_LARGE_REQUESTS_PER_CONNECTION
    ),
    number_key!("max.connections.per.shard", max_connections_per_shard, 1..),
    number_key!("max.connections", max_connections, 1..),
    number_key!("max.connections.per.ip", max_connections_per_ip, 1..),
    number_key!(
        "max.partitions.per.topic",
        max_partitions_per_topic,
        1..=100_000
    ),
    number_key!("io.memory.bytes", io_memory_bytes, ..),
    number_key!("cache.bytes", cache_bytes, ..=(1 << 40)),
    boolean_key!("allow.remote.admin", allow_remote_admin),
    boolean_key!("auto.create.topics.enable", auto_create_topics_enable),
    number_key!("num.partitions", num_partitions, 1..=100_000),
    number_key!(
        "default.replication.factor",
        default_replication_factor,
        1..=(i16::MAX as u32)
    ),
    boolean_key!("allow.drop.kernel.cache", allow_drop_kernel_cache),
    number_key!("shutdown.timeout.ms", shutdown_timeout_ms, ..),
    number_key!("spin.before.park.us", spin_before_park_us, ..=1_000_000),
    number_key!(
        "max.inflight.bytes.per.shard",
        max_inflight_bytes_per_shard,
        1..
    ),
    number_key!("max.open.files.per.shard", max_open_files_per_shard, 3..),
    number_key!(
        "connections.max.idle.ms",
        connections_max_idle_ms,
        100..=DAY_MS
    ),
    number_key!("request.timeout.ms", request_timeout_ms, 100..=DAY_MS),
    number_key!(
        "log.roll.min.interval.ms",
        log_roll_min_interval_ms,
        0..=DAY_MS as i64
    ),
    number_key!(
        "log.retention.check.interval.ms",
        log_retention_check_interval_ms,
        10..=DAY_MS
    ),
    number_key!(
        "log.cleaner.backoff.ms",
        log_cleaner_backoff_ms,
        10..=DAY_MS
    ),
    number_key!(
        "log.cleaner.dedupe.buffer.size",
        log_cleaner_dedupe_buffer_size,
        1024..
    ),
    number_key!(
        "log.cleaner.io.max.bytes.per.second",
        log_cleaner_io_max_bytes_per_second,
        ..
    ),
    number_key!(
        "producer.id.block.size",
        producer_id_block_size,
        1..=1_000_000
    ),
    number_key!(
        "offsets.topic.num.partitions",
        offsets_topic_num_partitions,
        1..=1000
    ),
    number_key!(
        "offsets.topic.replication.factor",
        cluster.offsets_topic_replication_factor,
        ..=(i16::MAX as u32)
    ),
    number_key!(
        "transaction.state.log.replication.factor",
        cluster.transaction_state_log_replication_factor,
        ..=(i16::MAX as u32)
    ),
    number_key!(
        "offset.metadata.max.bytes",
        offset_metadata_max_bytes,
        // The offsets log stores metadata as an int16-length string, as Kafka does.
        0..=32_767
    ),
    number_key!(
        "group.initial.rebalance.delay.ms",
        group_initial_rebalance_delay_ms,
        ..=300_000
    ),
    number_key!(
        "group.min.session.timeout.ms",
        group_min_session_timeout_ms,
        1..
    ),
    number_key!(
        "group.max.session.timeout.ms",
        group_max_session_timeout_ms,
        1..
    ),
    number_key!(
        "offsets.retention.minutes",
        offsets_retention_minutes,
        1..=(1 << 30)
    ),
    number_key!(
        "offsets.retention.check.interval.ms",
        offsets_retention_check_interval_ms,
        1..=DAY_MS
    ),
    number_key!(
        "transaction.state.log.num.partitions",
        transaction_state_log_num_partitions,
        1..=1000
    ),
    number_key!(
        "transaction.max.timeout.ms",
        transaction_max_timeout_ms,
        1..
    ),
    number_key!(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        transaction_abort_timed_out_transaction_cleanup_interval_ms,
        1..=DAY_MS
    ),
    number_key!(
        "transactional.id.expiration.ms",
        transactional_id_expiration_ms,
        1..=(i32::MAX as i64)
    ),
];

/// Keys an earlier version had: (old name, new name, what changed).
const RENAMED_KEYS: &[(&str, &str, &str)] = &[(
    "max.open.sealed.files.per.shard",
    "max.open.files.per.shard",
    "the pool now holds active segments' descriptors too; default 2000",
)];

/// The row of a key, or an error naming a renamed key's new name or listing the known ones.
pub fn server_key(name: &str) -> Result<&'static ServerKey, SettingsError> {
    if let Some(&(old, new, why)) = RENAMED_KEYS.iter().find(|(old, ..)| *old == name) {
        return Err(SettingsError::RenamedKey {
            old: old.to_string(),
            new,
            why,
        });
    }
    SERVER_KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
        let known: Vec<&str> = SERVER_KEYS.iter().map(|k| k.name).collect();
        SettingsError::UnknownKey {
            name: name.to_string(),
            known: known.join(", "),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator's documents (README and docs/) name every server key and topic config
    /// (a key nobody can find is a key nobody sets), and the server defaults
    /// pass their own bounds and survive a round trip through text.
    #[test]
    fn every_key_is_documented_bounded_and_round_trips() {
        let readme = [
            include_str!("../../README.md"),
            include_str!("../../docs/operations.md"),
            include_str!("../../docs/lifecycle.md"),
            include_str!("../../docs/security.md"),
            include_str!("../../docs/tiered-storage.md"),
            include_str!("../../docs/kafka.md"),
            include_str!("../../docs/cluster.md"),
        ]
        .concat();
        let defaults = ServerConfig::default();
        for key in SERVER_KEYS {
            assert!(
                readme.contains(&format!("`{}`", key.name)),
                "neither README nor docs/ documents server key {}",
                key.name
            );
            (key.check)(&defaults).unwrap_or_else(|e| panic!("default of {}: {e}", key.name));
            let mut copy = defaults.clone();
            (key.set)(&mut copy, &(key.get)(&defaults)).unwrap();
            assert_eq!(copy, defaults, "{} does not round trip", key.name);
        }
        for key in crate::config::TOPIC_KEYS {
            assert!(
                readme.contains(&format!("`{}`", key.name)),
                "neither README nor docs/ documents topic config {}",
                key.name
            );
        }
        let mut names: Vec<&str> = SERVER_KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SERVER_KEYS.len(), "a key is listed twice");
    }

    #[test]
    fn the_replica_selector_is_kafkas_rack_aware_one_or_none() {
        let key = server_key("replica.selector.class").unwrap();
        let mut c = ServerConfig::default();
        (key.set)(&mut c, RACK_AWARE_SELECTOR).unwrap();
        assert!(c.cluster.rack_aware_reads);
        (key.set)(&mut c, " ").unwrap();
        assert!(!c.cluster.rack_aware_reads);
        let e = (key.set)(&mut c, "com.example.Nearest")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("com.example.Nearest") && e.contains(RACK_AWARE_SELECTOR),
            "{e}"
        );
        assert!(
            !c.cluster.rack_aware_reads,
            "a refused value changes nothing"
        );
    }

    #[test]
    fn a_renamed_key_names_its_new_name() {
        let e = server_key("max.open.sealed.files.per.shard").err().unwrap();
        assert!(
            e.to_string()
                .contains("is now \"max.open.files.per.shard\""),
            "{e}"
        );
        assert!(RENAMED_KEYS
            .iter()
            .all(|(_, new, _)| server_key(new).is_ok()));
    }
}
