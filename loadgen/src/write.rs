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
use shardlog::client::Client;
use shardlog::format::batch::restamp_uniform;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ApiKey, Request, ACKS_NONE};

use crate::cluster::routes;
use crate::report::{histogram, LatencyUs, WriteResult};

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
    pub pipeline: usize,
    pub shard_aware: bool,
    pub client_cores: usize,
}

struct ConnResult {
    bytes: u64,
    records: u64,
    hist: Histogram<u64>,
}

/// A whole Produce request frame, encoded once per connection. Each send only restamps it
/// (the records' timestamp becomes "now", the batch CRC is recomputed): the client spends
/// its CPU on sending, not on encoding the same bytes again.
struct ProduceFrame {
    frame: Vec<u8>,
    records_at: usize,
}

impl ProduceFrame {
    fn new(topic: &str, partition: i32, acks: i16, value: &[u8], records: usize) -> Self {
        let mut b = BatchBuilder::new(records * (value.len() + 16) + 128);
        for _ in 0..records {
            b.push(RecordSpec::new(None, Some(value)).timestamp(0));
        }
        let batch = b.build();
        let len = batch.len();
        let frame = Request::Produce {
            topic: topic.to_string(),
            partition,
            acks,
            records: Bytes::from(batch),
        }
        .encode_frame(0);
        ProduceFrame {
            records_at: frame.len() - len,
            frame,
        }
    }

    fn records_len(&self) -> u64 {
        (self.frame.len() - self.records_at) as u64
    }

    /// The frame to send now, with a fresh timestamp and correlation id.
    fn stamp(&mut self, correlation_id: i32) -> &[u8] {
        self.frame[8..12].copy_from_slice(&correlation_id.to_be_bytes());
        restamp_uniform(&mut self.frame[self.records_at..], shardlog::time::now_ms());
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

async fn one_connection(
    opts: WriteOpts,
    addr: String,
    partition: i32,
    pacing: Pacing,
) -> Result<ConnResult, String> {
    let Pacing {
        budget,
        deadline,
        start,
        interval,
        progress,
    } = pacing;
    let mut c = Client::connect(&addr).await.map_err(|e| e.to_string())?;
    let value: Vec<u8> = (0..opts.record_size).map(|_| fastrand::u8(..)).collect();
    let mut request = ProduceFrame::new(
        &opts.topic,
        partition,
        opts.acks,
        &value,
        opts.batch_records,
    );
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
            c.send_raw(request.stamp(correlation_id))
                .await
                .map_err(|e| e.to_string())?;
            if opts.acks == ACKS_NONE {
                bytes += size;
                records += opts.batch_records as u64;
                progress.inc(size);
            } else {
                inflight.push_back((due, size));
            }
            continue;
        }
        let Some((t0, size)) = inflight.pop_front() else {
            break;
        };
        let resp = c.recv(ApiKey::Produce).await.map_err(|e| e.to_string())?;
        if let Err((code, msg)) = resp.result {
            return Err(format!(
                "produce to partition {partition} failed: {code}: {msg}"
            ));
        }
        hist.record(t0.elapsed().as_micros().max(1) as u64)
            .map_err(|e| e.to_string())?;
        bytes += size;
        records += opts.batch_records as u64;
        progress.inc(size);
    }
    if opts.acks == ACKS_NONE {
        // No replies: a round trip proves the server read everything we sent.
        c.metadata(Some(vec![])).await.map_err(|e| e.to_string())?;
    }
    Ok(ConnResult {
        bytes,
        records,
        hist,
    })
}

/// Runs the write workload on `client_cores` glommio executors.
pub fn run(opts: WriteOpts, progress: ProgressBar) -> Result<WriteResult, String> {
    if opts.record_size == 0 || opts.batch_records == 0 || opts.connections == 0 {
        return Err("record size, batch records and connections must be positive".into());
    }
    let routes = glommio::LocalExecutorBuilder::default()
        .spawn({
            let (b, t, sa) = (opts.bootstrap.clone(), opts.topic.clone(), opts.shard_aware);
            move || async move { routes(&b, &t, sa).await }
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|e| e.to_string())??;
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
    let server_start = crate::breakdown::mark_blocking(&opts.bootstrap)?;
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
                async move {
                    let budget = Rc::new(Cell::new((total / cores as u64) as i64));
                    let start = Instant::now();
                    let deadline = opts
                        .duration_secs
                        .map(|s| start + Duration::from_secs_f64(s));
                    let mut tasks = Vec::new();
                    for conn in (0..opts.connections).filter(|c| c % cores == me % cores) {
                        let route = routes[conn % routes.len()].clone();
                        let pacing = Pacing {
                            budget: budget.clone(),
                            deadline,
                            start,
                            interval,
                            progress: progress.clone(),
                        };
                        tasks.push(glommio::spawn_local(one_connection(
                            opts.clone(),
                            route.addr.clone(),
                            route.partition,
                            pacing,
                        )));
                    }
                    let mut results = Vec::new();
                    for t in tasks {
                        results.push(t.await?);
                    }
                    Ok::<Vec<ConnResult>, String>(results)
                }
            }
        })
        .map_err(|e| e.to_string())?;
    let mut hist = histogram();
    let (mut bytes, mut records) = (0u64, 0u64);
    for r in handles.join_all() {
        let conns = r.map_err(|e| format!("client executor failed: {e:?}"))??;
        for c in conns {
            bytes += c.bytes;
            records += c.records;
            hist.add(&c.hist).map_err(|e| e.to_string())?;
        }
    }
    let seconds = start_all.elapsed().as_secs_f64();
    let throughput_mb_per_s = sampler.stop();
    progress.finish_and_clear();
    let requests = records / opts.batch_records as u64;
    let server = crate::breakdown::since_blocking(&opts.bootstrap, server_start, requests)?;
    Ok(WriteResult {
        bytes,
        records,
        seconds,
        mb_per_s: bytes as f64 / 1e6 / seconds,
        records_per_s: records as f64 / seconds,
        latency_us: (opts.acks != ACKS_NONE).then(|| LatencyUs::of(&hist)),
        corrected_for_coordinated_omission: interval.is_some(),
        server,
        throughput_mb_per_s,
    })
}

/// Samples the bytes acknowledged so far (the progress bar's position) 4 times a second,
/// on a thread of its own, for the throughput-over-time plot.
struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(f64, f64)>>,
}

impl Sampler {
    const EVERY: Duration = Duration::from_millis(250);

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
