//! Retention, DeleteRecords, compaction and live config through the real `shardlog serve`
//! binary on loopback, as the issue's new user tried them: nothing restarts, the background
//! maintenance of each shard does the work.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::server_proc::ServerProc;
use common::{client, read_records};
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::{ErrorCode, ACKS_ALL};

const HOUR: i64 = 3_600_000;

fn fast_maintenance() -> Vec<(&'static str, &'static str)> {
    vec![
        ("log.retention.check.interval.ms", "100"),
        ("log.cleaner.backoff.ms", "100"),
        ("log.roll.min.interval.ms", "0"),
    ]
}

fn record(key: Option<&str>, value: Option<&str>, ts: i64) -> Bytes {
    Bytes::from(
        BatchBuilder::new(256)
            .record(RecordSpec::new(key.map(str::as_bytes), value.map(str::as_bytes)).timestamp(ts))
            .build(),
    )
}

fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Polls `check` every 50 ms for at most `limit`.
async fn eventually(limit: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check().await {
            return true;
        }
        glommio::timer::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn start_end(c: &mut Client, topic: &str) -> (i64, i64) {
    let logs = c
        .describe_logs(Some(vec![topic.into()]))
        .await
        .unwrap()
        .topics;
    let p = logs[0].partitions[0];
    (p.log_start_offset, p.log_end_offset)
}

#[test]
fn retention_by_time_and_size_run_in_the_background_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = ServerProc::start(&data, 2, &fast_maintenance());
    let addr = server.addr();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let now = shardlog::time::now_ms();
        let config = pairs(&[
            ("retention.ms", "60000"),
            ("segment.bytes", "4096"),
            ("file.delete.delay.ms", "0"),
        ]);
        c.create_topic("old", 1, config).await.unwrap();
        for i in 0..100 {
            c.produce(
                "old",
                0,
                ACKS_ALL,
                record(None, Some("x"), now - 48 * HOUR + i),
            )
            .await
            .unwrap();
        }
        // 48-hour-old records under retention.ms=60000: all gone, the partition empty.
        let gone = eventually(Duration::from_secs(20), async || {
            start_end(&mut c, "old").await == (100, 100)
        })
        .await;
        assert!(gone, "{:?}", start_end(&mut c, "old").await);
        assert!(read_records(&mut c, "old", 0).await.is_empty());
        let f = c.fetch("old", 0, 10, 1000).await.unwrap_err();
        assert_eq!(f.code(), Some(ErrorCode::OffsetOutOfRange));
        // Size: 192 KB under retention.bytes=32768, set live.
        c.create_topic("big", 1, pairs(&[("segment.bytes", "8192")]))
            .await
            .unwrap();
        let value = "v".repeat(1000);
        for _ in 0..192 {
            c.produce("big", 0, ACKS_ALL, record(None, Some(&value), now))
                .await
                .unwrap();
        }
        c.alter_configs("big", pairs(&[("retention.bytes", "32768")]), vec![])
            .await
            .unwrap();
        let shrunk = eventually(Duration::from_secs(20), async || {
            let logs = c
                .describe_logs(Some(vec!["big".into()]))
                .await
                .unwrap()
                .topics;
            logs[0].partitions[0].size_bytes <= 32768 + 8192
        })
        .await;
        assert!(shrunk);
        let logs = c
            .describe_logs(Some(vec!["big".into()]))
            .await
            .unwrap()
            .topics;
        let p = logs[0].partitions[0];
        assert!(p.size_bytes >= 32768, "{p:?}");
        assert_eq!(logs[0].overrides, vec!["retention.bytes", "segment.bytes"]);
        let left = read_records(&mut c, "big", 0).await;
        assert_eq!(left.first().unwrap().0, p.log_start_offset);
        assert_eq!(left.last().unwrap().0, 191);
    });
    // The .deleted files went (file.delete.delay.ms=0) and the start offset is durable.
    let deleted = std::fs::read_dir(data.join("old-0"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".deleted")
        })
        .count();
    assert_eq!(deleted, 0);
    let mut server = server;
    server.restart_after_kill();
    let addr = server.addr();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        assert_eq!(start_end(&mut c, "old").await, (100, 100));
        // The live change persisted.
        let logs = c
            .describe_logs(Some(vec!["big".into()]))
            .await
            .unwrap()
            .topics;
        assert!(logs[0].overrides.contains(&"retention.bytes".to_string()));
    });
}

