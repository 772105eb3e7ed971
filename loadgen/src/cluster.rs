//! Finding where a topic's partitions live: with shard-aware routing every partition is
//! reached on its owner shard's own port (no forwarding hop), otherwise on the bootstrap.

use shardlog::protocol::ErrorCode;

#[derive(Debug, Clone)]
pub struct PartitionRoute {
    pub partition: i32,
    pub addr: String,
}

/// Routes for every partition of `topic`.
pub async fn routes(
    bootstrap: &str,
    topic: &str,
    shard_aware: bool,
) -> Result<Vec<PartitionRoute>, String> {
    let mut c = crate::connect::connect(bootstrap).await?;
    let md = c
        .metadata(Some(vec![topic.to_string()]))
        .await
        .map_err(|e| e.to_string())?;
    let t = md
        .topic(topic)
        .filter(|t| t.error_code == ErrorCode::None)
        .ok_or_else(|| format!("topic {topic:?} does not exist (create it, or pass --create)"))?;
    // Shard ports are reached on the bootstrap's host (the server may listen on 0.0.0.0).
    let host = bootstrap
        .rsplit_once(':')
        .map(|(h, _)| h.to_string())
        .unwrap_or_else(|| "127.0.0.1".into());
    Ok(t.partitions
        .iter()
        .map(|p| PartitionRoute {
            partition: p.partition,
            addr: match (shard_aware, md.shard_port(p.owner_shard)) {
                (true, Some(port)) => format!("{host}:{port}"),
                _ => bootstrap.to_string(),
            },
        })
        .collect())
}
