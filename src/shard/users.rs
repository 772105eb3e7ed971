//! Changes of the SCRAM credentials (AlterUserScramCredentials, KIP-554), made by the
//! controller shard one at a time: the new set is made durable (the file replaced
//! atomically: the commit point), then installed on every shard, so a login on any shard
//! checks the new credentials once the change is acknowledged.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::topics::META_DIR;
use crate::protocol::ErrorCode;
use crate::security::credentials::{self, Changes, CredentialStore};
use crate::shard::messages::{OpOk, OpResult, ShardOp};
use crate::shard::runtime::{Shard, CONTROLLER};

/// Applies `changes` (already validated), from any shard.
pub async fn alter(shard: &Rc<Shard>, changes: Changes) -> OpResult {
    if shard.id != CONTROLLER {
        return shard.remote(CONTROLLER, ShardOp::AlterScram(changes)).await;
    }
    let _turn = shard.admin_turn().await?;
    let next = credentials::snapshot().with(&changes);
    let meta_dir = shard.config.data_dir.join(META_DIR);
    let storage_error =
        |e: std::io::Error| BrokerError::new(ErrorCode::StorageError, format!("credentials: {e}"));
    shard
        .storage
        .create_dir_all(&meta_dir)
        .map_err(storage_error)?;
    let path = credentials::file_path(&meta_dir);
    shard
        .storage
        .write_file_atomic(&path, next.encode().into_bytes())
        .await
        .map_err(storage_error)?;
    shard
        .on_every_shard(ShardOp::SetCredentials(next.clone()))
        .await?;
    debug_assert_eq!(credentials::snapshot(), next, "installed on this shard too");
    tracing::info!(
        deleted = changes.deletions.len(),
        upserted = changes.upsertions.len(),
        "SCRAM credentials altered"
    );
    Ok(OpOk::Done)
}

/// Installs the credentials the controller made durable.
pub fn install(store: CredentialStore) -> OpResult {
    credentials::install(store);
    Ok(OpOk::Done)
}
