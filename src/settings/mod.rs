//! Server settings: defaults, an optional `key=value` file, and command-line overrides, with
//! every client-facing bound checked in one place.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

pub mod cluster;
pub mod inter_broker;
pub mod keys;
mod listener_security;

use crate::protocol::DEFAULT_MAX_FRAME_BYTES;
use keys::{server_key, SERVER_KEYS};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    /// Shared address every shard listens on (SO_REUSEPORT). Shard i also listens on
    /// `port + 1 + i`.
    pub listen: SocketAddr,
    pub shards: usize,
    /// Largest request frame accepted; larger ones are refused unread.
    pub max_frame_bytes: usize,
    /// Request bytes one connection may have in flight before the server stops reading it.
    pub max_inflight_bytes_per_connection: usize,
    /// Requests over 64 KiB (produces of large batches) one connection may have read and
    /// not yet answered; the server reads the next when one is done, so a client that
    /// pipelines deeply (or never waits, as acks=0) queues its batches in its own socket,
    /// not in a partition's queue in front of other clients' requests.
    pub max_inflight_large_requests_per_connection: usize,
    pub max_connections_per_shard: usize,
    /// Kafka's `max.connections`: a listener's connections on the whole node, split across
    /// the shards (per listener with `listener.name.<name>.max.connections`).
    pub max_connections: usize,
    /// Connections one peer address may hold on one listener (Kafka's
    /// max.connections.per.ip), split evenly across the shards.
    pub max_connections_per_ip: usize,
    pub max_partitions_per_topic: u32,
    /// auto.create.topics.enable: a Kafka Metadata request that names an unknown topic
    /// (and allows it) creates it, with `num_partitions` partitions.
    pub auto_create_topics_enable: bool,
    /// num.partitions: partitions of an auto-created topic, and of a CreateTopics with -1.
    pub num_partitions: u32,
    /// default.replication.factor: the replicas of a topic created without a factor (or
    /// auto-created); above 1 only in cluster mode.
    pub default_replication_factor: u32,
    /// Memory glommio registers for I/O buffers per shard.
    pub io_memory_bytes: usize,
    /// Budget of each shard's read cache of `.log` and index pages.
    pub cache_bytes: u64,
    /// Let DropCaches come from other hosts than loopback.
    pub allow_remote_admin: bool,
    /// Time allowed for in-flight requests to finish at shutdown.
    pub shutdown_timeout_ms: u64,
    /// How long a shard polls its rings after its last task before parking in the kernel
    /// (0 = park at once). Longer than the default trades CPU after each burst of work for
    /// wake-up latency: worth it on dedicated cores when latency matters more than CPU per GB.
    pub spin_before_park_us: u64,
    /// Request and reply bytes all connections of one shard may hold at once (requests
    /// being read or run, replies not yet written). Bounds memory under slow readers.
    pub max_inflight_bytes_per_shard: usize,
    /// Segment files (active and sealed .log, .index, .timeindex) a shard keeps open; the
    /// least recently used are closed and reopened on demand.
    pub max_open_files_per_shard: usize,
    /// A connection with no request for this long is closed (Kafka's connections.max.idle.ms).
    pub connections_max_idle_ms: u64,
    /// KIP-368: a SASL session lasts this long; then the client re-authenticates on the
    /// live connection or the connection is closed at its next request (0: for ever).
    pub connections_max_reauth_ms: u64,
    /// Once a frame has started, its rest must arrive within this; and a reply must be
    /// taken by the client within it. Otherwise the connection is closed.
    pub request_timeout_ms: u64,
    /// Host put in Metadata replies; empty: the address the client connected to.
    pub advertised_host: String,
    /// Let DropCaches also drop the whole host's kernel page cache (as root). Off by
    /// default: it affects every process on the machine.
    pub allow_drop_kernel_cache: bool,
    /// A partition rolls on segment.ms (client timestamps) at most once per this many ms.
    pub log_roll_min_interval_ms: i64,
    /// Retention runs on every partition this often (Kafka's
    /// log.retention.check.interval.ms).
    pub log_retention_check_interval_ms: u64,
    /// How often each shard looks for a log due for cleaning (log.cleaner.backoff.ms).
    pub log_cleaner_backoff_ms: u64,
    /// Memory for the cleaner's key map, per shard (log.cleaner.dedupe.buffer.size).
    pub log_cleaner_dedupe_buffer_size: usize,
    /// Bytes per second the cleaner of one shard reads plus writes (0: unlimited). Kafka's
    /// default is unlimited; shardlog's 64 MiB/s keeps the p99 of requests on the shard
    /// within ~1.5x while it cleans (benches/lifecycle.rs), as the fdatasyncs of cleaned
    /// segments otherwise stall the device for the shard's other I/O.
    pub log_cleaner_io_max_bytes_per_second: u64,
    /// Address of the Kafka-protocol listener (every shard accepts on it); `None`: off.
    /// On at 127.0.0.1:9092 by default; embedded servers (tests, benches) turn it off so
    /// that several can run at once.
    pub kafka_listen: Option<SocketAddr>,
    /// Kafka's `listeners`: each Kafka listener's security protocol and address. When set,
    /// it replaces `kafka.listen` (which is one PLAINTEXT listener).
    pub listeners: Vec<crate::security::KafkaListener>,
    /// The SASL mechanisms SASL listeners offer (Kafka's sasl.enabled.mechanisms).
    pub sasl_enabled_mechanisms: Vec<crate::security::SaslMechanism>,
    /// Let a listener without encryption (PLAINTEXT, SASL_PLAINTEXT, the native protocol)
    /// bind a non-loopback address. Off by default: the operator must mean it.
    pub allow_insecure_listeners: bool,
    /// Kafka's authorizer: `authorizer.enable`, `super.users`, `allow.everyone.if.no.acl.found`.
    pub authorizer: crate::security::authorizer::AuthorizerConfig,
    /// Kafka's ssl.client.auth (TLS listeners): none, requested or required.
    pub ssl_client_auth: crate::security::listeners::ClientAuth,
    /// PEM file with the CAs that sign client certificates (ssl.client.auth).
    pub ssl_truststore_location: Option<PathBuf>,
    /// How a client certificate's DN becomes its principal (KIP-371).
    pub ssl_principal_mapping_rules: String,
    /// Kafka's `listener.name.<name>.<key>`: (listener name, key, value), applied over the
    /// server-wide value for that listener only.
    pub listener_overrides: Vec<(String, String, String)>,
    /// The native listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
    /// with the same TLS and SASL keys as the Kafka listeners (`listener.name.native.`).
    pub native_security_protocol: crate::security::SecurityProtocol,
    /// The metrics endpoint's: PLAINTEXT (HTTP) or SSL (HTTPS; `listener.name.metrics.`).
    pub metrics_security_protocol: crate::security::SecurityProtocol,
    /// How this node reaches the other nodes (cluster mode): `inter.broker.listener.name`,
    /// `sasl.mechanism.inter.broker.protocol`, `sasl.jaas.config`.
    pub inter_broker: inter_broker::InterBroker,
    /// PEM file with the TLS listeners' certificate chain (leaf first) and private key
    /// (Kafka's ssl.keystore.location with ssl.keystore.type=PEM, KIP-651).
    pub ssl_keystore_location: Option<PathBuf>,
    /// Address of the Prometheus endpoint (`GET /metrics`, served by shard 0); `None`: off,
    /// the default.
    pub metrics_listen: Option<SocketAddr>,
    /// Producer ids InitProducerId reserves per persisted block (Kafka hands them out in
    /// blocks of 1000 too): one file write per block, never a reuse after a restart.
    pub producer_id_block_size: i64,
    /// Partitions of `__consumer_offsets`, fixed when it is created on first group use
    /// (Kafka's offsets.topic.num.partitions).
    pub offsets_topic_num_partitions: i32,
    /// Longest metadata string a committed offset may carry (Kafka's
    /// offset.metadata.max.bytes); longer ones are refused with OFFSET_METADATA_TOO_LARGE.
    pub offset_metadata_max_bytes: usize,
    /// How long a group's first join phase waits for more members (Kafka's
    /// group.initial.rebalance.delay.ms).
    pub group_initial_rebalance_delay_ms: u64,
    /// Session timeouts members may ask for (Kafka's group.min/max.session.timeout.ms).
    pub group_min_session_timeout_ms: i32,
    pub group_max_session_timeout_ms: i32,
    /// Committed offsets of a group without members expire this long after their commit
    /// (Kafka's offsets.retention.minutes, 7 days); offsets of deleted topics go at once.
    pub offsets_retention_minutes: u64,
    /// How often each coordinator shard looks for expired offsets.
    pub offsets_retention_check_interval_ms: u64,
    /// Partitions of `__transaction_state`, fixed when it is created on first
    /// transactional use (Kafka's transaction.state.log.num.partitions).
    pub transaction_state_log_num_partitions: i32,
    /// Longest transaction timeout a producer may ask for (Kafka's
    /// transaction.max.timeout.ms); longer ones get INVALID_TRANSACTION_TIMEOUT.
    pub transaction_max_timeout_ms: i32,
    /// How often each coordinator shard aborts transactions past their timeout (Kafka's
    /// transaction.abort.timed.out.transaction.cleanup.interval.ms).
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: u64,
    /// A transactional id idle this long with no open transaction is forgotten (Kafka's
    /// transactional.id.expiration.ms, 7 days): the coordinators' state stays bounded.
    pub transactional_id_expiration_ms: i64,
    /// Cluster mode: etcd, this node's id and its session (off without etcd endpoints).
    pub cluster: cluster::ClusterSettings,
    /// Tiered storage: where sealed segments of tiered topics go (`s3://BUCKET/PREFIX`,
    /// `gs://...`, `az://...`, `file:///PATH`); empty: tiering is off.
    pub remote_storage_url: String,
    /// An S3-compatible store's endpoint (MinIO, Ceph RGW, ...); empty: the provider's.
    pub remote_storage_endpoint: String,
    /// How often each shard copies newly sealed segments and applies remote retention.
    pub remote_upload_interval_ms: u64,
    /// Memory for remote chunks and indexes, split between the shards.
    pub remote_cache_bytes: u64,
    /// Serve the tiered topics found in the bucket, read-only (Kafka clients may fetch and
    /// look up offsets; produce is refused).
    pub remote_read_replica: bool,
}

