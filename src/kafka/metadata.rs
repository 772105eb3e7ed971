//! Metadata v0-12. On a single node: this node (its broker.id, at the listener the client
//! came in on) leads every partition it holds and is the controller; leader epochs are
//! reported as -1 (unknown), so clients never validate positions with OffsetForLeaderEpoch,
//! which shardlog does not serve yet.
//!
//! In cluster mode: every live node and the elected controller, and each cluster topic as
//! etcd holds it (leader and leader epoch, replicas, ISR, offline replicas), so every node
//! answers alike. The internal topics are still each node's own (the coordinators do not
//! follow leadership yet): this node leads them. A local topic the cluster does not have
//! (a stray) is not served.

use crate::catalog::error::UnknownTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse};

use super::cluster::node_id;
use super::cluster::operations;
use super::errors;
use super::{str_bytes, topic_name, Context};
use crate::catalog::topics::validate_topic_name;
use crate::cluster::placement::topic_placement;
use crate::protocol::PartitionPlacement;
use crate::security::acl::{Operation, ResourceType};

pub async fn handle(ctx: &Context<'_>, request: MetadataRequest) -> MetadataResponse {
    create_on_use(ctx, &request).await;
    let brokers = super::cluster::live_brokers(ctx).into_iter();
    let version = ctx.version;
    let brokers = brokers.map(|b| {
        let broker = MetadataResponseBroker::default()
            .with_node_id(BrokerId(b.id))
            .with_host(str_bytes(b.host))
            .with_port(b.port);
        // The rack field arrived in v1.
        match version >= 1 {
            true => broker.with_rack(b.rack.map(str_bytes)),
            false => broker,
        }
    });
    let controller = super::cluster::controller_id(ctx);
    let response = MetadataResponse::default()
        .with_brokers(brokers.collect())
        .with_controller_id(BrokerId(if ctx.version >= 1 { controller } else { -1 }))
        .with_topics(topics(ctx, &request));
    if ctx.version >= 2 {
        response.with_cluster_id(Some(str_bytes(ctx.shard.cluster_id())))
    } else {
        response
    }
}

/// Kafka's auto.create.topics.enable: topics the request names that do not exist are
/// created (num.partitions, default configs) before it is answered, unless the request
/// disallows it (v4+) or the server does. Internal and invalid names are never created.
async fn create_on_use(ctx: &Context<'_>, request: &MetadataRequest) {
    let allowed = ctx.version < 4 || request.allow_auto_topic_creation;
    let cfg = ctx.shard.config();
    if !allowed || !cfg.auto_create_topics_enable {
        return;
    }
    for name in requested(ctx, request).unwrap_or_default() {
        let creatable = !ctx.shard.has_topic(&name)
            && validate_topic_name(&name).is_ok()
            && !crate::catalog::internal_topics::is_internal(&name)
            && may_create(ctx, &name);
        if !creatable {
            continue;
        }
        if super::cluster_admin::in_cluster(ctx) {
            create_in_cluster(ctx, name, cfg.num_partitions as i32).await;
            continue;
        }
        let request = crate::catalog::admin_host::AdminRequest::CreateTopic {
            name: name.clone(),
            partitions: cfg.num_partitions as i32,
            configs: Vec::new(),
        };
        let created = ctx.shard.admin(request).await;
        match created {
            Ok(_) => {
                tracing::info!(topic = %name, partitions = cfg.num_partitions, "topic created on first use")
            }
            // Another request created it meanwhile: it exists, which is all that was asked.
            Err(e) if e.code() == crate::protocol::ErrorCode::TopicAlreadyExists => {}
            Err(e) => {
                tracing::warn!(topic = %name, error = %e, "creating a topic on first use failed")
            }
        }
    }
}

/// Auto-creation in cluster mode: the topic is created in etcd by the controller (this
/// node, or the controller it forwards to).
async fn create_in_cluster(ctx: &Context<'_>, name: String, partitions: i32) {
    let known = ctx
        .shard
        .cluster()
        .is_some_and(|v| v.topics.contains_key(&name));
    if known {
        return;
    }
    let host = ctx.shard.admin_host();
    let created = match crate::catalog::admin::check_create(&host, &name, partitions, &[]) {
        Ok(config) => super::cluster_admin::create(ctx, name.clone(), partitions, -1, config).await,
        Err(e) => Err(super::refusal::Refusal::new(
            errors::kafka_code(e.code(), true),
            e.message(),
        )),
    };
    match created {
        Ok(()) => tracing::info!(topic = %name, partitions, "topic created on first use"),
        Err(refused) if refused.code == errors::TOPIC_ALREADY_EXISTS => {}
        Err(refused) => {
            tracing::warn!(topic = %name, error = %refused.message, "creating a topic on first use failed")
        }
    }
}

