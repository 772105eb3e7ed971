//! `loadgen bench`: what a newcomer runs first. Starts its own shardlog server (embedded
//! defaults) on a temporary data directory, runs a sequential write, then lookups by offset
//! and by timestamp, cold and warm, and prints one table (and JSON with `--json`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shardlog::server::{self, ServerConfig};

use crate::lookup::{self, By, CacheMode, LookupOpts};
use crate::report::{self, Machine};
use crate::write::{self, WriteOpts};

pub struct BenchOpts {
    pub data_dir: Option<PathBuf>,
    pub quick: bool,
    pub json: Option<PathBuf>,
    pub plot: Option<PathBuf>,
}

/// Samples this process's RSS (server and load generator together) until stopped.
fn rss_sampler(stop: Arc<AtomicBool>, max: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        while !stop.load(Ordering::Relaxed) {
            if let Some(pages) = std::fs::read_to_string("/proc/self/statm")
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            {
                max.fetch_max(pages * page, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
}

fn start_server(dir: &Path) -> Result<(server::ServerHandle, String, ServerConfig), String> {
    let mut last = String::new();
    for _ in 0..20 {
        let port = fastrand::u16(10_000..32_000);
        let config = ServerConfig {
            data_dir: dir.to_path_buf(),
            listen: format!("127.0.0.1:{port}").parse().unwrap(),
            kafka_listen: None,
            ..ServerConfig::default()
        };
        match server::start(config.clone()) {
            Ok(h) => return Ok((h, format!("127.0.0.1:{port}"), config)),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("could not start a server: {last}"))
}

/// How much a run writes and looks up (`--quick` is the small one).
#[derive(Clone, Copy)]
struct Sizes {
    /// Bytes written in 1 MiB batches (throughput).
    total: u64,
    /// Bytes of the lookup topic, written in 16 KiB batches.
    lookup_data: u64,
    /// Lookups per row.
    lookups: usize,
}

/// What a run measured.
struct Measured {
    wopts: WriteOpts,
    write: report::WriteResult,
    rows: Vec<(String, report::LookupResult)>,
}

pub fn run(opts: BenchOpts) -> Result<(), String> {
    let parent = opts.data_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix("loadgen-bench-")
        .tempdir_in(&parent)
        .map_err(|e| format!("temp dir in {}: {e}", parent.display()))?;
    let machine = Machine::describe(tmp.path());
    let (handle, bootstrap, config) = start_server(tmp.path())?;
    let stop = Arc::new(AtomicBool::new(false));
    let max_rss = Arc::new(AtomicU64::new(0));
    let sampler = rss_sampler(stop.clone(), max_rss.clone());
    let sizes = if opts.quick {
        Sizes {
            total: 1 << 30,
            lookup_data: 256 << 20,
            lookups: 200,
        }
    } else {
        Sizes {
            total: 4 << 30,
            lookup_data: 1 << 30,
            lookups: 2000,
        }
    };
    let result = measure(&bootstrap, config.shards, sizes);
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let stopped = handle.stop();
    let measured = result?;
    stopped?;
    let rss = max_rss.load(Ordering::Relaxed);
    print_report(&machine, &config, &measured, rss);
    if let Some(dir) = &opts.plot {
        let rows: Vec<(String, &report::LookupResult)> =
            measured.rows.iter().map(|(n, r)| (n.clone(), r)).collect();
        crate::plot::write_all(dir, Some(&measured.write), &rows)?;
    }
    match opts.json {
        Some(path) => write_json(&path, &machine, &config, sizes, &measured, rss),
        None => Ok(()),
    }
}

/// Throughput is measured with 1 MiB batches; lookups run over a second topic written
/// with 16 KiB batches (Kafka's default batch.size), as a consumer's fetches would see.
fn measure(bootstrap: &str, shards: usize, sizes: Sizes) -> Result<Measured, String> {
    create_topics(bootstrap, shards, sizes.lookup_data)?;
    let wopts = WriteOpts {
        bootstrap: bootstrap.to_string(),
        topic: "bench".into(),
        record_size: 1024,
        batch_records: 1000,
        total_bytes: Some(sizes.total),
        duration_secs: None,
        connections: shards * 2,
        acks: shardlog::protocol::ACKS_LEADER,
        rate_records_per_s: None,
        oldest_record_wait: Duration::ZERO,
        pipeline: 4,
        shard_aware: true,
        client_cores: 1,
        partitions_per_request: 1,
        rotate_partitions: false,
    };
    eprintln!(
        "loadgen bench: writing {} MiB with acks=1 ({shards} shards) ...",
        sizes.total >> 20
    );
    let w = write::run(wopts.clone(), crate::progress_bytes(sizes.total))?;
    eprintln!(
        "loadgen bench: writing {} MiB in 16 KiB batches for the lookups ...",
        sizes.lookup_data >> 20
    );
    let lookup_write = WriteOpts {
        topic: "bench-lookup".into(),
        batch_records: 16,
        total_bytes: Some(sizes.lookup_data),
        pipeline: 16,
        ..wopts.clone()
    };
    write::run(lookup_write, crate::progress_bytes(sizes.lookup_data))?;
    let rows = lookup_rows(bootstrap, sizes.lookups)?;
    Ok(Measured {
        wopts,
        write: w,
        rows,
    })
}

/// The write topic rolls at 256 MiB; the lookup topic at 1/8 of each partition's data, so
/// most lookups land in sealed segments, whose indexes are paged (the cold path that
/// matters).
fn create_topics(bootstrap: &str, shards: usize, lookup_data: u64) -> Result<(), String> {
    let b = bootstrap.to_string();
    glommio::LocalExecutorBuilder::default()
        .spawn(move || async move {
            let mut c = shardlog::client::Client::connect(&b)
                .await
                .map_err(|e| e.to_string())?;
            let write_segment =
                vec![("segment.bytes".to_string(), WRITE_SEGMENT_BYTES.to_string())];
            c.create_topic("bench", shards as i32, write_segment)
                .await
                .map_err(|e| e.to_string())?;
            let seg = (lookup_data / shards as u64 / 8).max(1 << 20);
            c.create_topic(
                "bench-lookup",
                shards as i32,
                vec![("segment.bytes".into(), seg.to_string())],
            )
            .await
            .map_err(|e| e.to_string())
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|e| e.to_string())?
}

const WRITE_SEGMENT_BYTES: u64 = 256 << 20;

/// Cold then warm lookups by offset and by timestamp, with one network baseline row.
fn lookup_rows(
    bootstrap: &str,
    lookups: usize,
) -> Result<Vec<(String, report::LookupResult)>, String> {
    let mut rows: Vec<(String, report::LookupResult)> = Vec::new();
    for by in [By::Offset, By::Timestamp] {
        eprintln!("loadgen bench: {lookups} lookups by {by:?}, cold then warm ...");
        let lopts = LookupOpts {
            bootstrap: bootstrap.to_string(),
            topic: "bench-lookup".into(),
            by,
            cache: CacheMode::Both,
            count: lookups,
            shard_aware: true,
            drop_kernel_page_cache: false,
        };
        let pb = crate::progress_count(2 * lookups as u64);
        let r = glommio::LocalExecutorBuilder::default()
            .spawn(move || async move { lookup::run(&lopts, &pb).await })
            .map_err(|e| e.to_string())?
            .join()
            .map_err(|e| e.to_string())??;
        let have_baseline = rows.iter().any(|(n, _)| n.starts_with("network"));
        rows.extend(
            r.into_iter()
                .filter(|(n, _)| !(have_baseline && n.starts_with("network"))),
        );
    }
    Ok(rows)
}

/// Memory the server may use by design: each shard's cache plus 64 MiB.
fn memory_budget(config: &ServerConfig) -> u64 {
    (config.cache_bytes + (64 << 20)) * config.shards as u64
}

fn print_report(machine: &Machine, config: &ServerConfig, m: &Measured, rss: u64) {
    let shards = config.shards;
    println!(
        "shardlog loadgen bench  ({} cores, kernel {}, {}; {shards} shards)",
        machine.cores, machine.kernel, machine.filesystem
    );
    report::print_write(&m.write);
    let table: Vec<(String, &report::LookupResult)> =
        m.rows.iter().map(|(n, r)| (n.clone(), r)).collect();
    report::print_lookup_table(&table);
    println!(
        "memory  max RSS {} MiB (server and loadgen in one process) vs budget {} MiB (cache {} MiB x {shards} + 64 MiB x {shards})",
        rss >> 20,
        memory_budget(config) >> 20,
        config.cache_bytes >> 20
    );
}

fn write_json(
    path: &Path,
    machine: &Machine,
    config: &ServerConfig,
    sizes: Sizes,
    m: &Measured,
    rss: u64,
) -> Result<(), String> {
    let mut lookups_json = serde_json::Map::new();
    for (name, r) in &m.rows {
        let value = serde_json::to_value(r).map_err(|e| e.to_string())?;
        lookups_json.insert(name.replace(' ', "_"), value);
    }
    let doc = json!({
        "tool": "loadgen bench",
        "git_revision": report::git_revision(),
        "machine": machine,
        "config": {
            "shards": config.shards,
            "cache_bytes_per_shard": config.cache_bytes,
            "write": {
                "record_size": m.wopts.record_size,
                "batch_records": m.wopts.batch_records,
                "total_bytes": sizes.total,
                "connections": m.wopts.connections,
                "pipeline": m.wopts.pipeline,
                "acks": 1,
                "segment_bytes": WRITE_SEGMENT_BYTES,
            },
            "lookups": {
                "count_per_row": sizes.lookups,
                "topic_bytes": sizes.lookup_data,
                "batch_records": 16,
                "record_size": 1024,
            },
        },
        "write": m.write,
        "lookup": lookups_json,
        "memory": {
            "max_rss_bytes": rss,
            "budget_bytes": memory_budget(config),
            "includes_loadgen": true,
        },
    });
    report::write_json(path, &doc)
}
