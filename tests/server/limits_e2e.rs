//! Resources a client or the machine limits, through the real `shardlog serve` binary on
//! loopback: file descriptors under a low `ulimit -n`, memory under slow readers, idle and
//! stuck peers, clients of a server that never answers, and a real full disk (a
//! loop-mounted ext4 image).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::server_proc::ServerProc;
use common::{client, read_records, read_response};
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::protocol::{ApiKey, ErrorCode, Request, ACKS_ALL};

fn batch_at(ts: i64, len: usize) -> Bytes {
    Bytes::from(
        BatchBuilder::new(len + 128)
            .record(RecordSpec::new(None, Some(&vec![b'v'; len])).timestamp(ts))
            .build(),
    )
}

/// Offsets of every record of a partition, read back through Fetch.
async fn read_offsets(c: &mut Client, topic: &str, p: i32) -> Vec<i64> {
    read_records(c, topic, p)
        .await
        .into_iter()
        .map(|(o, _)| o)
        .collect()
}

/// Partition directories of `topic` in the data directory (not those being deleted).
fn partition_dirs(data: &std::path::Path, topic: &str) -> usize {
    let prefix = format!("{topic}-");
    std::fs::read_dir(data)
        .unwrap()
        .filter(|e| {
            let n = e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .into_owned();
            n.starts_with(&prefix) && !n.ends_with("-delete")
        })
        .count()
}

#[test]
fn a_pool_larger_than_the_fd_limit_fails_a_create_clearly_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = [("max.open.files.per.shard", "1000")];
    let server = ServerProc::start_wrapped(&data, 1, &config, Some("ulimit -n 160"));
    let addr = server.addr();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        // The pool would keep 300 active segments open: they do not fit in 160 descriptors.
        let e = c.create_topic("wide", 300, vec![]).await.unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::StorageError), "{e}");
        assert!(e.to_string().contains("Too many open files"), "{e}");
        let md = c.metadata(Some(vec!["wide".into()])).await.unwrap();
        assert_eq!(
            md.topic("wide").unwrap().error_code,
            ErrorCode::UnknownTopic
        );
        // The node keeps serving once descriptors are back.
        c.create_topic("narrow", 3, vec![]).await.unwrap();
        c.produce("narrow", 2, ACKS_ALL, batch_at(0, 100))
            .await
            .unwrap();
    });
    assert_eq!(
        partition_dirs(&data, "wide"),
        0,
        "a failed create leaves no partition behind"
    );
}

#[test]
fn a_low_fd_limit_gives_clear_errors_keeps_serving_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = [
        ("max.open.files.per.shard", "30"),
        ("log.roll.min.interval.ms", "0"),
        ("max.connections.per.shard", "1000"),
    ];
    let mut server = ServerProc::start_wrapped(&data, 1, &config, Some("ulimit -n 160"));
    let addr = server.addr();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        // 300 partitions in 160 descriptors: their active segments share the pool of 30.
        c.create_topic("wide", 300, vec![]).await.unwrap();
        for round in 0..2 {
            for p in 0..300 {
                c.produce("wide", p, ACKS_ALL, batch_at(round, 100))
                    .await
                    .unwrap();
            }
        }
        for p in (0..300).step_by(37) {
            assert_eq!(read_offsets(&mut c, "wide", p).await, vec![0, 1]);
        }
        // Timestamps leaping past segment.ms force a roll on every produce.
        c.create_topic("rolls", 1, vec![("segment.ms".into(), "1000".into())])
            .await
            .unwrap();
        for i in 0..400 {
            c.produce("rolls", 0, ACKS_ALL, batch_at(i * 5_000, 100))
                .await
                .unwrap();
        }
        assert_eq!(
            read_offsets(&mut c, "rolls", 0).await,
            (0..400).collect::<Vec<_>>()
        );
    });
    let segments = std::fs::read_dir(data.join("rolls-0"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert_eq!(segments, 400, "every produce rolled");
    let fds = server.open_fds();
    eprintln!("figures: {segments} segments, {fds} descriptors open (limit 160, pool 30)");
    assert!(fds < 100, "{fds} descriptors open");
    // Connections until accept runs out of descriptors: it backs off instead of spinning.
    let held = connect_until_accept_fails(&server, &addr);
    let failures_before = accept_failures_logged(&server);
    std::thread::sleep(Duration::from_secs(2));
    let logged = accept_failures_logged(&server) - failures_before;
    eprintln!(
        "{} connections held; accept failures logged in the next 2 s: {logged}",
        held.len()
    );
    assert!(logged <= 4, "{logged} accept failure lines logged in 2 s");
    drop(held);
    server.restart_after_kill();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        assert_eq!(
            read_offsets(&mut c, "rolls", 0).await,
            (0..400).collect::<Vec<_>>()
        );
        assert_eq!(read_offsets(&mut c, "wide", 299).await, vec![0, 1]);
    });
}

