//! Kafka's transaction APIs for clients (KIP-98): InitProducerId with a transactional id,
//! AddPartitionsToTxn v0-3 (v4, between nodes, is `txn_peers.rs`'s), EndTxn v0-3, and the admin side, DescribeTransactions v0 and
//! ListTransactions v0-1. Each goes to the id's coordinator shard (`txn/ops.rs`);
//! codes are Kafka's, with PRODUCER_FENCED sent as INVALID_PRODUCER_EPOCH to the versions
//! that predate it (InitProducerId < 4, AddPartitionsToTxn < 2, EndTxn < 2).

use kafka_protocol::messages::*;

use super::errors;
use super::txn_peers::by_topic;
use super::{str_bytes, Context};
use std::rc::Rc;

use crate::kafka_codes as k;
use crate::security::acl::Operation;
use crate::shard::coordinator_routing::route_txn;
use crate::shard::runtime::Shard;
use crate::txn::code::TxnCode;
use crate::txn::meta::TxnState;
use crate::txn::ops::{TxnOp, TxnReply};
use crate::TopicPartition;

/// The transaction requests (InitProducerId aside: it serves idempotent producers too).
pub async fn dispatch(ctx: &Context<'_>, request: RequestKind) -> ResponseKind {
    match request {
        RequestKind::AddPartitionsToTxn(r) => {
            ResponseKind::AddPartitionsToTxn(add_partitions(ctx, r).await)
        }
        RequestKind::EndTxn(r) => ResponseKind::EndTxn(end_txn(ctx, r).await),
        RequestKind::AddOffsetsToTxn(r) => ResponseKind::AddOffsetsToTxn(add_offsets(ctx, r).await),
        RequestKind::TxnOffsetCommit(r) => {
            ResponseKind::TxnOffsetCommit(txn_offset_commit(ctx, r).await)
        }
        RequestKind::DescribeTransactions(r) => {
            ResponseKind::DescribeTransactions(describe(ctx, r).await)
        }
        RequestKind::ListTransactions(r) => ResponseKind::ListTransactions(list(ctx, r).await),
        RequestKind::DescribeProducers(r) => {
            ResponseKind::DescribeProducers(super::txn_admin::describe_producers(ctx, r).await)
        }
        RequestKind::WriteTxnMarkers(r) => {
            ResponseKind::WriteTxnMarkers(super::txn_admin::write_txn_markers(ctx, r).await)
        }
        other => unreachable!("{other:?} is not a transaction request"),
    }
}

/// PRODUCER_FENCED as a request version from before it knows it.
async fn ask_on(shard: &Rc<Shard>, id: &str, op: TxnOp) -> TxnReply {
    match route_txn(shard, id.to_string(), op).await {
        Ok(reply) => reply,
        Err(e) => {
            tracing::warn!(id, error = %e.message(), "transaction coordinator unreachable");
            TxnReply::Code(TxnCode::CoordinatorNotAvailable)
        }
    }
}

/// Runs `op` on the transactional id's coordinator, once the principal may: WRITE on the
/// transactional id for what changes a transaction, DESCRIBE to describe it.
async fn ask(ctx: &Context<'_>, id: &str, op: TxnOp) -> TxnReply {
    let needed = match op {
        TxnOp::Describe => Operation::Describe,
        _ => Operation::Write,
    };
    if !ctx.on_transactional_id(needed, id) {
        return TxnReply::Code(TxnCode::TransactionalIdAuthorizationFailed);
    }
    ask_on(ctx.shard, id, op).await
}

/// InitProducerId for a transactional id: its producer id and the next epoch.
pub async fn init_producer_id(
    ctx: &Context<'_>,
    id: &str,
    request: &InitProducerIdRequest,
) -> InitProducerIdResponse {
    let r = InitProducerIdResponse::default();
    let max = ctx.shard.config().transaction_max_timeout_ms;
    if request.transaction_timeout_ms <= 0 || request.transaction_timeout_ms > max {
        return r.with_error_code(k::INVALID_TRANSACTION_TIMEOUT);
    }
    let (pid, epoch) = match ctx.version >= 3 {
        true => (request.producer_id.0, request.producer_epoch),
        false => (-1, -1),
    };
    if (pid < 0) != (epoch < 0) {
        return r.with_error_code(errors::INVALID_REQUEST);
    }
    let op = TxnOp::InitProducerId {
        timeout_ms: request.transaction_timeout_ms,
        producer_id: pid,
        epoch,
    };
    match ask(ctx, id, op).await {
        TxnReply::Producer { producer_id, epoch } => r
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch),
        TxnReply::Code(code) => r
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
            .with_error_code(code.kafka(ctx.version >= 4)),
        _ => r.with_error_code(errors::UNKNOWN_SERVER_ERROR),
    }
}