/// The default `spin.before.park.us`: longer than an awake wait's re-check timer
/// (`io::awake`), so a shard waiting awake for a read or a small flush polls its rings in
/// between instead of parking for a microsecond each time (an expedited membarrier and an
/// `io_uring_enter` sleep per re-check); short enough that a write stream's CPU per GB does
/// not move.
pub const DEFAULT_SPIN_BEFORE_PARK_US: u64 = 10;
const _: () =
    assert!(DEFAULT_SPIN_BEFORE_PARK_US as u128 * 1000 > crate::io::awake::RECHECK.as_nanos());

/// The default `max.inflight.large.requests.per.connection`: enough 1 MB batches in progress
/// to keep the device busy (group commit, chunk writes in flight), few enough that a
/// connection that never waits (acks=0) queues about as much in front of other clients of a
/// partition as an acks=1 producer pipelining 8 (milliseconds, not the 90 ms its 64 MiB of
/// byte budget allow). Smaller requests are bounded by the connection's 1 MiB small
/// allowance instead, so pipelined small produces still share flushes.
pub const DEFAULT_MAX_INFLIGHT_LARGE_REQUESTS_PER_CONNECTION: usize = 4;
/// Its largest value.
pub const MAX_INFLIGHT_LARGE_REQUESTS_PER_CONNECTION: usize = 1024;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("./data"),
            listen: SocketAddr::from(([127, 0, 0, 1], 7411)),
            kafka_listen: Some(SocketAddr::from(([127, 0, 0, 1], 9092))),
            listeners: Vec::new(),
            sasl_enabled_mechanisms: vec![
                crate::security::SaslMechanism::Scram(crate::security::scram::Mechanism::Sha256),
                crate::security::SaslMechanism::Scram(crate::security::scram::Mechanism::Sha512),
            ],
            allow_insecure_listeners: false,
            authorizer: Default::default(),
            ssl_client_auth: Default::default(),
            ssl_truststore_location: None,
            ssl_principal_mapping_rules: "DEFAULT".to_string(),
            listener_overrides: Vec::new(),
            native_security_protocol: crate::security::SecurityProtocol::Plaintext,
            metrics_security_protocol: crate::security::SecurityProtocol::Plaintext,
            inter_broker: Default::default(),
            ssl_keystore_location: None,
            metrics_listen: None,
            producer_id_block_size: 1000,
            offsets_topic_num_partitions: 50,
            offset_metadata_max_bytes: 4096,
            group_initial_rebalance_delay_ms: 3000,
            group_min_session_timeout_ms: 6000,
            group_max_session_timeout_ms: 1_800_000,
            offsets_retention_minutes: 10_080,
            offsets_retention_check_interval_ms: 600_000,
            transaction_state_log_num_partitions: 50,
            transaction_max_timeout_ms: 900_000,
            transaction_abort_timed_out_transaction_cleanup_interval_ms: 10_000,
            transactional_id_expiration_ms: 604_800_000,
            cluster: cluster::ClusterSettings::default(),
            remote_storage_url: String::new(),
            remote_storage_endpoint: String::new(),
            remote_upload_interval_ms: 30_000,
            remote_cache_bytes: 256 << 20,
            remote_read_replica: false,
            shards: available_cpus(),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_inflight_bytes_per_connection: 64 << 20,
            max_inflight_large_requests_per_connection:
                DEFAULT_MAX_INFLIGHT_LARGE_REQUESTS_PER_CONNECTION,
            max_connections_per_shard: 1024,
            max_connections: i32::MAX as usize,
            max_connections_per_ip: 1000,
            max_partitions_per_topic: 1024,
            auto_create_topics_enable: true,
            num_partitions: 1,
            default_replication_factor: 1,
            io_memory_bytes: 10 << 20,
            cache_bytes: 256 << 20,
            allow_remote_admin: false,
            shutdown_timeout_ms: 10_000,
            spin_before_park_us: DEFAULT_SPIN_BEFORE_PARK_US,
            max_inflight_bytes_per_shard: 256 << 20,
            max_open_files_per_shard: 2000,
            connections_max_idle_ms: 600_000,
            connections_max_reauth_ms: 0,
            request_timeout_ms: 30_000,
            advertised_host: String::new(),
            allow_drop_kernel_cache: false,
            log_roll_min_interval_ms: 1000,
            log_retention_check_interval_ms: 300_000,
            log_cleaner_backoff_ms: 15_000,
            log_cleaner_dedupe_buffer_size: 128 << 20,
            log_cleaner_io_max_bytes_per_second: 64 << 20,
        }
    }
}

