//! Single-record produce round trips over loopback, acks=1, against a real 2-shard server:
//! sent to the owning shard's port (direct) and to the other shard's port (forwarded over the
//! channel mesh). An ApiVersions round trip (no storage) is measured as the network baseline.
//! `cargo bench --bench roundtrip [-- --quick]`; SHARDLOG_BENCH_DIR sets the data directory.

use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use hdrhistogram::Histogram;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{Request, ACKS_LEADER};
use shardlog::server::{self, ServerConfig};

fn report(name: &str, h: &Histogram<u64>) {
    println!(
        "{name:<34} p50 {:>6} us  p99 {:>6} us  p999 {:>6} us  max {:>6} us  (n={})",
        h.value_at_quantile(0.50),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max(),
        h.len()
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n: usize = if quick { 3_000 } else { 30_000 };
    // SHARDLOG_SHARDS: shard count (default 2, capped at the CPU count).
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let shards: usize = std::env::var("SHARDLOG_SHARDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
        .min(cpus);
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    let dir = base.join("roundtrip");
    let _ = std::fs::remove_dir_all(&dir);
    // SHARDLOG_SPIN_US: spin-before-park for the shards and the client (default 0).
    let spin_us: u64 = std::env::var("SHARDLOG_SPIN_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let port = 27_000 + (std::process::id() % 1000) as u16 * 3;
    let server = server::start(ServerConfig {
        data_dir: dir.clone(),
        listen: format!("127.0.0.1:{port}").parse().unwrap(),
        kafka_listen: None,
        shards,
        spin_before_park_us: spin_us,
        ..Default::default()
    })
    .expect("server");

    let results = glommio::LocalExecutorBuilder::default()
        .spin_before_park(std::time::Duration::from_micros(spin_us))
        .spawn(move || async move {
            let shared = format!("127.0.0.1:{port}");
            let mut admin = Client::connect(&shared).await.unwrap();
            admin
                .create_topic("rt", shards as i32, vec![])
                .await
                .unwrap();
            let md = admin.metadata(Some(vec!["rt".into()])).await.unwrap();
            let owner = md.topic("rt").unwrap().partitions[0].owner_shard;
            let other = (owner + 1) % shards as i32;
            let port_of = |s: i32| format!("127.0.0.1:{}", md.shard_port(s).unwrap());
            let value = vec![b'v'; 100];
            let batch = Bytes::from(
                BatchBuilder::new(200)
                    .record(RecordSpec::new(None, Some(&value)).timestamp(1))
                    .build(),
            );
            let mut out = Vec::new();
            let mut cases = vec![("api-versions (network baseline)", port_of(owner), true)];
            cases.push(("produce acks=1 direct", port_of(owner), false));
            if shards > 1 {
                cases.push(("produce acks=1 forwarded", port_of(other), false));
            }
            for (name, addr, baseline) in cases {
                let mut c = Client::connect(&addr).await.unwrap();
                let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
                for i in 0..n + n / 10 {
                    let t = Instant::now();
                    if baseline {
                        c.call(&Request::ApiVersions).await.unwrap();
                    } else {
                        c.produce("rt", 0, ACKS_LEADER, batch.clone())
                            .await
                            .unwrap();
                    }
                    if i >= n / 10 {
                        // the first 10% warm up
                        h.record(t.elapsed().as_micros().max(1) as u64).unwrap();
                    }
                }
                out.push((name, h));
            }
            out
        })
        .unwrap()
        .join()
        .unwrap();
    println!("== single-record round trips over loopback ({shards} shards, {n} samples each, spin-before-park {spin_us} us)");
    for (name, h) in &results {
        report(name, h);
    }
    if results.len() == 3 {
        let hop =
            results[2].1.value_at_quantile(0.5) as i64 - results[1].1.value_at_quantile(0.5) as i64;
        println!("forwarding hop at p50: {hop} us");
    }
    server.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
