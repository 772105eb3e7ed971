//! One shard: the state one executor owns (its partitions, its copy of the topic metadata,
//! its connections) and the routing of operations to the shard that owns a partition, over
//! glommio's channel mesh. Nothing here is shared with another core: other shards are reached
//! only by sending messages, and all interior mutability is single-threaded (`RefCell`,
//! `Cell`), never held across an `.await`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use glommio::channels::channel_mesh::Senders;

use super::outbox::Outbox;
use glommio::channels::local_channel::{self, LocalSender};

use crate::broker_error::BrokerError;
use crate::settings::ServerConfig;
use glommio::sync::{Permit, Semaphore};

use crate::catalog::broker_defaults::{BrokerDefaults, LoadError};
use crate::catalog::error::UnknownTopic;
use crate::catalog::topics::{AdminError, TopicMeta};
use crate::config::LogConfig;
use crate::io::{DmaStorage, PageCache, PooledStorage, SharedPageCache, Storage};
use crate::partition_ops::{Isolation, OpOk, OpResult, PartitionOp};
use crate::protocol::ErrorCode;
use crate::shard::messages::{FetchRead, MeshMsg, ShardOp};
use crate::shard::partition::actor::PartitionHandle;
use crate::TopicPartition;

/// The shard that applies topic creations and deletions (the controller).
pub const CONTROLLER: usize = 0;

pub struct Shard {
    pub(super) id: usize,
    pub(super) n: usize,
    pub(super) config: Rc<ServerConfig>,
    pub(super) storage: Rc<dyn Storage>,
    /// The same storage, for batching its directory syncs (the shutdown's closes).
    pub(super) dir_syncs: Rc<crate::io::DeferredSyncs>,
    /// The file-system sync idle partitions share instead of an fdatasync each.
    pub(super) shared_sync: Rc<crate::io::SharedSync>,
    /// This shard's read cache of `.log` and index pages.
    pub(super) cache: SharedPageCache,
    /// Whether the previous run shut down cleanly: partitions opened at start-up skip the
    /// recovery scan only then.
    pub(super) previous_shutdown_clean: bool,
    /// Messages to other shards, in order per peer.
    pub(super) outbox: Rc<Outbox>,
    /// (segments, bytes) of zero padding recovery dropped while opening partitions.
    pub(super) padding_dropped: Cell<(u64, u64)>,
    /// Partitions that could not be opened at the start, and why: left offline so one
    /// damaged partition never keeps the node down (or crash-loops it).
    pub(super) offline: RefCell<HashMap<TopicPartition, String>>,
    pub(super) pending: RefCell<HashMap<u64, LocalSender<OpResult>>>,
    /// Cancellable ops peers asked of this shard, by (peer, id): dropping the sender ends
    /// the op (`MeshMsg::Cancel`).
    pub(super) cancellable: RefCell<HashMap<(usize, u64), LocalSender<()>>>,
    pub(super) next_id: Cell<u64>,
    pub(super) topics: RefCell<BTreeMap<String, TopicMeta>>,
    /// The dynamic broker configs: the base of every topic's config.
    pub(super) broker_defaults: RefCell<BrokerDefaults>,
    pub(super) partitions: RefCell<HashMap<TopicPartition, PartitionHandle>>,
    /// One topic creation or deletion at a time (used on the controller only).
    pub(super) admin: Semaphore,
    /// Set once every partition this shard owns is open: until then partition requests get
    /// the retriable NotReady.
    pub(super) ready: Cell<bool>,
    pub(super) shutting_down: Cell<bool>,
    /// Dropped at shutdown: every listener's `recv()` then returns.
    pub(super) shutdown_waiters: RefCell<Vec<LocalSender<()>>>,
    /// Connections this shard serves now.
    pub(super) connections: Cell<usize>,
    /// Peers that said they have no connections left (shutdown).
    pub(super) drained_peers: Cell<usize>,
    /// Request and reply bytes all connections of this shard may hold at once.
    pub(super) inflight: Rc<Semaphore>,
    /// The object store, when tiering is on (`remote.storage.url`).
    pub(super) tiering: Option<crate::remote::Tiering>,
    /// The remote tier of each tiered partition this shard owns.
    pub(super) remote_logs: RefCell<HashMap<TopicPartition, Rc<crate::remote::RemoteLog>>>,
    /// This shard's copy of the cluster as the etcd session last read it (cluster mode
    /// only): replaced whole when the session publishes a new one, never shared mutably.
    pub(super) cluster: RefCell<Option<std::sync::Arc<crate::cluster::ClusterView>>>,
    /// The queue of topic changes to the cluster thread (cluster mode only).
    pub(super) cluster_commands: RefCell<Option<crate::cluster::ClusterLink>>,
    /// What this shard asks of other nodes, over the Kafka layer (cluster mode only).
    pub(super) peer_calls: RefCell<Option<Rc<dyn crate::txn::host::PeerCalls>>>,
    /// The cluster id Kafka clients are told.
    pub(super) cluster_id: Rc<str>,
    /// The services this shard runs for itself and its peers (`services/calls.rs`).
    pub(super) services: crate::service::Registry<Rc<Shard>>,
}