/// Kafka's rule for creating a topic: CREATE on the cluster, or on the topic.
pub fn may_create(ctx: &Context<'_>, topic: &str) -> bool {
    ctx.on_cluster(Operation::Create) || ctx.on_topic(Operation::Create, topic)
}

/// Null (or, in v0, empty) asks for every topic.
fn requested(ctx: &Context<'_>, request: &MetadataRequest) -> Option<Vec<String>> {
    let names: Vec<String> = request
        .topics
        .as_ref()?
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect();
    (ctx.version > 0 || !names.is_empty()).then_some(names)
}

/// The topics answered: a named topic the principal may not DESCRIBE gets
/// TOPIC_AUTHORIZATION_FAILED (whether or not it exists); from "every topic" such topics
/// are left out without a word, as Kafka does.
fn topics(ctx: &Context<'_>, request: &MetadataRequest) -> Vec<MetadataResponseTopic> {
    let names = requested(ctx, request);
    let every_topic = names.is_none();
    let asked = names.as_ref().map(Vec::len);
    let describable = |name: &str| ctx.on_topic(Operation::Describe, name);
    let topics: Vec<MetadataResponseTopic> = ctx
        .shard
        .topics_snapshot(names.as_deref())
        .into_iter()
        .filter_map(|t| {
            let name = match &t {
                Ok(meta) => meta.name.as_str(),
                Err(UnknownTopic(name)) => name.as_str(),
            };
            match (describable(name), every_topic) {
                (true, _) => Some(described(ctx, request, t)),
                (false, true) => None,
                (false, false) => Some(denied(name.to_string())),
            }
        })
        .collect();
    // A topic asked by name is always answered (described, unknown or denied).
    assert!(
        asked.is_none_or(|n| n == topics.len()),
        "a named topic unanswered"
    );
    topics
}

/// A topic the principal may describe: its partitions, or why there are none.
fn described(
    ctx: &Context<'_>,
    request: &MetadataRequest,
    t: Result<crate::catalog::topics::TopicMeta, UnknownTopic>,
) -> MetadataResponseTopic {
    let served = t.and_then(|meta| match partitions(ctx, &meta) {
        Some(partitions) => Ok((meta, partitions)),
        None => Err(UnknownTopic(meta.name)),
    });
    match served {
        Ok((meta, partitions)) => MetadataResponseTopic::default()
            .with_name(Some(topic_name(meta.name.clone())))
            .with_topic_id(meta.topic_id)
            .with_is_internal(crate::catalog::internal_topics::is_internal(&meta.name))
            .with_partitions(partitions)
            .with_topic_authorized_operations(operations(ctx, request, &meta.name)),
        Err(UnknownTopic(name)) => {
            let code = if validate_topic_name(&name).is_err() {
                errors::INVALID_TOPIC_EXCEPTION
            } else {
                errors::UNKNOWN_TOPIC_OR_PARTITION
            };
            MetadataResponseTopic::default()
                .with_name(Some(topic_name(name)))
                .with_error_code(code)
        }
    }
}

fn denied(name: String) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(name)))
        .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
}

/// Asked for (v8+): the operations the principal may do on the topic.
fn operations(ctx: &Context<'_>, request: &MetadataRequest, topic: &str) -> i32 {
    match request.include_topic_authorized_operations {
        true => ctx.authorized_operations(ResourceType::Topic, topic, operations::TOPIC),
        false => super::cluster::OPERATIONS_NOT_ASKED,
    }
}

/// A topic's partitions as this node serves them (`cluster::placement`); None for a stray
/// (a local topic the cluster does not have).
fn partitions(
    ctx: &Context<'_>,
    meta: &crate::catalog::topics::TopicMeta,
) -> Option<Vec<MetadataResponsePartition>> {
    let view = ctx.shard.cluster();
    let placed = topic_placement(view.as_deref(), node_id(ctx), &meta.name, meta.owners.len())?;
    Some(placed.iter().map(|p| partition(ctx.version, p)).collect())
}

/// One partition in Kafka's terms: LEADER_NOT_AVAILABLE while no live node leads it (the
/// client asks again); fields a version does not have stay at their defaults (the encoder
/// refuses others).
fn partition(version: i16, placed: &PartitionPlacement) -> MetadataResponsePartition {
    let ids = |nodes: &[i32]| nodes.iter().map(|&n| BrokerId(n)).collect::<Vec<_>>();
    let mut p = MetadataResponsePartition::default()
        .with_partition_index(placed.partition)
        .with_leader_id(BrokerId(placed.leader))
        .with_replica_nodes(ids(&placed.replicas))
        .with_isr_nodes(ids(&placed.isr));
    if version >= 5 {
        p = p.with_offline_replicas(ids(&placed.offline));
    }
    if version >= 7 {
        p = p.with_leader_epoch(placed.leader_epoch);
    }
    match placed.leader {
        -1 => p.with_error_code(errors::LEADER_NOT_AVAILABLE),
        _ => p,
    }
}
