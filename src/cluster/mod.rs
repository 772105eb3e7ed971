//! Cluster mode (`cluster.etcd.endpoints`): the cluster's state lives in etcd, never in a
//! home-made consensus. Each node registers itself under a lease (its id, its listeners, a
//! broker epoch that grows with every registration, KIP-380); a node whose lease expires
//! is dead to the others; one node at a time is the controller, elected by creating the
//! controller key under its lease, with the key's creation revision as the controller epoch
//! that fences a deposed one. The etcd session runs on a thread of its own (`session.rs`);
//! the shards see a copy of its view (`view.rs`), never a lock.
//!
//! Without `cluster.etcd.endpoints` none of this runs: one node, as before.

pub mod controller;
pub mod etcd;
pub mod internal_topics;
pub mod leaving;
pub mod placement;
pub mod producer_ids;
pub mod reassign;
pub mod security;
pub mod session;
pub mod topics;
pub mod view;

pub use session::{Session, SessionConfig};

/// A value every node shares, kept in etcd as one key and changed only by
/// compare-and-swap (`security.rs`): any node may change it, every node installs it from
/// its next view.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedValue {
    /// The SCRAM credentials or the ACLs, by name.
    Security(String),
    /// The cluster-wide dynamic broker configs.
    BrokerDefaults,
}

/// Where a shard hears of each new view (tokio's watch channel works on any executor).
pub type ViewReceiver = tokio::sync::watch::Receiver<std::sync::Arc<ClusterView>>;

pub use controller::{TopicCommand, TopicRefused, TopicSpec};
pub use topics::{ClusterPartition, ClusterTopic};

/// A shard's link to the cluster thread: the views it publishes, and the queue of topic
/// changes it carries out when this node is the controller (tokio's channels work on any
/// executor, so a shard never blocks on them).
#[derive(Clone)]
pub struct ClusterLink {
    pub views: ViewReceiver,
    pub commands: tokio::sync::mpsc::Sender<TopicCommand>,
    /// What the cluster thread counted (read by shard 0's metrics).
    pub counters: std::sync::Arc<ClusterCounters>,
}

/// The cluster thread's counters. Atomics written by that thread alone and read when
/// metrics are taken: no lock, and off every request path.
#[derive(Debug, Default)]
pub struct ClusterCounters {
    pub controller_changes: std::sync::atomic::AtomicU64,
    pub leader_elections: std::sync::atomic::AtomicU64,
    pub unclean_leader_elections: std::sync::atomic::AtomicU64,
}

