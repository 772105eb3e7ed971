//! The controller shard's services (`crate::service`): topic and config changes, and
//! producer ids. Both run on the controller only, one at a time, so their state (the
//! catalog's files or etcd's keys, the producer id block) has a single writer per node.

use std::rc::Rc;

use super::admin_host::{AdminHost, AdminRequest, AdminResult};
use super::producer_ids::BlockClaims;
use crate::broker_error::BrokerError;
use crate::service::Service;

/// A client's topic or config change, run on the controller.
pub struct TopicAdmin;

impl Service for TopicAdmin {
    const NAME: &'static str = "topic admin";
    type Host = Rc<dyn AdminHost>;
    type Op = AdminRequest;
    type Reply = AdminResult<()>;

    async fn handle(host: Self::Host, request: AdminRequest) -> Self::Reply {
        super::admin::handle(&*host, request).await
    }
}

/// Hands out producer ids never handed out before, from the controller's durable blocks.
pub struct ProducerIds;

/// The one request of `ProducerIds`: the next id.
#[derive(Debug, Clone, Copy)]
pub struct NextProducerId;

impl Service for ProducerIds {
    const NAME: &'static str = "producer ids";
    type Host = Rc<dyn BlockClaims>;
    type Op = NextProducerId;
    type Reply = Result<i64, BrokerError>;

    async fn handle(host: Self::Host, _: NextProducerId) -> Self::Reply {
        super::producer_ids::allocate(|next| host.claim_block(next)).await
    }
}
