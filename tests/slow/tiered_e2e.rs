//! Tiered storage end to end, against an S3 server (s3s-fs) on loopback: the real
//! `shardlog serve` copies sealed segments of a topic with remote.storage.enable=true to the
//! bucket, local retention then deletes them locally, and confluent-kafka (librdkafka)
//! still reads every record from offset 0 and looks offsets up by time below the local
//! log's start; a tampered object is refused, never served; a frozen store holds local
//! deletion back and remote reads fail retriably, and everything resumes with the store.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::kafka_clients::{run_bounded, script};
use common::s3::{manifest_segments, S3Server};
use common::server_proc::ServerProc;

const PREFIX: &str = "cluster-a";

/// A server on `data` with the store, a fast uploader and retention check, and Kafka.
fn start_server(data: &Path, s3: &S3Server) -> ServerProc {
    let mut keys = s3.server_keys(PREFIX);
    keys.push(("remote.upload.interval.ms".into(), "200".into()));
    keys.push(("log.retention.check.interval.ms".into(), "200".into()));
    keys.push(("kafka.listen".into(), "auto".into()));
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    ServerProc::start_wrapped(data, 2, &keys, Some(&s3.env_wrapper()))
}

fn tiered(server: &ServerProc, args: &[&str]) -> String {
    let addr = server.kafka_addr();
    let mut all = vec![addr.as_str()];
    all.extend_from_slice(args);
    let out = run_bounded(&mut script("tiered.py", &all), Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        let log = server.log_text();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        panic!(
            "tiered.py {args:?} failed:\n{stdout}\n{}\nserver log (last lines, newest first):\n{}",
            String::from_utf8_lossy(&out.stderr),
            tail.join("\n")
        );
    }
    stdout
}

/// Base offsets of the local `.log` files of partition 0 of `topic`.
fn local_segments(data: &Path, topic: &str) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(data.join(format!("{topic}-0")))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

/// Every file below `dir` (none when it does not exist).
fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flat_map(|e| {
            let path = e.unwrap().path();
            match path.is_dir() {
                true => walk_files(&path),
                false => vec![path],
            }
        })
        .collect()
}

/// Waits (bounded) until `done` holds.
fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Record timestamps: one second apart, ending about now (inside the 7-day retention).
fn base_ms(records: i64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    now - records * 1000 - 60_000
}

const TOPIC_CONFIGS: [&str; 3] = [
    "remote.storage.enable=true",
    "segment.bytes=65536",
    "local.retention.bytes=65536",
];

/// Creates the tiered topic `orders` (TOPIC_CONFIGS).
fn create_orders(server: &ServerProc) {
    let mut create = vec!["create", "orders"];
    create.extend(TOPIC_CONFIGS);
    tiered(server, &create);
}

/// Produces records `from..from + n` of `orders` (timestamps from `base`).
fn produce(server: &ServerProc, from: i64, n: i64, base: i64) {
    let (from, n, base) = (from.to_string(), n.to_string(), base.to_string());
    tiered(server, &["produce", "orders", &from, &n, &base]);
}

/// Waits (bounded) until local retention kept only the last segments of `orders`: the
/// older ones were copied, then deleted locally.
fn wait_local_deletion(data: &Path) {
    wait_until(
        "uploads and local deletion",
        Duration::from_secs(60),
        || {
            let local = local_segments(data, "orders");
            local.len() <= 3 && local[0] > 0
        },
    );
}

/// A store and a server on `<tmp>/data` using it.
fn store_and_server(tmp: &Path) -> (S3Server, std::path::PathBuf, ServerProc) {
    let s3 = S3Server::start(&tmp.join("s3"));
    let data = tmp.join("data");
    let server = start_server(&data, &s3);
    (s3, data, server)
}