fn accept_failures_logged(server: &ServerProc) -> usize {
    server.log_text().matches("accept failed").count()
}

/// Opens connections (at most 400, for at most 20 s) until the server logs that accept
/// failed; a loaded machine may take a while to accept, so this waits for the log rather
/// than for a fixed count.
fn connect_until_accept_fails(server: &ServerProc, addr: &str) -> Vec<TcpStream> {
    let target: std::net::SocketAddr = addr.parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut held = Vec::new();
    while accept_failures_logged(server) == 0 {
        assert!(
            Instant::now() < deadline,
            "the descriptor limit was never reached ({} connections, {} server fds)",
            held.len(),
            server.open_fds()
        );
        match TcpStream::connect_timeout(&target, Duration::from_secs(1)) {
            Ok(s) if held.len() < 400 => held.push(s),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    held
}

fn fetch_frame(cid: i32, topic: &str, max_bytes: i32) -> Vec<u8> {
    Request::Fetch {
        topic: topic.into(),
        partition: 0,
        offset: 0,
        max_bytes,
    }
    .encode_frame(cid)
}

#[test]
fn slow_readers_pipelining_large_fetches_stay_within_the_memory_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let shard_budget = 64usize << 20;
    let cache = 16usize << 20;
    let config = [
        ("max.inflight.bytes.per.shard", shard_budget.to_string()),
        (
            "max.inflight.bytes.per.connection",
            (16usize << 20).to_string(),
        ),
        ("cache.bytes", cache.to_string()),
        ("request.timeout.ms", "120000".to_string()),
    ];
    let config: Vec<(&str, &str)> = config.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &config);
    let addr = server.addr();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("big", 1, vec![]).await.unwrap();
        for i in 0..20 {
            c.produce("big", 0, 1, batch_at(i, 1 << 20)).await.unwrap();
        }
    });
    let baseline = server.rss_bytes();
    let mut slow = Vec::new();
    for i in 0..100 {
        let mut s = TcpStream::connect(&addr).unwrap();
        let mut frames = Vec::new();
        for cid in 0..20 {
            frames.extend(fetch_frame(cid, "big", 16 << 20));
        }
        s.write_all(&frames).unwrap();
        slow.push(s);
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    std::thread::sleep(Duration::from_secs(3));
    let rss = server.rss_bytes();
    // While they hold the shard's budget, a small request of another client is served.
    let served = client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let f = c.fetch("big", 0, 19, 1000).await.unwrap();
        c.metadata(None).await.is_ok() && !f.records.is_empty()
    });
    assert!(served);
    let bound = shard_budget + cache + 100 * shardlog_small_allowance() + (32 << 20);
    eprintln!(
        "figures: RSS {} MiB before, {} MiB under 100 slow readers x 20 pipelined 16 MiB fetches; bound {} MiB above the baseline",
        baseline >> 20,
        rss >> 20,
        bound >> 20
    );
    assert!(
        rss - baseline < bound as u64,
        "RSS grew by {} MiB",
        (rss - baseline) >> 20
    );
    drop(slow);
}

