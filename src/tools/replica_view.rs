//! Where a cluster's partitions live, as Kafka's Metadata (v9) tells any node: each
//! partition's leader, replicas, ISR and offline replicas, and the live nodes and the
//! controller. `topics describe` and `cluster describe` read it over the Kafka listener.

use std::collections::BTreeMap;

use kafka_protocol::messages::{metadata_request, ApiKey, MetadataRequest, RequestKind};
use kafka_protocol::messages::{ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::kafka::blocking_client::BlockingClient;

/// One partition's replicas (broker ids; leader -1: none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replicas {
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline: Vec<i32>,
}

impl Replicas {
    pub fn under_replicated(&self) -> bool {
        self.isr.len() < self.replicas.len()
    }

    pub fn under_min_isr(&self, min_insync: usize) -> bool {
        self.isr.len() < min_insync
    }

    /// No leader to serve it (kafka-topics --unavailable-partitions).
    pub fn unavailable(&self) -> bool {
        self.leader < 0
    }

    /// Kafka's describe columns, tab-separated: `Leader: 1`, `Replicas: 1,2,3`, `Isr: 1,2`, `Offline: 3`.
    pub fn columns(&self) -> String {
        let list = |ids: &[i32]| {
            let text: Vec<String> = ids.iter().map(i32::to_string).collect();
            text.join(",")
        };
        format!(
            "Leader: {}\tReplicas: {}\tIsr: {}\tOffline: {}",
            self.leader,
            list(&self.replicas),
            list(&self.isr),
            list(&self.offline)
        )
    }
}

/// A live node as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// The cluster as one node answers Metadata.
#[derive(Debug, Clone, Default)]
pub struct ReplicaView {
    /// The cluster id the node reported (Kafka's `cluster.id`).
    pub cluster_id: String,
    pub controller: i32,
    pub nodes: Vec<Node>,
    /// By (topic, partition).
    pub partitions: BTreeMap<(String, i32), Replicas>,
}

/// Metadata v9 of `topics` (None: every topic).
pub fn read(kafka: &mut BlockingClient, topics: Option<&[String]>) -> Result<ReplicaView, String> {
    let asked = topics.map(|names| {
        let each = names.iter().map(|n| {
            let name = TopicName(StrBytes::from_string(n.clone()));
            metadata_request::MetadataRequestTopic::default().with_name(Some(name))
        });
        each.collect()
    });
    let request = MetadataRequest::default()
        .with_topics(asked)
        .with_allow_auto_topic_creation(false);
    let answer = kafka.call(ApiKey::Metadata, 9, &RequestKind::Metadata(request));
    let Ok(ResponseKind::Metadata(r)) = answer else {
        return Err(format!(
            "Metadata over the Kafka listener failed: {answer:?}"
        ));
    };
    let mut view = ReplicaView {
        cluster_id: r
            .cluster_id
            .as_ref()
            .map(|id| id.to_string())
            .unwrap_or_default(),
        controller: r.controller_id.0,
        ..ReplicaView::default()
    };
    for b in &r.brokers {
        view.nodes.push(Node {
            id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
            rack: b.rack.as_ref().map(|r| r.to_string()),
        });
    }
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect();
    for t in r.topics.iter().filter(|t| t.error_code == 0) {
        let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
        for p in &t.partitions {
            let replicas = Replicas {
                leader: p.leader_id.0,
                replicas: ids(&p.replica_nodes),
                isr: ids(&p.isr_nodes),
                offline: ids(&p.offline_replicas),
            };
            view.partitions
                .insert((name.clone(), p.partition_index), replicas);
        }
    }
    view.nodes.sort_by_key(|n| n.id);
    Ok(view)
}

/// What `topics describe` keeps (kafka-topics' filters; none: every partition).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filters {
    pub under_replicated: bool,
    pub under_min_isr: bool,
    pub unavailable: bool,
}

impl Filters {
    pub fn any(&self) -> bool {
        self.under_replicated || self.under_min_isr || self.unavailable
    }

    /// Whether a partition passes (any filter asked for holds).
    pub fn keep(&self, r: &Replicas, min_insync: usize) -> bool {
        !self.any()
            || (self.under_replicated && r.under_replicated())
            || (self.under_min_isr && r.under_min_isr(min_insync))
            || (self.unavailable && r.unavailable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replicas(leader: i32, isr: &[i32]) -> Replicas {
        Replicas {
            leader,
            replicas: vec![1, 2, 3],
            isr: isr.to_vec(),
            offline: Vec::new(),
        }
    }

    #[test]
    fn filters_keep_what_kafka_topics_would_list() {
        let healthy = replicas(1, &[1, 2, 3]);
        let short = replicas(1, &[1]);
        let offline = replicas(-1, &[1]);
        let all = Filters::default();
        assert!(all.keep(&healthy, 2) && all.keep(&offline, 2));
        let under = Filters {
            under_replicated: true,
            ..Filters::default()
        };
        assert!(!under.keep(&healthy, 2) && under.keep(&short, 2));
        let min_isr = Filters {
            under_min_isr: true,
            ..Filters::default()
        };
        assert!(min_isr.keep(&short, 2) && !min_isr.keep(&short, 1));
        let unavailable = Filters {
            unavailable: true,
            ..Filters::default()
        };
        assert!(unavailable.keep(&offline, 1) && !unavailable.keep(&short, 1));
        assert_eq!(
            short.columns(),
            "Leader: 1\tReplicas: 1,2,3\tIsr: 1\tOffline: "
        );
    }
}
