//! Changes of the SCRAM credentials (AlterUserScramCredentials, KIP-554), made by the
//! controller shard one at a time and installed everywhere (`security_files.rs`).

use std::rc::Rc;

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
    let (file, text) = (credentials::FILE, next.encode());
    let install = ShardOp::SetCredentials(next.clone());
    super::security_files::replace_everywhere(shard, file, text, install).await?;
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
