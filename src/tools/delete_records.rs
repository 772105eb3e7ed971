//! `shardlog delete-records`: Kafka's kafka-delete-records. Moves each partition's log start
//! offset; the segments wholly below it go at the next retention pass.

use super::leaders::Leaders;
use std::io::Write;
use std::path::Path;

#[derive(clap::Args, Debug, Clone)]
pub struct DeleteRecordsArgs {
    #[command(flatten)]
    pub server: super::ServerAddr,
    /// Topic name.
    #[arg(long, required_unless_present = "offset_json_file")]
    pub topic: Option<String>,
    /// Partition [default: all; produce: by key (murmur2), round-robin without one].
    #[arg(long, default_value_t = 0)]
    pub partition: i32,
    /// New log start offset (-1: the log end).
    #[arg(
        long,
        allow_hyphen_values = true,
        required_unless_present = "offset_json_file"
    )]
    pub offset: Option<i64>,
    /// Kafka's JSON: {"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}.
    #[arg(long, conflicts_with_all = ["topic", "offset"])]
    pub offset_json_file: Option<std::path::PathBuf>,
}

impl DeleteRecordsArgs {
    /// (topic, partition, offset) to move; offset -1 means the log end.
    pub fn targets(&self) -> Result<Vec<(String, i32, i64)>, String> {
        match (&self.offset_json_file, &self.topic, self.offset) {
            (Some(file), _, _) => targets_from_file(file),
            (None, Some(topic), Some(offset)) => Ok(vec![(topic.clone(), self.partition, offset)]),
            _ => Err("give --topic and --offset, or --offset-json-file".to_string()),
        }
    }
}

/// Reads Kafka's offset JSON file:
/// `{"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}`.
pub fn targets_from_file(path: &Path) -> Result<Vec<(String, i32, i64)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_targets(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse_targets(text: &str) -> Result<Vec<(String, i32, i64)>, String> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let parts = doc
        .get("partitions")
        .and_then(|p| p.as_array())
        .ok_or("expected {\"partitions\": [...]}")?;
    parts
        .iter()
        .map(|p| {
            let topic = p
                .get("topic")
                .and_then(|t| t.as_str())
                .ok_or("entry without \"topic\"")?;
            let partition = p
                .get("partition")
                .and_then(|v| v.as_i64())
                .and_then(|v| i32::try_from(v).ok())
                .ok_or("entry without an integer \"partition\"")?;
            let offset = p
                .get("offset")
                .and_then(|v| v.as_i64())
                .ok_or("entry without an integer \"offset\"")?;
            Ok((topic.to_string(), partition, offset))
        })
        .collect()
}

pub async fn run(args: DeleteRecordsArgs, out: &mut dyn Write) -> Result<(), String> {
    let targets = args.targets()?;
    let client = super::connect(&args.server).await?;
    let topics: Vec<&str> = targets.iter().map(|(t, _, _)| t.as_str()).collect();
    let mut leaders = Leaders::of(client, &args.server, &topics).await?;
    writeln!(out, "Records delete operation completed:").map_err(|e| e.to_string())?;
    let mut failed = 0;
    for (topic, partition, offset) in targets {
        let deleted = match leaders.client(&topic, partition).await {
            Ok(leader) => {
                (leader.delete_records(&topic, partition, offset).await).map_err(|e| e.to_string())
            }
            Err(e) => Err(e),
        };
        let line = match deleted {
            Ok(low) => format!("partition: {topic}-{partition}\tlow_watermark: {low}"),
            Err(e) => {
                failed += 1;
                format!("partition: {topic}-{partition}\terror: {e}")
            }
        };
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
    }
    match failed {
        0 => Ok(()),
        n => Err(format!("{n} partition(s) failed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_offset_json_is_read() {
        let t = parse_targets(
            r#"{"partitions":[{"topic":"t","partition":0,"offset":3},{"topic":"u","partition":2,"offset":-1}],"version":1}"#,
        )
        .unwrap();
        assert_eq!(t, vec![("t".into(), 0, 3), ("u".into(), 2, -1)]);
        assert!(parse_targets(r#"{"partitions":[{"topic":"t"}]}"#).is_err());
        assert!(parse_targets("nonsense").is_err());
    }
}