fn shardlog_small_allowance() -> usize {
    1 << 20
}

#[test]
fn idle_and_stuck_peers_are_timed_out_and_a_refused_client_hears_why() {
    let tmp = tempfile::tempdir().unwrap();
    // The peer's share is what refuses here: a full listener closes an idle connection
    // for a newcomer instead (`a_full_listener_makes_room_by_closing_its_longest_idle`).
    let config = [
        ("max.connections.per.shard", "8"),
        ("max.connections.per.ip", "8"),
        ("connections.max.idle.ms", "1000"),
        ("request.timeout.ms", "500"),
    ];
    let server = ServerProc::start(&tmp.path().join("data"), 1, &config);
    let addr = server.addr();
    // The readiness probe's connection must be gone before the slots are counted.
    std::thread::sleep(Duration::from_millis(300));
    let mut peers = Vec::new();
    for i in 0..8 {
        let mut s = TcpStream::connect(&addr).unwrap();
        if i % 2 == 0 {
            s.write_all(&100i32.to_be_bytes()).unwrap(); // a frame that never comes
        }
        peers.push(s);
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut refused = TcpStream::connect(&addr).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let r = read_response(&mut refused, ApiKey::Metadata)
        .unwrap_or_else(|e| panic!("an error frame, not {e}"));
    assert_eq!(r.correlation_id, -1);
    assert_eq!(r.result.unwrap_err().0, ErrorCode::TooManyConnections);
    std::thread::sleep(Duration::from_millis(1_500));
    for s in &mut peers {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 1];
        assert!(
            matches!(s.read(&mut b), Ok(0) | Err(_)),
            "closed by the server"
        );
    }
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        c.metadata(None).await.unwrap();
    });
}

#[test]
fn tools_give_up_on_a_server_that_never_answers() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let holder = std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(3));
        drop(held);
    });
    let started = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "topics",
            "list",
            "--bootstrap",
            &addr,
            "--timeout-ms",
            "500",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no answer from") && err.contains("500 ms"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    holder.join().unwrap();
}

/// A real full disk: a 64 MiB ext4 image, loop-mounted. Produces fail with a clear error
/// while it is full, readers never see the failed records, and once space is freed the same
/// server accepts produces again without a restart.
#[test]
fn a_full_real_disk_recovers_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mount) = LoopMount::new(tmp.path(), 64) else {
        eprintln!("SKIPPED: needs root, mkfs.ext4 and a loop device");
        return;
    };
    let data = mount.dir.join("data");
    let server = ServerProc::start(&data, 1, &[]);
    let filler = mount.dir.join("filler");
    let addr = server.addr();
    let a = addr.clone();
    let f = filler.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("full", 1, vec![]).await.unwrap();
        fill(&f, 8 << 20);
        let mut acked = 0i64;
        let mut failure = None;
        for i in 0..200 {
            match c.produce("full", 0, ACKS_ALL, batch_at(i, 256 << 10)).await {
                Ok(Some((base, last, _))) => {
                    assert_eq!(base, acked, "offsets follow the acknowledged ones");
                    acked = last + 1;
                }
                Ok(None) => unreachable!(),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let e = failure.expect("the disk filled up");
        assert_eq!(e.code(), Some(ErrorCode::StorageError), "{e}");
        assert!(e.to_string().contains("No space left"), "{e}");
        // Readers see exactly what was acknowledged.
        let end = c.list_offsets("full", 0, -1).await.unwrap().unwrap().0;
        assert_eq!(end, acked);
        assert_eq!(read_offsets(&mut c, "full", 0).await.len() as i64, acked);
        std::fs::remove_file(&f).unwrap();
        let mut recovered = false;
        for _ in 0..50 {
            match c.produce("full", 0, ACKS_ALL, batch_at(7, 1000)).await {
                Ok(Some((base, _, _))) => {
                    assert!(base >= acked);
                    recovered = true;
                    break;
                }
                Ok(None) => unreachable!(),
                Err(e) => {
                    assert_ne!(e.code(), Some(ErrorCode::PartitionPoisoned), "{e}");
                    glommio::timer::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        assert!(recovered, "produces work again once space is freed");
        let offsets = read_offsets(&mut c, "full", 0).await;
        assert!(offsets.len() as i64 > acked);
        assert_eq!(
            offsets[..acked as usize],
            (0..acked).collect::<Vec<_>>()[..]
        );
    });
    drop(server);
}

/// Fills the file system holding `path` up to `leave` free bytes.
fn fill(path: &std::path::Path, leave: u64) {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0u8; 1 << 20];
    loop {
        let free = fs_free_bytes(path.parent().unwrap());
        if free <= leave + (1 << 20) {
            break;
        }
        if f.write_all(&chunk).is_err() {
            break;
        }
    }
    f.sync_all().unwrap();
}

fn fs_free_bytes(dir: &std::path::Path) -> u64 {
    let out = std::process::Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0)
}

