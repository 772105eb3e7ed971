//! The consumer-group APIs on the Kafka listener: FindCoordinator answers this node (the
//! one broker); the others become `GroupOp`s run by the group's coordinator shard
//! (`groups/`), and their answers are put in each request version's fields.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::cluster::node_id;
use super::cluster::operations;
use super::errors::{self as e, kafka_code};
use super::group_acls;
use super::refusal::Refusal;
use super::{str_bytes, Context};
use crate::groups::code::GroupCode;
use crate::groups::ops::{GroupOp, GroupReply, JoinRequest, OffsetToCommit, SyncRequest};
use crate::security::acl::{Operation, ResourceType};
use crate::shard::coordinator_routing::{self as routing, route_group};
use crate::TopicPartition;

/// The type of every group here (KIP-848's "consumer" groups are not served).
const GROUP_TYPE: &str = "classic";

fn text(s: &StrBytes) -> String {
    s.to_string()
}

fn opt(s: Option<String>) -> Option<StrBytes> {
    s.map(str_bytes)
}

/// Runs `op` for `group`; a routing failure becomes a Kafka code.
pub(super) async fn run(
    ctx: &Context<'_>,
    group: &GroupId,
    op: GroupOp,
) -> Result<GroupReply, GroupCode> {
    if group.0.is_empty() {
        return Err(GroupCode::InvalidGroupId);
    }
    super::group_acls::check(ctx, &group.0, &op)?;
    route_group(ctx.shard, text(&group.0), op)
        .await
        .map_err(|e| match e.code() {
            crate::protocol::ErrorCode::NotReady => GroupCode::CoordinatorNotAvailable,
            other => GroupCode::Log(other),
        })
}

/// The error for a coordinator key the principal may not DESCRIBE (key type 0: a group,
/// 1: a transactional id), with its message.
fn coordinator_denied(ctx: &Context<'_>, key_type: i8, key: &str) -> Option<Refusal> {
    let (kind, code) = match key_type {
        1 => (
            ResourceType::TransactionalId,
            e::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ),
        _ => (ResourceType::Group, e::GROUP_AUTHORIZATION_FAILED),
    };
    let allowed = ctx.allowed(Operation::Describe, kind, key);
    (!allowed).then(|| Refusal::new(code, super::authorize::denied(kind, key)))
}

pub fn find_coordinator(ctx: &Context<'_>, r: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let response = FindCoordinatorResponse::default();
    if ctx.version >= 4 {
        let asked = r.coordinator_keys.len();
        let coordinators: Vec<_> = r
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let c = find_coordinator_response::Coordinator::default();
                match coordinator_of(ctx, r.key_type, &key) {
                    Err(Refusal { code, message: why }) => c
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(why)))
                        .with_node_id(BrokerId(-1)),
                    Ok((id, host, port)) => c
                        .with_node_id(BrokerId(id))
                        .with_host(str_bytes(host))
                        .with_port(port),
                }
                .with_key(key)
            })
            .collect();
        assert_eq!(coordinators.len(), asked, "one answer per key");
        return response.with_coordinators(coordinators);
    }
    match coordinator_of(ctx, r.key_type, &r.key) {
        Err(Refusal { code, message: why }) => {
            let message = (ctx.version >= 1).then(|| str_bytes(why));
            response
                .with_error_code(code)
                .with_error_message(message)
                .with_node_id(BrokerId(-1))
        }
        Ok((id, host, port)) => response
            .with_node_id(BrokerId(id))
            .with_host(str_bytes(host))
            .with_port(port),
    }
}

