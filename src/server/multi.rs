//! MultiProduce and MultiFetch (PROTOCOL.md, keys 21 and 22): the partitions of one request
//! are grouped by owner shard and every group runs at once, locally or as one mesh message
//! per shard (`ShardOp::Partitions`), so a client pays one round trip for all of them and
//! the server one hop per shard, not per partition.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::budget::{Budget, Reservation};
use super::handlers::{check_acks, fetch_bytes};
use super::messages::{OpOk, OpResult, PartitionOp, ShardOp};
use super::shard::Shard;
use crate::io::chain::ByteChain;
use crate::protocol::multi::{FetchEntry, Fetched, ProduceEntry, Produced, MAX_PARTITIONS};
use crate::protocol::{ErrorCode, ResponseBody};

type Refused = (ErrorCode, String);

/// The partition names of a request: at most `MAX_PARTITIONS`, none twice.
fn check_names<'a>(names: impl ExactSizeIterator<Item = (&'a str, i32)>) -> Result<(), Refused> {
    if names.len() > MAX_PARTITIONS {
        return Err((
            ErrorCode::InvalidRequest,
            format!(
                "{} partitions in one request (at most {MAX_PARTITIONS})",
                names.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    for (topic, partition) in names {
        if !seen.insert((topic, partition)) {
            return Err((
                ErrorCode::InvalidRequest,
                format!("partition {topic}-{partition} is named twice"),
            ));
        }
    }
    Ok(())
}

/// One partition's work in a request: its place in the request, name and what to do.
type Item<T> = (usize, String, u32, T);

/// Groups `items` by owner shard and runs each group as the `ShardOp` that `make` builds
/// from it (which must answer `OpOk::Results`, one per item in order), every group at once:
/// locally or as one mesh message. Results in the order of `items`.
async fn run_on_owners<T>(
    shard: &Rc<Shard>,
    items: Vec<(String, i32, T)>,
    make: impl Fn(Vec<Item<T>>) -> ShardOp,
) -> Vec<OpResult> {
    let mut results: Vec<Option<OpResult>> = (0..items.len()).map(|_| None).collect();
    let mut by_owner: HashMap<usize, Vec<Item<T>>> = HashMap::new();
    for (i, (topic, partition, work)) in items.into_iter().enumerate() {
        match shard.owner_of(&topic, partition) {
            Ok(owner) => {
                by_owner
                    .entry(owner)
                    .or_default()
                    .push((i, topic, partition as u32, work))
            }
            Err(e) => results[i] = Some(Err(e)),
        }
    }
    let tasks: Vec<_> = by_owner
        .into_iter()
        .map(|(owner, group)| {
            let indexes: Vec<usize> = group.iter().map(|g| g.0).collect();
            let (n, op, shard) = (group.len(), make(group), shard.clone());
            let task = crate::tasks::spawn(async move {
                let answer = if owner == shard.id {
                    shard.execute(op).await
                } else {
                    shard.remote(owner, op).await
                };
                match answer {
                    Ok(OpOk::Results(r)) if r.len() == n => r,
                    Ok(other) => vec![Err(unexpected(other)); n],
                    Err(e) => vec![Err(e); n],
                }
            });
            (indexes, task)
        })
        .collect();
    for (indexes, task) in tasks {
        for (i, r) in indexes.into_iter().zip(task.await) {
            results[i] = Some(r);
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(unexpected(OpOk::Done))))
        .collect()
}

/// The error of a result that is not the one expected.
fn error_of(r: OpResult) -> Refused {
    match r {
        Err(e) => e,
        Ok(other) => unexpected(other),
    }
}

fn unexpected(got: OpOk) -> Refused {
    (ErrorCode::Internal, format!("unexpected result {got:?}"))
}

pub async fn produce(
    shard: &Rc<Shard>,
    acks: i16,
    entries: Vec<ProduceEntry>,
) -> Result<ResponseBody, Refused> {
    check_acks(acks)?;
    check_names(entries.iter().map(|e| (e.topic.as_str(), e.partition)))?;
    for e in &entries {
        super::internal_topics::refuse_client(&e.topic, "produce to")?;
    }
    let names: Vec<(String, i32)> = entries
        .iter()
        .map(|e| (e.topic.clone(), e.partition))
        .collect();
    let items = entries
        .into_iter()
        .map(|e| (e.topic, e.partition, e.records))
        .collect();
    let results = run_on_owners(shard, items, |group| {
        let ops = group
            .into_iter()
            .map(|(_, topic, partition, records)| {
                (topic, partition, PartitionOp::Produce { acks, records })
            })
            .collect();
        ShardOp::Partitions(ops)
    })
    .await;
    let produced = names
        .into_iter()
        .zip(results)
        .map(|((topic, partition), r)| match r {
            Ok(OpOk::Produced {
                base_offset,
                last_offset,
                log_append_time,
                ..
            }) => Produced {
                topic,
                partition,
                error: None,
                base_offset,
                last_offset,
                log_append_time,
            },
            other => Produced {
                topic,
                partition,
                error: Some(error_of(other)),
                base_offset: -1,
                last_offset: -1,
                log_append_time: -1,
            },
        })
        .collect();
    Ok(ResponseBody::MultiProduce(produced))
}

/// Kafka's rules within each shard: a shard reads its partitions in request order, each at
/// most its own `max_bytes` and what is left of the shard's share of the request's
/// `max_bytes` (shares in proportion to the partitions each shard serves, reserved from the
/// budgets before anything is read); only the request's first partition may exceed its
/// share by one batch. A partition left with no share is not read (offsets -1).
pub async fn fetch(
    shard: &Rc<Shard>,
    max_bytes: i32,
    entries: Vec<FetchEntry>,
    budget: &Budget,
    reservation: &mut Reservation,
) -> Result<ResponseBody, Refused> {
    check_names(entries.iter().map(|e| (e.topic.as_str(), e.partition)))?;
    if let Some(e) = entries.iter().find(|e| e.max_bytes <= 0) {
        return Err((
            ErrorCode::InvalidRequest,
            format!(
                "partition {}-{}: max_bytes must be positive, got {}",
                e.topic, e.partition, e.max_bytes
            ),
        ));
    }
    let total = fetch_bytes(shard, max_bytes, budget, reservation).await?;
    let reads = entries
        .iter()
        .map(|e| (e.topic.clone(), e.partition, e.offset, e.max_bytes as usize))
        .collect();
    let results = fetch_by_shard(shard, reads, total).await;
    let fetched = entries
        .into_iter()
        .zip(results)
        .map(|(e, r)| fetched(e, r))
        .collect();
    Ok(ResponseBody::MultiFetch(fetched))
}

/// Fetches (topic, partition, offset, partition max bytes) on their owner shards at once,
/// `total` bytes in all: each shard gets a share in proportion to the partitions it serves
/// and fills it in request order (`ShardOp::FetchInOrder`, Kafka's rules: only the
/// request's first partition may exceed its share by one batch). `OpOk::Done`: not read,
/// no share left. The native MultiFetch and the Kafka listener's Fetch both read this way.
pub(crate) async fn fetch_by_shard(
    shard: &Rc<Shard>,
    reads: Vec<(String, i32, i64, usize)>,
    total: usize,
) -> Vec<OpResult> {
    let count = reads.len().max(1);
    let items = reads
        .into_iter()
        .map(|(topic, partition, offset, max)| (topic, partition, (offset, max)))
        .collect();
    run_on_owners(shard, items, |group| {
        let share = total * group.len() / count;
        let first_at_least_one = group.first().is_some_and(|g| g.0 == 0);
        let reads = group
            .into_iter()
            .map(|(_, topic, partition, (offset, max))| (topic, partition, offset, max))
            .collect();
        ShardOp::FetchInOrder {
            reads,
            max_bytes: share.max(1),
            first_at_least_one,
        }
    })
    .await
}

/// A partition's part of the reply (`OpOk::Done`: not read, no share left).
fn fetched(e: FetchEntry, r: OpResult) -> Fetched {
    let (error, log_start_offset, log_end_offset, records) = match r {
        Ok(OpOk::Done) => (None, -1, -1, ByteChain::default()),
        Ok(OpOk::Fetched {
            log_start_offset,
            log_end_offset,
            records,
        }) => (None, log_start_offset, log_end_offset, records),
        other => (Some(error_of(other)), -1, -1, ByteChain::default()),
    };
    Fetched {
        topic: e.topic,
        partition: e.partition,
        error,
        log_start_offset,
        log_end_offset,
        records,
    }
}
