//! The shardlog server: one pinned glommio executor per shard, each owning its partitions,
//! listening on the shared port (SO_REUSEPORT) and on its own port, and forwarding requests
//! for partitions it does not own to their owner over the channel mesh.

pub mod stop;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glommio::channels::channel_mesh::{Full, MeshBuilder};
use glommio::net::TcpListener;
use glommio::{LocalExecutorPoolBuilder, PoolPlacement, PoolThreadHandles};

use crate::catalog::data_dir;
use crate::catalog::error::CatalogError;
use crate::io::deadline::before;
use crate::net::accept::{accept_loop, Listener};
pub use crate::settings as config;
pub use crate::settings::ServerConfig;
use crate::shard::messages::{MeshMsg, ShardOp};
use crate::shard::{ClosedPartitions, Shard};

/// Marker written after a clean shutdown and removed at start (FORMAT.md).
pub const CLEAN_SHUTDOWN_FILE: &str = ".clean-shutdown";
/// Capacity of each mesh channel between two shards.
const MESH_CAPACITY: usize = 1024;

/// Why the server could not start, or did not stop cleanly.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
    /// The data directory, its topics or a port (`catalog`); shared, as the error is cloned
    /// to every shard's handle.
    #[error(transparent)]
    Catalog(Arc<CatalogError>),
    /// Before any shard runs: the data directory, its ports, the executors, the sockets.
    #[error("{0}")]
    Startup(String),
    /// A listener could not be bound.
    #[error("binding {addr}: {why}")]
    Bind { addr: SocketAddr, why: String },
    /// Cluster mode could not join (etcd, the broker id, the listeners it advertises).
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    /// A shard could not start.
    #[error("shard {shard}: {why}")]
    Shard { shard: usize, why: String },
    /// The stop was not clean (the next start recovers what it left).
    #[error("{0}")]
    Shutdown(String),
}

impl From<CatalogError> for ServerError {
    fn from(e: CatalogError) -> Self {
        ServerError::Catalog(Arc::new(e))
    }
}

/// The command line reports server errors as text.
impl From<ServerError> for String {
    fn from(e: ServerError) -> String {
        e.to_string()
    }
}

/// A running server.
pub struct ServerHandle {
    stop: stop::StopNotifier,
    handles: PoolThreadHandles<Result<(), ServerError>>,
    data_dir: PathBuf,
    /// Whether the previous run ended with a clean shutdown.
    pub previous_shutdown_was_clean: bool,
    /// The data directory is ours while this is held (released when the handle goes).
    _lock: data_dir::DataDirLock,
    /// Keeps the mesh builder's shared state alive for the server's life (see `start`).
    _mesh: MeshBuilder<MeshMsg, Full>,
    /// Cluster mode's etcd session: ended (its lease revoked) once the shards have stopped.
    cluster: Option<crate::cluster::Session>,
    /// How long a signal's controlled shutdown may wait for leaderships to move (None:
    /// not in cluster mode, or controlled.shutdown.enable=false).
    controlled_shutdown: Option<Duration>,
}

impl ServerHandle {
    /// SIGINT and SIGTERM stop the server (as `stop` does); a cluster node first hands
    /// its leaderships to in-sync followers (controlled shutdown).
    /// SIGHUP reloads the TLS listeners' certificates.
    pub fn stop_on_signals(&self) -> Result<(), ServerError> {
        let failed =
            |e: std::io::Error| ServerError::Startup(format!("installing signal handlers: {e}"));
        let handoff = (self.cluster.as_ref()).zip(self.controlled_shutdown);
        match handoff {
            Some((session, bound)) => {
                let link = session.link();
                let leave = move || drop(link.leave(bound));
                self.stop.on_signals_after(leave).map_err(failed)?;
            }
            None => self.stop.on_signals().map_err(failed)?,
        }
        crate::net::tls::reload_on_sighup().map_err(failed)
    }

    /// Whether a stop was requested (a signal, or `stop`).
    pub fn stop_requested(&self) -> bool {
        self.stop.requested()
    }