/// The coordinator of a key (key type 0: a group, 1: a transactional id) as (node id,
/// host, port) at the client's listener: this node, or in cluster mode the leader of the
/// key's partition of the internal topic (COORDINATOR_NOT_AVAILABLE while the topic is
/// being created or the partition has no live leader).
fn coordinator_of(
    ctx: &Context<'_>,
    key_type: i8,
    key: &str,
) -> Result<(i32, String, i32), Refusal> {
    if let Some(denied) = coordinator_denied(ctx, key_type, key) {
        return Err(denied);
    }
    let Some(view) = ctx.shard.cluster() else {
        let (host, port) = super::cluster::broker_address(ctx);
        return Ok((node_id(ctx), host, port));
    };
    let topic = match key_type {
        1 => crate::txn::TRANSACTION_STATE_TOPIC,
        _ => crate::groups::OFFSETS_TOPIC,
    };
    let unavailable = |why: String| Refusal::new(e::COORDINATOR_NOT_AVAILABLE, why);
    let internal = routing::cluster_internal_topic(ctx.shard, &view, topic);
    let internal = internal.map_err(|e| unavailable(e.message()))?;
    let p = crate::groups::partition_for(key, internal.partitions.len());
    let leader = internal.partitions[p].state.leader;
    let live = leader.filter(|&l| view.leads(l, topic, p as u32));
    let address = live.and_then(|l| {
        let brokers = super::cluster::live_brokers(ctx);
        let leader = brokers.into_iter().find(|b| b.id == l);
        leader.map(|b| (b.id, b.host, b.port))
    });
    address.ok_or_else(|| unavailable(format!("{topic}-{p} has no live leader now")))
}

fn join_request(ctx: &Context<'_>, r: &JoinGroupRequest) -> JoinRequest {
    JoinRequest {
        member_id: text(&r.member_id),
        group_instance_id: r.group_instance_id.as_ref().map(text),
        client_id: ctx.client_id.clone(),
        client_host: ctx
            .peer
            .remote
            .map_or("/unknown".into(), |a| format!("/{}", a.ip())),
        session_timeout_ms: r.session_timeout_ms,
        // v0 has no rebalance timeout: the session timeout stands in.
        rebalance_timeout_ms: if ctx.version >= 1 {
            r.rebalance_timeout_ms
        } else {
            r.session_timeout_ms
        },
        protocol_type: text(&r.protocol_type),
        protocols: r
            .protocols
            .iter()
            .map(|p| (text(&p.name), p.metadata.clone()))
            .collect(),
        require_known_member_id: ctx.version >= 4,
    }
}

pub async fn join(ctx: &Context<'_>, r: JoinGroupRequest) -> JoinGroupResponse {
    let req = join_request(ctx, &r);
    let out = match run(ctx, &r.group_id, GroupOp::Join(req)).await {
        Ok(GroupReply::Join(j)) => j,
        Ok(GroupReply::Code(code)) | Err(code) => crate::groups::ops::JoinResponse {
            error: code,
            generation: -1,
            member_id: text(&r.member_id),
            ..Default::default()
        },
        Ok(other) => unexpected(other),
    };
    // A member that joined is told who it is and which generation it is in.
    assert!(
        out.error != crate::groups::code::NONE
            || (!out.member_id.is_empty() && out.generation >= 0)
    );
    let members = out
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            join_group_response::JoinGroupResponseMember::default()
                .with_member_id(str_bytes(id))
                .with_group_instance_id(if ctx.version >= 5 {
                    opt(instance)
                } else {
                    None
                })
                .with_metadata(metadata)
        })
        .collect();
    let response = JoinGroupResponse::default()
        .with_error_code(out.error.kafka())
        .with_generation_id(out.generation)
        .with_protocol_name(Some(str_bytes(out.protocol_name.unwrap_or_default())))
        .with_leader(str_bytes(out.leader))
        .with_member_id(str_bytes(out.member_id))
        .with_members(members);
    if ctx.version >= 7 {
        response.with_protocol_type(opt(out.protocol_type))
    } else {
        response
    }
}

/// The code of every item a reply of the wrong kind leaves unanswered.
const UNEXPECTED: GroupCode = GroupCode::Log(crate::protocol::ErrorCode::Internal);

fn unexpected<T: Default>(reply: GroupReply) -> T {
    tracing::error!(?reply, "unexpected coordinator reply");
    T::default()
}

