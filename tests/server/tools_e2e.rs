//! get-offsets and consume --from-time/--to-time against a brute-force scan of what was
//! sent, in process and through the real binary, on a real server.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use bytes::Bytes;
use common::*;
use shardlog::client::Client;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::protocol::ACKS_LEADER;
use shardlog::tools::{consume, get_offsets, ServerAddr};

#[derive(Clone, Debug)]
struct Sent {
    offset: i64,
    ts: i64,
    value: String,
}

const BASE: i64 = 1_709_992_800_000; // 2024-03-09T14:00:00Z

fn brute_first_at_or_after(records: &[Sent], t: i64) -> Option<&Sent> {
    records.iter().find(|r| r.ts >= t)
}

fn brute_window(records: &[Sent], from: i64, to: i64) -> Vec<String> {
    let Some(start) = records.iter().position(|r| r.ts >= from) else {
        return Vec::new();
    };
    records[start..]
        .iter()
        .take_while(|r| r.ts < to)
        .map(|r| format!("{} {} {}", r.offset, r.ts, r.value))
        .collect()
}

#[test]
fn get_offsets_and_time_windows_match_brute_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    let bootstrap = format!("127.0.0.1:{port}");
    let seed = fastrand::u64(..);
    eprintln!("seed {seed}");
    let b2 = bootstrap.clone();
    let sent: BTreeMap<i32, Vec<Sent>> = client(move || async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut c = Client::connect(&b2).await.unwrap();
        c.create_topic(
            "events",
            3,
            vec![("index.interval.bytes".into(), "100".into())],
        )
        .await
        .unwrap();
        let mut sent: BTreeMap<i32, Vec<Sent>> = BTreeMap::new();
        for p in 0..3 {
            let mut clock = BASE;
            let mut next = 0i64;
            while next < 80 {
                let n = rng.usize(1..5);
                let mut recs = Vec::new();
                for _ in 0..n {
                    clock += rng.i64(0..60_000);
                    // Some producers send timestamps from the past.
                    let ts = if rng.u8(0..10) == 0 {
                        clock - rng.i64(0..600_000)
                    } else {
                        clock
                    };
                    recs.push(Sent {
                        offset: next,
                        ts,
                        value: format!("p{p}-o{next}"),
                    });
                    next += 1;
                }
                let mut b = BatchBuilder::new(256);
                for r in &recs {
                    b.push(RecordSpec::new(None, Some(r.value.as_bytes())).timestamp(r.ts));
                }
                c.produce("events", p, ACKS_LEADER, Bytes::from(b.build()))
                    .await
                    .unwrap();
                sent.entry(p).or_default().extend(recs);
            }
        }
        sent
    });

    let all_ts: Vec<i64> = sent.values().flatten().map(|r| r.ts).collect();
    let (min, max) = (*all_ts.iter().min().unwrap(), *all_ts.iter().max().unwrap());
    let mut rng = fastrand::Rng::with_seed(seed ^ 1);
    let mut times: Vec<i64> = (0..25).map(|_| rng.i64(min - 1000..max + 1000)).collect();
    times.extend([min, max, max + 1, min - 1]);

    for &t in &times {
        // get-offsets --time t --show-timestamp
        let expected: String = sent
            .iter()
            .filter_map(|(p, recs)| {
                brute_first_at_or_after(recs, t)
                    .map(|r| format!("events:{p}:{}:{}\n", r.offset, r.ts))
            })
            .collect();
        let b = bootstrap.clone();
        let got = client(move || async move {
            let mut out = Vec::new();
            get_offsets::run(
                get_offsets::GetOffsetsArgs {
                    server: ServerAddr::new(b, 30_000),
                    topic: Some("events".into()),
                    partitions: None,
                    topic_partitions: None,
                    time: t.to_string(),
                    show_timestamp: true,
                },
                &mut out,
            )
            .await
            .unwrap();
            String::from_utf8(out).unwrap()
        });
        assert_eq!(got, expected, "seed {seed} time {t}");

        // consume --from-time t --to-time t+window
        let to = t + rng.i64(1..3_000_000);
        let b = bootstrap.clone();
        let out = client(move || async move {
            let mut out = Vec::new();
            consume::run(
                consume::ConsumeArgs {
                    server: ServerAddr::new(b, 30_000),
                    topic: "events".into(),
                    partition: None,
                    offset: vec!["earliest".into()],
                    from_time: Some(t.to_string()),
                    to_time: Some(to.to_string()),
                    max_records: None,
                    format: "%p %o %T %s\\n".into(),
                    follow: false,
                    exit_at_end: false,
                    from_beginning: false,
                    print_null: false,
                    stop_at_first: true,
                    max_lateness_ms: 0,
                    settle_records: 1,
                    time_zone: "UTC".into(),
                    group: None,
                    commit_interval_ms: 5000,
                    isolation_level: consume::IsolationLevel::ReadCommitted,
                },
                &mut out,
            )
            .await
            .unwrap();
            String::from_utf8(out).unwrap()
        });
        let mut by_partition: BTreeMap<i32, Vec<String>> = BTreeMap::new();
        for line in out.lines() {
            let (p, rest) = line.split_once(' ').unwrap();
            by_partition
                .entry(p.parse().unwrap())
                .or_default()
                .push(rest.to_string());
        }
        for (p, recs) in &sent {
            let want = brute_window(recs, t, to);
            let got = by_partition.remove(p).unwrap_or_default();
            assert_eq!(got, want, "seed {seed} partition {p} window [{t}, {to})");
        }
    }

    // Through the real binary, with ISO-8601 times and the special targets.
    let bin = env!("CARGO_BIN_EXE_shardlog");
    let run = |args: &[&str]| {
        let out = Command::new(bin).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let t = BASE + 30 * 60_000;
    let iso = "2024-03-09T22:30:00.000+08:00"; // == BASE + 30 min
    let expected: String = sent
        .iter()
        .filter_map(|(p, recs)| {
            brute_first_at_or_after(recs, t).map(|r| format!("events:{p}:{}\n", r.offset))
        })
        .collect();
    assert_eq!(
        run(&[
            "get-offsets",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "events",
            "--time",
            iso
        ]),
        expected
    );
    let latest: String = sent
        .iter()
        .map(|(p, r)| format!("events:{p}:{}\n", r.len()))
        .collect();
    assert_eq!(
        run(&[
            "get-offsets",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "events"
        ]),
        latest
    );
    let earliest: String = (0..3).map(|p| format!("events:{p}:0\n")).collect();
    assert_eq!(
        run(&[
            "get-offsets",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "events",
            "--time",
            "-2"
        ]),
        earliest
    );
    let max_ts: String = sent
        .iter()
        .map(|(p, recs)| {
            let m = recs.iter().map(|r| r.ts).max().unwrap();
            let r = brute_first_at_or_after(recs, m).unwrap();
            format!("events:{p}:{}:{}\n", r.offset, r.ts)
        })
        .collect();
    assert_eq!(
        run(&[
            "get-offsets",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "events",
            "--time",
            "max-timestamp",
            "--show-timestamp"
        ]),
        max_ts
    );
    let one = run(&[
        "consume",
        "--bootstrap",
        &bootstrap,
        "--topic",
        "events",
        "--partition",
        "1",
        "--from-time",
        iso,
        "--to-time",
        "2024-03-09T15:00:00Z",
        "--format",
        "%o:%s\\n",
    ]);
    // The binary's default window is exact: every record with t <= timestamp < to, late
    // ones included (the kcat rule above is `--stop-at-first`).
    let want: String = sent[&1]
        .iter()
        .filter(|r| (t..BASE + 60 * 60_000).contains(&r.ts))
        .map(|r| format!("{}:{}\n", r.offset, r.value))
        .collect();
    assert_eq!(one, want);
    let limited = run(&[
        "consume",
        "--bootstrap",
        &bootstrap,
        "--topic",
        "events",
        "--partition",
        "0",
        "--max-records",
        "5",
        "--format",
        "%o\\n",
    ]);
    assert_eq!(limited, "0\n1\n2\n3\n4\n");
    server.stop().unwrap();
}

