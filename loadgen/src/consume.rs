//! `loadgen consume`: sequential consumption of a topic's whole log, as a consumer catching
//! up does: every partition read front to back by its own connection (one fetch in flight
//! each, `--fetch-bytes` per fetch), cold (the server's caches dropped first) and warm
//! (straight after). Reports MB/s, per-fetch latency, device reads per fetch and the
//! server's CPU-seconds per GB.

use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;
use shardlog::format::batch::split_batches;
use shardlog::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};

use crate::cluster::{placement, PartitionRoute};
use crate::lookup::CacheMode;
use crate::nodes::Nodes;
use crate::report::{histogram, LatencyUs};

#[derive(Debug, Clone)]
pub struct ConsumeOpts {
    pub bootstrap: String,
    pub topic: String,
    pub fetch_bytes: i32,
    pub cache: CacheMode,
    pub shard_aware: bool,
    pub drop_kernel_page_cache: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumeResult {
    pub bytes: u64,
    pub fetches: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    pub fetch_latency_us: LatencyUs,
    /// Device reads the server issued per fetch (its Stats counters over the pass).
    pub device_reads_per_fetch: f64,
    /// The server process's CPU-seconds per GB read.
    pub server_cpu_seconds_per_gb: f64,
    pub server: crate::breakdown::Breakdown,
}

/// One partition's part of a pass: what it read and how long each fetch took.
struct PartitionRead {
    bytes: u64,
    hist: Histogram<u64>,
}

/// The offsets `[start, end)` a pass reads of each partition (the log as it is now).
async fn spans(
    nodes: &mut Nodes,
    topic: &str,
    routes: &[PartitionRoute],
) -> Result<Vec<(i64, i64)>, String> {
    let mut out = Vec::new();
    for r in routes {
        let admin = nodes.client(r.node)?;
        let e = |e: shardlog::client::ClientError| e.to_string();
        let at = |x: Option<(i64, i64)>| x.map_or(0, |x| x.0);
        let start = at(admin
            .list_offsets(topic, r.partition, EARLIEST_TIMESTAMP)
            .await
            .map_err(e)?);
        let end = at(admin
            .list_offsets(topic, r.partition, LATEST_TIMESTAMP)
            .await
            .map_err(e)?);
        out.push((start, end));
    }
    Ok(out)
}

/// Reads `[start, end)` of one partition, fetch after fetch.
async fn read_partition(
    addr: String,
    topic: String,
    partition: i32,
    (start, end): (i64, i64),
    fetch_bytes: i32,
) -> Result<PartitionRead, String> {
    let mut c = crate::connect::connect(&addr).await?;
    let mut out = PartitionRead {
        bytes: 0,
        hist: histogram(),
    };
    let mut offset = start;
    while offset < end {
        let t0 = Instant::now();
        let f = c
            .fetch(&topic, partition, offset, fetch_bytes)
            .await
            .map_err(|e| format!("fetch at {offset} of partition {partition}: {e}"))?;
        out.hist
            .record(t0.elapsed().as_micros().max(1) as u64)
            .map_err(|e| e.to_string())?;
        let batches = split_batches(&f.records)
            .map_err(|e| format!("fetch at {offset} of partition {partition}: {e}"))?;
        let (_, last) = batches
            .last()
            .expect("split_batches refuses an empty buffer");
        // A fetch that does not move on would loop for ever.
        if last.last_offset() < offset {
            return Err(format!(
                "fetch at {offset} of partition {partition} went backwards"
            ));
        }
        offset = last.last_offset() + 1;
        out.bytes += f.records.len() as u64;
    }
    Ok(out)
}

/// One pass over every partition at once (one task and connection each).
async fn pass(
    nodes: &mut Nodes,
    opts: &ConsumeOpts,
    routes: &[PartitionRoute],
    spans: &[(i64, i64)],
    cold: bool,
) -> Result<ConsumeResult, String> {
    if cold {
        nodes.drop_caches(opts.drop_kernel_page_cache).await?;
    }
    let reads_before = nodes.device_reads().await?;
    let server_start = nodes.mark().await?;
    let t0 = Instant::now();
    let tasks: Vec<_> = routes
        .iter()
        .zip(spans)
        .map(|(r, &span)| {
            let args = (r.addr.clone(), opts.topic.clone(), r.partition);
            glommio::spawn_local(read_partition(
                args.0,
                args.1,
                args.2,
                span,
                opts.fetch_bytes,
            ))
        })
        .collect();
    let (mut bytes, mut hist) = (0u64, histogram());
    for t in tasks {
        let read = t.await?;
        bytes += read.bytes;
        hist.add(&read.hist).map_err(|e| e.to_string())?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let (server, _) = nodes.since(&server_start, hist.len()).await?;
    let reads = nodes.device_reads().await? - reads_before;
    Ok(ConsumeResult {
        bytes,
        fetches: hist.len(),
        seconds,
        mb_per_s: bytes as f64 / 1e6 / seconds,
        fetch_latency_us: LatencyUs::of(&hist),
        device_reads_per_fetch: reads as f64 / hist.len().max(1) as f64,
        server_cpu_seconds_per_gb: server.cpu_seconds_per_gb(bytes),
        server,
    })
}

/// Runs the passes (in the current glommio executor): one result per cache mode.
pub async fn run(opts: &ConsumeOpts) -> Result<Vec<(String, ConsumeResult)>, String> {
    let (routes, nodes) = placement(&opts.bootstrap, &opts.topic, opts.shard_aware).await?;
    let mut nodes = Nodes::connect(&nodes).await?;
    let spans = spans(&mut nodes, &opts.topic, &routes).await?;
    if spans.iter().all(|(s, e)| e <= s) {
        return Err(format!(
            "topic {:?} is empty: write some data first (loadgen write)",
            opts.topic
        ));
    }
    let modes: &[bool] = match opts.cache {
        CacheMode::Cold => &[true],
        CacheMode::Warm => &[false],
        CacheMode::Both => &[true, false],
    };
    let mut out = Vec::new();
    for &cold in modes {
        let r = pass(&mut nodes, opts, &routes, &spans, cold).await?;
        out.push((if cold { "cold" } else { "warm" }.to_string(), r));
    }
    Ok(out)
}

pub fn print(rows: &[(String, ConsumeResult)]) {
    for (name, r) in rows {
        let l = r.fetch_latency_us;
        println!(
            "consume {name:<5} {:>9.1} MB/s  {} bytes in {} fetches, {:.2} s",
            r.mb_per_s, r.bytes, r.fetches, r.seconds
        );
        println!(
            "        fetch latency us  p50 {}  p90 {}  p99 {}  max {}  device reads/fetch {:.2}",
            l.p50, l.p90, l.p99, l.max, r.device_reads_per_fetch
        );
        crate::breakdown::print_cpu(&r.server, r.bytes, 0);
        crate::breakdown::print(&format!("consume {name}, per fetch"), &r.server);
    }
}
