//! Long polls (Kafka's Fetch max_wait_ms / min_bytes): a request parks until one of its
//! partitions grows, its wait expires or it is dropped, with no polling loop. One wait per
//! owner shard, all at once; the first to end drops the others, and a dropped wait on
//! another shard is cancelled there (`MeshMsg::Cancel`), so nothing outlives the request.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::io::deadline::before;
use crate::shard::messages::ShardOp;
use crate::shard::partition::append_watch::AnyAppend;
use crate::shard::runtime::Shard;
use crate::TopicPartition;

/// A partition to wait on, with the log end already seen.
pub type Wait = (TopicPartition, i64);

pub use crate::shard::messages::Reader;

/// Waits on this shard until any of `waits` passes its end, at most `timeout_ms`. Returns
/// at once if one of them is not open here (the requester's next read says why).
pub async fn wait_here(shard: &Shard, waits: &[Wait], timeout_ms: u64, reader: Reader) {
    if let Some(watches) = shard.append_watches(waits, reader) {
        assert_eq!(
            watches.len(),
            waits.len(),
            "a watch per partition waited on"
        );
        before(Duration::from_millis(timeout_ms), AnyAppend::new(watches)).await;
    }
}

/// Waits until any of `waits` grows past the end seen, or `deadline`.
pub async fn wait_any(shard: &Rc<Shard>, waits: Vec<Wait>, deadline: Instant, reader: Reader) {
    let mut by_owner: BTreeMap<usize, Vec<Wait>> = BTreeMap::new();
    for (tp, after) in waits {
        let Ok(owner) = shard.owner_of(&tp.topic, tp.partition) else {
            // Gone since it was read: read again now.
            return;
        };
        let waits = by_owner.entry(owner).or_default();
        if !waits.iter().any(|(t, _)| *t == tp) {
            waits.push((tp, after));
        }
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let timeout_ms = left.as_millis() as u64;
    // One wait per owner shard, each on partitions that shard owns, none twice.
    debug_assert!(by_owner.iter().all(|(&o, w)| o < shard.n && !w.is_empty()));
    let per_shard = by_owner.into_iter().map(|(owner, waits)| {
        let shard = shard.clone();
        Box::pin(async move {
            if owner == shard.id {
                wait_here(&shard, &waits, timeout_ms, reader).await;
            } else {
                let op = ShardOp::WaitForAppends {
                    waits,
                    timeout_ms,
                    reader,
                };
                let _ = shard.remote(owner, op).await;
            }
        }) as Pin<Box<dyn Future<Output = ()>>>
    });
    // The first wait to end ends them all (`or` drops the other side).
    if let Some(first) = per_shard.reduce(|a, b| Box::pin(futures_lite::future::or(a, b))) {
        before(left, first).await;
    }
}
