//! The Kafka listener against the native protocol, in the same run on the same server (one
//! shard): produce (acks=all, 1 MiB batches of 1 KiB records, one request at a time) and
//! sequential fetch of everything back (1 MiB per request), by each protocol from Rust with
//! the same batches; then librdkafka through confluent-kafka (if scripts/install-test-deps.sh
//! made target/kafka-venv) producing and consuming the same volume.
//! `cargo bench --bench kafka [-- --quick]`; SHARDLOG_BENCH_DIR sets the data directory.

use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use hdrhistogram::Histogram;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::protocol::ACKS_ALL;
use shardlog::server::{self, ServerConfig};

const RECORD: usize = 1024;
const BATCH_RECORDS: usize = 1000;
const FETCH_BYTES: i32 = 1 << 20;

struct Row {
    what: &'static str,
    mb_s: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let total: usize = if quick { 128 << 20 } else { 512 << 20 };
    let batches = total / (RECORD * BATCH_RECORDS);
    let base = std::env::var_os("SHARDLOG_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    let dir = base.join("kafka");
    let _ = std::fs::remove_dir_all(&dir);
    let port = 25_000 + (std::process::id() % 1000) as u16 * 3;
    let kafka = format!("127.0.0.1:{}", port - 3_000);
    let native = format!("127.0.0.1:{port}");
    let _server = server::start(ServerConfig {
        data_dir: dir.clone(),
        listen: native.parse().unwrap(),
        kafka_listen: Some(kafka.parse().unwrap()),
        shards: 1,
        ..Default::default()
    })
    .expect("server");
    let batch = Bytes::from(one_batch());
    let native_produce =
        on_client_executor(&native, move |c| native_produce(c, batch.clone(), batches));
    let batch = Bytes::from(one_batch());
    let mut k = BlockingClient::connect(&kafka).unwrap();
    let kafka_produce = kafka_produce(&mut k, batch, batches);
    // Both fetches start cold: shardlog's page cache is dropped before each.
    let native_fetch = on_client_executor(&native, |mut c| async move {
        c.drop_caches(false).await.unwrap();
        native_fetch(c).await
    });
    on_client_executor(&native, |mut c| async move {
        c.drop_caches(false).await.unwrap();
    });
    let kafka_fetch = kafka_fetch(&mut k);
    let mut rows = vec![native_produce, kafka_produce, native_fetch, kafka_fetch];
    rows.extend(librdkafka_rows(&kafka, total));
    rows.extend(kcat_row(&kafka, total));
    println!("\n| path | MB/s | p50 ms | p99 ms |\n|---|---|---|---|");
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for r in &rows {
        println!(
            "| {} | {:.0} | {} | {} |",
            r.what,
            r.mb_s,
            ms(r.p50_ms),
            ms(r.p99_ms)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_batch() -> Vec<u8> {
    let value = vec![b'v'; RECORD];
    let now = shardlog::time::now_ms();
    let mut b = BatchBuilder::new(BATCH_RECORDS * (RECORD + 32));
    for i in 0..BATCH_RECORDS {
        b.push(RecordSpec::new(None, Some(&value)).timestamp(now + i as i64));
    }
    b.build()
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).unwrap()
}

fn produce_row(what: &'static str, bytes: usize, secs: f64, h: &Histogram<u64>) -> Row {
    Row {
        what,
        mb_s: bytes as f64 / secs / 1e6,
        p50_ms: Some(h.value_at_quantile(0.5) as f64 / 1000.0),
        p99_ms: Some(h.value_at_quantile(0.99) as f64 / 1000.0),
    }
}

/// Runs `f` with a native client on a glommio executor of its own.
fn on_client_executor<T, F, Fut>(addr: &str, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce(Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    let addr = addr.to_string();
    glommio::LocalExecutorBuilder::default()
        .spawn(move || async move { f(Client::connect(&addr).await.unwrap()).await })
        .unwrap()
        .join()
        .unwrap()
}

async fn native_produce(mut c: Client, batch: Bytes, batches: usize) -> Row {
    for t in ["native", "kafka", "librdkafka"] {
        c.create_topic(t, 1, vec![]).await.unwrap();
    }
    let mut h = histogram();
    let start = Instant::now();
    for _ in 0..batches {
        let t = Instant::now();
        c.produce("native", 0, ACKS_ALL, batch.clone())
            .await
            .unwrap();
        h.record(t.elapsed().as_micros().max(1) as u64).unwrap();
    }
    produce_row(
        "native produce (Rust, 1 request at a time)",
        batches * batch.len(),
        start.elapsed().as_secs_f64(),
        &h,
    )
}

async fn native_fetch(mut c: Client) -> Row {
    let (mut next, mut read) = (0i64, 0usize);
    let start = Instant::now();
    loop {
        let f = c.fetch("native", 0, next, FETCH_BYTES).await.unwrap();
        if f.records.is_empty() {
            break;
        }
        read += f.records.len();
        next = last_offset(&f.records) + 1;
    }
    Row {
        what: "native fetch (Rust, 1 MiB per request, cold)",
        mb_s: read as f64 / start.elapsed().as_secs_f64() / 1e6,
        p50_ms: None,
        p99_ms: None,
    }
}

fn last_offset(records: &[u8]) -> i64 {
    let batches = shardlog::format::batch::split_batches(records).unwrap();
    batches.last().unwrap().1.last_offset()
}

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn kafka_produce(c: &mut BlockingClient, batch: Bytes, batches: usize) -> Row {
    let mut h = histogram();
    let start = Instant::now();
    for _ in 0..batches {
        let request = RequestKind::Produce(
            ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(30_000)
                .with_topic_data(vec![produce_request::TopicProduceData::default()
                    .with_name(topic("kafka"))
                    .with_partition_data(vec![
                        produce_request::PartitionProduceData::default()
                            .with_records(Some(batch.clone())),
                    ])]),
        );
        let t = Instant::now();
        let ResponseKind::Produce(r) = c.call(ApiKey::Produce, 9, &request).unwrap() else {
            panic!("not a produce response")
        };
        h.record(t.elapsed().as_micros().max(1) as u64).unwrap();
        assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    }
    produce_row(
        "Kafka produce v9 (Rust, 1 request at a time)",
        batches * batch.len(),
        start.elapsed().as_secs_f64(),
        &h,
    )
}

fn kafka_fetch(c: &mut BlockingClient) -> Row {
    let (mut next, mut read) = (0i64, 0usize);
    let start = Instant::now();
    loop {
        let request = RequestKind::Fetch(
            FetchRequest::default()
                .with_max_bytes(FETCH_BYTES)
                .with_topics(vec![fetch_request::FetchTopic::default()
                    .with_topic(topic("kafka"))
                    .with_partitions(vec![fetch_request::FetchPartition::default()
                        .with_fetch_offset(next)
                        .with_partition_max_bytes(FETCH_BYTES)])]),
        );
        let ResponseKind::Fetch(r) = c.call(ApiKey::Fetch, 12, &request).unwrap() else {
            panic!("not a fetch response")
        };
        let records = r.responses[0].partitions[0]
            .records
            .clone()
            .unwrap_or_default();
        if records.is_empty() {
            break;
        }
        read += records.len();
        next = last_offset(&records) + 1;
    }
    Row {
        what: "Kafka fetch v12 (Rust, 1 MiB per request, cold)",
        mb_s: read as f64 / start.elapsed().as_secs_f64() / 1e6,
        p50_ms: None,
        p99_ms: None,
    }
}

/// kcat (librdkafka in C) reading the librdkafka topic back, printing nothing per record:
/// a consume figure without Python's per-record cost.
fn kcat_row(addr: &str, total: usize) -> Option<Row> {
    let start = Instant::now();
    let status = std::process::Command::new("kcat")
        .args([
            "-b",
            addr,
            "-C",
            "-t",
            "librdkafka",
            "-p",
            "0",
            "-o",
            "beginning",
        ])
        .args(["-e", "-q", "-f", ""])
        .status()
        .ok()?;
    status.success().then(|| Row {
        what: "kcat consume (librdkafka 2.0, C; includes its start-up)",
        mb_s: total as f64 / start.elapsed().as_secs_f64() / 1e6,
        p50_ms: None,
        p99_ms: None,
    })
}

fn librdkafka_rows(addr: &str, total: usize) -> Vec<Row> {
    let python = PathBuf::from("target/kafka-venv/bin/python");
    if !python.exists() {
        eprintln!("no target/kafka-venv (scripts/install-test-deps.sh): librdkafka rows skipped");
        return Vec::new();
    }
    let out = std::process::Command::new(python)
        .arg("benches/kafka_client_bench.py")
        .args([addr, "librdkafka", &total.to_string(), &RECORD.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = |k: &str| v[k].as_f64().unwrap();
    vec![
        Row {
            what: "librdkafka produce (confluent-kafka, acks=all; per-record latency)",
            mb_s: f("produce_mb_s"),
            p50_ms: Some(f("produce_p50_ms")),
            p99_ms: Some(f("produce_p99_ms")),
        },
        Row {
            what: "librdkafka consume (confluent-kafka)",
            mb_s: f("consume_mb_s"),
            p50_ms: None,
            p99_ms: None,
        },
    ]
}
