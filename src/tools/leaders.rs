//! Where a tool sends a partition's requests. On a cluster only a partition's leader
//! serves its produce, fetch, offsets and deletes (others answer NotLeader), so the tool
//! asks the node it reached first for the native ClusterMetadata (each partition's leader,
//! every node's native listener) and keeps one connection per leader, opened on first use
//! under the same security. On a single node every partition is the node's own.

use std::collections::HashMap;

use crate::client::{Client, ClientError};
use crate::protocol::{ClusterMetadataResponse, ErrorCode};

use super::ServerAddr;

pub struct Leaders {
    server: ServerAddr,
    topics: Vec<String>,
    /// The node the tool reached first (groups and admin requests stay there).
    home: Client,
    home_id: i32,
    /// Each topic's partitions' leaders (-1: none live now); empty when the server has
    /// no ClusterMetadata (every partition is then the home node's).
    leader_of: HashMap<String, Vec<i32>>,
    /// Every live node's native listener.
    address_of: HashMap<i32, String>,
    others: HashMap<i32, Client>,
}

impl Leaders {
    /// The leaders of `topics`' partitions, asked of `home` (a connection to `server`).
    pub async fn of(home: Client, server: &ServerAddr, topics: &[&str]) -> Result<Leaders, String> {
        let mut leaders = Leaders {
            server: server.clone(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            home,
            home_id: 0,
            leader_of: HashMap::new(),
            address_of: HashMap::new(),
            others: HashMap::new(),
        };
        leaders.refresh().await?;
        Ok(leaders)
    }

    /// Asks again (after a NotLeader: leadership moved).
    pub async fn refresh(&mut self) -> Result<(), String> {
        let asked = self.home.cluster_metadata(Some(self.topics.clone())).await;
        let cluster = match asked {
            Ok(cluster) => cluster,
            // A server older than ClusterMetadata is one node.
            Err(ClientError::Server {
                code: ErrorCode::UnsupportedApiKey | ErrorCode::UnsupportedVersion,
                ..
            }) => return Ok(()),
            Err(e) => return Err(format!("ClusterMetadata: {e}")),
        };
        self.learn(&cluster);
        Ok(())
    }

    fn learn(&mut self, cluster: &ClusterMetadataResponse) {
        self.home_id = cluster.node_id;
        self.leader_of.clear();
        for t in &cluster.topics {
            let in_order = t.partitions.iter().enumerate();
            assert!(
                in_order.clone().all(|(i, p)| p.partition == i as i32),
                "ClusterMetadata lists partitions in order"
            );
            let leaders = t.partitions.iter().map(|p| p.leader).collect();
            self.leader_of.insert(t.name.clone(), leaders);
        }
        self.address_of = (cluster.nodes.iter())
            .map(|n| (n.node_id, format!("{}:{}", n.host, n.port)))
            .collect();
        // A node that no longer leads anything is not worth a connection.
        let leading: Vec<i32> = self.leader_of.values().flatten().copied().collect();
        self.others.retain(|id, _| leading.contains(id));
    }

    /// After the home node was lost: `home` is a new connection to the bootstrap; every
    /// other connection is dropped (they may be gone too) and the leaders asked again.
    pub async fn start_over(&mut self, home: Client) -> Result<(), String> {
        self.home = home;
        self.others.clear();
        self.refresh().await
    }

    /// The node the tool reached first.
    pub fn home(&mut self) -> &mut Client {
        &mut self.home
    }

    /// The connection to the leader of `topic`'s `partition`.
    pub async fn client(&mut self, topic: &str, partition: i32) -> Result<&mut Client, String> {
        let leaders = self.leader_of.get(topic);
        let leader = match leaders.and_then(|l| l.get(partition as usize)) {
            None => return Ok(&mut self.home),
            Some(&leader) if leader == self.home_id => return Ok(&mut self.home),
            Some(&-1) => {
                return Err(format!(
                    "partition {partition} of {topic:?} has no leader now (an election is under way): try again"
                ))
            }
            Some(&leader) => leader,
        };
        if !self.others.contains_key(&leader) {
            let addr = self.address_of.get(&leader).ok_or_else(|| {
                format!("the leader of partition {partition}, node {leader}, is not live")
            })?;
            let client = super::connect_one(addr, &self.server).await?;
            self.others.insert(leader, client);
        }
        Ok(self.others.get_mut(&leader).expect("connected above"))
    }
}

impl Leaders {
    /// One round trip on every connection (acks=0 has no replies: this shows the
    /// requests sent before were read).
    pub async fn round_trip_all(&mut self) -> Result<(), String> {
        let others = self.others.values_mut();
        for c in std::iter::once(&mut self.home).chain(others) {
            c.metadata(Some(vec![])).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Whether an error says the node asked does not lead the partition (any more).
pub fn is_not_leader(e: &ClientError) -> bool {
    matches!(e, ClientError::Server { code, .. } if *code == ErrorCode::NotLeader)
}
