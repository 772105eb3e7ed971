//! This server as the one broker of its cluster: the address Metadata and DescribeCluster
//! give for it, and DescribeCluster v0-1 (`kafka-cluster`, AdminClient.describe_cluster).

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::{str_bytes, Context, CLUSTER_ID, NODE_ID};
use crate::settings::advertised_host;

/// Kafka's value for "authorized operations were not asked for".
pub const OPERATIONS_NOT_ASKED: i32 = i32::MIN;

/// The address of the Kafka listener a client came in on (`ctx.peer.local`), as that
/// client reaches it: each listener advertises itself to its own clients.
pub fn broker_address(ctx: &Context<'_>) -> (String, i32) {
    let cfg = ctx.shard.config();
    let listeners = cfg.kafka_listeners();
    let reached = ctx.peer.local.map(|a| a.port());
    let listen = listeners
        .iter()
        .find(|l| Some(l.addr.port()) == reached)
        .or(listeners.first())
        .expect("a Kafka request came through a Kafka listener")
        .addr;
    let host = advertised_host(&cfg.advertised_host, listen, ctx.peer.local);
    (host, listen.port() as i32)
}

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
    let (host, port) = broker_address(ctx);
    let broker = DescribeClusterBroker::default()
        .with_broker_id(BrokerId(NODE_ID))
        .with_host(str_bytes(host))
        .with_port(port);
    let operations = if request.include_cluster_authorized_operations {
        let name = crate::security::acl::CLUSTER_NAME;
        ctx.authorized_operations(ResourceType::Cluster, name, operations::CLUSTER)
    } else {
        OPERATIONS_NOT_ASKED
    };
    DescribeClusterResponse::default()
        .with_cluster_id(str_bytes(CLUSTER_ID))
        .with_controller_id(BrokerId(NODE_ID))
        .with_brokers(vec![broker])
        .with_cluster_authorized_operations(operations)
}
