//! CreateTopics v2-7, CreatePartitions v0-3 and DeleteTopics v1-6: the native topic admin
//! (run one at a time on the controller shard) with Kafka's error codes and fields.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, TopicName,
};

use super::configs::described;
use super::errors::{self, kafka_code};
use super::refusal::Refusal;
use super::{str_bytes, Context};
use crate::catalog::admin_host::AdminRequest;
use crate::catalog::topics::TopicConfig;
use crate::protocol::ErrorCode;
use crate::security::acl::{Operation, ResourceType};

type Outcome = Result<(), Refusal>;

pub async fn create(ctx: &Context<'_>, request: CreateTopicsRequest) -> CreateTopicsResponse {
    let asked = request.topics.len();
    let mut results = Vec::with_capacity(asked);
    for topic in request.topics {
        let partitions = match (topic.num_partitions, topic.assignments.len()) {
            (-1, 0) => ctx.shard.config().num_partitions as i32,
            (-1, assigned) => assigned as i32,
            (n, _) => n,
        };
        let outcome = create_one(ctx, &topic, partitions, request.validate_only).await;
        results.push(created(ctx, topic.name, partitions, outcome));
    }
    assert_eq!(results.len(), asked, "one result per topic to create");
    CreateTopicsResponse::default().with_topics(results)
}

async fn create_one(
    ctx: &Context<'_>,
    topic: &CreatableTopic,
    partitions: i32,
    validate_only: bool,
) -> Outcome {
    check_replicas(ctx, topic)?;
    let name = topic.name.0.to_string();
    if !super::metadata::may_create(ctx, &name) {
        let denied = super::authorize::denied(ResourceType::Topic, &name);
        return Err(Refusal::new(errors::TOPIC_AUTHORIZATION_FAILED, denied));
    }
    // A null value means "the default": leave the key out.
    let configs: Vec<(String, String)> = topic
        .configs
        .iter()
        .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
        .collect();
    let checked = crate::catalog::internal_topics::refuse_client(&name, "create").and_then(|_| {
        let host = ctx.shard.admin_host();
        crate::catalog::admin::check_create(&host, &name, partitions, &configs)
    });
    let in_cluster = super::cluster_admin::in_cluster(ctx);
    let result = match (validate_only, in_cluster) {
        (true, _) => checked.map(|_| ()),
        (false, true) => {
            refuse_cluster_restore(&configs)?;
            let config = checked.map_err(|e| Refusal::new(create_code(e.code()), e.message()))?;
            let factor = topic.replication_factor;
            return super::cluster_admin::create(ctx, name, partitions, factor, config).await;
        }
        (false, false) => {
            let request = AdminRequest::CreateTopic {
                name,
                partitions,
                configs,
            };
            ctx.shard.admin(request).await.map(|_| ())
        }
    };
    result.map_err(|e| Refusal::new(create_code(e.code()), e.message()))
}

/// The replication factor and manual assignment a create asks for, where they can hold:
/// one node holds one replica of each partition; a cluster places them itself.
fn check_replicas(ctx: &Context<'_>, topic: &CreatableTopic) -> Outcome {
    let in_cluster = super::cluster_admin::in_cluster(ctx);
    if !in_cluster && !matches!(topic.replication_factor, -1 | 1) {
        return Err(Refusal::new(
            errors::INVALID_REPLICATION_FACTOR,
            format!(
                "replication factor {} is impossible: shardlog is a single node (use 1 or -1)",
                topic.replication_factor
            ),
        ));
    }
    if topic.assignments.is_empty() {
        return Ok(());
    }
    if in_cluster {
        return Err(Refusal::new(
            errors::INVALID_REPLICA_ASSIGNMENT,
            "manual replica assignments are not taken in cluster mode yet: give a replication factor and the controller places the replicas",
        ));
    }
    if topic.num_partitions != -1 || topic.replication_factor != -1 {
        return Err(Refusal::new(
            errors::INVALID_REQUEST,
            "both numPartitions or replicationFactor and replicasAssignments were set",
        ));
    }
    let assigned = topic.assignments.iter().map(|a| {
        let replicas: Vec<i32> = a.broker_ids.iter().map(|b| b.0).collect();
        (a.partition_index, replicas)
    });
    check_assignment(super::cluster::node_id(ctx), assigned.collect())
}

