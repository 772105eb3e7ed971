//! Controlled shutdown (Kafka's controlled.shutdown.enable): a node asked to stop first
//! marks its registration as shutting down; the controller then moves its leaderships to
//! in-sync followers and takes it out of the ISRs it is not the last member of
//! (`replication::controller::elect`), and no leader adds it back. The node stops once its
//! view shows nothing left to move, or after its bound. This file holds the mark and the
//! check; the session (`session.rs`) waits.

use crate::cluster::etcd::{Compare, Etcd, Op};
use crate::cluster::view::{BrokerRegistration, ClusterView};
use crate::cluster::{ClusterError, Keys};
use crate::replication::controller::{elect, Liveness};

/// Marks this node's registration (the one created at `epoch`) as shutting down, keeping
/// its lease. Whether it was still this registration's key.
pub async fn mark(
    etcd: &Etcd,
    keys: &Keys,
    me: &BrokerRegistration,
    epoch: i64,
) -> Result<bool, ClusterError> {
    assert!(me.shutting_down, "the mark says the node is shutting down");
    let key = keys.broker(me.id);
    let guard = [Compare::CreatedAt(key.clone(), epoch)];
    etcd.txn(&guard, &[Op::PutKeepLease(key, me.encode())])
        .await
}

/// What keeps a leaving node from stopping, as `topic-partition` names.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Remaining {
    /// Partitions the controller still has to change (a leadership to move, or this node
    /// to take out of the ISR).
    pub moving: Vec<String>,
    /// Partitions this node leads with other replicas but no staying in-sync one: their
    /// leadership cannot move until a follower catches up.
    pub stuck: Vec<String>,
}

impl Remaining {
    pub fn is_empty(&self) -> bool {
        self.moving.is_empty() && self.stuck.is_empty()
    }
}

/// The partitions that still involve node `me` in `view`.
pub fn remaining(view: &ClusterView, me: i32) -> Remaining {
    let mut out = Remaining::default();
    for topic in view.topics.values() {
        for (p, partition) in topic.partitions.iter().enumerate() {
            let state = &partition.state;
            let involved = state.leader == Some(me) || state.isr.contains(&me);
            if !involved {
                continue;
            }
            let name = format!("{}-{p}", topic.name);
            if elect(state, view).is_some() {
                out.moving.push(name);
            } else if view.leads(me, &topic.name, p as u32) && state.replicas.len() > 1 {
                let handoff = state.isr.iter().any(|&r| r != me && view.eligible(r));
                assert!(!handoff, "settled: a staying in-sync replica would lead");
                out.stuck.push(name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::topics::{ClusterPartition, ClusterTopic};
    use crate::replication::PartitionState;

    fn view(leaving: &[i32], states: Vec<PartitionState>) -> ClusterView {
        let broker = |id: i32| BrokerRegistration {
            id,
            epoch: 10,
            directory: String::new(),
            listeners: Vec::new(),
            native: String::new(),
            shutting_down: leaving.contains(&id),
            rack: None,
        };
        let partitions = states.into_iter().map(|state| ClusterPartition {
            state,
            mod_revision: 1,
        });
        let topic = ClusterTopic {
            name: "t".into(),
            id: Default::default(),
            configs: Vec::new(),
            partitions: partitions.collect(),
            revision: 1,
        };
        ClusterView {
            brokers: (1..=3).map(broker).collect(),
            topics: [("t".to_string(), topic)].into(),
            ..ClusterView::default()
        }
    }

    fn led(leader: i32, replicas: &[i32], isr: &[i32]) -> PartitionState {
        PartitionState {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader: Some(leader),
            leader_epoch: 1,
            leader_broker_epoch: 10,
            partition_epoch: 1,
            adding: vec![],
            removing: vec![],
        }
    }

    #[test]
    fn a_leaving_node_waits_for_moves_and_for_partitions_it_cannot_hand_off() {
        let states = vec![
            led(1, &[1, 2, 3], &[1, 2, 3]),
            led(2, &[2, 1, 3], &[2, 1]),
            led(1, &[1, 2], &[1]),
            led(1, &[1], &[1]),
            led(2, &[2, 3], &[2, 3]),
        ];
        let before = remaining(&view(&[1], states), 1);
        assert_eq!(before.moving, ["t-0", "t-1"]);
        assert_eq!(
            before.stuck,
            ["t-2"],
            "a single replica is never waited for"
        );
        let after = vec![
            led(2, &[1, 2, 3], &[2, 3]),
            led(2, &[2, 1, 3], &[2]),
            led(1, &[1, 2], &[1, 2]),
        ];
        let view = view(&[1], after);
        assert_eq!(remaining(&view, 1).moving, ["t-2"], "a follower caught up");
        assert!(remaining(&view, 3).is_empty(), "nothing to wait for");
    }
}