/// The partitions a request names, or the codes that fail it as a whole (Kafka: an
/// unknown or internal partition fails the request; the others get OPERATION_NOT_ATTEMPTED).
fn partitions_to_add(
    ctx: &Context<'_>,
    request: &AddPartitionsToTxnRequest,
) -> Result<Vec<TopicPartition>, Vec<(TopicPartition, i16)>> {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for t in &request.v3_and_below_topics {
        let name = t.name.0.to_string();
        let count = ctx.shard.topic(&name).map(|m| m.partitions() as i32);
        let writable = ctx.on_topic(Operation::Write, &name);
        for &p in &t.partitions {
            let tp = TopicPartition::new(name.as_str(), p);
            let internal = crate::catalog::internal_topics::is_internal(&name);
            match count {
                _ if !writable => failed.push((tp, k::TOPIC_AUTHORIZATION_FAILED)),
                Some(n) if (0..n).contains(&p) && !internal => ok.push(tp),
                _ => failed.push((tp, k::UNKNOWN_TOPIC_OR_PARTITION)),
            }
        }
    }
    if failed.is_empty() {
        return Ok(ok);
    }
    failed.extend(ok.into_iter().map(|tp| (tp, k::OPERATION_NOT_ATTEMPTED)));
    Err(failed)
}

pub async fn add_partitions(
    ctx: &Context<'_>,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if ctx.version >= super::txn_peers::BROKER_VERSION {
        return super::txn_peers::add_partitions_for_brokers(ctx, request).await;
    }
    let id = request.v3_and_below_transactional_id.0.to_string();
    let codes = match partitions_to_add(ctx, &request) {
        Err(codes) => codes,
        Ok(partitions) => {
            let op = TxnOp::AddPartitions {
                producer_id: request.v3_and_below_producer_id.0,
                epoch: request.v3_and_below_producer_epoch,
                partitions: partitions.clone(),
            };
            let code = match ask(ctx, &id, op).await {
                TxnReply::Code(code) => code.kafka(ctx.version >= 2),
                _ => errors::UNKNOWN_SERVER_ERROR,
            };
            partitions.into_iter().map(|tp| (tp, code)).collect()
        }
    };
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(by_topic(codes))
}

pub async fn end_txn(ctx: &Context<'_>, request: EndTxnRequest) -> EndTxnResponse {
    let op = TxnOp::EndTxn {
        producer_id: request.producer_id.0,
        epoch: request.producer_epoch,
        commit: request.committed,
    };
    let code = match ask(ctx, &request.transactional_id.0, op).await {
        TxnReply::Code(code) => code.kafka(ctx.version >= 2),
        _ => errors::UNKNOWN_SERVER_ERROR,
    };
    EndTxnResponse::default().with_error_code(code)
}

/// The produce check (KIP-890 part 1): NONE when `partition` is in the producer's open
/// transaction.
pub async fn verify(
    shard: &Rc<Shard>,
    id: &str,
    producer: (i64, i16),
    partition: TopicPartition,
) -> i16 {
    if let Some((view, coordinator)) = remote_coordinator(shard, id) {
        let to = (coordinator, &shard.config().inter_broker_client());
        return super::txn_peers::verify_remote(&view, to, id, producer, &partition).await;
    }
    let op = TxnOp::Verify {
        producer_id: producer.0,
        epoch: producer.1,
        partition,
    };
    match ask_on(shard, id, op).await {
        TxnReply::Code(code) => code.kafka(true),
        _ => errors::UNKNOWN_SERVER_ERROR,
    }
}

/// In cluster mode, when another node coordinates `id` (it leads the id's partition of
/// `__transaction_state`): the view and that node (-1 while the partition has no leader).
fn remote_coordinator(
    shard: &Rc<Shard>,
    id: &str,
) -> Option<(std::sync::Arc<crate::cluster::ClusterView>, i32)> {
    let view = shard.cluster()?;
    let state_topic = view.topics.get(crate::txn::TRANSACTION_STATE_TOPIC)?;
    let p = crate::txn::partition_for(id, state_topic.partitions.len());
    let leader = state_topic.partitions[p].state.leader.unwrap_or(-1);
    let me = shard.config().cluster.broker_id;
    (leader != me).then_some((view, leader))
}

