//! Lookup cost inside one shard, without the network: by offset and by timestamp, warm
//! (pages in the shard's cache) and cold (cache cleared and OS cache dropped before each
//! lookup), with the device reads each lookup issued.
//! `cargo bench --bench lookup [-- --quick]`; SHARDLOG_BENCH_DIR sets the data directory.

use std::path::PathBuf;
use std::time::Instant;

use glommio::LocalExecutorBuilder;
use hdrhistogram::Histogram;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::io::{DmaStorage, PageCache, Storage};
use shardlog::log::{OpenOptions, PartitionLog};
use shardlog::LogConfig;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let mib: u64 = if quick { 256 } else { 1024 };
    let n = if quick { 500 } else { 3000 };
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    std::fs::create_dir_all(&base).unwrap();
    let dir = base.join("lookup-0");
    let _ = std::fs::remove_dir_all(&dir);
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let storage = DmaStorage::new(base.clone());
            let cache = PageCache::shared(256 << 20);
            let config = LogConfig {
                segment_bytes: (mib << 20) / 8,
                ..LogConfig::default()
            };
            let opts = OpenOptions {
                clean_shutdown: false,
                cache: Some(cache.clone()),
                ..OpenOptions::default()
            };
            let mut log = PartitionLog::open_with(storage.clone(), &dir, config, opts).await.unwrap();
            // 16 KiB batches (16 records of 1 KiB), timestamp = offset.
            let value = vec![b'k'; 1000];
            let mut records = 0i64;
            while log.size_bytes() < mib << 20 {
                let mut b = BatchBuilder::new(17_000);
                for _ in 0..16 {
                    b.push(RecordSpec::new(None, Some(&value)).timestamp(records));
                    records += 1;
                }
                log.append(&b.build()).await.unwrap();
            }
            log.sync().await.unwrap();
            println!(
                "== lookups in one shard, no network: {mib} MiB in {} segments of 16 KiB batches, {n} lookups per row",
                log.segments().len()
            );
            for by_time in [false, true] {
                for cold in [true, false] {
                    let mut rng = fastrand::Rng::with_seed(5);
                    let targets: Vec<i64> = (0..n).map(|_| rng.i64(0..records)).collect();
                    if !cold {
                        for &t in &targets {
                            lookup(&mut log, t, by_time).await;
                        }
                    }
                    let mut h = Histogram::<u64>::new(3).unwrap();
                    let (mut reads, mut max_reads) = (0u64, 0u64);
                    for &t in &targets {
                        if cold {
                            cache.borrow_mut().clear();
                            log.drop_os_caches().await.unwrap();
                        }
                        let before = storage.device_reads();
                        let t0 = Instant::now();
                        lookup(&mut log, t, by_time).await;
                        h.record(t0.elapsed().as_micros().max(1) as u64).unwrap();
                        let r = storage.device_reads() - before;
                        reads += r;
                        max_reads = max_reads.max(r);
                    }
                    println!(
                        "{:<9} {:<4}  p50 {:>5} us  p99 {:>5} us  p999 {:>5} us  device reads/lookup {:.2} (max {max_reads})",
                        if by_time { "timestamp" } else { "offset" },
                        if cold { "cold" } else { "warm" },
                        h.value_at_quantile(0.5),
                        h.value_at_quantile(0.99),
                        h.value_at_quantile(0.999),
                        reads as f64 / n as f64
                    );
                }
            }
            log.close().await.unwrap();
            let _ = std::fs::remove_dir_all(&dir);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// By offset: read the batch holding `t`. By timestamp: find the first record with
/// timestamp >= t (timestamps equal offsets here), then read its batch.
async fn lookup(log: &mut PartitionLog, t: i64, by_time: bool) {
    let offset = if by_time {
        let found = log.find_offset_by_timestamp(t).await.unwrap().unwrap();
        assert_eq!(found.offset, t);
        found.offset
    } else {
        t
    };
    let data = log.read(offset, 1).await.unwrap().to_bytes();
    assert!(!data.is_empty());
}
