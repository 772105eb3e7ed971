//! What the consumer-group APIs need of the ACLs (Kafka's KafkaApis): READ on the group
//! to be a member or commit, DESCRIBE to read its offsets or describe it, DELETE to delete
//! it or its offsets; and per topic READ to commit or delete offsets, DESCRIBE to see them.

use super::Context;
use crate::groups::code::GroupCode;
use crate::groups::ops::GroupOp;
use crate::protocol::ErrorCode;
use crate::security::acl::Operation;
use crate::TopicPartition;

/// The group operation a coordinator request needs.
pub fn needed(op: &GroupOp) -> Operation {
    match op {
        GroupOp::FetchOffsets { .. } | GroupOp::Describe => Operation::Describe,
        GroupOp::Delete | GroupOp::DeleteOffsets { .. } => Operation::Delete,
        _ => Operation::Read,
    }
}

/// GROUP_AUTHORIZATION_FAILED (30), when the principal may not run `op` on `group`.
pub fn check(ctx: &Context<'_>, group: &str, op: &GroupOp) -> Result<(), GroupCode> {
    match ctx.on_group(needed(op), group) {
        true => Ok(()),
        false => Err(GroupCode::Log(ErrorCode::GroupAuthorizationFailed)),
    }
}

/// TOPIC_AUTHORIZATION_FAILED (29) for a partition of a topic the principal may not `op`.
pub const TOPIC_DENIED: GroupCode = GroupCode::Log(ErrorCode::TopicAuthorizationFailed);

/// Splits `items` into those on topics the principal may `op` and those it may not.
pub fn split_by_topic<T>(
    ctx: &Context<'_>,
    op: Operation,
    items: Vec<T>,
    topic: impl Fn(&T) -> &str,
) -> (Vec<T>, Vec<T>) {
    items
        .into_iter()
        .partition(|item| ctx.on_topic(op, topic(item)))
}

/// The partitions of `denied` answered TOPIC_AUTHORIZATION_FAILED.
pub fn denied_codes(denied: &[TopicPartition]) -> Vec<(TopicPartition, GroupCode)> {
    denied.iter().map(|tp| (tp.clone(), TOPIC_DENIED)).collect()
}