pub async fn describe(
    ctx: &Context<'_>,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let asked = request.transactional_ids.len();
    let mut states = Vec::with_capacity(asked);
    for id in request.transactional_ids {
        let s = describe_transactions_response::TransactionState::default()
            .with_transactional_id(id.clone());
        states.push(match ask(ctx, &id.0, TxnOp::Describe).await {
            TxnReply::Described(m) => {
                let mut topics: Vec<describe_transactions_response::TopicData> = Vec::new();
                for tp in &m.partitions {
                    match topics.iter_mut().find(|t| t.topic.0.as_str() == tp.topic) {
                        Some(t) => t.partitions.push(tp.partition),
                        None => topics.push(
                            describe_transactions_response::TopicData::default()
                                .with_topic(TopicName(str_bytes(tp.topic.clone())))
                                .with_partitions(vec![tp.partition]),
                        ),
                    }
                }
                s.with_transaction_state(str_bytes(m.state.name()))
                    .with_transaction_timeout_ms(m.timeout_ms)
                    .with_transaction_start_time_ms(m.start_ms)
                    .with_producer_id(ProducerId(m.producer_id))
                    .with_producer_epoch(m.epoch)
                    .with_topics(topics)
            }
            TxnReply::Code(code) => s.with_error_code(code.kafka(true)),
            _ => s.with_error_code(errors::UNKNOWN_SERVER_ERROR),
        });
    }
    assert_eq!(states.len(), asked, "one state per transactional id");
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

pub async fn list(ctx: &Context<'_>, request: ListTransactionsRequest) -> ListTransactionsResponse {
    let known = |s: &str| ALL_STATES.iter().any(|k| k.name() == s);
    let unknown: Vec<_> = request
        .state_filters
        .iter()
        .filter(|s| !known(s.as_str()))
        .cloned()
        .collect();
    let all = match crate::shard::coordinator_routing::list_txns(ctx.shard).await {
        Ok(all) => all,
        Err(_) => {
            return ListTransactionsResponse::default()
                .with_error_code(k::COORDINATOR_NOT_AVAILABLE)
        }
    };
    let min_duration = if ctx.version >= 1 {
        request.duration_filter
    } else {
        -1
    };
    let now = crate::time::now_ms();
    let listed = all
        .into_iter()
        .filter(|(_, m)| m.state != TxnState::Dead)
        .filter(|(id, _)| ctx.on_transactional_id(Operation::Describe, id))
        .filter(|(_, m)| {
            request.state_filters.is_empty()
                || request
                    .state_filters
                    .iter()
                    .any(|s| s.as_str() == m.state.name())
        })
        .filter(|(_, m)| {
            request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .iter()
                    .any(|p| p.0 == m.producer_id)
        })
        .filter(|(_, m)| min_duration < 0 || (m.start_ms >= 0 && now - m.start_ms >= min_duration))
        .map(|(id, m)| {
            list_transactions_response::TransactionState::default()
                .with_transactional_id(TransactionalId(str_bytes(id)))
                .with_producer_id(ProducerId(m.producer_id))
                .with_transaction_state(str_bytes(m.state.name()))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(listed)
}

const ALL_STATES: [TxnState; 7] = [
    TxnState::Empty,
    TxnState::Ongoing,
    TxnState::PrepareCommit,
    TxnState::PrepareAbort,
    TxnState::CompleteCommit,
    TxnState::CompleteAbort,
    TxnState::PrepareEpochFence,
];

/// AddOffsetsToTxn: the group's offsets partition joins the transaction (its marker makes
/// the offsets sent inside it count).
pub async fn add_offsets(
    ctx: &Context<'_>,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    if !ctx.on_group(Operation::Read, &request.group_id.0) {
        return AddOffsetsToTxnResponse::default().with_error_code(k::GROUP_AUTHORIZATION_FAILED);
    }
    let offsets = crate::groups::OFFSETS_TOPIC;
    let meta = match crate::shard::coordinator_routing::internal_topic(ctx.shard, offsets).await {
        Ok(meta) => meta,
        Err(_) => {
            return AddOffsetsToTxnResponse::default().with_error_code(k::COORDINATOR_NOT_AVAILABLE)
        }
    };
    let p = crate::groups::partition_for(&request.group_id.0, meta.owners.len()) as i32;
    let op = TxnOp::AddPartitions {
        producer_id: request.producer_id.0,
        epoch: request.producer_epoch,
        partitions: vec![TopicPartition::new(offsets, p)],
    };
    let code = match ask(ctx, &request.transactional_id.0, op).await {
        TxnReply::Code(code) => code.kafka(ctx.version >= 2),
        _ => errors::UNKNOWN_SERVER_ERROR,
    };
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

/// TxnOffsetCommit: the group coordinator writes the offsets as the producer's
/// transactional batch; they count once the transaction commits. The group's offsets
/// partition must be in the producer's open transaction (AddOffsetsToTxn first; KIP-890
/// part 1), else nothing would ever end them.
pub async fn txn_offset_commit(
    ctx: &Context<'_>,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let refused = match txn_offset_commit_refusal(ctx, &request) {
        Some(codes) => Some(codes),
        None => match offsets_partition_in_txn(ctx, &request).await {
            k::NONE => None,
            code => Some(partition_codes(&request, code)),
        },
    };
    let codes = match refused {
        Some(codes) => codes,
        None => commit_in_txn(ctx, &request).await,
    };
    txn_offset_commit_response(ctx.version, codes)
}

/// TxnOffsetCommit needs WRITE on the transactional id (else 53 for every partition) and
/// READ on each topic: when one is denied, its partitions get 29 and the others
/// OPERATION_NOT_ATTEMPTED (the offsets are committed together or not at all). READ on
/// the group is the group coordinator's check.
fn txn_offset_commit_refusal(
    ctx: &Context<'_>,
    request: &TxnOffsetCommitRequest,
) -> Option<Vec<(TopicPartition, i16)>> {
    if !ctx.on_transactional_id(Operation::Write, &request.transactional_id.0) {
        return Some(partition_codes(
            request,
            k::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ));
    }
    let denied = |topic: &str| !ctx.on_topic(Operation::Read, topic);
    if !request.topics.iter().any(|t| denied(&t.name.0)) {
        return None;
    }
    let codes = partition_codes(request, k::OPERATION_NOT_ATTEMPTED).into_iter();
    let codes = codes.map(|(tp, code)| match denied(&tp.topic) {
        true => (tp, k::TOPIC_AUTHORIZATION_FAILED),
        false => (tp, code),
    });
    Some(codes.collect())
}

/// NONE when the group's offsets partition is in the producer's open transaction.
async fn offsets_partition_in_txn(ctx: &Context<'_>, request: &TxnOffsetCommitRequest) -> i16 {
    let Some(meta) = ctx.shard.topic(crate::groups::OFFSETS_TOPIC) else {
        return k::COORDINATOR_NOT_AVAILABLE;
    };
    let p = crate::groups::partition_for(&request.group_id.0, meta.owners.len()) as i32;
    let tp = TopicPartition::new(crate::groups::OFFSETS_TOPIC, p);
    let producer = (request.producer_id.0, request.producer_epoch);
    verify(ctx.shard, &request.transactional_id.0, producer, tp).await
}

async fn commit_in_txn(
    ctx: &Context<'_>,
    request: &TxnOffsetCommitRequest,
) -> Vec<(TopicPartition, i16)> {
    let offsets = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                let metadata = p.committed_metadata.as_ref().map(|m| m.to_string());
                let epoch = if ctx.version >= 2 {
                    p.committed_leader_epoch
                } else {
                    -1
                };
                crate::groups::ops::OffsetToCommit {
                    tp: TopicPartition::new(t.name.0.to_string(), p.partition_index),
                    offset: p.committed_offset,
                    leader_epoch: epoch,
                    metadata: metadata.unwrap_or_default(),
                }
            })
        })
        .collect();
    let op = crate::groups::ops::GroupOp::TxnCommit {
        producer_id: request.producer_id.0,
        epoch: request.producer_epoch,
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(|i| i.to_string()),
        generation: request.generation_id,
        offsets,
    };
    match super::groups::run(ctx, &request.group_id, op).await {
        Ok(crate::groups::ops::GroupReply::PartitionCodes(codes)) => {
            codes.into_iter().map(|(tp, c)| (tp, c.kafka())).collect()
        }
        Ok(_) => partition_codes(request, errors::UNKNOWN_SERVER_ERROR),
        Err(code) => partition_codes(request, code.kafka()),
    }
}

