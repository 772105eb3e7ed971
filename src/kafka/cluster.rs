//! The brokers a client is told of: this node (its id and the address of the listener the
//! client came in on), the live nodes of its cluster in cluster mode, and the controller;
//! DescribeCluster v0-1 (`kafka-cluster`, AdminClient.describe_cluster).

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::{str_bytes, Context};
use crate::security::KafkaListener;
use crate::settings::advertised_host;

/// Kafka's value for "authorized operations were not asked for".
pub const OPERATIONS_NOT_ASKED: i32 = i32::MIN;

/// This node's broker id (Kafka's broker.id: 0 unless configured).
pub fn node_id(ctx: &Context<'_>) -> i32 {
    ctx.shard.config().cluster.broker_id
}

/// The Kafka listener a client came in on (`ctx.peer.local`).
fn reached_listener(ctx: &Context<'_>) -> KafkaListener {
    let listeners = ctx.shard.config().kafka_listeners();
    let reached = ctx.peer.local.map(|a| a.port());
    let found = listeners.iter().find(|l| Some(l.addr.port()) == reached);
    found
        .or(listeners.first())
        .copied()
        .expect("a Kafka request came through a Kafka listener")
}

/// The address of the Kafka listener a client came in on, as that client reaches it: each
/// listener advertises itself to its own clients.
pub fn broker_address(ctx: &Context<'_>) -> (String, i32) {
    let listen = reached_listener(ctx).addr;
    let host = advertised_host(&ctx.shard.config().advertised_host, listen, ctx.peer.local);
    (host, listen.port() as i32)
}

/// Every live broker as (id, host, port) for this client: this node at the listener it
/// came in on, and in cluster mode every other live node at its listener of the same
/// security protocol (a node without one is left out, as Kafka leaves out a broker without
/// the listener's name).
pub fn live_brokers(ctx: &Context<'_>) -> Vec<LiveBroker> {
    let me = node_id(ctx);
    let (host, port) = broker_address(ctx);
    let rack = &ctx.shard.config().cluster.rack;
    let mut brokers = vec![LiveBroker {
        id: me,
        host,
        port,
        rack: (!rack.is_empty()).then(|| rack.clone()),
    }];
    let Some(view) = ctx.shard.cluster() else {
        return brokers;
    };
    let protocol = reached_listener(ctx).protocol.name();
    for node in view.brokers.iter().filter(|b| b.id != me) {
        let listener = node.listeners.iter().find(|l| l.name == protocol);
        if let Some(l) = listener {
            brokers.push(LiveBroker {
                id: node.id,
                host: l.host.clone(),
                port: l.port as i32,
                rack: node.rack.clone(),
            });
        }
    }
    brokers.sort_by_key(|b| b.id);
    brokers
}

/// A live node as Metadata, DescribeCluster and FindCoordinator name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub id: i32,
    pub host: String,
    pub port: i32,
    /// Its broker.rack (Metadata v1+, DescribeCluster).
    pub rack: Option<String>,
}

/// The cluster's elected controller in cluster mode (-1 while there is none), else this
/// node.
pub fn controller_id(ctx: &Context<'_>) -> i32 {
    match ctx.shard.cluster() {
        Some(view) => view.controller.map_or(-1, |c| c.id),
        None => node_id(ctx),
    }
}

/// In cluster mode, why this node may not serve a client's read or write of a partition:
/// another node leads it, or none does while a leader is elected (NOT_LEADER_OR_FOLLOWER,
/// so the client refreshes its metadata and asks again), or the topic is a stray the
/// cluster does not have (UNKNOWN_TOPIC_OR_PARTITION). None: serve it.
pub fn not_leader(ctx: &Context<'_>, topic: &str, partition: i32) -> Option<Refusal> {
    let view = ctx.shard.cluster()?;
    let Some(cluster_topic) = view.topics.get(topic) else {
        let stray =
            !crate::catalog::internal_topics::is_internal(topic) && ctx.shard.has_topic(topic);
        return stray.then(|| {
            Refusal::new(
                errors::UNKNOWN_TOPIC_OR_PARTITION,
                format!("topic {topic:?} is this node's own, not the cluster's: it is not served in cluster mode"),
            )
        });
    };
    let state = &cluster_topic
        .partitions
        .get(usize::try_from(partition).ok()?)?
        .state;
    let me = node_id(ctx);
    if view.leads(me, topic, partition as u32) {
        return None;
    }
    let why = match state.leader {
        Some(l) => format!(
            "{topic}-{partition} is led by broker {l} (leader epoch {}), not by this broker ({me})",
            state.leader_epoch
        ),
        None => format!("{topic}-{partition} has no leader now (no in-sync replica is live)"),
    };
    Some(Refusal::new(errors::NOT_LEADER_OR_FOLLOWER, why))
}

use super::errors;
use super::refusal::Refusal;
use crate::security::acl::ResourceType;

/// Without an authorizer Kafka allows every operation a resource type has; these are the
/// bit sets it reports (bit n = AclOperation n).
pub mod operations {
    const fn bits(ops: &[u8]) -> i32 {
        let mut out = 0;
        let mut i = 0;
        while i < ops.len() {
            out |= 1 << ops[i];
            i += 1;
        }
        out
    }
    /// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
    /// IDEMPOTENT_WRITE.
    pub const CLUSTER: i32 = bits(&[5, 7, 8, 9, 10, 11, 12]);
    /// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
    pub const TOPIC: i32 = bits(&[3, 4, 5, 6, 7, 8, 10, 11]);
    /// READ, DELETE, DESCRIBE.
    pub const GROUP: i32 = bits(&[3, 6, 8]);
}

pub fn describe_cluster(
    ctx: &Context<'_>,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let brokers = live_brokers(ctx).into_iter().map(|b| {
        DescribeClusterBroker::default()
            .with_broker_id(BrokerId(b.id))
            .with_host(str_bytes(b.host))
            .with_port(b.port)
            .with_rack(b.rack.map(str_bytes))
    });
    let operations = if request.include_cluster_authorized_operations {
        let name = crate::security::acl::CLUSTER_NAME;
        ctx.authorized_operations(ResourceType::Cluster, name, operations::CLUSTER)
    } else {
        OPERATIONS_NOT_ASKED
    };
    DescribeClusterResponse::default()
        .with_cluster_id(str_bytes(ctx.shard.cluster_id()))
        .with_controller_id(BrokerId(controller_id(ctx)))
        .with_brokers(brokers.collect())
        .with_cluster_authorized_operations(operations)
}
