//! Topic lifecycle on the controller (shard 0). Creations and deletions run one at a time
//! (a single-permit semaphore on the controller's executor, not a lock shared between
//! threads), so a DeleteTopic followed by a CreateTopic of the same name, pipelined or from
//! other connections, always sees the deletion finished first.
//!
//! Create: every shard opens the partitions it owns (not yet visible) -> the metadata file is
//! written (the commit point) -> every shard publishes the topic. A failure before the commit
//! point closes and trashes whatever was opened; nothing of the topic remains.
//!
//! Delete: the metadata file becomes `<name>.deleting` (the commit point) -> every shard
//! unpublishes the topic, closes its partitions and renames their directories to
//! `<dir>.<unique>-delete` -> the marker is removed. A crash after the commit point is
//! finished at the next start (`data_dir::prepare`); trash is removed in the background.

use crate::broker_error::BrokerError;
use crate::catalog::admin_host::{AdminHost, AdminRequest, AdminResult, CatalogChange};
use crate::catalog::broker_defaults::{BrokerDefaults, Scope};
use crate::catalog::internal_topics;
use crate::catalog::topics::{self, validate_topic_name, AdminError, TopicConfig, TopicMeta};
use crate::protocol::ErrorCode;

/// Runs a client's admin request (on the controller).
pub async fn handle(host: &dyn AdminHost, request: AdminRequest) -> AdminResult<()> {
    if host.in_cluster() {
        refuse_in_cluster(&request)?;
    }
    match request {
        AdminRequest::CreateTopic {
            name,
            partitions,
            configs,
        } => create(host, name, partitions, configs).await,
        AdminRequest::CreateInternalTopic { name } => create_internal(host, name).await,
        AdminRequest::CopyClusterTopic {
            name,
            id,
            partitions,
            configs,
        } => create_everywhere(host, name, partitions, configs, Origin::Cluster(id)).await,
        AdminRequest::DeleteTopic { name } => {
            internal_topics::refuse_client(&name, "delete")?;
            delete(host, name).await
        }
        // The cluster's internal topics are copied like any other: a local one that is not
        // the cluster's (another id) is replaced.
        AdminRequest::DeleteClusterCopy { name } => delete(host, name).await,
        AdminRequest::CreatePartitions { name, count }
        | AdminRequest::GrowClusterCopy { name, count } => {
            create_partitions(host, name, count).await
        }
        AdminRequest::AlterConfigs { name, set, delete } => {
            alter(host, name, set, delete, BucketCheck::Here).await
        }
        // The node that took the request checked the bucket before etcd held the change;
        // by now the partitions' leaders may have written to it.
        AdminRequest::AlterClusterCopy { name, set, delete } => {
            alter(host, name, set, delete, BucketCheck::DoneWhereAccepted).await
        }
        AdminRequest::AlterBrokerConfigs { scope, set, delete } => {
            alter_broker(host, scope, set, delete).await
        }
        AdminRequest::InstallClusterDefaults(cluster) => {
            let next = host.broker_defaults().with_cluster(cluster);
            install_broker_defaults(host, next).await
        }
    }
}

/// In cluster mode a client's topic change goes to the controller through etcd (the Kafka
/// API does so); changing only this node's copy would make the nodes disagree.
fn refuse_in_cluster(request: &AdminRequest) -> AdminResult<()> {
    let what = match request {
        AdminRequest::CreateTopic { .. } => "create topics",
        AdminRequest::DeleteTopic { .. } => "delete topics",
        AdminRequest::CreatePartitions { .. } => "add partitions",
        AdminRequest::AlterConfigs { .. } => "alter topic configs",
        _ => return Ok(()),
    };
    let why = format!("in cluster mode {what} through the Kafka API (the change is written to etcd, and every node applies it)");
    err(ErrorCode::TopicChangeOnKafkaApi, why)
}

