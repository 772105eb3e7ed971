//! The log lifecycle's figures (issue: retention, compaction):
//! 1. cleaner throughput (MB/s of dirty log cleaned) against the same run's floor (reading
//!    those segments once, sequentially, with the cleaner's own reader), and its key-map
//!    memory and RSS growth;
//! 2. time to delete 1000 expired segments (one retention pass, files removed at once);
//! 3. produce p99 and lookup (fetch) p99 on a 1-shard server, with and without a forced
//!    cleaning of another, compacted topic running on the same shard, at the default
//!    `log.cleaner.io.max.bytes.per.second` and unlimited.
//!
//! `cargo bench --bench lifecycle [-- --quick]`; SHARDLOG_BENCH_DIR sets the data directory.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use shardlog::client::Client;
use shardlog::config::CleanupPolicy;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::{DmaStorage, OpenMode, Storage};
use shardlog::log::batch_stream::{BatchStream, Next, BACKGROUND};
use shardlog::log::{segment_file_name, CleanerLimits, PartitionLog};
use shardlog::protocol::ACKS_LEADER;
use shardlog::server::{self, ServerConfig};
use shardlog::LogConfig;

const HOUR: i64 = 3_600_000;

fn rss_bytes() -> u64 {
    let pages: u64 = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// `n` records of `value_len` bytes with keys from `keys` distinct ones, in one batch.
fn keyed_batch(first: u64, n: u64, keys: u64, value_len: usize, ts: i64) -> Vec<u8> {
    let value = vec![b'v'; value_len];
    let names: Vec<String> = (first..first + n)
        .map(|i| format!("key-{}", i % keys))
        .collect();
    let mut b = BatchBuilder::new(n as usize * (value_len + 40));
    for k in &names {
        b.push(RecordSpec::new(Some(k.as_bytes()), Some(&value)).timestamp(ts));
    }
    b.build()
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// Reads every sealed segment once, batch by batch: the floor the cleaner is compared with.
async fn read_floor(storage: Rc<dyn Storage>, dir: &Path, segments: &[(i64, u64)]) -> Duration {
    let start = Instant::now();
    for &(base, size) in segments {
        let path = dir.join(segment_file_name(base, ".log"));
        let file = storage.open(&path, OpenMode::ReadOnly).await.unwrap();
        let mut s = BatchStream::new(file.clone(), &path, size, BACKGROUND);
        while let Next::Batch { .. } = s.next().await.unwrap() {}
        let _ = file.close().await;
    }
    start.elapsed()
}

async fn cleaner_throughput(dir: PathBuf, total: u64) {
    let config = LogConfig {
        segment_bytes: 16 << 20,
        cleanup_policy: CleanupPolicy::Compact,
        ..LogConfig::default()
    };
    let pdir = dir.join("compact-0");
    let mut log = PartitionLog::open(&pdir, config).await.unwrap();
    let (per_batch, value_len, keys) = (16u64, 1000usize, 50_000u64);
    let now = shardlog::time::now_ms();
    let mut written = 0u64;
    let mut i = 0u64;
    while written < total {
        let b = keyed_batch(i, per_batch, keys, value_len, now - HOUR);
        written += b.len() as u64;
        log.append(&b).await.unwrap();
        i += per_batch;
    }
    log.roll_now().await.unwrap();
    log.sync().await.unwrap();
    let segments: Vec<(i64, u64)> = log.segments()[..log.segments().len() - 1]
        .iter()
        .map(|s| (s.base_offset(), s.size()))
        .collect();
    let dirty: u64 = segments.iter().map(|s| s.1).sum();
    let storage = DmaStorage::new(dir.clone());
    let floor = read_floor(storage, &pdir, &segments).await;
    let rss_before = rss_bytes();
    let start = Instant::now();
    let stats = log
        .clean_now(now, CleanerLimits::default())
        .await
        .unwrap()
        .unwrap();
    let took = start.elapsed();
    let rss_after = rss_bytes();
    println!(
        "cleaner: {:.1} MB dirty ({} segments, {} records, {} keys) cleaned in {:.2} s = {:.0} MB/s; \
         reading it once: {:.0} MB/s; ratio {:.2} of the read floor",
        dirty as f64 / 1e6,
        segments.len(),
        i,
        keys,
        took.as_secs_f64(),
        mb_per_s(dirty, took),
        mb_per_s(dirty, floor),
        floor.as_secs_f64() / took.as_secs_f64()
    );
    println!(
        "cleaner: kept {} records, removed {}, wrote {:.1} MB; key map {:.1} MiB ({} keys); RSS +{:.1} MiB",
        stats.records_kept,
        stats.records_removed,
        stats.bytes_written as f64 / 1e6,
        stats.map_bytes as f64 / (1 << 20) as f64,
        stats.keys_mapped,
        rss_after.saturating_sub(rss_before) as f64 / (1 << 20) as f64
    );
    log.close().await.unwrap();
}

async fn delete_expired_segments(dir: PathBuf, n: usize) {
    let config = LogConfig {
        segment_bytes: 200,
        retention_ms: HOUR,
        file_delete_delay_ms: 60_000,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(&dir.join("expired-0"), config)
        .await
        .unwrap();
    let now = shardlog::time::now_ms();
    for i in 0..n {
        let b = keyed_batch(i as u64, 1, 1, 100, now - 48 * HOUR);
        log.append(&b).await.unwrap();
    }
    log.flush().await.unwrap();
    let segments = log.segments().len();
    let start = Instant::now();
    let out = log.apply_retention(now).await.unwrap();
    let took = start.elapsed();
    let start = Instant::now();
    let removed = log.remove_due_files(now + 60_000).await;
    let unlinked = start.elapsed();
    println!(
        "retention: {} of {segments} expired segments out of the log (renamed .deleted, log start \
         checkpointed) in {:.1} ms; their {removed} files unlinked {:.1} ms later in {:.1} ms",
        out.segments_deleted,
        took.as_secs_f64() * 1e3,
        60_000.0,
        unlinked.as_secs_f64() * 1e3
    );
    log.close().await.unwrap();
}

fn pct(h: &Histogram<u64>, q: f64) -> u64 {
    h.value_at_quantile(q)
}

/// Produces (acks=1, one 1 KiB record) and fetches a random earlier offset, alternately,
/// for `for_how_long` or until `stop` is set; returns both latency histograms (us).
async fn foreground(
    c: &mut Client,
    for_how_long: Duration,
    stop: &std::cell::Cell<bool>,
) -> (Histogram<u64>, Histogram<u64>) {
    let mut produce = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut fetch = produce.clone();
    let value = vec![b'x'; 1000];
    let batch = Bytes::from(
        BatchBuilder::new(1100)
            .record(RecordSpec::new(None, Some(&value)).timestamp(shardlog::time::now_ms()))
            .build(),
    );
    let start = Instant::now();
    let mut end = 0i64;
    while start.elapsed() < for_how_long && !stop.get() {
        let t = Instant::now();
        end = c
            .produce("hot", 0, ACKS_LEADER, batch.clone())
            .await
            .unwrap()
            .expect("acks=1 replies")
            .1
            + 1;
        produce
            .record(t.elapsed().as_micros().max(1) as u64)
            .unwrap();
        let t = Instant::now();
        c.fetch("hot", 0, fastrand::i64(0..end), 4096)
            .await
            .unwrap();
        fetch.record(t.elapsed().as_micros().max(1) as u64).unwrap();
    }
    let _ = end;
    (produce, fetch)
}

fn latency_with_and_without_cleaner(dir: PathBuf, dirty: u64, cleaner_rate: u64) {
    let port = 29_000 + (std::process::id() % 500) as u16 * 3;
    let server = server::start(ServerConfig {
        data_dir: dir.join(format!("server-{cleaner_rate}")),
        listen: format!("127.0.0.1:{port}").parse().unwrap(),
        kafka_listen: None,
        shards: 1,
        // The background cleaner stays out of the way; the forced pass is what is measured.
        log_cleaner_backoff_ms: 86_400_000,
        log_cleaner_io_max_bytes_per_second: cleaner_rate,
        ..Default::default()
    })
    .expect("server");
    let lines = glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(1))
        .spawn(move || async move {
            let addr = format!("127.0.0.1:{port}");
            let mut c = Client::connect(&addr).await.unwrap();
            c.create_topic("hot", 1, vec![]).await.unwrap();
            let compact = vec![
                ("cleanup.policy".to_string(), "compact".to_string()),
                ("segment.bytes".to_string(), (16u64 << 20).to_string()),
            ];
            c.create_topic("state", 1, compact).await.unwrap();
            let now = shardlog::time::now_ms();
            let (mut i, mut written) = (0u64, 0u64);
            while written < dirty {
                let b = keyed_batch(i, 64, 5_000, 1000, now - HOUR);
                written += b.len() as u64;
                c.produce("state", 0, ACKS_LEADER, Bytes::from(b))
                    .await
                    .unwrap();
                i += 64;
            }
            c.roll_segments("state", 0).await.unwrap();
            // Warm the hot topic; measure while the cleaner runs, then as long without it.
            let never = std::cell::Cell::new(false);
            foreground(&mut c, Duration::from_secs(1), &never).await;
            let done = Rc::new(std::cell::Cell::new(false));
            let flag = done.clone();
            let cleaner = glommio::spawn_local(async move {
                // RunLogMaintenance replies when the cleaning is done: paced, that takes a while.
                let mut admin = Client::connect_with_timeout(&addr, Duration::from_secs(600))
                    .await
                    .unwrap();
                let t = Instant::now();
                let r = admin.run_log_maintenance("state").await.unwrap();
                flag.set(true);
                (r, t.elapsed())
            });
            let (p1, f1) = foreground(&mut c, Duration::from_secs(600), &done).await;
            let ((_, _, removed), took) = cleaner.await;
            let (p0, f0) = foreground(&mut c, took, &never).await;
            vec![
                format!(
                    "same shard, cleaner rate {} MB/s: cleaning {:.0} MB took {:.2} s ({removed} records removed); \
                     foreground measured while it ran ({} samples), then as long without it",
                    match cleaner_rate {
                        0 => "unlimited".to_string(),
                        r => format!("{:.0}", r as f64 / 1e6),
                    },
                    dirty as f64 / 1e6,
                    took.as_secs_f64(),
                    p1.len()
                ),
                format!(
                    "produce p50/p99: {}/{} us without the cleaner, {}/{} us with it: p99 x{:.2}",
                    pct(&p0, 0.5),
                    pct(&p0, 0.99),
                    pct(&p1, 0.5),
                    pct(&p1, 0.99),
                    pct(&p1, 0.99) as f64 / pct(&p0, 0.99) as f64
                ),
                format!(
                    "fetch p50/p99:   {}/{} us without the cleaner, {}/{} us with it: p99 x{:.2}",
                    pct(&f0, 0.5),
                    pct(&f0, 0.99),
                    pct(&f1, 0.5),
                    pct(&f1, 0.99),
                    pct(&f1, 0.99) as f64 / pct(&f0, 0.99) as f64
                ),
            ]
        })
        .unwrap()
        .join()
        .unwrap();
    for l in lines {
        println!("{l}");
    }
    server.stop().unwrap();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    let dir = base.join("lifecycle");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dirty: u64 = if quick { 64 << 20 } else { 512 << 20 };
    let d = dir.clone();
    glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(0))
        .spawn(move || async move {
            cleaner_throughput(d.clone(), dirty).await;
            delete_expired_segments(d, 1000).await;
        })
        .unwrap()
        .join()
        .unwrap();
    let default_rate = ServerConfig::default().log_cleaner_io_max_bytes_per_second;
    latency_with_and_without_cleaner(dir.clone(), dirty, default_rate);
    latency_with_and_without_cleaner(dir.clone(), dirty, 0);
    let _ = std::fs::remove_dir_all(&dir);
}
