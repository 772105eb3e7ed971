//! `loadgen lookup`: random lookups over the whole existing log of a topic.
//! By offset: a Fetch of one batch at a random offset. By timestamp: a FetchAtTime (one
//! round trip: the server's ListOffsets, then its Fetch at the offset found) at a random
//! time between the log's first and largest timestamps. Cold: the server drops its caches (DropCaches) before each lookup (not timed).
//! Warm: the same lookups after a warm-up pass over them. Each lookup also reports how many
//! device reads the server issued for it (Stats counters before and after).

use std::collections::HashMap;
use std::time::Instant;

use indicatif::ProgressBar;
use shardlog::client::Client;
use shardlog::format::batch::{split_batches, RecordsSection};
use shardlog::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};

use crate::cluster::{placement, PartitionRoute};
use crate::nodes::Nodes;
use crate::report::{histogram, LatencyUs, LookupResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    Offset,
    Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CacheMode {
    Cold,
    Warm,
    Both,
}

#[derive(Debug, Clone)]
pub struct LookupOpts {
    pub bootstrap: String,
    pub topic: String,
    pub by: By,
    pub cache: CacheMode,
    pub count: usize,
    pub shard_aware: bool,
    pub drop_kernel_page_cache: bool,
}

struct PartitionSpan {
    partition: i32,
    start: i64,
    end: i64,
    min_ts: i64,
    max_ts: i64,
}

enum Target {
    Offset(i32, i64),
    Time(i32, i64),
}

async fn spans(
    nodes: &mut Nodes,
    topic: &str,
    routes: &[PartitionRoute],
) -> Result<Vec<PartitionSpan>, String> {
    let mut out = Vec::new();
    for r in routes {
        let (c, p) = (nodes.client(r.node)?, r.partition);
        let e = |e: shardlog::client::ClientError| e.to_string();
        let start = c
            .list_offsets(topic, p, EARLIEST_TIMESTAMP)
            .await
            .map_err(e)?
            .map_or(0, |x| x.0);
        let end = c
            .list_offsets(topic, p, LATEST_TIMESTAMP)
            .await
            .map_err(e)?
            .map_or(0, |x| x.0);
        if end <= start {
            continue;
        }
        let max_ts = c
            .list_offsets(topic, p, MAX_TIMESTAMP)
            .await
            .map_err(e)?
            .map_or(0, |x| x.1);
        let first = c.fetch(topic, p, start, 1).await.map_err(e)?;
        let (s, h) = split_batches(&first.records).map_err(|e| e.to_string())?[0];
        let section =
            RecordsSection::of(&first.records[s..s + h.size()], &h).map_err(|e| e.to_string())?;
        let min_ts = section
            .decode()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|r| r.timestamp)
            .min()
            .unwrap_or(max_ts);
        out.push(PartitionSpan {
            partition: p,
            start,
            end,
            min_ts,
            max_ts,
        });
    }
    Ok(out)
}

fn targets(spans: &[PartitionSpan], by: By, count: usize, seed: u64) -> Vec<Target> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let total: i64 = spans.iter().map(|s| s.end - s.start).sum();
    (0..count)
        .map(|_| {
            // A partition chosen in proportion to its records.
            let mut pick = rng.i64(0..total);
            let s = spans
                .iter()
                .find(|s| {
                    let n = s.end - s.start;
                    if pick < n {
                        true
                    } else {
                        pick -= n;
                        false
                    }
                })
                .unwrap_or(&spans[0]);
            match by {
                By::Offset => Target::Offset(s.partition, rng.i64(s.start..s.end)),
                By::Timestamp => Target::Time(s.partition, rng.i64(s.min_ts..=s.max_ts)),
            }
        })
        .collect()
}

async fn lookup(
    conns: &mut HashMap<String, Client>,
    addr_of: &HashMap<i32, String>,
    topic: &str,
    t: &Target,
) -> Result<(), String> {
    let (p, addr) = match t {
        Target::Offset(p, _) | Target::Time(p, _) => (*p, &addr_of[p]),
    };
    let c = conns.get_mut(addr).expect("connected");
    let (at, records) = match *t {
        Target::Offset(_, o) => {
            let f = c.fetch(topic, p, o, 1).await.map_err(|e| e.to_string())?;
            (Some(o), f.records)
        }
        // One round trip: the server looks the time up and fetches from what it found.
        Target::Time(_, ts) => {
            let (found, f) = c
                .fetch_at_time(topic, p, ts, 1)
                .await
                .map_err(|e| e.to_string())?;
            (found.map(|x| x.0), f.records)
        }
    };
    match at {
        Some(o) if records.is_empty() => {
            Err(format!("fetch at {o} of partition {p} returned nothing"))
        }
        _ => Ok(()),
    }
}

