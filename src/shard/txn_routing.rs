//! Transaction requests reach the coordinator shard of their transactional id (the owner
//! of its `__transaction_state` partition) over the mesh; listing asks every shard.

use std::rc::Rc;

use super::group_routing::internal_topic;
use super::messages::{OpOk, ShardOp};
use super::Shard;
use crate::broker_error::BrokerError;
use crate::protocol::ErrorCode;
use crate::txn::meta::TxnMeta;
use crate::txn::ops::{handle, TxnOp, TxnReply};
use crate::txn::{partition_for, TRANSACTION_STATE_TOPIC};

/// Runs a transaction operation on the id's coordinator shard.
pub async fn route(shard: &Rc<Shard>, id: String, op: TxnOp) -> Result<TxnReply, BrokerError> {
    let meta = internal_topic(shard, TRANSACTION_STATE_TOPIC).await?;
    let owner = meta.owners[partition_for(&id, meta.owners.len())] as usize;
    assert!(owner < shard.n, "a coordinator among this run's shards");
    if owner == shard.id {
        return Ok(handle(&Shard::txn_host(shard), id, op).await);
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
pub async fn list_all(shard: &Rc<Shard>) -> Result<Vec<(String, TxnMeta)>, BrokerError> {
    let mut all = Vec::new();
    for peer in 0..shard.n {
        let reply = if peer == shard.id {
            handle(&Shard::txn_host(shard), String::new(), TxnOp::List).await
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