#[test]
fn old_offsets_and_times_are_served_from_the_bucket_after_local_deletion() {
    let tmp = tempfile::tempdir().unwrap();
    let (s3, data, server) = store_and_server(tmp.path());
    let (n, base) = (4000i64, base_ms(4000));
    create_orders(&server);
    produce(&server, 0, n, base);

    // Sealed segments reach the bucket, and local retention then keeps about one segment.
    wait_until(
        "uploads and local deletion",
        Duration::from_secs(60),
        || {
            let local = local_segments(&data, "orders");
            let remote = s3
                .manifest(PREFIX, "orders", 0)
                .map(|m| manifest_segments(&m))
                .unwrap_or_default();
            local.len() <= 3
                && local[0] > 0
                && remote.last().is_some_and(|&(_, last)| last + 1 >= local[0])
        },
    );
    let manifest = s3.manifest(PREFIX, "orders", 0).unwrap();
    let remote = manifest_segments(&manifest);
    assert_eq!(remote[0].0, 0, "the remote tier starts at the log start");
    for pair in remote.windows(2) {
        assert_eq!(
            pair[1].0,
            pair[0].1 + 1,
            "remote segments are contiguous: {remote:?}"
        );
    }
    for seg in manifest["segments"].as_array().unwrap() {
        for f in seg["files"].as_array().unwrap() {
            let bytes =
                std::fs::read(s3.object(&format!("{PREFIX}/{}", f["key"].as_str().unwrap())))
                    .unwrap();
            assert_eq!(bytes.len() as u64, f["size"].as_u64().unwrap());
            assert_eq!(crc32c::crc32c(&bytes), f["crc32c"].as_u64().unwrap() as u32);
        }
    }
    // Every record from offset 0, and lookups by time, through a real Kafka client.
    let out = tiered(
        &server,
        &["check", "orders", &n.to_string(), &base.to_string()],
    );
    assert!(out.contains(&format!("ok checked {n}")), "{out}");
    // Remote chunks are cached on disk too (within remote.cache.bytes).
    let cached = walk_files(&data.join("__shardlog_meta/remote-cache"));
    assert!(!cached.is_empty(), "no remote chunk on disk");
    let metrics = server.metrics();
    for name in [
        "remote_uploaded_bytes",
        "remote_uploaded_segments",
        "remote_reads",
    ] {
        assert!(metrics.value(name).unwrap_or(0) > 0, "{name} is 0");
    }
    assert!(metrics.value("remote_cache_misses").unwrap_or(0) > 0);

    let addr = server.addr();
    let cli = |args: &[&str]| {
        let (out, err, ok) = common::cli::shardlog(args, None);
        assert!(ok, "{args:?}: {err}");
        out
    };
    // Both tiers in the operators' tools.
    let described = cli(&["topics", "describe", "-b", &addr, "--topic", "orders"]);
    let local_start = local_segments(&data, "orders")[0];
    assert!(
        described.contains("LogStartOffset: 0\t")
            && described.contains(&format!("LocalLogStartOffset: {local_start}\t"))
            && described.contains("RemoteLogStartOffset: 0\t"),
        "{described}"
    );
    let dirs: serde_json::Value =
        serde_json::from_str(&cli(&["log-dirs", "-b", &addr, "--topic-list", "orders"])).unwrap();
    let p = &dirs["brokers"][0]["logDirs"][0]["partitions"][0];
    assert!(
        p["remote"]["remoteSize"].as_i64().unwrap() > 0
            && p["remote"]["remoteSegments"].as_i64().unwrap() >= 3,
        "{p}"
    );
    assert_eq!(
        p["remote"]["localLogStartOffset"].as_i64(),
        Some(local_start)
    );

    // DeleteRecords below the local start moves the start of both tiers.
    cli(&[
        "delete-records",
        "-b",
        &addr,
        "--topic",
        "orders",
        "--partition",
        "0",
        "--offset",
        "1000",
    ]);
    let earliest = |addr: &str| {
        cli(&[
            "get-offsets",
            "-b",
            addr,
            "--topic",
            "orders",
            "--time",
            "-2",
        ])
    };
    assert_eq!(earliest(&addr).trim(), "orders:0:1000");
    assert_eq!(
        s3.manifest(PREFIX, "orders", 0).unwrap()["log_start_offset"],
        1000
    );
    let fetch_addr = addr.clone();
    let below = common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&fetch_addr)
            .await
            .unwrap();
        c.fetch("orders", 0, 500, 1)
            .await
            .map(|_| ())
            .unwrap_err()
            .to_string()
    });
    assert!(below.contains("OffsetOutOfRange"), "{below}");
    assert_eq!(consume_at(&server, 1000).unwrap().trim(), "1000 k1000");
    wait_until(
        "segments below the log start to leave the bucket",
        Duration::from_secs(30),
        || {
            let m = s3.manifest(PREFIX, "orders", 0).unwrap();
            manifest_segments(&m)
                .first()
                .is_some_and(|&(_, last)| last >= 1000)
        },
    );
    // retention.bytes counts both tiers: the oldest remote segments go from the bucket
    // while the log exceeds it by a whole segment (Kafka's rule).
    cli(&[
        "topics",
        "alter",
        "-b",
        &addr,
        "--topic",
        "orders",
        "--config",
        "retention.bytes=200000",
    ]);
    wait_until("remote retention by size", Duration::from_secs(30), || {
        let m = s3.manifest(PREFIX, "orders", 0).unwrap();
        let remote: u64 = m["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["size_bytes"].as_u64().unwrap())
            .sum();
        remote <= 200000 + 65536
    });
    let start: i64 = earliest(&addr)
        .trim()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        start > 1000,
        "the log start moved with remote retention: {start}"
    );
    assert_eq!(
        consume_at(&server, start).unwrap().trim(),
        format!("{start} k{start}")
    );

    // Deleting the topic removes its remote tier; a new topic of that name starts empty.
    cli(&["topics", "delete", "-b", &addr, "--topic", "orders"]);
    let bucket_dir = s3.object(&format!("{PREFIX}/topics/orders"));
    wait_until(
        "the deleted topic's objects to go",
        Duration::from_secs(30),
        || walk_files(&bucket_dir).is_empty(),
    );
    create_orders(&server);
    tiered(
        &server,
        &["produce", "orders", "0", "10", &base.to_string()],
    );
    assert_eq!(consume_at(&server, 0).unwrap().trim(), "0 k0");
    assert_eq!(earliest(&addr).trim(), "orders:0:0");

    // The uploader idles without leaking: descriptors stay put while nothing happens.
    let fds = server.open_fds();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        server.open_fds() <= fds + 2,
        "descriptors grew while idle: {fds} -> {}",
        server.open_fds()
    );
}

