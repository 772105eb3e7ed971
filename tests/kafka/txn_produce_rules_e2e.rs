//! Issue 39: a transactional Produce carries exactly one batch per partition, of the
//! producer whose transaction it claims. A second batch of another producer (one the
//! coordinator never heard of) used to be appended as transactional and hold the
//! partition's last stable offset for ever; Kafka refuses such a request with
//! INVALID_RECORD (87, `ProduceRequest.validateRecords`), and nothing of it is written.

use crate::common;

use bytes::Bytes;
use common::server_proc::ServerProc;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::format::batch::{set_producer, set_transactional};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;

const INVALID_RECORD: i16 = 87;
const TOPIC: &str = "txr";

fn batch(pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
    let mut b = BatchBuilder::new(64);
    b.push(RecordSpec::new(None, Some(b"v")).timestamp(shardlog::time::now_ms()));
    let mut bytes = b.build();
    set_producer(&mut bytes, pid, epoch, seq);
    set_transactional(&mut bytes);
    bytes
}

fn call(k: &mut BlockingClient, key: ApiKey, version: i16, r: RequestKind) -> ResponseKind {
    k.call(key, version, &r)
        .unwrap_or_else(|e| panic!("{key:?}: {e}"))
}

fn tid() -> TransactionalId {
    TransactionalId(StrBytes::from_static_str("rules"))
}

/// Produce v9 of `records` to the topic's partition 0 inside transaction "rules".
fn produce(k: &mut BlockingClient, records: Vec<u8>) -> (i16, String) {
    let r = ProduceRequest::default()
        .with_transactional_id(Some(tid()))
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(Bytes::from(records))),
            ])]);
    let ResponseKind::Produce(r) = call(k, ApiKey::Produce, 9, RequestKind::Produce(r)) else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    let message = p.error_message.as_ref().map(|m| m.to_string());
    (p.error_code, message.unwrap_or_default())
}

/// The partition's end, and its last stable offset (ListOffsets LATEST, read_committed).
fn ends(k: &mut BlockingClient) -> (i64, i64) {
    let mut at = |isolation| {
        let r = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(isolation)
            .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(vec![
                    list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ])]);
        let ResponseKind::ListOffsets(r) =
            call(k, ApiKey::ListOffsets, 5, RequestKind::ListOffsets(r))
        else {
            panic!()
        };
        r.topics[0].partitions[0].offset
    };
    (at(0), at(1))
}

/// A server with the one-partition topic, a Kafka client, and the transactional producer
/// "rules" initialised: (server, its temp dir, client, producer id, epoch).
fn transactional_setup() -> (ServerProc, tempfile::TempDir, BlockingClient, i64, i16) {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        c.create_topic(TOPIC, 1, vec![]).await.unwrap();
    });
    let mut k = BlockingClient::connect(&server.kafka_addr()).unwrap();
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid()))
        .with_transaction_timeout_ms(60_000);
    let ResponseKind::InitProducerId(init) = call(
        &mut k,
        ApiKey::InitProducerId,
        4,
        RequestKind::InitProducerId(init),
    ) else {
        panic!()
    };
    assert_eq!(init.error_code, 0, "{init:?}");
    (server, tmp, k, init.producer_id.0, init.producer_epoch)
}

#[test]
fn a_transactional_produce_with_a_foreign_second_batch_is_refused_whole() {
    let (_server, _tmp, mut k, pid, epoch) = transactional_setup();
    add_partition(&mut k, pid, epoch);

    // The producer's batch followed by one of a producer nobody verified.
    let mut two = batch(pid, epoch, 0);
    two.extend_from_slice(&batch(pid + 1_000, 0, 0));
    let (code, message) = produce(&mut k, two);
    assert_eq!(code, INVALID_RECORD, "{message}");
    assert!(message.contains("exactly one record batch"), "{message}");
    assert_eq!(
        ends(&mut k),
        (0, 0),
        "nothing of the refused request is written"
    );

    // One batch of a producer that is not the transaction's: refused by the coordinator.
    let (code, message) = produce(&mut k, batch(pid + 1_000, 0, 0));
    assert_ne!(
        code, 0,
        "a foreign producer's batch was accepted: {message}"
    );
    assert_eq!(ends(&mut k), (0, 0));

    // The producer's own batch, then commit: the last stable offset reaches the end.
    assert_eq!(produce(&mut k, batch(pid, epoch, 0)), (0, String::new()));
    end_txn(&mut k, pid, epoch, true);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ends(&mut k) != (2, 2) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(ends(&mut k), (2, 2), "record and commit marker, all stable");
}

