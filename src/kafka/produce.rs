//! Produce v3-10: each partition's batches go to the same shard operation as a native
//! Produce (validation, offsets, the acks rules and group commit are the engine's); the
//! reply carries Kafka's fields for the request's version.

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::errors::{self, kafka_code};
use super::{join_all, str_bytes, Context};
use crate::broker_error::BrokerError;
use crate::protocol::{ErrorCode, ACKS_ALL, ACKS_LEADER, ACKS_NONE};
use crate::security::acl::{Operation, ResourceType};
use crate::shard::messages::{OpOk, PartitionOp};

/// The reply, or `None` for acks=0.
pub async fn handle(ctx: &Context<'_>, request: ProduceRequest) -> Option<ProduceResponse> {
    let acks = request.acks;
    let refusal = refusal(ctx, &request);
    let asked = request.topic_data.len();
    let txn = request.transactional_id.map(|id| id.0.to_string());
    let mut topics = Vec::with_capacity(asked);
    for topic in request.topic_data {
        let how = (acks, txn.clone());
        let name = topic.name.0.as_str();
        let refusal = refusal.clone().or_else(|| {
            let denied = super::authorize::denied(ResourceType::Topic, name);
            (!ctx.on_topic(Operation::Write, name))
                .then_some((errors::TOPIC_AUTHORIZATION_FAILED, denied))
        });
        topics.push(produce_topic(ctx, topic, how, refusal).await);
    }
    debug_assert_eq!(topics.len(), asked, "one answer per topic produced to");
    (acks != ACKS_NONE).then(|| ProduceResponse::default().with_responses(topics))
}

/// An error that applies to the whole request: bad acks, or a transactional id the
/// principal may not write with.
fn refusal(ctx: &Context<'_>, request: &ProduceRequest) -> Option<(i16, String)> {
    if ![ACKS_NONE, ACKS_LEADER, ACKS_ALL].contains(&request.acks) {
        return Some((
            errors::INVALID_REQUIRED_ACKS,
            format!("acks must be 0, 1 or -1 (all), got {}", request.acks),
        ));
    }
    let id = request.transactional_id.as_ref()?.0.as_str();
    (!ctx.on_transactional_id(Operation::Write, id)).then(|| {
        let denied = super::authorize::denied(ResourceType::TransactionalId, id);
        (errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, denied)
    })
}

/// `how`: the acks and the producer's transactional id, if any.
async fn produce_topic(
    ctx: &Context<'_>,
    topic: TopicProduceData,
    how: (i16, Option<String>),
    refusal: Option<(i16, String)>,
) -> TopicProduceResponse {
    let name = topic.name.0.to_string();
    let version = ctx.version;
    let asked = topic.partition_data.len();
    let ops = topic.partition_data.into_iter().map(|p| {
        let shard = ctx.shard.clone();
        let name = name.clone();
        let refusal = refusal.clone();
        let how = how.clone();
        async move {
            let index = p.index;
            let outcome = match refusal {
                Some(e) => Err(e),
                None => produce_partition(&shard, &name, p, how, version).await,
            };
            partition_response(index, outcome, version)
        }
    });
    let answered = join_all(ops).await;
    debug_assert_eq!(
        answered.len(),
        asked,
        "one answer per partition produced to"
    );
    TopicProduceResponse::default()
        .with_name(topic.name)
        .with_partition_responses(answered)
}

/// (base offset, log append time, log start offset), or (Kafka code, message).
type Produced = Result<(i64, i64, i64), (i16, String)>;

async fn produce_partition(
    shard: &std::rc::Rc<crate::shard::runtime::Shard>,
    topic: &str,
    p: PartitionProduceData,
    (acks, txn): (i16, Option<String>),
    version: i16,
) -> Produced {
    let Some(records) = p.records.filter(|r| !r.is_empty()) else {
        return Err((
            kafka_code(ErrorCode::InvalidBatch, version >= 8),
            "the partition's records are empty".into(),
        ));
    };
    crate::catalog::internal_topics::refuse_client(topic, "produce to")
        .map_err(|e| (kafka_code(e.code, version >= 8), e.message))?;
    let transactional = match txn {
        Some(id) => {
            in_transaction(shard, &id, topic, p.index, &records).await?;
            true
        }
        None => false,
    };
    let op = PartitionOp::Produce {
        acks,
        records,
        transactional,
    };
    match shard.partition_op(topic, p.index, op).await {
        Ok(OpOk::Produced {
            base_offset,
            last_offset,
            log_append_time,
            log_start_offset,
        }) => {
            // The offsets answered were given to these records: a range, inside the log.
            debug_assert!(0 <= base_offset && base_offset <= last_offset);
            debug_assert!(log_start_offset <= last_offset + 1);
            Ok((base_offset, log_append_time, log_start_offset))
        }
        Ok(other) => Err((
            errors::UNKNOWN_SERVER_ERROR,
            format!("unexpected produce result {other:?}"),
        )),
        Err(BrokerError { code, message: msg }) => Err((kafka_code(code, version >= 8), msg)),
    }
}

/// A transactional produce writes only to a partition its producer's open transaction
/// added (KIP-890 part 1: INVALID_TXN_STATE otherwise), under its current epoch.
async fn in_transaction(
    shard: &std::rc::Rc<crate::shard::runtime::Shard>,
    id: &str,
    topic: &str,
    partition: i32,
    records: &bytes::Bytes,
) -> Result<(), (i16, String)> {
    let header = crate::format::BatchHeader::parse(records)
        .map_err(|e| (errors::CORRUPT_MESSAGE, e.to_string()))?;
    let producer = (header.producer_id, header.producer_epoch);
    let tp = crate::TopicPartition::new(topic, partition);
    match super::txn::verify(shard, id, producer, tp).await {
        errors::NONE => Ok(()),
        code => Err((
            code,
            format!("partition {topic}-{partition} is not in transaction {id:?} of producer {} epoch {}", producer.0, producer.1),
        )),
    }
}

fn partition_response(index: i32, outcome: Produced, version: i16) -> PartitionProduceResponse {
    let r = PartitionProduceResponse::default().with_index(index);
    match outcome {
        Ok((base_offset, log_append_time, log_start_offset)) => {
            let r = r
                .with_base_offset(base_offset)
                .with_log_append_time_ms(log_append_time);
            if version >= 5 {
                r.with_log_start_offset(log_start_offset)
            } else {
                r
            }
        }
        Err((code, message)) => {
            let r = r.with_error_code(code).with_base_offset(-1);
            if version >= 8 {
                r.with_error_message(Some(str_bytes(message)))
            } else {
                r
            }
        }
    }
}
