//! The services a shard runs for itself and its peers (`crate::service`), each registered
//! once with the host it is given (the server hands `registered()` to every new shard), and the one way to call a service on a shard: run here when this
//! shard owns the call, sent over the mesh otherwise. The shard names its services only
//! here; `ShardOp` and the dispatch carry their calls without knowing them.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::service::{ProducerIds, TopicAdmin};
use crate::groups::service::GroupCoordinator;
use crate::partition_ops::OpOk;
use crate::protocol::ErrorCode;
use crate::security::service::{SecurityChanges, SecurityInstall};
use crate::service::{Call, Registry, Reply, Service};
use crate::shard::hosts::ShardHost;
use crate::shard::messages::ShardOp;
use crate::shard::runtime::Shard;
use crate::txn::service::TxnCoordinator;

/// The services every shard runs, each with the host it reaches the shard through.
pub(crate) fn registered() -> Registry<Rc<Shard>> {
    let mut services = Registry::default();
    services.register::<GroupCoordinator>(Shard::group_host);
    services.register::<TxnCoordinator>(Shard::txn_host);
    services.register::<TopicAdmin>(|shard| Rc::new(ShardHost(shard.clone())));
    services.register::<ProducerIds>(|shard| Rc::new(ShardHost(shard.clone())));
    services.register::<SecurityChanges>(|shard| Rc::new(ShardHost(shard.clone())));
    services.register::<SecurityInstall>(|_| ());
    assert_eq!(services.len(), 6, "every service registered once");
    services
}

impl Shard {
    /// Runs `op` of service `S` on shard `owner`: here, or sent there over the mesh.
    pub async fn call<S: Service>(
        self: &Rc<Self>,
        owner: usize,
        op: S::Op,
    ) -> Result<S::Reply, BrokerError> {
        assert!(owner < self.n, "shard {owner} of {}", self.n);
        let call = Call::new::<S>(op);
        let reply = if owner == self.id {
            self.run_service(call).await?
        } else {
            match self.remote(owner, ShardOp::Service(call)).await? {
                OpOk::Service(reply) => reply,
                other => return Err(super::super::by_owner::unexpected(other)),
            }
        };
        reply.take::<S>().map_err(|other| {
            let why = format!("{} was answered by {other:?}", S::NAME);
            BrokerError::new(ErrorCode::Internal, why)
        })
    }

    /// Runs a call that reached this shard on the service it names.
    pub(in crate::shard) async fn run_service(
        self: &Rc<Self>,
        call: Call,
    ) -> Result<Reply, BrokerError> {
        let service = call.service();
        let work = self.services.run(self, call).map_err(|unknown| {
            tracing::error!(service, "a call for a service this shard does not run");
            BrokerError::new(ErrorCode::Internal, unknown.to_string())
        })?;
        Ok(work.await)
    }
}
