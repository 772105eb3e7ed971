//! `shardlog produce`: one record per stdin line, batched into Kafka v2 batches.
//! Line layout: `[timestamp<tsep>][key<ksep>]value`. Without `--partition`, keyed records go
//! to Kafka's murmur2(key) % partitions, unkeyed ones round-robin.

use std::io::BufRead;

use bytes::Bytes;

use super::leaders::{is_not_leader, Leaders};
use super::partitioner::partition_for_key;
use crate::format::compression::Codec;
use crate::format::{BatchBuilder, RecordSpec};
use crate::protocol::{ACKS_ALL, ACKS_LEADER, ACKS_NONE};

#[derive(clap::Args, Debug, Clone)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub server: super::ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: String,
    /// Partition [default: all; produce: by key (murmur2), round-robin without one].
    #[arg(long)]
    pub partition: Option<i32>,
    /// 0, 1 or all.
    #[arg(long, default_value = "1")]
    pub acks: String,
    /// Split each line into key and value at this separator.
    #[arg(long)]
    pub key_separator: Option<String>,
    /// Each line starts with the record's CreateTime (epoch ms or ISO-8601) and this
    /// separator.
    #[arg(long)]
    pub timestamp_separator: Option<String>,
    /// Records per batch (a batch also ends at 1 MiB, or sooner to fit the topic's
    /// segment.bytes).
    #[arg(long, default_value_t = 1000)]
    pub batch_records: usize,
    /// kcat's -Z: send an empty value as null (a tombstone) and an empty key as no key.
    #[arg(short = 'Z', long)]
    pub null_empty: bool,
    /// kcat's -H name=value: a header on every record (repeatable).
    #[arg(short = 'H', long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Compress batches: none, gzip, snappy, lz4 or zstd.
    #[arg(
        long = "compression-codec",
        value_name = "COMPRESSION_CODEC",
        default_value = "none",
        value_parser = parse_codec
    )]
    pub compression: Codec,
}

/// Parses `--compression-codec`.
pub fn parse_codec(name: &str) -> Result<Codec, String> {
    Codec::from_name(name)
        .ok_or_else(|| format!("{name:?} is not one of none, gzip, snappy, lz4, zstd"))
}

const MAX_BATCH_BYTES: usize = 1 << 20;

/// Parses kcat's `-H name=value`.
pub fn parse_header(raw: &str) -> Result<(String, String), String> {
    raw.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("-H {raw:?} must be name=value"))
}

pub fn parse_acks(s: &str) -> Result<i16, String> {
    match s {
        "0" => Ok(ACKS_NONE),
        "1" => Ok(ACKS_LEADER),
        "all" | "-1" => Ok(ACKS_ALL),
        _ => Err(format!("--acks must be 0, 1 or all, got {s:?}")),
    }
}

struct Line {
    timestamp: i64,
    key: Option<Vec<u8>>,
    /// None: a null value (a tombstone).
    value: Option<Vec<u8>>,
}

fn parse_line(n: usize, line: &str, args: &ProduceArgs) -> Result<Line, String> {
    let mut rest = line;
    let timestamp = match &args.timestamp_separator {
        Some(sep) => {
            let (ts, r) = rest
                .split_once(sep.as_str())
                .ok_or_else(|| format!("line {n}: no timestamp separator {sep:?} in {line:?}"))?;
            rest = r;
            super::time_arg::parse_time(ts).map_err(|e| {
                format!("line {n}: {e} (the timestamp column takes epoch ms or ISO-8601)")
            })?
        }
        None => crate::time::now_ms(),
    };
    let key = match &args.key_separator {
        Some(sep) => {
            let (k, r) = rest
                .split_once(sep.as_str())
                .ok_or_else(|| format!("line {n}: no key separator {sep:?} in {line:?}"))?;
            rest = r;
            (!(args.null_empty && k.is_empty())).then(|| k.as_bytes().to_vec())
        }
        None => None,
    };
    Ok(Line {
        timestamp,
        key,
        value: (!(args.null_empty && rest.is_empty())).then(|| rest.as_bytes().to_vec()),
    })
}

