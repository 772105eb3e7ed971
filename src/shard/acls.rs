//! Changes of the ACLs (CreateAcls, DeleteAcls, `shardlog acls` against a live server),
//! made by the controller shard one at a time and installed everywhere
//! (`security_files.rs`): a check on any shard sees a change once it is acknowledged.

use std::rc::Rc;

use crate::security::acl_store::{self, AclChange, AclStore};
use crate::security::authorizer;
use crate::shard::messages::{OpOk, OpResult, ShardOp};
use crate::shard::runtime::{Shard, CONTROLLER};

/// Applies `change` from any shard: the bindings each filter removed, in order.
pub async fn alter(shard: &Rc<Shard>, change: AclChange) -> OpResult {
    if shard.id != CONTROLLER {
        return shard.remote(CONTROLLER, ShardOp::AlterAcls(change)).await;
    }
    let _turn = shard.admin_turn().await?;
    let mut next = authorizer::snapshot();
    let removed = next.apply(&change)?;
    let (file, text) = (acl_store::FILE, next.encode());
    let install = ShardOp::SetAcls(next.clone());
    super::security_files::replace_everywhere(shard, file, text, install).await?;
    debug_assert_eq!(authorizer::snapshot(), next, "installed on this shard too");
    let deleted: usize = removed.iter().map(Vec::len).sum();
    tracing::info!(added = change.add.len(), deleted, "ACLs changed");
    Ok(OpOk::AclsRemoved(removed))
}

/// Installs the ACLs the controller made durable.
pub fn install(store: AclStore) -> OpResult {
    authorizer::install(store);
    Ok(OpOk::Done)
}
