//! Metadata v0-12: this node (its broker.id, at the listener the client came in on), which
//! leads every partition it holds and is the controller of its topics. Leader epochs are
//! reported as -1 (unknown), so clients never validate positions with OffsetForLeaderEpoch,
//! which shardlog does not serve yet.
//!
//! In cluster mode too, until topics are shared through etcd: every node still holds its
//! own topics, so listing the other nodes (or the elected controller, where clients send
//! CreateTopics) would send a client's requests to a node that does not have its topics.
//! DescribeCluster reports the cluster's live nodes and controller.

use crate::catalog::error::UnknownTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse};

use super::cluster::node_id;
use super::cluster::operations;
use super::errors;
use super::{str_bytes, topic_name, Context, CLUSTER_ID};
use crate::catalog::topics::validate_topic_name;
use crate::security::acl::{Operation, ResourceType};

pub async fn handle(ctx: &Context<'_>, request: MetadataRequest) -> MetadataResponse {
    create_on_use(ctx, &request).await;
    let (host, port) = super::cluster::broker_address(ctx);
    let me = node_id(ctx);
    let broker = MetadataResponseBroker::default()
        .with_node_id(BrokerId(me))
        .with_host(str_bytes(host))
        .with_port(port);
    let response = MetadataResponse::default()
        .with_brokers(vec![broker])
        .with_controller_id(BrokerId(if ctx.version >= 1 { me } else { -1 }))
        .with_topics(topics(ctx, &request));
    if ctx.version >= 2 {
        response.with_cluster_id(Some(str_bytes(CLUSTER_ID)))
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
            Err(e) if e.code == crate::protocol::ErrorCode::TopicAlreadyExists => {}
            Err(e) => {
                tracing::warn!(topic = %name, error = %e, "creating a topic on first use failed")
            }
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
    match t {
        Ok(meta) => MetadataResponseTopic::default()
            .with_name(Some(topic_name(meta.name.clone())))
            .with_topic_id(meta.topic_id)
            .with_is_internal(crate::catalog::internal_topics::is_internal(&meta.name))
            .with_partitions(
                (0..meta.owners.len() as i32)
                    .map(|p| partition(ctx.version, node_id(ctx), p))
                    .collect(),
            )
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

/// A partition this node leads, its only replica.
fn partition(version: i16, me: i32, index: i32) -> MetadataResponsePartition {
    let p = MetadataResponsePartition::default()
        .with_partition_index(index)
        .with_leader_id(BrokerId(me))
        .with_replica_nodes(vec![BrokerId(me)])
        .with_isr_nodes(vec![BrokerId(me)]);
    if version >= 7 {
        p.with_leader_epoch(-1)
    } else {
        p
    }
}
