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

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::broker_defaults::{BrokerDefaults, Scope};
use crate::catalog::topics::{self, validate_topic_name, AdminError, TopicConfig, TopicMeta};
use crate::protocol::ErrorCode;
use crate::shard::messages::{OpOk, OpResult, PartitionOp, ShardOp};
use crate::shard::runtime::Shard;

fn err<T>(code: ErrorCode, msg: impl Into<String>) -> Result<T, AdminError> {
    Err(BrokerError::new(code, msg))
}

pub fn check_create(
    shard: &Shard,
    name: &str,
    partitions: i32,
    configs: &[(String, String)],
) -> Result<TopicConfig, AdminError> {
    validate_topic_name(name)?;
    let max = shard.config.max_partitions_per_topic;
    if partitions < 1 || partitions as u32 > max {
        return err(
            ErrorCode::InvalidRequest,
            format!("partitions must be between 1 and {max}, got {partitions}"),
        );
    }
    let config = TopicConfig::from_pairs(&shard.topic_base(), configs)?;
    check_tiering(shard, &config)?;
    if shard.has_topic(name) {
        return err(
            ErrorCode::TopicAlreadyExists,
            format!("topic {name:?} already exists"),
        );
    }
    if topics::deletion_pending(&*shard.storage, &shard.config.data_dir, name) {
        return err(
            ErrorCode::NotReady,
            format!("an earlier deletion of topic {name:?} is still being finished; retry later"),
        );
    }
    Ok(config)
}

/// A tiered topic needs a server with a remote store.
fn check_tiering(shard: &Shard, config: &TopicConfig) -> Result<(), AdminError> {
    if config.log.remote_storage_enable && shard.config.remote_storage_url.is_empty() {
        return err(
            ErrorCode::InvalidConfig,
            "remote.storage.enable=true needs the server key remote.storage.url (the object store)",
        );
    }
    Ok(())
}

/// A read replica's topics are the writer's (its topic sync would bring a deleted one back
/// a moment later): they are read-only here, configuration and partitions included.
fn refuse_on_read_replica(shard: &Shard, what: &str, topic: &str) -> Result<(), BrokerError> {
    if !shard.config.remote_read_replica {
        return Ok(());
    }
    let why = format!("this server is a read replica of the bucket: it cannot {what} topic {topic:?}; do it on the node that uploads it");
    Err(BrokerError::new(ErrorCode::InvalidRequest, why))
}

/// Creates a topic a client asked for (never an internal one).
pub async fn create(
    shard: &Rc<Shard>,
    name: String,
    partitions: i32,
    configs: Vec<(String, String)>,
) -> OpResult {
    crate::catalog::internal_topics::refuse_client(&name, "create")?;
    if shard.config.remote_read_replica {
        return err(
            ErrorCode::InvalidRequest,
            format!("this server is a read replica of the bucket: it serves the bucket's topics and creates none ({name:?})"),
        );
    }
    let mut configs = configs;
    if crate::shard::restore::take_recovery_flag(&mut configs)? {
        return crate::shard::restore::restore(shard, name).await;
    }
    if configs
        .iter()
        .any(|(k, v)| k == "remote.storage.enable" && v.trim() == "true")
    {
        crate::shard::restore::ensure_bucket_free(shard, &name).await?;
    }
    shard
        .create_on_every_shard(name, partitions, configs, false)
        .await
}

/// Creates an internal topic with the settings the server's config fixes for it.
pub async fn create_internal(shard: &Rc<Shard>, name: String) -> OpResult {
    let (partitions, configs) = crate::catalog::internal_topics::settings(&name, &shard.config);
    shard
        .create_on_every_shard(name, partitions, configs, false)
        .await
}

impl Shard {
    /// Creates a topic on every shard, or leaves no trace of it.
    pub(crate) async fn create_on_every_shard(
        self: &Rc<Self>,
        name: String,
        partitions: i32,
        configs: Vec<(String, String)>,
        restored: bool,
    ) -> OpResult {
        let shard = self;
        let _turn = shard.admin_turn().await?;
        let config = check_create(shard, &name, partitions, &configs)?;
        let meta = TopicMeta::new(name.clone(), partitions as u32, config, shard.n as u32);
        assert_eq!(meta.partitions() as i32, partitions);
        let open = ShardOp::OpenPartitions {
            meta: meta.clone(),
            from: 0,
            restored,
        };
        if let Err(e) = shard.on_every_shard(open).await {
            roll_back_create(shard, &meta).await;
            return Err(e);
        }
        if let Err(e) = persist(shard, &meta).await {
            roll_back_create(shard, &meta).await;
            return Err(e);
        }
        shard
            .on_every_shard(ShardOp::PublishTopic(meta.clone()))
            .await?;
        assert!(
            shard.has_topic(&name),
            "a committed create is published here too"
        );
        tracing::info!(topic = %name, partitions, "topic created");
        Ok(OpOk::Done)
    }
}

