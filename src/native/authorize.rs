//! The native protocol's ACL checks: the same authorizer and the same operations as the
//! Kafka listener's APIs (PROTOCOL.md has the table), checked before a request runs; a
//! request that touches several resources is refused whole if any is denied. The
//! administrative requests (DropCaches, RollSegments, RunLogMaintenance) need
//! CLUSTER_ACTION; Stats, Metrics, DescribeLogs and ListGroups need DESCRIBE on the cluster.

use crate::broker_error::BrokerError;
use crate::net::Peer;
use crate::protocol::{ErrorCode, Request};
use crate::security::acl::{Operation, ResourceType, CLUSTER_NAME};
use crate::security::authorizer::AuthorizerConfig;

/// (operation, resource type, name) a request needs, each.
type Need<'a> = (Operation, ResourceType, &'a str);

fn topics<'a>(op: Operation, names: impl IntoIterator<Item = &'a String>) -> Vec<Need<'a>> {
    let named = names.into_iter();
    named
        .map(|t| (op, ResourceType::Topic, t.as_str()))
        .collect()
}

fn cluster(op: Operation) -> Vec<Need<'static>> {
    vec![(op, ResourceType::Cluster, CLUSTER_NAME)]
}

fn group(op: Operation, name: &str) -> Vec<Need<'_>> {
    vec![(op, ResourceType::Group, name)]
}

/// Metadata's and ClusterMetadata's topics are filtered, not refused (see [`may_describe_topic`]).
fn needs(request: &Request) -> Vec<Need<'_>> {
    use Operation::*;
    match request {
        Request::Produce { topic, .. } => topics(Write, [topic]),
        Request::MultiProduce { partitions, .. } => {
            topics(Write, partitions.iter().map(|p| &p.topic))
        }
        Request::Fetch { topic, .. }
        | Request::FetchCommitted { topic, .. }
        | Request::FetchAtTime { topic, .. } => topics(Read, [topic]),
        Request::MultiFetch { partitions, .. } => topics(Read, partitions.iter().map(|p| &p.topic)),
        Request::ListOffsets { topic, .. } => topics(Describe, [topic]),
        Request::CreateTopic { name, .. } => topics(Create, [name]),
        Request::DeleteTopic { name } => topics(Delete, [name]),
        Request::CreatePartitions { topic, .. } => topics(Alter, [topic]),
        Request::DeleteRecords { topic, .. } => topics(Delete, [topic]),
        Request::AlterConfigs { topic, .. } => topics(AlterConfigs, [topic]),
        Request::DropCaches { .. }
        | Request::RollSegments { .. }
        | Request::RunLogMaintenance { .. }
        | Request::RebuildRemoteManifest { .. } => cluster(ClusterAction),
        Request::Stats | Request::Metrics | Request::DescribeLogs { .. } | Request::ListGroups => {
            cluster(Describe)
        }
        Request::OffsetCommit { group: g, offsets } => {
            let mut needs = group(Read, g);
            needs.extend(topics(Read, offsets.iter().map(|o| &o.0)));
            needs
        }
        // Kafka checks DESCRIBE on each topic asked for; without a list, the topics the
        // principal may not describe are left out of the reply (`visible_offsets`).
        Request::OffsetFetch {
            group: g,
            topics: asked,
        } => {
            let mut needs = group(Describe, g);
            needs.extend(topics(Describe, asked.iter().flatten()));
            needs
        }
        Request::DescribeGroup { group: g } => group(Describe, g),
        Request::DeleteGroup { group: g } => group(Delete, g),
        Request::OffsetDelete {
            group: g,
            partitions,
        } => {
            let mut needs = group(Delete, g);
            needs.extend(topics(Read, partitions.iter().map(|p| &p.0)));
            needs
        }
        Request::ApiVersions
        | Request::DescribeListeners
        | Request::Metadata { .. }
        | Request::ClusterMetadata { .. }
        | Request::SaslHandshake { .. }
        | Request::SaslAuthenticate { .. } => Vec::new(),
    }
}

fn refusal(op: Operation, kind: ResourceType, name: &str) -> BrokerError {
    let code = match kind {
        ResourceType::Topic => ErrorCode::TopicAuthorizationFailed,
        ResourceType::Group => ErrorCode::GroupAuthorizationFailed,
        _ => ErrorCode::ClusterAuthorizationFailed,
    };
    BrokerError::new(code, format!("not authorized to {op} {kind} {name:?}"))
}

/// Refuses a request the connection's principal may not make.
pub fn check(config: &AuthorizerConfig, request: &Request, peer: &Peer) -> Result<(), BrokerError> {
    if !config.enabled {
        return Ok(());
    }
    let who = peer.who();
    let cluster_creates =
        || config.authorize(&who, Operation::Create, ResourceType::Cluster, CLUSTER_NAME);
    if matches!(request, Request::CreateTopic { .. }) && cluster_creates() {
        return Ok(());
    }
    for (op, kind, name) in needs(request) {
        if !config.authorize(&who, op, kind, name) {
            return Err(refusal(op, kind, name));
        }
    }
    Ok(())
}

/// An OffsetFetch reply without the commits of topics the peer may not describe (Kafka's
/// OffsetFetch of every topic leaves them out).
pub fn visible_offsets(
    config: &AuthorizerConfig,
    peer: &Peer,
    body: crate::protocol::ResponseBody,
) -> crate::protocol::ResponseBody {
    match body {
        crate::protocol::ResponseBody::OffsetFetch(offsets) if config.enabled => {
            let visible = offsets.into_iter();
            crate::protocol::ResponseBody::OffsetFetch(
                visible
                    .filter(|o| may_describe_topic(config, peer, &o.0))
                    .collect(),
            )
        }
        other => other,
    }
}

/// Whether Metadata lists the topic to this peer (DESCRIBE, as Kafka hides topics).
pub fn may_describe_topic(config: &AuthorizerConfig, peer: &Peer, topic: &str) -> bool {
    let who = peer.who();
    config.authorize(&who, Operation::Describe, ResourceType::Topic, topic)
}
