//! The ACL checks a request handler makes, as Kafka's KafkaApis makes them: one per
//! resource the request touches (PROTOCOL.md has the table). With the authorizer off
//! every check passes at once.

use super::errors::TOPIC_AUTHORIZATION_FAILED;
use super::refusal::Refusal;
use super::Context;
use crate::security::acl::{Operation, ResourceType, CLUSTER_NAME};

/// The message of an authorization error (Kafka's text, so clients' logs read the same).
pub fn denied(kind: ResourceType, name: &str) -> String {
    match kind {
        ResourceType::Topic => format!("Not authorized to access topics: [{name}]"),
        ResourceType::Group => format!("Not authorized to access group: {name}"),
        ResourceType::TransactionalId => format!("Not authorized on transactional id: {name}"),
        _ => "Cluster authorization failed.".to_string(),
    }
}

impl Context<'_> {
    /// Whether this request's principal may do `op` on the named resource.
    pub fn allowed(&self, op: Operation, kind: ResourceType, name: &str) -> bool {
        let authorizer = &self.shard.config().authorizer;
        let allowed = authorizer.authorize(&self.peer.who(), op, kind, name);
        if !allowed {
            tracing::debug!(principal = %self.peer.principal, host = %self.peer.host, %op, %kind, name, "denied");
        }
        allowed
    }

    pub fn on_topic(&self, op: Operation, topic: &str) -> bool {
        self.allowed(op, ResourceType::Topic, topic)
    }

    /// TOPIC_AUTHORIZATION_FAILED and Kafka's message, when the principal may not `op`
    /// the topic.
    pub fn topic_refusal(&self, op: Operation, topic: &str) -> Option<Refusal> {
        let denied = || {
            Refusal::new(
                TOPIC_AUTHORIZATION_FAILED,
                denied(ResourceType::Topic, topic),
            )
        };
        (!self.on_topic(op, topic)).then(denied)
    }

    pub fn on_group(&self, op: Operation, group: &str) -> bool {
        self.allowed(op, ResourceType::Group, group)
    }

    pub fn on_cluster(&self, op: Operation) -> bool {
        self.allowed(op, ResourceType::Cluster, CLUSTER_NAME)
    }

    pub fn on_transactional_id(&self, op: Operation, id: &str) -> bool {
        self.allowed(op, ResourceType::TransactionalId, id)
    }

    /// Of the operations in `all` (bit n = operation code n), those this principal may do
    /// on the named resource (KIP-430's authorized operations).
    pub fn authorized_operations(&self, kind: ResourceType, name: &str, all: i32) -> i32 {
        let allowed = |op: &Operation| all & (1 << op.code()) != 0 && self.allowed(*op, kind, name);
        Operation::ALL_VALUES
            .iter()
            .copied()
            .filter(allowed)
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    /// KIP-679: whether `op` is allowed on at least one resource of `kind`.
    pub fn on_any(&self, op: Operation, kind: ResourceType) -> bool {
        self.shard
            .config()
            .authorizer
            .authorize_any(&self.peer.who(), op, kind)
    }

    /// The administrative gate (user credentials, transaction administration): with the
    /// authorizer on, the ACLs decide (`op` on the cluster); off, only loopback clients
    /// unless `allow.remote.admin`.
    pub fn admin_allowed(&self, op: Operation) -> bool {
        let cfg = self.shard.config();
        match cfg.authorizer.enabled {
            true => self.on_cluster(op),
            false => self.peer.is_loopback || cfg.allow_remote_admin,
        }
    }
}
