//! `loadgen write`: sequential-write load. Each connection produces to one partition (on its
//! owner shard unless told otherwise), keeping up to `pipeline` requests in flight.
//! Closed loop by default; with `--rate` the load is open loop: request k is due at
//! start + k/rate and its latency is measured from that due time, so a stalled server is
//! charged for every request it delayed (no coordinated omission).

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::{LocalExecutorPoolBuilder, PoolPlacement};
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use shardlog::format::batch::restamp_uniform;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::multi::ProduceEntry;
use shardlog::protocol::{ApiKey, Request, ResponseBody, ACKS_NONE};

use crate::breakdown::Breakdown;
use crate::cluster::placement;
use crate::report::{histogram, LatencyUs, NodeReport, WriteResult};
use shardlog::metrics::MetricsReport;

#[derive(Debug, Clone)]
pub struct WriteOpts {
    pub bootstrap: String,
    pub topic: String,
    pub record_size: usize,
    pub batch_records: usize,
    pub total_bytes: Option<u64>,
    pub duration_secs: Option<f64>,
    pub connections: usize,
    pub acks: i16,
    pub rate_records_per_s: Option<f64>,
    /// With a linger: how long each batch's oldest record waited before it was sent
    /// (counted in its latency, as a producer's record latency counts it).
    pub oldest_record_wait: Duration,
    pub pipeline: usize,
    pub shard_aware: bool,
    pub client_cores: usize,
    /// Partitions per request: 1 is Produce; more is MultiProduce to that many partitions.
    pub partitions_per_request: usize,
    /// Each request of a connection goes to the next partition its shard owns.
    pub rotate_partitions: bool,
}

struct ConnResult {
    /// The node the connection wrote to.
    node: i32,
    bytes: u64,
    records: u64,
    hist: Histogram<u64>,
}

/// A whole Produce (one partition) or MultiProduce (several) request frame, encoded once
/// per connection. Each send only restamps it (the records' timestamp becomes "now", each
/// batch CRC is recomputed): the client spends its CPU on sending, not on encoding the same
/// bytes again.
struct ProduceFrame {
    frame: Vec<u8>,
    /// Where each batch starts, and the batches' common length.
    batches_at: Vec<usize>,
    batch_len: usize,
    key: ApiKey,
}

impl ProduceFrame {
    fn new(topic: &str, partitions: &[i32], acks: i16, value: &[u8], records: usize) -> Self {
        let mut b = BatchBuilder::new(records * (value.len() + 16) + 128);
        for _ in 0..records {
            b.push(RecordSpec::new(None, Some(value)).timestamp(0));
        }
        let batch = Bytes::from(b.build());
        let request = match partitions {
            [p] => Request::Produce {
                topic: topic.to_string(),
                partition: *p,
                acks,
                records: batch.clone(),
            },
            many => Request::MultiProduce {
                acks,
                partitions: many
                    .iter()
                    .map(|&partition| ProduceEntry {
                        topic: topic.to_string(),
                        partition,
                        records: batch.clone(),
                    })
                    .collect(),
            },
        };
        let key = request.api_key();
        let frame = request.encode_frame(0);
        // Each batch is the last field of its entry: entry i ends (n - i - 1) entries
        // before the frame does, and entries have one size.
        let n = partitions.len();
        let entry = match key {
            ApiKey::Produce => frame.len(),
            _ => 2 + topic.len() + 4 + 4 + batch.len(),
        };
        let batches_at = (0..n)
            .map(|i| frame.len() - (n - i - 1) * entry - batch.len())
            .collect();
        ProduceFrame {
            frame,
            batches_at,
            batch_len: batch.len(),
            key,
        }
    }

    fn records_len(&self) -> u64 {
        (self.batches_at.len() * self.batch_len) as u64
    }

    fn records_per_request(&self, per_batch: usize) -> u64 {
        (self.batches_at.len() * per_batch) as u64
    }

    /// Where a one-partition Produce frame holds its partition: the one place two frames
    /// that differ only in it differ (found, not assumed from the layout).
    fn partition_field(topic: &str, acks: i16, value: &[u8], records: usize) -> usize {
        let a = Self::new(topic, &[0], acks, value, records).frame;
        let b = Self::new(topic, &[-1], acks, value, records).frame;
        assert_eq!(a.len(), b.len(), "the partition has a fixed width");
        let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
        assert!(
            differ.len() == 4 && differ[3] == differ[0] + 3,
            "one i32 partition field"
        );
        differ[0]
    }

    /// Points a one-partition frame at `partition` (its field at `at`).
    fn set_partition(&mut self, at: usize, partition: i32) {
        self.frame[at..at + 4].copy_from_slice(&partition.to_be_bytes());
    }

