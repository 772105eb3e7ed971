//! `consume --from-time --to-time` on skewed data through the real binary: late records, a
//! producer whose clock is a day ahead. The default window is exact (every record with
//! from <= timestamp < to, checked against brute force); `--stop-at-first` is kcat's rule.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use bytes::Bytes;
use common::client;
use common::server_proc::ServerProc;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::ACKS_ALL;

const BASE: i64 = 1_709_992_800_000; // 2024-03-09T14:00:00Z
const MIN: i64 = 60_000;
const DAY: i64 = 24 * 60 * MIN;

/// Per partition, (offset, timestamp) of every record sent.
type Sent = BTreeMap<i32, Vec<(i64, i64)>>;

/// 6 hours of records, one a minute per partition; one in 15 is late by up to 30 min and
/// one in 40 comes from a producer whose clock is a day ahead.
fn skewed_stamps(rng: &mut fastrand::Rng) -> Vec<i64> {
    (0..360)
        .map(|m| {
            let t = BASE + m * MIN + rng.i64(0..MIN);
            match rng.u32(0..120) {
                0..=7 => t - rng.i64(1..30 * MIN),
                8..=10 => t + DAY,
                _ => t,
            }
        })
        .collect()
}

fn consume(addr: &str, from: i64, to: i64, extra: &[&str]) -> (Vec<(i32, i64)>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["consume", "--bootstrap", addr, "--topic", "orders"])
        .args([
            "--from-time",
            &from.to_string(),
            "--to-time",
            &to.to_string(),
        ])
        .args(["--format", "%p %o\\n"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8(out.stdout).unwrap();
    let got = lines
        .lines()
        .map(|l| {
            let (p, o) = l.split_once(' ').unwrap();
            (p.parse().unwrap(), o.parse().unwrap())
        })
        .collect();
    (got, String::from_utf8(out.stderr).unwrap())
}

fn brute(sent: &Sent, from: i64, to: i64) -> Vec<(i32, i64)> {
    let mut want = Vec::new();
    for (p, recs) in sent {
        want.extend(
            recs.iter()
                .filter(|(_, t)| (from..to).contains(t))
                .map(|(o, _)| (*p, *o)),
        );
    }
    want
}

#[test]
fn windows_are_exact_under_late_and_future_dated_records() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[]);
    let addr = server.addr();
    let a = addr.clone();
    let sent: Sent = client(move || async move {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("orders", 2, vec![]).await.unwrap();
        let mut sent = Sent::new();
        for p in 0..2 {
            for t in skewed_stamps(&mut rng) {
                let b = BatchBuilder::new(128)
                    .record(RecordSpec::new(Some(b"k"), Some(b"order")).timestamp(t))
                    .build();
                let (base, _, _) = c
                    .produce("orders", p, ACKS_ALL, Bytes::from(b))
                    .await
                    .unwrap()
                    .unwrap();
                sent.entry(p).or_default().push((base, t));
            }
        }
        sent
    });
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..8 {
        let from = BASE + rng.i64(0..330) * MIN;
        let to = from + rng.i64(5..60) * MIN;
        let want = brute(&sent, from, to);
        // A small settle so the rule, not the log end, ends most windows.
        let (mut got, err) = consume(&addr, from, to, &["--settle-records", "20"]);
        got.sort();
        let mut sorted = want.clone();
        sorted.sort();
        assert_eq!(got, sorted, "window [{from}, {to})");
        assert!(
            err.contains(&format!("Processed a total of {} messages", want.len())),
            "{err}"
        );
        assert!(err.contains("out of timestamp order"), "{err}");
    }
    // kcat's rule stops at the first record >= to, here a future-dated one: records of the
    // window after it are missed, which the default avoids.
    let first_future = sent[&0]
        .iter()
        .find(|(_, t)| *t > BASE + DAY)
        .map(|(o, _)| *o)
        .unwrap();
    let (from, to) = (BASE, BASE + 6 * 60 * MIN);
    let (kcat, _) = consume(&addr, from, to, &["--stop-at-first", "--partition", "0"]);
    assert!(kcat.iter().all(|(_, o)| *o < first_future));
    let (exact, _) = consume(&addr, from, to, &["--partition", "0"]);
    let want: Vec<(i32, i64)> = brute(&sent, from, to)
        .into_iter()
        .filter(|(p, _)| *p == 0)
        .collect();
    assert_eq!(exact, want);
    assert!(kcat.len() < exact.len());
    // An empty window still says so.
    let (none, err) = consume(&addr, BASE - 10 * DAY, BASE - 9 * DAY, &[]);
    assert!(none.is_empty());
    assert!(err.contains("Processed a total of 0 messages"), "{err}");
    // The timestamp checklist (--deep: every record) against brute force.
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "timestamps",
            "-b",
            &addr,
            "--topic",
            "orders",
            "--deep",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["timestampType"], "CreateTime");
    for (p, recs) in &sent {
        let ts: Vec<i64> = recs.iter().map(|(_, t)| *t).collect();
        // Out of order: below the timestamp just before it, by how much at most.
        let (mut late, mut worst) = (0, 0);
        for w in ts.windows(2) {
            if w[1] < w[0] {
                late += 1;
                worst = worst.max(w[0] - w[1]);
            }
        }
        let row = &doc["partitions"][*p as usize];
        assert_eq!(row["records"], ts.len(), "partition {p}");
        assert_eq!(row["first"], ts[0]);
        assert_eq!(row["last"], *ts.last().unwrap());
        assert_eq!(row["min"], *ts.iter().min().unwrap());
        assert_eq!(row["max"], *ts.iter().max().unwrap());
        assert_eq!(row["outOfOrder"], late);
        assert_eq!(row["maxLatenessMs"], worst);
        assert_eq!(row["before2000"], 0);
    }
    let table = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["timestamps", "-b", &addr, "--topic", "orders"])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("OUT-OF-ORDER") && table.contains("per batch: its first and max"),
        "{table}"
    );
    // A time given in seconds is flagged; --max-records 0 prints nothing; kcat's lengths.
    let (got, err) = consume(&addr, BASE / 1000, BASE + 5 * MIN, &[]);
    assert!(
        err.contains("looks like seconds, not milliseconds"),
        "{err}"
    );
    assert!(!got.is_empty());
    let none = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "consume",
            "-b",
            &addr,
            "--topic",
            "orders",
            "--max-records",
            "0",
        ])
        .output()
        .unwrap();
    assert!(none.status.success() && none.stdout.is_empty());
    let lens = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "consume",
            "-b",
            &addr,
            "--topic",
            "orders",
            "--partition",
            "0",
        ])
        .args(["--max-records", "1", "--format", "%K %S\\n"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&lens.stdout), "1 5\n");
    // %T stays epoch ms (kcat); %I is ISO-8601 in --time-zone.
    let iso = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "consume",
            "-b",
            &addr,
            "--topic",
            "orders",
            "--partition",
            "0",
        ])
        .args([
            "--max-records",
            "1",
            "--time-zone",
            "+08:00",
            "--format",
            "%T %I\\n",
        ])
        .output()
        .unwrap();
    let line = String::from_utf8(iso.stdout).unwrap();
    let (ms, text) = line.trim_end().split_once(' ').unwrap();
    let ms: i64 = ms.parse().unwrap();
    assert_eq!(shardlog::tools::time_arg::parse_time(text).unwrap(), ms);
    assert!(text.ends_with("+08:00"), "{text}");
    // kafka-get-offsets' topic selection: every topic, a regex, --topic-partitions.
    let get_offsets = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(["get-offsets", "-b", &addr, "--time", "-2"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(get_offsets(&[]), "orders:0:0\norders:1:0\n");
    assert_eq!(
        get_offsets(&["--topic", "ord.*"]),
        "orders:0:0\norders:1:0\n"
    );
    let none = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["get-offsets", "-b", &addr, "--topic", "ord"])
        .output()
        .unwrap();
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("topic \"ord\" does not exist"));
    assert_eq!(
        get_offsets(&["--topic-partitions", "orders:1-"]),
        "orders:1:0\n"
    );
    // kcat's -o forms.
    let kcat_o = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args([
                "consume",
                "-b",
                &addr,
                "--topic",
                "orders",
                "--partition",
                "0",
            ])
            .args(["--format", "%o\\n"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let offsets: Vec<i64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        (offsets, String::from_utf8(out.stderr).unwrap())
    };
    let n = sent[&0].len() as i64;
    assert_eq!(kcat_o(&["-o", "-3"]).0, vec![n - 3, n - 2, n - 1]);
    assert_eq!(
        kcat_o(&["-o", "beginning", "--max-records", "2"]).0,
        vec![0, 1]
    );
    let (beyond, err) = kcat_o(&["-o", "99999"]);
    assert!(beyond.is_empty() && err.contains("outside"), "{err}");
    let (s_at, e_at) = (BASE + 10 * MIN, BASE + 20 * MIN);
    let (kcat_window, _) = kcat_o(&["-o", &format!("s@{s_at}"), "-o", &format!("e@{e_at}")]);
    let start = sent[&0].iter().position(|(_, t)| *t >= s_at).unwrap();
    let want: Vec<i64> = sent[&0][start..]
        .iter()
        .take_while(|(_, t)| *t < e_at)
        .map(|(o, _)| *o)
        .collect();
    assert_eq!(kcat_window, want);
    // A reader that goes away (`| head`) ends the tool quietly with status 0; -b and
    // --bootstrap-server are accepted as Kafka's tools and kcat spell them.
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["consume", "-b", &addr, "--topic", "orders"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["topics", "list", "--bootstrap-server", &addr])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "orders\n");
}

