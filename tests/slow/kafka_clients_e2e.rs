//! Unmodified Kafka clients against the real `shardlog serve` binary's Kafka listener on
//! loopback: confluent-kafka (librdkafka), kafka-python and aiokafka from PyPI, and kcat.
//! Each Python script (tests/kafka_clients/) creates a topic, produces keyed records with
//! timestamps and headers (acks=all, with and without idempotence, each compression
//! codec), reads them back comparing every field, seeks, looks up offsets by time against
//! brute force, describes configs and deletes the topic. `scripts/install-test-deps.sh`
//! installs the clients (scripts/test.sh and .ci/run run it).

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::kafka_clients::{run_bounded, script};
use common::server_proc::ServerProc;

const CODECS: &str = "none,gzip,snappy,lz4,zstd";

fn kafka_server(tmp: &tempfile::TempDir) -> ServerProc {
    ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")])
}

fn run_client_script(server: &ServerProc, name: &str) -> String {
    let out = run_bounded(
        &mut script(name, &[&server.kafka_addr(), CODECS]),
        Duration::from_secs(240),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name} failed ({}):\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    let scenarios = CODECS.split(',').count() * 2;
    assert_eq!(stdout.matches("OK ").count(), scenarios, "{stdout}");
    eprint!("{stdout}");
    stdout
}

#[test]
fn confluent_kafka_round_trips_every_field_and_looks_up_by_time() {
    let tmp = tempfile::tempdir().unwrap();
    let server = kafka_server(&tmp);
    run_client_script(&server, "confluent.py");
}

#[test]
fn kafka_python_round_trips_every_field_and_looks_up_by_time() {
    let tmp = tempfile::tempdir().unwrap();
    let server = kafka_server(&tmp);
    run_client_script(&server, "kafka_python.py");
}

#[test]
fn aiokafka_round_trips_every_field_and_looks_up_by_time() {
    let tmp = tempfile::tempdir().unwrap();
    let server = kafka_server(&tmp);
    run_client_script(&server, "aio.py");
}

fn kcat(server: &ServerProc, args: &[&str], stdin: Option<&str>) -> String {
    let mut cmd = Command::new("kcat");
    cmd.arg("-b").arg(server.kafka_addr()).args(args);
    let out = match stdin {
        None => run_bounded(cmd.stdin(Stdio::null()), Duration::from_secs(30)),
        Some(input) => {
            let path = server.log_path().with_extension("kcat-in");
            std::fs::write(&path, input).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            run_bounded(cmd.stdin(file), Duration::from_secs(30))
        }
    };
    assert!(
        out.status.success(),
        "kcat {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn kcat_lists_produces_consumes_and_queries_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let server = kafka_server(&tmp);
    let status = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["topics", "create", "--topic", "orders", "--partitions", "2"])
        .args(["-b", &server.addr()])
        .status()
        .unwrap();
    assert!(status.success());
    let listed = kcat(&server, &["-L"], None);
    assert!(listed.contains("1 brokers:"), "{listed}");
    assert!(
        listed.contains(&format!("broker 0 at {} (controller)", server.kafka_addr())),
        "{listed}"
    );
    assert!(
        listed.contains("topic \"orders\" with 2 partitions"),
        "{listed}"
    );
    let input: String = (0..20).map(|i| format!("key{i}:value {i}\n")).collect();
    kcat(
        &server,
        &["-P", "-t", "orders", "-K:", "-p", "1", "-H", "source=kcat"],
        Some(&input),
    );
    let consumed = kcat(
        &server,
        &[
            "-C",
            "-t",
            "orders",
            "-o",
            "beginning",
            "-e",
            "-f",
            "%p %o %k %s %h\\n",
        ],
        None,
    );
    let want: String = (0..20)
        .map(|i| format!("1 {i} key{i} value {i} source=kcat\n"))
        .collect();
    assert_eq!(consumed, want);
    // -Q: offsets by timestamp. Everything was produced just now: an hour ago is offset 0,
    // an hour ahead is past the end (-1).
    let now = shardlog::time::now_ms();
    let q = |t: i64| kcat(&server, &["-Q", "-t", &format!("orders:1:{t}")], None);
    assert!(
        q(now - 3_600_000).contains("orders [1] offset 0"),
        "{}",
        q(now - 3_600_000)
    );
    assert!(
        q(now + 3_600_000).contains("orders [1] offset -1"),
        "{}",
        q(now + 3_600_000)
    );
}
