//! Transactions through an unmodified Kafka client (tests/kafka_clients/txn.py, confluent-kafka)
//! against the real `shardlog serve` binary's Kafka listener: commit, abort, a fenced zombie
//! and read_committed versus read_uncommitted consumers; a transaction past its timeout
//! aborted by the coordinator; and transactions decided before a kill -9 stay decided after
//! the restart while an undecided one is aborted, so read_committed readers move on.

use crate::common;

use std::process::Command;
use std::time::Duration;

use common::kafka_clients::{run_bounded, script, start_until};
use common::server_proc::ServerProc;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::kafka::blocking_client::BlockingClient;

fn run_txn(server: &ServerProc, mode: &str, topic: &str) {
    run_client(server, "confluent", mode, topic);
}

fn run_client(server: &ServerProc, client: &str, mode: &str, topic: &str) {
    let out = run_bounded(
        &mut script("txn.py", &[client, &server.kafka_addr(), mode, topic]),
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

/// Commit, abort and a fenced zombie; then kcat (librdkafka, read_committed by default)
/// reads exactly the committed records, and dump-log shows the markers and, once the
/// segment is sealed, the `.txnindex` of the aborted transactions.
#[test]
fn commit_abort_and_fencing_with_read_committed_consumers() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp);
    run_txn(&server, "basic", "txn-basic");
    let kcat = Command::new("kcat")
        .args([
            "-b",
            &server.kafka_addr(),
            "-C",
            "-t",
            "txn-basic",
            "-e",
            "-q",
        ])
        .args(["-f", "%s\\n"])
        .output()
        .unwrap();
    let mut values: Vec<String> = String::from_utf8_lossy(&kcat.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    values.sort();
    let want: Vec<String> = (0..10).map(|i| format!("c{i}")).collect();
    assert_eq!(values, want, "{}", String::from_utf8_lossy(&kcat.stderr));
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        c.roll_segments("txn-basic", -1).await.unwrap();
    });
    let dir = tmp.path().join("data/txn-basic-0");
    let files = ["00000000000000000000.log", "00000000000000000000.txnindex"]
        .map(|f| dir.join(f).to_string_lossy().into_owned())
        .join(",");
    let (out, err, ok) =
        common::cli::shardlog(&["dump-log", "--files", &files, "--print-data-log"], None);
    assert!(ok, "{err}");
    assert!(
        out.contains("endTxnMarker: COMMIT coordinatorEpoch: 0"),
        "{out}"
    );
    assert!(
        out.contains("endTxnMarker: ABORT coordinatorEpoch: 0"),
        "{out}"
    );
    let aborted = out
        .lines()
        .filter(|l| l.starts_with("version: 0 producerId:"))
        .count();
    assert_eq!(aborted, 2, "the abort and the fenced zombie's: {out}");
}

/// kafka-python's and aiokafka's transactional producers, at their older API versions.
#[test]
fn older_clients_commit_and_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp);
    run_client(&server, "kafka-python", "basic", "txn-kp");
    run_client(&server, "aiokafka", "basic", "txn-aio");
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

fn describe_txn(k: &mut BlockingClient, id: &str) -> i16 {
    let r = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![TransactionalId(StrBytes::from_string(id.into()))]);
    let ResponseKind::DescribeTransactions(r) = k
        .call(
            ApiKey::DescribeTransactions,
            0,
            &RequestKind::DescribeTransactions(r),
        )
        .unwrap()
    else {
        panic!()
    };
    r.transaction_states[0].error_code
}

/// DescribeTransactions once the coordinator has loaded its state (14, 15 and 16 are
/// retried, as clients do, for at most 10 s).
fn describe_loaded(k: &mut BlockingClient, id: &str) -> i16 {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let code = describe_txn(k, id);
        if ![14, 15, 16].contains(&code) || std::time::Instant::now() > deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A transactional id idle past `transactional.id.expiration.ms` is forgotten (a
/// tombstone: still gone after a restart), so ever-new ids cannot grow the state for ever.
#[test]
fn idle_transactional_ids_expire() {
    let tmp = tempfile::tempdir().unwrap();
    let config = [
        ("kafka.listen", "auto"),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "100",
        ),
        ("transactional.id.expiration.ms", "300"),
    ];
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &config);
    let mut k = BlockingClient::connect(&server.kafka_addr()).unwrap();
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("idle"))))
        .with_transaction_timeout_ms(60_000);
    let ResponseKind::InitProducerId(r) = k
        .call(
            ApiKey::InitProducerId,
            4,
            &RequestKind::InitProducerId(init),
        )
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(describe_loaded(&mut k, "idle"), 0, "known while fresh");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while describe_txn(&mut k, "idle") == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        describe_txn(&mut k, "idle"),
        105,
        "TRANSACTIONAL_ID_NOT_FOUND"
    );
    server.restart_after_kill();
    let mut k = BlockingClient::connect(&server.kafka_addr()).unwrap();
    assert_eq!(
        describe_loaded(&mut k, "idle"),
        105,
        "still gone after a restart"
    );
}

