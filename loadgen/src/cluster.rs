//! Finding where a topic's partitions live. ClusterMetadata names each partition's leader
//! and every node's native listener, so on a cluster each partition's requests go to the
//! node that leads it (one node: the bootstrap itself). With shard-aware routing they go
//! on to the owner shard's own port on that node (no forwarding hop), as that node's
//! Metadata gives it.

use std::collections::BTreeSet;

use shardlog::protocol::{ClusterMetadataResponse, ErrorCode};

#[derive(Debug, Clone)]
pub struct PartitionRoute {
    pub partition: i32,
    /// The node leading the partition, and its native listener.
    pub node: i32,
    pub node_addr: String,
    /// Where the partition's requests go: the owner shard's port with shard-aware routing,
    /// else `node_addr`.
    pub addr: String,
}

/// A live node: its id and native listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub addr: String,
}

/// Routes for every partition of `topic`, asked of the first node of `bootstrap` (a
/// comma-separated list) that answers.
pub async fn routes(
    bootstrap: &str,
    topic: &str,
    shard_aware: bool,
) -> Result<Vec<PartitionRoute>, String> {
    Ok(placement(bootstrap, topic, shard_aware).await?.0)
}

/// [`routes`], and every live node of the cluster (followers too: they work for the
/// writes as well).
pub async fn placement(
    bootstrap: &str,
    topic: &str,
    shard_aware: bool,
) -> Result<(Vec<PartitionRoute>, Vec<Node>), String> {
    let (mut c, reached) = crate::connect::connect_first(bootstrap).await?;
    let cluster = c
        .cluster_metadata(Some(vec![topic.to_string()]))
        .await
        .map_err(|e| format!("ClusterMetadata of {reached}: {e}"))?;
    let mut routes = leader_routes(&cluster, topic, &reached)?;
    if shard_aware {
        to_owner_shards(&mut routes, topic).await?;
    }
    let nodes = cluster.nodes.iter().filter_map(|n| {
        let addr = node_address(&cluster, n.node_id, &reached)?;
        Some(Node {
            id: n.node_id,
            addr,
        })
    });
    Ok((routes, nodes.collect()))
}

/// A node's native listener; the answering node's is the address it was reached on.
fn node_address(cluster: &ClusterMetadataResponse, id: i32, reached: &str) -> Option<String> {
    match id == cluster.node_id {
        true => Some(reached.to_string()),
        false => cluster.node(id).map(|n| format!("{}:{}", n.host, n.port)),
    }
}

/// Each partition at its leader's native listener (the answering node at the address it
/// was reached on).
fn leader_routes(
    cluster: &ClusterMetadataResponse,
    topic: &str,
    reached: &str,
) -> Result<Vec<PartitionRoute>, String> {
    let t = cluster
        .topic(topic)
        .filter(|t| t.error_code == ErrorCode::None)
        .ok_or_else(|| format!("topic {topic:?} does not exist (create it, or pass --create)"))?;
    let each = t.partitions.iter().map(|p| {
        let node_addr = node_address(cluster, p.leader, reached).ok_or_else(|| {
            format!(
                "partition {} of {topic:?} has no live leader (node {}); run again once one is elected",
                p.partition, p.leader
            )
        })?;
        Ok(PartitionRoute {
            partition: p.partition,
            node: p.leader,
            addr: node_addr.clone(),
            node_addr,
        })
    });
    each.collect()
}

/// Points each route at its owner shard's own port on its node.
async fn to_owner_shards(routes: &mut [PartitionRoute], topic: &str) -> Result<(), String> {
    let nodes: BTreeSet<String> = routes.iter().map(|r| r.node_addr.clone()).collect();
    for node_addr in nodes {
        let mut c = crate::connect::connect(&node_addr).await?;
        let md = c
            .metadata(Some(vec![topic.to_string()]))
            .await
            .map_err(|e| format!("Metadata of {node_addr}: {e}"))?;
        let Some(t) = md.topic(topic) else { continue };
        // Shard ports are reached on the node's host (it may listen on 0.0.0.0).
        let host = node_addr.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h);
        for r in routes.iter_mut().filter(|r| r.node_addr == node_addr) {
            let owner = t.partitions.iter().find(|p| p.partition == r.partition);
            if let Some(port) = owner.and_then(|p| md.shard_port(p.owner_shard)) {
                r.addr = format!("{host}:{port}");
            }
        }
    }
    Ok(())
}

