//! Requests for a coordinator reach the shard that owns its key's partition of the internal
//! topic over the mesh: a group's offsets partition, a transactional id's state partition
//! (Kafka's rule: `abs(java hashCode(key)) % partitions`). Listing asks every shard. The
//! internal topics are created (compacted) on first use, as Kafka does.

use std::rc::Rc;

use super::messages::{OpOk, ShardOp};
use super::Shard;
use crate::broker_error::BrokerError;
use crate::catalog::topics::TopicMeta;
use crate::groups::coordinator;
use crate::groups::ops::{GroupOp, GroupReply, ListedGroup};
use crate::groups::OFFSETS_TOPIC;
use crate::protocol::ErrorCode;
use crate::txn::meta::TxnMeta;
use crate::txn::ops::{TxnOp, TxnReply};
use crate::txn::TRANSACTION_STATE_TOPIC;

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
pub async fn route_group(
    shard: &Rc<Shard>,
    group: String,
    op: GroupOp,
) -> Result<GroupReply, BrokerError> {
    let meta = internal_topic(shard, OFFSETS_TOPIC).await?;
    let owner = meta.owners[crate::groups::partition_for(&group, meta.owners.len())] as usize;
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
pub async fn list_groups(shard: &Rc<Shard>) -> Result<Vec<ListedGroup>, BrokerError> {
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

/// Runs a transaction operation on the id's coordinator shard.
pub async fn route_txn(shard: &Rc<Shard>, id: String, op: TxnOp) -> Result<TxnReply, BrokerError> {
    let meta = internal_topic(shard, TRANSACTION_STATE_TOPIC).await?;
    let owner = meta.owners[crate::txn::partition_for(&id, meta.owners.len())] as usize;
    assert!(owner < shard.n, "a coordinator among this run's shards");
    if owner == shard.id {
        return Ok(crate::txn::ops::handle(&Shard::txn_host(shard), id, op).await);
    }
    match shard.remote(owner, ShardOp::Txn { id, op }).await? {
        OpOk::Txn(reply) => Ok(reply),
        other => Err(BrokerError::new(
            ErrorCode::Internal,
            format!("unexpected transaction reply {other:?}"),
        )),
    }
}

/// Every transactional id of every shard that has loaded state (ids of never-loaded
/// partitions have had no request since the start).
pub async fn list_txns(shard: &Rc<Shard>) -> Result<Vec<(String, TxnMeta)>, BrokerError> {
    let mut all = Vec::new();
    for peer in 0..shard.n {
        let reply = if peer == shard.id {
            crate::txn::ops::handle(&Shard::txn_host(shard), String::new(), TxnOp::List).await
        } else {
            match shard
                .remote(
                    peer,
                    ShardOp::Txn {
                        id: String::new(),
                        op: TxnOp::List,
                    },
                )
                .await?
            {
                OpOk::Txn(reply) => reply,
                other => {
                    return Err(BrokerError::new(
                        ErrorCode::Internal,
                        format!("unexpected reply {other:?}"),
                    ))
                }
            }
        };
        if let TxnReply::Listed(ids) = reply {
            all.extend(ids);
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(all)
}
