//! Where a topic's partitions live, as a node tells its clients: the cluster's state of a
//! cluster topic (a leader only while its node is live and registered as when it was
//! elected), this node alone for a topic of its own (one node, or an internal topic), and
//! nothing for a stray (a local topic the cluster does not have). Kafka's Metadata and the
//! native ClusterMetadata both answer from this one reading.

use crate::catalog::internal_topics::is_internal;
use crate::protocol::PartitionPlacement;
use crate::replication::PartitionState;

use super::ClusterView;

/// The placement of every partition of `topic` (`partitions` of them locally), or None
/// for a stray.
pub fn topic_placement(
    view: Option<&ClusterView>,
    me: i32,
    topic: &str,
    partitions: usize,
) -> Option<Vec<PartitionPlacement>> {
    if let Some(cluster_topic) = view.and_then(|v| v.topics.get(topic)) {
        let view = view.expect("a cluster topic comes from a view");
        let each = cluster_topic.partitions.iter().enumerate();
        return Some(
            each.map(|(p, s)| cluster_partition(view, p as i32, &s.state))
                .collect(),
        );
    }
    let own = view.is_none() || is_internal(topic);
    own.then(|| {
        (0..partitions as i32)
            .map(|p| own_partition(me, p))
            .collect()
    })
}

/// A cluster partition: its leader while that node is live and registered as when it was
/// elected (else -1, and a client asks again), its replicas, ISR and the replicas whose
/// nodes are not live.
fn cluster_partition(view: &ClusterView, index: i32, state: &PartitionState) -> PartitionPlacement {
    let live_leader = state
        .leader
        .filter(|&l| view.live_epoch(l) == Some(state.leader_broker_epoch));
    let offline = (state.replicas.iter().copied())
        .filter(|&r| view.live_epoch(r).is_none())
        .collect();
    PartitionPlacement {
        partition: index,
        leader: live_leader.unwrap_or(-1),
        leader_epoch: state.leader_epoch,
        replicas: state.replicas.clone(),
        isr: state.isr.clone(),
        offline,
    }
}

/// A partition this node leads, its only replica (leader epoch -1, as Kafka's Metadata
/// says when it has none to give).
fn own_partition(me: i32, index: i32) -> PartitionPlacement {
    PartitionPlacement {
        partition: index,
        leader: me,
        leader_epoch: -1,
        replicas: vec![me],
        isr: vec![me],
        offline: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_cluster_mode_this_node_leads_every_partition() {
        let placed = topic_placement(None, 3, "t", 2).unwrap();
        assert_eq!(placed.len(), 2);
        assert!(placed.iter().all(|p| p.leader == 3 && p.replicas == [3]));
        assert_eq!(placed[1].partition, 1);
    }

    #[test]
    fn a_local_topic_the_cluster_does_not_have_is_a_stray() {
        let view = ClusterView::default();
        assert_eq!(topic_placement(Some(&view), 0, "stray", 1), None);
        let internal = topic_placement(Some(&view), 0, "__consumer_offsets", 1).unwrap();
        assert_eq!(internal[0].leader, 0);
    }

    fn broker(id: i32, epoch: i64) -> super::super::view::BrokerRegistration {
        super::super::view::BrokerRegistration {
            id,
            epoch,
            directory: format!("d{id}"),
            listeners: Vec::new(),
            native: format!("127.0.0.1:{}", 8000 + id),
            shutting_down: false,
            rack: None,
        }
    }

    fn state(leader: i32, leader_broker_epoch: i64) -> super::super::ClusterPartition {
        super::super::ClusterPartition {
            state: PartitionState {
                replicas: vec![1, 2, 3],
                isr: vec![1, 2],
                leader: Some(leader),
                leader_epoch: 7,
                leader_broker_epoch,
                partition_epoch: 9,
                adding: Vec::new(),
                removing: Vec::new(),
            },
            mod_revision: 1,
        }
    }

    #[test]
    fn a_cluster_partition_has_a_leader_only_while_it_is_registered_as_when_elected() {
        let mut view = ClusterView {
            brokers: vec![broker(1, 11), broker(2, 12)],
            ..ClusterView::default()
        };
        let topic = super::super::ClusterTopic {
            name: "t".into(),
            id: uuid::Uuid::nil(),
            configs: Vec::new(),
            partitions: vec![state(1, 11), state(2, 5)],
            revision: 1,
        };
        view.topics.insert("t".into(), topic);
        let placed = topic_placement(Some(&view), 1, "t", 0).unwrap();
        assert_eq!((placed[0].leader, placed[0].leader_epoch), (1, 7));
        assert_eq!(placed[1].leader, -1, "node 2 restarted since its election");
        assert_eq!(placed[0].offline, [3], "node 3 is not registered");
        assert_eq!(
            (placed[0].replicas.clone(), placed[0].isr.clone()),
            (vec![1, 2, 3], vec![1, 2])
        );
    }
}
