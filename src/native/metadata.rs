//! What a peer learns about the server itself: its topics (Metadata) and its listeners
//! (DescribeListeners).

use crate::net::Peer;
use crate::protocol::{
    ErrorCode, ListenerInfo, MetadataResponse, PartitionMetadata, ShardInfo, TopicMetadata,
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

/// Topics the peer may not DESCRIBE: named, they answer TopicAuthorizationFailed; from
/// "every topic" they are left out, as Kafka hides them.
pub(super) fn metadata(shard: &Shard, topics: Option<Vec<String>>, peer: Peer) -> MetadataResponse {
    let cfg = shard.config();
    let every_topic = topics.is_none();
    let describable =
        |name: &str| crate::native::authorize::may_describe_topic(&cfg.authorizer, &peer, name);
    let host = advertised_host(&cfg.advertised_host, cfg.listen, peer.local);
    let shards = (0..shard.shard_count())
        .map(|i| ShardInfo {
            shard: i as i32,
            host: host.clone(),
            port: shard.config().shard_port(i) as i32,
        })
        .collect();
    let topics = shard
        .topics_snapshot(topics.as_deref())
        .into_iter()
        .filter_map(|t| {
            let name = match &t {
                Ok(meta) => meta.name.as_str(),
                Err(crate::catalog::error::UnknownTopic(name)) => name.as_str(),
            };
            match (describable(name), every_topic) {
                (true, _) => Some(topic_metadata(t)),
                (false, true) => None,
                (false, false) => Some(denied_topic(name.to_string())),
            }
        })
        .collect();
    MetadataResponse { shards, topics }
}

/// A topic the peer may describe: its partitions and configs, or UnknownTopic.
fn topic_metadata(
    t: Result<crate::catalog::topics::TopicMeta, crate::catalog::error::UnknownTopic>,
) -> TopicMetadata {
    match t {
        Ok(meta) => TopicMetadata {
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
        },
        Err(crate::catalog::error::UnknownTopic(name)) => TopicMetadata {
            name,
            error_code: ErrorCode::UnknownTopic,
            partitions: Vec::new(),
            configs: Vec::new(),
        },
    }
}

fn denied_topic(name: String) -> TopicMetadata {
    TopicMetadata {
        name,
        error_code: ErrorCode::TopicAuthorizationFailed,
        partitions: Vec::new(),
        configs: Vec::new(),
    }
}
