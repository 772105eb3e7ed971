//! Changes of the security state from the running server, made by the controller shard one
//! at a time: the SCRAM credentials (AlterUserScramCredentials, KIP-554) and the ACLs
//! (CreateAcls, DeleteAcls, `shardlog acls` against a live server). On a single node the
//! controller writes the new file atomically (the commit point: whole or absent after a
//! kill -9); in cluster mode it stores the new value in etcd by compare-and-swap instead
//! (`cluster/security.rs`), recomputing the change when another node changed it first.
//! Either way it then installs the new state on every shard of this node before answering,
//! so once a change is acknowledged every connection here is checked against it; the other
//! nodes install it from their next view of the cluster. The node that runs it is reached
//! through [`SecurityHost`] (the `groups/host.rs` pattern): nothing here names the shard
//! runtime or the cluster session.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use glommio::sync::Permit;

use crate::broker_error::BrokerError;
use crate::io::Storage;
use crate::protocol::ErrorCode;
pub use crate::security::state::{
    install, SecurityChange, SecurityKind, SecurityOutcome, SecurityState, SecurityValue,
};

pub type SecurityFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// The largest security value stored in etcd: etcd refuses requests over
/// `--max-request-bytes` (1.5 MiB by default).
pub const MAX_CLUSTER_VALUE_BYTES: usize = 1 << 20;

/// How many times a change that lost a race with another node's is computed again.
const SWAP_ATTEMPTS: usize = 8;

pub trait SecurityHost {
    fn storage(&self) -> &dyn Storage;
    /// The directory of the node's own files (`__shardlog_meta`).
    fn meta_dir(&self) -> PathBuf;
    /// The controller's turn: security changes, like topic changes, run one at a time.
    fn admin_turn(&self) -> SecurityFuture<'_, Result<Permit<'_>, BrokerError>>;
    /// Installs `state` on every shard, this one included.
    fn install_everywhere(
        &self,
        state: SecurityState,
    ) -> SecurityFuture<'_, Result<(), BrokerError>>;
    /// The cluster's copy (cluster mode), or None on a single node.
    fn cluster_copy(&self) -> Option<&dyn ClusterCopy>;
}

/// The cluster's security values in etcd, as this node reaches them.
pub trait ClusterCopy {
    /// The value `kind` as this node last saw it (text, revision); None: etcd holds none.
    fn last_seen(&self, kind: SecurityKind) -> Option<(Vec<u8>, i64)>;
    /// Stores `text` if etcd's value was last changed at `expected` (0: there is none).
    fn swap(
        &self,
        kind: SecurityKind,
        expected: i64,
        text: String,
    ) -> SecurityFuture<'_, Result<Swap, BrokerError>>;
}

/// What a compare-and-swap in etcd did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Swap {
    /// Stored at this revision.
    Done(i64),
    /// Another node's change came first: what etcd holds now (text, revision).
    Raced(Option<(Vec<u8>, i64)>),
}

/// Applies `change` (already validated), on the controller shard.
pub async fn apply(
    host: &dyn SecurityHost,
    change: SecurityChange,
) -> Result<SecurityOutcome, BrokerError> {
    let _turn = host.admin_turn().await?;
    let kind = change.kind();
    let (state, outcome) = match host.cluster_copy() {
        Some(cluster) => swap_in_cluster(cluster, &change).await?,
        None => {
            let (value, outcome) = change.applied_to(SecurityValue::installed(kind))?;
            replace_file(host, &value).await?;
            (SecurityState { value, revision: 0 }, outcome)
        }
    };
    let value = state.value.clone();
    host.install_everywhere(state).await?;
    assert!(
        SecurityValue::installed(kind) == value,
        "installed on this shard too"
    );
    log_change(&change, &outcome);
    Ok(outcome)
}

/// Computes the change from etcd's value and stores the result over the revision it was
/// computed from; when another node's change came first, computes it again from that.
async fn swap_in_cluster(
    cluster: &dyn ClusterCopy,
    change: &SecurityChange,
) -> Result<(SecurityState, SecurityOutcome), BrokerError> {
    let kind = change.kind();
    let mut seen = cluster.last_seen(kind);
    for _ in 0..SWAP_ATTEMPTS {
        let (current, expected) = match &seen {
            Some((text, revision)) => (decode_cluster_value(kind, text)?, *revision),
            None => (SecurityValue::empty(kind), 0),
        };
        let (value, outcome) = change.applied_to(current)?;
        let text = value.encode();
        if text.len() > MAX_CLUSTER_VALUE_BYTES {
            let why = format!("the cluster keeps its {} in one etcd value of at most {MAX_CLUSTER_VALUE_BYTES} bytes; this change would make it {} bytes", kind.name(), text.len());
            return Err(BrokerError::new(ErrorCode::InvalidRequest, why));
        }
        match cluster.swap(kind, expected, text).await? {
            Swap::Done(revision) => return Ok((SecurityState { value, revision }, outcome)),
            Swap::Raced(now) => seen = now,
        }
    }
    let why = format!(
        "the cluster's {} kept changing under this change; retry",
        kind.name()
    );
    Err(BrokerError::new(ErrorCode::RequestTimedOut, why))
}