/// The first `.log` object a manifest names at or after `offset`: (key, base offset).
fn remote_log_object(m: &serde_json::Value, index: usize) -> (String, i64) {
    let seg = &m["segments"][index];
    let file = seg["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["suffix"] == ".log")
        .unwrap();
    (
        file["key"].as_str().unwrap().to_string(),
        seg["base_offset"].as_i64().unwrap(),
    )
}

/// `shardlog consume` of one record at `offset`: Ok(output) or Err(stderr).
fn consume_at(server: &ServerProc, offset: i64) -> Result<String, String> {
    let (out, err, ok) = common::cli::shardlog(
        &[
            "consume",
            "-b",
            &server.addr(),
            "-t",
            "orders",
            "-p",
            "0",
            "-o",
            &offset.to_string(),
            "-c",
            "1",
            "-f",
            "%o %k\n",
        ],
        None,
    );
    if ok {
        Ok(out)
    } else {
        Err(err)
    }
}

#[test]
fn tampered_objects_are_refused_and_a_frozen_store_holds_local_deletion_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (s3, data, server) = store_and_server(tmp.path());
    let (n, base) = (4000i64, base_ms(6000));
    create_orders(&server);
    produce(&server, 0, n, base);
    wait_local_deletion(&data);
    let manifest = s3.manifest(PREFIX, "orders", 0).unwrap();
    assert!(manifest_segments(&manifest).len() >= 3, "{manifest}");

    // A flipped byte inside the first batch's records: detected by its CRC, never served.
    let (key, first) = remote_log_object(&manifest, 0);
    let path = s3.object(&format!("{PREFIX}/{key}"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[200] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let refused = consume_at(&server, first).unwrap_err();
    assert!(
        refused.contains("corrupt remote object") && refused.contains(&key),
        "{refused}"
    );
    // The next remote segment is still served.
    let (_, second) = remote_log_object(&manifest, 1);
    assert_eq!(
        consume_at(&server, second).unwrap().trim(),
        format!("{second} k{second}")
    );

    // The store frozen: produce goes on, sealed segments stay local (not copied, so not
    // deletable), and a remote read fails with a retriable storage error.
    s3.pause();
    let copied_end = manifest_segments(&s3.manifest(PREFIX, "orders", 0).unwrap())
        .last()
        .unwrap()
        .1
        + 1;
    tiered(
        &server,
        &[
            "produce",
            "orders",
            &n.to_string(),
            "2000",
            &base.to_string(),
        ],
    );
    std::thread::sleep(Duration::from_secs(2));
    let local = local_segments(&data, "orders");
    assert!(
        local[0] <= copied_end,
        "a segment not copied (from {copied_end}) was deleted locally: {local:?}"
    );
    assert!(local.len() > 3, "{local:?}");
    let local_start = local[0];
    let (_, third) = remote_log_object(&manifest, 2);
    let started = Instant::now();
    let unavailable = consume_at(&server, third).unwrap_err();
    assert!(
        unavailable.contains("StorageError") && unavailable.contains("unavailable"),
        "{unavailable}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));

    // Resumed: the backlog is copied, local retention catches up, old records are served.
    s3.resume();
    wait_until(
        "the backlog copied and deleted locally",
        Duration::from_secs(120),
        || {
            let local = local_segments(&data, "orders");
            local.len() <= 3 && local[0] > local_start
        },
    );
    assert_eq!(
        consume_at(&server, third).unwrap().trim(),
        format!("{third} k{third}")
    );
}

/// Waits (bounded) until the manifest of `orders`-0 covers offsets below `end`.
fn wait_uploaded(s3: &S3Server, end: i64) {
    wait_until(
        &format!("the bucket to hold offsets below {end}"),
        Duration::from_secs(120),
        || {
            s3.manifest(PREFIX, "orders", 0)
                .and_then(|m| manifest_segments(&m).last().copied())
                .is_some_and(|(_, last)| last + 1 >= end)
        },
    );
}

#[test]
fn an_upload_cut_by_kill_9_resumes_and_a_lost_node_is_restored_from_the_bucket() {
    let tmp = tempfile::tempdir().unwrap();
    let s3 = S3Server::start(&tmp.path().join("s3"));
    let data = tmp.path().join("data-a");
    let mut node_a = start_server(&data, &s3);
    let (n, base) = (4000i64, base_ms(5000));
    create_orders(&node_a);
    // The store frozen while segments seal: an upload is in flight when the node dies.
    s3.pause();
    produce(&node_a, 0, n, base);
    std::thread::sleep(Duration::from_millis(500));
    node_a.kill9();
    s3.resume();
    node_a.respawn();
    // Every sealed segment gets there after the restart; roll the last one up too.
    let (_, _, rolled) = common::cli::shardlog(
        &["topics", "roll", "-b", &node_a.addr(), "--topic", "orders"],
        None,
    );
    assert!(rolled);
    wait_uploaded(&s3, n);
    let manifest = s3.manifest(PREFIX, "orders", 0).unwrap();
    let remote = manifest_segments(&manifest);
    assert_eq!(remote[0].0, 0);
    assert!(
        remote.windows(2).all(|p| p[1].0 == p[0].1 + 1),
        "{remote:?}"
    );
    // The copy the kill cut short left no object behind once the node swept after restart.
    let named: Vec<String> = manifest["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["files"].as_array().unwrap().iter())
        .map(|f| {
            f["key"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let stored = walk_files(&s3.object(&format!("{PREFIX}/topics/orders/0")));
    for path in &stored {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name == "manifest.json" || named.contains(&name),
            "orphan {name} left in the bucket"
        );
    }

    // The machine is lost; a fresh node on the same bucket restores the topic.
    node_a.kill9();
    drop(node_a);
    std::fs::remove_dir_all(&data).unwrap();
    let node_b = restore_on_a_fresh_node(tmp.path(), &s3, n, base);
    // New records continue the offsets, and the restored node now writes the bucket.
    tiered(
        &node_b,
        &[
            "produce",
            "orders",
            &n.to_string(),
            "500",
            &base.to_string(),
        ],
    );
    let out = tiered(
        &node_b,
        &["check", "orders", &(n + 500).to_string(), &base.to_string()],
    );
    assert!(out.contains(&format!("ok checked {}", n + 500)), "{out}");
    // A topic the bucket does not hold cannot be restored.
    let (_, err, ok) = common::cli::shardlog(
        &["topics", "restore", "-b", &node_b.addr(), "--topic", "nope"],
        None,
    );
    assert!(!ok && err.contains("no tiered topic"), "{err}");
}

/// Starts a fresh node on the bucket, restores `orders` there and checks its `n` records
/// (timestamps from `base`) are all served.
fn restore_on_a_fresh_node(tmp: &Path, s3: &S3Server, n: i64, base: i64) -> ServerProc {
    let node = start_server(&tmp.join("data-b"), s3);
    let restore = ["topics", "restore", "-b", &node.addr(), "--topic", "orders"];
    let (out, err, ok) = common::cli::shardlog(&restore, None);
    assert!(ok, "restore failed: {out}{err}");
    let out = tiered(
        &node,
        &["check", "orders", &n.to_string(), &base.to_string()],
    );
    assert!(out.contains(&format!("ok checked {n}")), "{out}");
    node
}

/// Issue 39: the node is lost and so is the partition's manifest: `topics restore` rebuilds
/// it from the segment objects (each batch checked) instead of refusing, and serves every
/// uploaded record.
#[test]
fn a_lost_node_whose_manifest_is_lost_too_is_restored_from_the_segment_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let s3 = S3Server::start(&tmp.path().join("s3"));
    let data = tmp.path().join("data-a");
    let mut node_a = start_server(&data, &s3);
    let (n, base) = (3000i64, base_ms(4000));
    create_orders(&node_a);
    produce(&node_a, 0, n, base);
    roll_and_upload(&node_a, &s3, n);
    node_a.kill9();
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::remove_file(s3.object(&format!("{PREFIX}/topics/orders/0/manifest.json"))).unwrap();
    let node_b = restore_on_a_fresh_node(tmp.path(), &s3, n, base);
    let rebuilt = manifest_segments(&s3.manifest(PREFIX, "orders", 0).expect("rebuilt"));
    assert_eq!(rebuilt.first().map(|s| s.0), Some(0), "{rebuilt:?}");
    assert!(node_b
        .log_text()
        .contains("rebuilt from the segment objects"));
}

/// `dump-log` of the first remote segment of `orders`-0 (its .log and .index), by URL.
fn dump_remote_segment(s3: &S3Server) {
    let m = s3.manifest(PREFIX, "orders", 0).unwrap();
    let urls: Vec<String> = m["segments"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["suffix"] == ".log" || f["suffix"] == ".index")
        .map(|f| {
            format!(
                "s3://{}/{PREFIX}/{}",
                common::s3::BUCKET,
                f["key"].as_str().unwrap()
            )
        })
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "dump-log",
            "--verify-index-only",
            "--files",
            &urls.join(","),
        ])
        .envs(s3.env_vars())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Log starting offset: 0"), "{stdout}");
    // The server's own key for the store, instead of AWS_ENDPOINT (issue 39).
    let endpoint = s3
        .server_keys(PREFIX)
        .into_iter()
        .find(|(k, _)| k == "remote.storage.endpoint")
        .map(|(k, v)| format!("{k}={v}"))
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "dump-log",
            "--deep-iteration",
            "-X",
            &endpoint,
            "--files",
            &urls[0],
        ])
        .envs(
            s3.env_vars()
                .into_iter()
                .filter(|(k, _)| k != "AWS_ENDPOINT"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("baseOffset: 0 lastOffset:") && stdout.contains("offset: 1 "),
        "{stdout}"
    );
}

/// Rolls `orders` on `server` and waits until the bucket holds every offset below `end`.
fn roll_and_upload(server: &ServerProc, s3: &S3Server, end: i64) {
    let (_, err, ok) = common::cli::shardlog(
        &["topics", "roll", "-b", &server.addr(), "--topic", "orders"],
        None,
    );
    assert!(ok, "{err}");
    wait_uploaded(s3, end);
}

#[test]
fn a_read_replica_serves_the_bucket_read_only_and_follows_the_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let s3 = S3Server::start(&tmp.path().join("s3"));
    let writer = start_server(&tmp.path().join("data-w"), &s3);
    let (n, base) = (3000i64, base_ms(5000));
    create_orders(&writer);
    produce(&writer, 0, n, base);
    roll_and_upload(&writer, &s3, n);

    let mut keys = s3.server_keys(PREFIX);
    keys.push(("remote.read.replica".into(), "true".into()));
    keys.push(("remote.upload.interval.ms".into(), "200".into()));
    keys.push(("kafka.listen".into(), "auto".into()));
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let replica = ServerProc::start_wrapped(
        &tmp.path().join("data-r"),
        2,
        &keys,
        Some(&s3.env_wrapper()),
    );
    wait_until(
        "the replica to find the topic",
        Duration::from_secs(30),
        || {
            let (out, _, _) =
                common::cli::shardlog(&["topics", "list", "-b", &replica.addr()], None);
            out.lines().any(|l| l == "orders")
        },
    );
    let out = tiered(
        &replica,
        &["check", "orders", &n.to_string(), &base.to_string()],
    );
    assert!(out.contains(&format!("ok checked {n}")), "{out}");

    // The bucket's segments are dumped as local ones are, from any machine with access.
    dump_remote_segment(&s3);

    // Writes are refused with a clear error; the replica keeps serving.
    let (_, err, ok) = common::cli::shardlog(
        &["produce", "-b", &replica.addr(), "--topic", "orders"],
        Some("x\n"),
    );
    assert!(!ok && err.contains("read replica"), "{err}");
    let (_, err, ok) = common::cli::shardlog(
        &["topics", "create", "-b", &replica.addr(), "--topic", "mine"],
        None,
    );
    assert!(!ok && err.contains("read replica"), "{err}");
    // Issue 39: a deletion used to be accepted (the topic sync then brought it back).
    let replica_addr = replica.addr();
    for args in [
        vec!["topics", "delete", "--topic", "orders"],
        vec!["topics", "alter", "--topic", "orders", "--partitions", "9"],
    ] {
        let mut args = args;
        args.extend(["-b", replica_addr.as_str()]);
        let (_, err, ok) = common::cli::shardlog(&args, None);
        assert!(!ok && err.contains("read replica"), "{args:?}: {err}");
    }
    let (out, _, _) = common::cli::shardlog(&["topics", "list", "-b", &replica.addr()], None);
    assert!(out.lines().any(|l| l == "orders"), "{out}");

    // What the writer uploads next is readable on the replica after its next manifest read.
    tiered(
        &writer,
        &[
            "produce",
            "orders",
            &n.to_string(),
            "500",
            &base.to_string(),
        ],
    );
    roll_and_upload(&writer, &s3, n + 500);
    wait_until(
        "the replica to see the new segment",
        Duration::from_secs(30),
        || {
            let (out, _, _) = common::cli::shardlog(
                &[
                    "get-offsets",
                    "-b",
                    &replica.addr(),
                    "--topic",
                    "orders",
                    "--time",
                    "-1",
                ],
                None,
            );
            out.trim() == format!("orders:0:{}", n + 500)
        },
    );
    let out = tiered(
        &replica,
        &["check", "orders", &(n + 500).to_string(), &base.to_string()],
    );
    assert!(out.contains(&format!("ok checked {}", n + 500)), "{out}");
}

#[test]
fn read_committed_consumers_skip_aborted_transactions_read_from_the_bucket() {
    let tmp = tempfile::tempdir().unwrap();
    let (s3, data, server) = store_and_server(tmp.path());
    // Small segments: transactions of ~1 KB span many, and markers land in later ones.
    tiered(
        &server,
        &[
            "create",
            "orders",
            "remote.storage.enable=true",
            "segment.bytes=16384",
            "local.retention.bytes=16384",
        ],
    );
    tiered(&server, &["txn", "orders", "150"]);
    let (_, err, ok) = common::cli::shardlog(
        &["topics", "roll", "-b", &server.addr(), "--topic", "orders"],
        None,
    );
    assert!(ok, "{err}");
    wait_local_deletion(&data);
    let m = s3.manifest(PREFIX, "orders", 0).unwrap();
    let txn_indexes = m["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["suffix"] == ".txnindex")
        })
        .count();
    assert!(
        txn_indexes > 0,
        "aborted transactions reach the bucket with their segments"
    );
    let out = tiered(&server, &["committed", "orders", "150"]);
    assert!(out.contains("ok committed 2000 of 3000"), "{out}");
}