/// The coordinator stopped after logging a transaction's decision and before writing its
/// markers: the test stops the server with one transaction open and logs PrepareCommit for
/// it in its `__transaction_state` partition (what EndTxn logs first). The restarted
/// coordinator writes the markers and completes it: its records become committed.
#[test]
fn a_decision_logged_before_a_crash_is_carried_out_after_the_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server(&tmp);
    let args = [
        "confluent",
        &server.kafka_addr(),
        "hold-prepared",
        "txn-prepared",
    ];
    let mut holder = start_until(&mut script("txn.py", &args), "HOLDING");
    server.kill9();
    let _ = holder.kill();
    let _ = holder.wait();
    let p = shardlog::txn::partition_for("tx-prepared", 50);
    let dir = tmp.path().join(format!("data/__transaction_state-{p}"));
    common::client(move || async move { log_prepare_commit(&dir, "tx-prepared").await });
    server.respawn();
    run_txn(&server, "after-prepared", "txn-prepared");
    assert!(
        server
            .log_text()
            .contains("completing a prepared transaction after a restart"),
        "{}",
        server.log_text()
    );
}

/// Appends PrepareCommit for `id`'s open transaction to its state partition at `dir`.
async fn log_prepare_commit(dir: &std::path::Path, id: &str) {
    use shardlog::txn::meta::TxnState;
    use shardlog::txn::records;
    let mut log = shardlog::log::PartitionLog::open(dir, shardlog::LogConfig::default())
        .await
        .unwrap();
    let data = log
        .read(log.log_start_offset(), 1 << 20)
        .await
        .unwrap()
        .to_bytes();
    let mut last = None;
    for (at, h) in shardlog::format::batch::split_batches(&data).unwrap() {
        let batch = &data[at..at + h.size()];
        let section = shardlog::format::batch::RecordsSection::of(batch, &h).unwrap();
        for r in section.iter() {
            let r = r.unwrap();
            if let Some((found, Some(meta))) = records::decode(r.key.unwrap(), r.value) {
                if found == id {
                    last = Some(meta);
                }
            }
        }
    }
    let mut meta = last.expect("the held transaction's state");
    assert_eq!(meta.state, TxnState::Ongoing, "{meta:?}");
    meta.state = TxnState::PrepareCommit;
    let batch = records::batch(id, Some(&meta), shardlog::time::now_ms());
    log.append(&batch).await.unwrap();
    log.close().await.unwrap();
}

fn producers(k: &mut BlockingClient, topic: &str) -> Vec<(i64, i16, i64)> {
    let r = DescribeProducersRequest::default().with_topics(vec![
        describe_producers_request::TopicRequest::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partition_indexes(vec![0]),
    ]);
    let ResponseKind::DescribeProducers(r) = k
        .call(
            ApiKey::DescribeProducers,
            0,
            &RequestKind::DescribeProducers(r),
        )
        .unwrap()
    else {
        panic!()
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.active_producers
        .iter()
        .map(|a| {
            (
                a.producer_id.0,
                a.producer_epoch as i16,
                a.current_txn_start_offset,
            )
        })
        .collect()
}

/// KIP-664's tools: DescribeProducers shows a partition's open transaction (its first
/// offset), and WriteTxnMarkers from an operator ends it there: readers move on.
#[test]
fn an_operator_finds_and_ends_an_open_transaction() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(&tmp);
    let args = [
        "confluent",
        &server.kafka_addr(),
        "hold-prepared",
        "txn-hang",
    ];
    let mut holder = start_until(&mut script("txn.py", &args), "HOLDING");
    let mut k = BlockingClient::connect(&server.kafka_addr()).unwrap();
    let open: Vec<_> = producers(&mut k, "txn-hang")
        .into_iter()
        .filter(|p| p.2 >= 0)
        .collect();
    assert_eq!(
        open.len(),
        1,
        "one open transaction on partition 0: {open:?}"
    );
    let (pid, epoch, first) = open[0];
    let marker = write_txn_markers_request::WritableTxnMarker::default()
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_transaction_result(false)
        .with_topics(vec![
            write_txn_markers_request::WritableTxnMarkerTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("txn-hang")))
                .with_partition_indexes(vec![0]),
        ]);
    let r = WriteTxnMarkersRequest::default().with_markers(vec![marker]);
    let ResponseKind::WriteTxnMarkers(r) = k
        .call(ApiKey::WriteTxnMarkers, 1, &RequestKind::WriteTxnMarkers(r))
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(r.markers[0].topics[0].partitions[0].error_code, 0, "{r:?}");
    let after = producers(&mut k, "txn-hang");
    assert!(
        after.iter().all(|p| p.2 == -1),
        "no open transaction left: {after:?}"
    );
    assert!(first >= 0);
    let _ = holder.kill();
    let _ = holder.wait();
}

