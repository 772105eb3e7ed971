//! CreateTopics, DeleteTopics and CreatePartitions in cluster mode: the elected controller
//! writes the change to etcd (replicas placed over the live brokers) and only then makes
//! its own copy; the other nodes copy it from the view they follow. A node that is not the
//! controller forwards the request to it (`forward.rs`, as Kafka's brokers forward admin
//! requests to their controller, KIP-590), so a client whose metadata names an old
//! controller is served all the same. Topic configs may change on any node.

use super::errors;
use super::refusal::Refusal;
use super::Context;
use crate::catalog::admin_host::AdminHost;
use crate::catalog::admin_host::AdminRequest;
use crate::cluster::{TopicRefused, TopicSpec};
use crate::protocol::ErrorCode;

/// Whether this node runs in cluster mode (topic changes then go through etcd).
pub fn in_cluster(ctx: &Context<'_>) -> bool {
    ctx.shard.cluster_link().is_some()
}

/// The replication factor a CreateTopics asks for (-1: `default.replication.factor`).
fn factor(ctx: &Context<'_>, asked: i16) -> Result<usize, Refusal> {
    match asked {
        -1 => Ok(ctx.shard.config().default_replication_factor as usize),
        n if n >= 1 => Ok(n as usize),
        n => Err(Refusal::new(
            errors::INVALID_REPLICATION_FACTOR,
            format!("replication factor must be at least 1 (or -1 for default.replication.factor), got {n}"),
        )),
    }
}

/// Creates a topic in the cluster (the request already passed the authorizer and the
/// checks of name, partition count and configs, which gave `config`).
pub async fn create(
    ctx: &Context<'_>,
    name: String,
    partitions: i32,
    replication_factor: i16,
    config: crate::catalog::topics::TopicConfig,
) -> Result<(), Refusal> {
    let link = ctx.shard.cluster_link().expect("cluster mode");
    if config.log.remote_storage_enable {
        ensure_bucket_free(ctx, &name).await?;
    }
    // The overrides as this node parsed them, so every node's copy compares equal.
    let spec = TopicSpec {
        name: name.clone(),
        partitions: partitions as u32,
        replication_factor: factor(ctx, replication_factor)?,
        configs: config.overrides.into_iter().collect(),
    };
    let topic = match link.create_topic(spec.clone()).await {
        Err(TopicRefused::NotController {
            controller: Some(controller),
        }) => return super::forward::create(ctx, controller, &spec).await,
        other => other.map_err(refused)?,
    };
    assert_eq!(topic.partitions.len(), partitions as usize);
    assert!(!topic.id.is_nil(), "a cluster topic has an id");
    assert!(
        topic.partitions.iter().all(|p| p.state.leader.is_some()),
        "a new partition has a leader"
    );
    let copy = AdminRequest::CopyClusterTopic {
        name,
        id: topic.id,
        partitions,
        configs: topic.configs,
    };
    copied(ctx.shard.admin(copy).await, ErrorCode::TopicAlreadyExists)
}

/// Deletes a topic from the cluster, then this node's copy.
pub async fn delete(ctx: &Context<'_>, name: String) -> Result<(), Refusal> {
    let link = ctx.shard.cluster_link().expect("cluster mode");
    crate::catalog::internal_topics::refuse_client(&name, "delete")
        .map_err(|e| Refusal::new(errors::kafka_code(e.code(), true), e.message()))?;
    match link.delete_topic(name.clone()).await {
        Err(TopicRefused::NotController {
            controller: Some(controller),
        }) => return super::forward::delete(ctx, controller, &name).await,
        other => other.map_err(refused)?,
    }
    let local = AdminRequest::DeleteClusterCopy { name };
    copied(ctx.shard.admin(local).await, ErrorCode::UnknownTopic)
}

/// Grows a topic in the cluster (the request already passed the authorizer and the
/// checks of the new count), then this node's copy.
pub async fn create_partitions(ctx: &Context<'_>, name: String, count: i32) -> Result<(), Refusal> {
    let link = ctx.shard.cluster_link().expect("cluster mode");
    assert!(
        count > 0,
        "checked before: a topic grows to a positive count"
    );
    match link.grow_topic(name.clone(), count as u32).await {
        Err(TopicRefused::NotController {
            controller: Some(controller),
        }) => return super::forward::create_partitions(ctx, controller, &name, count).await,
        other => other.map_err(refused)?,
    }
    let grow = AdminRequest::GrowClusterCopy { name, count };
    copied(ctx.shard.admin(grow).await, ErrorCode::InvalidRequest)
}

