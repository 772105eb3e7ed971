//! Changes of the security state from the running server, made by the controller shard one
//! at a time: the SCRAM credentials (AlterUserScramCredentials, KIP-554) and the ACLs
//! (CreateAcls, DeleteAcls, `shardlog acls` against a live server). The controller writes the
//! new file atomically (the commit point: whole or absent after a kill -9), then installs it
//! on every shard, so once a change is acknowledged every connection on every shard is
//! checked against it.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::topics::META_DIR;
use crate::protocol::ErrorCode;
use crate::security::acl_store::{self, AclChange, AclStore};
use crate::security::authorizer;
use crate::security::credentials::{self, Changes, CredentialStore};
use crate::shard::messages::{OpOk, OpResult, ShardOp};
use crate::shard::runtime::{Shard, CONTROLLER};

/// Applies `changes` (already validated), from any shard.
pub async fn alter_credentials(shard: &Rc<Shard>, changes: Changes) -> OpResult {
    if shard.id != CONTROLLER {
        return shard.remote(CONTROLLER, ShardOp::AlterScram(changes)).await;
    }
    let _turn = shard.admin_turn().await?;
    let next = credentials::snapshot().with(&changes);
    let (file, text) = (credentials::FILE, next.encode());
    let install = ShardOp::SetCredentials(next.clone());
    replace_everywhere(shard, file, text, install).await?;
    debug_assert_eq!(credentials::snapshot(), next, "installed on this shard too");
    tracing::info!(
        deleted = changes.deletions.len(),
        upserted = changes.upsertions.len(),
        "SCRAM credentials altered"
    );
    Ok(OpOk::Done)
}

/// Installs the credentials the controller made durable.
pub fn install_credentials(store: CredentialStore) -> OpResult {
    credentials::install(store);
    Ok(OpOk::Done)
}

/// Applies `change` from any shard: the bindings each filter removed, in order.
pub async fn alter_acls(shard: &Rc<Shard>, change: AclChange) -> OpResult {
    if shard.id != CONTROLLER {
        return shard.remote(CONTROLLER, ShardOp::AlterAcls(change)).await;
    }
    let _turn = shard.admin_turn().await?;
    let mut next = authorizer::snapshot();
    let removed = next.apply(&change)?;
    let (file, text) = (acl_store::FILE, next.encode());
    let install = ShardOp::SetAcls(next.clone());
    replace_everywhere(shard, file, text, install).await?;
    debug_assert_eq!(authorizer::snapshot(), next, "installed on this shard too");
    let deleted: usize = removed.iter().map(Vec::len).sum();
    tracing::info!(added = change.add.len(), deleted, "ACLs changed");
    Ok(OpOk::AclsRemoved(removed))
}

/// Installs the ACLs the controller made durable.
pub fn install_acls(store: AclStore) -> OpResult {
    authorizer::install(store);
    Ok(OpOk::Done)
}

/// Makes `text` the content of `__shardlog_meta/<file>`, then runs `install` on every shard.
/// On the controller, inside its admin turn (changes are made one at a time).
pub async fn replace_everywhere(
    shard: &Rc<Shard>,
    file: &str,
    text: String,
    install: ShardOp,
) -> Result<(), BrokerError> {
    assert_eq!(shard.id, CONTROLLER, "one writer of the security files");
    let meta_dir = shard.config.data_dir.join(META_DIR);
    let storage_error =
        |e: std::io::Error| BrokerError::new(ErrorCode::StorageError, format!("{file}: {e}"));
    shard
        .storage
        .create_dir_all(&meta_dir)
        .map_err(storage_error)?;
    crate::security::meta_file::make_private_dir(&meta_dir).map_err(storage_error)?;
    let path = meta_dir.join(file);
    shard
        .storage
        .write_file_atomic(&path, text.into_bytes())
        .await
        .map_err(storage_error)?;
    crate::security::meta_file::make_private(&path).map_err(storage_error)?;
    shard.on_every_shard(install).await?;
    Ok(())
}
