//! Shared helpers for integration tests: a glommio executor on a real temp dir (ext4, real
//! io_uring, direct I/O) and small batch builders.
#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;

pub mod certs;
pub mod cli;
pub mod elect;
pub mod etcd;
pub mod firewall;
pub mod kafka_clients;
pub mod s3;
pub mod security;
pub mod server_proc;
pub mod sim_log;

use glommio::LocalExecutorBuilder;
use shardlog::format::{BatchBuilder, RecordSpec};

/// Runs `f` on a fresh glommio executor with a fresh temp directory.
pub fn run<F, Fut>(f: F)
where
    F: FnOnce(PathBuf) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let tmp = tempfile::Builder::new()
        .prefix("shardlog-test-")
        .tempdir_in(std::env::temp_dir())
        .expect("temp dir");
    let dir = tmp.path().to_path_buf();
    LocalExecutorBuilder::default()
        .io_memory(2 << 20)
        .spawn(move || f(dir))
        .expect("spawn executor")
        .join()
        .expect("executor panicked");
    drop(tmp);
}

/// One batch of records with the given timestamps and values `v<offset-in-batch>`.
pub fn batch_with_timestamps(ts: &[i64]) -> Vec<u8> {
    let values: Vec<Vec<u8>> = (0..ts.len())
        .map(|i| format!("v{i}").into_bytes())
        .collect();
    let mut b = BatchBuilder::new(128);
    for (i, &t) in ts.iter().enumerate() {
        b.push(RecordSpec::new(None, Some(&values[i])).timestamp(t));
    }
    b.build()
}

/// One single-record batch with a value of `len` bytes.
pub fn single(ts: i64, len: usize) -> Vec<u8> {
    let value = vec![b'x'; len];
    BatchBuilder::new(len + 80)
        .record(RecordSpec::new(Some(b"key"), Some(&value)).timestamp(ts))
        .build()
}

/// Sets a batch's base offset (for appends with pre-assigned offsets).
pub fn at_offset(mut batch: Vec<u8>, base: i64) -> Vec<u8> {
    shardlog::format::batch::set_base_offset(&mut batch, base);
    batch
}

/// Starts a server with `shards` shards on `data_dir`, on a free port range (retrying on
/// collisions with other tests). Returns the handle and the shared port.
pub fn start_server(
    data_dir: &std::path::Path,
    shards: usize,
    tweak: impl Fn(&mut shardlog::server::ServerConfig),
) -> (shardlog::server::ServerHandle, u16) {
    let mut last_err = String::new();
    for _ in 0..20 {
        let port = fastrand::u16(10_000..32_000);
        let mut config = shardlog::server::ServerConfig {
            data_dir: data_dir.to_path_buf(),
            listen: format!("127.0.0.1:{port}").parse().unwrap(),
            kafka_listen: None,
            shards,
            io_memory_bytes: 2 << 20,
            ..Default::default()
        };
        tweak(&mut config);
        match shardlog::server::start(config) {
            Ok(h) => return (h, port),
            Err(e) => last_err = e.to_string(),
        }
    }
    panic!("could not start a server: {last_err}");
}

/// Runs client code on its own (unpinned) glommio executor and returns its result.
pub fn client<F, Fut, T>(f: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .spawn(f)
        .expect("spawn client executor")
        .join()
        .expect("client panicked")
}

/// Every record of a partition from its log start, read back through Fetch: (offset, value
/// as text; a null value reads as ""), in offset order.
pub async fn read_records(
    c: &mut shardlog::client::Client,
    topic: &str,
    p: i32,
) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    visit_records(c, topic, p, |offset, value| {
        let value = value.map(|v| String::from_utf8_lossy(v).into_owned());
        out.push((offset, value.unwrap_or_default()));
    })
    .await;
    out
}

/// Hands every record of a partition, from its log start, to `visit` (offset, value), in
/// offset order, without keeping them.
pub async fn visit_records(
    c: &mut shardlog::client::Client,
    topic: &str,
    p: i32,
    mut visit: impl FnMut(i64, Option<&[u8]>),
) {
    use shardlog::format::batch::{split_batches, RecordsSection};
    let earliest = c.list_offsets(topic, p, -2).await.unwrap();
    let mut next = earliest.map_or(0, |(o, _)| o);
    loop {
        let f = c.fetch(topic, p, next, 1 << 20).await.unwrap();
        if f.records.is_empty() {
            return;
        }
        for (start, h) in split_batches(&f.records).unwrap() {
            let bytes = &f.records[start..start + h.size()];
            for r in RecordsSection::of(bytes, &h).unwrap().decode().unwrap() {
                if r.offset >= next {
                    visit(r.offset, r.value);
                }
            }
            next = h.last_offset() + 1;
        }
    }
}

/// The seeds of a seeded randomized test: `<prefix>_CASES` of them (default `cases`),
/// consecutive from `<prefix>_SEED` (default random), each printed so a failure can be
/// replayed with `<prefix>_SEED=<seed> <prefix>_CASES=1`.
#[allow(dead_code)]
pub fn seeds(prefix: &str, cases: u64) -> impl Iterator<Item = u64> {
    let env = |name: &str| {
        std::env::var(format!("{prefix}_{name}"))
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
    };
    let cases = env("CASES").unwrap_or(cases);
    let first = env("SEED").unwrap_or_else(|| fastrand::u64(..));
    let prefix = prefix.to_string();
    (0..cases).map(move |i| {
        let seed = first.wrapping_add(i);
        eprintln!("{prefix} seed {seed}");
        seed
    })
}

/// One native response frame from a blocking socket, decoded as the reply to `key`.
pub fn read_response(
    s: &mut std::net::TcpStream,
    key: shardlog::protocol::ApiKey,
) -> Result<shardlog::protocol::Response, String> {
    use std::io::Read;
    let mut size = [0u8; 4];
    s.read_exact(&mut size).map_err(|e| e.to_string())?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut body).map_err(|e| e.to_string())?;
    shardlog::protocol::Response::decode(key, &bytes::Bytes::from(body)).map_err(|e| e.to_string())
}