fn err<T>(code: ErrorCode, msg: impl Into<String>) -> Result<T, AdminError> {
    Err(BrokerError::new(code, msg))
}

pub fn check_create(
    host: &dyn AdminHost,
    name: &str,
    partitions: i32,
    configs: &[(String, String)],
) -> Result<TopicConfig, AdminError> {
    validate_topic_name(name)?;
    let max = host.settings().max_partitions_per_topic;
    if partitions < 1 || partitions as u32 > max {
        return err(
            ErrorCode::InvalidRequest,
            format!("partitions must be between 1 and {max}, got {partitions}"),
        );
    }
    let config = TopicConfig::from_pairs(&host.topic_base(), configs)?;
    check_tiering(host, &config)?;
    if host.topic(name).is_some() {
        return err(
            ErrorCode::TopicAlreadyExists,
            format!("topic {name:?} already exists"),
        );
    }
    if topics::deletion_pending(host.storage(), &host.settings().data_dir, name) {
        return err(
            ErrorCode::NotReady,
            format!("an earlier deletion of topic {name:?} is still being finished; retry later"),
        );
    }
    Ok(config)
}

/// A tiered topic needs a server with a remote store.
fn check_tiering(host: &dyn AdminHost, config: &TopicConfig) -> Result<(), AdminError> {
    if config.log.remote_storage_enable && host.settings().remote_storage_url.is_empty() {
        return err(
            ErrorCode::InvalidConfig,
            "remote.storage.enable=true needs the server key remote.storage.url (the object store)",
        );
    }
    Ok(())
}

/// A read replica's topics are the writer's (its topic sync would bring a deleted one back
/// a moment later): they are read-only here, configuration and partitions included.
fn refuse_on_read_replica(
    host: &dyn AdminHost,
    what: &str,
    topic: &str,
) -> Result<(), BrokerError> {
    if !host.settings().remote_read_replica {
        return Ok(());
    }
    let why = format!("this server is a read replica of the bucket: it cannot {what} topic {topic:?}; do it on the node that uploads it");
    Err(BrokerError::new(ErrorCode::InvalidRequest, why))
}

/// The CreateTopics config that asks for a restore from the bucket instead of a new, empty
/// topic (Redpanda's `redpanda.remote.recovery`; `shardlog topics restore` sends it).
pub const RECOVERY_KEY: &str = "remote.recovery";

/// Takes `remote.recovery` out of a create's configs: whether it asks for a restore.
fn take_recovery_flag(configs: &mut Vec<(String, String)>) -> Result<bool, BrokerError> {
    let Some(i) = configs.iter().position(|(k, _)| k == RECOVERY_KEY) else {
        return Ok(false);
    };
    match configs.remove(i).1.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => err(
            ErrorCode::InvalidConfig,
            format!("{RECOVERY_KEY}={other:?}: use true or false"),
        ),
    }
}

/// Creates a topic a client asked for (never an internal one).
pub async fn create(
    host: &dyn AdminHost,
    name: String,
    partitions: i32,
    configs: Vec<(String, String)>,
) -> AdminResult<()> {
    internal_topics::refuse_client(&name, "create")?;
    if host.settings().remote_read_replica {
        return err(
            ErrorCode::InvalidRequest,
            format!("this server is a read replica of the bucket: it serves the bucket's topics and creates none ({name:?})"),
        );
    }
    let mut configs = configs;
    if take_recovery_flag(&mut configs)? {
        return host.restore_topic(name).await;
    }
    if configs
        .iter()
        .any(|(k, v)| k == "remote.storage.enable" && v.trim() == "true")
    {
        host.ensure_bucket_free(&name).await?;
    }
    create_everywhere(host, name, partitions, configs, Origin::New).await
}

/// Creates an internal topic with the settings the server's config fixes for it.
pub async fn create_internal(host: &dyn AdminHost, name: String) -> AdminResult<()> {
    let (partitions, configs) = internal_topics::settings(&name, host.settings());
    create_everywhere(host, name, partitions, configs, Origin::New).await
}