fn decode_cluster_value(kind: SecurityKind, text: &[u8]) -> Result<SecurityValue, BrokerError> {
    SecurityValue::decode(kind, text).map_err(|why| {
        let why = format!(
            "the cluster's {} in etcd cannot be read ({why}); nothing was changed",
            kind.name()
        );
        BrokerError::new(ErrorCode::CorruptStorage, why)
    })
}

fn log_change(change: &SecurityChange, outcome: &SecurityOutcome) {
    match (change, outcome) {
        (SecurityChange::Credentials(changes), _) => tracing::info!(
            deleted = changes.deletions.len(),
            upserted = changes.upsertions.len(),
            "SCRAM credentials altered"
        ),
        (SecurityChange::Acls(change), SecurityOutcome::AclsRemoved(removed)) => {
            let deleted: usize = removed.iter().map(Vec::len).sum();
            tracing::info!(added = change.add.len(), deleted, "ACLs changed");
        }
        (SecurityChange::Acls(_), SecurityOutcome::Done) => {
            unreachable!("an ACL change reports what it removed")
        }
    }
}

/// Makes `value` the content of its file in `__shardlog_meta`. Inside the controller's
/// turn (changes are made one at a time).
async fn replace_file(host: &dyn SecurityHost, value: &SecurityValue) -> Result<(), BrokerError> {
    let file = value.kind().name();
    let meta_dir = host.meta_dir();
    let storage_error =
        |e: std::io::Error| BrokerError::new(ErrorCode::StorageError, format!("{file}: {e}"));
    host.storage()
        .create_dir_all(&meta_dir)
        .map_err(storage_error)?;
    crate::security::meta_file::make_private_dir(&meta_dir).map_err(storage_error)?;
    let path = meta_dir.join(file);
    host.storage()
        .write_file_atomic(&path, value.encode().into_bytes())
        .await
        .map_err(storage_error)?;
    crate::security::meta_file::make_private(&path).map_err(storage_error)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::security::acl::{
        AccessEntry, AclBinding, Operation, PatternType, Permission, ResourcePattern, ResourceType,
    };
    use crate::security::acl_store::{AclChange, AclStore};

    fn read_on(topic: &str) -> AclBinding {
        AclBinding {
            resource: ResourcePattern {
                kind: ResourceType::Topic,
                name: topic.into(),
                pattern: PatternType::Literal,
            },
            entry: AccessEntry {
                principal: "User:alice".into(),
                host: "*".into(),
                operation: Operation::Read,
                permission: Permission::Allow,
            },
        }
    }

    /// etcd as one value: a swap over a stale revision loses, as etcd's compare does.
    struct OneValue(RefCell<Option<(Vec<u8>, i64)>>);

    impl ClusterCopy for OneValue {
        fn last_seen(&self, _: SecurityKind) -> Option<(Vec<u8>, i64)> {
            None // this node has not seen the other node's change yet
        }

        fn swap(
            &self,
            _: SecurityKind,
            expected: i64,
            text: String,
        ) -> SecurityFuture<'_, Result<Swap, BrokerError>> {
            let mut held = self.0.borrow_mut();
            let revision = held.as_ref().map_or(0, |(_, r)| *r);
            let outcome = if revision == expected {
                *held = Some((text.into_bytes(), revision + 1));
                Swap::Done(revision + 1)
            } else {
                Swap::Raced(held.clone())
            };
            Box::pin(async move { Ok(outcome) })
        }
    }

    #[test]
    fn a_change_that_lost_a_race_is_made_again_over_the_winner() {
        let mut theirs = AclStore::default();
        theirs.add(read_on("theirs"));
        let etcd = OneValue(RefCell::new(Some((theirs.encode().into_bytes(), 7))));
        let change = SecurityChange::Acls(AclChange {
            add: vec![read_on("mine")],
            remove: Vec::new(),
        });
        let (state, _) = futures_lite::future::block_on(swap_in_cluster(&etcd, &change)).unwrap();
        assert_eq!(state.revision, 8);
        let SecurityValue::Acls(stored) = state.value else {
            panic!("an ACL change stores ACLs")
        };
        let names: Vec<&str> = stored.iter().map(|b| b.resource.name.as_str()).collect();
        assert_eq!(names, ["mine", "theirs"]);
        let held = etcd.0.borrow().clone().unwrap();
        assert_eq!(
            AclStore::decode(std::str::from_utf8(&held.0).unwrap()).unwrap(),
            stored
        );
    }

    #[test]
    fn a_change_too_large_for_one_etcd_value_is_refused_and_stores_nothing() {
        let etcd = OneValue(RefCell::new(None));
        let long = "t".repeat(200);
        let add = (0..6_000).map(|i| read_on(&format!("{long}{i}"))).collect();
        let change = SecurityChange::Acls(AclChange {
            add,
            remove: Vec::new(),
        });
        let refused = futures_lite::future::block_on(swap_in_cluster(&etcd, &change));
        let e = refused.unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidRequest);
        assert!(e.message().contains("one etcd value"), "{e}");
        assert!(etcd.0.borrow().is_none());
    }
}
