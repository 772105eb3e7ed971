//! Fetch v4-12: whole batches from the one holding each fetch offset, at most the
//! request's max_bytes in all (but at least one batch, as Kafka does), and a long poll:
//! when less than min_bytes is ready, the request waits up to max_wait_ms for an append
//! to any of its partitions (woken by the append, never by polling), then reads again.
//! Fetch sessions are not kept: session id 0, every response lists every requested
//! partition.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::FetchPartition;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, ProducerId};

use super::errors::{self, kafka_code};
use super::follower_reads;
use super::Context;
use crate::admission::budget::{FetchPlan, Reservation};
use crate::io::chain::ByteChain;
use crate::partition_ops::{Isolation, OpOk, PartitionOp};
use crate::security::acl::Operation;
use crate::shard::messages::FetchRead;
use crate::TopicPartition;

/// Space a response needs besides records: per partition about 60 bytes.
const RESPONSE_OVERHEAD: usize = 64;
const PARTITION_OVERHEAD: usize = 64;

/// One requested partition, in request order.
struct Wanted {
    topic: String,
    partition: i32,
    offset: i64,
    max_bytes: usize,
    /// Why it is answered unread: the principal may not READ the topic
    /// (TOPIC_AUTHORIZATION_FAILED), or another node leads it (NOT_LEADER_OR_FOLLOWER).
    refused: Option<i16>,
    /// The follower in the consumer's rack to read from instead (KIP-392), if any.
    preferred_replica: Option<i32>,
}

impl Wanted {
    fn readable(&self) -> bool {
        self.refused.is_none()
    }
}

pub async fn handle(
    ctx: &Context<'_>,
    request: FetchRequest,
    reservation: &mut Reservation,
) -> FetchResponse {
    if let Some(follower) = super::replica_fetch::follower(ctx, &request) {
        return super::replica_fetch::handle(ctx, request, follower).await;
    }
    let wanted = wanted(ctx, &request);
    let plan = FetchPlan::new(
        request.max_bytes.max(1) as usize,
        overhead(wanted.len()),
        ctx.shard.config().max_frame_bytes,
    );
    // A client's wait is bounded by the server's request timeout.
    let max_wait = (request.max_wait_ms.max(0) as u64).min(ctx.shard.config().request_timeout_ms);
    let deadline = Instant::now() + Duration::from_millis(max_wait);
    let min_bytes = request.min_bytes.max(0) as usize;
    let isolation = Isolation::from_kafka(request.isolation_level);
    loop {
        // The reply's bytes count against the budgets before anything is read; under
        // memory pressure it gets smaller (always at least one batch). A long poll holds
        // none of them while it waits.
        let Some((reply, limit)) = plan.grant(ctx.budget).await else {
            return response(ctx, &request, &wanted, Vec::new());
        };
        let mut results = read_all(ctx, &wanted, limit, isolation).await;
        let redirected = redirect_to_preferred(&wanted, &mut results);
        let ready: usize = results.iter().map(Fetched::bytes).sum();
        // Within the grant, but for the first partition's one batch over it (Kafka's rule).
        debug_assert!(
            ready <= limit || results.iter().skip(1).map(Fetched::bytes).sum::<usize>() <= limit,
            "{ready} record bytes for a grant of {limit}"
        );
        // Any error but a denial is answered at once (a client of a moved leader asks again).
        let any_error =
            (results.iter()).any(|r| ![0, errors::TOPIC_AUTHORIZATION_FAILED].contains(&r.error));
        let none_readable = !wanted.iter().any(Wanted::readable);
        let answer_now = ready >= min_bytes.max(1) || any_error || none_readable || redirected;
        if answer_now || Instant::now() >= deadline {
            reservation.merge(reply);
            return response(ctx, &request, &wanted, results);
        }
        drop(reply);
        wait_for_append(ctx, &wanted, &results, deadline).await;
    }
}

fn overhead(partitions: usize) -> usize {
    RESPONSE_OVERHEAD + PARTITION_OVERHEAD * partitions
}