pub(super) fn err<T>(code: ErrorCode, msg: impl Into<String>) -> Result<T, BrokerError> {
    Err(BrokerError::new(code, msg))
}

impl Shard {
    pub fn new(
        id: usize,
        config: Rc<ServerConfig>,
        senders: Senders<MeshMsg>,
        previous_shutdown_clean: bool,
        tiering: Option<crate::remote::Tiering>,
        cluster_id: Rc<str>,
        services: crate::service::Registry<Rc<Shard>>,
    ) -> Rc<Self> {
        let pooled = PooledStorage::new(
            DmaStorage::new(config.data_dir.clone()),
            config.max_open_files_per_shard,
        );
        let dir_syncs = crate::io::DeferredSyncs::new(pooled);
        let shared_sync = crate::io::SharedSync::new(dir_syncs.clone(), config.data_dir.clone());
        Rc::new(Shard {
            id,
            n: config.shards,
            storage: dir_syncs.clone(),
            dir_syncs,
            shared_sync,
            inflight: crate::admission::budget::Budget::shard_pool(
                config.max_inflight_bytes_per_shard,
            ),
            cache: PageCache::shared(config.cache_bytes),
            previous_shutdown_clean,
            outbox: Outbox::new(senders, config.shards),
            padding_dropped: Cell::new((0, 0)),
            offline: RefCell::new(HashMap::new()),
            config,
            pending: RefCell::new(HashMap::new()),
            cancellable: RefCell::new(HashMap::new()),
            next_id: Cell::new(1),
            topics: RefCell::new(BTreeMap::new()),
            broker_defaults: RefCell::new(BrokerDefaults::default()),
            partitions: RefCell::new(HashMap::new()),
            admin: Semaphore::new(1),
            ready: Cell::new(false),
            shutting_down: Cell::new(false),
            shutdown_waiters: RefCell::new(Vec::new()),
            connections: Cell::new(0),
            drained_peers: Cell::new(0),
            tiering,
            remote_logs: RefCell::new(HashMap::new()),
            cluster: RefCell::new(None),
            cluster_commands: RefCell::new(None),
            peer_calls: RefCell::new(None),
            cluster_id,
            services,
        })
    }

    /// This shard's index (its core's place among the shards).
    pub fn id(&self) -> usize {
        self.id
    }

    /// How many shards the node runs.
    pub fn shard_count(&self) -> usize {
        self.n
    }

    pub fn config(&self) -> &Rc<ServerConfig> {
        &self.config
    }

    /// The cluster id Kafka clients are told (Metadata, DescribeCluster).
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// This shard's storage (direct I/O through the shard's descriptor pool, directory
    /// syncs batched while it closes).
    pub fn storage(&self) -> &Rc<dyn Storage> {
        &self.storage
    }

    /// This shard's read cache of `.log` and index pages.
    pub fn cache(&self) -> &SharedPageCache {
        &self.cache
    }