#[test]
fn a_compacted_topic_keeps_the_latest_value_per_key_and_drops_tombstones() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &fast_maintenance());
    let addr = server.addr();
    let log = server.log_path();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let config = pairs(&[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "2048"),
            // The cleaner also runs while the records arrive; whatever is left dirty after
            // the last roll must be cleaned too, however small a share of the log it is.
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "500"),
            ("file.delete.delay.ms", "0"),
        ]);
        c.create_topic("state", 1, config).await.unwrap();
        let e = c
            .produce("state", 0, ACKS_ALL, record(None, Some("no key"), 1))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::CompactedTopicNullKey));
        assert!(e
            .to_string()
            .contains("Compacted topic cannot accept message without key"));
        let now = shardlog::time::now_ms();
        // 20 keys x 20 updates, then tombstones for 5 of them.
        for round in 0..20 {
            for k in 0..20 {
                let v = format!("k{k}-r{round}");
                c.produce(
                    "state",
                    0,
                    ACKS_ALL,
                    record(Some(&format!("k{k}")), Some(&v), now),
                )
                .await
                .unwrap();
            }
        }
        for k in 0..5 {
            c.produce(
                "state",
                0,
                ACKS_ALL,
                record(Some(&format!("k{k}")), None, now),
            )
            .await
            .unwrap();
        }
        c.roll_segments("state", 0).await.unwrap();
        // The cleaner runs by itself.
        let expect: Vec<String> = (5..20).map(|k| format!("k{k}-r19")).collect();
        let compacted = eventually(Duration::from_secs(30), async || {
            let values: Vec<String> = read_records(&mut c, "state", 0)
                .await
                .into_iter()
                .map(|(_, v)| v)
                .filter(|v| !v.is_empty())
                .collect();
            values == expect
        })
        .await;
        assert!(
            compacted,
            "{:?}\n{}",
            read_records(&mut c, "state", 0).await,
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        // The tombstones survive delete.retention.ms after the cleaning that saw them, then
        // a later cleaning drops them (RunLogMaintenance forces a pass).
        glommio::timer::sleep(Duration::from_millis(600)).await;
        c.run_log_maintenance("state").await.unwrap();
        let left = read_records(&mut c, "state", 0).await;
        assert_eq!(left.len(), 15, "{left:?}");
        assert_eq!(
            start_end(&mut c, "state").await.1,
            405,
            "the log end never moves"
        );
    });
}

/// `log-dirs` for a compacted topic's one partition: its `cleaner` object.
fn cleaner_state(addr: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["log-dirs", "--topic-list", "users", "--bootstrap", addr])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["brokers"][0]["logDirs"][0]["partitions"][0]["cleaner"].clone()
}

/// An operator asking why a compacted topic was not cleaned sees the cleaner's inputs: all
/// data in the active segment (uncleanable), then dirty and due once rolled, then clean
/// with the checkpoint moved and the time of the cleaning.
#[test]
fn log_dirs_shows_why_compaction_has_or_has_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &fast_maintenance());
    let addr = server.addr();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        let config = pairs(&[("cleanup.policy", "compact"), ("file.delete.delay.ms", "0")]);
        c.create_topic("users", 1, config).await.unwrap();
        for i in 0..40 {
            let key = format!("k{}", i % 4);
            c.produce("users", 0, ACKS_ALL, record(Some(&key), Some("v"), 1))
                .await
                .unwrap();
        }
    });
    let before = cleaner_state(&addr);
    assert_eq!(before["dirtyBytes"], 0, "{before}");
    assert_eq!(before["cleanBytes"], 0, "{before}");
    assert!(before["uncleanableBytes"].as_i64().unwrap() > 0, "{before}");
    assert_eq!(before["due"], false, "{before}");
    assert_eq!(before["lastCleanedMs"], serde_json::Value::Null, "{before}");
    assert_eq!(before["firstDirtyOffset"], 0, "{before}");
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.roll_segments("users", 0).await.unwrap();
    });
    // The cleaner (every 100 ms here) finds the rolled segment wholly dirty and cleans it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut after = cleaner_state(&addr);
    while after["lastCleanedMs"].is_null() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = cleaner_state(&addr);
    }
    assert!(after["lastCleanedMs"].as_i64().unwrap() > 0, "{after}");
    assert_eq!(
        after["firstDirtyOffset"], 40,
        "the checkpoint moved: {after}"
    );
    assert_eq!(after["dirtyBytes"], 0, "{after}");
    assert_eq!(after["dirtyRatio"], 0.0, "{after}");
    assert!(after["cleanBytes"].as_i64().unwrap() > 0, "{after}");
    assert_eq!(after["due"], false, "{after}");
}