/// Where tiering turned on by a config change is checked against the bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BucketCheck {
    /// Here: a client's change to this node's topic.
    Here,
    /// Where the cluster accepted the change, before etcd held it: this node's copy must
    /// not refuse it when the partitions' leaders have written to the bucket since.
    DoneWhereAccepted,
}

/// Where a topic being created on this node comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// New here, with a new topic id.
    New,
    /// Restored from the bucket: its partitions' directories are already laid out.
    Restored,
    /// Created in the cluster (etcd) with this id: this node's copy of it.
    Cluster(uuid::Uuid),
}

/// Creates a topic on every shard, or leaves no trace of it.
pub async fn create_everywhere(
    host: &dyn AdminHost,
    name: String,
    partitions: i32,
    configs: Vec<(String, String)>,
    origin: Origin,
) -> AdminResult<()> {
    let _turn = host.admin_turn().await?;
    let config = check_create(host, &name, partitions, &configs)?;
    let mut meta = TopicMeta::new(name.clone(), partitions as u32, config, host.shards());
    assert_eq!(meta.partitions() as i32, partitions);
    if let Origin::Cluster(id) = origin {
        meta.topic_id = id;
    }
    let restored = origin == Origin::Restored;
    let open = CatalogChange::OpenPartitions {
        meta: meta.clone(),
        from: 0,
        restored,
    };
    if let Err(e) = host.on_every_shard(open).await {
        roll_back_create(host, &meta).await;
        return Err(e);
    }
    if let Err(e) = persist(host, &meta).await {
        roll_back_create(host, &meta).await;
        return Err(e);
    }
    host.on_every_shard(CatalogChange::PublishTopic(meta.clone()))
        .await?;
    assert!(
        host.topic(&name).is_some(),
        "a committed create is published here too"
    );
    tracing::info!(topic = %name, partitions, "topic created");
    Ok(())
}

/// Writes a topic's metadata file: the commit point of create, grow and alter.
async fn persist(host: &dyn AdminHost, meta: &TopicMeta) -> Result<(), BrokerError> {
    meta.persist(host.storage(), &host.settings().data_dir, host.shards())
        .await
        .map_err(|e| {
            BrokerError::new(
                ErrorCode::StorageError,
                format!("writing topic metadata: {e}"),
            )
        })
}

async fn roll_back_create(host: &dyn AdminHost, meta: &TopicMeta) {
    let data_dir = &host.settings().data_dir;
    if let Err(e) = TopicMeta::remove_persisted(host.storage(), data_dir, &meta.name).await {
        tracing::error!(topic = %meta.name, error = %e, "removing the metadata of a failed create");
    }
    if let Err(e) = host
        .on_every_shard(CatalogChange::RemoveTopic(meta.clone()))
        .await
    {
        tracing::error!(topic = %meta.name, error = %e, "rolling back a failed create; leftovers are quarantined at the next start");
    }
}

/// Deletes a topic: committed durably first, then carried out on every host. A client's
/// delete of an internal topic is refused before this.
async fn delete(host: &dyn AdminHost, name: String) -> AdminResult<()> {
    refuse_on_read_replica(host, "delete", &name)?;
    let _turn = host.admin_turn().await?;
    let Some(meta) = host.topic(&name) else {
        return err(ErrorCode::UnknownTopic, format!("unknown topic {name:?}"));
    };
    // A read replica's topics are the writer's: their remote tier is not its to remove.
    let tiered = meta.config.log.remote_storage_enable && !host.settings().remote_read_replica;
    let data_dir = &host.settings().data_dir;
    let marked = TopicMeta::mark_deleting(host.storage(), data_dir, &name).await;
    marked.map_err(|e| {
        BrokerError::new(
            ErrorCode::StorageError,
            format!("marking topic {name:?} deleted: {e}"),
        )
    })?;
    let started = std::time::Instant::now();
    if let Err(e) = host.on_every_shard(CatalogChange::RemoveTopic(meta)).await {
        return err(
            e.code(),
            format!("topic {name:?} is deleted, but removing its partitions failed ({e}); the next start finishes it"),
        );
    }
    let finished = topics::finish_deletion(host.storage(), data_dir, &name).await;
    finished.map_err(|e| {
        BrokerError::new(
            ErrorCode::StorageError,
            format!("topic {name:?} is deleted, but removing its deletion marker failed: {e}"),
        )
    })?;
    assert!(
        host.topic(&name).is_none(),
        "a finished delete is unpublished everywhere"
    );
    if tiered {
        host.delete_remote_in_background(&name);
    }
    tracing::info!(topic = %name, elapsed_ms = started.elapsed().as_millis() as u64, "topic deleted");
    Ok(())
}

