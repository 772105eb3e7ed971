//! Fetch from a follower (cluster mode; `replica_id` >= 0, Fetch v12): the leader notes
//! each partition's follower log end, moves its high watermark, and answers with the
//! records past the follower's offset up to the acknowledged log end (past the high
//! watermark, which consumers stop at), or with `diverging_epoch` where the follower's log
//! stopped agreeing with its own (KIP-320). An answer with nothing new waits up to
//! `max_wait_ms` for an append (a follower's long poll). ISR expansions the fetches earn
//! go to etcd through the cluster thread. Replica fetches need CLUSTER_ACTION on the
//! cluster, as in Kafka.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    EpochEndOffset, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse};

use super::errors::{self, kafka_code};
use super::replica_quota::{self, Side};
use super::Context;
use crate::io::chain::ByteChain;
use crate::partition_ops::{OpOk, PartitionOp};
use crate::replication::{FetchAnswer, FetchRequest as ReplicaFetch, IsrChange};
use crate::security::acl::Operation;
use crate::shard::partition::replica::{ReplicaOp, ReplicaReply};
use crate::shard::services::long_poll::Reader;
use crate::TopicPartition;

/// The follower a fetch comes from, if it is a replica's: in cluster mode, from v12 on
/// (followers learn of divergence inside the fetch, v12's diverging_epoch). An older
/// fetch naming a replica is served as a consumer's.
pub fn follower(ctx: &Context<'_>, request: &FetchRequest) -> Option<i32> {
    let id = request.replica_id.0.max(request.replica_state.replica_id.0);
    (id >= 0 && ctx.version >= 12 && ctx.shard.cluster().is_some()).then_some(id)
}

/// One partition's answer.
struct Answer {
    error: i16,
    high_watermark: i64,
    log_start_offset: i64,
    diverging: Option<(i32, i64)>,
    records: ByteChain,
    /// The leader's log end when it answered (what a long poll waits past).
    log_end: i64,
}

pub async fn handle(ctx: &Context<'_>, request: FetchRequest, follower: i32) -> FetchResponse {
    if !ctx.on_cluster(Operation::ClusterAction) {
        return FetchResponse::default().with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED);
    }

    let eligible = ctx
        .shard
        .cluster()
        .is_some_and(|v| crate::replication::controller::Liveness::eligible(&*v, follower));
    let wait = (request.max_wait_ms.max(0) as u64).min(ctx.shard.config().request_timeout_ms);
    let deadline = Instant::now() + Duration::from_millis(wait);
    let limit = (request.max_bytes.max(1) as usize).min(ctx.shard.config().max_frame_bytes / 2);
    let mut changes = Vec::new();
    let answers = loop {
        let (answers, earned) = answer_all(ctx, &request, follower, eligible, limit).await;
        changes.extend(earned);
        let any = answers
            .iter()
            .any(|a| a.error != 0 || a.diverging.is_some() || !a.records.is_empty());
        if any || Instant::now() >= deadline {
            break answers;
        }
        let waits = partitions(&request)
            .zip(&answers)
            .map(|((tp, _), a)| (tp, a.log_end))
            .collect();
        crate::shard::services::long_poll::wait_any(ctx.shard, waits, deadline, Reader::Follower)
            .await;
        if Instant::now() >= deadline {
            let (answers, earned) = answer_all(ctx, &request, follower, eligible, limit).await;
            changes.extend(earned);
            break answers;
        }
    };
    send_isr_changes(ctx, changes);
    response(ctx, &request, answers)
}

fn partitions(
    request: &FetchRequest,
) -> impl Iterator<
    Item = (
        TopicPartition,
        &kafka_protocol::messages::fetch_request::FetchPartition,
    ),
> {
    request.topics.iter().flat_map(|t| {
        t.partitions
            .iter()
            .map(move |p| (TopicPartition::new(t.topic.0.as_str(), p.partition), p))
    })
}

