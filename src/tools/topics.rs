//! `shardlog topics create|list|describe|delete`.

use std::io::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicsAction {
    Create,
    List,
    Describe,
    Delete,
}

pub struct TopicsArgs {
    pub bootstrap: String,
    /// Connect and per-request timeout.
    pub timeout_ms: u64,
    pub action: TopicsAction,
    pub topic: Option<String>,
    pub partitions: i32,
    /// `key=value` strings.
    pub configs: Vec<String>,
}

fn parse_configs(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("--config {kv:?} must be key=value"))
        })
        .collect()
}

pub async fn run(args: TopicsArgs, out: &mut dyn Write) -> Result<(), String> {
    let mut client = super::connect(&args.bootstrap, args.timeout_ms).await?;
    let need_topic = || {
        args.topic
            .clone()
            .ok_or_else(|| "--topic is required for this action".to_string())
    };
    let io = |e: std::io::Error| e.to_string();
    match args.action {
        TopicsAction::Create => {
            let topic = need_topic()?;
            let configs = parse_configs(&args.configs)?;
            client
                .create_topic(&topic, args.partitions, configs)
                .await
                .map_err(|e| e.to_string())?;
            writeln!(out, "Created topic {topic}.").map_err(io)?;
        }
        TopicsAction::Delete => {
            let topic = need_topic()?;
            client
                .delete_topic(&topic)
                .await
                .map_err(|e| e.to_string())?;
            writeln!(out, "Deleted topic {topic}.").map_err(io)?;
        }
        TopicsAction::List => {
            let md = client.metadata(None).await.map_err(|e| e.to_string())?;
            for t in md.topics {
                writeln!(out, "{}", t.name).map_err(io)?;
            }
        }
        TopicsAction::Describe => {
            let md = client
                .metadata(args.topic.clone().map(|t| vec![t]))
                .await
                .map_err(|e| e.to_string())?;
            for t in &md.topics {
                if t.error_code != crate::protocol::ErrorCode::None {
                    return Err(format!("topic {:?} does not exist", t.name));
                }
                let configs: Vec<String> =
                    t.configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                writeln!(
                    out,
                    "Topic: {}\tPartitionCount: {}\tConfigs: {}",
                    t.name,
                    t.partitions.len(),
                    configs.join(",")
                )
                .map_err(io)?;
                for p in &t.partitions {
                    let port = md.shard_port(p.owner_shard).unwrap_or(-1);
                    writeln!(
                        out,
                        "\tTopic: {}\tPartition: {}\tOwnerShard: {}\tShardPort: {port}",
                        t.name, p.partition, p.owner_shard
                    )
                    .map_err(io)?;
                }
            }
        }
    }
    Ok(())
}