#[test]
fn kill_9_while_segments_are_copied_and_deleted_locally_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (s3, data, mut server) = store_and_server(tmp.path());
    let base = base_ms(9000);
    create_orders(&server);
    // Killed three times while the uploader copies and local retention deletes (every
    // 200 ms, with produces still arriving).
    for round in 0..3i64 {
        produce(&server, round * 2000, 2000, base);
        std::thread::sleep(Duration::from_millis(150 * round as u64));
        server.kill9();
        server.respawn();
    }
    wait_local_deletion(&data);
    wait_uploaded(&s3, local_segments(&data, "orders")[0]);
    let out = tiered(&server, &["check", "orders", "6000", &base.to_string()]);
    assert!(out.contains("ok checked 6000"), "{out}");
}

/// A backlog (segments sealed faster than one pass copies them) is copied in one go: the
/// next pass starts at once while segments are left, instead of one batch of four per
/// `remote.upload.interval.ms`.
#[test]
fn a_backlog_is_copied_without_waiting_an_interval_per_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let s3 = S3Server::start(&tmp.path().join("s3"));
    let data = tmp.path().join("data");
    let mut keys = s3.server_keys(PREFIX);
    keys.push(("remote.upload.interval.ms".into(), "4000".into()));
    keys.push(("kafka.listen".into(), "auto".into()));
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = ServerProc::start_wrapped(&data, 2, &keys, Some(&s3.env_wrapper()));
    // Local retention as the total one (7 days): only the copying is watched.
    let create = ["create", "orders", TOPIC_CONFIGS[0], TOPIC_CONFIGS[1]];
    tiered(&server, &create);
    let n = 20_000;
    produce(&server, 0, n, base_ms(n));
    let sealed = local_segments(&data, "orders").len() - 1;
    assert!(sealed >= 24, "only {sealed} sealed segments");
    // Batches of four, one per interval, would take over 20 s.
    wait_until("the backlog copied", Duration::from_secs(14), || {
        s3.manifest(PREFIX, "orders", 0)
            .is_some_and(|m| manifest_segments(&m).len() >= sealed)
    });
}