/// Whether every leader knows it leads: each node the routes name, asked itself, names
/// itself the leader of those partitions (a node's view of the cluster can trail the one
/// that answered the routes by a moment).
pub async fn leaders_agree(routes: &[PartitionRoute], topic: &str) -> Result<(), String> {
    let nodes: BTreeSet<(i32, String)> = routes
        .iter()
        .map(|r| (r.node, r.node_addr.clone()))
        .collect();
    for (node, addr) in nodes {
        let mut c = crate::connect::connect(&addr).await?;
        let asked = c.cluster_metadata(Some(vec![topic.to_string()])).await;
        let seen = asked.map_err(|e| format!("ClusterMetadata of {addr}: {e}"))?;
        let own = leader_routes(&seen, topic, &addr)?;
        let led = |p: i32| own.iter().any(|o| o.partition == p && o.node == node);
        if let Some(r) = routes.iter().find(|r| r.node == node && !led(r.partition)) {
            return Err(format!(
                "node {node} does not lead partition {} yet",
                r.partition
            ));
        }
    }
    Ok(())
}

/// How many of the routes each node leads.
pub fn partitions_led(routes: &[PartitionRoute], node: i32) -> usize {
    routes.iter().filter(|r| r.node == node).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shardlog::protocol::{NodeInfo, PartitionPlacement, TopicPlacement};

    fn cluster(leaders: &[i32]) -> ClusterMetadataResponse {
        let node = |id: i32| NodeInfo {
            node_id: id,
            host: "127.0.0.1".into(),
            port: 7000 + id,
            rack: String::new(),
            epoch: 1,
            shutting_down: false,
        };
        let partitions = leaders
            .iter()
            .enumerate()
            .map(|(p, &leader)| PartitionPlacement {
                partition: p as i32,
                leader,
                leader_epoch: 0,
                replicas: vec![1, 2],
                isr: vec![1, 2],
                offline: Vec::new(),
            });
        ClusterMetadataResponse {
            cluster_id: "c".into(),
            controller_id: 1,
            controller_epoch: 5,
            node_id: 1,
            nodes: vec![node(1), node(2)],
            topics: vec![TopicPlacement {
                name: "t".into(),
                error_code: ErrorCode::None,
                partitions: partitions.collect(),
            }],
        }
    }

    #[test]
    fn each_partition_goes_to_its_leader_and_the_answering_node_as_reached() {
        let routes = leader_routes(&cluster(&[1, 2, 2]), "t", "localhost:7001").unwrap();
        let at: Vec<(i32, &str)> = routes.iter().map(|r| (r.node, r.addr.as_str())).collect();
        assert_eq!(
            at,
            [
                (1, "localhost:7001"),
                (2, "127.0.0.1:7002"),
                (2, "127.0.0.1:7002")
            ]
        );
        assert_eq!(
            (partitions_led(&routes, 1), partitions_led(&routes, 2)),
            (1, 2)
        );
        assert_eq!(
            node_address(&cluster(&[1]), 2, "x:1").as_deref(),
            Some("127.0.0.1:7002")
        );
    }

    #[test]
    fn a_partition_without_a_live_leader_is_named() {
        let e = leader_routes(&cluster(&[1, -1]), "t", "a:1").unwrap_err();
        assert!(e.contains("partition 1 of \"t\" has no live leader"), "{e}");
        let e = leader_routes(&cluster(&[1]), "u", "a:1").unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }
}
