//! Every tool against either listener: a native tool pointed at shardlog's Kafka listener
//! finds the native listener of the same server and works (saying so on stderr);
//! consumer-groups works on both (natively through the native group APIs); and the probe
//! that tells them apart changes nothing on either listener.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::server_proc::ServerProc;
use shardlog::tools::probe::{probe, Protocol};

fn shardlog(args: &[&str]) -> (String, String, bool) {
    common::cli::shardlog(args, None)
}

#[test]
fn tools_find_the_listener_they_speak_or_say_which_one_they_need() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let (native, kafka) = (server.addr(), server.kafka_addr());
    let timeout = Duration::from_secs(5);
    let started = Instant::now();
    assert_eq!(probe(&native, timeout).unwrap(), Protocol::Native);
    let native_probe = started.elapsed();
    let started = Instant::now();
    assert_eq!(probe(&kafka, timeout).unwrap(), Protocol::Kafka);
    eprintln!(
        "probe: native {native_probe:?}, kafka {:?}",
        started.elapsed()
    );
    // Native tools on the Kafka port work, through the native listener.
    let (_, err, ok) = shardlog(&["topics", "create", "--topic", "either", "-b", &kafka]);
    assert!(ok, "{err}");
    assert!(err.contains("using its native listener"), "{err}");
    let (out, err, ok) = shardlog(&["topics", "list", "--bootstrap-server", &kafka]);
    assert!(ok && out.lines().any(|l| l == "either"), "{out} {err}");
    // consumer-groups works on the native port too.
    let (out, err, ok) = shardlog(&["consumer-groups", "--bootstrap-server", &native, "--list"]);
    assert!(ok, "{out} {err}");
    // The probes changed nothing: the server serves both listeners as before.
    let (out, err, ok) = shardlog(&["consumer-groups", "--bootstrap-server", &kafka, "--list"]);
    assert!(ok, "{out} {err}");
    let (out, _, ok) = shardlog(&["topics", "list", "-b", &native]);
    assert!(ok && out.contains("either"), "{out}");
}

#[test]
fn a_port_nobody_serves_is_reported_as_such() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap().to_string();
    drop(free);
    let (_, err, ok) = shardlog(&["topics", "list", "-b", &addr]);
    assert!(!ok && err.contains(&addr), "{err}");
}

/// kcat's and Kafka's console tools' flags work as their users type them.
#[test]
fn kcat_and_console_consumer_flags_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    let (_, err, ok) = shardlog(&["topics", "create", "--topic", "k", "-b", &addr]);
    assert!(ok, "{err}");
    let a2 = addr.clone();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&a2).await.unwrap();
        for v in ["one", "two", "three"] {
            let mut b = shardlog::format::BatchBuilder::new(64);
            b.push(shardlog::format::RecordSpec::new(None, Some(v.as_bytes())).timestamp(1));
            c.produce("k", 0, -1, bytes::Bytes::from(b.build()))
                .await
                .unwrap();
        }
    });
    let kcat = [
        "consume", "-b", &addr, "-t", "k", "-p", "0", "-c", "2", "-e", "-f", "%o %s\\n",
    ];
    let (out, err, ok) = shardlog(&kcat);
    assert!(ok, "{err}");
    assert_eq!(out, "0 one\n1 two\n");
    let console = [
        "consume",
        "--bootstrap-server",
        &addr,
        "--topic",
        "k",
        "--from-beginning",
        "--max-messages",
        "1",
    ];
    let (out, err, ok) = shardlog(&console);
    assert!(ok, "{err}");
    assert_eq!(out, "one\n");
    let (out, err, ok) = shardlog(&["get-offsets", "--broker-list", &addr, "--topic", "k"]);
    assert!(ok && out.contains("k:0:3"), "{out} {err}");
}

