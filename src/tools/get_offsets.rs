//! `shardlog get-offsets`: Kafka's GetOffsetShell (kafka-get-offsets). Prints
//! `topic:partition:offset` sorted by topic and partition, omitting partitions with no
//! answer; `--show-timestamp` appends `:timestamp` (the found record's timestamp, -1 for
//! earliest/latest). Topics are chosen as Kafka's tool chooses them: `--topic` is a name or a
//! regular expression (whole-name match), `--topic-partitions` a list of
//! `topic[:N | N-M | N- | -M]`, and neither means every topic.

use super::leaders::Leaders;
use std::io::Write;

use regex::Regex;

use super::time_arg::parse_offset_target;

#[derive(clap::Args, Debug, Clone)]
pub struct GetOffsetsArgs {
    #[command(flatten)]
    pub server: super::ServerAddr,
    /// A topic name or regular expression [default: every topic].
    #[arg(long)]
    pub topic: Option<String>,
    /// Comma-separated partitions [default: all].
    #[arg(long, value_delimiter = ',')]
    pub partitions: Option<Vec<i32>>,
    /// Kafka's list of topic[:N | N-M | N- | -M], e.g. orders:0-3,logs.*
    #[arg(long)]
    pub topic_partitions: Option<String>,
    /// ms, ISO-8601 (no zone means UTC), earliest/-2, latest/-1 or max-timestamp/-3.
    #[arg(long, default_value = "latest", allow_hyphen_values = true)]
    pub time: String,
    /// Append the found record's timestamp.
    #[arg(long)]
    pub show_timestamp: bool,
}

/// One selector: topics whose whole name matches, and a partition range (inclusive).
struct Selector {
    topics: Regex,
    partitions: (i32, i32),
}

fn whole_name(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("topic pattern {pattern:?}: {e}"))
}

/// Parses `topic[:N | N-M | N- | -M]` entries separated by commas.
fn parse_topic_partitions(spec: &str) -> Result<Vec<Selector>, String> {
    spec.split(',')
        .filter(|e| !e.trim().is_empty())
        .map(|entry| {
            let (topic, range) = match entry.rsplit_once(':') {
                Some((t, r)) => (t, Some(r)),
                None => (entry, None),
            };
            let bad = || format!("--topic-partitions entry {entry:?}: use topic[:N|N-M|N-|-M]");
            let num = |s: &str| s.trim().parse::<i32>().map_err(|_| bad());
            let partitions = match range.map(str::trim) {
                None | Some("") => (0, i32::MAX),
                Some(r) => match r.split_once('-') {
                    None => (num(r)?, num(r)?),
                    Some(("", hi)) => (0, num(hi)?),
                    Some((lo, "")) => (num(lo)?, i32::MAX),
                    Some((lo, hi)) => (num(lo)?, num(hi)?),
                },
            };
            Ok(Selector {
                topics: whole_name(topic.trim())?,
                partitions,
            })
        })
        .collect()
}

fn selectors(args: &GetOffsetsArgs) -> Result<Vec<Selector>, String> {
    match (&args.topic_partitions, &args.topic) {
        (Some(_), Some(_)) => Err("give --topic or --topic-partitions, not both".into()),
        (Some(spec), None) => parse_topic_partitions(spec),
        (None, topic) => Ok(vec![Selector {
            topics: whole_name(topic.as_deref().unwrap_or(".*"))?,
            partitions: (0, i32::MAX),
        }]),
    }
}

pub async fn run(args: GetOffsetsArgs, out: &mut dyn Write) -> Result<(), String> {
    let target = parse_offset_target(&args.time)?;
    let selectors = selectors(&args)?;
    let mut client = super::connect(&args.server).await?;
    let md = client.metadata(None).await.map_err(|e| e.to_string())?;
    // (topic, partition) pairs, sorted.
    let mut chosen: Vec<(String, i32)> = Vec::new();
    for t in &md.topics {
        for p in t.partitions.iter().map(|p| p.partition) {
            let wanted = selectors.iter().any(|s| {
                s.topics.is_match(&t.name) && (s.partitions.0..=s.partitions.1).contains(&p)
            }) && args.partitions.as_ref().is_none_or(|ps| ps.contains(&p));
            if wanted {
                chosen.push((t.name.clone(), p));
            }
        }
    }
    if chosen.is_empty() {
        if let Some(t) = args
            .topic
            .as_deref()
            .filter(|t| !t.contains(['*', '.', '[']))
        {
            return Err(format!("topic {t:?} does not exist"));
        }
    }
    if let Some(ps) = &args.partitions {
        let named = args.topic.as_deref().filter(|t| md.topic(t).is_some());
        if let Some(topic) = named.and_then(|t| md.topic(t)) {
            if let Some(p) = ps
                .iter()
                .find(|&&p| p < 0 || p as usize >= topic.partitions.len())
            {
                return Err(format!(
                    "topic {:?} has partitions 0..{}, not {p}",
                    topic.name,
                    topic.partitions.len()
                ));
            }
        }
    }
    chosen.sort();
    chosen.dedup();
    let topics: Vec<&str> = chosen.iter().map(|(t, _)| t.as_str()).collect();
    let mut leaders = Leaders::of(client, &args.server, &topics).await?;
    for (topic, p) in chosen {
        let found = (leaders.client(&topic, p).await?)
            .list_offsets(&topic, p, target)
            .await
            .map_err(|e| e.to_string())?;
        if let Some((offset, ts)) = found {
            let line = if args.show_timestamp {
                format!("{topic}:{p}:{offset}:{ts}")
            } else {
                format!("{topic}:{p}:{offset}")
            };
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_topic_partitions_syntax() {
        let s = parse_topic_partitions("orders:0-3,logs.*:5-,x:-2,y:7,z").unwrap();
        assert_eq!(
            s.iter().map(|s| s.partitions).collect::<Vec<_>>(),
            vec![(0, 3), (5, i32::MAX), (0, 2), (7, 7), (0, i32::MAX)]
        );
        assert!(s[1].topics.is_match("logs.app") && !s[1].topics.is_match("xlogs"));
        assert!(!s[0].topics.is_match("orders2"));
        assert!(parse_topic_partitions("t:a-b").is_err());
        assert!(parse_topic_partitions("(:1").is_err());
    }
}
