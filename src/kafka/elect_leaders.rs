//! ElectLeaders (43), Kafka's `kafka-leader-election`: PREFERRED moves each partition's
//! leadership back to its first assigned replica if that one is in sync; UNCLEAN elects a
//! live replica outside the ISR for a partition without a live leader (only when asked).
//! The controller decides (`cluster/controller.rs`); another node forwards the request to
//! it. On a single node every partition already has its only replica as leader.

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::errors;
use super::Context;
use crate::cluster::controller::{ElectionAnswer, ElectionKind, ElectionOutcome};
use crate::cluster::TopicRefused;
use crate::replication::controller::ElectionRefused;
use crate::security::acl::Operation;

/// At most this many partitions per request (each is one etcd transaction).
const MAX_PARTITIONS: usize = 10_000;

pub async fn handle(ctx: &Context<'_>, request: ElectLeadersRequest) -> ElectLeadersResponse {
    let refuse = |code: i16| ElectLeadersResponse::default().with_error_code(code);
    if !ctx.on_cluster(Operation::Alter) {
        return refuse(errors::CLUSTER_AUTHORIZATION_FAILED);
    }
    let kind = match (ctx.version, request.election_type) {
        (0, _) | (_, 0) => ElectionKind::Preferred,
        (_, 1) => ElectionKind::Unclean,
        _ => return refuse(errors::INVALID_REQUEST),
    };
    let asked = request.topic_partitions.as_ref().map(|topics| {
        let each = topics.iter().flat_map(|t| {
            let name = t.topic.0.to_string();
            t.partitions.iter().map(move |&p| (name.clone(), p))
        });
        each.collect::<Vec<(String, i32)>>()
    });
    if asked.as_ref().is_some_and(|a| a.len() > MAX_PARTITIONS) {
        return refuse(errors::INVALID_REQUEST);
    }
    let asked_count = asked.as_ref().map(Vec::len);
    let results = match ctx.shard.cluster_link() {
        Some(link) => {
            let partitions = asked.map(|a| a.into_iter().filter_map(valid).collect());
            match link.elect_leaders(kind, partitions).await {
                Ok(elected) => elected,
                Err(TopicRefused::NotController {
                    controller: Some(controller),
                }) => return forwarded(ctx, controller, request).await,
                Err(e) => {
                    tracing::warn!(error = %e, "ElectLeaders could not run");
                    return refuse(errors::NOT_CONTROLLER);
                }
            }
        }
        None => single_node(ctx, asked.unwrap_or_default()),
    };
    // Named partitions get one outcome each (all partitions: however many there are).
    assert!(
        asked_count.is_none_or(|n| n == results.len()),
        "one outcome per partition"
    );
    respond(results)
}

/// A negative partition index names no partition (answered as unknown below).
fn valid((topic, p): (String, i32)) -> Option<(String, u32)> {
    Some((topic, u32::try_from(p).unwrap_or(u32::MAX)))
}

/// One node: each known partition is led by its only replica already.
fn single_node(
    ctx: &Context<'_>,
    asked: Vec<(String, i32)>,
) -> Vec<(String, u32, ElectionOutcome)> {
    let topics = ctx.shard.topics_snapshot(None);
    let count = |name: &str| {
        let meta = topics.iter().flatten().find(|t| t.name == name);
        meta.map_or(0, |t| t.owners.len())
    };
    let answer = |(topic, p): (String, i32)| {
        let known = p >= 0 && (p as usize) < count(&topic);
        let outcome = match known {
            true => Err(ElectionAnswer::Refused(ElectionRefused::NotNeeded)),
            false => Err(ElectionAnswer::Unknown(format!("{topic}-{p}"))),
        };
        (topic, u32::try_from(p).unwrap_or(u32::MAX), outcome)
    };
    asked.into_iter().map(answer).collect()
}

/// The response, one entry per topic in the order first asked.
fn respond(results: Vec<(String, u32, ElectionOutcome)>) -> ElectLeadersResponse {
    let mut topics: Vec<ReplicaElectionResult> = Vec::new();
    let count = results.len();
    for (topic, p, outcome) in results {
        let (code, message) = match &outcome {
            Ok(()) => (0, None),
            Err(why) => (code_of(why), Some(StrBytes::from_string(why.to_string()))),
        };
        let result = PartitionResult::default()
            .with_partition_id(i32::try_from(p).unwrap_or(-1))
            .with_error_code(code)
            .with_error_message(message);
        match topics.iter_mut().find(|t| t.topic.0.as_str() == topic) {
            Some(t) => t.partition_result.push(result),
            None => topics.push(
                ReplicaElectionResult::default()
                    .with_topic(TopicName(StrBytes::from_string(topic)))
                    .with_partition_result(vec![result]),
            ),
        }
    }
    let answered: usize = topics.iter().map(|t| t.partition_result.len()).sum();
    assert_eq!(answered, count, "every outcome is in the response");
    ElectLeadersResponse::default().with_replica_election_results(topics)
}

fn code_of(why: &ElectionAnswer) -> i16 {
    match why {
        ElectionAnswer::Unknown(_) => errors::UNKNOWN_TOPIC_OR_PARTITION,
        ElectionAnswer::Refused(ElectionRefused::NotNeeded) => errors::ELECTION_NOT_NEEDED,
        ElectionAnswer::Refused(ElectionRefused::PreferredNotAvailable) => {
            errors::PREFERRED_LEADER_NOT_AVAILABLE
        }
        ElectionAnswer::Refused(ElectionRefused::NoEligibleLeader) => {
            errors::ELIGIBLE_LEADERS_NOT_AVAILABLE
        }
        ElectionAnswer::Raced => errors::NOT_CONTROLLER,
    }
}

/// The controller's answer to the same request.
async fn forwarded(
    ctx: &Context<'_>,
    controller: i32,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    match super::forward::elect_leaders(ctx, controller, request).await {
        Ok(answer) => answer,
        Err(refusal) => {
            tracing::debug!(why = %refusal.message, "ElectLeaders not forwarded");
            ElectLeadersResponse::default().with_error_code(refusal.code)
        }
    }
}
