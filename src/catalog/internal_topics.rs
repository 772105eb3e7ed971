//! Internal topics are the server's, as in Kafka: `__consumer_offsets` (and every internal
//! topic to come, such as transaction state) is created by the server with settings fixed
//! by its own config, written only by the server, and never deleted, truncated or
//! reconfigured by a client, on either protocol. Clients may describe and read it.
//!
//! Why: a group's committed offsets live only there. A client that could delete it, move
//! its log start, make it `cleanup.policy=delete` with a short retention, pre-create it
//! with one partition (every group would hash elsewhere) or produce a crafted commit into
//! it would lose or forge every group's offsets at the next restart.

use crate::broker_error::BrokerError;
use crate::catalog::error::CatalogError;
use crate::catalog::topics::TopicMeta;
use crate::protocol::ErrorCode;
use crate::settings::ServerConfig;

/// Every internal topic's name.
/// Where consumer groups keep their committed offsets (an internal compacted topic, as
/// Kafka keeps them).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Where transaction coordinators keep the state of every transactional id.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

pub const INTERNAL_TOPICS: [&str; 2] = [OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC];

pub fn is_internal(topic: &str) -> bool {
    INTERNAL_TOPICS.contains(&topic)
}

/// Refuses a client's `action` ("delete", "create", ...) on an internal topic.
pub fn refuse_client(topic: &str, action: &str) -> Result<(), BrokerError> {
    if !is_internal(topic) {
        return Ok(());
    }
    Err(BrokerError::new(
        ErrorCode::InternalTopic,
        format!("{topic} is an internal topic: clients may read it but not {action} it"),
    ))
}

/// The partition count and configs the server creates an internal topic with.
pub fn settings(topic: &str, config: &ServerConfig) -> (i32, Vec<(String, String)>) {
    assert!(is_internal(topic));
    let configs = vec![
        ("cleanup.policy".to_string(), "compact".to_string()),
        ("segment.bytes".to_string(), (100 << 20).to_string()),
    ];
    let partitions = match topic {
        TRANSACTION_STATE_TOPIC => config.transaction_state_log_num_partitions,
        _ => config.offsets_topic_num_partitions,
    };
    (partitions, configs)
}

/// At start: an internal topic on disk must have the partition count and cleanup policy
/// the server would create it with, or the server refuses to start (a different count
/// would silently move every group to another partition, away from its commits).
pub fn check_on_disk(meta: &TopicMeta, config: &ServerConfig) -> Result<(), CatalogError> {
    if !is_internal(&meta.name) {
        return Ok(());
    }
    let (partitions, _) = settings(&meta.name, config);
    if meta.partitions() as i32 != partitions {
        return Err(CatalogError::InternalPartitions {
            topic: meta.name.clone(),
            on_disk: meta.partitions() as i32,
            configured: partitions,
        });
    }
    if !meta.config.log.cleanup_policy.compacts() {
        return Err(CatalogError::InternalNotCompacted {
            topic: meta.name.clone(),
            policy: meta.config.log.cleanup_policy.name(),
        });
    }
    Ok(())
}
