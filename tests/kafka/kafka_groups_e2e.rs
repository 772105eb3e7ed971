//! Consumer groups with unmodified Kafka clients against the real `shardlog serve` binary
//! (tests/kafka_clients/groups.py): for confluent-kafka, kafka-python and aiokafka, a
//! group of two members consumes a topic exactly once with commits; a member leaving
//! triggers a rebalance and the survivor takes over from the committed offsets; committed
//! offsets survive kill -9 of the server; a member killed without leaving is expired after
//! its session timeout and another member takes its partitions.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::kafka_clients;
use common::server_proc::ServerProc;

const CLIENTS: [&str; 3] = ["confluent", "kafka-python", "aiokafka"];

fn script(server: &ServerProc, client: &str, mode: &str, topic: &str, group: &str) -> Command {
    kafka_clients::script(
        "groups.py",
        &[client, &server.kafka_addr(), mode, topic, group],
    )
}

/// Runs a script to completion (killed after 120 s); its stdout.
fn run(server: &ServerProc, client: &str, mode: &str, topic: &str, group: &str) -> String {
    let mut cmd = script(server, client, mode, topic, group);
    let out = kafka_clients::run_bounded(&mut cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{client} {mode}: {}\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    stdout
}

/// A confluent-kafka member of `group` that has its partitions; killed with SIGKILL (it
/// never leaves the group) when dropped.
struct Holder(Child);

impl Holder {
    fn join(server: &ServerProc, topic: &str, group: &str) -> Holder {
        let mut cmd = script(server, "confluent", "hold", topic, group);
        Holder(kafka_clients::start_until(&mut cmd, "JOINED"))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn create_topic(server: &ServerProc, topic: &str) {
    let status = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["topics", "create", "--topic", topic, "--partitions", "4"])
        .args(["-b", &server.addr()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn group_server(tmp: &tempfile::TempDir) -> ServerProc {
    ServerProc::start(
        &tmp.path().join("data"),
        2,
        &[
            ("kafka.listen", "auto"),
            ("group.initial.rebalance.delay.ms", "200"),
            ("offsets.topic.num.partitions", "8"),
        ],
    )
}

#[test]
fn groups_consume_exactly_once_rebalance_and_keep_commits_across_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = group_server(&tmp);
    let mut committed = Vec::new();
    for client in CLIENTS {
        let (topic, group) = (format!("t-{client}"), format!("g-{client}"));
        create_topic(&server, &topic);
        let out = run(&server, client, "run", &topic, &group);
        eprint!("{out}");
        assert!(out.starts_with(&format!("OK {client}")), "{out}");
        let offsets = out.lines().last().unwrap().to_string();
        assert_eq!(offsets, r#"{"0": 60, "1": 60, "2": 60, "3": 60}"#);
        committed.push((client, topic, group, offsets));
    }
    server.restart_after_kill();
    for (client, topic, group, offsets) in committed {
        let after = run(&server, client, "committed", &topic, &group);
        assert_eq!(after.trim(), offsets, "{client} after kill -9");
    }
}

#[test]
fn a_member_killed_without_leaving_is_expired_and_its_partitions_move() {
    let tmp = tempfile::tempdir().unwrap();
    let server = group_server(&tmp);
    create_topic(&server, "expiry");
    let holder = Holder::join(&server, "expiry", "g");
    drop(holder);
    let out = run(&server, "confluent", "takeover", "expiry", "g");
    eprint!("{out}");
    assert!(out.contains("OK takeover"), "{out}");
    assert!(server.log_text().contains("member session expired"));
}

/// `shardlog consumer-groups` against the server: returns (stdout, stderr, success).
fn tool(server: &ServerProc, args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("consumer-groups")
        .args(["--bootstrap-server", &server.kafka_addr()])
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

/// CURRENT-OFFSET per partition from `--describe` (-1 for "-": assigned, never committed).
fn current_offsets(server: &ServerProc, group: &str) -> Vec<i64> {
    let (out, err, ok) = tool(server, &["--describe", "--group", group]);
    assert!(ok, "{err}");
    out.lines()
        .filter(|l| l.starts_with(group))
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap_or(-1))
        .collect()
}

/// Produces 3 partitions x 120 records, one a minute from 10 hours ago, every 7th late by
/// 30 minutes; returns each partition's timestamps in offset order.
fn produce_timeline(server: &ServerProc) -> Vec<Vec<i64>> {
    use shardlog::format::{BatchBuilder, RecordSpec};
    let base = shardlog::time::now_ms() - 10 * 3_600_000;
    let timeline: Vec<Vec<i64>> = (0..3)
        .map(|p| {
            (0..120)
                .map(|i| base + i * 60_000 + p * 1_000 - if i % 7 == 6 { 1_800_000 } else { 0 })
                .collect()
        })
        .collect();
    let addr = server.addr();
    let batches = timeline.clone();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        c.create_topic("orders", 3, vec![]).await.unwrap();
        for (p, ts) in batches.iter().enumerate() {
            let mut b = BatchBuilder::new(8192);
            for &t in ts {
                b.push(RecordSpec::new(Some(b"k"), Some(b"v")).timestamp(t));
            }
            c.produce("orders", p as i32, -1, b.build().into())
                .await
                .unwrap();
        }
    });
    timeline
}

/// offsetsForTimes by brute force; none: the log end.
fn first_at_or_after(ts: &[i64], target: i64) -> i64 {
    ts.iter()
        .position(|&t| t >= target)
        .map_or(ts.len() as i64, |o| o as i64)
}

#[test]
fn consumer_groups_resets_to_a_datetime_with_a_dry_run_first_and_only_when_inactive() {
    let tmp = tempfile::tempdir().unwrap();
    let server = group_server(&tmp);
    let timeline = produce_timeline(&server);
    let g = "billing";
    // A group with commits at the end (created by the reset itself: it has no members).
    let (_, err, ok) = tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders",
            "--to-latest",
            "--execute",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(current_offsets(&server, g), vec![120, 120, 120]);
    let (list, _, _) = tool(&server, &["--list"]);
    assert_eq!(list.trim(), g);
    // The operator's story: re-read since a time, dry run first.
    let target = timeline[0][40] + 500;
    let at = chrono::DateTime::from_timestamp_millis(target).unwrap();
    let when = at.format("%Y-%m-%dT%H:%M:%S%.3f").to_string();
    let (plan, err, ok) = tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders",
            "--to-datetime",
            &when,
        ],
    );
    assert!(ok, "{err}");
    let want: Vec<i64> = timeline
        .iter()
        .map(|ts| first_at_or_after(ts, target))
        .collect();
    for (p, o) in want.iter().enumerate() {
        assert!(
            plan.contains(&format!("orders               {p:<10} {o:<12} record at")),
            "{plan}"
        );
    }
    assert_eq!(
        current_offsets(&server, g),
        vec![120, 120, 120],
        "a dry run changes nothing"
    );
    let (_, err, ok) = tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders",
            "--to-datetime",
            &when,
            "--execute",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        current_offsets(&server, g),
        want,
        "every partition at the first record >= the time"
    );
    let (describe, _, _) = tool(&server, &["--describe", "--group", g]);
    assert!(
        describe.contains(&format!("{} ", 120 - want[0])),
        "lag shown: {describe}"
    );
    // --by-duration (11 hours ago: before everything) and --shift-by, clamped.
    tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--all-topics",
            "--by-duration",
            "PT11H",
            "--execute",
        ],
    );
    assert_eq!(current_offsets(&server, g), vec![0, 0, 0]);
    tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders:1",
            "--shift-by",
            "-5",
            "--execute",
        ],
    );
    tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders:2",
            "--shift-by",
            "500",
            "--execute",
        ],
    );
    assert_eq!(current_offsets(&server, g), vec![0, 0, 120]);
    // Export, then reset from the file.
    let (csv, _, _) = tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders",
            "--to-offset",
            "77",
            "--export",
        ],
    );
    assert_eq!(csv, "orders,0,77\norders,1,77\norders,2,77\n");
    let file = tmp.path().join("plan.csv");
    std::fs::write(&file, csv).unwrap();
    tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--from-file",
            file.to_str().unwrap(),
            "--execute",
        ],
    );
    assert_eq!(current_offsets(&server, g), vec![77, 77, 77]);
    // --delete-offsets removes a partition's commit.
    let (out, err, ok) = tool(
        &server,
        &["--delete-offsets", "--group", g, "--topic", "orders:2"],
    );
    assert!(ok && out.contains("Successful"), "{out}{err}");
    assert_eq!(current_offsets(&server, g), vec![77, 77]);
    // While a member is in the group, a reset is refused and changes nothing.
    let holder = Holder::join(&server, "orders", g);
    let (_, err, ok) = tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders",
            "--to-earliest",
            "--execute",
        ],
    );
    // Kafka's --members --verbose: each member's partitions.
    let (members, _, ok_members) = tool(
        &server,
        &["--describe", "--group", g, "--members", "--verbose"],
    );
    drop(holder);
    assert!(ok_members && members.contains("ASSIGNMENT"), "{members}");
    assert!(members.contains("orders("), "{members}");
    assert!(!ok);
    assert!(err.contains("Assignments can only be reset if the group 'billing' is inactive, but the current state is Stable"), "{err}");
    // --to-current: a plan of where the group is (its commits).
    let (plan, err, ok) = tool(
        &server,
        &[
            "--reset-offsets",
            "--group",
            g,
            "--topic",
            "orders",
            "--to-current",
        ],
    );
    assert!(ok, "{err}");
    assert!(plan.matches(" 77").count() >= 2, "{plan}");
    let (view, err, ok) = tool(&server, &["--describe", "--group", g, "--offsets"]);
    assert!(ok && view.contains("CURRENT-OFFSET"), "{view}{err}");
    assert_eq!(current_offsets(&server, g)[..2], [77, 77]);
}

