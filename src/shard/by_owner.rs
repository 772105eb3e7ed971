//! Work on many partitions at once: grouped by owner shard, every group run at the same
//! time, locally or as one mesh message per shard (`ShardOp::Partitions`,
//! `ShardOp::FetchInOrder`), so a request costs one hop per shard, not per partition. The
//! native MultiProduce/MultiFetch and the Kafka listener's Fetch use it.

use std::collections::HashMap;
use std::rc::Rc;

use super::messages::{FetchRead, ShardOp};
use super::Shard;
use crate::broker_error::BrokerError;
use crate::partition_ops::{Isolation, OpOk, OpResult};
use crate::protocol::ErrorCode;
use crate::TopicPartition;

/// The error of a reply that is not the one the operation answers.
pub(crate) fn unexpected(got: OpOk) -> BrokerError {
    BrokerError::new(ErrorCode::Internal, format!("unexpected result {got:?}"))
}

/// One partition's work in a request: its place in the request, name and what to do.
pub(crate) type Item<T> = (usize, TopicPartition, T);

/// Groups `items` by owner shard and runs each group as the `ShardOp` that `make` builds
/// from it (which must answer `OpOk::Results`, one per item in order), every group at once:
/// locally or as one mesh message. Results in the order of `items`.
pub(crate) async fn run_on_owners<T>(
    shard: &Rc<Shard>,
    items: Vec<(TopicPartition, T)>,
    make: impl Fn(Vec<Item<T>>) -> ShardOp,
) -> Vec<OpResult> {
    let mut results: Vec<Option<OpResult>> = (0..items.len()).map(|_| None).collect();
    let mut by_owner: HashMap<usize, Vec<Item<T>>> = HashMap::new();
    for (i, (tp, work)) in items.into_iter().enumerate() {
        match shard.owner_of(&tp.topic, tp.partition) {
            Ok(owner) => by_owner.entry(owner).or_default().push((i, tp, work)),
            Err(e) => results[i] = Some(Err(e)),
        }
    }
    let tasks: Vec<_> = by_owner
        .into_iter()
        .map(|(owner, group)| {
            let indexes: Vec<usize> = group.iter().map(|g| g.0).collect();
            let (n, op, shard) = (group.len(), make(group), shard.clone());
            let task = crate::tasks::spawn(async move {
                match shard.run_on(owner, op).await {
                    Ok(OpOk::Results(r)) if r.len() == n => r,
                    Ok(other) => vec![Err(unexpected(other)); n],
                    Err(e) => vec![Err(e); n],
                }
            });
            (indexes, task)
        })
        .collect();
    for (indexes, task) in tasks {
        let answers = task.await;
        assert_eq!(
            answers.len(),
            indexes.len(),
            "one answer per item of a group"
        );
        for (i, r) in indexes.into_iter().zip(answers) {
            assert!(results[i].is_none(), "item {i} answered twice");
            results[i] = Some(r);
        }
    }
    debug_assert!(
        results.iter().all(Option::is_some),
        "an item went unanswered"
    );
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(unexpected(OpOk::Done))))
        .collect()
}

/// Fetches partitions (each from an offset, at most its own max) on their owner shards at once,
/// `total` bytes in all: each shard gets a share in proportion to the partitions it serves
/// and fills it in request order (`ShardOp::FetchInOrder`, Kafka's rules: only the
/// request's first partition may exceed its share by one batch). `OpOk::Done`: not read,
/// no share left. The native MultiFetch and the Kafka listener's Fetch both read this way.
pub(crate) async fn fetch_by_shard(
    shard: &Rc<Shard>,
    reads: Vec<FetchRead>,
    total: usize,
    isolation: Isolation,
) -> Vec<OpResult> {
    let count = reads.len().max(1);
    let items = reads
        .into_iter()
        .map(|r| (r.tp, (r.offset, r.max_bytes)))
        .collect();
    run_on_owners(shard, items, |group| {
        let share = total * group.len() / count;
        let first_at_least_one = group.first().is_some_and(|g| g.0 == 0);
        let reads = group
            .into_iter()
            .map(|(_, tp, (offset, max_bytes))| FetchRead {
                tp,
                offset,
                max_bytes,
            })
            .collect();
        ShardOp::FetchInOrder {
            reads,
            max_bytes: share.max(1),
            first_at_least_one,
            isolation,
        }
    })
    .await
}
