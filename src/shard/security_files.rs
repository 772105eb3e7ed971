//! Replacing a security file (SCRAM credentials, ACLs) from the running server: the
//! controller writes the new content atomically (the commit point: whole or absent after
//! a kill -9), then installs it on every shard, so once a change is acknowledged every
//! connection on every shard is checked against it.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::topics::META_DIR;
use crate::protocol::ErrorCode;
use crate::shard::messages::ShardOp;
use crate::shard::runtime::{Shard, CONTROLLER};

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