/// Lines of a running worker's stdout.
type WorkerLines = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// Starts a consume-transform-produce worker on `topic` (filled first) and waits until it
/// has committed 60 records; `survive`: it outlives a restart of the server.
fn worker_past_60(
    server: &ServerProc,
    topic: &str,
    survive: bool,
) -> (std::process::Child, WorkerLines) {
    use std::io::BufRead;
    run_txn(server, "fill", topic);
    let args = ["confluent", &server.kafka_addr(), "ctp-worker", topic];
    let mut cmd = script("txn.py", &args);
    if survive {
        // Without re-bootstrap: librdkafka's KIP-899 re-bootstrap of a one-broker cluster
        // leaves send_offsets_to_transaction() waiting for ever (librdkafka issue #5511).
        cmd.env("SURVIVE_RESTART", "1");
    }
    let mut worker = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(worker.stdout.take().unwrap()).lines();
    let mut progress = 0;
    while progress < 60 {
        let Some(Ok(line)) = lines.next() else {
            panic!("the worker ended before committing 60 records")
        };
        progress = line
            .strip_prefix("PROGRESS ")
            .map_or(progress, |n| n.parse().unwrap());
    }
    (worker, lines)
}

/// Exactly once across a kill -9 of the server: a consume-transform-produce worker runs
/// until part of the input is committed, the server is killed -9 under it (the worker
/// goes too, mid-transaction) and restarted; a new worker resumes from the group's
/// committed offsets once the interrupted transaction is aborted. The output then holds
/// each input exactly once (read_committed): none lost, none twice.
#[test]
fn consume_transform_produce_is_exactly_once_across_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server(&tmp);
    let (mut worker, _) = worker_past_60(&server, "txn-ctp-crash", false);
    server.kill9();
    let _ = worker.kill();
    let _ = worker.wait();
    server.respawn();
    run_txn(&server, "ctp-worker", "txn-ctp-crash");
    run_txn(&server, "check-output", "txn-ctp-crash");
}

/// The same pipeline, but the worker outlives the server: the server is killed -9 under a
/// running worker and restarted on the same port. The group's membership is stored (Kafka's
/// group-metadata records), so the worker's consumer is still a member after the restart
/// (its heartbeats and its transactional offset commits are accepted); the worker finishes
/// the input on its own and the output holds each input exactly once.
#[test]
fn a_worker_that_outlives_the_server_carries_on_exactly_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = server(&tmp);
    let (mut worker, mut lines) = worker_past_60(&server, "txn-ctp-survive", true);
    server.kill9();
    server.respawn();
    // The worker's own deadline (120 s) bounds this wait.
    let finished = lines.any(|line| line.is_ok_and(|l| l == "OK"));
    let status = worker.wait().unwrap();
    assert!(
        finished && status.success(),
        "the worker did not finish after the restart: {status}"
    );
    run_txn(&server, "check-output", "txn-ctp-survive");
}

fn init_producer_id(k: &mut BlockingClient) -> Result<i64, String> {
    let r = InitProducerIdRequest::default().with_transactional_id(None);
    match k.call(ApiKey::InitProducerId, 3, &RequestKind::InitProducerId(r)) {
        Ok(ResponseKind::InitProducerId(r)) if r.error_code == 0 => Ok(r.producer_id.0),
        other => Err(format!("InitProducerId: {other:?}")),
    }
}

/// Producer ids under concurrent InitProducerIds with blocks used up every few ids: each id
/// is handed out once (block writes are one at a time, never racing on the block file), and
/// after a kill -9 the ids go on past every id handed out before.
#[test]
fn concurrent_init_producer_ids_never_share_an_id() {
    let tmp = tempfile::tempdir().unwrap();
    let config = [("kafka.listen", "auto"), ("producer.id.block.size", "3")];
    let mut server = ServerProc::start(&tmp.path().join("data"), 2, &config);
    let kafka = server.kafka_addr();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let kafka = kafka.clone();
            std::thread::spawn(move || {
                let mut k = BlockingClient::connect(&kafka).unwrap();
                (0..30)
                    .map(|_| init_producer_id(&mut k))
                    .collect::<Result<Vec<_>, _>>()
            })
        })
        .collect();
    let ids: Vec<i64> = threads
        .into_iter()
        .flat_map(|t| {
            t.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("{e}; server log:\n{}", server.log_text()))
        })
        .collect();
    let distinct: std::collections::BTreeSet<i64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "an id was handed out twice");
    server.restart_after_kill();
    let after = init_producer_id(&mut BlockingClient::connect(&kafka).unwrap()).unwrap();
    assert!(
        after > *distinct.last().unwrap(),
        "id {after} after the restart"
    );
}
