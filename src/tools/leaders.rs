//! Where a tool sends a partition's requests. On a cluster only a partition's leader
//! serves its produce, fetch, offsets and deletes (others answer NotLeader), so the tool
//! asks the node it reached first for the native ClusterMetadata (each partition's leader,
//! every node's native listener) and keeps one connection per leader, opened on first use
//! under the same security. On a single node every partition is the node's own.

use std::collections::HashMap;

use crate::client::{Client, ClientError};
use crate::protocol::{ClusterMetadataResponse, ErrorCode, Request, ResponseBody};

use super::ServerAddr;

pub struct Leaders {
    server: ServerAddr,
    topics: Vec<String>,
    /// The node the tool reached first (it answers ClusterMetadata; its own partitions
    /// and admin requests stay on it).
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
        match cluster_of(&mut self.home, Some(self.topics.clone())).await? {
            Some(cluster) => self.learn(&cluster),
            None => Ok(()),
        }
    }

    fn learn(&mut self, cluster: &ClusterMetadataResponse) -> Result<(), String> {
        // What a server sent is checked, not asserted: the leaders are looked up by index.
        for t in &cluster.topics {
            let mut in_order = t.partitions.iter().enumerate();
            if !in_order.all(|(i, p)| p.partition == i as i32) {
                let why = "does not list its partitions 0, 1, ... in order";
                return Err(format!("ClusterMetadata of topic {:?} {why}", t.name));
            }
        }
        self.home_id = cluster.node_id;
        self.leader_of.clear();
        for t in &cluster.topics {
            let leaders = t.partitions.iter().map(|p| p.leader).collect();
            self.leader_of.insert(t.name.clone(), leaders);
        }
        self.address_of = (cluster.nodes.iter())
            .map(|n| (n.node_id, format!("{}:{}", n.host, n.port)))
            .collect();
        // A node that no longer leads anything is not worth a connection.
        let leading: Vec<i32> = self.leader_of.values().flatten().copied().collect();
        self.others.retain(|id, _| leading.contains(id));
        Ok(())
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

    /// One group request at `group`'s coordinator. While the coordinator is being created
    /// (the first group's use makes `__consumer_offsets`), elected, moved or loaded, a node
    /// answers NotReady: the leaders are asked again and the request resent, for up to
    /// `COORDINATOR_WAIT`.
    pub async fn at_coordinator(
        &mut self,
        group: &str,
        request: &Request,
    ) -> Result<ResponseBody, ClientError> {
        let deadline = std::time::Instant::now() + COORDINATOR_WAIT;
        loop {
            let client = self
                .coordinator(group)
                .await
                .map_err(ClientError::Protocol)?;
            let answer = client.call_once(request).await;
            let not_ready = match &answer {
                Err(e) => e.code() == Some(ErrorCode::NotReady),
                Ok(ResponseBody::OffsetCommit(codes)) => {
                    codes.iter().any(|(_, _, c)| *c == ErrorCode::NotReady)
                }
                Ok(_) => false,
            };
            if !not_ready || std::time::Instant::now() >= deadline {
                return answer;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
            self.refresh().await.map_err(ClientError::Protocol)?;
        }
    }

    /// The connection to `group`'s coordinator: the leader of its `__consumer_offsets`
    /// partition (as Kafka places groups). Ask for that topic among the leaders' topics;
    /// while it does not exist yet, the node reached.
    async fn coordinator(&mut self, group: &str) -> Result<&mut Client, String> {
        let offsets = crate::catalog::internal_topics::OFFSETS_TOPIC;
        let partitions = self.leader_of.get(offsets).map_or(0, Vec::len);
        if partitions == 0 {
            return Ok(&mut self.home);
        }
        let partition = crate::groups::partition_for(group, partitions) as i32;
        self.client(offsets, partition).await
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
            assert_ne!(
                leader, self.home_id,
                "the home node is never connected twice"
            );
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

/// The cluster as the server `client` reached sees it (`topics`' placement); None from a
/// server older than ClusterMetadata, which is one node.
pub async fn cluster_of(
    client: &mut Client,
    topics: Option<Vec<String>>,
) -> Result<Option<ClusterMetadataResponse>, String> {
    match client.cluster_metadata(topics).await {
        Ok(cluster) => Ok(Some(cluster)),
        Err(ClientError::Server {
            code: ErrorCode::UnsupportedApiKey | ErrorCode::UnsupportedVersion,
            ..
        }) => Ok(None),
        Err(e) => Err(format!("ClusterMetadata: {e}")),
    }
}

/// How long a group request waits for its coordinator (a new `__consumer_offsets` is
/// created, its leaders elected and their offsets loaded within seconds).
const COORDINATOR_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether an error says the node asked does not lead the partition (any more).
pub fn is_not_leader(e: &ClientError) -> bool {
    matches!(e, ClientError::Server { code, .. } if *code == ErrorCode::NotLeader)
}