/// What the server acknowledged so far: a failed run says it, so a resume is safe.
#[derive(Default)]
struct Acknowledged {
    records: u64,
    last_offsets: std::collections::BTreeMap<i32, i64>,
}

impl Acknowledged {
    fn explain(&self, error: String) -> String {
        let last: Vec<String> = self
            .last_offsets
            .iter()
            .map(|(p, o)| format!("partition {p} up to offset {o}"))
            .collect();
        format!(
            "{error}; {} records were acknowledged ({}); no other line of this run was",
            self.records,
            if last.is_empty() {
                "none".to_string()
            } else {
                last.join(", ")
            }
        )
    }
}

async fn send(
    leaders: &mut Leaders,
    args: &ProduceArgs,
    partition: i32,
    acks: i16,
    lines: &mut Vec<Line>,
    acked: &mut Acknowledged,
) -> Result<(), String> {
    let (topic, headers) = (&args.topic, &args.headers);
    if lines.is_empty() {
        return Ok(());
    }
    let count = lines.len() as u64;
    let mut b = BatchBuilder::new(MAX_BATCH_BYTES).compression(args.compression);
    for l in lines.iter() {
        let mut r = RecordSpec::new(l.key.as_deref(), l.value.as_deref()).timestamp(l.timestamp);
        for (k, v) in headers {
            r = r.header(k, Some(v.as_bytes()));
        }
        b.push(r);
    }
    let batch = Bytes::from(b.build());
    lines.clear();
    let mut reply = (leaders.client(topic, partition).await?)
        .produce(topic, partition, acks, batch.clone())
        .await;
    // Leadership moved: nothing was written; ask where it went and send it there.
    if reply.as_ref().is_err_and(is_not_leader) {
        leaders.refresh().await?;
        let leader = leaders.client(topic, partition).await?;
        reply = leader.produce(topic, partition, acks, batch).await;
    }
    let reply =
        reply.map_err(|e| acked.explain(format!("producing to {topic}-{partition}: {e}")))?;
    if let Some((_, last, _)) = reply {
        acked.records += count;
        acked.last_offsets.insert(partition, last);
    }
    Ok(())
}

/// Reads records from `input`; returns the number produced.
/// Lines waiting to be sent, per partition.
struct Pending {
    lines: Vec<Vec<Line>>,
    /// An upper estimate of each partition's batch size so far.
    bytes: Vec<usize>,
    /// A batch ends before it would pass this: 1 MiB, or less when the topic's
    /// segment.bytes is smaller (a batch must fit in one segment).
    max_batch_bytes: usize,
    next_round_robin: u32,
}

/// Bytes of a batch besides its records (the v2 header), and the most a record adds
/// besides its key and value (attributes, varint deltas and lengths, header count).
const BATCH_OVERHEAD: usize = 61;
const RECORD_OVERHEAD: usize = 32;

impl Pending {
    fn new(partitions: u32, segment_bytes: Option<usize>) -> Self {
        let max_batch_bytes = segment_bytes
            .map_or(MAX_BATCH_BYTES, |s| s.saturating_sub(BATCH_OVERHEAD))
            .clamp(1, MAX_BATCH_BYTES);
        Pending {
            lines: (0..partitions).map(|_| Vec::new()).collect(),
            bytes: vec![BATCH_OVERHEAD; partitions as usize],
            max_batch_bytes,
            next_round_robin: 0,
        }
    }

    /// The partition a line goes to: the one asked for, its key's, or the next in turn.
    fn partition_for(&mut self, fixed: Option<i32>, line: &Line) -> usize {
        let partitions = self.lines.len() as u32;
        let p = match (fixed, &line.key) {
            (Some(p), _) => p as u32,
            (None, Some(k)) => partition_for_key(k, partitions),
            (None, None) => {
                let p = self.next_round_robin;
                self.next_round_robin = (p + 1) % partitions;
                p
            }
        };
        assert!(p < partitions, "partition {p} of {partitions}");
        p as usize
    }

    /// The most a line adds to a batch.
    fn size_of(line: &Line) -> usize {
        line.value.as_ref().map_or(0, |v| v.len())
            + line.key.as_ref().map_or(0, |k| k.len())
            + RECORD_OVERHEAD
    }