fn wanted(ctx: &Context<'_>, request: &FetchRequest) -> Vec<Wanted> {
    let mut out = Vec::new();
    for t in &request.topics {
        let authorized = ctx.on_topic(Operation::Read, &t.topic.0);
        let topic = t.topic.0.as_str();
        for FetchPartition {
            partition,
            fetch_offset,
            partition_max_bytes,
            ..
        } in &t.partitions
        {
            out.push(Wanted {
                topic: t.topic.0.to_string(),
                partition: *partition,
                offset: *fetch_offset,
                max_bytes: (*partition_max_bytes).max(1) as usize,
                refused: match authorized {
                    false => Some(errors::TOPIC_AUTHORIZATION_FAILED),
                    true => follower_reads::refusal(ctx, topic, *partition).map(|r| r.code),
                },
                preferred_replica: follower_reads::preferred_replica(
                    ctx, request, topic, *partition,
                ),
            });
        }
    }
    out
}

struct Fetched {
    error: i16,
    /// KIP-392: the replica to fetch from instead (-1: this one).
    preferred_read_replica: i32,
    log_start_offset: i64,
    high_watermark: i64,
    last_stable_offset: i64,
    /// (producer id, first offset): read_committed only.
    aborted: Vec<(i64, i64)>,
    records: ByteChain,
}

impl Fetched {
    fn bytes(&self) -> usize {
        self.records.len()
    }
}

/// Reads every partition on its owner shard, all shards at once (one hop per shard), at
/// most `limit` bytes in all: each shard fills its share in request order, each partition
/// up to its own max_bytes; only the first partition may exceed its share by one batch
/// (Kafka's rule). A partition left without a share reports its offsets only.
async fn read_all(
    ctx: &Context<'_>,
    wanted: &[Wanted],
    limit: usize,
    isolation: Isolation,
) -> Vec<Fetched> {
    let reads: Vec<_> = wanted
        .iter()
        .filter(|w| w.readable())
        .map(|w| FetchRead {
            tp: TopicPartition::new(&*w.topic, w.partition),
            offset: w.offset,
            max_bytes: w.max_bytes,
        })
        .collect();
    let asked = reads.len();
    let results = crate::shard::by_owner::fetch_by_shard(ctx.shard, reads, limit, isolation).await;
    assert_eq!(results.len(), asked, "one result per partition read");
    let mut results = results.into_iter();
    let mut out = Vec::with_capacity(wanted.len());
    for w in wanted {
        if let Some(code) = w.refused {
            out.push(failed(code));
            continue;
        }
        let r = results.next().expect("one result per partition read");
        out.push(match r {
            Ok(OpOk::Fetched {
                log_start_offset,
                log_end_offset,
                last_stable_offset,
                aborted,
                records,
            }) => {
                // A read at the log end holds nothing; a read below it starts in the log.
                assert!(log_start_offset <= log_end_offset);
                assert!(records.is_empty() || w.offset < log_end_offset);
                assert!(last_stable_offset <= log_end_offset);
                Fetched {
                    error: errors::NONE,
                    preferred_read_replica: -1,
                    log_start_offset,
                    high_watermark: log_end_offset,
                    last_stable_offset,
                    aborted,
                    records,
                }
            }
            // The reply is full: only the partition's offsets, no read.
            Ok(OpOk::Done) => offsets_only(ctx, w).await,
            Ok(_) => failed(errors::UNKNOWN_SERVER_ERROR),
            Err(e) => failed(kafka_code(e.code(), true)),
        });
    }
    out
}

async fn offsets_only(ctx: &Context<'_>, w: &Wanted) -> Fetched {
    match ctx
        .shard
        .partition_op(&w.topic, w.partition, PartitionOp::Describe)
        .await
    {
        Ok(OpOk::Partition(p)) => Fetched {
            error: errors::NONE,
            preferred_read_replica: -1,
            log_start_offset: p.log_start_offset,
            high_watermark: p.log_end_offset,
            last_stable_offset: p.last_stable_offset,
            aborted: Vec::new(),
            records: ByteChain::default(),
        },
        Ok(_) => failed(errors::UNKNOWN_SERVER_ERROR),
        Err(e) => failed(kafka_code(e.code(), true)),
    }
}