/// The topic grown to `count` partitions and the first new partition, if it may grow so
/// (Kafka's CreatePartitions: only up, within the per-topic limit, never an internal topic).
pub fn check_grow(
    host: &dyn AdminHost,
    name: &str,
    count: i32,
) -> Result<(TopicMeta, u32), AdminError> {
    internal_topics::refuse_client(name, "add partitions to")?;
    let Some(meta) = host.topic(name) else {
        return err(ErrorCode::UnknownTopic, format!("unknown topic {name:?}"));
    };
    let (now, max) = (meta.partitions(), host.settings().max_partitions_per_topic);
    if count <= now as i32 || count as u32 > max {
        return err(
            ErrorCode::InvalidRequest,
            format!(
                "topic {name:?} has {now} partitions: it can grow to {} up to {max}, not {count}",
                now + 1
            ),
        );
    }
    Ok((meta.grown(count as u32, host.shards()), now))
}

/// Grows a topic (Kafka's CreatePartitions): the new partitions are opened on their owner
/// shards, the metadata file is rewritten (the commit point), then every shard publishes
/// the topic with them. A failure before the commit closes and trashes what was opened; a
/// crash before it leaves directories no topic owns, which the next start quarantines.
pub async fn create_partitions(host: &dyn AdminHost, name: String, count: i32) -> AdminResult<()> {
    refuse_on_read_replica(host, "add partitions to", &name)?;
    let _turn = host.admin_turn().await?;
    let (grown, from) = check_grow(host, &name, count)?;
    let open = CatalogChange::OpenPartitions {
        meta: grown.clone(),
        from,
        restored: false,
    };
    let opened = host.on_every_shard(open).await;
    let persisted = match opened {
        Ok(_) => persist(host, &grown).await,
        Err(e) => Err(e),
    };
    if let Err(e) = persisted {
        let undo = CatalogChange::RemovePartitions { meta: grown, from };
        if let Err(e) = host.on_every_shard(undo).await {
            tracing::error!(topic = %name, error = %e, "rolling back new partitions; leftovers are quarantined at the next start");
        }
        return Err(e);
    }
    host.on_every_shard(CatalogChange::PublishTopic(grown))
        .await?;
    assert!(host
        .topic(&name)
        .is_some_and(|m| m.partitions() == count as u32));
    tracing::info!(topic = %name, from, to = count, "partitions created");
    Ok(())
}

/// The topic as `alter` would leave it, validated as a whole (nothing is changed): what a
/// validate-only AlterConfigs answers.
pub fn check_alter(
    host: &dyn AdminHost,
    name: &str,
    set: &[(String, String)],
    delete: &[String],
) -> Result<TopicMeta, AdminError> {
    internal_topics::refuse_client(name, "reconfigure")?;
    let Some(meta) = host.topic(name) else {
        return err(ErrorCode::UnknownTopic, format!("unknown topic {name:?}"));
    };
    let config = meta.config.altered(&host.topic_base(), set, delete)?;
    check_tiering(host, &config)?;
    Ok(TopicMeta { config, ..meta })
}

