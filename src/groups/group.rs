//! One consumer group's state, as Kafka's classic `ClassicGroup` keeps it: its state
//! (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead), generation, chosen
//! protocol, leader, members (with their parked JoinGroup and SyncGroup replies) and
//! committed offsets. Pure state changes; the waiting and the timers are in `membership.rs`.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use bytes::Bytes;
use glommio::channels::local_channel::LocalSender;

use super::code::GroupCode;
use super::ops::Committed;
use super::ops::{JoinResponse, MemberDescription, SyncResponse};
use crate::TopicPartition;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl State {
    /// Kafka's names (DescribeGroups, ListGroups, kafka-consumer-groups).
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
            State::Dead => "Dead",
        }
    }
}

pub struct Member {
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// A JoinGroup waiting for the join phase to end.
    pub join_waiter: Option<LocalSender<JoinResponse>>,
    /// A SyncGroup waiting for the leader's assignments.
    pub sync_waiter: Option<LocalSender<SyncResponse>>,
    /// Expired (removed, triggering a rebalance) when no heartbeat, join or sync arrives by
    /// then; not while its JoinGroup is parked.
    pub deadline: Instant,
}

impl Member {
    pub fn touch(&mut self) {
        self.deadline =
            Instant::now() + std::time::Duration::from_millis(self.session_timeout_ms as u64);
    }

    pub fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

pub struct Group {
    pub state: State,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, until they join (or expire).
    pub pending: HashMap<String, Instant>,
    pub offsets: BTreeMap<TopicPartition, Committed>,
    /// Wakes the running join phase when a member (re)joins or leaves.
    pub nudge: Option<LocalSender<()>>,
    /// Whether a session-expiry task watches the members.
    pub expiry_running: bool,
    /// Offsets sent to this group inside transactions not yet ended.
    pub pending_txn_offsets: usize,
    /// The leader's assignments are being stored (its SyncGroup waits for the write).
    pub storing: bool,
}

impl Default for Group {
    fn default() -> Self {
        Group {
            state: State::Empty,
            protocol_type: None,
            protocol: None,
            generation: 0,
            leader: None,
            members: BTreeMap::new(),
            pending: HashMap::new(),
            pending_txn_offsets: 0,
            storing: false,
            offsets: BTreeMap::new(),
            nudge: None,
            expiry_running: false,
        }
    }
}

impl Group {
    /// Whether `protocols` share a protocol with every current member.
    pub fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return true;
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(name, _)| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == name))
            })
    }

    /// Kafka's vote: among the protocols every member supports, each member votes for its
    /// first; most votes wins (ties: the earlier in the leader's list).
    pub fn select_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(x, _)| x == *n))
            })
            .collect();
        let mut votes: Vec<(usize, &String)> = candidates.iter().map(|c| (0, *c)).collect();
        for m in self.members.values() {
            if let Some((_, vote)) = m.protocols.iter().find(|(n, _)| candidates.contains(&n)) {
                if let Some(v) = votes.iter_mut().find(|(_, c)| *c == vote) {
                    v.0 += 1;
                }
            }
        }
        let best = votes.iter().map(|v| v.0).max()?;
        votes.iter().find(|v| v.0 == best).map(|v| v.1.clone())
    }

    /// Every member has rejoined: the join phase may end early.
    pub fn all_joined(&self) -> bool {
        self.members.values().all(|m| m.join_waiter.is_some()) && self.pending.is_empty()
    }

    pub fn describe_members(&self) -> Vec<MemberDescription> {
        let protocol = self.protocol.clone().unwrap_or_default();
        self.members
            .iter()
            .map(|(id, m)| MemberDescription {
                member_id: id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: m.metadata_for(&protocol),
                assignment: m.assignment.clone(),
            })
            .collect()
    }

    /// Tells parked SyncGroups that the generation they waited for is over.
    pub fn fail_parked_syncs(&mut self, error: GroupCode) {
        for m in self.members.values_mut() {
            if let Some(w) = m.sync_waiter.take() {
                let _ = w.try_send(SyncResponse {
                    error,
                    ..Default::default()
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(protocols: &[&str]) -> Member {
        Member {
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            protocols: protocols
                .iter()
                .map(|p| (p.to_string(), Bytes::new()))
                .collect(),
            assignment: Bytes::new(),
            join_waiter: None,
            sync_waiter: None,
            deadline: Instant::now(),
        }
    }

    #[test]
    fn the_protocol_is_chosen_by_the_members_votes_among_common_ones() {
        let mut g = Group {
            protocol_type: Some("consumer".into()),
            ..Group::default()
        };
        g.members
            .insert("a".into(), member(&["range", "roundrobin"]));
        g.members
            .insert("b".into(), member(&["roundrobin", "range"]));
        g.members
            .insert("c".into(), member(&["roundrobin", "sticky"]));
        assert_eq!(g.select_protocol().as_deref(), Some("roundrobin"));
        assert!(g.supports("consumer", &[("roundrobin".into(), Bytes::new())]));
        assert!(!g.supports("consumer", &[("range".into(), Bytes::new())]));
        assert!(!g.supports("connect", &[("roundrobin".into(), Bytes::new())]));
    }
}