/// The native protocol's groups: `shardlog consume --group` resumes from the group's
/// commits and commits as it prints; ListGroups, DescribeGroup and DeleteGroup; commits
/// and deletion are refused while Kafka members are in the group.
#[test]
fn native_clients_use_groups_without_the_kafka_listener() {
    let tmp = tempfile::tempdir().unwrap();
    let server = group_server(&tmp);
    let shardlog = env!("CARGO_BIN_EXE_shardlog");
    let b = server.addr();
    let ok = |args: &[&str], input: Option<&str>| {
        let mut cmd = Command::new(shardlog);
        cmd.args(args).args(["-b", &b]);
        let out = match input {
            Some(text) => {
                let mut child = cmd
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(text.as_bytes())
                    .unwrap();
                child.wait_with_output().unwrap()
            }
            None => cmd.output().unwrap(),
        };
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    ok(
        &["topics", "create", "--topic", "cg", "--partitions", "2"],
        None,
    );
    let input: String = (0..10).map(|i| format!("v{i}\n")).collect();
    ok(&["produce", "--topic", "cg"], Some(&input));
    let read = |max: Option<&str>| {
        let mut args = vec![
            "consume", "--topic", "cg", "--group", "cli", "--format", "%s\n",
        ];
        if let Some(m) = max {
            args.extend(["--max-records", m]);
        }
        let out = ok(&args, None);
        out.lines().map(str::to_string).collect::<Vec<_>>()
    };
    let first = read(Some("4"));
    let rest = read(None);
    let again = read(None);
    assert_eq!(first.len(), 4);
    assert_eq!(rest.len(), 6, "resumed from the commits");
    assert!(again.is_empty(), "nothing twice: {again:?}");
    let mut all: Vec<String> = first.into_iter().chain(rest).collect();
    all.sort();
    let mut want: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
    want.sort();
    assert_eq!(all, want, "every record exactly once");
    let addr = server.addr();
    let (listed, described) = common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let listed = c.list_groups().await.unwrap();
        let described = c.describe_group("cli").await.unwrap();
        (listed, described)
    });
    assert_eq!(
        listed,
        vec![(
            "cli".to_string(),
            "consumer".to_string(),
            "Empty".to_string()
        )]
    );
    assert_eq!(
        (described.state.as_str(), described.members.len()),
        ("Empty", 0)
    );
    // A Kafka member in the group: commits from outside and deletion are refused.
    let holder = Holder::join(&server, "cg", "cli");
    let addr = server.addr();
    let (commit, delete, described) = common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let commit = c
            .offset_commit("cli", vec![("cg".into(), 0, 0, String::new())])
            .await
            .unwrap();
        let delete = c.delete_group("cli").await.unwrap_err();
        (commit, delete, c.describe_group("cli").await.unwrap())
    });
    drop(holder);
    assert_eq!(commit[0].2, shardlog::protocol::ErrorCode::GroupNotEmpty);
    assert_eq!(
        delete.code(),
        Some(shardlog::protocol::ErrorCode::GroupNotEmpty),
        "{delete}"
    );
    assert_eq!(described.members.len(), 1, "{described:?}");
}

