//! Changes of the security state from the running server, made by the controller one at a
//! time: the SCRAM credentials (AlterUserScramCredentials, KIP-554) and the ACLs
//! (CreateAcls, DeleteAcls, `shardlog acls` against a live server). The controller writes the
//! new file atomically (the commit point: whole or absent after a kill -9), then installs it
//! on every shard, so once a change is acknowledged every connection on every shard is
//! checked against it. The node that runs it is reached through [`SecurityHost`] (the
//! `groups/host.rs` pattern): nothing here names the shard runtime.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use glommio::sync::Permit;

use crate::broker_error::BrokerError;
use crate::io::Storage;
use crate::protocol::ErrorCode;
use crate::security::acl::AclBinding;
use crate::security::acl_store::{self, AclChange, AclStore};
use crate::security::authorizer;
use crate::security::credentials::{self, Changes, CredentialStore};

pub type SecurityFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A change a client asks for; it runs on the controller.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SecurityChange {
    Credentials(Changes),
    Acls(AclChange),
}

/// The security state the controller made durable, for every shard to install.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SecurityState {
    Credentials(CredentialStore),
    Acls(AclStore),
}

/// What a change did: for an ACL change, the bindings each removal filter removed, in
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityOutcome {
    Done,
    AclsRemoved(Vec<Vec<AclBinding>>),
}

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
}

/// Applies `change` (already validated), on the controller.
pub async fn apply(
    host: &dyn SecurityHost,
    change: SecurityChange,
) -> Result<SecurityOutcome, BrokerError> {
    let _turn = host.admin_turn().await?;
    match change {
        SecurityChange::Credentials(changes) => alter_credentials(host, changes).await,
        SecurityChange::Acls(change) => alter_acls(host, change).await,
    }
}

/// Installs state the controller made durable, on this shard.
pub fn install(state: SecurityState) {
    match state {
        SecurityState::Credentials(store) => credentials::install(store),
        SecurityState::Acls(store) => authorizer::install(store),
    }
}

async fn alter_credentials(
    host: &dyn SecurityHost,
    changes: Changes,
) -> Result<SecurityOutcome, BrokerError> {
    let next = credentials::snapshot().with(&changes);
    let (file, text) = (credentials::FILE, next.encode());
    let state = SecurityState::Credentials(next.clone());
    replace_everywhere(host, file, text, state).await?;
    assert!(
        credentials::snapshot() == next,
        "installed on this shard too"
    );
    tracing::info!(
        deleted = changes.deletions.len(),
        upserted = changes.upsertions.len(),
        "SCRAM credentials altered"
    );
    Ok(SecurityOutcome::Done)
}

async fn alter_acls(
    host: &dyn SecurityHost,
    change: AclChange,
) -> Result<SecurityOutcome, BrokerError> {
    let mut next = authorizer::snapshot();
    let removed = next.apply(&change)?;
    assert_eq!(removed.len(), change.remove.len(), "one answer per filter");
    let (file, text) = (acl_store::FILE, next.encode());
    let state = SecurityState::Acls(next.clone());
    replace_everywhere(host, file, text, state).await?;
    assert!(
        authorizer::snapshot() == next,
        "installed on this shard too"
    );
    let deleted: usize = removed.iter().map(Vec::len).sum();
    tracing::info!(added = change.add.len(), deleted, "ACLs changed");
    Ok(SecurityOutcome::AclsRemoved(removed))
}

/// Makes `text` the content of `__shardlog_meta/<file>`, then installs `state` on every
/// shard. Inside the controller's turn (changes are made one at a time).
async fn replace_everywhere(
    host: &dyn SecurityHost,
    file: &str,
    text: String,
    state: SecurityState,
) -> Result<(), BrokerError> {
    let meta_dir = host.meta_dir();
    let storage_error =
        |e: std::io::Error| BrokerError::new(ErrorCode::StorageError, format!("{file}: {e}"));
    host.storage()
        .create_dir_all(&meta_dir)
        .map_err(storage_error)?;
    crate::security::meta_file::make_private_dir(&meta_dir).map_err(storage_error)?;
    let path = meta_dir.join(file);
    host.storage()
        .write_file_atomic(&path, text.into_bytes())
        .await
        .map_err(storage_error)?;
    crate::security::meta_file::make_private(&path).map_err(storage_error)?;
    host.install_everywhere(state).await
}
