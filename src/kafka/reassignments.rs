//! AlterPartitionReassignments (45) and ListPartitionReassignments (46), Kafka's
//! `kafka-reassign-partitions`: a partition's replicas move to a target set (new ones
//! added, caught up into the ISR, then the old ones dropped and their copies deleted), or
//! a reassignment under way is cancelled (replicas = null). The controller carries them
//! out (`cluster/reassign.rs`); another node forwards the request to it. The list is
//! answered from this node's view. On a single node only the node itself is a replica.

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, RequestKind,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::errors;
use super::Context;
use crate::cluster::controller::{ReassignAnswer, ReassignAsked, ReassignResult};
use crate::cluster::TopicRefused;
use crate::replication::reassignment::ReassignRefused;
use crate::security::acl::Operation;

/// At most this many partitions per request (each is one etcd transaction).
const MAX_PARTITIONS: usize = 10_000;
/// At most this many replicas per partition asked for.
const MAX_REPLICAS: usize = 64;

/// A partition's outcome as the response carries it: (code, message).
type Outcome = (i16, Option<String>);

/// Runs AlterPartitionReassignments or ListPartitionReassignments.
pub async fn dispatch(ctx: &Context<'_>, request: RequestKind) -> ResponseKind {
    match request {
        RequestKind::AlterPartitionReassignments(r) => {
            ResponseKind::AlterPartitionReassignments(alter(ctx, r).await)
        }
        RequestKind::ListPartitionReassignments(r) => {
            ResponseKind::ListPartitionReassignments(list(ctx, r).await)
        }
        other => unreachable!("not a reassignment request: {other:?}"),
    }
}

async fn alter(
    ctx: &Context<'_>,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let refuse = |code: i16, why: &str| {
        AlterPartitionReassignmentsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(why.to_string())))
    };
    if !ctx.on_cluster(Operation::Alter) {
        return refuse(
            errors::CLUSTER_AUTHORIZATION_FAILED,
            "Alter on the cluster is required",
        );
    }
    let asked = asked_of(&request);
    if asked.len() > MAX_PARTITIONS {
        return refuse(
            errors::INVALID_REQUEST,
            "too many partitions in one request",
        );
    }
    let asked_count = asked.len();
    let (checked, mut answered) = pre_checked(ctx, &request, asked);
    let results = match ctx.shard.cluster_link() {
        Some(link) => match link.reassign(checked).await {
            Ok(done) => done,
            Err(TopicRefused::NotController {
                controller: Some(controller),
            }) => return forwarded(ctx, controller, request).await,
            Err(e) => return refuse(errors::NOT_CONTROLLER, &e.to_string()),
        },
        None => checked.into_iter().map(|a| single_node(ctx, a)).collect(),
    };
    answered.extend(results.into_iter().map(|(t, p, r)| (t, p, outcome_of(r))));
    assert_eq!(
        answered.len(),
        asked_count,
        "one outcome per partition asked"
    );
    respond(&request, answered)
}

/// The partitions asked for, as (topic, index, target or None to cancel).
fn asked_of(request: &AlterPartitionReassignmentsRequest) -> Vec<ReassignAsked> {
    let each = request.topics.iter().flat_map(|t| {
        let name = t.name.0.to_string();
        t.partitions.iter().map(move |p| {
            let target = (p.replicas.as_ref()).map(|r| r.iter().map(|b| b.0).collect());
            let index = u32::try_from(p.partition_index).unwrap_or(u32::MAX);
            (name.clone(), index, target)
        })
    });
    each.collect()
}

/// What this node answers before the controller: too many replicas, and (v1 without
/// allow_replication_factor_change) a change of replication factor. The rest go on.
fn pre_checked(
    ctx: &Context<'_>,
    request: &AlterPartitionReassignmentsRequest,
    asked: Vec<ReassignAsked>,
) -> (Vec<ReassignAsked>, Vec<(String, u32, Outcome)>) {
    let keep_factor = ctx.version >= 1 && !request.allow_replication_factor_change;
    let view = ctx.shard.cluster();
    let factor_now = |topic: &str, p: u32| {
        let topic = view.as_ref()?.topics.get(topic)?;
        Some(topic.partitions.get(p as usize)?.state.original().len())
    };
    let (mut go, mut answered) = (Vec::new(), Vec::new());
    for (topic, p, target) in asked {
        let len = target.as_ref().map_or(0, Vec::len);
        let now = factor_now(&topic, p);
        let refusal = if len > MAX_REPLICAS {
            let why = format!("at most {MAX_REPLICAS} replicas per partition");
            Some((errors::INVALID_REPLICA_ASSIGNMENT, Some(why)))
        } else if keep_factor && target.is_some() && now.is_some_and(|n| n != len) {
            let why = format!("The replication factor is changed from {} to {len} but allowReplicationFactorChange is false", now.unwrap_or(0));
            Some((errors::INVALID_REPLICATION_FACTOR, Some(why)))
        } else {
            None
        };
        match refusal {
            Some(outcome) => answered.push((topic, p, outcome)),
            None => go.push((topic, p, target)),
        }
    }
    (go, answered)
}

/// One node: it is the only replica there can be.
fn single_node(ctx: &Context<'_>, (topic, p, target): ReassignAsked) -> ReassignResult {
    let known = ctx
        .shard
        .topic(&topic)
        .is_some_and(|t| (p as usize) < t.owners.len());
    let me = super::cluster::node_id(ctx);
    let outcome = match (known, target) {
        (false, _) => Err(ReassignAnswer::Unknown(format!("{topic}-{p}"))),
        (true, None) => Err(ReassignRefused::NoneInProgress.into()),
        (true, Some(t)) if t == [me] => Ok(()),
        (true, Some(t)) => {
            let brokers = |b: i32| (b == me).then_some(0);
            let checked = crate::replication::reassignment::check_target(&t, &brokers);
            let why = checked.err().unwrap_or_else(|| {
                ReassignRefused::Invalid(format!("a single node holds one replica, on broker {me}"))
            });
            Err(why.into())
        }
    };
    (topic, p, outcome)
}