/// Every partition's answer, in request order, within `limit` bytes in all.
async fn answer_all(
    ctx: &Context<'_>,
    request: &FetchRequest,
    follower: i32,
    eligible: bool,
    limit: usize,
) -> (Vec<Answer>, Vec<(TopicPartition, IsrChange)>) {
    let mut left = limit;
    let mut answers = Vec::new();
    let mut changes = Vec::new();
    for (tp, p) in partitions(request) {
        let asked = ReplicaFetch {
            follower,
            fetch_offset: p.fetch_offset,
            last_fetched_epoch: (p.last_fetched_epoch >= 0).then_some(p.last_fetched_epoch),
            current_leader_epoch: p.current_leader_epoch,
            correlation: 0,
        };
        let max_bytes = (p.partition_max_bytes.max(1) as usize).min(left.max(1));
        let throttled =
            replica_quota::throttles(ctx.shard, Side::Leader, (&tp.topic, tp.partition), follower);
        let max_bytes = within_quota(ctx, throttled, &tp, max_bytes);
        let op = ReplicaOp::Fetch {
            request: asked,
            max_bytes,
            eligible,
        };
        let reply = ctx
            .shard
            .partition_op(&tp.topic, tp.partition, PartitionOp::Replica(op))
            .await;
        let answer = match reply {
            Ok(OpOk::Replica(ReplicaReply::Fetched {
                answer,
                records,
                log_start_offset,
                log_end_offset,
                isr_change,
            })) => {
                changes.extend(isr_change.map(|c| (tp.clone(), c)));
                left = left.saturating_sub(records.len());
                if throttled {
                    replica_quota::record(ctx.shard, Side::Leader, records.len());
                }
                fetched(answer, records, log_start_offset, log_end_offset)
            }
            Ok(OpOk::Replica(ReplicaReply::BelowLogStart { log_start_offset })) => Answer {
                log_start_offset,
                ..failed(errors::OFFSET_OUT_OF_RANGE)
            },
            Ok(_) => failed(errors::UNKNOWN_SERVER_ERROR),
            Err(e) => failed(kafka_code(e.code(), true)),
        };
        answers.push(answer);
    }
    assert_eq!(
        answers.len(),
        partitions(request).count(),
        "one answer per partition asked"
    );
    assert!(
        changes.len() <= answers.len(),
        "at most one ISR change per partition"
    );
    (answers, changes)
}

/// A throttled follower's fetch over the leader's quota is answered without records (0
/// bytes asked of the partition); any other gets `max_bytes`.
fn within_quota(
    ctx: &Context<'_>,
    throttled: bool,
    tp: &TopicPartition,
    max_bytes: usize,
) -> usize {
    if !throttled || !replica_quota::exceeded(ctx.shard, Side::Leader) {
        return max_bytes;
    }
    tracing::debug!(partition = %tp, "a throttled follower's fetch answered without records (leader.replication.throttled.rate)");
    0
}

fn fetched(answer: FetchAnswer, records: ByteChain, log_start: i64, log_end: i64) -> Answer {
    assert!(log_start <= log_end, "the log starts at or before its end");
    let (high_watermark, diverging) = match answer {
        FetchAnswer::Records { high_watermark, .. } => (high_watermark, None),
        // An end offset of -1 (no such epoch here) would read as "no divergence" on the
        // wire: the follower then truncates to its high watermark, as at offset 0.
        FetchAnswer::Diverging { epoch, end_offset } => (-1, Some((epoch, end_offset.max(0)))),
    };
    // A diverged follower truncates first: no records come with the divergence.
    assert!(diverging.is_none() || records.is_empty());
    assert!(
        high_watermark <= log_end,
        "the high watermark is within the leader's log"
    );
    Answer {
        error: errors::NONE,
        high_watermark,
        log_start_offset: log_start,
        diverging,
        records,
        log_end,
    }
}

fn failed(error: i16) -> Answer {
    Answer {
        error,
        high_watermark: -1,
        log_start_offset: -1,
        diverging: None,
        records: ByteChain::default(),
        log_end: -1,
    }
}

/// ISR expansions earned by the fetch, written to etcd without holding the answer.
fn send_isr_changes(ctx: &Context<'_>, changes: Vec<(TopicPartition, IsrChange)>) {
    let Some(link) = ctx.shard.cluster_link() else {
        return;
    };
    for (tp, change) in changes {
        let (shard, link) = (ctx.shard.clone(), link.clone());
        crate::tasks::spawn(async move {
            crate::shard::cluster::replication::propose_isr(&shard, &link, tp, change).await;
        })
        .detach();
    }
}

fn response(ctx: &Context<'_>, request: &FetchRequest, answers: Vec<Answer>) -> FetchResponse {
    let mut answers = answers.into_iter();
    let topics = request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| {
            let a = answers.next().expect("one answer per partition asked");
            let records = ctx.splices.borrow_mut().records_field(a.records);
            partition_data(
                p.partition,
                a.error,
                a.high_watermark,
                a.log_start_offset,
                a.diverging,
                records,
            )
        });
        FetchableTopicResponse::default()
            .with_topic(t.topic.clone())
            .with_partitions(partitions.collect())
    });
    let response = FetchResponse::default().with_responses(topics.collect());
    assert!(answers.next().is_none(), "every answer placed");
    response
}

fn partition_data(
    partition: i32,
    error: i16,
    high_watermark: i64,
    log_start_offset: i64,
    diverging: Option<(i32, i64)>,
    records: Bytes,
) -> PartitionData {
    let p = PartitionData::default()
        .with_partition_index(partition)
        .with_error_code(error)
        .with_high_watermark(high_watermark)
        .with_last_stable_offset(high_watermark)
        .with_log_start_offset(log_start_offset)
        .with_records(Some(records));
    match diverging {
        Some((epoch, end_offset)) => p.with_diverging_epoch(
            EpochEndOffset::default()
                .with_epoch(epoch)
                .with_end_offset(end_offset),
        ),
        None => p,
    }
}
