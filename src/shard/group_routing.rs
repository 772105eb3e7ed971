//! Group requests reach the coordinator shard of their group (the owner of the group's
//! offsets partition) over the mesh; listing asks every shard's coordinator.

use std::rc::Rc;

use super::messages::{OpOk, ShardOp};
use super::Shard;
use crate::broker_error::BrokerError;
use crate::catalog::topics::TopicMeta;
use crate::groups::ops::{GroupOp, GroupReply, ListedGroup};
use crate::groups::{coordinator, partition_for, OFFSETS_TOPIC};
use crate::protocol::ErrorCode;

/// An internal topic (the offsets or the transaction state topic), created (compacted)
/// on first use as Kafka does.
pub async fn internal_topic(shard: &Rc<Shard>, name: &str) -> Result<TopicMeta, BrokerError> {
    if let Some(meta) = shard.topic(name) {
        return Ok(meta);
    }
    match shard.create_internal_topic(name.into()).await {
        Ok(_) => {}
        Err(BrokerError {
            code: ErrorCode::TopicAlreadyExists,
            ..
        }) => {}
        Err(e) => return Err(e),
    }
    shard.topic(name).ok_or(BrokerError::new(
        ErrorCode::NotReady,
        format!("{name} is being created"),
    ))
}

/// Runs a group operation on the group's coordinator shard.
pub async fn route(
    shard: &Rc<Shard>,
    group: String,
    op: GroupOp,
) -> Result<GroupReply, BrokerError> {
    let meta = internal_topic(shard, OFFSETS_TOPIC).await?;
    let owner = meta.owners[partition_for(&group, meta.owners.len())] as usize;
    assert!(owner < shard.n, "a coordinator among this run's shards");
    if owner == shard.id {
        return Ok(crate::groups::requests::handle(&Shard::group_host(shard), group, op).await);
    }
    match shard.remote(owner, ShardOp::Group { group, op }).await? {
        OpOk::Group(reply) => Ok(reply),
        other => Err(BrokerError::new(
            ErrorCode::Internal,
            format!("unexpected group reply {other:?}"),
        )),
    }
}

/// Every group of every shard.
pub async fn list_all(shard: &Rc<Shard>) -> Result<Vec<ListedGroup>, BrokerError> {
    let loading = |code: crate::groups::code::GroupCode| {
        let msg = "a coordinator is still loading its offsets partitions; retry shortly";
        BrokerError::new(code.native(), msg)
    };
    let mut all = coordinator::list(&Shard::group_host(shard))
        .await
        .map_err(loading)?;
    for peer in (0..shard.n).filter(|&p| p != shard.id) {
        match shard.remote(peer, ShardOp::ListGroups).await? {
            OpOk::Group(GroupReply::Listed(groups)) => all.extend(groups),
            OpOk::Group(GroupReply::Code(code)) => return Err(loading(code)),
            other => {
                return Err(BrokerError::new(
                    ErrorCode::Internal,
                    format!("unexpected reply {other:?}"),
                ))
            }
        }
    }
    all.sort();
    Ok(all)
}
