//! This node's etcd session, on a thread of its own with a small tokio runtime (the HTTP
//! client needs tokio; a shard's executor never waits on etcd). At start it registers the
//! node (refusing a broker.id another live node holds) and only then lets the server
//! listen. Every `broker.heartbeat.interval.ms` it renews its lease, reads the cluster's
//! keys in one range (one consistent revision), campaigns for the controller when there is
//! none, and publishes the view to the shards. A lease that expired while etcd was away is
//! replaced by a new registration, with a new broker epoch, as soon as etcd answers again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};

use crate::cluster::controller::{self, TopicCommand, TopicRefused};
use crate::cluster::etcd::{Created, Etcd};
use crate::cluster::view::{encode_controller, BrokerRegistration, ClusterView};
use crate::cluster::{internal_topics, security};
use crate::cluster::{ClusterCounters, ClusterError, Keys};

/// What the session needs to know of this node.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub endpoints: Vec<String>,
    /// TLS to etcd (`https://` endpoints), else None.
    pub etcd_tls: Option<Arc<rustls::ClientConfig>>,
    pub keys: Keys,
    pub me: BrokerRegistration,
    pub session_timeout: Duration,
    pub heartbeat: Duration,
    /// This node's own security values (name, text) the cluster gets if it has none yet.
    pub security_seeds: Vec<(String, String)>,
    /// As controller, how often to check leadership balance and the share of lost
    /// leaderships above which a broker gets them back (None: never).
    pub rebalance: Option<(Duration, u32)>,
}

/// The running session: the view it publishes, and its stop.
pub struct Session {
    view: watch::Receiver<Arc<ClusterView>>,
    counters: Arc<crate::cluster::ClusterCounters>,
    commands: mpsc::Sender<TopicCommand>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    broker_epoch: i64,
    /// The cluster's id in etcd (`Keys::cluster_id`).
    cluster_id: String,
}

impl Session {
    /// Registers this node and starts renewing it; returns once registered, or with why not.
    pub fn start(config: SessionConfig) -> Result<Session, ClusterError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (view_tx, view) = watch::channel(Arc::new(ClusterView::default()));
        let (stop, stop_rx) = oneshot::channel();
        let (commands, commands_rx) = mpsc::channel(COMMANDS_QUEUED);
        let counters = Arc::new(crate::cluster::ClusterCounters::default());
        let channels = Channels {
            ready: ready_tx,
            view: view_tx,
            stop: stop_rx,
            commands: commands_rx,
            counters: counters.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("shardlog-cluster".to_string())
            .spawn(move || run(config, channels))
            .map_err(|e| ClusterError::Config(format!("starting the cluster thread: {e}")))?;
        let started = ready_rx
            .recv()
            .unwrap_or_else(|_| Err(ClusterError::Config("the cluster thread ended".into())));
        let (broker_epoch, cluster_id) = match started {
            Ok(started) => started,
            Err(e) => {
                let _ = thread.join();
                return Err(e);
            }
        };
        assert!(broker_epoch > 0, "a registration has a creation revision");
        Ok(Session {
            view,
            counters,
            commands,
            stop: Some(stop),
            thread: Some(thread),
            broker_epoch,
            cluster_id,
        })
    }

    /// The cluster as last read (each shard keeps a receiver and copies new views).
    pub fn view(&self) -> crate::cluster::ViewReceiver {
        self.view.clone()
    }

    /// What a shard needs of the cluster: the view it follows and the controller's queue.
    pub fn link(&self) -> crate::cluster::ClusterLink {
        crate::cluster::ClusterLink {
            views: self.view.clone(),
            commands: self.commands.clone(),
            counters: self.counters.clone(),
        }
    }

    /// The broker epoch of the registration made at start.
    pub fn broker_epoch(&self) -> i64 {
        self.broker_epoch
    }

    /// The cluster's id, the same on every node (created by the first node to start).
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// Ends the session: the lease is revoked, so the node leaves the cluster at once
    /// (and gives up the controller) instead of after the session timeout.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shut_down();
    }
}

type Ready = std::sync::mpsc::Sender<Result<(i64, String), ClusterError>>;

/// Topic commands waiting for the cluster thread (each from a client request that waits
/// for its answer, so the queue is bounded by the requests in flight too).
const COMMANDS_QUEUED: usize = 64;

