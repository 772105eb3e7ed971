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

/// Where the controller's blocks of producer ids come from (its host's part).
pub trait BlockClaims {
    /// The block after `next` (the first id past the used block; None before the first) as
    /// (first id, end), durable (its file written, or its claim held by etcd) before it
    /// returns.
    fn claim_block(
        &self,
        next: Option<i64>,
    ) -> crate::catalog::admin_host::AdminFuture<'_, Result<(i64, i64), BrokerError>>;
}

/// Hands out the next id, taking a new block from `claim` first when the current one is
/// used up (or none is known yet). `claim(next)` returns the new block as (first id, end):
/// `next` is the first id past the used block (`None` before the first), and the block must
/// be durable (its file written, or its claim held by etcd) before it returns. Blocks are
/// only consistent if a single shard of the node (the controller) hands ids out: the
/// caller's to ensure.
pub async fn allocate<F, Fut>(claim: F) -> Result<i64, BrokerError>
where
    F: FnOnce(Option<i64>) -> Fut,
    Fut: std::future::Future<Output = Result<(i64, i64), BrokerError>>,
{
    let turn = ALLOCATING.with(Rc::clone);
    let _turn = turn
        .acquire_permit(1)
        .await
        .map_err(|e| BrokerError::new(ErrorCode::Internal, format!("producer ids: {e}")))?;
    let (next, end) = match BLOCK.get() {
        Some((next, end)) if next < end => (next, end),
        used => {
            let (start, end) = claim(used.map(|(next, _)| next)).await?;
            assert!(start < end, "a new block of producer ids is not empty");
            assert!(
                used.is_none_or(|(next, _)| start >= next),
                "a new block starts past the ids handed out"
            );
            (start, end)
        }
    };
    assert!(
        next < end,
        "producer id {next} outside its block ending at {end}"
    );
    BLOCK.set(Some((next + 1, end)));
    Ok(next)
}

/// A single node's next block: from `next` (or where the file's last block ended), its end
/// persisted in `__shardlog_meta/producer-id-block` before any id of it is used.
pub async fn file_block(
    storage: &dyn Storage,
    data_dir: &Path,
    block_size: i64,
    next: Option<i64>,
) -> Result<(i64, i64), BrokerError> {
    let dir = data_dir.join(META_DIR);
    let next = match next {
        Some(next) => next,
        None => BLOCK_END
            .read_strict(storage, &dir)
            .await
            .map_err(|e| BrokerError::new(ErrorCode::CorruptStorage, format!("producer ids: {e}")))?
            .unwrap_or(0),
    };
    let new_end = next + block_size;
    assert!(new_end > next, "a new block ends past its start");
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
    Ok((next, new_end))
}