/// Alters a topic's config (Kafka's incremental AlterConfigs): validated as a whole, made
/// durable in the metadata file (the commit point), then applied by every shard to the
/// partitions it owns without a restart. Tiering turned on is refused while the bucket
/// holds the name (see [`BucketCheck`]).
pub async fn alter(
    host: &dyn AdminHost,
    name: String,
    set: Vec<(String, String)>,
    delete: Vec<String>,
    bucket: BucketCheck,
) -> AdminResult<()> {
    refuse_on_read_replica(host, "alter", &name)?;
    let _turn = host.admin_turn().await?;
    let altered = check_alter(host, &name, &set, &delete)?;
    let was_tiered = host
        .topic(&name)
        .is_some_and(|m| m.config.log.remote_storage_enable);
    if altered.config.log.remote_storage_enable && !was_tiered && bucket == BucketCheck::Here {
        host.ensure_bucket_free(&name).await?;
    }
    persist(host, &altered).await?;
    host.on_every_shard(CatalogChange::AlterTopic(altered.clone()))
        .await?;
    assert!(host
        .topic(&name)
        .is_some_and(|m| m.config == altered.config));
    tracing::info!(topic = %name, overrides = ?altered.config.overrides, "topic config altered");
    Ok(())
}

/// The dynamic broker configs as `alter_broker` would leave them, validated with every
/// topic rebased on them (nothing is changed): what a validate-only alter answers.
pub fn check_alter_broker(
    host: &dyn AdminHost,
    scope: Scope,
    set: &[(String, String)],
    delete: &[String],
) -> Result<BrokerDefaults, AdminError> {
    let next = host.broker_defaults().altered(scope, set, delete)?;
    check_topics_on(host, &next)?;
    Ok(next)
}

/// Refuses broker configs some topic would be invalid on.
pub fn check_topics_on(host: &dyn AdminHost, next: &BrokerDefaults) -> Result<(), AdminError> {
    let base = next.base()?;
    for meta in host.topics() {
        meta.config.rebased(&base).map_err(|e| {
            BrokerError::new(
                e.code(),
                format!("topic {:?} would be invalid: {}", meta.name, e.message()),
            )
        })?;
    }
    Ok(())
}

/// Alters the dynamic broker configs (Kafka's `kafka-configs --entity-type brokers`):
/// validated, made durable (the commit point), then every shard rebases every topic on
/// them, live.
pub async fn alter_broker(
    host: &dyn AdminHost,
    scope: Scope,
    set: Vec<(String, String)>,
    delete: Vec<String>,
) -> AdminResult<()> {
    let _turn = host.admin_turn().await?;
    let next = check_alter_broker(host, scope, &set, &delete)?;
    install_locked(host, next, scope).await
}

/// Installs broker configs a cluster holds (already validated where they were changed;
/// checked again against this node's topics).
async fn install_broker_defaults(host: &dyn AdminHost, next: BrokerDefaults) -> AdminResult<()> {
    let _turn = host.admin_turn().await?;
    if host.broker_defaults() == next {
        return Ok(());
    }
    check_topics_on(host, &next)?;
    install_locked(host, next, Scope::Cluster).await
}

/// Makes `next` durable, then every shard's (the caller holds the admin turn).
async fn install_locked(
    host: &dyn AdminHost,
    next: BrokerDefaults,
    scope: Scope,
) -> AdminResult<()> {
    next.persist(host.storage(), &host.settings().data_dir)
        .await
        .map_err(|e| {
            BrokerError::new(
                ErrorCode::Internal,
                format!("persisting broker configs: {e}"),
            )
        })?;
    host.on_every_shard(CatalogChange::SetBrokerDefaults(next.clone()))
        .await?;
    assert!(
        host.broker_defaults() == next,
        "every shard runs the new configs"
    );
    tracing::info!(?scope, cluster = ?next.cluster, broker = ?next.broker, "broker configs altered");
    Ok(())
}