/// Alters a topic's configs in the cluster: validated here as a whole, the whole set of
/// overrides written to etcd (a compare-and-swap on the topic), then this node's copy;
/// the others apply it from their views.
pub async fn alter_configs(
    ctx: &Context<'_>,
    name: &str,
    (set, delete): (Vec<(String, String)>, Vec<String>),
) -> Result<(), Refusal> {
    let link = ctx.shard.cluster_link().expect("cluster mode");
    let host = ctx.shard.admin_host();
    let altered = crate::catalog::admin::check_alter(&host, name, &set, &delete)
        .map_err(|e| Refusal::new(super::refusal::config_code(e.code()), e.message()))?;
    let was_tiered = (host.topic(name)).is_some_and(|m| m.config.log.remote_storage_enable);
    if altered.config.log.remote_storage_enable && !was_tiered {
        ensure_bucket_free(ctx, name).await?;
    }
    let configs: Vec<(String, String)> = altered.config.overrides.into_iter().collect();
    link.set_topic_configs(name.to_string(), configs.clone())
        .await
        .map_err(refused)?;
    let copy = AdminRequest::AlterClusterCopy {
        name: name.to_string(),
        set: configs,
        delete,
    };
    copied(ctx.shard.admin(copy).await, ErrorCode::None)
}

/// Cluster mode: the cluster-wide dynamic broker configs (`--entity-default`) are one
/// shared value in etcd. The change is made on what etcd holds (this node's own while it
/// holds none), checked against this node's topics, stored by compare-and-swap (another
/// node's change at the same time makes this one start again from it, a few times), then
/// installed here; every other node installs it from its view.
pub async fn alter_broker_defaults(
    ctx: &Context<'_>,
    (set, delete): (Vec<(String, String)>, Vec<String>),
) -> Result<(), Refusal> {
    use crate::catalog::broker_defaults::{BrokerDefaults, Scope};
    use crate::cluster::security::Swapped;
    let link = ctx.shard.cluster_link().expect("cluster mode");
    let host = ctx.shard.admin_host();
    let invalid = |e: crate::broker_error::BrokerError| {
        Refusal::new(errors::kafka_code(e.code(), true), e.message())
    };
    let local = ctx.shard.broker_defaults();
    let mut held = ctx.shard.cluster().and_then(|v| v.broker_defaults.clone());
    for _ in 0..MAX_SWAPS {
        let (expected, cluster) = match &held {
            Some(s) => {
                let text = String::from_utf8_lossy(&s.value);
                (
                    s.revision,
                    BrokerDefaults::parse_cluster_text(&text).map_err(invalid)?,
                )
            }
            None => (0, local.cluster.clone()),
        };
        let next = local
            .with_cluster(cluster)
            .altered(Scope::Cluster, &set, &delete);
        let next = next.map_err(invalid)?;
        crate::catalog::admin::check_topics_on(&host, &next).map_err(invalid)?;
        let value = next.cluster_text().into_bytes();
        let of = crate::cluster::SharedValue::BrokerDefaults;
        match link
            .swap_value(of, expected, value)
            .await
            .map_err(refused)?
        {
            Swapped::Done { .. } => {
                let install = AdminRequest::InstallClusterDefaults(next.cluster);
                return copied(ctx.shard.admin(install).await, ErrorCode::None);
            }
            Swapped::Raced { now } => held = now,
        }
    }
    Err(Refusal::new(
        errors::REQUEST_TIMED_OUT,
        "other nodes kept changing the cluster's broker configs at the same time: try again",
    ))
}

/// Compare-and-swaps of a shared value tried before a change gives up.
const MAX_SWAPS: usize = 5;

/// This node's part of a change etcd already holds: `done` means another path (the
/// view's copy) made it first.
fn copied(outcome: crate::partition_ops::OpResult, done: ErrorCode) -> Result<(), Refusal> {
    match outcome {
        Ok(_) => Ok(()),
        Err(e) if e.code() == done => Ok(()),
        // The cluster holds the change; this node's copy follows from its view.
        Err(e) => {
            tracing::warn!(error = %e, "a topic change is in the cluster, but this node's copy of it failed; it is retried from the view");
            Ok(())
        }
    }
}

/// Kafka's code for why the controller refused.
/// Refuses a tiered topic whose name the bucket still holds (a deleted incarnation not yet
/// removed): its new leaders would adopt the old records.
async fn ensure_bucket_free(ctx: &Context<'_>, name: &str) -> Result<(), Refusal> {
    let host = ctx.shard.admin_host();
    let free = host.ensure_bucket_free(name).await;
    free.map_err(|e| Refusal::new(errors::kafka_code(e.code(), true), e.message()))
}

fn refused(why: TopicRefused) -> Refusal {
    let code = match &why {
        TopicRefused::NotController { .. } | TopicRefused::Raced => errors::NOT_CONTROLLER,
        TopicRefused::Exists(_) => errors::TOPIC_ALREADY_EXISTS,
        TopicRefused::Unknown(_) => errors::UNKNOWN_TOPIC_OR_PARTITION,
        TopicRefused::Placement(_) => errors::INVALID_REPLICATION_FACTOR,
        TopicRefused::Cluster(_) => errors::REQUEST_TIMED_OUT,
        TopicRefused::Isr(_) => errors::INVALID_REQUEST,
        TopicRefused::CannotShrink { .. } => errors::INVALID_PARTITIONS,
    };
    Refusal::new(code, why.to_string())
}
