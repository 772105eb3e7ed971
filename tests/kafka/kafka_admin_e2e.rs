//! The admin surface through unmodified Kafka clients (tests/kafka_clients/admin.py)
//! against the real `shardlog serve` binary's Kafka listener: confluent-kafka's and
//! kafka-python's AdminClient calls that Kafka's tools make, and a producer to a topic
//! that does not exist yet.

use crate::common;

use std::time::Duration;

use common::kafka_clients::{run_bounded, script};
use common::server_proc::ServerProc;

fn run_admin(client: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let out = run_bounded(
        &mut script("admin.py", &[client, &server.kafka_addr()]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("OK {client}")),
        "admin.py {client}: {}\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
    eprint!("{stdout}");
}

#[test]
fn confluent_kafka_admin_client_calls_work() {
    run_admin("confluent");
}

#[test]
fn kafka_python_admin_client_calls_work() {
    run_admin("kafka-python");
}