/// Issue 39: a partition's `manifest.json` deleted from the bucket used to be replaced by a
/// fresh, empty history (one WARN blaming "another writer"): the log start jumped to the
/// local start and every record only in the bucket became unreadable. A lost manifest of a
/// partition that has uploaded is now a loud error (ERROR log, the
/// `remote_manifest_missing` metric, `log-dirs` state) that stops its uploads and remote
/// retention; nothing is rewritten, and the bucket's records stay served. `topics
/// rebuild-manifest` then rebuilds it from the segment objects (checked batch by batch: a
/// damaged object is left out and named), and uploads resume.
#[test]
fn a_deleted_manifest_stops_uploads_loudly_and_is_rebuilt_from_the_segment_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let (s3, data, server) = store_and_server(tmp.path());
    let base = base_ms(4000);
    create_orders(&server);
    produce(&server, 0, 3000, base);
    wait_local_deletion(&data);
    let manifest = s3.object(&format!("{PREFIX}/topics/orders/0/manifest.json"));
    let (_, err, ok) = common::cli::shardlog(
        &[
            "get-offsets",
            "-b",
            &server.addr(),
            "--topic",
            "orders",
            "--time",
            "-2",
        ],
        None,
    );
    assert!(ok, "{err}");
    let before = manifest_segments(&s3.manifest(PREFIX, "orders", 0).unwrap());
    std::fs::remove_file(&manifest).unwrap();
    // More sealed segments: the next pass must not start a new history.
    produce(&server, 3000, 1000, base + 3_000_000);
    wait_until(
        "the lost manifest to be reported",
        Duration::from_secs(60),
        || server.log_text().contains("remote tier history lost"),
    );
    assert!(
        !manifest.exists(),
        "an empty history was written over the lost one"
    );
    let metrics = server.metrics();
    let missing = metrics
        .values
        .iter()
        .find(|(k, _)| k == "remote_manifest_missing")
        .map_or(0, |(_, v)| *v);
    assert!(missing > 0, "{:?}", metrics.values);
    // The records only in the bucket are still served from it.
    assert_eq!(consume_at(&server, 0).unwrap().trim(), "0 k0");
    let log = server.log_text();
    assert!(!log.contains("changed by another writer"), "{log}");
    rebuild_the_lost_manifest(&server, &s3, &before);
}

