//! `shardlog get-offsets`: Kafka's GetOffsetShell. Prints `topic:partition:offset` per
//! partition, sorted by partition, omitting partitions with no answer; `--show-timestamp`
//! appends `:timestamp` (the found record's timestamp, -1 for earliest/latest).

use std::io::Write;

use super::time_arg::parse_offset_target;

pub struct GetOffsetsArgs {
    pub bootstrap: String,
    /// Connect and per-request timeout.
    pub timeout_ms: u64,
    pub topic: String,
    pub partitions: Option<Vec<i32>>,
    pub time: String,
    pub show_timestamp: bool,
}

pub async fn run(args: GetOffsetsArgs, out: &mut dyn Write) -> Result<(), String> {
    let target = parse_offset_target(&args.time)?;
    let mut client = super::connect(&args.bootstrap, args.timeout_ms).await?;
    let meta = super::topic_metadata(&mut client, &args.topic).await?;
    let mut partitions: Vec<i32> = match &args.partitions {
        Some(ps) => {
            for &p in ps {
                if p < 0 || p as usize >= meta.partitions.len() {
                    return Err(format!(
                        "topic {:?} has partitions 0..{}, not {p}",
                        args.topic,
                        meta.partitions.len()
                    ));
                }
            }
            ps.clone()
        }
        None => meta.partitions.iter().map(|p| p.partition).collect(),
    };
    partitions.sort_unstable();
    partitions.dedup();
    for p in partitions {
        let found = client
            .list_offsets(&args.topic, p, target)
            .await
            .map_err(|e| e.to_string())?;
        if let Some((offset, ts)) = found {
            let line = if args.show_timestamp {
                format!("{}:{p}:{offset}:{ts}", args.topic)
            } else {
                format!("{}:{p}:{offset}", args.topic)
            };
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