/// kafka-consumer-groups' --all-groups, --list --state [STATES], --reset-offsets,
/// --delete-offsets and "does not exist" for a group that is gone, on either listener.
#[test]
fn consumer_groups_lists_states_describes_all_and_knows_a_deleted_group() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let (native, kafka) = (server.addr(), server.kafka_addr());
    let n = native.clone();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&n).await.unwrap();
        c.create_topic("cg-t", 1, vec![]).await.unwrap();
        let mut b = shardlog::format::BatchBuilder::new(64);
        for _ in 0..9 {
            b.push(shardlog::format::RecordSpec::new(None, Some(b"v")).timestamp(1));
        }
        c.produce("cg-t", 0, -1, bytes::Bytes::from(b.build()))
            .await
            .unwrap();
    });
    for listener in [&kafka, &native] {
        groups_through(&native, listener);
    }
}

/// Two groups commit (natively), then consumer-groups at `listener` lists, describes,
/// resets, deletes offsets and deletes them.
fn groups_through(native: &str, listener: &str) {
    let n = native.to_string();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&n).await.unwrap();
        for g in ["g1", "g2"] {
            let codes = c
                .offset_commit(g, vec![("cg-t".to_string(), 0, 5, String::new())])
                .await
                .unwrap();
            assert_eq!(codes[0].2, shardlog::protocol::ErrorCode::None);
        }
    });
    let cg = |args: &[&str]| {
        let mut all = vec!["consumer-groups", "-b", listener];
        all.extend_from_slice(args);
        shardlog(&all)
    };
    let (out, err, ok) = cg(&["--list", "--state"]);
    assert!(ok, "{listener}: {err}");
    assert!(out.starts_with("GROUP") && out.contains("STATE"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("g1") && l.ends_with("Empty")),
        "{listener}: {out}"
    );
    let (out, _, ok) = cg(&["--list", "--state", "Stable"]);
    assert!(ok && out.lines().count() == 1, "only the header: {out}");
    let (out, err, ok) = cg(&["--describe", "--all-groups"]);
    assert!(ok, "{err}");
    assert_eq!(out.matches("cg-t").count(), 2, "{listener}: {out}");
    assert!(
        out.contains(" 5 ") && out.contains(" 9 "),
        "commit and log end: {out}"
    );
    let reset = ["--reset-offsets", "--group", "g2", "--topic", "cg-t"];
    let (out, err, ok) = cg(&[&reset[..], &["--to-earliest", "--execute"]].concat());
    assert!(ok, "{listener}: {err}");
    assert!(
        out.lines()
            .any(|l| l.contains("cg-t") && l.trim_end().ends_with(" 0")),
        "{out}"
    );
    let (out, err, ok) = cg(&["--delete-offsets", "--group", "g2", "--topic", "cg-t"]);
    assert!(ok && out.contains("Successful"), "{listener}: {out} {err}");
    let (_, err, ok) = cg(&["--delete", "--group", "g1"]);
    assert!(ok, "{err}");
    let (out, err, ok) = cg(&["--describe", "--group", "g1"]);
    assert!(
        !ok && err.contains("Consumer group 'g1' does not exist."),
        "{listener}: {out} {err}"
    );
    let (_, err, ok) = cg(&["--delete", "--all-groups"]);
    assert!(ok, "{err}");
    let (out, _, ok) = cg(&["--list"]);
    assert!(ok && out.trim().is_empty(), "{listener}: {out}");
}

/// A time without a zone is read as UTC, and on a host whose zone is not UTC the tool says
/// so (Kafka's tools would read it in the local zone); a time that names its zone is quiet.
#[test]
fn a_time_without_a_zone_on_a_non_utc_host_gets_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    assert!(shardlog(&["topics", "create", "--topic", "tz", "-b", &addr]).2);
    let offsets = |time: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(["get-offsets", "-b", &addr, "--topic", "tz", "--time", time])
            .env("TZ", "JST-9")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = offsets("2026-11-29T14:00:00");
    assert!(
        err.contains("no zone and is read as UTC") && err.contains("+09:00"),
        "{err}"
    );
    assert!(!offsets("2026-11-29T14:00:00Z").contains("no zone"));
    assert!(!offsets("2026-11-29T14:00:00+09:00").contains("no zone"));
}