#[test]
fn delete_records_and_log_dirs_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &fast_maintenance());
    let addr = server.addr();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("t", 1, pairs(&[("segment.bytes", "1024")]))
            .await
            .unwrap();
        let now = shardlog::time::now_ms();
        for i in 0..50 {
            c.produce("t", 0, ACKS_ALL, record(None, Some("x"), now + i))
                .await
                .unwrap();
        }
    });
    let json = tmp.path().join("offsets.json");
    std::fs::write(
        &json,
        r#"{"partitions":[{"topic":"t","partition":0,"offset":30}],"version":1}"#,
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(args)
            .args(["--bootstrap", &addr])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = run(&[
        "delete-records",
        "--offset-json-file",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("partition: t-0\tlow_watermark: 30"), "{out}");
    let (ok, out, err) = run(&[
        "delete-records",
        "--topic",
        "t",
        "--partition",
        "0",
        "--offset",
        "99",
    ]);
    assert!(!ok && out.contains("OffsetOutOfRange"), "{out} {err}");
    let (ok, out, _) = run(&["log-dirs", "--topic-list", "t"]);
    assert!(ok);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let dir = &doc["brokers"][0]["logDirs"][0];
    assert_eq!(dir["logDir"], tmp.path().join("data").to_str().unwrap());
    assert!(dir["usableBytes"].as_i64().unwrap() <= dir["totalBytes"].as_i64().unwrap());
    let p = &dir["partitions"][0];
    assert!(p.get("cleaner").is_none(), "not a compacted topic: {p}");
    assert_eq!(p["partition"], "t-0");
    assert_eq!(p["logStartOffset"], 30);
    assert_eq!(p["logEndOffset"], 50);
    let (ok, out, _) = run(&["topics", "describe", "--topic", "t"]);
    assert!(ok);
    assert!(out.contains("Configs: segment.bytes=1024\n"), "{out}");
    assert!(
        out.contains("LogStartOffset: 30\tLogEndOffset: 50"),
        "{out}"
    );
    let (ok, _, err) = run(&[
        "topics",
        "alter",
        "--topic",
        "t",
        "--config",
        "retention.ms=-7",
    ]);
    assert!(!ok && err.contains("retention.ms"), "{err}");
    let (ok, _, err) = run(&[
        "topics",
        "alter",
        "--topic",
        "t",
        "--delete-config",
        "segment.bytes",
    ]);
    assert!(ok, "{err}");
    let (_, out, _) = run(&["topics", "describe", "--topic", "t"]);
    assert!(out.contains("Configs: \n"), "{out}");
    // kafka-topics --alter --partitions: grow only.
    let grow = |n: &str| run(&["topics", "alter", "--topic", "t", "--partitions", n]);
    let (ok, out, err) = grow("3");
    assert!(ok && out.contains("now has 3 partitions"), "{out} {err}");
    let (ok, _, err) = grow("2");
    assert!(!ok && err.contains("has 3 partitions"), "{err}");
    let (_, out, _) = run(&["topics", "describe", "--topic", "t"]);
    assert!(out.contains("PartitionCount: 3"), "{out}");
    assert!(out.contains("Partition: 2\t"), "{out}");
}

#[test]
fn tombstones_from_the_tools_follow_kcats_minus_z() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &fast_maintenance());
    let addr = server.addr();
    let cli = |args: &[&str], stdin: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(args)
            .args(["--bootstrap", &addr])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    cli(
        &[
            "topics",
            "create",
            "--topic",
            "c",
            "--config",
            "cleanup.policy=compact",
        ],
        "",
    );
    let produce = [
        "produce",
        "--topic",
        "c",
        "--partition",
        "0",
        "--key-separator",
        "|",
    ];
    cli(&produce, "a|1\nb|\n");
    cli(&[&produce[..], &["-Z"]].concat(), "a|\n");
    let consume = ["consume", "--topic", "c", "--format", "%o %k=%s\\n"];
    assert_eq!(cli(&consume, ""), "0 a=1\n1 b=\n2 a=\n");
    assert_eq!(
        cli(&[&consume[..], &["-Z"]].concat(), ""),
        "0 a=1\n1 b=\n2 a=NULL\n",
        "an empty value is not null; a tombstone is"
    );
}