#[test]
fn produce_tool_parses_lines_and_partitions_by_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, port) = start_server(tmp.path(), 2, |_| {});
    let bootstrap = format!("127.0.0.1:{port}");
    let bin = env!("CARGO_BIN_EXE_shardlog");
    let run = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = Command::new(bin)
            .args(args)
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
        child.wait_with_output().unwrap()
    };
    let ok = run(
        &[
            "topics",
            "create",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "kv",
            "--partitions",
            "4",
        ],
        "",
    );
    assert!(ok.status.success());
    let input = "1700000000000|alice|a1\n1700000000001|bob|b1\n1700000000002|alice|a2\n";
    let out = run(
        &[
            "produce",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "kv",
            "--key-separator",
            "|",
            "--timestamp-separator",
            "|",
            "--acks",
            "all",
        ],
        input,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let alice = shardlog::tools::partitioner::partition_for_key(b"alice", 4);
    let got = run(
        &[
            "consume",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "kv",
            "--partition",
            &alice.to_string(),
            "--format",
            "%k=%s@%T\\n",
        ],
        "",
    );
    let text = String::from_utf8(got.stdout).unwrap();
    assert!(
        text.contains("alice=a1@1700000000000\n") && text.contains("alice=a2@1700000000002\n"),
        "{text}"
    );
    // A bad line is a clear error naming the line.
    let bad = run(
        &[
            "produce",
            "--bootstrap",
            &bootstrap,
            "--topic",
            "kv",
            "--timestamp-separator",
            "|",
        ],
        "123|ok\nnot-a-time|x\n",
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("line 2"));
    // No server: a clear error.
    let none = run(&["topics", "list", "--bootstrap", "127.0.0.1:1"], "");
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("cannot connect"));
    server.stop().unwrap();
}

/// consumer-groups takes -b like every tool, and gives up on a listener that never answers
/// after --timeout-ms, saying so (not "the connection was closed", not 30 s whatever asked).
#[test]
fn consumer_groups_honours_timeout_and_takes_b() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "consumer-groups",
            "-b",
            &addr,
            "--list",
            "--timeout-ms",
            "300",
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no answer within 300 ms"),
        "stderr: {stderr}"
    );
    // Far below the 30 s default it used to wait whatever was asked.
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
    drop(silent);
}