    /// Waits until every shard has stopped (after the flag is set), then writes the
    /// clean-shutdown marker if every shard closed cleanly.
    pub fn wait(self) -> Result<(), ServerError> {
        let mut first_err = None;
        for r in self.handles.join_all() {
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(e) => {
                    let why = format!("shard thread failed: {e:?}");
                    first_err.get_or_insert(ServerError::Shutdown(why));
                }
            }
        }
        // The node leaves the cluster now rather than when its lease would expire.
        if let Some(session) = self.cluster {
            session.stop();
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        crate::io::os::write_marker(&self.data_dir, CLEAN_SHUTDOWN_FILE).map_err(|e| {
            let marker = self.data_dir.join(CLEAN_SHUTDOWN_FILE);
            ServerError::Shutdown(format!("writing {}: {e}", marker.display()))
        })?;
        tracing::info!("clean shutdown complete");
        Ok(())
    }

    /// Stops the server: stop accepting, finish in-flight requests, close every partition.
    pub fn stop(self) -> Result<(), ServerError> {
        self.stop.notify();
        self.wait()
    }
}

/// Waits until each of the `n` shards reports it is listening; on the first failure stops
/// the others and returns that failure.
fn wait_until_ready(
    handle: ServerHandle,
    ready: &mpsc::Receiver<Result<usize, ServerError>>,
    n: usize,
) -> Result<ServerHandle, ServerError> {
    for _ in 0..n {
        let failure = match ready.recv() {
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => e,
            Err(_) => ServerError::Startup("a shard exited during start-up".to_string()),
        };
        handle.stop.notify();
        let _ = handle.wait();
        return Err(failure);
    }
    Ok(handle)
}

/// Starts the server and returns once every shard is listening.
pub fn start(config: ServerConfig) -> Result<ServerHandle, ServerError> {
    config.validate()?;
    // Before anything in the directory is read: one server per data directory.
    let lock = data_dir::lock(&config.data_dir)?;
    for addr in config.listen_addrs() {
        data_dir::check_port_free(addr)?;
    }
    let previous_shutdown_was_clean = prepare_data_dir(&config)?;
    raise_fd_limit(&config);
    let cluster = join_cluster(&config)?;
    let tiering = open_tiering(&config, cluster.as_ref().map(|c| c.cluster_id()))?;
    let cluster_id = kafka_cluster_id(&config, cluster.as_ref())?;
    let settings = &config.cluster;
    let controlled_shutdown = (cluster.is_some() && settings.controlled_shutdown)
        .then(|| settings.controlled_shutdown_bound());

    let (stop, stop_listeners) = stop::stop_pair(config.shards)
        .map_err(|e| startup(format!("creating stop sockets: {e}")))?;
    let (ready_tx, ready_rx) = mpsc::channel::<Result<usize, ServerError>>();
    let mesh: MeshBuilder<MeshMsg, Full> = MeshBuilder::full(config.shards, MESH_CAPACITY);
    // glommio's MeshBuilder keeps its peer list in an `Rc`: cloning it on the executor
    // threads (at once) races on the count and freed it under a joining shard (SIGSEGV in
    // about one start in fifteen). Every clone is made here, on this thread, one per shard;
    // each shard takes its own from a lock-free queue, and the original lives as long as
    // the server. Each shard also takes its end of the stop sockets there.
    let per_shard = Arc::new(crossbeam_queue::ArrayQueue::new(config.shards));
    for item in (0..config.shards).map(|_| mesh.clone()).zip(stop_listeners) {
        let pushed = per_shard.push(item).is_ok();
        assert!(pushed, "the queue holds one item per shard");
    }
    let config = Arc::new(config);
    let data_dir = config.data_dir.clone();
    let n = config.shards;
    let start = ShardStart {
        previous_shutdown_clean: previous_shutdown_was_clean,
        tiering,
        cluster: cluster.as_ref().map(crate::cluster::Session::link),
        cluster_id,
    };
    let handles = spawn_shards(config.clone(), per_shard, ready_tx, start)?;
    let handle = ServerHandle {
        stop,
        handles,
        data_dir,
        previous_shutdown_was_clean,
        _lock: lock,
        _mesh: mesh,
        cluster,
        controlled_shutdown,
    };
    let handle = wait_until_ready(handle, &ready_rx, n)?;
    tracing::info!(
        listen = %config.listen,
        kafka_listeners = %crate::security::listeners::format(&config.kafka_listeners()),
        shards = n,
        data_dir = %config.data_dir.display(),
        "shardlog serving"
    );
    Ok(handle)
}