/// How the cluster thread talks with the rest of the server.
struct Channels {
    ready: Ready,
    view: watch::Sender<Arc<ClusterView>>,
    stop: oneshot::Receiver<()>,
    commands: mpsc::Receiver<TopicCommand>,
    counters: Arc<crate::cluster::ClusterCounters>,
}

fn run(config: SessionConfig, channels: Channels) {
    let Channels {
        ready,
        view,
        stop,
        commands,
        counters,
    } = channels;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            let _ = ready.send(Err(ClusterError::Config(format!("tokio runtime: {e}"))));
            return;
        }
    };
    runtime.block_on(async move {
        let mut node = match Node::register(config, counters).await {
            Ok(node) => node,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let seeds = &node.config.security_seeds;
        if let Err(e) = security::seed(&node.etcd, &node.config.keys, seeds).await {
            let _ = node.etcd.revoke(node.lease).await;
            let _ = ready.send(Err(e));
            return;
        }
        let id = match cluster_id(&node.etcd, &node.config.keys).await {
            Ok(id) => id,
            Err(e) => {
                let _ = node.etcd.revoke(node.lease).await;
                let _ = ready.send(Err(e));
                return;
            }
        };
        node.tick(&view).await;
        let _ = ready.send(Ok((node.epoch, id)));
        node.serve(view, stop, commands).await;
    });
}

/// The session's state on its thread.
struct Node {
    etcd: Etcd,
    config: SessionConfig,
    lease: i64,
    /// This registration's broker epoch.
    epoch: i64,
    last_renewed: Instant,
    /// Whether the last renewal failed (so a long outage is logged once, not every beat).
    failing: bool,
    /// When the controller next checks leadership balance.
    next_rebalance: Instant,
    /// A controlled shutdown in progress.
    leaving: Option<Leaving>,
    counters: Arc<crate::cluster::ClusterCounters>,
    /// The controller (id, epoch) of the last view published.
    controller_seen: Option<(i32, i64)>,
}

/// A controlled shutdown waiting for the controller's moves.
struct Leaving {
    deadline: Instant,
    reply: oneshot::Sender<Result<Vec<String>, TopicRefused>>,
    /// The partitions it could not hand off were logged.
    told_stuck: bool,
}

/// How often a leaving node reads the cluster (its wait ends as soon as it sees the moves).
const LEAVING_BEAT: Duration = Duration::from_millis(200);

impl Node {
    async fn register(
        config: SessionConfig,
        counters: Arc<crate::cluster::ClusterCounters>,
    ) -> Result<Node, ClusterError> {
        let etcd = Etcd::new(config.endpoints.clone(), config.etcd_tls.clone())?;
        let (lease, epoch) = register(&etcd, &config).await?;
        tracing::info!(broker = config.me.id, epoch, endpoints = %etcd.endpoints().join(","), "registered in the cluster");
        let next_rebalance = Instant::now() + config.rebalance.map_or(Duration::ZERO, |r| r.0);
        Ok(Node {
            etcd,
            config,
            lease,
            epoch,
            last_renewed: Instant::now(),
            failing: false,
            next_rebalance,
            leaving: None,
            counters,
            controller_seen: None,
        })
    }

    async fn serve(
        mut self,
        view: watch::Sender<Arc<ClusterView>>,
        mut stop: oneshot::Receiver<()>,
        mut commands: mpsc::Receiver<TopicCommand>,
    ) {
        let mut next_beat = tokio::time::Instant::now() + self.config.heartbeat;
        loop {
            tokio::select! {
                _ = &mut stop => break,
                _ = tokio::time::sleep_until(next_beat) => {
                    self.tick(&view).await;
                    self.check_leaving(&view);
                    let beat = match self.leaving {
                        Some(_) => self.config.heartbeat.min(LEAVING_BEAT),
                        None => self.config.heartbeat,
                    };
                    next_beat = tokio::time::Instant::now() + beat;
                }
                Some(command) = commands.recv() => self.run_command(command, &view).await,
            }
        }
        match self.etcd.revoke(self.lease).await {
            Ok(()) => tracing::info!(broker = self.config.me.id, "left the cluster"),
            Err(e) => {
                tracing::warn!(error = %e, "revoking the session's lease failed; the node leaves when it expires")
            }
        }
    }