pub async fn sync(ctx: &Context<'_>, r: SyncGroupRequest) -> SyncGroupResponse {
    let req = SyncRequest {
        member_id: text(&r.member_id),
        group_instance_id: r.group_instance_id.as_ref().map(text),
        generation: r.generation_id,
        protocol_type: r.protocol_type.as_ref().map(text),
        protocol_name: r.protocol_name.as_ref().map(text),
        assignments: r
            .assignments
            .iter()
            .map(|a| (text(&a.member_id), a.assignment.clone()))
            .collect(),
    };
    let out = match run(ctx, &r.group_id, GroupOp::Sync(req)).await {
        Ok(GroupReply::Sync(s)) => s,
        Ok(GroupReply::Code(code)) | Err(code) => crate::groups::ops::SyncResponse {
            error: code,
            ..Default::default()
        },
        Ok(other) => unexpected(other),
    };
    let response = SyncGroupResponse::default()
        .with_error_code(out.error.kafka())
        .with_assignment(out.assignment);
    if ctx.version >= 5 {
        response
            .with_protocol_type(opt(out.protocol_type))
            .with_protocol_name(opt(out.protocol_name))
    } else {
        response
    }
}

async fn code_of(ctx: &Context<'_>, group: &GroupId, op: GroupOp) -> i16 {
    match run(ctx, group, op).await {
        Ok(GroupReply::Code(code)) | Err(code) => code.kafka(),
        Ok(other) => {
            tracing::error!(?other, "unexpected coordinator reply");
            e::UNKNOWN_SERVER_ERROR
        }
    }
}

pub async fn heartbeat(ctx: &Context<'_>, r: HeartbeatRequest) -> HeartbeatResponse {
    let op = GroupOp::Heartbeat {
        member_id: text(&r.member_id),
        group_instance_id: r.group_instance_id.as_ref().map(text),
        generation: r.generation_id,
    };
    HeartbeatResponse::default().with_error_code(code_of(ctx, &r.group_id, op).await)
}

pub async fn leave(ctx: &Context<'_>, r: LeaveGroupRequest) -> LeaveGroupResponse {
    // v3+ names several members (a static one may be named by its instance id alone);
    // earlier versions one.
    let ids: Vec<(String, Option<String>)> = if ctx.version >= 3 {
        r.members
            .iter()
            .map(|m| (text(&m.member_id), m.group_instance_id.as_ref().map(text)))
            .collect()
    } else {
        vec![(text(&r.member_id), None)]
    };
    let mut members = Vec::new();
    let mut overall = e::NONE;
    for (id, m) in ids
        .iter()
        .zip(r.members.iter().map(Some).chain(std::iter::repeat(None)))
    {
        let op = GroupOp::Leave {
            members: vec![id.clone()],
        };
        let code = code_of(ctx, &r.group_id, op).await;
        if ctx.version >= 3 {
            members.push(
                leave_group_response::MemberResponse::default()
                    .with_member_id(str_bytes(id.0.clone()))
                    .with_group_instance_id(m.and_then(|m| m.group_instance_id.clone()))
                    .with_error_code(code),
            );
        } else {
            overall = code;
        }
    }
    assert!(
        ctx.version < 3 || members.len() == ids.len(),
        "one answer per member"
    );
    let response = LeaveGroupResponse::default().with_error_code(overall);
    if ctx.version >= 3 {
        response.with_members(members)
    } else {
        response
    }
}

fn offsets_to_commit(ctx: &Context<'_>, r: &OffsetCommitRequest) -> Vec<OffsetToCommit> {
    r.topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| OffsetToCommit {
                tp: TopicPartition::new(text(&t.name.0), p.partition_index),
                offset: p.committed_offset,
                leader_epoch: if ctx.version >= 6 {
                    p.committed_leader_epoch
                } else {
                    -1
                },
                metadata: p.committed_metadata.as_ref().map(text).unwrap_or_default(),
            })
        })
        .collect()
}

