//! Topic changes through the Kafka API, as kafka-topics makes them: CreateTopics,
//! DeleteTopics, CreatePartitions and IncrementalAlterConfigs. `shardlog topics` uses them
//! on a cluster, where the native API changes one node only (TopicChangeOnKafkaApi): the
//! node that takes them hands them to the controller, which writes them to etcd.

use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncrementalResource, AlterableConfig,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::kafka::blocking_client::BlockingClient;

/// How long the controller may take (Kafka's tools wait 30 s too).
const TIMEOUT_MS: i32 = 30_000;
/// IncrementalAlterConfigs' operations (Kafka's AlterConfigOp).
const SET: i8 = 0;
const DELETE: i8 = 1;
/// ConfigResource types: a topic, a broker (named by its broker.id).
pub const TOPIC_RESOURCE: i8 = 2;
pub const BROKER_RESOURCE: i8 = 4;

fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// The answer's code as a refusal naming `what`, with the server's message.
fn outcome(what: &str, code: i16, message: Option<&StrBytes>) -> Result<(), String> {
    match code {
        0 => Ok(()),
        _ => {
            let message = message.map_or(String::new(), |m| format!(": {m}"));
            let code = crate::kafka_codes::describe(code);
            Err(format!("{what} refused by the server ({code}){message}"))
        }
    }
}

fn call(
    client: &mut BlockingClient,
    key: ApiKey,
    version: i16,
    request: RequestKind,
) -> Result<ResponseKind, String> {
    client
        .call(key, version, &request)
        .map_err(|e| format!("{key:?}: {e}"))
}

/// A replication factor that asks for the cluster's default.replication.factor.
pub const DEFAULT_FACTOR: i16 = -1;

/// CreateTopics v5 of `topic` with (partitions, replication factor).
pub fn create(
    client: &mut BlockingClient,
    topic: &str,
    (partitions, factor): (i32, i16),
    configs: &[(String, String)],
) -> Result<(), String> {
    let configs = configs.iter().map(|(k, v)| {
        create_topics_request::CreatableTopicConfig::default()
            .with_name(name(k))
            .with_value(Some(name(v)))
    });
    let t = create_topics_request::CreatableTopic::default()
        .with_name(TopicName(name(topic)))
        .with_num_partitions(partitions)
        .with_replication_factor(factor)
        .with_configs(configs.collect());
    let request = CreateTopicsRequest::default()
        .with_topics(vec![t])
        .with_timeout_ms(TIMEOUT_MS);
    let answer = call(
        client,
        ApiKey::CreateTopics,
        5,
        RequestKind::CreateTopics(request),
    )?;
    let ResponseKind::CreateTopics(r) = answer else {
        return Err("CreateTopics: another answer".into());
    };
    let t = r
        .topics
        .first()
        .ok_or("CreateTopics: no topic in the answer")?;
    outcome(
        &format!("creating {topic}"),
        t.error_code,
        t.error_message.as_ref(),
    )
}

/// DeleteTopics v4 of `topic`.
pub fn delete(client: &mut BlockingClient, topic: &str) -> Result<(), String> {
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![TopicName(name(topic))])
        .with_timeout_ms(TIMEOUT_MS);
    let answer = call(
        client,
        ApiKey::DeleteTopics,
        4,
        RequestKind::DeleteTopics(request),
    )?;
    let ResponseKind::DeleteTopics(r) = answer else {
        return Err("DeleteTopics: another answer".into());
    };
    let t = r
        .responses
        .first()
        .ok_or("DeleteTopics: no topic in the answer")?;
    outcome(&format!("deleting {topic}"), t.error_code, None)
}

/// CreatePartitions v1 growing `topic` to `count` partitions.
pub fn grow(client: &mut BlockingClient, topic: &str, count: i32) -> Result<(), String> {
    let t = create_partitions_request::CreatePartitionsTopic::default()
        .with_name(TopicName(name(topic)))
        .with_count(count)
        .with_assignments(None);
    let request = CreatePartitionsRequest::default()
        .with_topics(vec![t])
        .with_timeout_ms(TIMEOUT_MS);
    let answer = call(
        client,
        ApiKey::CreatePartitions,
        1,
        RequestKind::CreatePartitions(request),
    )?;
    let ResponseKind::CreatePartitions(r) = answer else {
        return Err("CreatePartitions: another answer".into());
    };
    let t = r
        .results
        .first()
        .ok_or("CreatePartitions: no topic in the answer")?;
    outcome(
        &format!("growing {topic}"),
        t.error_code,
        t.error_message.as_ref(),
    )
}

/// IncrementalAlterConfigs v0 of `topic`: `set` set, `delete` back to their defaults.
pub fn alter_configs(
    client: &mut BlockingClient,
    topic: &str,
    set: &[(String, String)],
    delete: &[String],
) -> Result<(), String> {
    alter_resource(client, (TOPIC_RESOURCE, topic), set, delete)
}

/// IncrementalAlterConfigs v0 of one resource (`TOPIC_RESOURCE` or `BROKER_RESOURCE`).
pub fn alter_resource(
    client: &mut BlockingClient,
    (kind, resource): (i8, &str),
    set: &[(String, String)],
    delete: &[String],
) -> Result<(), String> {
    let set = set.iter().map(|(k, v)| (k, Some(name(v)), SET));
    let delete = delete.iter().map(|k| (k, None, DELETE));
    let configs = set.chain(delete).map(|(k, v, op)| {
        AlterableConfig::default()
            .with_name(name(k))
            .with_value(v)
            .with_config_operation(op)
    });
    let asked = IncrementalResource::default()
        .with_resource_type(kind)
        .with_resource_name(name(resource))
        .with_configs(configs.collect());
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![asked]);
    let kind = RequestKind::IncrementalAlterConfigs(request);
    let answer = call(client, ApiKey::IncrementalAlterConfigs, 0, kind)?;
    let ResponseKind::IncrementalAlterConfigs(r) = answer else {
        return Err("IncrementalAlterConfigs: another answer".into());
    };
    let t = r
        .responses
        .first()
        .ok_or("IncrementalAlterConfigs: no resource in the answer")?;
    outcome(
        &format!("altering the configs of {resource:?}"),
        t.error_code,
        t.error_message.as_ref(),
    )
}