    /// Whether shutdown has begun (no new requests are read).
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.get()
    }

    /// The bytes all connections of this shard may hold at once.
    pub fn inflight(&self) -> &Rc<Semaphore> {
        &self.inflight
    }

    /// Counts a connection in (`true`) or out; returns how many are open now.
    pub fn count_connection(&self, opened: bool) -> usize {
        let open = self.connections.get();
        assert!(opened || open > 0, "a connection closed that never opened");
        let open = if opened { open + 1 } else { open - 1 };
        self.connections.set(open);
        open
    }

    pub fn open_connections(&self) -> usize {
        self.connections.get()
    }

    /// Peers that said they have no connections left (shutdown).
    pub fn drained_peers(&self) -> usize {
        self.drained_peers.get()
    }

    /// A receiver whose `recv()` completes (with `None`) once shutdown begins.
    pub fn shutdown_listener(&self) -> local_channel::LocalReceiver<()> {
        let (tx, rx) = local_channel::new_bounded(1);
        if !self.shutting_down.get() {
            self.shutdown_waiters.borrow_mut().push(tx);
        }
        rx
    }

    /// Stops accepting and reading new requests; requests already read still complete.
    pub fn begin_shutdown(&self) {
        self.shutting_down.set(true);
        self.shutdown_waiters.borrow_mut().clear();
    }

    /// Snapshot of the topic metadata this shard knows (for Metadata responses).
    pub fn topics_snapshot(
        &self,
        names: Option<&[String]>,
    ) -> Vec<Result<TopicMeta, UnknownTopic>> {
        let topics = self.topics.borrow();
        let answered: Vec<_> = match names {
            None => topics.values().cloned().map(Ok).collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    topics
                        .get(n)
                        .cloned()
                        .ok_or_else(|| UnknownTopic(n.clone()))
                })
                .collect(),
        };
        // Each topic asked by name is answered, known or not, in the order asked.
        assert!(names.is_none_or(|n| n.len() == answered.len()));
        answered
    }

    /// Whether every partition this shard owns is open.
    pub fn is_ready(&self) -> bool {
        self.ready.get()
    }

    pub fn has_topic(&self, name: &str) -> bool {
        self.topics.borrow().contains_key(name)
    }

    /// The dynamic broker configs in force.
    pub fn broker_defaults(&self) -> BrokerDefaults {
        self.broker_defaults.borrow().clone()
    }

    /// A dynamic throttle rate in force (`broker_defaults::THROTTLE_RATE_KEYS`), without
    /// copying the defaults: replication asks on every fetch.
    pub fn dynamic_throttle_rate(&self, key: &str) -> Option<u64> {
        let defaults = self.broker_defaults.borrow();
        let (value, _) = defaults.get(key)?;
        crate::catalog::broker_defaults::parse_rate(key, value).ok()
    }

    /// What a topic without overrides runs with (Kafka's defaults and the broker's).
    pub fn topic_base(&self) -> LogConfig {
        // Loaded and altered only once validated: the base always resolves.
        self.topic_base_of(&self.broker_defaults.borrow())
            .unwrap_or_default()
    }

    pub(super) fn topic_base_of(&self, defaults: &BrokerDefaults) -> Result<LogConfig, LoadError> {
        defaults.base().map_err(|e| LoadError {
            path: self.config.data_dir.clone(),
            why: e.message(),
        })
    }

    pub fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.topics.borrow().get(name).cloned()
    }

    /// Waits for this shard's turn to change topics (the controller runs one at a time).
    pub async fn admin_turn(&self) -> Result<Permit<'_>, AdminError> {
        assert_eq!(self.id, CONTROLLER, "topic changes are the controller's");
        self.admin
            .acquire_permit(1)
            .await
            .map_err(|e| BrokerError::new(ErrorCode::Internal, format!("admin queue closed: {e}")))
    }

    /// Kafka's DeleteRecords on one partition: records below `offset` (-1: the high
    /// watermark) stop being served; returns the new low watermark. Internal topics are
    /// refused.
    pub async fn delete_records(
        self: &Rc<Self>,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> Result<i64, BrokerError> {
        crate::catalog::internal_topics::refuse_client(topic, "delete records of")?;
        let op = PartitionOp::DeleteRecords { offset };
        match self.partition_op(topic, partition, op).await? {
            OpOk::LowWatermark(low) => Ok(low),
            other => err(ErrorCode::Internal, format!("DeleteRecords got {other:?}")),
        }
    }

    /// Runs a partition operation on the partition's owner: here, or via the mesh.
    pub async fn partition_op(
        self: &Rc<Self>,
        topic: &str,
        partition: i32,
        op: PartitionOp,
    ) -> OpResult {
        let owner = self.owner_of(topic, partition)?;
        let tp = TopicPartition::new(topic, partition);
        if owner == self.id {
            self.local_partition_op(&tp, op).await
        } else {
            self.remote(owner, ShardOp::Partition { tp, op }).await
        }
    }

    /// The shard that owns a partition, or why the request cannot name it.
    pub fn owner_of(&self, topic: &str, partition: i32) -> Result<usize, BrokerError> {
        let topics = self.topics.borrow();
        let Some(meta) = topics.get(topic) else {
            return err(ErrorCode::UnknownTopic, format!("unknown topic {topic:?}"));
        };
        match usize::try_from(partition)
            .ok()
            .and_then(|p| meta.owners.get(p))
        {
            Some(&o) => {
                assert!((o as usize) < self.n, "owner {o} of {} shards", self.n);
                Ok(o as usize)
            }
            None => err(
                ErrorCode::UnknownPartition,
                format!(
                    "topic {topic:?} has partitions 0..{}, not {partition}",
                    meta.owners.len()
                ),
            ),
        }
    }

    /// Fetches from partitions this shard owns one after another, each at most its own
    /// max and what is left of `max_bytes`; a partition with nothing left is not read
    /// (`OpOk::Done`). Only the first may exceed its share by one batch, if so asked.
    pub async fn fetch_in_order(
        &self,
        reads: Vec<FetchRead>,
        max_bytes: usize,
        first_at_least_one: bool,
        isolation: Isolation,
    ) -> Vec<OpResult> {
        let mut left = max_bytes;
        let mut out = Vec::with_capacity(reads.len());
        for (i, read) in reads.into_iter().enumerate() {
            let share = read.max_bytes.min(left);
            if share == 0 {
                out.push(Ok(OpOk::Done));
                continue;
            }
            let op = PartitionOp::Fetch {
                offset: read.offset,
                max_bytes: share,
                at_least_one: i == 0 && first_at_least_one,
                isolation,
            };
            let r = self.local_partition_op(&read.tp, op).await;
            if let Ok(OpOk::Fetched { records, .. }) = &r {
                // Only the request's first partition may exceed its share (by one batch).
                assert!(
                    i == 0 || records.len() <= share,
                    "{} > {share}",
                    records.len()
                );
                left = left.saturating_sub(records.len());
            }
            out.push(r);
        }
        assert!(left <= max_bytes);
        out
    }

    /// Runs several partition ops that this shard owns, all at once; results in order.
    pub async fn local_partition_ops(
        self: &Rc<Self>,
        ops: Vec<(TopicPartition, PartitionOp)>,
    ) -> Vec<OpResult> {
        let tasks: Vec<_> = ops
            .into_iter()
            .map(|(tp, op)| {
                let me = self.clone();
                crate::tasks::spawn(async move { me.local_partition_op(&tp, op).await })
            })
            .collect();
        let n = tasks.len();
        let mut out = Vec::with_capacity(n);
        for t in tasks {
            out.push(t.await);
        }
        assert_eq!(out.len(), n, "one result per op, in order");
        out
    }

    /// The log-end watches of partitions this shard owns, with what each wait is after;
    /// `None` if one is not open here (the caller reads it again and reports why).
    pub fn append_watches(
        &self,
        waits: &[(TopicPartition, i64)],
        reader: crate::shard::messages::Reader,
    ) -> Option<Vec<(Rc<crate::shard::partition::append_watch::AppendWatch>, i64)>> {
        let partitions = self.partitions.borrow();
        waits
            .iter()
            .map(|(tp, after)| {
                let h = partitions.get(tp)?;
                let watch = match reader {
                    crate::shard::messages::Reader::Consumer => h.append_watch(),
                    _ => h.replica_append_watch(),
                };
                Some((watch, *after))
            })
            .collect()
    }

    /// The task of a partition this shard owns.
    pub fn partition_handle(&self, tp: &TopicPartition) -> Option<PartitionHandle> {
        self.partitions.borrow().get(tp).cloned()
    }

    /// Every partition task this shard runs (a snapshot).
    pub fn partition_handles(&self) -> Vec<PartitionHandle> {
        self.partitions.borrow().values().cloned().collect()
    }
}