pub async fn offset_commit(ctx: &Context<'_>, r: OffsetCommitRequest) -> OffsetCommitResponse {
    let asked = offsets_to_commit(ctx, &r);
    let asked_count = asked.len();
    let (offsets, denied) =
        group_acls::split_by_topic(ctx, Operation::Read, asked, |o| &o.tp.topic);
    let denied: Vec<TopicPartition> = denied.into_iter().map(|o| o.tp).collect();
    let op = GroupOp::Commit {
        member_id: text(&r.member_id),
        group_instance_id: r.group_instance_id.as_ref().map(text),
        generation: r.generation_id_or_member_epoch,
        offsets,
    };
    let outcome = match (group_acls::check(ctx, &r.group_id.0, &op), &op) {
        (Ok(()), GroupOp::Commit { offsets, .. }) if offsets.is_empty() => {
            Ok(GroupReply::PartitionCodes(Vec::new()))
        }
        _ => run(ctx, &r.group_id, op).await,
    };
    let codes: Vec<(TopicPartition, GroupCode)> = match outcome {
        Ok(GroupReply::PartitionCodes(c)) => c
            .into_iter()
            .chain(group_acls::denied_codes(&denied))
            .collect(),
        refused => {
            let code = match refused {
                Ok(GroupReply::Code(code)) | Err(code) => code,
                Ok(other) => {
                    unexpected::<()>(other);
                    UNEXPECTED
                }
            };
            let every = r.topics.iter().flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    (
                        TopicPartition::new(text(&t.name.0), p.partition_index),
                        code,
                    )
                })
            });
            every.collect()
        }
    };
    assert_eq!(codes.len(), asked_count, "one code per partition committed");
    OffsetCommitResponse::default().with_topics(commit_results(&r, &codes))
}