/// Kafka's guard rails against producers with wrong clocks: records too far in the past or
/// future of the server's clock are refused with Kafka's message, nothing written; the
/// older `message.timestamp.difference.max.ms` sets both bounds.
#[test]
fn timestamps_too_far_from_the_server_clock_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    client(move || async move {
        let mut c = Client::connect(&addr).await.unwrap();
        let hour = 60 * MIN;
        let config = vec![(
            "message.timestamp.difference.max.ms".to_string(),
            hour.to_string(),
        )];
        c.create_topic("guarded", 1, config).await.unwrap();
        let record = |ts: i64| {
            Bytes::from(
                BatchBuilder::new(128)
                    .record(RecordSpec::new(Some(b"k"), Some(b"v")).timestamp(ts))
                    .build(),
            )
        };
        let now = shardlog::time::now_ms();
        for bad in [now - 2 * hour, now + DAY] {
            let e = c
                .produce("guarded", 0, ACKS_ALL, record(bad))
                .await
                .unwrap_err();
            assert_eq!(
                e.code(),
                Some(shardlog::protocol::ErrorCode::InvalidTimestamp),
                "{e}"
            );
            assert!(
                e.to_string()
                    .contains(&format!("Timestamp {bad} of message is out of range")),
                "{e}"
            );
        }
        c.produce("guarded", 0, ACKS_ALL, record(now))
            .await
            .unwrap();
        assert_eq!(
            c.list_offsets("guarded", 0, -1).await.unwrap().unwrap().0,
            1
        );
        // Without the rails, a record two hours ahead is stored, and `timestamps` flags it
        // against the server's clock.
        c.create_topic("ahead", 1, vec![]).await.unwrap();
        c.produce("ahead", 0, ACKS_ALL, record(now + 2 * hour))
            .await
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(["timestamps", "-b", &addr, "--topic", "ahead", "--json"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = &doc["partitions"][0];
        assert_eq!(row["future"], 1);
        let ahead = row["maxAheadMs"].as_i64().unwrap();
        assert!((2 * hour - MIN..=2 * hour).contains(&ahead), "{ahead}");
        let logs = c
            .describe_logs(Some(vec!["guarded".into()]))
            .await
            .unwrap()
            .topics;
        assert_eq!(
            logs[0].overrides,
            vec![
                "message.timestamp.after.max.ms",
                "message.timestamp.before.max.ms"
            ]
        );
    });
}

/// produce takes ISO times in its timestamp column, and a failure says what was
/// acknowledged before it, so the operator knows where to resume.
#[test]
fn produce_reports_how_far_it_got() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    let produce = |input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(["produce", "-b", &addr, "--topic", "t", "--partition", "0"])
            .args([
                "--timestamp-separator",
                "|",
                "--batch-records",
                "1",
                "--acks",
                "all",
            ])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.success(), String::from_utf8(out.stderr).unwrap())
    };
    let created = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["topics", "create", "-b", &addr, "--topic", "t"])
        .output()
        .unwrap();
    assert!(created.status.success());
    let (ok, err) = produce("2024-03-09T14:00:00Z|a\n1709992860000|b\nyesterday|c\n");
    assert!(!ok);
    assert!(
        err.contains("2 records were acknowledged (partition 0 up to offset 1)"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "consume", "-b", &addr, "--topic", "t", "--format", "%T %s\\n",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{BASE} a\n{} b\n", BASE + MIN)
    );
    // A timestamp column in seconds is flagged (once).
    let (ok, err) = produce("1709992800|s\n1709992801|s\n");
    assert!(ok, "{err}");
    assert_eq!(err.matches("looks like seconds").count(), 1, "{err}");
    // kcat's -H on produce and %h on consume.
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["produce", "-b", &addr, "--topic", "t", "--partition", "0"])
        .args(["-H", "trace=abc", "-H", "env=prod"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"with headers\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["consume", "-b", &addr, "--topic", "t", "-o", "-1"])
        .args(["--format", "%h|%s\\n"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "trace=abc,env=prod|with headers\n"
    );
}

/// `consume --follow` waits out a server restart and goes on where it was.
#[test]
fn a_follower_survives_a_server_restart() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    let produce_one = |value: &'static str| {
        let a = addr.clone();
        client(move || async move {
            let mut c = Client::connect(&a).await.unwrap();
            if c.metadata(Some(vec!["f".into()])).await.unwrap().topics[0].error_code
                != shardlog::protocol::ErrorCode::None
            {
                c.create_topic("f", 1, vec![]).await.unwrap();
            }
            let b = BatchBuilder::new(64)
                .record(RecordSpec::new(None, Some(value.as_bytes())).timestamp(BASE))
                .build();
            c.produce("f", 0, ACKS_ALL, Bytes::from(b)).await.unwrap();
        })
    };
    produce_one("before");
    let mut follower = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["consume", "-b", &addr, "--topic", "f", "--follow"])
        .args(["--timeout-ms", "2000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "before");
    server.restart_after_kill();
    produce_one("after");
    // Bounded: the follower reconnects within seconds or the read below fails the test.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(lines.next().map(|l| l.unwrap()));
    });
    let next = rx.recv_timeout(std::time::Duration::from_secs(30));
    let _ = follower.kill();
    let _ = follower.wait();
    assert_eq!(next.unwrap().as_deref(), Some("after"));
}

