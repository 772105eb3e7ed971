//! Transactions through an unmodified Kafka client (tests/kafka_clients/txn.py, confluent-kafka)
//! against the real `shardlog serve` binary's Kafka listener: commit, abort, a fenced zombie
//! and read_committed versus read_uncommitted consumers; a transaction past its timeout
//! aborted by the coordinator; and transactions decided before a kill -9 stay decided after
//! the restart while an undecided one is aborted, so read_committed readers move on.

mod common;

use std::time::Duration;

use common::kafka_clients::{run_bounded, script, start_until};
use common::server_proc::ServerProc;

fn run_txn(server: &ServerProc, mode: &str, topic: &str) {
    let out = run_bounded(
        &mut script("txn.py", &["confluent", &server.kafka_addr(), mode, topic]),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "txn.py {mode}: {}\n{stdout}\n{}\nserver log:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log_text()
    );
}

fn server(tmp: &tempfile::TempDir) -> ServerProc {
    let config = [
        ("kafka.listen", "auto"),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "200",
        ),
    ];
    ServerProc::start(&tmp.path().join("data"), 2, &config)
}

#[test]
fn commit_abort_and_fencing_with_read_committed_consumers() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp);
    run_txn(&server, "basic", "txn-basic");
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_by_the_coordinator() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp);
    run_txn(&server, "timeout", "txn-timeout");
}

/// kill -9 with one transaction committed and one open: after the restart the committed
/// one is whole, the open one is aborted by the coordinator (its timeout passed while the
/// server was down) without any client coming back, and read_committed consumers reach
/// the end of every partition.
#[test]
fn after_a_kill_the_open_transaction_is_aborted_and_readers_move_on() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server(&tmp);
    let mut holder = start_until(
        &mut script(
            "txn.py",
            &["confluent", &server.kafka_addr(), "hold", "txn-crash"],
        ),
        "HOLDING",
    );
    server.kill9();
    let _ = holder.kill();
    let _ = holder.wait();
    server.respawn();
    run_txn(&server, "after-crash", "txn-crash");
    assert!(
        server
            .log_text()
            .contains("aborting a transaction past its timeout"),
        "{}",
        server.log_text()
    );
}

/// Exactly-once consume-transform-produce with send_offsets_to_transaction: the output
/// holds each input record once, the group's offsets move only with committed
/// transactions (an aborted round is redone from them).
#[test]
fn consume_transform_produce_runs_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp);
    run_txn(&server, "ctp", "txn-ctp");
}