/// Writes a topic's metadata file: the commit point of create, grow and alter.
async fn persist(shard: &Shard, meta: &TopicMeta) -> Result<(), BrokerError> {
    meta.persist(&*shard.storage, &shard.config.data_dir, shard.n as u32)
        .await
        .map_err(|e| {
            BrokerError::new(
                ErrorCode::StorageError,
                format!("writing topic metadata: {e}"),
            )
        })
}

async fn roll_back_create(shard: &Rc<Shard>, meta: &TopicMeta) {
    let data_dir = &shard.config.data_dir;
    if let Err(e) = TopicMeta::remove_persisted(&*shard.storage, data_dir, &meta.name).await {
        tracing::error!(topic = %meta.name, error = %e, "removing the metadata of a failed create");
    }
    if let Err(BrokerError { message: e, .. }) = shard
        .on_every_shard(ShardOp::RemoveTopic(meta.clone()))
        .await
    {
        tracing::error!(topic = %meta.name, error = %e, "rolling back a failed create; leftovers are quarantined at the next start");
    }
}

/// Deletes a topic: committed durably first, then carried out on every shard.
pub async fn delete(shard: &Rc<Shard>, name: String) -> OpResult {
    crate::catalog::internal_topics::refuse_client(&name, "delete")?;
    refuse_on_read_replica(shard, "delete", &name)?;
    let _turn = shard.admin_turn().await?;
    let Some(meta) = shard.topic(&name) else {
        return err(ErrorCode::UnknownTopic, format!("unknown topic {name:?}"));
    };
    // A read replica's topics are the writer's: their remote tier is not its to remove.
    let tiered = meta.config.log.remote_storage_enable && !shard.config.remote_read_replica;
    let data_dir = &shard.config.data_dir;
    let marked = TopicMeta::mark_deleting(&*shard.storage, data_dir, &name).await;
    marked.map_err(|e| {
        BrokerError::new(
            ErrorCode::StorageError,
            format!("marking topic {name:?} deleted: {e}"),
        )
    })?;
    let started = std::time::Instant::now();
    if let Err(BrokerError { code, message: e }) =
        shard.on_every_shard(ShardOp::RemoveTopic(meta)).await
    {
        return err(
            code,
            format!("topic {name:?} is deleted, but removing its partitions failed ({e}); the next start finishes it"),
        );
    }
    let finished = topics::finish_deletion(&*shard.storage, data_dir, &name).await;
    finished.map_err(|e| {
        BrokerError::new(
            ErrorCode::StorageError,
            format!("topic {name:?} is deleted, but removing its deletion marker failed: {e}"),
        )
    })?;
    assert!(
        !shard.has_topic(&name),
        "a finished delete is unpublished everywhere"
    );
    if tiered {
        crate::shard::restore::delete_remote_in_background(shard, &name);
    }
    tracing::info!(topic = %name, elapsed_ms = started.elapsed().as_millis() as u64, "topic deleted");
    Ok(OpOk::Done)
}

/// The topic grown to `count` partitions and the first new partition, if it may grow so
/// (Kafka's CreatePartitions: only up, within the per-topic limit, never an internal topic).
pub fn check_grow(shard: &Shard, name: &str, count: i32) -> Result<(TopicMeta, u32), AdminError> {
    crate::catalog::internal_topics::refuse_client(name, "add partitions to")?;
    let Some(meta) = shard.topic(name) else {
        return err(ErrorCode::UnknownTopic, format!("unknown topic {name:?}"));
    };
    let (now, max) = (meta.partitions(), shard.config.max_partitions_per_topic);
    if count <= now as i32 || count as u32 > max {
        return err(
            ErrorCode::InvalidRequest,
            format!(
                "topic {name:?} has {now} partitions: it can grow to {} up to {max}, not {count}",
                now + 1
            ),
        );
    }
    Ok((meta.grown(count as u32, shard.n as u32), now))
}

/// Grows a topic (Kafka's CreatePartitions): the new partitions are opened on their owner
/// shards, the metadata file is rewritten (the commit point), then every shard publishes
/// the topic with them. A failure before the commit closes and trashes what was opened; a
/// crash before it leaves directories no topic owns, which the next start quarantines.
pub async fn create_partitions(shard: &Rc<Shard>, name: String, count: i32) -> OpResult {
    refuse_on_read_replica(shard, "add partitions to", &name)?;
    let _turn = shard.admin_turn().await?;
    let (grown, from) = check_grow(shard, &name, count)?;
    let open = ShardOp::OpenPartitions {
        meta: grown.clone(),
        from,
        restored: false,
    };
    let opened = shard.on_every_shard(open).await;
    let persisted = match opened {
        Ok(_) => persist(shard, &grown).await,
        Err(e) => Err(e),
    };
    if let Err(e) = persisted {
        let undo = ShardOp::RemovePartitions { meta: grown, from };
        if let Err(BrokerError { message, .. }) = shard.on_every_shard(undo).await {
            tracing::error!(topic = %name, error = %message, "rolling back new partitions; leftovers are quarantined at the next start");
        }
        return Err(e);
    }
    shard.on_every_shard(ShardOp::PublishTopic(grown)).await?;
    assert!(shard
        .topic(&name)
        .is_some_and(|m| m.partitions() == count as u32));
    tracing::info!(topic = %name, from, to = count, "partitions created");
    Ok(OpOk::Done)
}

