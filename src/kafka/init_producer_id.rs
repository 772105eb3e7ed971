//! InitProducerId v0-4: a new id from the controller's blocks (`catalog/producer_ids.rs`), or
//! the next epoch of the id a producer already has (KIP-360); with a transactional id, its
//! transaction coordinator's answer (`txn.rs`).

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::errors::{self, kafka_code};
use super::Context;
use crate::security::acl::{Operation, ResourceType};

pub async fn init_producer_id(
    ctx: &Context<'_>,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let r = InitProducerIdResponse::default();
    match request.transactional_id.as_ref().map(|t| t.0.as_str()) {
        None => {}
        // Kafka's coordinator answers an empty transactional id so.
        Some("") => return r.with_error_code(errors::INVALID_REQUEST),
        Some(id) => return super::txn::init_producer_id(ctx, id, &request).await,
    }
    // An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
    // (KIP-679).
    let may_write = ctx.on_cluster(Operation::IdempotentWrite)
        || ctx.on_any(Operation::Write, ResourceType::Topic);
    if !may_write {
        return r.with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED);
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
        Ok(id) => r.with_producer_id(ProducerId(id)).with_producer_epoch(0),
        Err(why) => {
            tracing::warn!(%why, "InitProducerId failed");
            r.with_error_code(kafka_code(why.code(), true))
        }
    }
}