    /// One heartbeat: renew (or register again), read the cluster, campaign if there is
    /// no controller, publish.
    async fn tick(&mut self, view: &watch::Sender<Arc<ClusterView>>) {
        if let Err(e) = self.beat(view).await {
            self.note_failure(&e);
            if self.last_renewed.elapsed() > self.config.session_timeout {
                self.fence_self(view);
            }
        } else if std::mem::take(&mut self.failing) {
            tracing::info!("etcd answers again");
        }
    }

    /// This node's lease has expired for all it knows (etcd out of reach for longer than
    /// the session timeout): the cluster may have elected other leaders, so the shards see
    /// this node gone from the view, and stop serving as leader or controller, until a
    /// renewed registration says otherwise. A lease is not a lock (Jepsen's etcd finding).
    fn fence_self(&self, view: &watch::Sender<Arc<ClusterView>>) {
        let me = self.config.me.id;
        view.send_if_modified(|current| {
            let listed = current.broker(me).is_some();
            let controlling = current.controller.is_some_and(|c| c.id == me);
            if !listed && !controlling {
                return false;
            }
            let mut fenced = (**current).clone();
            fenced.brokers.retain(|b| b.id != me);
            if controlling {
                fenced.controller = None;
            }
            // Fenced: the shards see this node neither listed nor controlling.
            assert!(fenced.broker(me).is_none(), "broker {me} still listed");
            assert!(fenced.controller.is_none_or(|c| c.id != me));
            *current = Arc::new(fenced);
            tracing::error!(broker = me, "fenced: this node's registration may have expired; it serves no partition as leader until etcd answers");
            true
        });
    }

    async fn beat(&mut self, view: &watch::Sender<Arc<ClusterView>>) -> Result<(), ClusterError> {
        self.renew().await?;
        let mut current = self.read().await?;
        if current.controller.is_none() {
            self.campaign().await?;
            current = self.read().await?;
        }
        let (etcd, keys, me) = (&self.etcd, &self.config.keys, self.config.me.id);
        let elected = controller::elect_leaders(etcd, keys, &current, me).await?;
        ClusterCounters::add(&self.counters.leader_elections, elected.leaders);
        if elected.writes > 0 {
            current = self.read().await?;
        }
        if internal_topics::create_all_wanted(etcd, keys, &current, me).await? > 0 {
            current = self.read().await?;
        }
        if let Some(percentage) = self.rebalance_due() {
            let (etcd, keys) = (&self.etcd, &self.config.keys);
            let moved = controller::rebalance_leaders(etcd, keys, &current, me, percentage).await?;
            ClusterCounters::add(&self.counters.leader_elections, moved);
            if moved > 0 {
                current = self.read().await?;
            }
        }
        self.note_controller(&current);
        publish(view, current);
        Ok(())
    }

    /// Counts a controller (or controller epoch) other than the last one seen.
    fn note_controller(&mut self, current: &ClusterView) {
        let now = current.controller.map(|c| (c.id, c.epoch));
        if now.is_some() && now != self.controller_seen {
            ClusterCounters::add(&self.counters.controller_changes, 1);
            self.controller_seen = now;
        }
    }

    /// The imbalance percentage when the controller's leadership balance check is due now
    /// (and when the next one is).
    fn rebalance_due(&mut self) -> Option<u32> {
        let (interval, percentage) = self.config.rebalance?;
        let now = Instant::now();
        if now < self.next_rebalance {
            return None;
        }
        self.next_rebalance = now + interval;
        Some(percentage)
    }

