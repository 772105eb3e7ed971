//! Recovery after a crash: fill the active segment with SHARDLOG_RECOVERY_MIB (default 1024)
//! of 64 KiB batches, "kill -9" (flush, then drop the partition without closing: zero-padded
//! tail, no index files), and time the reopen that rescans, validates (CRC of every batch),
//! truncates the padding and rebuilds the indexes. Random offset and timestamp lookups are
//! timed before the crash and right after recovery.
//! `cargo bench --bench recovery [-- --quick]` (--quick: 256 MiB).

use std::path::PathBuf;
use std::time::Instant;

use glommio::LocalExecutorBuilder;
use hdrhistogram::Histogram;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::log::PartitionLog;
use shardlog::LogConfig;

const MIB: f64 = 1024.0 * 1024.0;

async fn lookups(log: &mut PartitionLog, records: i64, n: usize) -> (u64, u64, u64, u64) {
    let mut rng = fastrand::Rng::with_seed(3);
    let mut by_offset = Histogram::<u64>::new(3).unwrap();
    let mut by_time = Histogram::<u64>::new(3).unwrap();
    for _ in 0..n {
        let o = rng.i64(0..records);
        let t = Instant::now();
        let data = log.read(o, 1).await.unwrap().to_bytes();
        assert!(!data.is_empty());
        by_offset
            .record(t.elapsed().as_micros().max(1) as u64)
            .unwrap();
        let t = Instant::now();
        let found = log.find_offset_by_timestamp(o).await.unwrap().unwrap();
        assert_eq!(found.offset, o);
        by_time
            .record(t.elapsed().as_micros().max(1) as u64)
            .unwrap();
    }
    (
        by_offset.value_at_quantile(0.5),
        by_offset.value_at_quantile(0.99),
        by_time.value_at_quantile(0.5),
        by_time.value_at_quantile(0.99),
    )
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let mib: u64 = std::env::var("SHARDLOG_RECOVERY_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 256 } else { 1024 });
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    let dir = base.join("recovery-0");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&base).unwrap();
    LocalExecutorBuilder::default()
        .spawn(move || async move {
            let config = LogConfig {
                segment_bytes: 2_000_000_000,
                ..LogConfig::default()
            };
            let value = vec![b'r'; 1000];
            let mut log = PartitionLog::open(&dir, config.clone()).await.unwrap();
            let mut records = 0i64;
            let target = mib << 20;
            while log.size_bytes() < target {
                let mut b = BatchBuilder::new(70_000);
                for _ in 0..64 {
                    // timestamp = offset, so lookups can check their answers
                    b.push(RecordSpec::new(None, Some(&value)).timestamp(records));
                    records += 1;
                }
                log.append(&b.build()).await.unwrap();
            }
            log.flush().await.unwrap();
            let before = lookups(&mut log, records, 2000).await;
            let bytes = log.size_bytes();
            std::mem::forget(log); // kill -9

            let t = Instant::now();
            let mut log = PartitionLog::open(&dir, config).await.unwrap();
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(log.log_end_offset(), records);
            let truncated: u64 = log.recovery_truncations().iter().map(|t| t.bytes_dropped).sum();
            let after = lookups(&mut log, records, 2000).await;
            println!("== recovery of a {:.0} MiB active segment after kill -9", bytes as f64 / MIB);
            println!(
                "recovery: {:.3} s, {:.0} MiB/s ({records} records, {truncated} bytes of padding truncated, indexes rebuilt)",
                secs,
                bytes as f64 / MIB / secs
            );
            println!(
                "lookup p50/p99 us   before crash: offset {}/{} timestamp {}/{}   after recovery: offset {}/{} timestamp {}/{}",
                before.0, before.1, before.2, before.3, after.0, after.1, after.2, after.3
            );
            log.close().await.unwrap();
            let _ = std::fs::remove_dir_all(&dir);
        })
        .unwrap()
        .join()
        .unwrap();
}