    /// Whether `line` would take partition `p`'s batch past its size: send it first.
    fn would_overflow(&self, p: usize, line: &Line) -> bool {
        !self.lines[p].is_empty() && self.bytes[p] + Self::size_of(line) > self.max_batch_bytes
    }

    /// Queues a line; true when its partition's batch is full.
    fn add(&mut self, p: usize, line: Line, batch_records: usize) -> bool {
        self.bytes[p] += Self::size_of(&line);
        self.lines[p].push(line);
        assert!(
            self.lines[p].len() == 1 || self.bytes[p] <= self.max_batch_bytes,
            "only a lone line makes a batch larger than the most a batch may hold"
        );
        self.lines[p].len() >= batch_records.max(1) || self.bytes[p] >= self.max_batch_bytes
    }

    /// Partition `p`'s batch went out: its next one starts empty.
    fn sent(&mut self, p: usize) {
        assert!(
            self.lines[p].is_empty(),
            "a sent batch leaves nothing queued"
        );
        self.bytes[p] = BATCH_OVERHEAD;
    }
}

/// The next input line without its line ending; `None` at the end.
fn next_line<'a>(input: &mut dyn BufRead, buf: &'a mut String) -> Result<Option<&'a str>, String> {
    buf.clear();
    let read = input
        .read_line(buf)
        .map_err(|e| format!("reading stdin: {e}"))?;
    if read == 0 {
        return Ok(None);
    }
    let text = buf.strip_suffix('\n').unwrap_or(buf);
    Ok(Some(text.strip_suffix('\r').unwrap_or(text)))
}

/// Warns (once per run) of a timestamp that looks like a mistake (seconds for ms, ...).
fn warn_if_suspicious(n: usize, line: &Line, warned: &mut bool) {
    if *warned {
        return;
    }
    if let Some(why) = super::time_arg::suspicious(line.timestamp, crate::time::now_ms()) {
        eprintln!(
            "warning: line {n}: timestamp {} {why} (only the first such line is reported)",
            line.timestamp
        );
        *warned = true;
    }
}

pub async fn run(args: ProduceArgs, input: &mut dyn BufRead) -> Result<u64, String> {
    let acks = parse_acks(&args.acks)?;
    let mut client = super::connect(&args.server).await?;
    let meta = super::topic_metadata(&mut client, &args.topic).await?;
    let mut leaders = Leaders::of(client, &args.server, &[&args.topic]).await?;
    let partitions = meta.partitions.len() as u32;
    if let Some(p) = args.partition {
        if p < 0 || p as u32 >= partitions {
            return Err(format!(
                "topic {:?} has partitions 0..{partitions}, not {p}",
                args.topic
            ));
        }
    }
    // A batch must fit in one segment: a topic with small segments gets small batches.
    let segment_bytes = meta
        .configs
        .iter()
        .find(|(k, _)| k == "segment.bytes")
        .and_then(|(_, v)| v.parse().ok());
    let mut pending = Pending::new(partitions, segment_bytes);
    let (mut produced, mut acked, mut warned) = (0u64, Acknowledged::default(), false);
    let mut buf = String::new();
    let mut n = 0usize;
    while let Some(text) = next_line(input, &mut buf)? {
        n += 1;
        let line = parse_line(n, text, &args).map_err(|e| acked.explain(e))?;
        if args.timestamp_separator.is_some() {
            warn_if_suspicious(n, &line, &mut warned);
        }
        let p = pending.partition_for(args.partition, &line);
        produced += 1;
        if pending.would_overflow(p, &line) {
            send(
                &mut leaders,
                &args,
                p as i32,
                acks,
                &mut pending.lines[p],
                &mut acked,
            )
            .await?;
            pending.sent(p);
        }
        if pending.add(p, line, args.batch_records) {
            let lines = &mut pending.lines[p];
            send(&mut leaders, &args, p as i32, acks, lines, &mut acked).await?;
            pending.sent(p);
        }
    }
    for (p, lines) in pending.lines.iter_mut().enumerate() {
        send(&mut leaders, &args, p as i32, acks, lines, &mut acked).await?;
    }
    if acks == ACKS_NONE {
        leaders.round_trip_all().await?;
    }
    Ok(produced)
}