    /// The frame to send now, with fresh timestamps and correlation id.
    fn stamp(&mut self, correlation_id: i32) -> &[u8] {
        self.frame[8..12].copy_from_slice(&correlation_id.to_be_bytes());
        let now = shardlog::time::now_ms();
        for &at in &self.batches_at {
            restamp_uniform(&mut self.frame[at..at + self.batch_len], now);
        }
        &self.frame
    }
}

/// What one connection shares with the others on its executor, and its pacing.
struct Pacing {
    budget: Rc<Cell<i64>>,
    deadline: Option<Instant>,
    start: Instant,
    interval: Option<Duration>,
    progress: ProgressBar,
}

/// The partitions a connection writes: one request's, and those its requests take turns on
/// (none: every request goes to the request's own).
struct Targets {
    node: i32,
    request: Vec<i32>,
    rotation: Vec<i32>,
}

async fn one_connection(
    opts: WriteOpts,
    addr: String,
    targets: Targets,
    pacing: Pacing,
) -> Result<ConnResult, String> {
    let Targets {
        node,
        request: partitions,
        rotation,
    } = targets;
    let Pacing {
        budget,
        deadline,
        start,
        interval,
        progress,
    } = pacing;
    let mut c = crate::connect::connect(&addr).await?;
    let value: Vec<u8> = (0..opts.record_size).map(|_| fastrand::u8(..)).collect();
    let mut request = ProduceFrame::new(
        &opts.topic,
        &partitions,
        opts.acks,
        &value,
        opts.batch_records,
    );
    let per_request = request.records_per_request(opts.batch_records);
    let partition_at = (rotation.len() > 1)
        .then(|| ProduceFrame::partition_field(&opts.topic, opts.acks, &value, opts.batch_records));
    let mut turn = 0usize;
    let mut correlation_id = 0i32;
    let mut hist = histogram();
    let mut inflight: VecDeque<(Instant, u64)> = VecDeque::new();
    let (mut bytes, mut records) = (0u64, 0u64);
    let mut k = 0u32;
    loop {
        let out_of_budget = budget.get() <= 0 || deadline.is_some_and(|d| Instant::now() >= d);
        if !out_of_budget && inflight.len() < opts.pipeline.max(1) {
            let due = match interval {
                Some(iv) => {
                    let due = start + iv * k;
                    k += 1;
                    let now = Instant::now();
                    if due > now {
                        glommio::timer::sleep(due - now).await;
                    }
                    due
                }
                None => Instant::now(),
            };
            let size = request.records_len();
            budget.set(budget.get() - size as i64);
            correlation_id = correlation_id.wrapping_add(1);
            if let Some(at) = partition_at {
                request.set_partition(at, rotation[turn % rotation.len()]);
                turn += 1;
            }
            c.send_raw(request.stamp(correlation_id))
                .await
                .map_err(|e| e.to_string())?;
            if opts.acks == ACKS_NONE {
                bytes += size;
                records += per_request;
                progress.inc(size);
            } else {
                inflight.push_back((due - opts.oldest_record_wait, size));
            }
            continue;
        }
        let Some((t0, size)) = inflight.pop_front() else {
            break;
        };
        let resp = c.recv(request.key).await.map_err(|e| e.to_string())?;
        check_produced(resp.result, &partitions)?;
        hist.record(t0.elapsed().as_micros().max(1) as u64)
            .map_err(|e| e.to_string())?;
        bytes += size;
        records += per_request;
        progress.inc(size);
    }
    if opts.acks == ACKS_NONE {
        // No replies: a round trip proves the server read everything we sent.
        c.metadata(Some(vec![])).await.map_err(|e| e.to_string())?;
    }
    Ok(ConnResult {
        node,
        bytes,
        records,
        hist,
    })
}

/// A produce reply, or the first partition's error.
fn check_produced(
    result: Result<ResponseBody, (shardlog::protocol::ErrorCode, String)>,
    partitions: &[i32],
) -> Result<(), String> {
    let failed =
        |p: i32, code, msg: &str| format!("produce to partition {p} failed: {code}: {msg}");
    match result {
        Err((code, msg)) => Err(failed(partitions[0], code, &msg)),
        Ok(ResponseBody::MultiProduce(all)) => match all.iter().find(|r| r.error.is_some()) {
            Some(r) => {
                let (code, msg) = r
                    .error
                    .clone()
                    .unwrap_or((shardlog::protocol::ErrorCode::Internal, String::new()));
                Err(failed(r.partition, code, &msg))
            }
            None => Ok(()),
        },
        Ok(_) => Ok(()),
    }
}