fn values_batch(pid: i64, epoch: i16, seq: i32, values: &[&str]) -> Vec<u8> {
    let mut b = BatchBuilder::new(128);
    for v in values {
        b.push(RecordSpec::new(None, Some(v.as_bytes())).timestamp(shardlog::time::now_ms()));
    }
    let mut bytes = b.build();
    set_producer(&mut bytes, pid, epoch, seq);
    set_transactional(&mut bytes);
    bytes
}

/// AddPartitionsToTxn, retried while the previous transaction's markers are being written
/// (CONCURRENT_TRANSACTIONS, 51), as Kafka's producers do.
fn add_partition(k: &mut BlockingClient, pid: i64, epoch: i16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match try_add_partition(k, pid, epoch) {
            51 if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            code => return assert_eq!(code, 0),
        }
    }
}

fn try_add_partition(k: &mut BlockingClient, pid: i64, epoch: i16) -> i16 {
    let add = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(tid())
        .with_v3_and_below_producer_id(ProducerId(pid))
        .with_v3_and_below_producer_epoch(epoch)
        .with_v3_and_below_topics(vec![
            add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(vec![0]),
        ]);
    let ResponseKind::AddPartitionsToTxn(added) = call(
        k,
        ApiKey::AddPartitionsToTxn,
        3,
        RequestKind::AddPartitionsToTxn(add),
    ) else {
        panic!()
    };
    added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
}

fn end_txn(k: &mut BlockingClient, pid: i64, epoch: i16, commit: bool) {
    let end = EndTxnRequest::default()
        .with_transactional_id(tid())
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    let ResponseKind::EndTxn(end) = call(k, ApiKey::EndTxn, 3, RequestKind::EndTxn(end)) else {
        panic!()
    };
    assert_eq!(end.error_code, 0, "{end:?}");
}

fn plain_record(addr: &str, value: &'static str) {
    let addr = addr.to_string();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let mut b = BatchBuilder::new(64);
        b.push(RecordSpec::new(None, Some(value.as_bytes())).timestamp(shardlog::time::now_ms()));
        c.produce(TOPIC, 0, -1, Bytes::from(b.build()))
            .await
            .unwrap();
    });
}

/// `shardlog consume` of the topic to its end, one value per line.
fn consumed(addr: &str, isolation: Option<&str>) -> Vec<String> {
    let mut args = vec!["consume", "-b", addr, "--topic", TOPIC, "-e"];
    if let Some(level) = isolation {
        args.extend(["--isolation-level", level]);
    }
    let (out, err, ok) = common::cli::shardlog(&args, None);
    assert!(ok, "{err}");
    out.lines().map(str::to_string).collect()
}

/// Issue 39: `shardlog consume` printed aborted records and the commit/abort markers as
/// records. By default (read_committed, as librdkafka and kcat) it prints committed records
/// only and stops at the last stable offset; read_uncommitted prints every record; neither
/// prints a marker. `dump-log --deep-iteration` names the markers.
#[test]
fn consume_reads_committed_records_by_default_and_never_prints_markers() {
    let (server, tmp, mut k, pid, epoch) = transactional_setup();
    let addr = server.addr();
    let mut seq = 0;
    for (values, commit) in [
        (&["c1", "c2"][..], Some(true)),
        (&["a1"][..], Some(false)),
        (&["open1"][..], None),
    ] {
        if values == ["open1"] {
            plain_record(&addr, "plain");
        }
        add_partition(&mut k, pid, epoch);
        let (code, why) = produce(&mut k, values_batch(pid, epoch, seq, values));
        assert_eq!(code, 0, "{why}");
        seq += values.len() as i32;
        if let Some(commit) = commit {
            end_txn(&mut k, pid, epoch, commit);
        }
    }
    plain_record(&addr, "after-open");
    // c1 c2 COMMIT a1 ABORT plain open1 after-open: the last stable offset is open1's.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ends(&mut k) != (8, 6) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(ends(&mut k), (8, 6));
    assert_eq!(consumed(&addr, None), ["c1", "c2", "plain"]);
    assert_eq!(
        consumed(&addr, Some("read_committed")),
        ["c1", "c2", "plain"]
    );
    assert_eq!(
        consumed(&addr, Some("read_uncommitted")),
        ["c1", "c2", "a1", "plain", "open1", "after-open"]
    );
    let log = tmp
        .path()
        .join(format!("data/{TOPIC}-0/00000000000000000000.log"));
    let (out, err, ok) = common::cli::shardlog(
        &[
            "dump-log",
            "--deep-iteration",
            "--files",
            log.to_str().unwrap(),
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("endTxnMarker: COMMIT coordinatorEpoch:"),
        "{out}"
    );
    assert!(
        out.contains("endTxnMarker: ABORT coordinatorEpoch:"),
        "{out}"
    );
}