fn commit_results(
    r: &OffsetCommitRequest,
    codes: &[(TopicPartition, GroupCode)],
) -> Vec<offset_commit_response::OffsetCommitResponseTopic> {
    r.topics
        .iter()
        .map(|t| {
            let name = text(&t.name.0);
            let partitions = codes
                .iter()
                .filter(|(tp, _)| tp.topic == name)
                .map(|(tp, code)| {
                    offset_commit_response::OffsetCommitResponsePartition::default()
                        .with_partition_index(tp.partition)
                        .with_error_code(code.kafka())
                })
                .collect();
            offset_commit_response::OffsetCommitResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect()
}

/// (topic, partition, offset, leader epoch, metadata, error) of one group's fetch.
type FetchedOffset = (String, i32, i64, i32, String, i16);

/// `require_stable` (v7+, what read_committed consumers send): UNSTABLE_OFFSET_COMMIT while
/// offsets sent inside a transaction wait for its end.
async fn fetch_group(
    ctx: &Context<'_>,
    group: &GroupId,
    partitions: Option<Vec<TopicPartition>>,
    require_stable: bool,
) -> (Vec<FetchedOffset>, i16) {
    let (partitions, denied) = match partitions {
        Some(named) => {
            let (allowed, denied) =
                group_acls::split_by_topic(ctx, Operation::Describe, named, |tp| &tp.topic);
            (Some(allowed), denied)
        }
        None => (None, Vec::new()),
    };
    let asked = partitions.clone();
    let denied_rows = denied.into_iter().map(|tp| {
        let code = group_acls::TOPIC_DENIED.kafka();
        (tp.topic, tp.partition, -1, -1, String::new(), code)
    });
    let op = GroupOp::FetchOffsets {
        partitions,
        require_stable,
    };
    match run(ctx, group, op).await {
        Ok(GroupReply::Offsets(found)) => (
            found
                .into_iter()
                // Of every committed partition, only those on topics it may describe.
                .filter(|(tp, _)| asked.is_some() || ctx.on_topic(Operation::Describe, &tp.topic))
                .map(
                    |(
                        TopicPartition {
                            topic: t,
                            partition: p,
                        },
                        c,
                    )| match c {
                        Some(c) => (t, p, c.offset, c.leader_epoch, c.metadata, e::NONE),
                        None => (t, p, -1, -1, String::new(), e::NONE),
                    },
                )
                .chain(denied_rows)
                .collect(),
            e::NONE,
        ),
        Ok(GroupReply::Code(code)) | Err(code) => {
            let code = code.kafka();
            let rows = asked
                .unwrap_or_default()
                .into_iter()
                .map(|tp| (tp.topic, tp.partition, -1, -1, String::new(), code))
                .collect();
            (rows, code)
        }
        Ok(other) => {
            tracing::error!(?other, "unexpected coordinator reply");
            (Vec::new(), e::UNKNOWN_SERVER_ERROR)
        }
    }
}

/// Groups `(topic, ...)` rows by topic, keeping first-seen order.
fn by_topic<T>(
    rows: Vec<FetchedOffset>,
    make: impl Fn(&FetchedOffset) -> T,
) -> Vec<(String, Vec<T>)> {
    let mut out: Vec<(String, Vec<T>)> = Vec::new();
    for row in &rows {
        match out.iter_mut().find(|(t, _)| *t == row.0) {
            Some((_, v)) => v.push(make(row)),
            None => out.push((row.0.clone(), vec![make(row)])),
        }
    }
    out
}

pub async fn offset_fetch(ctx: &Context<'_>, r: OffsetFetchRequest) -> OffsetFetchResponse {
    if ctx.version >= 8 {
        let mut groups = Vec::new();
        for g in &r.groups {
            groups.push(offset_fetch_group(ctx, g, r.require_stable).await);
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let stable = ctx.version >= 7 && r.require_stable;
    let (rows, code) = fetch_group(ctx, &r.group_id, named_partitions(&r.topics), stable).await;
    let version = ctx.version;
    let topics = by_topic(rows, |row| {
        let p = offset_fetch_response::OffsetFetchResponsePartition::default()
            .with_partition_index(row.1)
            .with_committed_offset(row.2)
            .with_metadata(Some(str_bytes(row.4.clone())))
            .with_error_code(row.5);
        if version >= 5 {
            p.with_committed_leader_epoch(row.3)
        } else {
            p
        }
    })
    .into_iter()
    .map(|(t, ps)| {
        offset_fetch_response::OffsetFetchResponseTopic::default()
            .with_name(super::topic_name(t))
            .with_partitions(ps)
    })
    .collect();
    let response = OffsetFetchResponse::default().with_topics(topics);
    if version >= 2 {
        response.with_error_code(code)
    } else {
        response
    }
}

/// The (topic, partition) pairs a request names; `None` asks for all.
fn named_partitions<'a, T: 'a>(topics: &'a Option<Vec<T>>) -> Option<Vec<TopicPartition>>
where
    &'a T: NamedPartitions<'a>,
{
    topics.as_ref().map(|ts| {
        ts.iter()
            .flat_map(|t| {
                let name = t.topic();
                let partitions = t.partitions().iter();
                partitions.map(move |p| TopicPartition::new(name.clone(), *p))
            })
            .collect()
    })
}

/// A request topic with partition indexes (OffsetFetch v0-7 and v8+ spell it apart).
trait NamedPartitions<'a> {
    fn topic(self) -> String;
    fn partitions(self) -> &'a [i32];
}

impl<'a> NamedPartitions<'a> for &'a offset_fetch_request::OffsetFetchRequestTopic {
    fn topic(self) -> String {
        text(&self.name.0)
    }
    fn partitions(self) -> &'a [i32] {
        &self.partition_indexes
    }
}

impl<'a> NamedPartitions<'a> for &'a offset_fetch_request::OffsetFetchRequestTopics {
    fn topic(self) -> String {
        text(&self.name.0)
    }
    fn partitions(self) -> &'a [i32] {
        &self.partition_indexes
    }
}