/// Offsets of a deleted topic expire at the next check (Kafka removes them too).
#[test]
fn offsets_of_deleted_topics_expire() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(
        &tmp.path().join("data"),
        2,
        &[
            ("offsets.retention.check.interval.ms", "200"),
            ("offsets.topic.num.partitions", "4"),
        ],
    );
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        c.create_topic("gone", 1, vec![]).await.unwrap();
        c.create_topic("kept", 1, vec![]).await.unwrap();
        let offsets = vec![
            ("gone".to_string(), 0, 0, String::new()),
            ("kept".to_string(), 0, 0, String::new()),
        ];
        let codes = c.offset_commit("g", offsets).await.unwrap();
        assert!(
            codes
                .iter()
                .all(|x| x.2 == shardlog::protocol::ErrorCode::None),
            "{codes:?}"
        );
        // A group id longer than the native bound (255 bytes) is refused whole.
        let long = "g".repeat(40_000);
        let refused = c
            .offset_commit(&long, vec![("kept".to_string(), 0, 1, String::new())])
            .await;
        let invalid = match &refused {
            Ok(codes) => codes
                .iter()
                .all(|x| x.2 == shardlog::protocol::ErrorCode::InvalidRequest),
            Err(e) => e.code() == Some(shardlog::protocol::ErrorCode::InvalidRequest),
        };
        assert!(invalid, "{refused:?}");
        assert!(c.offset_fetch("g", None).await.unwrap().len() == 2);
        c.delete_topic("gone").await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = c.offset_fetch("g", None).await.unwrap();
            let topics: Vec<&str> = left.iter().map(|x| x.0.as_str()).collect();
            if topics == ["kept"] {
                break;
            }
            assert!(Instant::now() < deadline, "still committed: {left:?}");
            glommio::timer::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// The offsets log is compacted like any compacted topic (the latest commit per key stays),