/// The partitions connection `conn` writes to: its own route's and the next ones, in the
/// order the routes list them, all led by its route's node (one request goes to one node).
fn partitions_of(
    conn: usize,
    per_request: usize,
    routes: &[crate::cluster::PartitionRoute],
) -> Vec<i32> {
    let node = routes[conn % routes.len()].node;
    let here: Vec<i32> = (routes.iter().filter(|r| r.node == node))
        .map(|r| r.partition)
        .collect();
    (0..per_request.clamp(1, here.len()))
        .map(|k| here[(conn * per_request + k) % here.len()])
        .collect()
}

/// The partitions connection `conn` takes turns on: those at its route's address (its
/// shard), shared out among the connections to that address, so every partition is
/// written and no two connections write the same one.
fn rotation_of(
    conn: usize,
    connections: usize,
    routes: &[crate::cluster::PartitionRoute],
) -> Vec<i32> {
    let addr = &routes[conn % routes.len()].addr;
    let peers: Vec<usize> = (0..connections)
        .filter(|&c| routes[c % routes.len()].addr == *addr)
        .collect();
    let me = peers
        .iter()
        .position(|&c| c == conn)
        .expect("a connection is its own peer");
    let here: Vec<i32> = routes
        .iter()
        .filter(|r| r.addr == *addr)
        .map(|r| r.partition)
        .collect();
    let mine: Vec<i32> = here.iter().copied().skip(me).step_by(peers.len()).collect();
    if mine.is_empty() {
        vec![routes[conn % routes.len()].partition]
    } else {
        mine
    }
}

/// Runs the write workload on `client_cores` glommio executors.
pub fn run(opts: WriteOpts, progress: ProgressBar) -> Result<WriteResult, String> {
    if opts.record_size == 0 || opts.batch_records == 0 || opts.connections == 0 {
        return Err("record size, batch records and connections must be positive".into());
    }
    let (b, t, sa) = (opts.bootstrap.clone(), opts.topic.clone(), opts.shard_aware);
    let (routes, nodes) =
        crate::breakdown::blocking(move || async move { placement(&b, &t, sa).await })?;
    let cores = opts.client_cores.clamp(
        1,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    );
    let total = match (opts.total_bytes, opts.duration_secs) {
        (Some(b), _) => b,
        (None, Some(_)) => u64::MAX / 4,
        (None, None) => 1 << 30,
    };
    let interval = opts.rate_records_per_s.map(|r| {
        let per_conn_requests = r / opts.batch_records as f64 / opts.connections as f64;
        Duration::from_secs_f64(1.0 / per_conn_requests.max(1e-9))
    });
    let server_start = mark_nodes(&nodes)?;
    let start_all = Instant::now();
    let sampler = Sampler::start(progress.clone());
    let next_index = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handles = LocalExecutorPoolBuilder::new(PoolPlacement::Unbound(cores))
        .io_memory(1 << 20)
        .on_all_shards({
            let opts = opts.clone();
            let routes = routes.clone();
            let progress = progress.clone();
            move || {
                let (opts, routes, progress) = (opts.clone(), routes.clone(), progress.clone());
                let me = next_index.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let share = Share {
                    me,
                    cores,
                    bytes: total / cores as u64,
                    interval,
                };
                executor_connections(opts, routes, share, progress)
            }
        })
        .map_err(|e| e.to_string())?;
    let Totals {
        bytes,
        records,
        hist,
        per_node,
    } = sum_results(handles.join_all())?;
    let seconds = start_all.elapsed().as_secs_f64();
    let throughput_mb_per_s = sampler.stop();
    progress.finish_and_clear();
    let requests = records / (opts.batch_records * opts.partitions_per_request.max(1)) as u64;
    let (server, cpu) = since_nodes(&nodes, server_start, requests)?;
    Ok(WriteResult {
        nodes: node_reports(&nodes, &routes, &per_node, &cpu),
        bytes,
        records,
        seconds,
        mb_per_s: bytes as f64 / 1e6 / seconds,
        records_per_s: records as f64 / seconds,
        latency_us: (opts.acks != ACKS_NONE).then(|| LatencyUs::of(&hist)),
        corrected_for_coordinated_omission: interval.is_some(),
        server_cpu_seconds_per_gb: server.cpu_seconds_per_gb(bytes),
        server,
        throughput_mb_per_s,
    })
}

/// The nodes' metrics now (from outside an executor, on connections of its own).
fn mark_nodes(nodes: &[crate::cluster::Node]) -> Result<Vec<MetricsReport>, String> {
    let nodes = nodes.to_vec();
    crate::breakdown::blocking(move || async move {
        crate::nodes::Nodes::connect(&nodes).await?.mark().await
    })
}