/// Why a setting cannot be taken (the command line prints it as is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A key's value, alone or with the keys it relates to, is not allowed.
    #[error("config {key}: {why}")]
    Invalid { key: String, why: String },
    #[error("unknown server config key {name:?}; known: {known}")]
    UnknownKey { name: String, known: String },
    /// A key an earlier version had, under its new name.
    #[error("server config key {old:?} is now {new:?} ({why})")]
    RenamedKey {
        old: String,
        new: &'static str,
        why: &'static str,
    },
    #[error("cannot read config file {path}: {why}")]
    Unreadable { path: String, why: String },
    #[error("{path}: {why}")]
    Malformed { path: String, why: String },
}

/// The CLI edge reports settings errors as text.
impl From<SettingsError> for String {
    fn from(e: SettingsError) -> String {
        e.to_string()
    }
}

pub(super) fn bad(key: &str, why: impl std::fmt::Display) -> SettingsError {
    SettingsError::Invalid {
        key: key.to_string(),
        why: why.to_string(),
    }
}

impl ServerConfig {
    /// Every server key with its value in force and whether it differs from the default
    /// (Kafka's DescribeConfigs of a broker: static config or default).
    pub fn described(&self) -> Vec<(&'static str, String, bool)> {
        let defaults = ServerConfig::default();
        let described: Vec<_> = SERVER_KEYS
            .iter()
            .map(|k| {
                let value = (k.get)(self);
                let changed = value != (k.get)(&defaults);
                (k.name, value, changed)
            })
            .collect();
        assert_eq!(
            described.len(),
            SERVER_KEYS.len(),
            "every key described once"
        );
        described
    }