/// An ext4 image mounted on a loop device for the life of the value.
struct LoopMount {
    dir: std::path::PathBuf,
}

impl LoopMount {
    fn new(under: &std::path::Path, mib: u64) -> Option<Self> {
        let image = under.join("disk.img");
        let dir = under.join("mnt");
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::File::create(&image)
            .ok()?
            .set_len(mib << 20)
            .ok()?;
        let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
            std::process::Command::new(cmd)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !run(
            "mkfs.ext4",
            &["-q".as_ref(), "-F".as_ref(), image.as_os_str()],
        ) {
            return None;
        }
        if !run(
            "mount",
            &[
                "-o".as_ref(),
                "loop".as_ref(),
                image.as_os_str(),
                dir.as_os_str(),
            ],
        ) {
            return None;
        }
        Some(LoopMount { dir })
    }
}

impl Drop for LoopMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// Issue 39: parked connections (one ApiVersions, then nothing) used to hold a listener's
/// slots for `connections.max.idle.ms`, and every Kafka listener shared one pool. Each
/// listener now has its own slots (`listener.name.<name>.max.connections`), and a full one
/// closes its longest-idle connection to serve a newcomer: parked peers lock nobody out,
/// and a client with a request in progress is never the one closed.
#[test]
fn a_full_listener_makes_room_by_closing_its_longest_idle() {
    let tmp = tempfile::tempdir().unwrap();
    let config = [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:auto,SASL_PLAINTEXT://127.0.0.1:auto",
        ),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.plaintext.max.connections", "4"),
    ];
    let server = ServerProc::start(&tmp.path().join("data"), 1, &config);
    let (plain, sasl) = (
        server.listener("PLAINTEXT"),
        server.listener("SASL_PLAINTEXT"),
    );
    std::thread::sleep(Duration::from_millis(300));
    let api_versions = |c: &mut BlockingClient| {
        let r = kafka_protocol::messages::RequestKind::ApiVersions(Default::default());
        c.call(kafka_protocol::messages::ApiKey::ApiVersions, 3, &r)
    };
    // Four parked connections fill the PLAINTEXT listener, oldest first.
    let mut parked = Vec::new();
    for _ in 0..4 {
        let mut c = BlockingClient::connect_with_timeout(&plain, Duration::from_secs(5)).unwrap();
        api_versions(&mut c).unwrap();
        parked.push(c);
        std::thread::sleep(Duration::from_millis(20));
    }
    // The SASL listener has slots of its own.
    let mut other = BlockingClient::connect_with_timeout(&sasl, Duration::from_secs(5)).unwrap();
    api_versions(&mut other).unwrap();
    // A newcomer is served; the oldest parked connection was closed for it.
    let mut newcomer =
        BlockingClient::connect_with_timeout(&plain, Duration::from_secs(5)).unwrap();
    api_versions(&mut newcomer).expect("served on a full listener");
    assert!(
        parked[0].read_frame().is_none(),
        "the longest idle is closed"
    );
    for c in &mut parked[1..] {
        api_versions(c).expect("younger parked connections stay");
    }
    drop(server);
}
