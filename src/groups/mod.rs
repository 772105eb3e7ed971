//! Consumer groups: committed offsets kept in shardlog's own log (an internal compacted
//! topic, `__consumer_offsets`, as Kafka keeps them) and a group coordinator with Kafka's
//! classic protocol. A group belongs to the shard that owns its offsets partition
//! (`abs(java hashCode(group)) % partitions`, Kafka's rule); requests for it are routed
//! there over the mesh, never shared.

pub(crate) mod coordinator;
pub(crate) mod group;
pub(crate) mod membership;
pub(crate) mod ops;
pub mod records;

use std::rc::Rc;

use ops::{GroupOp, GroupReply, ListedGroup};

use crate::catalog::topics::TopicMeta;
use crate::protocol::ErrorCode;
use crate::shard::messages::{OpOk, ShardOp};
use crate::shard::runtime::Shard;

pub use crate::catalog::internal_topics::OFFSETS_TOPIC;

/// Java's `String.hashCode` (over UTF-16 units), which Kafka's partition rule uses.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(u as i32))
}

/// The offsets partition (and so the coordinator) of a group.
pub fn partition_for(group: &str, partitions: usize) -> usize {
    (java_hash(group).unsigned_abs() as usize) % partitions.max(1)
}

/// The offsets topic, created (compacted) on first use as Kafka does.
async fn offsets_topic(shard: &Rc<Shard>) -> Result<TopicMeta, (ErrorCode, String)> {
    if let Some(meta) = shard.topic(OFFSETS_TOPIC) {
        return Ok(meta);
    }
    match shard.create_internal_topic(OFFSETS_TOPIC.into()).await {
        Ok(_) => {}
        Err((ErrorCode::TopicAlreadyExists, _)) => {}
        Err(e) => return Err(e),
    }
    shard.topic(OFFSETS_TOPIC).ok_or((
        ErrorCode::NotReady,
        "the offsets topic is being created".to_string(),
    ))
}

/// Runs a group operation on the group's coordinator shard.
pub async fn route(
    shard: &Rc<Shard>,
    group: String,
    op: GroupOp,
) -> Result<GroupReply, (ErrorCode, String)> {
    let meta = offsets_topic(shard).await?;
    let owner = meta.owners[partition_for(&group, meta.owners.len())] as usize;
    if owner == shard.id {
        return Ok(coordinator::handle(shard, group, op).await);
    }
    match shard.remote(owner, ShardOp::Group { group, op }).await? {
        OpOk::Group(reply) => Ok(reply),
        other => Err((
            ErrorCode::Internal,
            format!("unexpected group reply {other:?}"),
        )),
    }
}

/// Every group of every shard.
pub async fn list_all(shard: &Rc<Shard>) -> Result<Vec<ListedGroup>, (ErrorCode, String)> {
    let loading = |code| {
        let msg = "a coordinator is still loading its offsets partitions; retry shortly";
        (crate::kafka_codes::native_code(code), msg.to_string())
    };
    let mut all = coordinator::list(shard).await.map_err(loading)?;
    for peer in (0..shard.n).filter(|&p| p != shard.id) {
        match shard.remote(peer, ShardOp::ListGroups).await? {
            OpOk::Group(GroupReply::Listed(groups)) => all.extend(groups),
            OpOk::Group(GroupReply::Code(code)) => return Err(loading(code)),
            other => return Err((ErrorCode::Internal, format!("unexpected reply {other:?}"))),
        }
    }
    all.sort();
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_map_to_partitions_as_kafka_maps_them() {
        // Java: "my-group".hashCode() == 1_507_172_727... computed the same way.
        assert_eq!(java_hash(""), 0);
        assert_eq!(java_hash("a"), 97);
        assert_eq!(java_hash("ab"), 97 * 31 + 98);
        // Overflow wraps as in Java; abs of i32::MIN stays in range.
        let long = "consumer-group-with-a-long-name";
        assert!(partition_for(long, 50) < 50);
        assert_eq!(partition_for("ab", 50), (97 * 31 + 98) % 50);
    }
}
