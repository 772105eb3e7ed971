//! What a peer learns about the server itself: its topics (Metadata), its listeners
//! (DescribeListeners) and the cluster it belongs to (ClusterMetadata).

use crate::cluster::placement::topic_placement;
use crate::net::Peer;
use crate::protocol::{
    ClusterMetadataResponse, ErrorCode, ListenerInfo, MetadataResponse, NodeInfo,
    PartitionMetadata, ShardInfo, TopicMetadata, TopicPlacement,
};
use crate::settings::{advertised_host, ServerConfig};
use crate::shard::runtime::Shard;

/// The native listener and every Kafka listener, each at the address the peer can reach
/// (a wildcard bind answers with the address the peer reached).
pub(super) fn listeners(cfg: &ServerConfig, peer: Peer) -> Vec<ListenerInfo> {
    let native = ListenerInfo {
        protocol: "native".into(),
        security_protocol: cfg.native_security_protocol.name().into(),
        host: advertised_host(&cfg.advertised_host, cfg.listen, peer.local),
        port: i32::from(cfg.listen.port()),
    };
    let kafka = cfg.kafka_listeners().into_iter().map(|l| ListenerInfo {
        protocol: "kafka".into(),
        security_protocol: l.protocol.name().into(),
        host: advertised_host("", l.addr, peer.local),
        port: i32::from(l.addr.port()),
    });
    std::iter::once(native).chain(kafka).collect()
}

/// A topic as a peer may see it.
enum Seen {
    Topic(Box<crate::catalog::topics::TopicMeta>),
    Unknown(String),
    /// Named, but the peer may not DESCRIBE it.
    Denied(String),
}

/// Topics the peer may not DESCRIBE: named, they answer TopicAuthorizationFailed; from
/// "every topic" they are left out, as Kafka hides them.
fn visible_topics(shard: &Shard, topics: Option<Vec<String>>, peer: &Peer) -> Vec<Seen> {
    let cfg = shard.config();
    let every_topic = topics.is_none();
    let describable =
        |name: &str| crate::native::authorize::may_describe_topic(&cfg.authorizer, peer, name);
    let snapshot = shard.topics_snapshot(topics.as_deref()).into_iter();
    snapshot
        .filter_map(|t| {
            let name = match &t {
                Ok(meta) => meta.name.as_str(),
                Err(crate::catalog::error::UnknownTopic(name)) => name.as_str(),
            };
            match (describable(name), every_topic) {
                (true, _) => Some(match t {
                    Ok(meta) => Seen::Topic(Box::new(meta)),
                    Err(crate::catalog::error::UnknownTopic(name)) => Seen::Unknown(name),
                }),
                (false, true) => None,
                (false, false) => Some(Seen::Denied(name.to_string())),
            }
        })
        .collect()
}

pub(super) fn metadata(shard: &Shard, topics: Option<Vec<String>>, peer: Peer) -> MetadataResponse {
    let cfg = shard.config();
    let host = advertised_host(&cfg.advertised_host, cfg.listen, peer.local);
    let shards = (0..shard.shard_count())
        .map(|i| ShardInfo {
            shard: i as i32,
            host: host.clone(),
            port: shard.config().shard_port(i) as i32,
        })
        .collect();
    let topics = visible_topics(shard, topics, &peer)
        .into_iter()
        .map(|seen| match seen {
            Seen::Topic(meta) => topic_metadata(*meta),
            Seen::Unknown(name) => without_partitions(name, ErrorCode::UnknownTopic),
            Seen::Denied(name) => without_partitions(name, ErrorCode::TopicAuthorizationFailed),
        })
        .collect();
    MetadataResponse { shards, topics }
}

/// The cluster as this node sees it: the live nodes at their native listeners (this one
/// at the address the peer reached), the controller, and where each visible topic's
/// partitions live (`cluster::placement`). Outside cluster mode: this node alone.
pub(super) fn cluster_metadata(
    shard: &Shard,
    topics: Option<Vec<String>>,
    peer: Peer,
) -> ClusterMetadataResponse {
    let view = shard.cluster();
    let me = shard.config().cluster.broker_id;
    let topics = visible_topics(shard, topics, &peer)
        .into_iter()
        .map(|seen| placed_topic(view.as_deref(), me, seen))
        .collect();
    let controller = view.as_ref().map(|v| v.controller);
    let (controller_id, controller_epoch) = match controller {
        None => (me, 0),
        Some(None) => (-1, 0),
        Some(Some(c)) => (c.id, c.epoch),
    };
    ClusterMetadataResponse {
        cluster_id: shard.cluster_id().to_string(),
        controller_id,
        controller_epoch,
        node_id: me,
        nodes: nodes(shard, view.as_deref(), peer),
        topics,
    }
}

/// The live nodes, this one first at the address the peer reached.
fn nodes(shard: &Shard, view: Option<&crate::cluster::ClusterView>, peer: Peer) -> Vec<NodeInfo> {
    let cfg = shard.config();
    let me = cfg.cluster.broker_id;
    let registered = view.into_iter().flat_map(|v| v.brokers.iter());
    let this = NodeInfo {
        node_id: me,
        host: advertised_host(&cfg.advertised_host, cfg.listen, peer.local),
        port: i32::from(cfg.listen.port()),
        rack: cfg.cluster.rack.clone(),
        epoch: view.and_then(|v| v.live_epoch(me)).unwrap_or(0),
        shutting_down: view.is_some_and(|v| v.shutting_down(me)),
    };
    let others = registered.filter(|b| b.id != me).filter_map(|b| {
        let (host, port) = b.native.rsplit_once(':')?;
        Some(NodeInfo {
            node_id: b.id,
            host: host.to_string(),
            port: port.parse().ok()?,
            rack: b.rack.clone().unwrap_or_default(),
            epoch: b.epoch,
            shutting_down: b.shutting_down,
        })
    });
    let nodes: Vec<NodeInfo> = std::iter::once(this).chain(others).collect();
    assert!(
        nodes.iter().skip(1).all(|n| n.node_id != me),
        "the answering node is listed once, first"
    );
    nodes
}

fn placed_topic(view: Option<&crate::cluster::ClusterView>, me: i32, seen: Seen) -> TopicPlacement {
    let refused = |name, error_code| TopicPlacement {
        name,
        error_code,
        partitions: Vec::new(),
    };
    match seen {
        Seen::Topic(meta) => match topic_placement(view, me, &meta.name, meta.owners.len()) {
            Some(partitions) => TopicPlacement {
                name: meta.name.clone(),
                error_code: ErrorCode::None,
                partitions,
            },
            // A stray: this node's own topic, which the cluster does not serve.
            None => refused(meta.name.clone(), ErrorCode::UnknownTopic),
        },
        Seen::Unknown(name) => refused(name, ErrorCode::UnknownTopic),
        Seen::Denied(name) => refused(name, ErrorCode::TopicAuthorizationFailed),
    }
}

/// A topic the peer may describe: its partitions on this node's shards and its configs.
fn topic_metadata(meta: crate::catalog::topics::TopicMeta) -> TopicMetadata {
    TopicMetadata {
        name: meta.name.clone(),
        error_code: ErrorCode::None,
        partitions: meta
            .owners
            .iter()
            .enumerate()
            .map(|(p, &o)| PartitionMetadata {
                partition: p as i32,
                owner_shard: o as i32,
            })
            .collect(),
        configs: meta.config.to_pairs(),
    }
}

fn without_partitions(name: String, error_code: ErrorCode) -> TopicMetadata {
    TopicMetadata {
        name,
        error_code,
        partitions: Vec::new(),
        configs: Vec::new(),
    }
}