fn outcome_of(result: Result<(), ReassignAnswer>) -> Outcome {
    let code = match &result {
        Ok(()) => return (errors::NONE, None),
        Err(ReassignAnswer::Unknown(_)) => errors::UNKNOWN_TOPIC_OR_PARTITION,
        Err(ReassignAnswer::Refused(ReassignRefused::NoneInProgress)) => {
            errors::NO_REASSIGNMENT_IN_PROGRESS
        }
        Err(ReassignAnswer::Refused(_)) => errors::INVALID_REPLICA_ASSIGNMENT,
        Err(ReassignAnswer::Raced) => errors::NOT_CONTROLLER,
    };
    (code, result.err().map(|e| e.to_string()))
}

/// The response: every partition asked for, by topic in the order asked.
fn respond(
    request: &AlterPartitionReassignmentsRequest,
    answered: Vec<(String, u32, Outcome)>,
) -> AlterPartitionReassignmentsResponse {
    let topics = request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            let index = u32::try_from(p.partition_index).unwrap_or(u32::MAX);
            let found = answered
                .iter()
                .find(|(n, i, _)| *n == *t.name.0 && *i == index);
            let (code, why) =
                found.map_or((errors::UNKNOWN_SERVER_ERROR, None), |(_, _, o)| o.clone());
            ReassignablePartitionResponse::default()
                .with_partition_index(p.partition_index)
                .with_error_code(code)
                .with_error_message(why.map(StrBytes::from_string))
        });
        ReassignableTopicResponse::default()
            .with_name(t.name.clone())
            .with_partitions(partitions.collect())
    });
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(request.allow_replication_factor_change)
        .with_responses(topics.collect())
}

/// The controller's answer to the same request.
async fn forwarded(
    ctx: &Context<'_>,
    controller: i32,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let sent = RequestKind::AlterPartitionReassignments(request);
    let key = ApiKey::AlterPartitionReassignments;
    match super::forward::ask(ctx, controller, key, ctx.version, sent).await {
        Ok(ResponseKind::AlterPartitionReassignments(answer)) => answer,
        Ok(_) => AlterPartitionReassignmentsResponse::default()
            .with_error_code(errors::UNKNOWN_SERVER_ERROR),
        Err(refusal) => AlterPartitionReassignmentsResponse::default()
            .with_error_code(refusal.code)
            .with_error_message(Some(StrBytes::from_string(refusal.message))),
    }
}

/// The reassignments under way (all, or of the partitions asked for), as the controller
/// sees them (as in Kafka; another node forwards the request, so a list right after a
/// change shows it).
async fn list(
    ctx: &Context<'_>,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    if !ctx.on_cluster(Operation::Describe) {
        return ListPartitionReassignmentsResponse::default()
            .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED);
    }
    let Some(view) = ctx.shard.cluster() else {
        return ListPartitionReassignmentsResponse::default();
    };
    let me = super::cluster::node_id(ctx);
    match view.controller.map(|c| c.id) {
        Some(controller) if controller != me => {
            return list_forwarded(ctx, controller, request).await
        }
        None => {
            return ListPartitionReassignmentsResponse::default()
                .with_error_code(errors::NOT_CONTROLLER)
        }
        Some(_) => {}
    }
    let wanted = |topic: &str, p: u32| match &request.topics {
        None => true,
        Some(topics) => topics.iter().any(|t| {
            *t.name.0 == *topic && t.partition_indexes.iter().any(|&i| i as i64 == p as i64)
        }),
    };
    let ids = |list: &[i32]| list.iter().map(|&b| BrokerId(b)).collect::<Vec<_>>();
    let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
    for (topic, p, state) in crate::cluster::reassign::under_way(&view) {
        if !wanted(&topic, p) {
            continue;
        }
        let ongoing = OngoingPartitionReassignment::default()
            .with_partition_index(p as i32)
            .with_replicas(ids(&state.replicas))
            .with_adding_replicas(ids(&state.adding))
            .with_removing_replicas(ids(&state.removing));
        match topics.last_mut().filter(|t| *t.name.0 == *topic) {
            Some(t) => t.partitions.push(ongoing),
            None => topics.push(
                OngoingTopicReassignment::default()
                    .with_name(TopicName(StrBytes::from_string(topic)))
                    .with_partitions(vec![ongoing]),
            ),
        }
    }
    ListPartitionReassignmentsResponse::default().with_topics(topics)
}

/// The controller's answer to the same list.
async fn list_forwarded(
    ctx: &Context<'_>,
    controller: i32,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let sent = RequestKind::ListPartitionReassignments(request);
    let key = ApiKey::ListPartitionReassignments;
    match super::forward::ask(ctx, controller, key, 0, sent).await {
        Ok(ResponseKind::ListPartitionReassignments(answer)) => answer,
        Ok(_) => ListPartitionReassignmentsResponse::default()
            .with_error_code(errors::UNKNOWN_SERVER_ERROR),
        Err(refusal) => ListPartitionReassignmentsResponse::default()
            .with_error_code(refusal.code)
            .with_error_message(Some(StrBytes::from_string(refusal.message))),
    }
}