/// One group of an OffsetFetch v8+.
async fn offset_fetch_group(
    ctx: &Context<'_>,
    g: &offset_fetch_request::OffsetFetchRequestGroup,
    require_stable: bool,
) -> offset_fetch_response::OffsetFetchResponseGroup {
    let named = named_partitions(&g.topics);
    let (rows, code) = fetch_group(ctx, &g.group_id, named, require_stable).await;
    let topics = by_topic(rows, |row| {
        offset_fetch_response::OffsetFetchResponsePartitions::default()
            .with_partition_index(row.1)
            .with_committed_offset(row.2)
            .with_committed_leader_epoch(row.3)
            .with_metadata(Some(str_bytes(row.4.clone())))
            .with_error_code(row.5)
    })
    .into_iter()
    .map(|(t, ps)| {
        offset_fetch_response::OffsetFetchResponseTopics::default()
            .with_name(super::topic_name(t))
            .with_partitions(ps)
    })
    .collect();
    offset_fetch_response::OffsetFetchResponseGroup::default()
        .with_group_id(g.group_id.clone())
        .with_topics(topics)
        .with_error_code(code)
}

pub async fn list_groups(ctx: &Context<'_>, r: ListGroupsRequest) -> ListGroupsResponse {
    let groups = match routing::list_groups(ctx.shard).await {
        Ok(g) => g,
        Err(why) => {
            let code = match why.code() {
                crate::protocol::ErrorCode::NotReady => e::COORDINATOR_LOAD_IN_PROGRESS,
                other => kafka_code(other, true),
            };
            return ListGroupsResponse::default().with_error_code(code);
        }
    };
    let states: Vec<String> = r.states_filter.iter().map(text).collect();
    // v5's type filter: every group here is a classic-protocol group.
    let classic_wanted = r.types_filter.is_empty()
        || r.types_filter
            .iter()
            .any(|t| t.eq_ignore_ascii_case(GROUP_TYPE));
    let every_group = ctx.on_cluster(Operation::Describe);
    let listed = groups
        .into_iter()
        .filter(|_| classic_wanted)
        .filter(|(name, _, _)| every_group || ctx.on_group(Operation::Describe, name))
        .filter(|(_, _, state)| {
            states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state))
        })
        .map(|(name, protocol_type, state)| {
            let g = list_groups_response::ListedGroup::default()
                .with_group_id(GroupId(str_bytes(name)))
                .with_protocol_type(str_bytes(protocol_type));
            let g = if ctx.version >= 4 {
                g.with_group_state(str_bytes(state))
            } else {
                g
            };
            if ctx.version >= 5 {
                g.with_group_type(StrBytes::from_static_str(GROUP_TYPE))
            } else {
                g
            }
        })
        .collect();
    ListGroupsResponse::default().with_groups(listed)
}

pub async fn describe_groups(
    ctx: &Context<'_>,
    r: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let asked = r.groups.len();
    let mut groups = Vec::new();
    for id in r.groups {
        // Asked for (v3+): what the principal may do to the group.
        let operations = match r.include_authorized_operations {
            true => ctx.authorized_operations(ResourceType::Group, &id.0, operations::GROUP),
            false => super::cluster::OPERATIONS_NOT_ASKED,
        };
        let d = describe_groups_response::DescribedGroup::default().with_group_id(id.clone());
        groups.push(match run(ctx, &id, GroupOp::Describe).await {
            Ok(GroupReply::Described(g)) => {
                let members = g
                    .members
                    .into_iter()
                    .map(|m| {
                        describe_groups_response::DescribedGroupMember::default()
                            .with_member_id(str_bytes(m.member_id))
                            .with_group_instance_id(if ctx.version >= 4 {
                                opt(m.group_instance_id)
                            } else {
                                None
                            })
                            .with_client_id(str_bytes(m.client_id))
                            .with_client_host(str_bytes(m.client_host))
                            .with_member_metadata(m.metadata)
                            .with_member_assignment(m.assignment)
                    })
                    .collect();
                d.with_group_state(str_bytes(g.state))
                    .with_protocol_type(str_bytes(g.protocol_type))
                    .with_protocol_data(str_bytes(g.protocol))
                    .with_members(members)
                    .with_authorized_operations(operations)
            }
            Ok(GroupReply::Code(code)) | Err(code) => d.with_error_code(code.kafka()),
            Ok(other) => unexpected(other),
        });
    }
    assert_eq!(groups.len(), asked, "one description per group");
    DescribeGroupsResponse::default().with_groups(groups)
}

