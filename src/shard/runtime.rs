//! One shard: the state one executor owns (its partitions, its copy of the topic metadata,
//! its connections) and the routing of operations to the shard that owns a partition, over
//! glommio's channel mesh. Nothing here is shared with another core: other shards are reached
//! only by sending messages, and all interior mutability is single-threaded (`RefCell`,
//! `Cell`), never held across an `.await`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use glommio::channels::channel_mesh::Senders;

use super::outbox::{self, Outbox, Sent, Unreachable};
use glommio::channels::local_channel::{self, LocalSender};

use crate::broker_error::BrokerError;
use crate::settings::ServerConfig;
use glommio::sync::{Permit, Semaphore};

use crate::catalog::broker_defaults::{BrokerDefaults, LoadError};
use crate::catalog::data_dir;
use crate::catalog::error::{CatalogError, UnknownTopic};
use crate::catalog::topics::{AdminError, TopicMeta};
use crate::config::LogConfig;
use crate::io::{DmaStorage, PageCache, PooledStorage, SharedPageCache, Storage};
use crate::log::{partition_dir, partition_dir_name, OpenOptions, PartitionLog};
use crate::protocol::ErrorCode;
use crate::shard::messages::{
    Isolation, MeshMsg, OpOk, OpResult, PartitionOp, ShardOp, ShardStats,
};
use crate::shard::partition_actor::PartitionHandle;
use crate::TopicPartition;

/// A partition that takes longer than this to open is logged.
const SLOW_OPEN: std::time::Duration = std::time::Duration::from_secs(1);

/// The shard that applies topic creations and deletions (the controller).
pub const CONTROLLER: usize = 0;

pub struct Shard {
    pub id: usize,
    pub n: usize,
    pub config: Rc<ServerConfig>,
    pub(crate) storage: Rc<dyn Storage>,
    /// This shard's read cache of `.log` and index pages.
    pub cache: SharedPageCache,
    /// Whether the previous run shut down cleanly: partitions opened at start-up skip the
    /// recovery scan only then.
    previous_shutdown_clean: bool,
    /// Messages to other shards, in order per peer.
    outbox: Rc<Outbox>,
    /// (segments, bytes) of zero padding recovery dropped while opening partitions.
    padding_dropped: Cell<(u64, u64)>,
    /// Partitions that could not be opened at the start, and why: left offline so one
    /// damaged partition never keeps the node down (or crash-loops it).
    offline: RefCell<HashMap<TopicPartition, String>>,
    pending: RefCell<HashMap<u64, LocalSender<OpResult>>>,
    /// Cancellable ops peers asked of this shard, by (peer, id): dropping the sender ends
    /// the op (`MeshMsg::Cancel`).
    cancellable: RefCell<HashMap<(usize, u64), LocalSender<()>>>,
    next_id: Cell<u64>,
    topics: RefCell<BTreeMap<String, TopicMeta>>,
    /// The dynamic broker configs: the base of every topic's config.
    broker_defaults: RefCell<BrokerDefaults>,
    partitions: RefCell<HashMap<TopicPartition, PartitionHandle>>,
    /// One topic creation or deletion at a time (used on the controller only).
    admin: Semaphore,
    /// Set once every partition this shard owns is open: until then partition requests get
    /// the retriable NotReady.
    ready: Cell<bool>,
    pub shutting_down: Cell<bool>,
    /// Dropped at shutdown: every listener's `recv()` then returns.
    shutdown_waiters: RefCell<Vec<LocalSender<()>>>,
    pub connections: Cell<usize>,
    /// Connection slots of the native and Kafka listeners (`slots.rs`).
    pub drained_peers: Cell<usize>,
    /// Request and reply bytes all connections of this shard may hold at once.
    pub inflight: Rc<Semaphore>,
    /// The object store, when tiering is on (`remote.storage.url`).
    pub(crate) tiering: Option<crate::shard::tiering::Tiering>,
    /// The remote tier of each tiered partition this shard owns.
    pub(crate) remote_logs: RefCell<HashMap<TopicPartition, Rc<crate::remote::RemoteLog>>>,
}

/// A request sent to a peer and not yet answered: dropped early (its requester gave up),
/// it forgets the request and, for a cancellable op, tells the peer to drop it.
struct Outstanding {
    shard: Rc<Shard>,
    peer: usize,
    id: u64,
    cancel: bool,
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        if self.shard.pending.borrow_mut().remove(&self.id).is_some() && self.cancel {
            self.shard.cancel_remote(self.peer, self.id);
        }
    }
}

/// Whether a partition that cannot be opened fails the caller (a topic being created) or
/// is left offline while the rest of the node serves (the start).
#[derive(Clone, Copy)]
enum OnOpenFailure {
    Fail,
    Offline,
}