fn create_code(code: ErrorCode) -> i16 {
    match code {
        // The only request error of a create is its partition count.
        ErrorCode::InvalidRequest => errors::INVALID_PARTITIONS,
        other => kafka_code(other, true),
    }
}

fn created(
    ctx: &Context<'_>,
    name: TopicName,
    partitions: i32,
    outcome: Outcome,
) -> CreatableTopicResult {
    let r = CreatableTopicResult::default().with_name(name.clone());
    match outcome {
        Err(Refusal { code, message: msg }) => r
            .with_error_code(code)
            .with_error_message(Some(str_bytes(msg))),
        Ok(()) if ctx.version >= 5 => {
            let meta = ctx.shard.topic(&name.0);
            let configs = (meta.as_ref())
                .map(|meta| creatable_configs(&meta.config, &ctx.shard.broker_defaults()))
                .unwrap_or_default();
            let id = meta.map_or(uuid::Uuid::nil(), |m| m.topic_id);
            r.with_num_partitions(partitions)
                .with_replication_factor(replication_factor(ctx, &name.0))
                .with_configs(Some(configs))
                .with_topic_id(id)
        }
        Ok(()) => r,
    }
}

/// A created topic's replication factor: its replicas in the cluster, else this node.
fn replication_factor(ctx: &Context<'_>, topic: &str) -> i16 {
    let view = ctx.shard.cluster();
    let replicas = view.as_ref().and_then(|v| {
        Some(
            v.topics
                .get(topic)?
                .partitions
                .first()?
                .state
                .replicas
                .len(),
        )
    });
    replicas.map_or(1, |n| n as i16)
}

fn creatable_configs(
    config: &TopicConfig,
    broker: &crate::catalog::broker_defaults::BrokerDefaults,
) -> Vec<CreatableTopicConfigs> {
    described(config, broker, None)
        .into_iter()
        .map(|(name, value, source)| {
            CreatableTopicConfigs::default()
                .with_name(str_bytes(name))
                .with_value(Some(str_bytes(value)))
                .with_config_source(source)
        })
        .collect()
}

pub async fn delete(ctx: &Context<'_>, request: DeleteTopicsRequest) -> DeleteTopicsResponse {
    // v6 names topics in `topics`, earlier versions in `topic_names`.
    let names: Vec<TopicName> = if ctx.version >= 6 {
        request.topics.into_iter().filter_map(|t| t.name).collect()
    } else {
        request.topic_names
    };
    let asked = names.len();
    let mut results = Vec::with_capacity(asked);
    for name in names {
        let r = DeletableTopicResult::default().with_name(Some(name.clone()));
        let outcome = match ctx.topic_refusal(Operation::Delete, &name.0) {
            Some(denied) => Err(denied),
            None if super::cluster_admin::in_cluster(ctx) => {
                super::cluster_admin::delete(ctx, name.0.to_string()).await
            }
            None => (ctx
                .shard
                .admin(AdminRequest::DeleteTopic {
                    name: name.0.to_string(),
                })
                .await)
                .map(|_| ())
                .map_err(|e| Refusal::new(kafka_code(e.code(), true), e.message())),
        };
        results.push(match outcome {
            Ok(_) => r,
            Err(Refusal { code, message: msg }) => {
                let r = r.with_error_code(code);
                if ctx.version >= 5 {
                    r.with_error_message(Some(str_bytes(msg)))
                } else {
                    r
                }
            }
        });
    }
    assert_eq!(results.len(), asked, "one result per topic to delete");
    DeleteTopicsResponse::default().with_responses(results)
}

/// Kafka's checks of a manual replica assignment, (partition, replicas) each, on the one
/// broker that holds the topic (`me`): partitions 0, 1, ... in order, each on exactly it.
fn check_assignment(me: i32, assigned: Vec<(i32, Vec<i32>)>) -> Outcome {
    let refuse = |why: String| Err(Refusal::new(errors::INVALID_REPLICA_ASSIGNMENT, why));
    for (i, (partition, replicas)) in assigned.into_iter().enumerate() {
        if partition != i as i32 {
            return refuse(format!(
                "partitions must be assigned in order from 0: got {partition} at place {i}"
            ));
        }
        let unknown: Vec<i32> = replicas.iter().copied().filter(|&b| b != me).collect();
        if !unknown.is_empty() {
            return refuse(format!(
                "Unknown broker(s) in replica assignment: {unknown:?} (this topic's broker is {me})"
            ));
        }
        if replicas.len() != 1 {
            return refuse(format!(
                "partition {partition}: {} replicas; this cluster has one broker",
                replicas.len()
            ));
        }
    }
    Ok(())
}