    /// Starts a controlled shutdown: the registration says so from now on (a registration
    /// made again after an expiry too), and the wait ends in `check_leaving`.
    async fn start_leaving(
        &mut self,
        bound: Duration,
        reply: oneshot::Sender<Result<Vec<String>, TopicRefused>>,
        view: &watch::Sender<Arc<ClusterView>>,
    ) {
        self.config.me.shutting_down = true;
        let (etcd, keys) = (&self.etcd, &self.config.keys);
        match crate::cluster::leaving::mark(etcd, keys, &self.config.me, self.epoch).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                "this node's registration changed before it could be marked as shutting down"
            ),
            Err(e) => {
                let _ = reply.send(Err(e.into()));
                return;
            }
        }
        tracing::info!(
            broker = self.config.me.id,
            bound_ms = bound.as_millis() as u64,
            "controlled shutdown: waiting for the controller to move this node's leaderships"
        );
        self.leaving = Some(Leaving {
            deadline: Instant::now() + bound,
            reply,
            told_stuck: false,
        });
        self.republish(view).await;
        self.check_leaving(view);
    }

    /// Ends a controlled shutdown's wait once the view shows nothing left to move, or at
    /// its deadline; says once which partitions cannot hand off.
    fn check_leaving(&mut self, view: &watch::Sender<Arc<ClusterView>>) {
        let Some(leaving) = &mut self.leaving else {
            return;
        };
        let me = self.config.me.id;
        let left = crate::cluster::leaving::remaining(&view.borrow(), me);
        if !left.stuck.is_empty() && !std::mem::replace(&mut leaving.told_stuck, true) {
            tracing::warn!(broker = me, partitions = ?left.stuck, "controlled shutdown: this node is the last in-sync replica of these partitions, so their leadership cannot move; waiting up to controlled.shutdown.max.retries x retry.backoff.ms for a follower to catch up");
        }
        let timed_out = Instant::now() >= leaving.deadline;
        if !left.is_empty() && !timed_out {
            return;
        }
        let mut names = left.moving;
        names.extend(left.stuck);
        match names.is_empty() {
            true => tracing::info!(broker = me, "controlled shutdown: every leadership moved"),
            false => {
                tracing::warn!(broker = me, partitions = ?names, "controlled shutdown: stopping with partitions not moved")
            }
        }
        if let Some(leaving) = self.leaving.take() {
            let _ = leaving.reply.send(Ok(names));
        }
    }

    /// A client's topic change, run against a fresh read; the view that shows it is
    /// published before the answer, so the node that asked serves the change at once.
    async fn run_command(&mut self, command: TopicCommand, view: &watch::Sender<Arc<ClusterView>>) {
        let current = match self.read().await {
            Ok(current) => current,
            Err(e) => return command.refuse(e.into()),
        };
        let answer = match command {
            TopicCommand::Leave { bound, reply } => {
                return self.start_leaving(bound, reply, view).await;
            }
            TopicCommand::ClaimProducerIds { .. }
            | TopicCommand::SwapValue { .. }
            | TopicCommand::ElectLeaders { .. }
            | TopicCommand::Reassign { .. } => self.run_cluster_command(command, &current).await,
            topic => self.run_topic_command(topic, &current).await,
        };
        self.republish(view).await;
        if !answer.send() {
            tracing::debug!("a topic command's requester went away before its answer");
        }
    }

    /// A change of one topic or partition.
    async fn run_topic_command(&self, command: TopicCommand, current: &ClusterView) -> Answer {
        let (etcd, keys, me) = (&self.etcd, &self.config.keys, self.config.me.id);
        match command {
            TopicCommand::Create { spec, reply } => {
                let created = controller::create_topic(etcd, keys, current, me, spec).await;
                Answer::Topic(reply, created)
            }
            TopicCommand::Delete { name, reply } => {
                let deleted = controller::delete_topic(etcd, keys, current, me, &name).await;
                Answer::Done(reply, deleted)
            }
            TopicCommand::Grow { name, count, reply } => {
                let asked = (name.as_str(), count);
                let grown = controller::grow_topic(etcd, keys, current, me, asked).await;
                Answer::Done(reply, grown)
            }
            TopicCommand::SetConfigs {
                name,
                configs,
                reply,
            } => {
                let set = controller::set_topic_configs(etcd, keys, current, &name, &configs);
                Answer::Done(reply, set.await)
            }
            TopicCommand::AlterIsr {
                topic,
                partition,
                change,
                reply,
            } => {
                let at = (topic.as_str(), partition);
                let changed = controller::change_isr(etcd, keys, current, at, &change).await;
                Answer::Done(reply, changed)
            }
            TopicCommand::WantInternal { spec, reply } => {
                let wanted = internal_topics::want(etcd, keys, current, me, spec).await;
                Answer::Done(reply, wanted)
            }
            other => unreachable!("not a topic command: {other:?}"),
        }
    }

    /// A change of the cluster's own values: producer id blocks, security, elections.
    async fn run_cluster_command(&self, command: TopicCommand, current: &ClusterView) -> Answer {
        let (etcd, keys, me) = (&self.etcd, &self.config.keys, self.config.me.id);
        match command {
            TopicCommand::ClaimProducerIds { size, reply } => {
                let claimed = crate::cluster::producer_ids::claim_block(etcd, keys, size).await;
                Answer::Block(reply, claimed)
            }
            TopicCommand::SwapValue {
                of,
                expected,
                value,
                reply,
            } => {
                let swapped = security::swap(etcd, &keys.shared(&of), expected, value).await;
                Answer::Swapped(reply, swapped.map_err(TopicRefused::from))
            }
            TopicCommand::ElectLeaders {
                kind,
                partitions,
                reply,
            } => {
                let asked = (kind, partitions);
                let elected = controller::elect_asked(etcd, keys, current, me, asked).await;
                let done = elected
                    .iter()
                    .flatten()
                    .filter(|(_, _, o)| o.is_ok())
                    .count();
                ClusterCounters::add(&self.counters.leader_elections, done);
                if kind == controller::ElectionKind::Unclean {
                    ClusterCounters::add(&self.counters.unclean_leader_elections, done);
                }
                Answer::Elected(reply, elected)
            }
            TopicCommand::Reassign { partitions, reply } => {
                let reassigned =
                    crate::cluster::reassign::reassign_asked(etcd, keys, current, me, partitions);
                Answer::Reassigned(reply, reassigned.await)
            }
            other => unreachable!("not a cluster command: {other:?}"),
        }
    }

    /// Reads and publishes the cluster now (after a change this node made).
    async fn republish(&mut self, view: &watch::Sender<Arc<ClusterView>>) {
        match self.read().await {
            Ok(current) => publish(view, current),
            Err(e) => self.note_failure(&e),
        }
    }

    async fn renew(&mut self) -> Result<(), ClusterError> {
        if self.etcd.keep_alive(self.lease).await? > 0 {
            self.last_renewed = Instant::now();
            return Ok(());
        }
        tracing::error!(broker = self.config.me.id, old_epoch = self.epoch, "this node's registration expired (etcd was out of reach for longer than broker.session.timeout.ms); registering again with a new broker epoch");
        let (lease, epoch) = register(&self.etcd, &self.config).await?;
        assert!(epoch > self.epoch, "a new registration has a larger epoch");
        (self.lease, self.epoch, self.last_renewed) = (lease, epoch, Instant::now());
        tracing::info!(
            broker = self.config.me.id,
            epoch,
            "registered in the cluster again"
        );
        Ok(())
    }

    async fn read(&self) -> Result<ClusterView, ClusterError> {
        let keys = &self.config.keys;
        let (revision, kvs) = self.etcd.range_prefix(keys.root()).await?;
        Ok(ClusterView::from_keys(keys, revision, &kvs))
    }

    /// Creates the controller key under this node's lease; whoever creates it first is the
    /// controller until its lease ends.
    async fn campaign(&self) -> Result<(), ClusterError> {
        let me = self.config.me.id;
        let key = self.config.keys.controller();
        match self
            .etcd
            .create(&key, &encode_controller(me), self.lease)
            .await?
        {
            Created::Yes { revision } => {
                tracing::info!(
                    broker = me,
                    controller_epoch = revision,
                    "became the controller"
                )
            }
            Created::Taken(_) => {}
        }
        Ok(())
    }

    fn note_failure(&mut self, e: &ClusterError) {
        let away = self.last_renewed.elapsed();
        if !std::mem::replace(&mut self.failing, true) {
            tracing::warn!(error = %e, "the cluster session's heartbeat failed; retrying every broker.heartbeat.interval.ms");
        }
        if away > self.config.session_timeout {
            tracing::error!(error = %e, away_ms = away.as_millis() as u64, "etcd has been out of reach for longer than broker.session.timeout.ms: the cluster considers this node dead until it registers again");
        }
    }
}