pub async fn delete_groups(ctx: &Context<'_>, r: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let asked = r.groups_names.len();
    let mut results = Vec::new();
    for id in r.groups_names {
        let code = code_of(ctx, &id, GroupOp::Delete).await;
        results.push(
            delete_groups_response::DeletableGroupResult::default()
                .with_group_id(id)
                .with_error_code(code),
        );
    }
    assert_eq!(results.len(), asked, "one result per group");
    DeleteGroupsResponse::default().with_results(results)
}

pub async fn offset_delete(ctx: &Context<'_>, r: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let partitions: Vec<TopicPartition> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| TopicPartition::new(text(&t.name.0), p.partition_index))
        })
        .collect();
    let asked = partitions.len();
    let (partitions, denied) =
        group_acls::split_by_topic(ctx, Operation::Read, partitions, |tp| &tp.topic);
    let codes = match run(ctx, &r.group_id, GroupOp::DeleteOffsets { partitions }).await {
        Ok(GroupReply::PartitionCodes(c)) => c
            .into_iter()
            .chain(group_acls::denied_codes(&denied))
            .collect::<Vec<_>>(),
        Ok(GroupReply::Code(code)) | Err(code) => {
            return OffsetDeleteResponse::default().with_error_code(code.kafka())
        }
        Ok(other) => {
            unexpected::<()>(other);
            return OffsetDeleteResponse::default().with_error_code(UNEXPECTED.kafka());
        }
    };
    assert_eq!(codes.len(), asked, "one code per partition");
    if codes.iter().all(|c| c.1 == GroupCode::GroupIdNotFound) && !codes.is_empty() {
        return OffsetDeleteResponse::default().with_error_code(e::GROUP_ID_NOT_FOUND);
    }
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let name = text(&t.name.0);
            offset_delete_response::OffsetDeleteResponseTopic::default()
                .with_name(t.name.clone())
                .with_partitions(
                    codes
                        .iter()
                        .filter(|(tp, _)| tp.topic == name)
                        .map(|(tp, code)| {
                            offset_delete_response::OffsetDeleteResponsePartition::default()
                                .with_partition_index(tp.partition)
                                .with_error_code(code.kafka())
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetDeleteResponse::default().with_topics(topics)
}

/// The group APIs (the codec lets through only these keys here).
pub async fn dispatch(ctx: &Context<'_>, request: RequestKind) -> ResponseKind {
    match request {
        RequestKind::FindCoordinator(r) => ResponseKind::FindCoordinator(find_coordinator(ctx, r)),
        RequestKind::JoinGroup(r) => ResponseKind::JoinGroup(join(ctx, r).await),
        RequestKind::SyncGroup(r) => ResponseKind::SyncGroup(sync(ctx, r).await),
        RequestKind::Heartbeat(r) => ResponseKind::Heartbeat(heartbeat(ctx, r).await),
        RequestKind::LeaveGroup(r) => ResponseKind::LeaveGroup(leave(ctx, r).await),
        RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(offset_commit(ctx, r).await),
        RequestKind::OffsetFetch(r) => ResponseKind::OffsetFetch(offset_fetch(ctx, r).await),
        RequestKind::ListGroups(r) => ResponseKind::ListGroups(list_groups(ctx, r).await),
        RequestKind::DescribeGroups(r) => {
            ResponseKind::DescribeGroups(describe_groups(ctx, r).await)
        }
        RequestKind::DeleteGroups(r) => ResponseKind::DeleteGroups(delete_groups(ctx, r).await),
        RequestKind::OffsetDelete(r) => ResponseKind::OffsetDelete(offset_delete(ctx, r).await),
        other => unreachable!("{other:?} is not a group API"),
    }
}
