//! Topic changes a node that is not the controller forwards to the controller (Kafka's
//! brokers forward admin requests the same way, KIP-590): the request, already checked
//! here, is sent as a Kafka request over the controller's PLAINTEXT listener, and its
//! answer is this node's answer. The controller authorizes the forwarding connection's
//! own principal (with an authorizer, inter-node authentication is to come). A created
//! topic's copy on this node follows from the view; the answer waits a little for it, so
//! a CreateTopics v5+ reply carries the topic's id and configs.

use std::time::{Duration, Instant};

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, ElectLeadersRequest,
    ElectLeadersResponse, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::errors;
use super::refusal::Refusal;
use super::Context;
use crate::cluster::TopicSpec;

/// How long a forwarded change may take at the controller.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a forwarded create waits for this node's copy of the topic.
const COPY_WAIT: Duration = Duration::from_secs(5);

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Sends `request` to node `controller`: its answer, or why the controller could not be
/// asked (retriable: the client asks again, maybe of a new controller).
pub(super) async fn ask(
    ctx: &Context<'_>,
    controller: i32,
    key: ApiKey,
    version: i16,
    request: RequestKind,
) -> Result<ResponseKind, Refusal> {
    let unreachable = |why: String| {
        let why = format!("forwarding to the controller (broker {controller}): {why}");
        Refusal::new(errors::NOT_CONTROLLER, why)
    };
    let view = ctx.shard.cluster();
    let sent = (key, version, &request);
    let security = ctx.shard.config().inter_broker_client();
    let answer = super::peer_pool::call(
        view.as_deref(),
        (controller, &security),
        "shardlog-forward",
        sent,
        TIMEOUT,
    );
    answer.await.map_err(|e| unreachable(e.to_string()))
}

/// The controller's answer for the one topic forwarded, as this node's answer.
fn outcome(answer: ResponseKind) -> Result<(), Refusal> {
    let first = match &answer {
        ResponseKind::CreateTopics(r) => r.topics.first().map(|t| (t.error_code, &t.error_message)),
        ResponseKind::DeleteTopics(r) => {
            (r.responses.first()).map(|t| (t.error_code, &t.error_message))
        }
        ResponseKind::CreatePartitions(r) => {
            (r.results.first()).map(|t| (t.error_code, &t.error_message))
        }
        _ => None,
    };
    let Some((code, message)) = first else {
        let why = "the controller's answer does not answer the topic forwarded";
        return Err(Refusal::new(errors::UNKNOWN_SERVER_ERROR, why));
    };
    match code {
        0 => Ok(()),
        code => {
            let why = (message.as_ref()).map_or_else(|| errors::describe(code), |m| m.to_string());
            Err(Refusal::new(
                code,
                format!("the controller answered: {why}"),
            ))
        }
    }
}

pub async fn create(ctx: &Context<'_>, controller: i32, spec: &TopicSpec) -> Result<(), Refusal> {
    let configs = spec.configs.iter().map(|(k, v)| {
        CreatableTopicConfig::default()
            .with_name(StrBytes::from_string(k.clone()))
            .with_value(Some(StrBytes::from_string(v.clone())))
    });
    let topic = CreatableTopic::default()
        .with_name(name(&spec.name))
        .with_num_partitions(spec.partitions as i32)
        .with_replication_factor(i16::try_from(spec.replication_factor).unwrap_or(i16::MAX))
        .with_configs(configs.collect());
    let request = CreateTopicsRequest::default()
        .with_topics(vec![topic])
        .with_timeout_ms(TIMEOUT.as_millis() as i32);
    let request = RequestKind::CreateTopics(request);
    outcome(ask(ctx, controller, ApiKey::CreateTopics, 5, request).await?)?;
    wait_for_copy(ctx, &spec.name).await;
    Ok(())
}

/// Waits (bounded) until this node has its copy of a topic the controller created.
async fn wait_for_copy(ctx: &Context<'_>, topic: &str) {
    let deadline = Instant::now() + COPY_WAIT;
    while !ctx.shard.has_topic(topic) && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn delete(ctx: &Context<'_>, controller: i32, topic: &str) -> Result<(), Refusal> {
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![name(topic)])
        .with_timeout_ms(TIMEOUT.as_millis() as i32);
    let request = RequestKind::DeleteTopics(request);
    outcome(ask(ctx, controller, ApiKey::DeleteTopics, 5, request).await?)
}

pub async fn create_partitions(
    ctx: &Context<'_>,
    controller: i32,
    topic: &str,
    count: i32,
) -> Result<(), Refusal> {
    let grow = CreatePartitionsTopic::default()
        .with_name(name(topic))
        .with_count(count)
        .with_assignments(None);
    let request = CreatePartitionsRequest::default()
        .with_topics(vec![grow])
        .with_timeout_ms(TIMEOUT.as_millis() as i32);
    let request = RequestKind::CreatePartitions(request);
    outcome(ask(ctx, controller, ApiKey::CreatePartitions, 1, request).await?)
}

/// An ElectLeaders request as asked, answered by the controller.
pub async fn elect_leaders(
    ctx: &Context<'_>,
    controller: i32,
    request: ElectLeadersRequest,
) -> Result<ElectLeadersResponse, Refusal> {
    let request = RequestKind::ElectLeaders(request);
    match ask(ctx, controller, ApiKey::ElectLeaders, 2, request).await? {
        ResponseKind::ElectLeaders(answer) => Ok(answer),
        _ => Err(Refusal::new(
            errors::UNKNOWN_SERVER_ERROR,
            "the controller's answer is not an ElectLeaders response",
        )),
    }
}