/// A command's outcome, sent once the view that shows it is published.
type ReassignResult = crate::cluster::controller::ReassignResult;

enum Answer {
    Topic(
        oneshot::Sender<Result<crate::cluster::ClusterTopic, TopicRefused>>,
        Result<crate::cluster::ClusterTopic, TopicRefused>,
    ),
    Done(
        oneshot::Sender<Result<(), TopicRefused>>,
        Result<(), TopicRefused>,
    ),
    Block(
        oneshot::Sender<Result<i64, TopicRefused>>,
        Result<i64, TopicRefused>,
    ),
    Swapped(
        oneshot::Sender<Result<security::Swapped, TopicRefused>>,
        Result<security::Swapped, TopicRefused>,
    ),
    Elected(
        oneshot::Sender<Result<Vec<controller::ElectionResult>, TopicRefused>>,
        Result<Vec<controller::ElectionResult>, TopicRefused>,
    ),
    Reassigned(
        oneshot::Sender<Result<Vec<ReassignResult>, TopicRefused>>,
        Result<Vec<ReassignResult>, TopicRefused>,
    ),
}

impl Answer {
    /// Whether the requester was still there to take it.
    fn send(self) -> bool {
        match self {
            Answer::Topic(reply, outcome) => reply.send(outcome).is_ok(),
            Answer::Done(reply, outcome) => reply.send(outcome).is_ok(),
            Answer::Block(reply, outcome) => reply.send(outcome).is_ok(),
            Answer::Swapped(reply, outcome) => reply.send(outcome).is_ok(),
            Answer::Elected(reply, outcome) => reply.send(outcome).is_ok(),
            Answer::Reassigned(reply, outcome) => reply.send(outcome).is_ok(),
        }
    }
}