/// Runs the lookups (in the current glommio executor); returns one result per cache mode.
pub async fn run(
    opts: &LookupOpts,
    progress: &ProgressBar,
) -> Result<Vec<(String, LookupResult)>, String> {
    let (routes, nodes) = placement(&opts.bootstrap, &opts.topic, opts.shard_aware).await?;
    let mut nodes = Nodes::connect(&nodes).await?;
    let spans = spans(&mut nodes, &opts.topic, &routes).await?;
    if spans.is_empty() {
        return Err(format!(
            "topic {:?} is empty: write some data first (loadgen write)",
            opts.topic
        ));
    }
    let mut peers = Peers {
        addr_of: routes
            .iter()
            .map(|r| (r.partition, r.addr.clone()))
            .collect(),
        conns: HashMap::new(),
    };
    for addr in peers.addr_of.values() {
        if !peers.conns.contains_key(addr) {
            let c = crate::connect::connect(addr).await?;
            peers.conns.insert(addr.clone(), c);
        }
    }
    let targets = targets(&spans, opts.by, opts.count.max(1), 42);
    let by = match opts.by {
        By::Offset => "offset",
        By::Timestamp => "timestamp",
    };
    let modes: &[bool] = match opts.cache {
        CacheMode::Cold => &[true],
        CacheMode::Warm => &[false],
        CacheMode::Both => &[true, false],
    };
    let mut out = vec![network_baseline(&mut peers, targets.len().max(100)).await?];
    for &cold in modes {
        let r = lookup_pass(&mut peers, &mut nodes, opts, &targets, cold, progress).await?;
        out.push((format!("{by} {}", if cold { "cold" } else { "warm" }), r));
    }
    Ok(out)
}

/// The connections lookups go over: one per shard address, and each partition's address.
struct Peers {
    addr_of: HashMap<i32, String>,
    conns: HashMap<String, Client>,
}

/// Same-run baseline: a round trip that touches no storage (ApiVersions), on a connection
/// the lookups use, so lookup latencies can be read against the network.
async fn network_baseline(
    peers: &mut Peers,
    round_trips: usize,
) -> Result<(String, LookupResult), String> {
    let c = peers.conns.values_mut().next().expect("one connection");
    let mut hist = histogram();
    for _ in 0..round_trips {
        let t0 = Instant::now();
        c.call(&shardlog::protocol::Request::ApiVersions)
            .await
            .map_err(|e| e.to_string())?;
        hist.record(t0.elapsed().as_micros().max(1) as u64)
            .map_err(|e| e.to_string())?;
    }
    let result = LookupResult {
        lookups: hist.len(),
        latency_us: LatencyUs::of(&hist),
        device_reads_per_lookup_mean: 0.0,
        device_reads_per_lookup_max: 0,
        server: Default::default(),
        round_trip_us: None,
        hist: Some(hist),
    };
    Ok(("network round trip".to_string(), result))
}

/// One ApiVersions round trip (us) on the connection `t`'s lookup uses.
async fn round_trip(peers: &mut Peers, t: &Target) -> Result<u64, String> {
    let p = match t {
        Target::Offset(p, _) | Target::Time(p, _) => *p,
    };
    let c = peers.conns.get_mut(&peers.addr_of[&p]).expect("connected");
    let t0 = Instant::now();
    c.call(&shardlog::protocol::Request::ApiVersions)
        .await
        .map_err(|e| e.to_string())?;
    Ok(t0.elapsed().as_micros().max(1) as u64)
}

/// One pass over the targets, cold (caches dropped before each lookup) or warm (after a
/// warm-up pass over exactly these lookups).
async fn lookup_pass(
    peers: &mut Peers,
    nodes: &mut Nodes,
    opts: &LookupOpts,
    targets: &[Target],
    cold: bool,
    progress: &ProgressBar,
) -> Result<LookupResult, String> {
    if !cold {
        for t in targets {
            lookup(&mut peers.conns, &peers.addr_of, &opts.topic, t).await?;
        }
    }
    let mut hist = histogram();
    let mut round_trips = histogram();
    let (mut reads_total, mut reads_max) = (0u64, 0u64);
    // Warm lookups run back to back, undisturbed: their device reads are counted over the
    // whole pass (the max is then the pass total, an upper bound). Cold lookups need a
    // DropCaches before each one anyway, and are counted one by one.
    let pass_start = nodes.device_reads().await?;
    let server_start = nodes.mark().await?;
    for t in targets {
        let before = match cold {
            true => nodes.drop_caches(opts.drop_kernel_page_cache).await?,
            false => 0,
        };
        if !cold {
            // The floor, interleaved: a round trip on the same connection just before.
            round_trips
                .record(round_trip(peers, t).await?)
                .map_err(|e| e.to_string())?;
        }
        let t0 = Instant::now();
        lookup(&mut peers.conns, &peers.addr_of, &opts.topic, t).await?;
        hist.record(t0.elapsed().as_micros().max(1) as u64)
            .map_err(|e| e.to_string())?;
        if cold {
            let after = nodes.device_reads().await?;
            let reads = (after - before) as u64;
            reads_total += reads;
            reads_max = reads_max.max(reads);
        }
        progress.inc(1);
    }
    if !cold {
        let pass_end = nodes.device_reads().await?;
        reads_total = (pass_end - pass_start) as u64;
        reads_max = reads_total;
    }
    let (server, _) = nodes.since(&server_start, targets.len() as u64).await?;
    Ok(LookupResult {
        lookups: targets.len() as u64,
        latency_us: LatencyUs::of(&hist),
        device_reads_per_lookup_mean: reads_total as f64 / targets.len() as f64,
        device_reads_per_lookup_max: reads_max,
        server,
        round_trip_us: (!cold).then(|| LatencyUs::of(&round_trips)),
        hist: Some(hist),
    })
}
