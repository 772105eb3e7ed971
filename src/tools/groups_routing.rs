//! `consumer-groups` on a cluster, as Kafka's AdminClient goes about it: a group's requests
//! belong to its coordinator and a partition's ListOffsets to its leader, so an answer of
//! NOT_COORDINATOR or NOT_LEADER_OR_FOLLOWER from the node the tool reached is asked again
//! of the node that FindCoordinator or Metadata names (over its Kafka listener, under the
//! same security); ListGroups asks every live node, as each lists the groups it
//! coordinates. On a single node nothing is ever redirected.

use std::collections::HashMap;
use std::time::Duration;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::client_config::ClientConfigArgs;
use super::native_groups::GroupsApi;
use crate::kafka::blocking_client::BlockingClient;
use crate::kafka_codes::{NOT_COORDINATOR, NOT_LEADER_OR_FOLLOWER};

pub struct Routed {
    home: Box<dyn GroupsApi>,
    home_addr: String,
    config: ClientConfigArgs,
    timeout: Duration,
    /// The home node's Kafka listener (asked for coordinators, leaders and the nodes),
    /// connected on first need.
    finder: Option<BlockingClient>,
    /// Other nodes' Kafka listeners, by address.
    others: HashMap<String, BlockingClient>,
}

/// What Metadata says: each (topic, partition)'s leader, and every live node's address.
struct Placement {
    leaders: HashMap<(String, i32), i32>,
    brokers: HashMap<i32, String>,
}

/// Where a request belongs.
enum Owner {
    Coordinator(String),
    Leader(String, i32),
}

impl Routed {
    pub fn new(
        home: Box<dyn GroupsApi>,
        home_addr: &str,
        config: ClientConfigArgs,
        timeout: Duration,
    ) -> Routed {
        Routed {
            home,
            home_addr: home_addr.to_string(),
            config,
            timeout,
            finder: None,
            others: HashMap::new(),
        }
    }

    /// A Kafka client of the node at `addr` (either listener), under the tool's security.
    fn kafka_client(&self, addr: &str) -> Result<BlockingClient, String> {
        let timeout_ms = self.timeout.as_millis() as u64;
        super::probe::kafka_client_of(addr, &self.config, timeout_ms)
    }

    /// The home node's Kafka client.
    fn finder(&mut self) -> Result<&mut BlockingClient, String> {
        if self.finder.is_none() {
            self.finder = Some(self.kafka_client(&self.home_addr)?);
        }
        Ok(self.finder.as_mut().expect("connected above"))
    }

    fn ask(&mut self, key: ApiKey, version: i16, r: RequestKind) -> Result<ResponseKind, String> {
        let finder = self.finder()?;
        finder
            .call(key, version, &r)
            .map_err(|e| format!("{key:?}: {e}"))
    }

    /// The Kafka listener of the node that owns a request; None when none is known now.
    fn locate(&mut self, owner: &Owner) -> Result<Option<String>, String> {
        match owner {
            Owner::Coordinator(group) => {
                let asked = FindCoordinatorRequest::default()
                    .with_key(StrBytes::from_string(group.clone()));
                let ResponseKind::FindCoordinator(r) = self.ask(
                    ApiKey::FindCoordinator,
                    1,
                    RequestKind::FindCoordinator(asked),
                )?
                else {
                    return Err("unexpected FindCoordinator reply".into());
                };
                Ok((r.error_code == 0).then(|| format!("{}:{}", r.host, r.port)))
            }
            Owner::Leader(topic, partition) => {
                let placed = self.placement(Some(topic))?;
                let leader = placed.leaders.get(&(topic.clone(), *partition));
                Ok(leader.and_then(|id| placed.brokers.get(id).cloned()))
            }
        }
    }

