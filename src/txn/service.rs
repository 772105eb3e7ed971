//! The transaction coordinator as a service its shard runs (`crate::service`): the calls
//! other shards send to the coordinator of a transactional id.

use super::host::TxnHostRc;
use super::ops::{TxnOp, TxnReply};
use crate::service::Service;

/// The transaction coordinator of one shard.
pub struct TxnCoordinator;

/// An operation of transactional id `id` (empty for `TxnOp::List`).
#[derive(Debug, Clone)]
pub struct TxnCall {
    pub id: String,
    pub op: TxnOp,
}

impl Service for TxnCoordinator {
    const NAME: &'static str = "transaction coordinator";
    type Host = TxnHostRc;
    type Op = TxnCall;
    type Reply = TxnReply;

    async fn handle(host: TxnHostRc, call: TxnCall) -> TxnReply {
        super::ops::handle(&host, call.id, call.op).await
    }
}