fn txn_offset_commit_response(
    version: i16,
    codes: Vec<(TopicPartition, i16)>,
) -> TxnOffsetCommitResponse {
    // Kafka sends COORDINATOR_LOAD_IN_PROGRESS as COORDINATOR_NOT_AVAILABLE below v2.
    let old = version < 2;
    let topics = by_topic(codes)
        .into_iter()
        .map(|t| {
            let partitions = t
                .results_by_partition
                .iter()
                .map(|r| {
                    let code = match r.partition_error_code {
                        k::COORDINATOR_LOAD_IN_PROGRESS if old => k::COORDINATOR_NOT_AVAILABLE,
                        c => c,
                    };
                    txn_offset_commit_response::TxnOffsetCommitResponsePartition::default()
                        .with_partition_index(r.partition_index)
                        .with_error_code(code)
                })
                .collect();
            txn_offset_commit_response::TxnOffsetCommitResponseTopic::default()
                .with_name(t.name)
                .with_partitions(partitions)
        })
        .collect();
    TxnOffsetCommitResponse::default().with_topics(topics)
}

fn partition_codes(request: &TxnOffsetCommitRequest, code: i16) -> Vec<(TopicPartition, i16)> {
    request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    TopicPartition::new(t.name.0.as_str(), p.partition_index),
                    code,
                )
            })
        })
        .collect()
}
