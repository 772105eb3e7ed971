//! Consumer groups with unmodified Kafka clients against the real `shardlog serve` binary
//! (tests/kafka_clients/groups.py): for confluent-kafka, kafka-python and aiokafka, a
//! group of two members consumes a topic exactly once with commits; a member leaving
//! triggers a rebalance and the survivor takes over from the committed offsets; committed
//! offsets survive kill -9 of the server; a member killed without leaving is expired after
//! its session timeout and another member takes its partitions.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::server_proc::ServerProc;

const CLIENTS: [&str; 3] = ["confluent", "kafka-python", "aiokafka"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    let p = repo().join("target/kafka-venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/install-test-deps.sh (scripts/test.sh does)",
        p.display()
    );
    p
}

fn script(server: &ServerProc, client: &str, mode: &str, topic: &str, group: &str) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("tests/kafka_clients/groups.py")).args([
        client,
        &server.kafka_addr(),
        mode,
        topic,
        group,
    ]);
    cmd
}

/// Runs a script to completion (killed after 120 s); its stdout.
fn run(server: &ServerProc, client: &str, mode: &str, topic: &str, group: &str) -> String {
    let mut child = script(server, client, mode, topic, group)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
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
    let mut holder = script(&server, "confluent", "hold", "expiry", "g")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "JOINED");
    holder.kill().unwrap();
    holder.wait().unwrap();
    let out = run(&server, "confluent", "takeover", "expiry", "g");
    eprint!("{out}");
    assert!(out.contains("OK takeover"), "{out}");
    assert!(server.log_text().contains("member session expired"));
}
