//! The properties every step must keep, and what a healed cluster must show.

use std::collections::BTreeMap;

use shardlog::replication::{Epoch, NodeId, Offset, Role};

use super::node::Node;
use super::store::Snapshot;
use super::{Entry, Event};

#[derive(Default)]
pub struct Checks {
    /// The committed log: every record some replica has below its high watermark.
    committed: Vec<Entry>,
    /// Which node appended in each leader epoch.
    epoch_writers: BTreeMap<Epoch, NodeId>,
    /// Acknowledged records: id -> offset.
    acked: BTreeMap<u64, Offset>,
    /// How much of each node's log has been seen below its high watermark: committed
    /// records, which no truncation may ever remove (a restart lowers the high watermark
    /// to its checkpoint, never this).
    verified: BTreeMap<NodeId, usize>,
    truncations: u64,
    /// Nodes that stopped by controlled shutdown.
    controlled_stops: u64,
    /// Reassignments asked of a controller.
    pub reassignments: u64,
}

/// What a run did, summed over seeds for the closing report.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub runs: u64,
    pub acked: u64,
    pub committed: u64,
    pub leader_changes: u64,
    pub truncations: u64,
    pub controlled_stops: u64,
    pub reassignments: u64,
}

impl Summary {
    pub fn add(&mut self, other: &Summary) {
        self.runs += other.runs;
        self.acked += other.acked;
        self.committed += other.committed;
        self.leader_changes += other.leader_changes;
        self.truncations += other.truncations;
        self.controlled_stops += other.controlled_stops;
        self.reassignments += other.reassignments;
    }
}

impl Checks {
    pub fn events(&mut self, events: &[Event]) {
        for event in events {
            match *event {
                Event::Appended { node, epoch } => {
                    let writer = *self.epoch_writers.entry(epoch).or_insert(node);
                    assert_eq!(
                        writer, node,
                        "nodes {writer} and {node} both appended in leader epoch {epoch}"
                    );
                }
                Event::Truncated {
                    node,
                    end,
                    high_watermark,
                } => {
                    self.truncations += 1;
                    let verified = self.verified.get(&node).copied().unwrap_or(0) as Offset;
                    assert!(
                        end >= high_watermark,
                        "node {node} truncated to {end}, below its high watermark {high_watermark}"
                    );
                    assert!(end >= verified, "node {node} truncated to {end}, removing committed records (held up to {verified})");
                }
                // No longer a replica: its copy is gone, and checked afresh if it returns.
                Event::Removed {
                    node,
                    ref committed,
                } => {
                    self.check_committed(node, committed);
                    self.verified.insert(node, 0);
                }
            }
        }
    }

    /// A node stopped by controlled shutdown.
    pub fn left(&mut self, _node: NodeId) {
        self.controlled_stops += 1;
    }

    /// A client heard its record acknowledged at `offset`: it must be committed there.
    pub fn acked(&mut self, id: u64, offset: Offset) {
        let at = self.committed.get(offset as usize);
        assert_eq!(
            at.map(|e| e.id),
            Some(id),
            "record {id} acknowledged at {offset} but committed there: {at:?}"
        );
        self.acked.insert(id, offset);
    }

    /// How much of the log is known committed.
    pub fn committed_len(&self) -> usize {
        self.committed.len()
    }

    /// Below its high watermark every replica holds the one committed log.
    pub fn after_step(&mut self, nodes: &[Node]) {
        for node in nodes {
            let hw = node.replica.high_watermark();
            assert!(
                hw <= node.leo(),
                "node {} has its high watermark {hw} past its log end {}",
                node.id,
                node.leo()
            );
            self.check_committed(node.id, &node.log[..hw as usize]);
        }
        // Acknowledged records were checked committed when acknowledged; the committed log
        // only grows, and no replica may truncate what it held of it (`events`).
    }

    /// `held` (a node's log below its high watermark) is the committed log, and extends
    /// it where it is longer.
    fn check_committed(&mut self, node: NodeId, held: &[Entry]) {
        let verified = self.verified.entry(node).or_insert(0);
        for (offset, entry) in held.iter().enumerate().skip(*verified) {
            match self.committed.get(offset) {
                Some(c) => assert_eq!(
                    entry,
                    c,
                    "node {node} differs from the committed log at {offset} below its high watermark {}",
                    held.len()
                ),
                None => self.committed.push(*entry),
            }
        }
        *verified = (*verified).max(held.len());
    }

    /// After healing: one leader, holding every acknowledged record; its in-sync followers
    /// hold exactly its log below the high watermark.
    pub fn after_healing(&self, nodes: &[Node], store: &Snapshot) -> Summary {
        let leader = store
            .partition
            .leader
            .expect("a healed cluster has a leader");
        let leading = &nodes[(leader - 1) as usize];
        assert!(matches!(leading.replica.role(), Role::Leader(_)), "node {leader} is named leader but does not lead: {:?}, registered {:?}; store {store:?}", leading.replica.role(), leading.broker_epoch);
        for (&id, &offset) in &self.acked {
            assert_eq!(
                leading.log.get(offset as usize).map(|e| e.id),
                Some(id),
                "acknowledged record {id} missing at {offset} on the leader"
            );
        }
        let hw = leading.replica.high_watermark();
        if std::env::var("SIM_DEBUG").is_ok() {
            eprintln!(
                "DEBUG leader {leader} log {} hw {hw} committed {} isr {:?} role {:?}",
                leading.log.len(),
                self.committed.len(),
                store.partition.isr,
                leading.replica.role()
            );
            for n in nodes {
                eprintln!(
                    "DEBUG node {} log {} hw {} role {:?} leo-known {:?}",
                    n.id,
                    n.log.len(),
                    n.replica.high_watermark(),
                    n.replica.role(),
                    n.replica.leader_isr()
                );
            }
            eprintln!("DEBUG store {store:?}");
        }
        assert!(
            hw as usize >= self.committed.len(),
            "the leader's high watermark {hw} is behind the committed log"
        );
        for &r in &store.partition.isr {
            let follower = &nodes[(r - 1) as usize];
            assert_eq!(
                &follower.log[..hw as usize],
                &leading.log[..hw as usize],
                "in-sync replica {r} differs from the leader"
            );
        }
        Summary {
            runs: 1,
            acked: self.acked.len() as u64,
            committed: self.committed.len() as u64,
            leader_changes: store.partition.leader_epoch as u64,
            truncations: self.truncations,
            controlled_stops: self.controlled_stops,
            reassignments: self.reassignments,
        }
    }
}
