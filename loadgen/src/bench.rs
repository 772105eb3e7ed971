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
            Err(e) => last = e,
        }
    }
    Err(format!("could not start a server: {last}"))
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
    let shards = config.shards;

    let total: u64 = if opts.quick { 1 << 30 } else { 4 << 30 };
    let lookup_data: u64 = if opts.quick { 256 << 20 } else { 1 << 30 };
    let lookups = if opts.quick { 200 } else { 2000 };
    // Throughput is measured with 1 MiB batches; lookups run over a second topic written
    // with 16 KiB batches (Kafka's default batch.size), as a consumer's fetches would see.
    // The write topic rolls at 256 MiB; the lookup topic at 1/8 of each partition's data.
    let topic_configs = vec![("segment.bytes".to_string(), (256u64 << 20).to_string())];
    let result = (|| {
        let (b, tc) = (bootstrap.clone(), topic_configs.clone());
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let mut c = shardlog::client::Client::connect(&b)
                    .await
                    .map_err(|e| e.to_string())?;
                c.create_topic("bench", shards as i32, tc)
                    .await
                    .map_err(|e| e.to_string())?;
                // Small segments for the lookup topic: most lookups land in sealed segments,
                // whose indexes are paged (the cold path that matters).
                let seg = (lookup_data / shards as u64 / 8).max(1 << 20);
                c.create_topic(
                    "bench-lookup",
                    shards as i32,
                    vec![("segment.bytes".into(), seg.to_string())],
                )
                .await
                .map_err(|e| e.to_string())?;
                Ok::<(), String>(())
            })
            .map_err(|e| e.to_string())?
            .join()
            .map_err(|e| e.to_string())??;
        let wopts = WriteOpts {
            bootstrap: bootstrap.clone(),
            topic: "bench".into(),
            record_size: 1024,
            batch_records: 1000,
            total_bytes: Some(total),
            duration_secs: None,
            connections: shards * 2,
            acks: shardlog::protocol::ACKS_LEADER,
            rate_records_per_s: None,
            pipeline: 4,
            shard_aware: true,
            client_cores: 1,
        };
        eprintln!(
            "loadgen bench: writing {} MiB with acks=1 ({shards} shards) ...",
            total >> 20
        );
        let w = write::run(wopts.clone(), crate::progress_bytes(total))?;
        eprintln!(
            "loadgen bench: writing {} MiB in 16 KiB batches for the lookups ...",
            lookup_data >> 20
        );
        let lookup_write = WriteOpts {
            topic: "bench-lookup".into(),
            batch_records: 16,
            total_bytes: Some(lookup_data),
            pipeline: 16,
            ..wopts.clone()
        };
        write::run(lookup_write, crate::progress_bytes(lookup_data))?;
        let mut rows = Vec::new();
        for by in [By::Offset, By::Timestamp] {
            eprintln!("loadgen bench: {lookups} lookups by {by:?}, cold then warm ...");
            let lopts = LookupOpts {
                bootstrap: bootstrap.clone(),
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
            // One network baseline row is enough.
            let have_baseline = rows
                .iter()
                .any(|(n, _): &(String, _)| n.starts_with("network"));
            rows.extend(
                r.into_iter()
                    .filter(|(n, _)| !(have_baseline && n.starts_with("network"))),
            );
        }
        Ok::<_, String>((wopts, w, rows))
    })();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let stopped = handle.stop();
    let (wopts, w, rows) = result?;
    stopped?;

    let rss = max_rss.load(Ordering::Relaxed);
    let budget = config.cache_bytes * shards as u64 + (64 << 20) * shards as u64;
    println!(
        "shardlog loadgen bench  ({} cores, kernel {}, {}; {shards} shards)",
        machine.cores, machine.kernel, machine.filesystem
    );
    report::print_write(&w);
    let table: Vec<(String, &report::LookupResult)> =
        rows.iter().map(|(n, r)| (n.clone(), r)).collect();
    report::print_lookup_table(&table);
    println!(
        "memory  max RSS {} MiB (server and loadgen in one process) vs budget {} MiB (cache {} MiB x {shards} + 64 MiB x {shards})",
        rss >> 20,
        budget >> 20,
        config.cache_bytes >> 20
    );
    if let Some(path) = opts.json {
        let mut lookups_json = serde_json::Map::new();
        for (name, r) in &rows {
            lookups_json.insert(name.replace(' ', "_"), serde_json::to_value(r).unwrap());
        }
        let doc = json!({
            "tool": "loadgen bench",
            "git_revision": report::git_revision(),
            "machine": machine,
            "config": {
                "shards": shards,
                "cache_bytes_per_shard": config.cache_bytes,
                "write": {
                    "record_size": wopts.record_size,
                    "batch_records": wopts.batch_records,
                    "total_bytes": total,
                    "connections": wopts.connections,
                    "pipeline": wopts.pipeline,
                    "acks": 1,
                    "segment_bytes": 256u64 << 20,
                },
                "lookups": {
                    "count_per_row": lookups,
                    "topic_bytes": lookup_data,
                    "batch_records": 16,
                    "record_size": 1024,
                },
            },
            "write": w,
            "lookup": lookups_json,
            "memory": {
                "max_rss_bytes": rss,
                "budget_bytes": budget,
                "includes_loadgen": true,
            },
        });
        report::write_json(&path, &doc)?;
    }
    Ok(())
}