    /// Metadata: each partition's leader, and every live node's address.
    fn placement(&mut self, topic: Option<&str>) -> Result<Placement, String> {
        let topics = topic.map(|t| {
            let name = TopicName(StrBytes::from_string(t.to_string()));
            vec![metadata_request::MetadataRequestTopic::default().with_name(Some(name))]
        });
        let asked = MetadataRequest::default().with_topics(topics.or(Some(Vec::new())));
        let ResponseKind::Metadata(r) =
            self.ask(ApiKey::Metadata, 9, RequestKind::Metadata(asked))?
        else {
            return Err("unexpected Metadata reply".into());
        };
        let brokers = (r.brokers.iter())
            .map(|b| (b.node_id.0, format!("{}:{}", b.host, b.port)))
            .collect();
        let mut leaders = HashMap::new();
        for t in &r.topics {
            let name = t.name.as_ref().map_or(String::new(), |n| n.0.to_string());
            for p in &t.partitions {
                leaders.insert((name.clone(), p.partition_index), p.leader_id.0);
            }
        }
        Ok(Placement { leaders, brokers })
    }

    fn other(&mut self, addr: &str) -> Result<&mut BlockingClient, String> {
        if !self.others.contains_key(addr) {
            let client = self.kafka_client(addr)?;
            self.others.insert(addr.to_string(), client);
        }
        Ok(self.others.get_mut(addr).expect("connected above"))
    }

    /// ListGroups of every live node, merged (a group is listed by its coordinator only).
    /// Without the Kafka listener to find the nodes (it may be off on a single node), the
    /// node reached is the only one asked, and the tool says so.
    fn list_everywhere(&mut self, version: i16, r: &RequestKind) -> Result<ResponseKind, String> {
        let brokers = match self.placement(None) {
            Ok(placed) => placed.brokers,
            Err(e) => {
                eprintln!(
                    "note: listing the groups {} coordinates only ({e})",
                    self.home_addr
                );
                return self.home.call(ApiKey::ListGroups, version, r);
            }
        };
        let mut all = ListGroupsResponse::default();
        for addr in brokers.into_values() {
            let asked = self.other(&addr)?.call(ApiKey::ListGroups, version, r);
            let answer = asked.map_err(|e| format!("ListGroups of {addr}: {e}"))?;
            let ResponseKind::ListGroups(theirs) = answer else {
                return Err(format!("ListGroups of {addr}: another answer"));
            };
            if theirs.error_code != 0 {
                return Ok(ResponseKind::ListGroups(theirs));
            }
            all.groups.extend(theirs.groups);
        }
        all.groups.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
        all.groups.dedup_by(|a, b| a.group_id.0 == b.group_id.0);
        Ok(ResponseKind::ListGroups(all))
    }
}

impl GroupsApi for Routed {
    fn call(&mut self, key: ApiKey, version: i16, r: &RequestKind) -> Result<ResponseKind, String> {
        if let RequestKind::ListGroups(_) = r {
            return self.list_everywhere(version, r);
        }
        let answer = self.home.call(key, version, r)?;
        let Some(owner) = misdirected(r, &answer) else {
            return Ok(answer);
        };
        let Some(addr) = self.locate(&owner)? else {
            return Ok(answer);
        };
        let other = self.other(&addr)?;
        other.call(key, version, r).map_err(|e| e.to_string())
    }
}

/// Who owns a request its answer says was sent to the wrong node.
fn misdirected(r: &RequestKind, answer: &ResponseKind) -> Option<Owner> {
    let codes = super::retry::codes(answer);
    if codes.contains(&NOT_COORDINATOR) {
        return group_of(r).map(Owner::Coordinator);
    }
    if codes.contains(&NOT_LEADER_OR_FOLLOWER) {
        let RequestKind::ListOffsets(l) = r else {
            return None;
        };
        let t = l.topics.first()?;
        let p = t.partitions.first()?;
        return Some(Owner::Leader(t.name.0.to_string(), p.partition_index));
    }
    None
}

/// The group a group request is about (the tool asks about one at a time).
fn group_of(r: &RequestKind) -> Option<String> {
    let id = match r {
        RequestKind::DescribeGroups(d) => d.groups.first()?.0.to_string(),
        RequestKind::OffsetFetch(f) => f.group_id.0.to_string(),
        RequestKind::OffsetCommit(c) => c.group_id.0.to_string(),
        RequestKind::OffsetDelete(d) => d.group_id.0.to_string(),
        RequestKind::DeleteGroups(d) => d.groups_names.first()?.0.to_string(),
        _ => return None,
    };
    Some(id)
}