/// A bulk load into a topic with small segments succeeds: `produce` sizes its batches to
/// the topic's segment.bytes instead of failing half-way with BatchTooLarge.
#[test]
fn produce_sizes_its_batches_to_small_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 1, &[]);
    let addr = server.addr();
    let create = [
        "topics",
        "create",
        "--topic",
        "small",
        "-b",
        &addr,
        "--config",
        "segment.bytes=2048",
    ];
    assert!(shardlog(&create).2);
    let lines: String = (0..500).map(|i| format!("{i:0>100}\n")).collect();
    let produce = ["produce", "-b", &addr, "--topic", "small"];
    let (_, err, ok) = common::cli::shardlog(&produce, Some(&lines));
    assert!(ok, "{err}");
    let (out, err, ok) = shardlog(&["get-offsets", "-b", &addr, "--topic", "small"]);
    assert!(ok && out.contains("small:0:500"), "{out} {err}");
}

/// Issue 39: one way to reach the server. Every tool takes `-b`/`--bootstrap`/
/// `--bootstrap-server` (consumer-groups and acls included); acls pointed at the native
/// listener (every tool's default) asks it for the Kafka listener and manages ACLs there
/// (it used to fail with a decode error); and a Kafka client that reaches the native
/// listener is recognised, closed, and the log names the Kafka listener (librdkafka used
/// to report "broker version < 0.10").
#[test]
fn every_tool_takes_the_same_flags_and_kafka_clients_on_the_native_port_are_told() {
    let tmp = tempfile::tempdir().unwrap();
    let config = [
        ("kafka.listen", "auto"),
        ("authorizer.enable", "true"),
        ("super.users", "User:ANONYMOUS"),
    ];
    let server = ServerProc::start(&tmp.path().join("data"), 2, &config);
    let (native, kafka) = (server.addr(), server.kafka_addr());
    for flag in ["-b", "--bootstrap", "--bootstrap-server"] {
        let (out, err, ok) = shardlog(&["consumer-groups", flag, &native, "--list"]);
        assert!(ok, "consumer-groups {flag}: {out} {err}");
        let (out, err, ok) = shardlog(&["acls", flag, &kafka, "--list"]);
        assert!(ok, "acls {flag}: {out} {err}");
    }
    let add = [
        "acls",
        "-b",
        &native,
        "--add",
        "--allow-principal",
        "User:bob",
        "--operation",
        "Read",
        "--topic",
        "t",
    ];
    let (out, err, ok) = shardlog(&add);
    assert!(ok, "acls on the native listener: {out} {err}");
    assert!(
        err.contains(&format!("using its Kafka listener {kafka}")),
        "{err}"
    );
    let (out, err, ok) = shardlog(&["acls", "-b", &kafka, "--list"]);
    assert!(
        ok && out.contains("User:bob") && out.contains("name=t,"),
        "{out} {err}"
    );
    // A Kafka client's first request on the native port: closed unanswered, and logged.
    let mut c = shardlog::kafka::blocking_client::BlockingClient::connect_with_timeout(
        &native,
        Duration::from_secs(5),
    )
    .unwrap();
    let versions = kafka_protocol::messages::RequestKind::ApiVersions(Default::default());
    let answer = c.call(kafka_protocol::messages::ApiKey::ApiVersions, 3, &versions);
    assert!(answer.is_err(), "{answer:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server
        .log_text()
        .contains("a Kafka client reached the native listener")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = server.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("a Kafka client reached the native listener"))
        .unwrap_or_else(|| panic!("not logged:\n{log}"));
    assert!(line.contains(&kafka), "names the Kafka listener: {line}");
    // The native listener still serves.
    let (_, err, ok) = shardlog(&["topics", "list", "-b", &native]);
    assert!(ok, "{err}");
}