fn err<T>(code: ErrorCode, msg: impl Into<String>) -> Result<T, BrokerError> {
    Err(BrokerError::new(code, msg))
}

impl Shard {
    pub fn new(
        id: usize,
        config: Rc<ServerConfig>,
        senders: Senders<MeshMsg>,
        previous_shutdown_clean: bool,
        tiering: Option<crate::shard::tiering::Tiering>,
    ) -> Rc<Self> {
        Rc::new(Shard {
            id,
            n: config.shards,
            storage: PooledStorage::new(
                DmaStorage::new(config.data_dir.clone()),
                config.max_open_sealed_files_per_shard,
            ),
            inflight: crate::shard::budget::Budget::shard_pool(config.max_inflight_bytes_per_shard),
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
        })
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

    /// Opens the partitions this shard owns for every topic on disk.
    pub async fn load_topics(self: &Rc<Self>) -> Result<(), CatalogError> {
        let started = std::time::Instant::now();
        let data_dir = self.config.data_dir.clone();
        let defaults = BrokerDefaults::load(&*self.storage, &data_dir).await?;
        let base = self.topic_base_of(&defaults)?;
        *self.broker_defaults.borrow_mut() = defaults;
        let (topics, changed) =
            crate::catalog::topics::load_all(&*self.storage, &data_dir, self.n as u32, &base)
                .await?;
        for meta in topics {
            crate::catalog::internal_topics::check_on_disk(&meta, &self.config)?;
            if self.id == CONTROLLER && changed.contains(&meta.name) {
                tracing::warn!(topic = %meta.name, shards = self.n, "topic metadata rewritten: a new shard count (partitions reassigned) or a topic id given to a topic from before ids");
                meta.persist(&*self.storage, &data_dir, self.n as u32)
                    .await
                    .map_err(CatalogError::io("persisting topic metadata", &data_dir))?;
            }
            let opts = OpenOptions {
                clean_shutdown: self.previous_shutdown_clean,
                ..OpenOptions::default()
            };
            self.open_owned(&meta, 0, opts, OnOpenFailure::Offline)
                .await
                .map_err(|why| CatalogError::Open {
                    topic: meta.name.clone(),
                    why,
                })?;
            self.topics.borrow_mut().insert(meta.name.clone(), meta);
        }
        self.ready.set(true);
        tracing::info!(
            shard = self.id,
            partitions = self.partitions.borrow().len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "partitions open"
        );
        let (segments, bytes) = self.padding_dropped.take();
        if segments > 0 {
            tracing::info!(
                shard = self.id,
                segments,
                bytes,
                "recovery dropped the zero padding that direct writes and space allocated ahead leave after an unclean stop (no data)"
            );
        }
        Ok(())
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

    /// What a topic without overrides runs with (Kafka's defaults and the broker's).
    pub fn topic_base(&self) -> LogConfig {
        // Loaded and altered only once validated: the base always resolves.
        self.topic_base_of(&self.broker_defaults.borrow())
            .unwrap_or_default()
    }

    fn topic_base_of(&self, defaults: &BrokerDefaults) -> Result<LogConfig, LoadError> {
        defaults.base().map_err(|e| LoadError {
            path: self.config.data_dir.clone(),
            why: e.message,
        })
    }

    /// Puts new broker defaults in force: every topic's config is rebased on them and
    /// applied to the partitions this shard owns.
    async fn set_broker_defaults(&self, defaults: BrokerDefaults) -> OpResult {
        let base = defaults.base()?;
        *self.broker_defaults.borrow_mut() = defaults;
        let topics: Vec<TopicMeta> = self.topics.borrow().values().cloned().collect();
        for meta in topics {
            let config = meta.config.rebased(&base)?;
            if config != meta.config {
                self.alter_owned(TopicMeta { config, ..meta }).await?;
            }
        }
        Ok(OpOk::Done)
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

    /// Runs a partition operation on the partition's owner: here, or via the mesh.
    pub async fn partition_op(
        self: &Rc<Self>,
        topic: &str,
        partition: i32,
        op: PartitionOp,
    ) -> OpResult {
        let owner = self.owner_of(topic, partition)?;
        let partition = partition as u32;
        if owner == self.id {
            self.local_partition_op(topic, partition, op).await
        } else {
            self.remote(
                owner,
                ShardOp::Partition {
                    topic: topic.to_string(),
                    partition,
                    op,
                },
            )
            .await
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
        reads: Vec<(String, u32, i64, usize)>,
        max_bytes: usize,
        first_at_least_one: bool,
        isolation: Isolation,
    ) -> Vec<OpResult> {
        let mut left = max_bytes;
        let mut out = Vec::with_capacity(reads.len());
        for (i, (topic, partition, offset, max)) in reads.into_iter().enumerate() {
            let share = max.min(left);
            if share == 0 {
                out.push(Ok(OpOk::Done));
                continue;
            }
            let op = PartitionOp::Fetch {
                offset,
                max_bytes: share,
                at_least_one: i == 0 && first_at_least_one,
                isolation,
            };
            let r = self.local_partition_op(&topic, partition, op).await;
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
        ops: Vec<(String, u32, PartitionOp)>,
    ) -> Vec<OpResult> {
        let tasks: Vec<_> = ops
            .into_iter()
            .map(|(topic, partition, op)| {
                let me = self.clone();
                crate::tasks::spawn(
                    async move { me.local_partition_op(&topic, partition, op).await },
                )
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

    async fn local_partition_op(&self, topic: &str, partition: u32, op: PartitionOp) -> OpResult {
        let tp = TopicPartition::new(topic, partition as i32);
        let handle = self.partitions.borrow().get(&tp).cloned();
        match handle {
            Some(h) if matches!(op, PartitionOp::Maintain) => Ok(OpOk::Maintained(
                crate::shard::maintenance::maintain_now(self, &h).await,
            )),
            Some(_) if matches!(op, PartitionOp::RebuildManifest) => {
                crate::shard::tiering::rebuild_manifest(self.remote_log(&tp), &tp).await
            }
            Some(h) => match self.remote_log(&tp) {
                Some(remote) => self.tiered_op(&h, &remote, op).await,
                None => h.call(op).await,
            },
            None if self.offline.borrow().contains_key(&tp) => {
                let why = self.offline.borrow().get(&tp).cloned().unwrap_or_default();
                let why = format!("partition {tp} is offline: {why}");
                err(ErrorCode::StorageError, why)
            }
            None if !self.ready.get() => err(
                ErrorCode::NotReady,
                format!(
                    "shard {} is still opening its partitions; retry shortly",
                    self.id
                ),
            ),
            // Deleted while the request was forwarded here.
            None if !self.has_topic(topic) => {
                err(ErrorCode::UnknownTopic, format!("unknown topic {topic:?}"))
            }
            None => err(
                ErrorCode::UnknownPartition,
                format!(
                    "partition {topic}-{partition} is not open on shard {}",
                    self.id
                ),
            ),
        }
    }

    /// Runs `op` on this shard and on every other shard at once; the first error wins.
    pub async fn on_every_shard(self: &Rc<Self>, op: ShardOp) -> OpResult {
        let (local, remote) =
            futures_lite::future::zip(self.execute(op.clone()), self.broadcast(op)).await;
        local.and(remote)
    }

    /// Sends an operation to another shard and waits for its answer. Dropped before the
    /// answer, it forgets the request, and cancels a cancellable op on the peer.
    pub async fn remote(self: &Rc<Self>, peer: usize, op: ShardOp) -> OpResult {
        assert!(peer < self.n, "shard {peer} of {}", self.n);
        assert_ne!(
            peer, self.id,
            "a shard's own work runs locally, not over the mesh"
        );
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (tx, rx) = local_channel::new_bounded(1);
        let earlier = self.pending.borrow_mut().insert(id, tx);
        assert!(earlier.is_none(), "request id {id} reused while awaited");
        let timed = match &op {
            ShardOp::Partition { op, .. } => op.is_data_path(),
            ShardOp::Partitions(ops) => ops.iter().any(|(_, _, op)| op.is_data_path()),
            ShardOp::FetchInOrder { .. } => true,
            _ => false,
        };
        let mut outstanding = Outstanding {
            shard: self.clone(),
            peer,
            id,
            cancel: false,
        };
        let cancellable = op.cancellable();
        let msg = MeshMsg::Request {
            id,
            from: self.id,
            op,
        };
        let t0 = std::time::Instant::now();
        if let Err(e) = self.send_mesh(peer, msg) {
            return err(ErrorCode::Internal, e.to_string());
        }
        outstanding.cancel = cancellable;
        let answer = rx
            .recv()
            .await
            .unwrap_or_else(|| err(ErrorCode::Internal, "reply channel closed"));
        outstanding.cancel = false;
        if timed {
            crate::metrics::record_since(crate::metrics::Stage::MeshRoundTrip, t0);
        }
        answer
    }

    /// Sends to every other shard and waits for all answers; returns the first error.
    pub async fn broadcast(self: &Rc<Self>, op: ShardOp) -> OpResult {
        let mut tasks = Vec::new();
        for peer in (0..self.n).filter(|&p| p != self.id) {
            let me = self.clone();
            let op = op.clone();
            tasks.push(crate::tasks::spawn(
                async move { me.remote(peer, op).await },
            ));
        }
        let mut first_err = None;
        for t in tasks {
            if let Err(e) = t.await {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(OpOk::Done), Err)
    }

    /// Handles one message from the mesh. Requests run in their own task and the reply is
    /// sent from there, never from the receive loop (two full queues would deadlock).
    pub fn on_mesh_message(self: &Rc<Self>, msg: MeshMsg) {
        match msg {
            MeshMsg::Request { id, from, op } if op.cancellable() => {
                let (cancel, cancelled) = local_channel::new_bounded::<()>(1);
                // Ids are unique per sender: one live request per (from, id).
                let earlier = self.cancellable.borrow_mut().insert((from, id), cancel);
                assert!(earlier.is_none(), "request {id} from shard {from} twice");
                let me = self.clone();
                crate::tasks::spawn(async move {
                    let result =
                        futures_lite::future::or(async { Some(me.execute(op).await) }, async {
                            cancelled.recv().await;
                            None
                        })
                        .await;
                    me.cancellable.borrow_mut().remove(&(from, id));
                    if let Some(result) = result {
                        me.reply(from, id, result);
                    }
                })
                .detach();
            }
            MeshMsg::Request { id, from, op } => {
                // A shard's own work never crosses the mesh.
                assert!(
                    from != self.id && from < self.n,
                    "a request from shard {from}"
                );
                let me = self.clone();
                crate::tasks::spawn(async move {
                    let result = me.execute(op).await;
                    me.reply(from, id, result);
                })
                .detach();
            }
            MeshMsg::Response { id, result } => {
                if let Some(tx) = self.pending.borrow_mut().remove(&id) {
                    let _ = tx.try_send(result);
                }
            }
            MeshMsg::Cancel { id, from } => {
                // Dropping the sender ends the op's wait; its task then ends without a reply.
                self.cancellable.borrow_mut().remove(&(from, id));
            }
        }
    }

    fn reply(self: &Rc<Self>, to: usize, id: u64, result: OpResult) {
        let msg = MeshMsg::Response { id, result };
        if self.send_mesh(to, msg).is_err() {
            tracing::warn!(peer = to, "could not reply over the mesh");
        }
    }

    /// Sends to `peer` without waiting, in order with everything sent to it before
    /// (`outbox.rs`).
    fn send_mesh(self: &Rc<Self>, peer: usize, msg: MeshMsg) -> Result<(), Unreachable> {
        if let Sent::QueuedStartDrain = self.outbox.send(peer, msg)? {
            let me = self.clone();
            let undelivered = move |m| me.undelivered(m);
            crate::tasks::spawn_later(outbox::drain(self.outbox.clone(), peer, undelivered))
                .detach();
        }
        Ok(())
    }

    /// A request the closed mesh refused is answered as failed (its waiter sees the reply
    /// channel close).
    fn undelivered(&self, msg: MeshMsg) {
        if let MeshMsg::Request { id, .. } = msg {
            self.pending.borrow_mut().remove(&id);
        }
    }

    /// Tells `peer` that the cancellable request `id` is no longer awaited (from a drop:
    /// the outbox never waits, and the cancel follows the request it cancels).
    fn cancel_remote(self: &Rc<Self>, peer: usize, id: u64) {
        let _ = self.send_mesh(peer, MeshMsg::Cancel { id, from: self.id });
    }

    /// Registered long polls of this shard's partitions (a metric).
    pub fn append_waiters(&self) -> usize {
        self.partitions
            .borrow()
            .values()
            .map(|h| h.append_watch().waiters())
            .sum()
    }

    /// The log-end watches of partitions this shard owns, with what each wait is after;
    /// `None` if one is not open here (the caller reads it again and reports why).
    pub fn append_watches(
        &self,
        waits: &[(String, u32, i64)],
    ) -> Option<Vec<(Rc<crate::shard::append_watch::AppendWatch>, i64)>> {
        let partitions = self.partitions.borrow();
        waits
            .iter()
            .map(|(topic, p, after)| {
                let h = partitions.get(&TopicPartition::new(&**topic, *p as i32))?;
                Some((h.append_watch(), *after))
            })
            .collect()
    }

    /// Topic and config changes on the controller. Boxed by the caller: admin operations
    /// run `execute` on every shard themselves.
    async fn execute_admin(self: &Rc<Self>, op: ShardOp) -> OpResult {
        use crate::shard::admin;
        match op {
            ShardOp::CreateTopic {
                name,
                partitions,
                configs,
            } => admin::create(self, name, partitions, configs).await,
            ShardOp::CreateInternalTopic { name } => admin::create_internal(self, name).await,
            ShardOp::DeleteTopic { name } => admin::delete(self, name).await,
            ShardOp::AlterConfigs { name, set, delete } => {
                admin::alter(self, name, set, delete).await
            }
            ShardOp::AlterBrokerConfigs { scope, set, delete } => {
                admin::alter_broker(self, scope, set, delete).await
            }
            ShardOp::CreatePartitions { name, count } => {
                admin::create_partitions(self, name, count).await
            }
            other => unreachable!("{other:?} is not an admin operation"),
        }
    }

    /// The group and transaction coordinators of this shard.
    async fn execute_coordinator(self: &Rc<Self>, op: ShardOp) -> OpResult {
        use crate::groups::{coordinator, ops::GroupReply};
        match op {
            ShardOp::Group { group, op } => Ok(OpOk::Group(
                coordinator::handle(&Shard::group_host(self), group, op).await,
            )),
            ShardOp::Txn { id, op } => {
                Ok(OpOk::Txn(crate::shard::txn_ops::handle(self, id, op).await))
            }
            ShardOp::CompleteTxnOffsets {
                partition,
                producer_id,
                commit,
            } => {
                let host = Shard::group_host(self);
                let code = coordinator::complete_txn(&host, partition, producer_id, commit).await;
                Ok(OpOk::Group(GroupReply::Code(code)))
            }
            ShardOp::ListGroups => Ok(OpOk::Group(
                match coordinator::list(&Shard::group_host(self)).await {
                    Ok(groups) => GroupReply::Listed(groups),
                    Err(code) => GroupReply::Code(code),
                },
            )),
            other => unreachable!("{other:?} is not a coordinator operation"),
        }
    }

    pub(crate) async fn execute(self: &Rc<Self>, op: ShardOp) -> OpResult {
        match op {
            ShardOp::Partition {
                topic,
                partition,
                op,
            } => self.local_partition_op(&topic, partition, op).await,
            ShardOp::Partitions(ops) => Ok(OpOk::Results(self.local_partition_ops(ops).await)),
            ShardOp::FetchInOrder {
                reads,
                max_bytes,
                first_at_least_one,
                isolation,
            } => Ok(OpOk::Results(
                self.fetch_in_order(reads, max_bytes, first_at_least_one, isolation)
                    .await,
            )),
            op @ (ShardOp::CreateTopic { .. }
            | ShardOp::CreateInternalTopic { .. }
            | ShardOp::DeleteTopic { .. }
            | ShardOp::AlterConfigs { .. }
            | ShardOp::AlterBrokerConfigs { .. }
            | ShardOp::CreatePartitions { .. }) => Box::pin(self.execute_admin(op)).await,
            ShardOp::OpenPartitions {
                meta,
                from,
                restored,
            } => self.open_new_partitions(&meta, from, restored).await,
            ShardOp::PublishTopic(meta) => {
                self.topics.borrow_mut().insert(meta.name.clone(), meta);
                Ok(OpOk::Done)
            }
            ShardOp::RemoveTopic(meta) => self.remove_owned(&meta).await,
            ShardOp::RemovePartitions { meta, from } => self.discard_partitions(&meta, from).await,
            ShardOp::AlterTopic(meta) => self.alter_owned(meta).await,
            ShardOp::SetBrokerDefaults(defaults) => self.set_broker_defaults(defaults).await,
            ShardOp::AlterScram(changes) => {
                Box::pin(crate::shard::users::alter(self, changes)).await
            }
            ShardOp::SetCredentials(store) => crate::shard::users::install(store),
            ShardOp::AlterAcls(change) => Box::pin(crate::shard::acls::alter(self, change)).await,
            ShardOp::SetAcls(store) => crate::shard::acls::install(store),
            ShardOp::DropCaches => self.drop_local_caches().await,
            ShardOp::Stats => Ok(OpOk::Stats(self.local_stats())),
            ShardOp::Metrics => Ok(OpOk::Metrics(Box::new(self.local_metrics()))),
            ShardOp::Drained => {
                self.drained_peers.set(self.drained_peers.get() + 1);
                Ok(OpOk::Done)
            }
            ShardOp::AllocateProducerId => crate::shard::producer_ids::allocate(self).await,
            op @ (ShardOp::Group { .. }
            | ShardOp::Txn { .. }
            | ShardOp::ListGroups
            | ShardOp::CompleteTxnOffsets { .. }) => Box::pin(self.execute_coordinator(op)).await,
            ShardOp::WaitForAppends { waits, timeout_ms } => {
                crate::shard::long_poll::wait_here(self, &waits, timeout_ms).await;
                Ok(OpOk::Done)
            }
        }
    }

    /// A producer id never handed out before, from the controller's persisted blocks.
    pub async fn allocate_producer_id(self: &Rc<Self>) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::producer_ids::allocate(self).await
        } else {
            self.remote(CONTROLLER, ShardOp::AllocateProducerId).await
        }
    }

    pub async fn create_topic(
        self: &Rc<Self>,
        name: String,
        partitions: i32,
        configs: Vec<(String, String)>,
    ) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::create(self, name, partitions, configs).await
        } else {
            self.remote(
                CONTROLLER,
                ShardOp::CreateTopic {
                    name,
                    partitions,
                    configs,
                },
            )
            .await
        }
    }

    /// Creates an internal topic (`internal_topics.rs`) on the controller.
    pub async fn create_internal_topic(self: &Rc<Self>, name: String) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::create_internal(self, name).await
        } else {
            let op = ShardOp::CreateInternalTopic { name };
            self.remote(CONTROLLER, op).await
        }
    }

    /// Grows a topic to `count` partitions, on the controller.
    pub async fn create_partitions(self: &Rc<Self>, name: String, count: i32) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::create_partitions(self, name, count).await
        } else {
            let op = ShardOp::CreatePartitions { name, count };
            self.remote(CONTROLLER, op).await
        }
    }

    pub async fn delete_topic(self: &Rc<Self>, name: String) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::delete(self, name).await
        } else {
            self.remote(CONTROLLER, ShardOp::DeleteTopic { name }).await
        }
    }

    pub async fn alter_configs(
        self: &Rc<Self>,
        name: String,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    ) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::alter(self, name, set, delete).await
        } else {
            let op = ShardOp::AlterConfigs { name, set, delete };
            self.remote(CONTROLLER, op).await
        }
    }

    /// Alters the dynamic broker configs, on the controller.
    pub async fn alter_broker_configs(
        self: &Rc<Self>,
        scope: crate::catalog::broker_defaults::Scope,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    ) -> OpResult {
        if self.id == CONTROLLER {
            crate::shard::admin::alter_broker(self, scope, set, delete).await
        } else {
            let op = ShardOp::AlterBrokerConfigs { scope, set, delete };
            self.remote(CONTROLLER, op).await
        }
    }

    /// Opens the partitions of a topic being created: each in a fresh directory (anything
    /// already there is quarantined, never served). On failure the controller removes what
    /// was opened, on every shard.
    async fn open_new_partitions(&self, meta: &TopicMeta, from: u32, restored: bool) -> OpResult {
        let data_dir = &self.config.data_dir;
        for p in self.owned_partitions(meta, from).filter(|_| !restored) {
            let name = partition_dir_name(&meta.name, p);
            let dir = data_dir.join(&name);
            if self.storage.exists(&dir) {
                data_dir::quarantine(&*self.storage, data_dir, &name)
                    .await
                    .map_err(|e| {
                        BrokerError::new(
                            ErrorCode::StorageError,
                            format!("quarantining {name}: {e}"),
                        )
                    })?;
                // A created partition starts in a fresh directory, never in leftovers.
                debug_assert!(!self.storage.exists(&dir));
            }
        }
        (self.open_owned(meta, from, OpenOptions::default(), OnOpenFailure::Fail)).await
    }

    /// The partitions from `from` on that this shard owns.
    fn owned_partitions<'a>(
        &self,
        meta: &'a TopicMeta,
        from: u32,
    ) -> impl Iterator<Item = u32> + 'a {
        let id = self.id as u32;
        (from..meta.partitions()).filter(move |&p| meta.owners[p as usize] == id)
    }

    /// Unpublishes a topic, closes the partitions this shard owns and moves their
    /// directories to the trash (durably: one fsync of the data directory), then removes
    /// the trash in the background.
    async fn remove_owned(&self, meta: &TopicMeta) -> OpResult {
        self.topics.borrow_mut().remove(&meta.name);
        self.detach_remote(&meta.name);
        self.discard_partitions(meta, 0).await
    }

    /// Closes the partitions from `from` on that this shard owns, without sealing or
    /// syncing, and moves their directories to the trash (durably: one fsync of the data
    /// directory), then removes the trash in the background.
    async fn discard_partitions(&self, meta: &TopicMeta, from: u32) -> OpResult {
        let data_dir = &self.config.data_dir;
        let mut trash = Vec::new();
        let mut first_err = None;
        // Discard them all at once: nothing is sealed or synced, the files are going.
        let closing: Vec<_> = self
            .owned_partitions(meta, from)
            .filter_map(|p| {
                let tp = TopicPartition::new(&*meta.name, p as i32);
                self.offline.borrow_mut().remove(&tp);
                let h = self.partitions.borrow_mut().remove(&tp)?;
                Some(crate::tasks::spawn(async move { (p, h.discard().await) }))
            })
            .collect();
        for task in closing {
            if let (p, Err(e)) = task.await {
                tracing::warn!(topic = %meta.name, partition = p, error = %e, "closing a removed partition");
            }
        }
        for p in self.owned_partitions(meta, from) {
            let name = partition_dir_name(&meta.name, p);
            if !self.storage.exists(&data_dir.join(&name)) {
                continue;
            }
            match data_dir::move_to_trash(&*self.storage, data_dir, &name).await {
                Ok(to) => trash.push(to),
                Err(e) => {
                    first_err.get_or_insert(BrokerError::new(
                        ErrorCode::StorageError,
                        format!("trashing {name}: {e}"),
                    ));
                }
            }
        }
        if let Err(e) = self.storage.sync_dir(data_dir).await {
            first_err.get_or_insert(BrokerError::new(
                ErrorCode::StorageError,
                format!("syncing {}: {e}", data_dir.display()),
            ));
        }
        data_dir::remove_in_background(trash);
        first_err.map_or(Ok(OpOk::Done), Err)
    }

    /// The task of a partition this shard owns.
    pub fn partition_handle(&self, tp: &TopicPartition) -> Option<PartitionHandle> {
        self.partitions.borrow().get(tp).cloned()
    }

    /// Every partition task this shard runs (a snapshot).
    pub fn partition_handles(&self) -> Vec<PartitionHandle> {
        self.partitions.borrow().values().cloned().collect()
    }

    /// Takes a topic's altered config (persisted by the controller) into this shard's map
    /// and into the partitions it owns, without a restart.
    async fn alter_owned(&self, meta: TopicMeta) -> OpResult {
        let mut log_config = meta.config.log.clone();
        log_config.min_time_roll_interval_ms = self.config.log_roll_min_interval_ms;
        let handles: Vec<PartitionHandle> = self
            .owned_partitions(&meta, 0)
            .filter_map(|p| {
                self.partitions
                    .borrow()
                    .get(&TopicPartition::new(&*meta.name, p as i32))
                    .cloned()
            })
            .collect();
        for p in self.owned_partitions(&meta, 0) {
            // The local start is learnt from the partition's first answer.
            self.attach_remote(&meta.name, p, log_config.remote_storage_enable, -1);
        }
        self.topics.borrow_mut().insert(meta.name.clone(), meta);
        for h in handles {
            h.call(PartitionOp::SetConfig(log_config.clone())).await?;
        }
        Ok(OpOk::Done)
    }

    /// What recovery cut from a log: real damage (a torn write, corrupt bytes) is a WARN
    /// each; zero padding, normal after an unclean stop, is counted and reported once.
    fn note_truncations(&self, truncations: &[crate::log::segment::Truncation]) {
        for t in truncations {
            if t.padding {
                let (segments, bytes) = self.padding_dropped.get();
                self.padding_dropped
                    .set((segments + 1, bytes + t.bytes_dropped));
            } else {
                tracing::warn!(file = %t.file.display(), position = t.position, bytes_dropped = t.bytes_dropped, reason = %t.reason, "recovery truncated a log");
            }
        }
    }

    /// Opens the partitions of `meta` this shard owns and starts their tasks.
    async fn open_owned(
        &self,
        meta: &TopicMeta,
        from: u32,
        mut opts: OpenOptions,
        on_failure: OnOpenFailure,
    ) -> OpResult {
        opts.cache = Some(self.cache.clone());
        opts.acknowledged_reads = true;
        for p in self.owned_partitions(meta, from) {
            let dir = partition_dir(&self.config.data_dir, &meta.name, p);
            let mut log_config = meta.config.log.clone();
            log_config.min_time_roll_interval_ms = self.config.log_roll_min_interval_ms;
            let started = std::time::Instant::now();
            let opened =
                PartitionLog::open_with(self.storage.clone(), &dir, log_config, opts.clone())
                    .await
                    .map_err(|e| {
                        BrokerError::new(
                            ErrorCode::of(&e),
                            format!("opening {}: {e}", dir.display()),
                        )
                    });
            let tp = TopicPartition::new(&*meta.name, p as i32);
            let log = match (opened, on_failure) {
                (Ok(log), _) => log,
                (Err(why), OnOpenFailure::Fail) => return Err(why),
                (Err(why), OnOpenFailure::Offline) => {
                    tracing::error!(partition = %tp, %why, "partition left offline: it cannot be opened (its requests get KAFKA_STORAGE_ERROR); the rest of the node serves");
                    self.offline.borrow_mut().insert(tp, why.message);
                    continue;
                }
            };
            // A slow start names its partitions (recovery scans and producer-state replays
            // are the expected costs; anything else is a finding).
            if started.elapsed() >= SLOW_OPEN {
                let elapsed_ms = started.elapsed().as_millis() as u64;
                let clean = opts.clean_shutdown;
                tracing::warn!(dir = %dir.display(), elapsed_ms, clean, segments = log.segments().len(), "slow partition open");
            }
            self.note_truncations(log.recovery_truncations());
            let id = meta.topic_id;
            let recorded =
                crate::catalog::topics::ensure_partition_metadata(&*self.storage, &dir, id).await;
            if let Err(e) = recorded {
                tracing::warn!(partition = %tp, error = %e, "writing partition.metadata failed; the topic id is still in the topic's metadata");
            }
            let local_start = log.log_start_offset();
            self.partitions
                .borrow_mut()
                .insert(tp, PartitionHandle::spawn(log));
            self.attach_remote(
                &meta.name,
                p,
                meta.config.log.remote_storage_enable,
                local_start,
            );
        }
        Ok(OpOk::Done)
    }

    fn local_stats(&self) -> ShardStats {
        let c = self.cache.borrow().stats();
        ShardStats {
            device_reads: self.storage.device_reads(),
            cache_hits: c.hits,
            cache_misses: c.misses,
            cache_bytes: c.bytes,
            cache_budget_bytes: c.budget_bytes,
        }
    }

    /// Makes this shard's next reads cold: clears its page cache (log and index pages), and
    /// has every partition it owns fdatasync and drop the OS's cached pages of its files.
    async fn drop_local_caches(&self) -> OpResult {
        self.cache.borrow_mut().clear();
        crate::remote::chunks::clear();
        let handles: Vec<_> = self.partitions.borrow().values().cloned().collect();
        for h in handles {
            h.call(PartitionOp::DropOsCaches).await?;
        }
        Ok(OpOk::Stats(self.local_stats()))
    }

    /// Stats of every shard, summed (with `drop`: after dropping every shard's caches).
    pub async fn cluster_stats(self: &Rc<Self>, drop: bool) -> Result<ShardStats, BrokerError> {
        let mut total = match if drop {
            self.drop_local_caches().await?
        } else {
            OpOk::Stats(self.local_stats())
        } {
            OpOk::Stats(s) => s,
            _ => ShardStats::default(),
        };
        for peer in (0..self.n).filter(|&p| p != self.id) {
            let op = if drop {
                ShardOp::DropCaches
            } else {
                ShardOp::Stats
            };
            if let OpOk::Stats(s) = self.remote(peer, op).await? {
                total.add(&s);
            }
        }
        Ok(total)
    }

    /// This shard's metrics, with the gauges it knows now.
    fn local_metrics(&self) -> crate::metrics::MetricsSnapshot {
        let s = self.local_stats();
        let budget = self.config.max_inflight_bytes_per_shard as u64;
        let (heap_bytes, heap_blocks) = crate::alloc_guard::live_heap();
        let remote_cache = crate::remote::chunks::stats();
        let gauges = crate::metrics::Gauges {
            open_partitions: self.partitions.borrow().len() as u64,
            // The process's: reported by shard 0 only, so sums over shards stay right.
            open_fds: if self.id == 0 {
                crate::io::limits::open_fds()
            } else {
                0
            },
            connections: self.connections.get() as u64,
            device_reads: s.device_reads,
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            cache_bytes: s.cache_bytes,
            cache_budget_bytes: s.cache_budget_bytes,
            read_ahead_bytes: self.cache.borrow().stats().read_ahead_bytes,
            inflight_budget_used_bytes: budget.saturating_sub(self.inflight.available()),
            tasks: crate::tasks::live(),
            append_waiters: self.append_waiters() as u64,
            heap_live_bytes: if self.id == 0 { heap_bytes } else { 0 },
            heap_live_blocks: if self.id == 0 { heap_blocks } else { 0 },
            remote_upload_lag_bytes: self
                .remote_logs
                .borrow()
                .values()
                .map(|r| r.upload_lag_bytes.get())
                .sum(),
            remote_cache_hits: remote_cache.0,
            remote_cache_misses: remote_cache.1,
            remote_cache_bytes: remote_cache.2,
        };
        let mut snap = crate::metrics::snapshot(self.id, gauges);
        snap.shards = 1;
        snap
    }

    /// Every shard's metrics snapshot, in shard order.
    pub async fn cluster_metrics(
        self: &Rc<Self>,
    ) -> Result<Vec<crate::metrics::MetricsSnapshot>, BrokerError> {
        let mut all = Vec::with_capacity(self.n);
        for peer in 0..self.n {
            if peer == self.id {
                all.push(self.local_metrics());
            } else if let OpOk::Metrics(m) = self.remote(peer, ShardOp::Metrics).await? {
                all.push(*m);
            }
        }
        Ok(all)
    }

    /// Closes every partition this shard owns (clean shutdown). Returns how many could not
    /// be closed cleanly.
    pub async fn close_partitions(&self) -> usize {
        let handles: Vec<_> = self.partitions.borrow_mut().drain().collect();
        let mut failed = 0;
        for (tp, h) in handles {
            match h.close().await {
                Ok(()) => tracing::debug!(partition = %tp, "partition closed"),
                Err(e) => {
                    failed += 1;
                    tracing::error!(partition = %tp, error = %e, "partition did not close cleanly");
                }
            }
        }
        failed
    }
}