impl ClusterCounters {
    pub fn add(counter: &std::sync::atomic::AtomicU64, n: usize) {
        counter.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn get(counter: &std::sync::atomic::AtomicU64) -> u64 {
        counter.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Where the cluster thread answers one command.
type Reply<T> = tokio::sync::oneshot::Sender<Result<T, TopicRefused>>;

impl ClusterLink {
    /// Asks the controller (this node) to create a topic; answered once etcd holds it.
    pub async fn create_topic(&self, spec: TopicSpec) -> Result<ClusterTopic, TopicRefused> {
        self.ask(|reply| TopicCommand::Create { spec, reply }).await
    }

    /// Asks the controller (this node) to delete a topic.
    pub async fn delete_topic(&self, name: String) -> Result<(), TopicRefused> {
        self.ask(|reply| TopicCommand::Delete { name, reply }).await
    }

    /// Asks the controller (this node) to grow a topic to `count` partitions.
    pub async fn grow_topic(&self, name: String, count: u32) -> Result<(), TopicRefused> {
        self.ask(|reply| TopicCommand::Grow { name, count, reply })
            .await
    }

    /// Replaces a topic's config overrides in etcd (any node may).
    pub async fn set_topic_configs(
        &self,
        name: String,
        configs: Vec<(String, String)>,
    ) -> Result<(), TopicRefused> {
        self.ask(|reply| TopicCommand::SetConfigs {
            name,
            configs,
            reply,
        })
        .await
    }

    /// Asks etcd to take a leader's ISR change (checked against the partition's state).
    pub async fn alter_isr(
        &self,
        topic: String,
        partition: u32,
        change: crate::replication::IsrChange,
    ) -> Result<(), TopicRefused> {
        self.ask(|reply| TopicCommand::AlterIsr {
            topic,
            partition,
            change,
            reply,
        })
        .await
    }

    /// Asks for an internal topic (created by the controller; `internal_topics.rs`).
    pub async fn want_internal_topic(&self, spec: TopicSpec) -> Result<(), TopicRefused> {
        self.ask(|reply| TopicCommand::WantInternal { spec, reply })
            .await
    }

    /// Claims a block of `size` producer ids no node has held: its first id.
    pub async fn claim_producer_ids(&self, size: i64) -> Result<i64, TopicRefused> {
        self.ask(|reply| TopicCommand::ClaimProducerIds { size, reply })
            .await
    }

    /// Stores a shared value if etcd's was last changed at `expected` (0: none yet).
    pub async fn swap_value(
        &self,
        of: SharedValue,
        expected: i64,
        value: Vec<u8>,
    ) -> Result<security::Swapped, TopicRefused> {
        self.ask(|reply| TopicCommand::SwapValue {
            of,
            expected,
            value,
            reply,
        })
        .await
    }

    /// Starts, replaces or cancels the reassignments an operator asked for as the
    /// controller (this node): one outcome per partition.
    pub async fn reassign(
        &self,
        partitions: Vec<controller::ReassignAsked>,
    ) -> Result<Vec<controller::ReassignResult>, TopicRefused> {
        self.ask(|reply| TopicCommand::Reassign { partitions, reply })
            .await
    }

    /// Runs the elections an operator asked for (ElectLeaders) as the controller (this
    /// node): one outcome per partition.
    pub async fn elect_leaders(
        &self,
        kind: controller::ElectionKind,
        partitions: Option<Vec<(String, u32)>>,
    ) -> Result<Vec<controller::ElectionResult>, TopicRefused> {
        self.ask(|reply| TopicCommand::ElectLeaders {
            kind,
            partitions,
            reply,
        })
        .await
    }

    /// Controlled shutdown, from a thread that is not a shard's (it blocks): marks this
    /// node as shutting down and waits, at most `bound`, until the controller has moved
    /// its leaderships and taken it out of the ISRs. The partitions left (empty: all
    /// moved).
    pub fn leave(&self, bound: std::time::Duration) -> Vec<String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let command = TopicCommand::Leave { bound, reply };
        if self.commands.blocking_send(command).is_err() {
            return Vec::new();
        }
        match answer.blocking_recv() {
            Ok(Ok(left)) => left,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "controlled shutdown could not start; stopping now");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// Sends the command `make` builds around its reply, and waits for the answer.
    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> TopicCommand) -> Result<T, TopicRefused> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.commands.send(make(reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

fn gone() -> TopicRefused {
    TopicRefused::Cluster(ClusterError::Config(
        "the cluster session has ended (the node is stopping)".into(),
    ))
}
pub use view::{BrokerRegistration, ClusterView, ControllerInfo, Endpoint};

/// What can stop or trouble cluster mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    #[error("etcd is unreachable at {endpoints}: {why}")]
    Unreachable { endpoints: String, why: String },
    #[error("broker.id {id} is registered by another live node ({holder}); give this node its own broker.id, or stop the other one")]
    DuplicateBrokerId { id: i32, holder: String },
    #[error("etcd: {0}")]
    Etcd(String),
    #[error("cluster mode: {0}")]
    Config(String),
}

/// The etcd keys of one cluster (`cluster.name` is the prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    root: String,
}

impl Keys {
    pub fn new(cluster_name: &str) -> Keys {
        Keys {
            root: format!("/shardlog/{cluster_name}/"),
        }
    }

    /// Everything of the cluster.
    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn brokers(&self) -> String {
        format!("{}brokers/", self.root)
    }

    pub fn broker(&self, id: i32) -> String {
        format!("{}brokers/{id}", self.root)
    }

    pub fn controller(&self) -> String {
        format!("{}controller", self.root)
    }

    /// Every topic's key (id, partition count, configs).
    pub fn topics(&self) -> String {
        format!("{}topics/", self.root)
    }

    pub fn topic(&self, name: &str) -> String {
        format!("{}topics/{name}", self.root)
    }

    /// Every partition state's key.
    pub fn partitions(&self) -> String {
        format!("{}partitions/", self.root)
    }

    /// The partition states of one topic.
    pub fn partitions_of(&self, topic: &str) -> String {
        format!("{}partitions/{topic}/", self.root)
    }

    /// An internal topic a node asked the controller for (`internal_topics.rs`).
    pub fn wanted(&self, topic: &str) -> String {
        format!("{}wanted/{topic}", self.root)
    }

    /// The cluster's own id, created once by the first node to start (`session.rs`): the
    /// writer id of its tiered topics' manifests.
    pub fn cluster_id(&self) -> String {
        format!("{}cluster-id", self.root)
    }

    /// The first producer id no node has claimed (`producer_ids.rs`).
    pub fn producer_id_block(&self) -> String {
        format!("{}producer-id-block", self.root)
    }

    /// Every security value (`security.rs`).
    pub fn security_values(&self) -> String {
        format!("{}security/", self.root)
    }

    /// One security value: the SCRAM credentials or the ACLs, in their file's format.
    pub fn security(&self, name: &str) -> String {
        format!("{}security/{name}", self.root)
    }

    /// The cluster-wide dynamic broker configs (`--entity-default`), as the `cluster.`
    /// lines of broker.properties (FORMAT.md).
    pub fn broker_defaults(&self) -> String {
        format!("{}configs/broker-defaults", self.root)
    }

    /// Where a shared value lives.
    pub fn shared(&self, value: &SharedValue) -> String {
        match value {
            SharedValue::Security(name) => self.security(name),
            SharedValue::BrokerDefaults => self.broker_defaults(),
        }
    }

    /// One partition's state (leader, epochs, replicas, ISR).
    pub fn partition(&self, topic: &str, partition: u32) -> String {
        format!("{}partitions/{topic}/{partition}", self.root)
    }
}

/// The file in the data directory whose random id tells a restart of this node apart from
/// another node given the same broker.id by mistake.
pub const DIRECTORY_ID_FILE: &str = "cluster-directory-id";

/// What this node registers, from its settings: its id, its data directory's id, and its
/// listeners as others reach them (`advertised.host`, or the address each one listens on).
pub fn session_config(
    config: &crate::settings::ServerConfig,
) -> Result<SessionConfig, ClusterError> {
    let endpoints = crate::settings::cluster::endpoints(&config.cluster.etcd_endpoints)
        .map_err(|e| ClusterError::Config(e.to_string()))?;
    assert!(
        !endpoints.is_empty(),
        "cluster mode names its etcd endpoints"
    );
    let id_file = config.data_dir.join(DIRECTORY_ID_FILE);
    let directory = crate::io::os::read_or_create_id(&id_file)
        .map_err(|e| ClusterError::Config(format!("{}: {e}", id_file.display())))?;
    let host = |addr: std::net::SocketAddr| reachable_host(config, addr);
    let listeners = config.kafka_listeners().into_iter().map(|l| {
        Ok(Endpoint {
            name: l.protocol.name().to_string(),
            host: host(l.addr)?,
            port: l.addr.port(),
        })
    });
    let cluster = &config.cluster;
    let me = BrokerRegistration {
        id: cluster.broker_id,
        epoch: 0,
        directory,
        listeners: listeners.collect::<Result<_, ClusterError>>()?,
        native: format!("{}:{}", host(config.listen)?, config.listen.port()),
        shutting_down: false,
        rack: (!cluster.rack.is_empty()).then(|| cluster.rack.clone()),
    };
    Ok(SessionConfig {
        endpoints,
        etcd_tls: etcd_tls(cluster)?,
        keys: Keys::new(&cluster.name),
        me,
        session_timeout: std::time::Duration::from_millis(cluster.session_timeout_ms),
        heartbeat: std::time::Duration::from_millis(cluster.heartbeat_interval_ms),
        security_seeds: security_seeds(config)?,
        rebalance: cluster.auto_leader_rebalance.then(|| {
            let interval = cluster.leader_imbalance_check_interval_s;
            let share = cluster.leader_imbalance_per_broker_percentage;
            (std::time::Duration::from_secs(interval), share)
        }),
    })
}

/// TLS to etcd, for `https://` endpoints: etcd's certificate checked against the CA file,
/// and this node's client certificate when one is set (the files are read once, here: a
/// bad one stops the start with its name).
fn etcd_tls(
    cluster: &crate::settings::cluster::ClusterSettings,
) -> Result<Option<std::sync::Arc<rustls::ClientConfig>>, ClusterError> {
    if !cluster.etcd_endpoints.contains("https://") {
        return Ok(None);
    }
    let path = |p: &String| (!p.is_empty()).then(|| std::path::PathBuf::from(p));
    let certificate =
        path(&cluster.etcd_certificate_location).zip(path(&cluster.etcd_key_location));
    let security = crate::security::client::ClientSecurity {
        protocol: crate::security::SecurityProtocol::Ssl,
        sasl: None,
        ca_location: path(&cluster.etcd_ca_location),
        certificate,
    };
    let config = security
        .tls_config()
        .map_err(|e| ClusterError::Config(format!("TLS to etcd: {e}")))?;
    Ok(Some(config))
}

/// This node's own SCRAM credentials and ACLs (its `__shardlog_meta` files), as text, for
/// the cluster to take when etcd holds none; an unreadable file stops the start.
fn security_seeds(
    config: &crate::settings::ServerConfig,
) -> Result<Vec<(String, String)>, ClusterError> {
    use crate::security::{acl_store, credentials};
    let meta_dir = config.data_dir.join(crate::catalog::topics::META_DIR);
    let unreadable =
        |e: crate::security::meta_file::StoreError| ClusterError::Config(e.to_string());
    let users = credentials::CredentialStore::read(&meta_dir).map_err(unreadable)?;
    let acls = acl_store::AclStore::read(&meta_dir).map_err(unreadable)?;
    let mut seeds = Vec::new();
    if !users.is_empty() {
        seeds.push((credentials::FILE.to_string(), users.encode()));
    }
    if !acls.is_empty() {
        seeds.push((acl_store::FILE.to_string(), acls.encode()));
    }
    Ok(seeds)
}

/// The host other nodes and clients reach `addr` at: a wildcard address names no host, so
/// cluster mode then needs `advertised.host`.
fn reachable_host(
    config: &crate::settings::ServerConfig,
    addr: std::net::SocketAddr,
) -> Result<String, ClusterError> {
    if !config.advertised_host.is_empty() {
        return Ok(config.advertised_host.clone());
    }
    if addr.ip().is_unspecified() {
        return Err(ClusterError::Config(format!(
            "{addr} listens on every address, so it names no host the other nodes can reach; set advertised.host"
        )));
    }
    Ok(addr.ip().to_string())
}
