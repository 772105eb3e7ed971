//! Produce throughput and latency with acks=1 versus acks=all (group commit at work):
//! C connections per run, each sending produce requests of one 10-record batch (1 KiB
//! records) back to back to its own partition's owner shard, against a real 2-shard server.
//! Reports records/s, MB/s and produce latency percentiles.
//! `cargo bench --bench produce [-- --quick]`; SHARDLOG_BENCH_DIR sets the data directory.

use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ACKS_ALL, ACKS_LEADER};
use shardlog::server::{self, ServerConfig};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let secs = if quick { 2 } else { 6 };
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let shards = 2.min(cpus);
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    let dir = base.join("produce");
    let _ = std::fs::remove_dir_all(&dir);
    let port = 31_000 + (std::process::id() % 1000) as u16 * 3;
    let server = server::start(ServerConfig {
        data_dir: dir.clone(),
        listen: format!("127.0.0.1:{port}").parse().unwrap(),
        kafka_listen: None,
        shards,
        ..Default::default()
    })
    .expect("server");
    let rows = glommio::LocalExecutorBuilder::default()
        .spawn(move || async move {
            let shared = format!("127.0.0.1:{port}");
            let mut admin = Client::connect(&shared).await.unwrap();
            admin.create_topic("p", shards as i32, vec![]).await.unwrap();
            let md = admin.metadata(Some(vec!["p".into()])).await.unwrap();
            let value = vec![b'p'; 1024];
            let mut b = BatchBuilder::new(12_000);
            for i in 0..10 {
                b.push(RecordSpec::new(None, Some(&value)).timestamp(i));
            }
            let batch = Bytes::from(b.build());
            let mut rows = Vec::new();
            for (acks, name) in [(ACKS_LEADER, "acks=1"), (ACKS_ALL, "acks=all")] {
                for conns in [1usize, 8, 32] {
                    let hist = Rc::new(std::cell::RefCell::new(
                        Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap(),
                    ));
                    let deadline = Instant::now() + Duration::from_secs(secs);
                    let mut tasks = Vec::new();
                    for _ in 0..conns {
                        // All connections of a run write one partition: group commit shares
                        // its fdatasync between them.
                        let p = 0usize;
                        let owner = md.topic("p").unwrap().partitions[p].owner_shard;
                        let addr = format!("127.0.0.1:{}", md.shard_port(owner).unwrap());
                        let (hist, batch) = (hist.clone(), batch.clone());
                        tasks.push(glommio::spawn_local(async move {
                            let mut client = Client::connect(&addr).await.unwrap();
                            let mut n = 0u64;
                            while Instant::now() < deadline {
                                let t = Instant::now();
                                client.produce("p", p as i32, acks, batch.clone()).await.unwrap();
                                hist.borrow_mut().record(t.elapsed().as_micros().max(1) as u64).unwrap();
                                n += 1;
                            }
                            n
                        }));
                    }
                    let mut requests = 0;
                    for t in tasks {
                        requests += t.await;
                    }
                    let h = hist.borrow();
                    let records = requests * 10;
                    rows.push(format!(
                        "{name:<9} {conns:>3} conns  {:>9.0} records/s {:>7.1} MB/s   p50 {:>6} us  p99 {:>6} us  p999 {:>6} us",
                        records as f64 / secs as f64,
                        (requests * batch.len() as u64) as f64 / 1e6 / secs as f64,
                        h.value_at_quantile(0.5),
                        h.value_at_quantile(0.99),
                        h.value_at_quantile(0.999),
                    ));
                }
            }
            rows
        })
        .unwrap()
        .join()
        .unwrap();
    println!("== produce, 10 x 1 KiB records per request, one partition, {secs} s per row ({shards} shards)");
    for r in rows {
        println!("{r}");
    }
    server.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
