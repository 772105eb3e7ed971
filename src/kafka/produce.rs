//! Produce v3-10: each partition's batch goes to the same shard operation as a native
//! Produce (validation, offsets, the acks rules and group commit are the engine's); the
//! reply carries Kafka's fields for the request's version.
//!
//! Order: Kafka handles a connection's requests one after another, and an idempotent
//! producer with several requests in flight relies on it. A Produce holds its connection's
//! turn (`net/turn.rs`) through its checks (a transaction's verification waits for the
//! coordinator), then queues every partition's batch at once, grouped by owner shard, and
//! only then lets the connection's next request start.

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::errors::{self, kafka_code};
use super::refusal::Refusal;
use super::{join_all, str_bytes, Context};
use crate::format::BatchHeader;
use crate::net::turn::queue_then_release;
use crate::partition_ops::{OpOk, OpResult, PartitionOp};
use crate::protocol::{ErrorCode, ACKS_ALL, ACKS_LEADER, ACKS_NONE};
use crate::security::acl::{Operation, ResourceType};
use crate::shard::by_owner::run_on_owners;
use crate::shard::messages::ShardOp;
use crate::TopicPartition;

/// (base offset, log append time, log start offset), or (Kafka code, message).
type Produced = Result<(i64, i64, i64), Refusal>;

/// One partition of the request: where it goes, and its batch (or why it is refused).
struct Planned {
    topic: String,
    index: i32,
    batch: Result<bytes::Bytes, Refusal>,
}

/// The reply, or `None` for acks=0.
pub async fn handle(ctx: &Context<'_>, request: ProduceRequest) -> Option<ProduceResponse> {
    ctx.turn.hold();
    let acks = request.acks;
    let refusal = refusal(ctx, &request);
    let txn = request.transactional_id.map(|id| id.0.to_string());
    let mut layout = Vec::with_capacity(request.topic_data.len());
    let mut planned = Vec::new();
    for topic in request.topic_data {
        let name = topic.name.0.to_string();
        let refusal = refusal.clone().or_else(|| {
            let denied = super::authorize::denied(ResourceType::Topic, &name);
            (!ctx.on_topic(Operation::Write, &name))
                .then_some(Refusal::new(errors::TOPIC_AUTHORIZATION_FAILED, denied))
        });
        layout.push((topic.name, topic.partition_data.len()));
        for p in topic.partition_data {
            let batch = match &refusal {
                Some(e) => Err(e.clone()),
                None => match super::cluster::not_leader(ctx, &name, p.index) {
                    Some(e) => Err(e),
                    None => one_batch(&name, p.records.clone(), ctx.version),
                },
            };
            planned.push(Planned {
                topic: name.clone(),
                index: p.index,
                batch,
            });
        }
    }
    if let Some(id) = &txn {
        verify_transaction(ctx, id, &mut planned).await;
    }
    let produced = queue_then_release(ctx.turn, run_all(ctx, acks, txn.is_some(), &planned));
    let mut produced = produced.await.into_iter();
    assert_eq!(produced.len(), planned.len(), "one outcome per partition");
    let topics = layout
        .into_iter()
        .map(|(name, n)| {
            let answers = (produced.by_ref().take(n))
                .map(|answer| partition_response(answer, ctx.version))
                .collect::<Vec<_>>();
            assert_eq!(answers.len(), n, "one answer per partition produced to");
            TopicProduceResponse::default()
                .with_name(name)
                .with_partition_responses(answers)
        })
        .collect();
    (acks != ACKS_NONE).then(|| ProduceResponse::default().with_responses(topics))
}

/// An error that applies to the whole request: bad acks, or a transactional id the
/// principal may not write with.
fn refusal(ctx: &Context<'_>, request: &ProduceRequest) -> Option<Refusal> {
    if ![ACKS_NONE, ACKS_LEADER, ACKS_ALL].contains(&request.acks) {
        return Some(Refusal::new(
            errors::INVALID_REQUIRED_ACKS,
            format!("acks must be 0, 1 or -1 (all), got {}", request.acks),
        ));
    }
    let id = request.transactional_id.as_ref()?.0.as_str();
    (!ctx.on_transactional_id(Operation::Write, id)).then(|| {
        let denied = super::authorize::denied(ResourceType::TransactionalId, id);
        Refusal::new(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, denied)
    })
}

/// A partition's records as Kafka accepts them from Produce v3 on
/// (`ProduceRequest.validateRecords`): exactly one record batch, of magic 2, to a topic
/// clients may write. The engine validates the batch itself.
fn one_batch(
    topic: &str,
    records: Option<bytes::Bytes>,
    version: i16,
) -> Result<bytes::Bytes, Refusal> {
    let invalid =
        |why: String| Refusal::new(kafka_code(ErrorCode::InvalidBatch, version >= 8), why);
    let Some(records) = records.filter(|r| !r.is_empty()) else {
        return Err(invalid("the partition's records are empty".into()));
    };
    crate::catalog::internal_topics::refuse_client(topic, "produce to")
        .map_err(|e| Refusal::new(kafka_code(e.code(), version >= 8), e.message()))?;
    let header = BatchHeader::parse(&records).map_err(|e| invalid(e.to_string()))?;
    if header.size() != records.len() {
        let why = format!(
            "Produce v{version} carries exactly one record batch per partition: a {}-byte batch is followed by {} more bytes",
            header.size(),
            records.len().saturating_sub(header.size())
        );
        return Err(invalid(why));
    }
    Ok(records)
}

