//! `shardlog log-dirs`: like kafka-log-dirs --describe, every partition's size as JSON (one
//! broker, one log directory), with shardlog's extras: log start and end offsets, segment
//! count and owner shard.

use std::io::Write;

use serde_json::json;

use crate::protocol::ErrorCode;

pub async fn run(
    bootstrap: &str,
    timeout_ms: u64,
    topics: Option<Vec<String>>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut client = super::connect(bootstrap, timeout_ms).await?;
    let logs = client
        .describe_logs(topics)
        .await
        .map_err(|e| e.to_string())?;
    let mut partitions = Vec::new();
    for t in &logs {
        if t.error_code != ErrorCode::None {
            return Err(format!("topic {:?} does not exist", t.name));
        }
        for p in &t.partitions {
            partitions.push(json!({
                "partition": format!("{}-{}", t.name, p.partition),
                "size": p.size_bytes,
                "offsetLag": 0,
                "isFuture": false,
                "logStartOffset": p.log_start_offset,
                "logEndOffset": p.log_end_offset,
                "segments": p.segments,
                "ownerShard": p.owner_shard,
            }));
        }
    }
    let doc = json!({
        "version": 1,
        "brokers": [{
            "broker": 0,
            // The server's data directory is not reported over the wire.
            "logDirs": [{ "error": null, "partitions": partitions }],
        }],
    });
    writeln!(out, "{doc}").map_err(|e| e.to_string())
}