/// Each shard's mesh builder and end of the stop sockets, taken once by its executor.
type PerShard = Arc<crossbeam_queue::ArrayQueue<(MeshBuilder<MeshMsg, Full>, stop::StopListener)>>;

/// One pinned executor per shard, each running `run_shard` from its share of `per_shard`.
fn spawn_shards(
    config: Arc<ServerConfig>,
    per_shard: PerShard,
    ready: mpsc::Sender<Result<usize, ServerError>>,
    start: ShardStart,
) -> Result<PoolThreadHandles<Result<(), ServerError>>, ServerError> {
    let n = config.shards;
    LocalExecutorPoolBuilder::new(PoolPlacement::MaxSpread(n, None))
        .io_memory(config.io_memory_bytes)
        .spin_before_park(Duration::from_micros(config.spin_before_park_us))
        .name("shardlog-shard")
        .on_all_shards(move || {
            let config = config.clone();
            let (mesh, stop) = per_shard.pop().expect("one mesh builder per shard");
            let (ready, start) = (ready.clone(), start.clone());
            async move { run_shard(config, mesh, stop, ready, start).await }
        })
        .map_err(|e| startup(format!("starting {n} shard executors: {e}")))
}

/// Raises the fd limit for the descriptors the config allows: two per connection (reader
/// and writer) per protocol, and the shards' pools of open files.
fn raise_fd_limit(config: &ServerConfig) {
    let shards = config.shards as u64;
    let connection_fds = shards * config.max_connections_per_shard as u64 * 2 * 2;
    let file_fds = shards * config.max_open_files_per_shard as u64;
    crate::io::limits::raise_fd_limit(connection_fds, file_fds);
}

/// The start-up pass over the data directory, through the storage seam on an executor of
/// its own (io_uring, as every shard's file work): the clean-shutdown marker is taken,
/// interrupted deletions are finished, leftovers quarantined and trash removed in the
/// background. Returns whether the previous run shut down cleanly.
fn prepare_data_dir(config: &ServerConfig) -> Result<bool, ServerError> {
    let (dir, shards) = (config.data_dir.clone(), config.shards as u32);
    let pass = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .name("shardlog-start")
        .spawn(move || async move {
            let storage = crate::io::DmaStorage::new(dir.clone());
            // Failing to remove the marker is fatal: a later crash would skip recovery.
            let clean = take_clean_shutdown_marker(&*storage, &dir)
                .await
                .map_err(CatalogError::io("removing the clean-shutdown marker", &dir))?;
            let prepared = data_dir::prepare(&*storage, &dir, shards).await?;
            data_dir::remove_in_background(prepared.trash);
            Ok::<_, CatalogError>(clean)
        })
        .map_err(|e| startup(format!("starting the start-up executor: {e}")))?;
    Ok(pass
        .join()
        .map_err(|e| startup(format!("the start-up pass failed: {e}")))??)
}