/// The topic as `alter` would leave it, validated as a whole (nothing is changed): what a
/// validate-only AlterConfigs answers.
pub fn check_alter(
    shard: &Shard,
    name: &str,
    set: &[(String, String)],
    delete: &[String],
) -> Result<TopicMeta, AdminError> {
    crate::catalog::internal_topics::refuse_client(name, "reconfigure")?;
    let Some(meta) = shard.topic(name) else {
        return err(ErrorCode::UnknownTopic, format!("unknown topic {name:?}"));
    };
    let config = meta.config.altered(&shard.topic_base(), set, delete)?;
    check_tiering(shard, &config)?;
    Ok(TopicMeta { config, ..meta })
}

/// Alters a topic's config (Kafka's incremental AlterConfigs): validated as a whole, made
/// durable in the metadata file (the commit point), then applied by every shard to the
/// partitions it owns without a restart.
pub async fn alter(
    shard: &Rc<Shard>,
    name: String,
    set: Vec<(String, String)>,
    delete: Vec<String>,
) -> OpResult {
    refuse_on_read_replica(shard, "alter", &name)?;
    let _turn = shard.admin_turn().await?;
    let altered = check_alter(shard, &name, &set, &delete)?;
    let was_tiered = shard
        .topic(&name)
        .is_some_and(|m| m.config.log.remote_storage_enable);
    if altered.config.log.remote_storage_enable && !was_tiered {
        crate::shard::restore::ensure_bucket_free(shard, &name).await?;
    }
    persist(shard, &altered).await?;
    shard
        .on_every_shard(ShardOp::AlterTopic(altered.clone()))
        .await?;
    assert!(shard
        .topic(&name)
        .is_some_and(|m| m.config == altered.config));
    tracing::info!(topic = %name, overrides = ?altered.config.overrides, "topic config altered");
    Ok(OpOk::Done)
}

/// Kafka's DeleteRecords on one partition: records below `offset` (-1: the high watermark)
/// stop being served; returns the new low watermark. Internal topics are refused.
pub async fn delete_records(
    shard: &Rc<Shard>,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<i64, BrokerError> {
    crate::catalog::internal_topics::refuse_client(topic, "delete records of")?;
    match shard
        .partition_op(topic, partition, PartitionOp::DeleteRecords { offset })
        .await?
    {
        OpOk::LowWatermark(low) => Ok(low),
        other => Err(BrokerError::new(
            ErrorCode::Internal,
            format!("DeleteRecords got {other:?}"),
        )),
    }
}

/// The dynamic broker configs as `alter_broker` would leave them, validated with every
/// topic rebased on them (nothing is changed): what a validate-only alter answers.
pub fn check_alter_broker(
    shard: &Shard,
    scope: Scope,
    set: &[(String, String)],
    delete: &[String],
) -> Result<BrokerDefaults, AdminError> {
    let next = shard.broker_defaults().altered(scope, set, delete)?;
    let base = next.base()?;
    for meta in shard.topics_snapshot(None).into_iter().flatten() {
        meta.config.rebased(&base).map_err(|e| {
            BrokerError::new(
                e.code,
                format!("topic {:?} would be invalid: {}", meta.name, e.message),
            )
        })?;
    }
    Ok(next)
}

/// Alters the dynamic broker configs (Kafka's `kafka-configs --entity-type brokers`):
/// validated, made durable (the commit point), then every shard rebases every topic on
/// them, live.
pub async fn alter_broker(
    shard: &Rc<Shard>,
    scope: Scope,
    set: Vec<(String, String)>,
    delete: Vec<String>,
) -> OpResult {
    let _turn = shard.admin_turn().await?;
    let next = check_alter_broker(shard, scope, &set, &delete)?;
    next.persist(&*shard.storage, &shard.config.data_dir)
        .await
        .map_err(|e| {
            BrokerError::new(
                ErrorCode::Internal,
                format!("persisting broker configs: {e}"),
            )
        })?;
    shard
        .on_every_shard(ShardOp::SetBrokerDefaults(next.clone()))
        .await?;
    debug_assert!(shard.broker_defaults() == next);
    tracing::info!(?scope, cluster = ?next.cluster, broker = ?next.broker, "broker configs altered");
    Ok(OpOk::Done)
}