fn failed(error: i16) -> Fetched {
    Fetched {
        error,
        preferred_read_replica: -1,
        log_start_offset: -1,
        high_watermark: -1,
        last_stable_offset: -1,
        aborted: Vec::new(),
        records: ByteChain::default(),
    }
}

/// Kafka's rule for a preferred read replica: a partition read at or below its high
/// watermark (which every in-sync follower holds) is answered without records, naming
/// the follower; true when any was, so the consumer is answered at once.
fn redirect_to_preferred(wanted: &[Wanted], results: &mut [Fetched]) -> bool {
    assert_eq!(
        wanted.len(),
        results.len(),
        "one result per requested partition"
    );
    let mut any = false;
    for (w, f) in wanted.iter().zip(results.iter_mut()) {
        let Some(replica) = w.preferred_replica else {
            continue;
        };
        if f.error == errors::NONE && w.offset <= f.high_watermark {
            f.records = ByteChain::default();
            f.preferred_read_replica = replica;
            any = true;
        }
    }
    any
}

/// Waits until any requested partition grows past the log end just read, or the deadline.
async fn wait_for_append(
    ctx: &Context<'_>,
    wanted: &[Wanted],
    results: &[Fetched],
    deadline: Instant,
) {
    let waits = wanted
        .iter()
        .zip(results)
        .filter(|(w, _)| w.readable())
        .map(|(w, r)| {
            (
                TopicPartition::new(&*w.topic, w.partition),
                r.high_watermark,
            )
        })
        .collect();
    let reader = crate::shard::services::long_poll::Reader::Consumer;
    crate::shard::services::long_poll::wait_any(ctx.shard, waits, deadline, reader).await;
}

fn response(
    ctx: &Context<'_>,
    request: &FetchRequest,
    wanted: &[Wanted],
    results: Vec<Fetched>,
) -> FetchResponse {
    let isolation = Isolation::from_kafka(request.isolation_level);
    let mut results = results.into_iter();
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    let mut i = 0;
    for t in &request.topics {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for _ in &t.partitions {
            let mut f = results
                .next()
                .unwrap_or_else(|| failed(errors::UNKNOWN_SERVER_ERROR));
            let records = std::mem::take(&mut f.records);
            let records = ctx.splices.borrow_mut().records_field(records);
            partitions.push(partition_data(
                ctx.version,
                wanted[i].partition,
                f,
                records,
                isolation,
            ));
            i += 1;
        }
        topics.push(
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_partitions(partitions),
        );
    }
    // Every requested partition is answered, in request order.
    assert_eq!(i, wanted.len(), "one answer per requested partition");
    FetchResponse::default().with_responses(topics)
}

/// One partition's answer: `aborted_transactions` is null for read_uncommitted (Kafka's
/// rule), the list (maybe empty) for read_committed; `last_stable_offset` always set.
/// `records` is what the records field holds as encoded: the records, or the placeholder
/// they are spliced in for (`splice.rs`).
fn partition_data(
    version: i16,
    partition: i32,
    f: Fetched,
    records: Bytes,
    isolation: Isolation,
) -> PartitionData {
    let aborted = (isolation == Isolation::ReadCommitted).then(|| {
        f.aborted
            .iter()
            .map(|&(producer_id, first_offset)| {
                AbortedTransaction::default()
                    .with_producer_id(ProducerId(producer_id))
                    .with_first_offset(first_offset)
            })
            .collect()
    });
    let d = PartitionData::default()
        .with_partition_index(partition)
        .with_error_code(f.error)
        .with_high_watermark(f.high_watermark)
        .with_last_stable_offset(f.last_stable_offset)
        .with_aborted_transactions(aborted)
        .with_records(Some(records));
    let d = match version >= 5 {
        true => d.with_log_start_offset(f.log_start_offset),
        false => d,
    };
    match version >= 11 {
        true => d.with_preferred_read_replica(BrokerId(f.preferred_read_replica)),
        false => d,
    }
}
