//! InitProducerId v0-4 and the producer ids behind it. Ids are handed out by the
//! controller shard from blocks (`producer.id.block.size`, Kafka uses 1000): the end of
//! the current block is persisted before any id of it is used, so an id is never handed
//! out twice, even after a crash. File: `__shardlog_meta/producer-id-block` (FORMAT.md).

use std::cell::Cell;
use std::rc::Rc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::errors::{self, kafka_code};
use super::Context;
use crate::log::checkpoint::Checkpoint;
use crate::protocol::ErrorCode;
use crate::server::messages::{OpOk, OpResult};
use crate::server::shard::Shard;
use crate::server::topics::META_DIR;

/// The first id not yet reserved by a persisted block.
const BLOCK_END: Checkpoint = Checkpoint {
    file: "producer-id-block",
    missing: 0,
};

thread_local! {
    /// (next id to hand out, end of the persisted block) on the controller shard; None
    /// until the file is read.
    static BLOCK: Cell<Option<(i64, i64)>> = const { Cell::new(None) };
}

/// Hands out the next id, persisting a new block first when the current one is used up.
pub async fn allocate(shard: &Rc<Shard>) -> OpResult {
    let dir = shard.config.data_dir.join(META_DIR);
    let (next, end) = match BLOCK.get() {
        Some(b) => b,
        None => {
            let end = BLOCK_END
                .read_strict(&*shard.storage, &dir)
                .await
                .map_err(|e| (ErrorCode::CorruptStorage, format!("producer ids: {e}")))?
                .unwrap_or(0);
            (end, end)
        }
    };
    let end = if next < end {
        end
    } else {
        let new_end = next + shard.config.producer_id_block_size;
        BLOCK_END
            .write(&*shard.storage, &dir, new_end)
            .await
            .map_err(|e| (ErrorCode::StorageError, format!("producer ids: {e}")))?;
        new_end
    };
    assert!(
        next < end,
        "producer id {next} outside its block ending at {end}"
    );
    BLOCK.set(Some((next + 1, end)));
    Ok(OpOk::ProducerId(next))
}

pub async fn init_producer_id(
    ctx: &Context<'_>,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let r = InitProducerIdResponse::default();
    match request.transactional_id.as_deref().map(|t| t.is_empty()) {
        None => {}
        // Kafka's coordinator answers an empty transactional id so.
        Some(true) => return r.with_error_code(errors::INVALID_REQUEST),
        Some(false) => return r.with_error_code(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    }
    // v3+: a producer that knows its id asks for the next epoch (KIP-360).
    let current = request.producer_id.0;
    if ctx.version >= 3 && current >= 0 && request.producer_epoch >= 0 {
        if let Some(epoch) = request.producer_epoch.checked_add(1) {
            return r
                .with_producer_id(ProducerId(current))
                .with_producer_epoch(epoch);
        }
    }
    match ctx.shard.allocate_producer_id().await {
        Ok(OpOk::ProducerId(id)) => r.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Ok(_) => r.with_error_code(errors::UNKNOWN_SERVER_ERROR),
        Err((code, msg)) => {
            tracing::warn!(%msg, "InitProducerId failed");
            r.with_error_code(kafka_code(code, true))
        }
    }
}