/// The rest of the story: log-dirs says what is wrong, the operator rebuilds, uploads
/// resume from where the rebuilt manifest ends.
fn rebuild_the_lost_manifest(server: &ServerProc, s3: &S3Server, before: &[(i64, i64)]) {
    let addr = server.addr();
    let shardlog = |args: &[&str]| common::cli::shardlog(args, None);
    let (out, err, ok) = shardlog(&["log-dirs", "-b", &addr, "--topic-list", "orders"]);
    assert!(ok && out.contains("MANIFEST_MISSING"), "{out} {err}");
    // A damaged object of an upload nobody committed: read, refused, named, left out.
    let damaged = format!("{PREFIX}/topics/orders/0/00000000000000900000-00000000deadbeef.log");
    std::fs::write(s3.object(&damaged), vec![7u8; 300]).unwrap();
    let rebuild = [
        "topics",
        "rebuild-manifest",
        "-b",
        &addr,
        "--topic",
        "orders",
        "--partition",
        "0",
    ];
    let (out, err, ok) = shardlog(&rebuild);
    assert!(
        ok && out.contains("orders-0: manifest rebuilt"),
        "{out} {err}"
    );
    assert!(
        out.contains("00000000000000900000-00000000deadbeef.log") && out.contains("left out"),
        "{out}"
    );
    let rebuilt = manifest_segments(&s3.manifest(PREFIX, "orders", 0).expect("rebuilt"));
    for seg in before {
        assert!(
            rebuilt.contains(seg),
            "{seg:?} lost: {before:?} vs {rebuilt:?}"
        );
    }
    assert!(
        rebuilt.iter().all(|&(base, _)| base < 900_000),
        "{rebuilt:?}"
    );
    assert_eq!(consume_at(server, 0).unwrap().trim(), "0 k0");
    // Once there, a manifest is never rebuilt over.
    let (out, _, ok) = shardlog(&rebuild);
    assert!(!ok && out.contains("nothing to rebuild"), "{out}");
    // Uploads resume: the segments sealed while it was lost reach the bucket.
    let last = rebuilt.last().unwrap().1;
    wait_until("uploads to resume", Duration::from_secs(60), || {
        s3.manifest(PREFIX, "orders", 0)
            .and_then(|m| manifest_segments(&m).last().copied())
            .is_some_and(|(_, l)| l > last)
    });
    let (out, err, ok) = shardlog(&["log-dirs", "-b", &addr, "--topic-list", "orders"]);
    assert!(
        ok && !out.contains("MANIFEST_MISSING") && out.contains("\"state\":\"ok\""),
        "{out} {err}"
    );
}
