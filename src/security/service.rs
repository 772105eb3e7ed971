//! Security changes as services a shard runs (`crate::service`): a change of credentials or
//! ACLs on the controller, and the installing of the state it made durable on every shard.

use std::future::Future;
use std::rc::Rc;

use super::changes::{SecurityHost, SecurityOutcome};
use super::state::{SecurityChange, SecurityState};
use crate::broker_error::BrokerError;
use crate::service::Service;

/// Changes the SCRAM credentials or the ACLs (on the controller: durable, then installed
/// everywhere).
pub struct SecurityChanges;

impl Service for SecurityChanges {
    const NAME: &'static str = "security changes";
    type Host = Rc<dyn SecurityHost>;
    type Op = SecurityChange;
    type Reply = Result<SecurityOutcome, BrokerError>;

    async fn handle(host: Self::Host, change: SecurityChange) -> Self::Reply {
        super::changes::apply(&*host, change).await
    }
}

/// Credentials or ACLs the controller made durable: this shard's copy from now on.
pub struct SecurityInstall;

impl Service for SecurityInstall {
    const NAME: &'static str = "security install";
    type Host = ();
    type Op = SecurityState;
    type Reply = ();

    fn handle(_: (), state: SecurityState) -> impl Future<Output = ()> {
        super::state::install(state);
        std::future::ready(())
    }
}