/// `timestamps --json` (default or `--deep`) of topic `ts`.
fn timestamps_json(addr: &str, deep: bool) -> serde_json::Value {
    let mut args = vec!["timestamps", "-b", addr, "--topic", "ts", "--json"];
    if deep {
        args.push("--deep");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Issue 39: the default `timestamps` reads batch headers. Each batch's own timestamp type
/// counts (a topic switched to LogAppendTime keeps its CreateTime batches: those are not
/// reported as append times, and a LogAppendTime batch's producer times are not taken for
/// its records'), and a record the headers cannot show (dated 1970, inside its batch) is
/// counted as unobserved and said to need --deep, which finds it.
#[test]
fn timestamps_reads_each_batchs_own_type_and_says_what_only_deep_sees() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    let now = shardlog::time::now_ms();
    let a = addr.clone();
    client(move || async move {
        let mut c = Client::connect(&a).await.unwrap();
        c.create_topic("ts", 1, vec![]).await.unwrap();
        let mut b = BatchBuilder::new(256);
        for t in [now - 1_000, 5_000, now - 500] {
            b.push(RecordSpec::new(None, Some(b"v")).timestamp(t));
        }
        c.produce("ts", 0, ACKS_ALL, Bytes::from(b.build()))
            .await
            .unwrap();
        let set = vec![("message.timestamp.type".into(), "LogAppendTime".into())];
        c.alter_configs("ts", set, vec![]).await.unwrap();
        let mut b = BatchBuilder::new(256);
        b.push(RecordSpec::new(None, Some(b"w")).timestamp(7_000));
        c.produce("ts", 0, ACKS_ALL, Bytes::from(b.build()))
            .await
            .unwrap();
    });
    let doc = timestamps_json(&addr, false);
    let row = &doc["partitions"][0];
    assert_eq!(doc["timestampType"], "LogAppendTime", "{doc}");
    assert_eq!(row["createTimeBatches"], 1, "{doc}");
    assert_eq!(row["logAppendTimeBatches"], 1, "{doc}");
    assert_eq!(row["records"], 4, "{doc}");
    assert_eq!(
        row["unobserved"], 1,
        "the 1970 record inside its batch: {doc}"
    );
    assert_eq!(
        row["before2000"], 0,
        "the append time, not the producer's 7000: {doc}"
    );
    let deep = timestamps_json(&addr, true);
    assert_eq!(deep["partitions"][0]["before2000"], 1, "{deep}");
    assert_eq!(deep["partitions"][0]["unobserved"], 0, "{deep}");
    let table = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["timestamps", "-b", &addr, "--topic", "ts"])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(
        table.contains("1 CreateTime, 1 LogAppendTime") && table.contains("only by --deep"),
        "{table}"
    );
}
