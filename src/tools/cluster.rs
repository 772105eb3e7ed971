//! `shardlog cluster describe`: the live nodes with their listeners and how many
//! partitions each leads and holds replicas of, and the controller, as any node's Kafka
//! listener tells it (DescribeCluster and Metadata), with the epochs Kafka's APIs do not
//! carry (the controller's and each node's registration) from its native ClusterMetadata.
//! `shardlog cluster decommission --broker N`: every replica off one broker
//! (`decommission.rs`).

use std::io::Write;

use super::replica_view::{self, ReplicaView};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClusterAction {
    Describe,
    Decommission,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ClusterArgs {
    pub action: ClusterAction,
    /// decommission: the broker whose replicas all move to the other brokers.
    #[arg(long)]
    pub broker: Option<i32>,
    /// decommission: how long to wait for the moves to finish (they go on after).
    #[arg(long, default_value_t = 600_000)]
    pub wait_ms: u64,
    #[command(flatten)]
    pub server: super::ServerAddr,
}

pub async fn run(args: ClusterArgs, out: &mut dyn Write) -> Result<(), String> {
    let server = &args.server;
    if args.action == ClusterAction::Decommission {
        let broker = args
            .broker
            .ok_or("cluster decommission needs --broker ID (the broker to empty)")?;
        let wait = std::time::Duration::from_millis(args.wait_ms);
        return super::decommission::run(server, broker, wait, out);
    }
    let mut native = super::connect(server).await?;
    let asked = native.cluster_metadata(Some(Vec::new())).await;
    let epochs = Epochs::of(&asked.map_err(|e| format!("ClusterMetadata: {e}"))?);
    let mut kafka =
        super::probe::kafka_client_of(&server.bootstrap, &server.client, server.timeout_ms)?;
    let view = replica_view::read(&mut kafka, None)?;
    describe(&view, &epochs, out).map_err(|e| e.to_string())
}

/// The epochs Kafka's DescribeCluster does not carry.
#[derive(Debug, Default)]
struct Epochs {
    controller: i64,
    /// (node id, registration epoch)
    nodes: Vec<(i32, i64)>,
}

impl Epochs {
    fn of(cluster: &crate::protocol::ClusterMetadataResponse) -> Epochs {
        Epochs {
            controller: cluster.controller_epoch,
            nodes: cluster.nodes.iter().map(|n| (n.node_id, n.epoch)).collect(),
        }
    }

    /// A node's epoch; "-" for one the native view does not list (it joined or left
    /// between the two questions).
    fn of_node(&self, id: i32) -> String {
        let found = self.nodes.iter().find(|(n, _)| *n == id);
        found.map_or("-".to_string(), |(_, epoch)| epoch.to_string())
    }
}

/// Kafka's cluster id, the controller, then one line per live node.
fn describe(view: &ReplicaView, epochs: &Epochs, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "ClusterId: {}\tController: {}\tControllerEpoch: {}\tNodes: {}\tPartitions: {}",
        view.cluster_id,
        view.controller,
        epochs.controller,
        view.nodes.len(),
        view.partitions.len()
    )?;
    for node in &view.nodes {
        let placed = view.partitions.values();
        let leaders = placed.clone().filter(|r| r.leader == node.id).count();
        let replicas = placed.filter(|r| r.replicas.contains(&node.id)).count();
        assert!(leaders <= replicas, "a leader holds a replica");
        let rack = node.rack.as_deref().unwrap_or("-");
        writeln!(
            out,
            "\tNode: {}\tHost: {}\tPort: {}\tRack: {rack}\tLeaders: {leaders}\tReplicas: {replicas}\tEpoch: {}",
            node.id, node.host, node.port, epochs.of_node(node.id)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::replica_view::{Node, Replicas};

    #[test]
    fn each_node_counts_its_leaderships_and_replicas() {
        let node = |id: i32| Node {
            id,
            host: "127.0.0.1".into(),
            port: 9000 + id,
            rack: None,
        };
        let placed = |leader: i32, replicas: Vec<i32>| Replicas {
            leader,
            isr: replicas.clone(),
            replicas,
            offline: Vec::new(),
        };
        let view = ReplicaView {
            cluster_id: "4f1c0de5a1b2c3d4e5f60718293a4b5c".into(),
            controller: 2,
            nodes: vec![node(1), node(2)],
            partitions: [
                (("t".to_string(), 0), placed(1, vec![1, 2])),
                (("t".to_string(), 1), placed(2, vec![2, 1])),
                (("u".to_string(), 0), placed(2, vec![2])),
            ]
            .into(),
        };
        let epochs = Epochs {
            controller: 41,
            nodes: vec![(1, 17)],
        };
        let mut out = Vec::new();
        describe(&view, &epochs, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("ClusterId: 4f1c0de5a1b2c3d4e5f60718293a4b5c\tController: 2\tControllerEpoch: 41\tNodes: 2\tPartitions: 3\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "Node: 1\tHost: 127.0.0.1\tPort: 9001\tRack: -\tLeaders: 1\tReplicas: 2\tEpoch: 17\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "Node: 2\tHost: 127.0.0.1\tPort: 9002\tRack: -\tLeaders: 2\tReplicas: 3\tEpoch: -\n"
            ),
            "{text}"
        );
    }
}
