//! The group coordinator as a service its shard runs (`crate::service`): the calls other
//! shards send to the coordinator of a group or of an offsets partition.

use super::host::Host;
use super::ops::{GroupOp, GroupReply};
use super::{loading, requests};
use crate::service::Service;

/// The consumer-group coordinator of one shard.
pub struct GroupCoordinator;

#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GroupCall {
    /// A client's request for `group`, on the shard owning its offsets partition.
    Request { group: String, op: GroupOp },
    /// The groups this shard coordinates.
    List,
    /// A transaction ended on offsets partition `partition`: the offsets producer
    /// `producer_id` sent inside it count now (commit) or never.
    CompleteTxnOffsets {
        partition: i32,
        producer_id: i64,
        commit: bool,
    },
}

impl Service for GroupCoordinator {
    const NAME: &'static str = "group coordinator";
    type Host = Host;
    type Op = GroupCall;
    type Reply = GroupReply;

    async fn handle(host: Host, call: GroupCall) -> GroupReply {
        match call {
            GroupCall::Request { group, op } => requests::handle(&host, group, op).await,
            GroupCall::List => match loading::list(&host).await {
                Ok(groups) => GroupReply::Listed(groups),
                Err(code) => GroupReply::Code(code),
            },
            GroupCall::CompleteTxnOffsets {
                partition,
                producer_id,
                commit,
            } => {
                let done = loading::complete_txn(&host, partition, producer_id, commit);
                GroupReply::Code(done.await)
            }
        }
    }
}