/// and the groups reload from it after kill -9.
#[test]
fn the_offsets_log_is_compacted_and_reloads_after_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = ServerProc::start(
        &tmp.path().join("data"),
        1,
        &[
            ("offsets.topic.num.partitions", "1"),
            ("log.cleaner.backoff.ms", "86400000"),
        ],
    );
    let addr = server.addr();
    let records_in_offsets_log = |addr: String| {
        common::client(move || async move {
            let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
            common::read_records(&mut c, "__consumer_offsets", 0)
                .await
                .len()
        })
    };
    let a = addr.clone();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&a).await.unwrap();
        c.create_topic("t", 2, vec![]).await.unwrap();
        for n in 0..200 {
            let offsets = vec![("t".to_string(), n % 2, n as i64, String::new())];
            c.offset_commit("g", offsets).await.unwrap();
        }
        c.roll_segments("__consumer_offsets", -1).await.unwrap();
        c.run_log_maintenance("__consumer_offsets").await.unwrap();
    });
    assert_eq!(
        records_in_offsets_log(addr.clone()),
        2,
        "one record per (group, topic, partition)"
    );
    server.restart_after_kill();
    let addr = server.addr();
    let committed = common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let mut got = c.offset_fetch("g", None).await.unwrap();
        got.sort();
        got
    });
    assert_eq!(
        committed,
        vec![
            ("t".to_string(), 0, 198, String::new()),
            ("t".to_string(), 1, 199, String::new())
        ]
    );
}