    /// Applies a `key=value` file (`#` comments); the keys are `SERVER_KEYS`'s.
    pub fn apply_file(&mut self, path: &Path) -> Result<(), SettingsError> {
        let shown = || path.display().to_string();
        let text = crate::io::os::read_text(path).map_err(|e| SettingsError::Unreadable {
            path: shown(),
            why: e.to_string(),
        })?;
        let pairs =
            crate::config::parse_properties(&text).map_err(|e| SettingsError::Malformed {
                path: shown(),
                why: e.to_string(),
            })?;
        for (k, v) in pairs {
            self.set(k, v)?;
        }
        Ok(())
    }

    pub fn set(&mut self, key: &str, v: &str) -> Result<(), SettingsError> {
        if let Some(rest) = key.strip_prefix(listener_security::PREFIX) {
            return self.set_listener_key(rest, v);
        }
        let row = server_key(key)?;
        assert_eq!(row.name, key, "a key sets its own row");
        (row.set)(self, v)
    }

    /// Every key's own bounds (`SERVER_KEYS`), then the rules that relate keys.
    pub fn validate(&self) -> Result<(), SettingsError> {
        for key in SERVER_KEYS {
            (key.check)(self)?;
        }
        self.validate_relations()
    }

    /// Rules that relate keys, and the one bound that depends on the machine.
    fn validate_relations(&self) -> Result<(), SettingsError> {
        let cpus = available_cpus();
        if self.shards > cpus {
            return Err(bad(
                "shards",
                format!("{} must be between 1 and the {cpus} available CPUs (one pinned executor per CPU)", self.shards),
            ));
        }
        self.cluster.check_heartbeat()?;
        self.cluster.check_etcd_tls()?;
        if !self.cluster.enabled() && self.default_replication_factor > 1 {
            return Err(bad(
                "default.replication.factor",
                format!(
                    "{} needs cluster mode (cluster.etcd.endpoints): one node holds one replica",
                    self.default_replication_factor
                ),
            ));
        }
        if self.remote_read_replica && self.remote_storage_url.is_empty() {
            return Err(bad(
                "remote.read.replica",
                "needs remote.storage.url (the bucket to read)",
            ));
        }
        if self.num_partitions > self.max_partitions_per_topic {
            return Err(bad(
                "num.partitions",
                "must be at most max.partitions.per.topic",
            ));
        }
        if self.max_inflight_bytes_per_connection < self.max_frame_bytes {
            return Err(bad(
                "max.inflight.bytes.per.connection",
                "must be at least max.frame.bytes",
            ));
        }
        if self.max_inflight_bytes_per_shard < self.max_inflight_bytes_per_connection {
            return Err(bad(
                "max.inflight.bytes.per.shard",
                "must be at least max.inflight.bytes.per.connection",
            ));
        }
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms {
            return Err(bad(
                "group.max.session.timeout.ms",
                "must be at least group.min.session.timeout.ms",
            ));
        }
        self.validate_ports()
    }