/// Hands `current` to the shards if it differs from what they have.
fn publish(view: &watch::Sender<Arc<ClusterView>>, current: ClusterView) {
    view.send_if_modified(|old| {
        let changed = **old != current;
        if changed {
            *old = Arc::new(current);
        }
        changed
    });
}

/// Registers `config.me` under a new lease: (lease, broker epoch). A key held by an
/// earlier incarnation of this same data directory (killed before its lease ended) is
/// taken over at once; one held by another node is refused.
/// The cluster's id: read, or created (a random UUID, with no lease: it outlives every
/// node) by the first node to start.
async fn cluster_id(etcd: &Etcd, keys: &crate::cluster::Keys) -> Result<String, ClusterError> {
    let key = keys.cluster_id();
    let fresh = crate::catalog::topics::new_topic_id().to_string();
    // Twice at most: a holder that vanished between the compare and the read.
    for _ in 0..2 {
        let held = match etcd.create(&key, fresh.as_bytes(), 0).await? {
            crate::cluster::etcd::Created::Yes { .. } => return Ok(fresh),
            crate::cluster::etcd::Created::Taken(kv) => kv.value,
        };
        match String::from_utf8(held) {
            Ok(id) if !id.is_empty() => return Ok(id),
            Ok(_) => continue,
            Err(_) => break,
        }
    }
    Err(ClusterError::Etcd(format!(
        "{key} does not hold the cluster's id (a UUID)"
    )))
}

async fn register(etcd: &Etcd, config: &SessionConfig) -> Result<(i64, i64), ClusterError> {
    let ttl_s = config.session_timeout.as_secs().max(1) as i64;
    let key = config.keys.broker(config.me.id);
    let value = config.me.encode();
    // Twice at most: once to find an earlier incarnation's key, once after revoking it.
    for _ in 0..2 {
        let lease = etcd.grant(ttl_s).await?;
        let held = match etcd.create(&key, &value, lease).await {
            Ok(Created::Yes { revision }) => return Ok((lease, revision)),
            Ok(Created::Taken(held)) => held,
            Err(e) => {
                let _ = etcd.revoke(lease).await;
                return Err(e);
            }
        };
        etcd.revoke(lease).await?;
        let holder = BrokerRegistration::decode(&held);
        match holder {
            Some(h) if h.directory == config.me.directory => {
                tracing::info!(
                    broker = config.me.id,
                    old_epoch = h.epoch,
                    "an earlier run of this node is still registered; replacing its registration"
                );
                etcd.revoke(held.lease).await?;
            }
            Some(h) => {
                return Err(ClusterError::DuplicateBrokerId {
                    id: config.me.id,
                    holder: h.describe(),
                })
            }
            // Gone between the compare and the read, or unreadable: try again.
            None if held.create_revision == 0 => {}
            None => {
                etcd.delete_if_created_at(&key, held.create_revision)
                    .await?
            }
        }
    }
    Err(ClusterError::Etcd(format!(
        "registering broker {} did not settle; retry",
        config.me.id
    )))
}
