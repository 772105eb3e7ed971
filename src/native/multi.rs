//! MultiProduce and MultiFetch (PROTOCOL.md, keys 21 and 22): the partitions of one request
//! are grouped by owner shard and every group runs at once, locally or as one mesh message
//! per shard (`ShardOp::Partitions`), so a client pays one round trip for all of them and
//! the server one hop per shard, not per partition.

use std::collections::HashSet;
use std::rc::Rc;

use crate::admission::budget::{Budget, Reservation};
use crate::broker_error::BrokerError;
use crate::io::chain::ByteChain;
use crate::native::checks::{check_acks, fetch_bytes};
use crate::partition_ops::{Isolation, OpOk, OpResult, PartitionOp};
use crate::protocol::multi::{FetchEntry, Fetched, ProduceEntry, Produced, MAX_PARTITIONS};
use crate::protocol::{ErrorCode, ResponseBody};
use crate::shard::messages::FetchRead;
use crate::shard::messages::ShardOp;
use crate::shard::runtime::Shard;
use crate::TopicPartition;

type Refused = BrokerError;

/// The partition names of a request: at most `MAX_PARTITIONS`, none twice.
fn check_names<'a>(names: impl ExactSizeIterator<Item = (&'a str, i32)>) -> Result<(), Refused> {
    if names.len() > MAX_PARTITIONS {
        return Err(BrokerError::new(
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
            return Err(BrokerError::new(
                ErrorCode::InvalidRequest,
                format!("partition {topic}-{partition} is named twice"),
            ));
        }
    }
    Ok(())
}

/// The error of a result that is not the one expected.
fn error_of(r: OpResult) -> Refused {
    match r {
        Err(e) => e,
        Ok(other) => unexpected(other),
    }
}

use crate::shard::by_owner::{fetch_by_shard, run_on_owners, unexpected};

pub async fn produce(
    shard: &Rc<Shard>,
    acks: i16,
    entries: Vec<ProduceEntry>,
) -> Result<ResponseBody, Refused> {
    check_acks(acks)?;
    check_names(entries.iter().map(|e| (e.topic.as_str(), e.partition)))?;
    for e in &entries {
        crate::catalog::internal_topics::refuse_client(&e.topic, "produce to")?;
    }
    let names: Vec<(String, i32)> = entries
        .iter()
        .map(|e| (e.topic.clone(), e.partition))
        .collect();
    let items = entries
        .into_iter()
        .map(|e| (TopicPartition::new(e.topic, e.partition), e.records))
        .collect();
    let results = run_on_owners(shard, items, |group| {
        let ops = group
            .into_iter()
            .map(|(_, tp, records)| (tp, PartitionOp::produce(acks, records)))
            .collect();
        ShardOp::Partitions(ops)
    })
    .await;
    assert_eq!(
        results.len(),
        names.len(),
        "one result per partition produced"
    );
    let produced: Vec<Produced> = names
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
                error: Some(error_of(other).into_wire()),
                base_offset: -1,
                last_offset: -1,
                log_append_time: -1,
            },
        })
        .collect();
    debug_assert!(produced
        .iter()
        .all(|p| p.error.is_some() || p.base_offset <= p.last_offset));
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
        return Err(BrokerError::new(
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
        .map(|e| FetchRead {
            tp: TopicPartition::new(&*e.topic, e.partition),
            offset: e.offset,
            max_bytes: e.max_bytes as usize,
        })
        .collect();
    let results = fetch_by_shard(shard, reads, total, Isolation::ReadUncommitted).await;
    assert_eq!(
        results.len(),
        entries.len(),
        "one result per partition asked"
    );
    let fetched: Vec<Fetched> = entries
        .into_iter()
        .zip(results)
        .map(|(e, r)| fetched(e, r))
        .collect();
    // Only the first partition may exceed its share, by at most one batch.
    debug_assert!(
        fetched
            .iter()
            .skip(1)
            .map(|f| f.records.len())
            .sum::<usize>()
            <= total
    );
    Ok(ResponseBody::MultiFetch(fetched))
}

/// A partition's part of the reply (`OpOk::Done`: not read, no share left).
fn fetched(e: FetchEntry, r: OpResult) -> Fetched {
    let (error, log_start_offset, log_end_offset, records) = match r {
        Ok(OpOk::Done) => (None, -1, -1, ByteChain::default()),
        Ok(OpOk::Fetched {
            log_start_offset,
            log_end_offset,
            records,
            ..
        }) => (None, log_start_offset, log_end_offset, records),
        other => (
            Some(error_of(other).into_wire()),
            -1,
            -1,
            ByteChain::default(),
        ),
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
