//! Consumer groups: committed offsets kept in shardlog's own log (an internal compacted
//! topic, `__consumer_offsets`, as Kafka keeps them) and a group coordinator with Kafka's
//! classic protocol. A group belongs to the shard that owns its offsets partition
//! (`abs(java hashCode(group)) % partitions`, Kafka's rule); requests for it are routed
//! there over the mesh, never shared.

pub mod code;
pub(crate) mod coordinator;
pub(crate) mod group;
pub mod group_records;
pub mod host;
pub(crate) mod loading;
pub(crate) mod membership;
pub(crate) mod ops;
pub mod records;
pub(crate) mod requests;
pub mod service;
pub(crate) mod static_members;
pub(crate) mod txn_offsets;

pub use crate::catalog::internal_topics::OFFSETS_TOPIC;

/// Java's `String.hashCode` (over UTF-16 units), which Kafka's partition rule uses.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(u as i32))
}

/// The offsets partition (and so the coordinator) of a group.
pub fn partition_for(group: &str, partitions: usize) -> usize {
    let p = (java_hash(group).unsigned_abs() as usize) % partitions.max(1);
    assert!(p < partitions.max(1));
    p
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