    /// The Kafka port is none of the native ones, and the per-shard ports fit above
    /// `listen`'s.
    fn validate_ports(&self) -> Result<(), SettingsError> {
        // First: the other checks list the per-shard ports, which must exist.
        let last_port = self.listen.port() as usize + self.shards;
        if self.listen.port() == 0 || last_port > u16::MAX as usize {
            return Err(bad(
                "listen",
                "needs a fixed port with room for one port per shard above it",
            ));
        }
        for k in self.kafka_listeners() {
            if self.listen_addrs()[..=self.shards]
                .iter()
                .any(|a| a.port() == k.addr.port())
            {
                return Err(bad(
                    self.kafka_listeners_key(),
                    format!(
                        "port {} is one of the native listener's ports",
                        k.addr.port()
                    ),
                ));
            }
        }
        self.validate_listener_security()?;
        self.validate_inter_broker()?;
        if let Some(m) = self.metrics_listen {
            let taken = self.listen_addrs();
            if taken[..taken.len() - 1]
                .iter()
                .any(|a| a.port() == m.port())
            {
                return Err(bad(
                    "metrics.listen",
                    format!("port {} is one of the other listeners' ports", m.port()),
                ));
            }
        }
        Ok(())
    }

    /// Every address the server listens on: the shared one, then each shard's own, then
    /// the Kafka listeners', then the metrics endpoint's.
    pub fn listen_addrs(&self) -> Vec<SocketAddr> {
        let addrs: Vec<SocketAddr> = std::iter::once(self.listen)
            .chain((0..self.shards).map(|i| SocketAddr::new(self.listen.ip(), self.shard_port(i))))
            .chain(self.kafka_listeners().into_iter().map(|l| l.addr))
            .chain(self.metrics_listen)
            .collect();
        assert_eq!(addrs[0], self.listen, "the shared address comes first");
        // The shared port and the shards' come first, in order: callers slice by position.
        assert!(
            addrs.len() > self.shards,
            "every shard has a listen address"
        );
        addrs
    }