#[test]
fn dump_log_works_on_a_live_partition() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let server = ServerProc::start(&data, 1, &fast_maintenance());
    let addr = server.addr();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        c.create_topic("live", 1, pairs(&[("index.interval.bytes", "100")]))
            .await
            .unwrap();
        let now = shardlog::time::now_ms();
        for i in 0..10 {
            c.produce("live", 0, 1, record(None, Some(&"x".repeat(200)), now + i))
                .await
                .unwrap();
        }
        // Idle for longer than the partition's idle period: its index files catch up.
        glommio::timer::sleep(Duration::from_millis(1500)).await;
    });
    let dump = |file: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(["dump-log", "--files"])
            .arg(data.join("live-0").join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (log, err) = dump("00000000000000000000.log");
    assert_eq!(log.matches("baseOffset:").count(), 10, "{log}");
    assert!(
        log.contains("zero padding") && !log.contains("invalid bytes"),
        "{log}"
    );
    // Nothing that reads like corruption about the padding first.
    assert!(!err.contains("declares size"), "{err}");
    let (index, err) = dump("00000000000000000000.index");
    assert!(index.matches("offset: ").count() >= 4, "{index}");
    assert!(!err.contains("Mismatches"), "{err}");
    let (time, err) = dump("00000000000000000000.timeindex");
    assert!(time.matches("timestamp: ").count() >= 4, "{time}");
    assert!(!err.contains("mismatch"), "{err}");
    drop(server);
}

/// Fetches from the log start while retention deletes the segments under them: each answer
/// is whole, CRC-valid batches at or after the offset asked, or OffsetOutOfRange naming a log
/// start past that offset; never a torn read or a corruption error.
#[test]
fn readers_racing_retention_see_whole_batches_or_offset_out_of_range() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &fast_maintenance());
    let addr = server.addr();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let config = pairs(&[
            ("retention.ms", "1000"),
            ("segment.bytes", "1024"),
            ("file.delete.delay.ms", "0"),
        ]);
        c.create_topic("racy", 1, config).await.unwrap();
        let mut reader = Client::connect(&addr).await.unwrap();
        let start = Instant::now();
        let (mut served, mut out_of_range, mut produced) = (0, 0, 0i64);
        while start.elapsed() < Duration::from_secs(4) {
            // Records 2 s old: each segment expires soon after it rolls.
            let ts = shardlog::time::now_ms() - 2_000;
            c.produce("racy", 0, 1, record(None, Some(&"r".repeat(300)), ts))
                .await
                .unwrap();
            produced += 1;
            let asked = fastrand::i64(0..produced);
            match reader.fetch("racy", 0, asked, 4096).await {
                Ok(f) => {
                    if !f.records.is_empty() {
                        let parts = shardlog::format::batch::split_batches(&f.records).unwrap();
                        for (at, h) in parts {
                            let bytes = &f.records[at..at + h.size()];
                            shardlog::format::batch::validate(bytes).unwrap();
                        }
                        served += 1;
                    }
                }
                Err(e) => {
                    assert_eq!(e.code(), Some(ErrorCode::OffsetOutOfRange), "{e}");
                    let earliest = reader.list_offsets("racy", 0, -2).await.unwrap().unwrap();
                    assert!(earliest.0 > asked, "{e}: log start {}", earliest.0);
                    out_of_range += 1;
                }
            }
        }
        assert!(
            served > 0 && out_of_range > 0,
            "{served} served, {out_of_range} out of range"
        );
    });
}
