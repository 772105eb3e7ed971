//! Producer ids (InitProducerId hands them out, `kafka/init_producer_id.rs`). Ids are handed out by the
//! controller shard from blocks (`producer.id.block.size`, Kafka uses 1000): the end of
//! the current block is persisted before any id of it is used, so an id is never handed
//! out twice, even after a crash. File: `__shardlog_meta/producer-id-block` (FORMAT.md).

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

use glommio::sync::Semaphore;

use crate::broker_error::BrokerError;
use crate::catalog::topics::META_DIR;
use crate::io::Storage;
use crate::log::checkpoint::Checkpoint;
use crate::protocol::ErrorCode;

/// The first id not yet reserved by a persisted block.
const BLOCK_END: Checkpoint = Checkpoint {
    file: "producer-id-block",
    missing: 0,
};

thread_local! {
    /// (next id to hand out, end of the persisted block) on the controller shard; None
    /// until the file is read.
    static BLOCK: Cell<Option<(i64, i64)>> = const { Cell::new(None) };
    /// One allocation at a time: two InitProducerIds that both found the block used up
    /// would otherwise both write the block file (racing on it) and hand out the same id.
    static ALLOCATING: Rc<Semaphore> = Rc::new(Semaphore::new(1));
}

/// Hands out the next id, persisting a new block (`block_size` ids) first when the current
/// one is used up. Blocks are only consistent if a single shard (the controller) hands ids
/// out: the caller's to ensure.
pub async fn allocate(
    storage: &dyn Storage,
    data_dir: &Path,
    block_size: i64,
) -> Result<i64, BrokerError> {
    let turn = ALLOCATING.with(Rc::clone);
    let _turn = turn
        .acquire_permit(1)
        .await
        .map_err(|e| BrokerError::new(ErrorCode::Internal, format!("producer ids: {e}")))?;
    let dir = data_dir.join(META_DIR);
    let (next, end) = match BLOCK.get() {
        Some(b) => b,
        None => {
            let end = BLOCK_END
                .read_strict(storage, &dir)
                .await
                .map_err(|e| {
                    BrokerError::new(ErrorCode::CorruptStorage, format!("producer ids: {e}"))
                })?
                .unwrap_or(0);
            (end, end)
        }
    };
    let end = if next < end {
        end
    } else {
        let new_end = next + block_size;
        // The block is persisted before any id of it is used, and reaches past `next`.
        assert!(
            new_end > next && new_end >= end,
            "a new block ends past the old one"
        );
        let storage_error =
            |e: String| BrokerError::new(ErrorCode::StorageError, format!("producer ids: {e}"));
        // A fresh data directory has no meta directory until its first topic.
        storage
            .create_dir_all(&dir)
            .map_err(|e| storage_error(e.to_string()))?;
        BLOCK_END
            .write(storage, &dir, new_end)
            .await
            .map_err(|e| storage_error(e.to_string()))?;
        new_end
    };
    assert!(
        next < end,
        "producer id {next} outside its block ending at {end}"
    );
    BLOCK.set(Some((next + 1, end)));
    Ok(next)
}