    /// The Kafka listeners: `listeners` when set, else `kafka.listen` as one PLAINTEXT one.
    pub fn kafka_listeners(&self) -> Vec<crate::security::KafkaListener> {
        if !self.listeners.is_empty() {
            return self.listeners.clone();
        }
        self.kafka_listen
            .map(|addr| crate::security::KafkaListener {
                protocol: crate::security::SecurityProtocol::Plaintext,
                addr,
            })
            .into_iter()
            .collect()
    }

    fn kafka_listeners_key(&self) -> &'static str {
        if self.listeners.is_empty() {
            "kafka.listen"
        } else {
            "listeners"
        }
    }

    /// The per-shard port of shard `i`.
    pub fn shard_port(&self, i: usize) -> u16 {
        assert!(i < self.shards, "shard {i} of {}", self.shards);
        let port = self.listen.port() as usize + 1 + i;
        // `validate_ports` refuses a `listen` port without room above it for every shard.
        assert!(port <= u16::MAX as usize, "shard {i}'s port past 65535");
        port as u16
    }
}

/// One shard per CPU this process may run on.
fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parses HOST:PORT, or `off` (also `none` or empty) for a listener that is turned off.
pub fn parse_optional_listen(v: &str) -> Result<Option<SocketAddr>, SettingsError> {
    match v {
        "" | "off" | "none" => Ok(None),
        _ => parse_listen(v).map(Some),
    }
}

/// Parses HOST:PORT (a name such as localhost is resolved).
pub fn parse_listen(v: &str) -> Result<SocketAddr, SettingsError> {
    v.to_socket_addrs()
        .map_err(|e| bad("listen", format!("{v:?}: {e}")))?
        .next()
        .ok_or_else(|| bad("listen", format!("{v:?} resolves to no address")))
}

/// The host to advertise to a client: the configured one, else the address it reached us on.
pub fn advertised_host(configured: &str, listen: SocketAddr, local: Option<SocketAddr>) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    match local {
        Some(a) if listen.ip().is_unspecified() => a.ip().to_canonical().to_string(),
        _ => listen.ip().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_port_without_room_for_the_shards_is_refused_not_wrapped() {
        let mut c = ServerConfig::default();
        c.set("shards", "1").unwrap();
        c.set("listen", "127.0.0.1:65535").unwrap();
        let refused = c.validate().unwrap_err().to_string();
        assert!(refused.contains("room for one port per shard"), "{refused}");
        c.set("listen", "127.0.0.1:65534").unwrap();
        assert_eq!(c.shard_port(0), 65535);
    }

    #[test]
    fn wildcard_listens_advertise_the_reached_address() {
        let wildcard: SocketAddr = "0.0.0.0:7411".parse().unwrap();
        let reached = Some("192.168.1.5:7411".parse().unwrap());
        assert_eq!(advertised_host("", wildcard, reached), "192.168.1.5");
        assert_eq!(
            advertised_host("kafka.example", wildcard, reached),
            "kafka.example"
        );
        let fixed: SocketAddr = "127.0.0.1:7411".parse().unwrap();
        assert_eq!(advertised_host("", fixed, reached), "127.0.0.1");
    }
}
