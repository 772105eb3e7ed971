//! The native protocol's consumer-group requests (PROTOCOL.md, keys 14-18 and 24), run by the
//! group's coordinator shard like the Kafka listener's, with native error codes.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::groups::code::GroupCode;
use crate::groups::ops::{GroupOp, GroupReply, OffsetToCommit};
use crate::protocol::groups::GroupInfo;
use crate::protocol::{ErrorCode, Request, ResponseBody};
use crate::shard::coordinator_routing::{list_groups, route_group};

use crate::shard::runtime::Shard;

type Answer = Result<ResponseBody, BrokerError>;

fn unexpected(what: &str, reply: GroupReply) -> BrokerError {
    BrokerError::new(
        ErrorCode::Internal,
        format!("{what}: unexpected reply {reply:?}"),
    )
}

fn group_id(group: &str) -> Result<String, BrokerError> {
    if group.is_empty() || group.len() > 255 {
        return Err(BrokerError::new(
            ErrorCode::InvalidRequest,
            "a group id is 1 to 255 bytes",
        ));
    }
    Ok(group.to_string())
}

/// Runs a native group request; `None` if `request` is not one.
pub async fn dispatch(shard: &Rc<Shard>, request: Request) -> Option<Answer> {
    Some(match request {
        Request::OffsetCommit { group, offsets } => commit(shard, group, offsets).await,
        Request::OffsetFetch { group, topics } => fetch(shard, group, topics).await,
        Request::ListGroups => list_groups(shard).await.map(ResponseBody::ListGroups),
        Request::DescribeGroup { group } => describe(shard, group).await,
        Request::DeleteGroup { group } => delete(shard, group).await,
        Request::OffsetDelete { group, partitions } => {
            delete_offsets(shard, group, partitions).await
        }
        _ => return None,
    })
}

async fn commit(
    shard: &Rc<Shard>,
    group: String,
    offsets: Vec<crate::protocol::groups::OffsetCommitEntry>,
) -> Answer {
    let asked = offsets.len();
    let op = GroupOp::Commit {
        group_instance_id: None,
        member_id: String::new(),
        generation: -1,
        offsets: offsets
            .into_iter()
            .map(|(t, p, offset, metadata)| OffsetToCommit {
                tp: crate::TopicPartition::new(t, p),
                offset,
                leader_epoch: -1,
                metadata,
            })
            .collect(),
    };
    match route_group(shard, group_id(&group)?, op).await? {
        GroupReply::PartitionCodes(codes) => {
            assert_eq!(codes.len(), asked, "one code per offset committed");
            Ok(ResponseBody::OffsetCommit(
                codes
                    .into_iter()
                    .map(|(tp, c)| (tp.topic, tp.partition, c.native()))
                    .collect(),
            ))
        }
        GroupReply::Code(c) => Err(BrokerError::new(
            c.native(),
            format!("committing for group {group:?}"),
        )),
        other => Err(unexpected("OffsetCommit", other)),
    }
}

async fn fetch(shard: &Rc<Shard>, group: String, topics: Option<Vec<String>>) -> Answer {
    let op = GroupOp::FetchOffsets {
        partitions: None,
        require_stable: false,
    };
    match route_group(shard, group_id(&group)?, op).await? {
        GroupReply::Offsets(found) => Ok(ResponseBody::OffsetFetch(
            found
                .into_iter()
                .filter(|(tp, _)| topics.as_ref().is_none_or(|ts| ts.contains(&tp.topic)))
                .filter_map(|(tp, c)| c.map(|c| (tp.topic, tp.partition, c.offset, c.metadata)))
                .collect(),
        )),
        GroupReply::Code(c) => Err(BrokerError::new(
            c.native(),
            format!("offsets of group {group:?}"),
        )),
        other => Err(unexpected("OffsetFetch", other)),
    }
}

async fn describe(shard: &Rc<Shard>, group: String) -> Answer {
    match route_group(shard, group_id(&group)?, GroupOp::Describe).await? {
        GroupReply::Described(g) => Ok(ResponseBody::DescribeGroup(GroupInfo {
            state: g.state,
            protocol_type: g.protocol_type,
            protocol: g.protocol,
            members: g
                .members
                .into_iter()
                .map(|m| (m.member_id, m.client_id, m.client_host, m.assignment))
                .collect(),
        })),
        GroupReply::Code(c) => Err(BrokerError::new(
            c.native(),
            format!("describing group {group:?}"),
        )),
        other => Err(unexpected("DescribeGroup", other)),
    }
}

async fn delete(shard: &Rc<Shard>, group: String) -> Answer {
    match route_group(shard, group_id(&group)?, GroupOp::Delete).await? {
        GroupReply::Code(GroupCode::None) => Ok(ResponseBody::Empty),
        GroupReply::Code(c) => Err(BrokerError::new(
            c.native(),
            match c.native() {
                ErrorCode::GroupNotEmpty => format!("group {group:?} has active members"),
                ErrorCode::GroupNotFound => format!("no group {group:?}"),
                _ => format!("deleting group {group:?}"),
            },
        )),
        other => Err(unexpected("DeleteGroup", other)),
    }
}

/// Kafka's OffsetDelete: per partition GroupNotEmpty while members subscribe to its topic.
async fn delete_offsets(
    shard: &Rc<Shard>,
    group: String,
    partitions: Vec<(String, i32)>,
) -> Answer {
    let op = GroupOp::DeleteOffsets {
        partitions: partitions
            .iter()
            .map(|(t, p)| crate::TopicPartition::new(t, *p))
            .collect(),
    };
    let codes = match route_group(shard, group_id(&group)?, op).await? {
        GroupReply::PartitionCodes(codes) => codes,
        GroupReply::Code(c) => {
            return Err(BrokerError::new(
                c.native(),
                format!("deleting offsets of group {group:?}"),
            ))
        }
        other => return Err(unexpected("OffsetDelete", other)),
    };
    assert_eq!(
        codes.len(),
        partitions.len(),
        "one code per partition asked"
    );
    if !codes.is_empty() && codes.iter().all(|c| c.1 == GroupCode::GroupIdNotFound) {
        return Err(BrokerError::new(
            ErrorCode::GroupNotFound,
            format!("no group {group:?}"),
        ));
    }
    Ok(ResponseBody::OffsetCommit(
        codes
            .into_iter()
            .map(|(tp, c)| (tp.topic, tp.partition, c.native()))
            .collect(),
    ))
}