/// CreatePartitions' assignments of the new partitions (from the topic's current count).
fn new_partitions_assignment(
    ctx: &Context<'_>,
    topic: &str,
    count: i32,
    assignments: &Option<
        Vec<kafka_protocol::messages::create_partitions_request::CreatePartitionsAssignment>,
    >,
) -> Outcome {
    let Some(assignments) = assignments else {
        return Ok(());
    };
    if super::cluster_admin::in_cluster(ctx) {
        if assignments.is_empty() {
            return Ok(());
        }
        return Err(Refusal::new(
            errors::INVALID_REPLICA_ASSIGNMENT,
            "manual replica assignments are not taken in cluster mode yet: the controller places the new partitions' replicas",
        ));
    }
    let current = ctx.shard.topic(topic).map_or(0, |m| m.partitions() as i32);
    if assignments.len() as i32 != count - current {
        return Err(Refusal::new(
            errors::INVALID_REPLICA_ASSIGNMENT,
            format!(
                "{} assignments for {} new partitions",
                assignments.len(),
                count - current
            ),
        ));
    }
    let assigned = assignments.iter().enumerate().map(|(i, a)| {
        let replicas = a.broker_ids.iter().map(|b| b.0).collect();
        (i as i32, replicas)
    });
    check_assignment(super::cluster::node_id(ctx), assigned.collect())
}

/// CreatePartitions (`kafka-topics --alter --partitions`): each topic grows on the
/// controller as the native CreatePartitions grows it; replica assignments cannot apply to
/// one node and are refused.
pub async fn create_partitions(
    ctx: &Context<'_>,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let asked = request.topics.len();
    let mut results = Vec::with_capacity(asked);
    for t in request.topics {
        let name = t.name.0.to_string();
        let outcome = if let Some(denied) = ctx.topic_refusal(Operation::Alter, &name) {
            Err(denied)
        } else if let Err(refused) = new_partitions_assignment(ctx, &name, t.count, &t.assignments)
        {
            Err(refused)
        } else if let Err(e) =
            crate::catalog::admin::check_grow(&ctx.shard.admin_host(), &name, t.count)
        {
            Err(Refusal::new(create_code(e.code()), e.message()))
        } else if request.validate_only {
            Ok(())
        } else if super::cluster_admin::in_cluster(ctx) {
            super::cluster_admin::create_partitions(ctx, name, t.count).await
        } else {
            let count = t.count;
            ctx.shard
                .admin(AdminRequest::CreatePartitions { name, count })
                .await
                .map(|_| ())
                .map_err(|e| Refusal::new(create_code(e.code()), e.message()))
        };
        let r = CreatePartitionsTopicResult::default().with_name(t.name);
        results.push(match outcome {
            Ok(()) => r,
            Err(Refusal { code, message: msg }) => r
                .with_error_code(code)
                .with_error_message(Some(str_bytes(msg))),
        });
    }
    assert_eq!(results.len(), asked, "one result per topic to grow");
    CreatePartitionsResponse::default().with_results(results)
}

/// A restore from the bucket (`remote.recovery=true`) lays out one node's directories; a
/// cluster's replicas would each need the same, which is not built: refused, not turned
/// into an empty topic.
fn refuse_cluster_restore(configs: &[(String, String)]) -> Result<(), Refusal> {
    let key = crate::catalog::admin::RECOVERY_KEY;
    match configs.iter().any(|(k, v)| k == key && v.trim() != "false") {
        false => Ok(()),
        true => Err(Refusal::new(
            errors::INVALID_CONFIG,
            format!("{key}: restoring a topic from the bucket is done on a single node; a cluster cannot restore one yet"),
        )),
    }
}