/// What the nodes did since `starts`, over `ops` operations, and each node's CPU.
fn since_nodes(
    nodes: &[crate::cluster::Node],
    starts: Vec<MetricsReport>,
    ops: u64,
) -> Result<(Breakdown, Vec<f64>), String> {
    let nodes = nodes.to_vec();
    crate::breakdown::blocking(move || async move {
        let mut observed = crate::nodes::Nodes::connect(&nodes).await?;
        observed.since(&starts, ops).await
    })
}

/// What one client executor does: its index, how many there are, its share of the bytes,
/// and the open-loop interval.
struct Share {
    me: usize,
    cores: usize,
    bytes: u64,
    interval: Option<Duration>,
}

/// One client executor: its connections (every `cores`-th), each to its partitions.
async fn executor_connections(
    opts: WriteOpts,
    routes: Vec<crate::cluster::PartitionRoute>,
    share: Share,
    progress: ProgressBar,
) -> Result<Vec<ConnResult>, String> {
    let budget = Rc::new(Cell::new(share.bytes as i64));
    let start = Instant::now();
    let deadline = opts
        .duration_secs
        .map(|s| start + Duration::from_secs_f64(s));
    let mut tasks = Vec::new();
    for conn in (0..opts.connections).filter(|c| c % share.cores == share.me % share.cores) {
        let partitions = partitions_of(conn, opts.partitions_per_request, &routes);
        let rotation = match opts.rotate_partitions {
            true => rotation_of(conn, opts.connections, &routes),
            false => Vec::new(),
        };
        // A request for several partitions goes to their node, which forwards each
        // shard's share (one hop per shard).
        let route = &routes[conn % routes.len()];
        let addr = match partitions.len() {
            1 => route.addr.clone(),
            _ => route.node_addr.clone(),
        };
        let pacing = Pacing {
            budget: budget.clone(),
            deadline,
            start,
            interval: share.interval,
            progress: progress.clone(),
        };
        let targets = Targets {
            node: route.node,
            request: partitions,
            rotation,
        };
        tasks.push(glommio::spawn_local(one_connection(
            opts.clone(),
            addr,
            targets,
            pacing,
        )));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await?);
    }
    Ok(results)
}

/// What one client executor's thread gave back.
type Joined = Result<Result<Vec<ConnResult>, String>, glommio::GlommioError<()>>;

/// Bytes, records and latencies of a run, and (bytes, records) per node.
struct Totals {
    bytes: u64,
    records: u64,
    hist: Histogram<u64>,
    per_node: std::collections::BTreeMap<i32, (u64, u64)>,
}

/// The totals of every connection of every client executor.
fn sum_results(joined: Vec<Joined>) -> Result<Totals, String> {
    let mut totals = Totals {
        bytes: 0,
        records: 0,
        hist: histogram(),
        per_node: Default::default(),
    };
    for r in joined {
        let conns = r.map_err(|e| format!("client executor failed: {e:?}"))??;
        for c in conns {
            totals.bytes += c.bytes;
            totals.records += c.records;
            let node = totals.per_node.entry(c.node).or_default();
            *node = (node.0 + c.bytes, node.1 + c.records);
            totals.hist.add(&c.hist).map_err(|e| e.to_string())?;
        }
    }
    Ok(totals)
}

/// One line per node the run wrote to: what it was sent and its CPU.
fn node_reports(
    nodes: &[crate::cluster::Node],
    routes: &[crate::cluster::PartitionRoute],
    per_node: &std::collections::BTreeMap<i32, (u64, u64)>,
    cpu_seconds: &[f64],
) -> Vec<NodeReport> {
    assert_eq!(nodes.len(), cpu_seconds.len(), "one CPU figure per node");
    let each = nodes.iter().zip(cpu_seconds);
    each.map(|(node, &cpu)| {
        let (bytes, records) = per_node.get(&node.id).copied().unwrap_or_default();
        NodeReport {
            node: node.id,
            addr: node.addr.clone(),
            partitions_led: crate::cluster::partitions_led(routes, node.id),
            bytes,
            records,
            server_cpu_seconds: cpu,
        }
    })
    .collect()
}

/// Samples the bytes acknowledged so far (the progress bar's position) 10 times a second,
/// on a thread of its own, for the throughput-over-time plot.
struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(f64, f64)>>,
}

impl Sampler {
    const EVERY: Duration = Duration::from_millis(100);

    fn start(progress: ProgressBar) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let (mut samples, mut last) = (Vec::new(), 0u64);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Self::EVERY);
                let now = progress.position();
                let mb_per_s = (now - last.min(now)) as f64 / 1e6 / Self::EVERY.as_secs_f64();
                samples.push((start.elapsed().as_secs_f64(), mb_per_s));
                last = now;
            }
            samples
        });
        Sampler { stop, thread }
    }

    fn stop(self) -> Vec<(f64, f64)> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}
