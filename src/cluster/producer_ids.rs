//! Producer ids in cluster mode: every node hands ids out of blocks it claims from one
//! etcd key (the first id no node has claimed), each claim a compare-and-swap on the
//! revision it read, so no two nodes ever hold the same block (Kafka's KIP-730 blocks,
//! with etcd in the controller's place). A single node keeps its blocks in its own file
//! (`catalog/producer_ids.rs`).

use crate::cluster::etcd::{Compare, Etcd, Op};
use crate::cluster::{ClusterError, Keys, TopicRefused};

/// How many times a claim that lost a race to another node's is tried again.
const ATTEMPTS: usize = 8;

/// Claims `size` ids no node has held: the first of them.
pub async fn claim_block(etcd: &Etcd, keys: &Keys, size: i64) -> Result<i64, TopicRefused> {
    assert!(size > 0, "a block holds at least one id");
    let key = keys.producer_id_block();
    for _ in 0..ATTEMPTS {
        let (_, kvs) = etcd.range_prefix(&key).await?;
        let held = kvs.iter().find(|kv| kv.key == key);
        let (start, guard) = match held {
            Some(kv) => (
                block_start(&kv.value)?,
                Compare::ModifiedAt(key.clone(), kv.mod_revision),
            ),
            None => (0, Compare::CreatedAt(key.clone(), 0)),
        };
        let end = start.checked_add(size).ok_or_else(|| {
            ClusterError::Etcd(format!("{key}: producer ids are used up (next {start})"))
        })?;
        assert!(end > start, "a claimed block is not empty");
        let put = Op::Put(key.clone(), end.to_string().into_bytes());
        if etcd.txn(&[guard], &[put]).await? {
            tracing::debug!(start, end, "claimed a block of producer ids");
            return Ok(start);
        }
    }
    Err(TopicRefused::Raced)
}

/// The first unclaimed id, as the key holds it (decimal text).
fn block_start(value: &[u8]) -> Result<i64, ClusterError> {
    let text = std::str::from_utf8(value).unwrap_or_default();
    match text.trim().parse::<i64>() {
        Ok(next) if next >= 0 => Ok(next),
        _ => Err(ClusterError::Etcd(format!(
            "the producer id block key holds {text:?}, not a non-negative id"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_holds_a_decimal_id() {
        assert_eq!(block_start(b"4000").unwrap(), 4000);
        assert!(block_start(b"-1").is_err());
        assert!(block_start(b"x").is_err());
    }
}