/// A confluent-kafka static member (`group.instance.id`) whose stdout lines arrive on a
/// channel; killed with SIGKILL (it never leaves) when dropped.
struct StaticMember {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl StaticMember {
    fn start(server: &ServerProc, topic: &str, group: &str, instance: &str) -> StaticMember {
        use std::io::BufRead;
        let mut cmd = script(server, "confluent", "static", topic, group);
        let mut child = cmd
            .arg(instance)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        StaticMember { child, lines }
    }

    /// The next ASSIGNED line's partitions (REVOKED lines skipped), within `limit`.
    fn assigned(&self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with("ASSIGNED ") => return line[9..].to_string(),
                Ok(_) => {}
                Err(e) => panic!("no assignment within {limit:?}: {e}"),
            }
        }
    }

    /// Every line printed within `wait` (after it, nothing more is read).
    fn lines_within(&self, wait: Duration) -> Vec<String> {
        let deadline = Instant::now() + wait;
        let mut out = Vec::new();
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            out.push(line);
        }
        out
    }
}

impl Drop for StaticMember {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_static_member_restarting_within_its_session_keeps_its_partitions_without_a_rebalance() {
    let tmp = tempfile::tempdir().unwrap();
    let server = group_server(&tmp);
    create_topic(&server, "st");
    // The first member leads (it formed the group); the second follows.
    let leader = StaticMember::start(&server, "st", "static-g", "a");
    assert_eq!(leader.assigned(Duration::from_secs(60)), "0,1,2,3");
    let follower = StaticMember::start(&server, "st", "static-g", "b");
    let theirs = follower.assigned(Duration::from_secs(60));
    let ours = leader.assigned(Duration::from_secs(60));
    assert_eq!(
        theirs.split(',').count() + ours.split(',').count(),
        4,
        "{ours} {theirs}"
    );
    // The follower dies without leaving and comes back with its instance id well within
    // its 20 s session: it gets its partitions back, and the leader sees no rebalance.
    drop(follower);
    let started = Instant::now();
    let back = StaticMember::start(&server, "st", "static-g", "b");
    assert_eq!(
        back.assigned(Duration::from_secs(15)),
        theirs,
        "its own partitions"
    );
    eprintln!(
        "a static member back with its partitions after {:?}",
        started.elapsed()
    );
    let seen = leader.lines_within(Duration::from_secs(3));
    assert!(seen.is_empty(), "the leader saw a rebalance: {seen:?}");
}

/// Issue 39: right after a restart the listener is up while the shards still open their
/// partitions and the coordinator loads its offsets partition; `consumer-groups` retries
/// what it is told meanwhile (LEADER_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) until
/// `--timeout-ms`, as Kafka's AdminClient does, instead of failing with "Kafka error 5".
#[test]
fn consumer_groups_waits_out_a_starting_server() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = group_server(&tmp);
    create_topic(&server, "starting");
    let reset = [
        "--reset-offsets",
        "--group",
        "cg-start",
        "--topic",
        "starting",
        "--to-earliest",
        "--execute",
    ];
    let (_, err, ok) = tool(&server, &reset);
    assert!(ok, "{err}");
    for round in 0..3 {
        server.restart_after_kill();
        // Several at once: the first starts loading the offsets partition, the others
        // are told COORDINATOR_LOAD_IN_PROGRESS meanwhile.
        let describing: Vec<_> = (0..6)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_shardlog"))
                    .args(["consumer-groups", "-b", &server.kafka_addr()])
                    .args(["--describe", "--group", "cg-start"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (i, child) in describing.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            let (text, err) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "round {round}, tool {i}: {err}");
            let rows = text.lines().filter(|l| l.starts_with("cg-start")).count();
            assert_eq!(rows, 4, "every partition described:\n{text}");
        }
    }
}