/// A transactional produce writes only to partitions its producer's open transaction
/// added (KIP-890 part 1: INVALID_TXN_STATE otherwise), under its current epoch: each
/// partition's one batch names the producer checked, all checked at once.
async fn verify_transaction(ctx: &Context<'_>, id: &str, planned: &mut [Planned]) {
    let (at, checks): (Vec<usize>, Vec<_>) = (planned.iter().enumerate())
        .filter_map(|(i, p)| {
            let header = BatchHeader::parse(p.batch.as_ref().ok()?).ok()?;
            let producer = (header.producer_id, header.producer_epoch);
            let tp = crate::TopicPartition::new(&*p.topic, p.index);
            let (shard, id) = (ctx.shard.clone(), id.to_string());
            Some((i, async move {
                let code = super::txn::verify(&shard, &id, producer, tp.clone()).await;
                let (pid, epoch) = producer;
                let why = || format!("partition {tp} is not in transaction {id:?} of producer {pid} epoch {epoch}");
                (code != errors::NONE).then(|| Refusal::new(code, why()))
            }))
        })
        .unzip();
    for (i, verdict) in at.into_iter().zip(join_all(checks).await) {
        if let Some(refused) = verdict {
            planned[i].batch = Err(refused);
        }
    }
}

/// One partition's answer: its index, the outcome, and which records were refused
/// (KIP-467's record_errors: (index in the batch, why)).
type Answer = (i32, Produced, Vec<(i32, String)>);

/// Queues every accepted partition's batch at its owner (all before its first await, in
/// request order) and waits for them; the answers in request order.
async fn run_all(
    ctx: &Context<'_>,
    acks: i16,
    transactional: bool,
    planned: &[Planned],
) -> Vec<Answer> {
    let items = (planned.iter())
        .filter_map(|p| {
            Some((
                TopicPartition::new(&*p.topic, p.index),
                p.batch.clone().ok()?,
            ))
        })
        .collect();
    let results = run_on_owners(ctx.shard, items, |group| {
        let ops = group.into_iter().map(|(_, tp, records)| {
            let op = PartitionOp::Produce {
                acks,
                records,
                transactional,
            };
            (tp, op)
        });
        ShardOp::Partitions(ops.collect())
    });
    let mut results = results.await.into_iter();
    planned
        .iter()
        .map(|p| match &p.batch {
            Err(refused) => (p.index, Err(refused.clone()), Vec::new()),
            Ok(batch) => {
                let result = results.next();
                let null_keys =
                    matches!(&result, Some(Err(e)) if e.code() == ErrorCode::CompactedTopicNullKey);
                let record_errors = match null_keys {
                    true => null_key_records(batch, &p.topic, p.index),
                    false => Vec::new(),
                };
                (p.index, produced(result, ctx.version), record_errors)
            }
        })
        .collect()
}

/// The records of `batch` without a key, each with Kafka's message: what a compacted
/// topic refuses (the whole batch is refused; KIP-467 says which records and why).
fn null_key_records(batch: &bytes::Bytes, topic: &str, partition: i32) -> Vec<(i32, String)> {
    let Ok(header) = BatchHeader::parse(batch) else {
        return Vec::new();
    };
    let Ok(section) = crate::format::batch::RecordsSection::of(batch, &header) else {
        return Vec::new();
    };
    let why = || {
        format!("Compacted topic cannot accept message without key in topic partition {topic}-{partition}.")
    };
    (section.iter().enumerate())
        .filter(|(_, r)| r.as_ref().is_ok_and(|r| r.key.is_none()))
        .map(|(i, _)| (i as i32, why()))
        .collect()
}

fn produced(result: Option<OpResult>, version: i16) -> Produced {
    match result {
        Some(Ok(OpOk::Produced {
            base_offset,
            last_offset,
            log_append_time,
            log_start_offset,
        })) => {
            // The offsets answered were given to these records: a range, inside the log.
            assert!(0 <= base_offset);
            assert!(base_offset <= last_offset);
            assert!(log_start_offset <= last_offset + 1);
            Ok((base_offset, log_append_time, log_start_offset))
        }
        Some(Err(e)) => Err(Refusal::new(
            kafka_code(e.code(), version >= 8),
            e.message(),
        )),
        other => Err(Refusal::new(
            errors::UNKNOWN_SERVER_ERROR,
            format!("unexpected produce result {other:?}"),
        )),
    }
}

fn partition_response(
    (index, outcome, record_errors): Answer,
    version: i16,
) -> PartitionProduceResponse {
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
        Err(Refusal { code, message }) => {
            let r = r.with_error_code(code).with_base_offset(-1);
            if version < 8 {
                return r;
            }
            let record_errors = record_errors.into_iter().map(|(i, why)| {
                BatchIndexAndErrorMessage::default()
                    .with_batch_index(i)
                    .with_batch_index_error_message(Some(str_bytes(why)))
            });
            r.with_error_message(Some(str_bytes(message)))
                .with_record_errors(record_errors.collect())
        }
    }
}