/// Whether the previous run shut down cleanly; the marker is removed (durably) so that a
/// crash of this run is recovered at the next start. Failing to remove it is fatal.
async fn take_clean_shutdown_marker(
    storage: &dyn crate::io::storage::Storage,
    data_dir: &std::path::Path,
) -> std::io::Result<bool> {
    match storage.remove(&data_dir.join(CLEAN_SHUTDOWN_FILE)).await {
        Ok(()) => storage.sync_dir(data_dir).await.map(|()| true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The object store of tiered storage and the writer id its manifests name, when
/// `remote.storage.url` is set: the cluster's in cluster mode (its nodes take turns as
/// each partition's leader), else this data directory's.
fn open_tiering(
    config: &ServerConfig,
    cluster_id: Option<&str>,
) -> Result<Option<crate::remote::Tiering>, ServerError> {
    if config.remote_storage_url.is_empty() {
        return Ok(None);
    }
    let store =
        crate::remote::open_store(&config.remote_storage_url, &config.remote_storage_endpoint)
            .map_err(|e| startup(e.to_string()))?;
    if let Some(id) = cluster_id {
        let writer = format!("cluster-{id}");
        return Ok(Some(crate::remote::Tiering { store, writer }));
    }
    let writer = crate::remote::writer_id(&config.data_dir).map_err(|e| {
        startup(format!(
            "the remote writer id in {}: {e}",
            config.data_dir.display()
        ))
    })?;
    Ok(Some(crate::remote::Tiering { store, writer }))
}

/// The cluster id Metadata and DescribeCluster report, as Kafka's `cluster.id`: in cluster
/// mode the cluster's own (in etcd, the same on every node), else this data directory's
/// (created at its first start, so it stays the same across restarts).
fn kafka_cluster_id(
    config: &ServerConfig,
    cluster: Option<&crate::cluster::Session>,
) -> Result<String, ServerError> {
    if let Some(session) = cluster {
        return Ok(session.cluster_id().to_string());
    }
    let path = config.data_dir.join(CLUSTER_ID_FILE);
    let id = crate::io::os::read_or_create_id(&path)
        .map_err(|e| startup(format!("the cluster id in {}: {e}", path.display())))?;
    assert!(!id.is_empty(), "a cluster id is never empty");
    Ok(id)
}

/// A single node's cluster id, in its data directory (FORMAT.md).
const CLUSTER_ID_FILE: &str = "cluster-id";

/// Cluster mode (`cluster.etcd.endpoints`): registers this node in etcd before any shard
/// starts, so a broker.id another live node holds is refused before anything is served.
fn join_cluster(config: &ServerConfig) -> Result<Option<crate::cluster::Session>, ServerError> {
    if !config.cluster.enabled() {
        return Ok(None);
    }
    let session =
        crate::cluster::session_config(config).and_then(crate::cluster::Session::start)?;
    Ok(Some(session))
}

/// What every shard starts from besides its config.
#[derive(Clone)]
struct ShardStart {
    previous_shutdown_clean: bool,
    tiering: Option<crate::remote::Tiering>,
    /// The cluster session's views and command queue (cluster mode only).
    cluster: Option<crate::cluster::ClusterLink>,
    /// The id Kafka clients are told (see [`kafka_cluster_id`]).
    cluster_id: String,
}

fn startup(why: String) -> ServerError {
    ServerError::Startup(why)
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(addr).map_err(|e| ServerError::Bind {
        addr,
        why: e.to_string(),
    })
}

/// The shard's listeners: the shared native port, its own port, and the Kafka port.
async fn start_shard(shard: &Rc<Shard>) -> Result<Vec<Listener>, ServerError> {
    let cfg = shard.config();
    crate::io::ensure_iopoll_probe_workaround(&cfg.data_dir)
        .await
        .map_err(|e| startup(e.to_string()))?;
    shard.load_topics().await?;
    if !cfg.cluster.enabled() {
        install_security_files(&cfg.data_dir)?;
    }
    crate::groups::loading::start_loading(&Shard::group_host(shard));
    crate::txn::load::start_loading(&Shard::txn_host(shard));
    crate::shard::services::maintenance::spawn(shard.clone());
    let shared = bind(cfg.listen).await?;
    let own = bind(SocketAddr::new(cfg.listen.ip(), cfg.shard_port(shard.id()))).await?;
    let native_listener = cfg.native_listener();
    let security = listener_security(shard, &cfg.for_native(), native_listener.protocol)?;
    let front: Rc<dyn crate::net::FrontEnd> = Rc::new(crate::native::Native { security });
    // The native listener's two sockets share its slots; each Kafka listener has its own.
    let native_slots = listener_slots(&cfg.for_native());
    let native = |socket| Listener {
        socket,
        front: front.clone(),
        slots: native_slots.clone(),
    };
    let mut listeners = vec![native(shared), native(own)];
    for kafka in cfg.kafka_listeners() {
        let own = cfg.for_listener(&kafka);
        let security = listener_security(shard, &own, kafka.protocol)?;
        listeners.push(Listener {
            socket: bind(kafka.addr).await?,
            front: Rc::new(crate::kafka::Kafka { security }),
            slots: listener_slots(&own),
        });
    }
    if let (Some(addr), 0) = (cfg.metrics_listen, shard.id()) {
        let listener = bind(addr).await?;
        let metrics = cfg.for_metrics();
        let tls = listener_security(shard, &metrics, metrics.metrics_security_protocol)?.tls;
        crate::tasks::spawn(crate::net::metrics_http::serve(
            shard.clone(),
            listener,
            tls,
        ))
        .detach();
    }
    Ok(listeners)
}

/// Enforces the node's own SCRAM credentials and ACLs (a single node; in cluster mode the
/// cluster's copies in etcd are enforced, seeded from these files when etcd has none).
fn install_security_files(data_dir: &std::path::Path) -> Result<(), ServerError> {
    let meta_dir = data_dir.join(crate::catalog::topics::META_DIR);
    let credentials = crate::security::credentials::CredentialStore::read(&meta_dir)
        .map_err(|e| startup(e.to_string()))?;
    crate::security::credentials::install(credentials);
    let acls = crate::security::acl_store::AclStore::read(&meta_dir)
        .map_err(|e| startup(e.to_string()))?;
    crate::security::authorizer::install(acls);
    Ok(())
}

/// One listener's slots on a shard (`cfg`: the listener's own settings): its share of
/// `max.connections` (Kafka's, per listener with `listener.name.<name>.max.connections`),
/// at most `max.connections.per.shard`, and this shard's share of each peer's.
fn listener_slots(cfg: &ServerConfig) -> Rc<crate::admission::slots::Slots> {
    let shards = cfg.shards.max(1);
    let per_shard = (cfg.max_connections.div_ceil(shards)).min(cfg.max_connections_per_shard);
    let per_peer = cfg.max_connections_per_ip.div_ceil(shards);
    // The shards' shares cover the listener's limits (rounded up, never down to none).
    assert!(
        per_shard.saturating_mul(shards) >= cfg.max_connections.min(cfg.max_connections_per_shard)
    );
    assert!(per_peer.saturating_mul(shards) >= cfg.max_connections_per_ip);
    crate::admission::slots::Slots::new(per_shard, per_peer)
}

/// A listener's security from its settings (`own`: the server's, with the listener's own
/// keys over them); a TLS listener's certificate is watched for changes from now on.
fn listener_security(
    shard: &Rc<Shard>,
    own: &ServerConfig,
    protocol: crate::security::SecurityProtocol,
) -> Result<crate::net::listener_security::ListenerSecurity, ServerError> {
    let tls = match (&own.ssl_keystore_location, protocol.is_tls()) {
        (Some(keystore), true) => {
            let settings = crate::net::tls::TlsSettings {
                keystore: keystore.clone(),
                truststore: own.ssl_truststore_location.clone(),
                client_auth: own.ssl_client_auth,
            };
            let source =
                crate::net::tls::TlsSource::load(settings).map_err(|e| startup(e.to_string()))?;
            spawn_tls_reloader(shard.clone(), source.clone());
            Some(source)
        }
        _ => None,
    };
    let rules = &own.ssl_principal_mapping_rules;
    let mapper = crate::security::principal_mapping::PrincipalMapper::parse(rules)
        .map_err(|e| startup(e.to_string()))?;
    let reauth = own.connections_max_reauth_ms;
    Ok(crate::net::listener_security::ListenerSecurity {
        protocol,
        mechanisms: own.sasl_enabled_mechanisms.clone(),
        tls,
        mapper,
        session_lifetime: (reauth > 0).then(|| std::time::Duration::from_millis(reauth)),
    })
}

/// Looks at a TLS listener's keystore every `RELOAD_CHECK` until the shard stops.
fn spawn_tls_reloader(shard: Rc<Shard>, source: Rc<crate::net::tls::TlsSource>) {
    crate::tasks::spawn(async move {
        while !shard.is_shutting_down() {
            glommio::timer::sleep(crate::net::tls::RELOAD_CHECK).await;
            source.refresh();
        }
    })
    .detach();
}

async fn run_shard(
    config: Arc<ServerConfig>,
    mesh: MeshBuilder<MeshMsg, Full>,
    stop: stop::StopListener,
    ready: mpsc::Sender<Result<usize, ServerError>>,
    start: ShardStart,
) -> Result<(), ServerError> {
    // Join first: every peer must join, or the others wait forever.
    let (senders, mut receivers) = mesh
        .join()
        .await
        .map_err(|_| startup("joining the shard mesh failed".to_string()))?;
    let id = senders.peer_id();
    let shard = Shard::new(
        id,
        Rc::new((*config).clone()),
        senders,
        start.previous_shutdown_clean,
        start.tiering,
        start.cluster_id.into(),
        crate::shard::registered_services(),
    );
    if let Some(link) = start.cluster {
        shard.follow_cluster(link);
        crate::kafka::replica_fetcher::start(&shard);
        crate::kafka::txn_peers::KafkaPeerCalls::install(&shard);
    }
    for (_, rx) in receivers.streams() {
        let shard = shard.clone();
        crate::tasks::spawn(async move {
            while let Some(msg) = rx.recv().await {
                shard.on_mesh_message(msg);
            }
        })
        .detach();
    }

    match start_shard(&shard).await {
        Ok(listeners) => {
            let _ = ready.send(Ok(id));
            for listener in listeners {
                crate::tasks::spawn(accept_loop(shard.clone(), listener)).detach();
            }
            // Parked on the reactor until a stop: no polling timer.
            stop.wait().await;
        }
        Err(e) => {
            tracing::error!(shard = id, error = %e, "shard failed to start");
            let why = e.to_string();
            let _ = ready.send(Err(ServerError::Shard { shard: id, why }));
        }
    }
    shutdown_shard(&shard).await
}

/// Clean shutdown of one shard: stop accepting, let connections finish what they read, tell
/// the other shards, wait until they are drained too (they may still forward to us), then
/// close every partition (flush, fdatasync, trim, write indexes).
async fn shutdown_shard(shard: &Rc<Shard>) -> Result<(), ServerError> {
    shard.begin_shutdown();
    let deadline = Instant::now() + Duration::from_millis(shard.config().shutdown_timeout_ms);
    while shard.open_connections() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    if shard.open_connections() > 0 {
        tracing::warn!(
            shard = shard.id(),
            open = shard.open_connections(),
            "connections still open at shutdown timeout"
        );
    }
    if until(deadline, shard.broadcast(ShardOp::Drained))
        .await
        .is_none()
    {
        tracing::warn!(
            shard = shard.id(),
            "a peer did not take the drained notice in time"
        );
    }
    while shard.drained_peers() + 1 < shard.shard_count() && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
    // Closing flushes and syncs: it gets its own full timeout after the drain.
    let close_deadline = Instant::now() + Duration::from_millis(shard.config().shutdown_timeout_ms);
    let id = shard.id();
    let started = Instant::now();
    let done = shard.close_partitions(close_deadline).await;
    tracing::info!(
        shard = id,
        closed = done.closed,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "partitions closed"
    );
    let result = match done {
        ClosedPartitions { failed: 0, not_started: 0, .. } => Ok(()),
        ClosedPartitions { failed, not_started, .. } => Err(ServerError::Shutdown(format!(
            "shard {id}: {failed} partitions did not close cleanly and {not_started} were not closed before the shutdown deadline; they will be recovered at the next start"
        ))),
    };
    tracing::debug!(shard = id, "shard stopped");
    result
}

/// Runs `fut` until `deadline`; `None` if the deadline came first.
async fn until<T>(deadline: Instant, fut: impl std::future::Future<Output = T>) -> Option<T> {
    before(deadline.saturating_duration_since(Instant::now()), fut).await
}
