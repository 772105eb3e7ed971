//! Issue 39: a connection's pipelined produces reach their partitions in request order, as
//! Kafka handles a connection's requests one after another. One connection writes many
//! Produce requests before reading any reply, each to a different subset of topics owned by
//! both shards (a request to three topics followed by one to the last of them, which used
//! to overtake it); every topic's records must then be in request order, and an idempotent
//! producer's sequences must all be accepted. Both listeners, idempotent and not.

use crate::common;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use common::server_proc::ServerProc;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use shardlog::format::batch::set_producer;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::protocol::multi::ProduceEntry;
use shardlog::protocol::{ApiKey as NativeKey, Request, ResponseBody};

const TOPICS: [&str; 4] = ["o0", "o1", "o2", "o3"];
const REQUESTS: usize = 60;

/// The topics request `i` writes to: all of them, then only the last, then two, ...: a
/// later request's first topic is an earlier multi-topic request's later one.
fn subset(i: usize) -> Vec<usize> {
    match i % 4 {
        0 => vec![0, 1, 2, 3],
        1 => vec![3],
        2 => vec![1, 3],
        _ => vec![2, 0],
    }
}

/// Request `i`'s batch for one topic: two records valued "i", of producer `pid` (or none)
/// at `seq`.
fn batch(i: usize, producer: Option<(i64, i32)>) -> Bytes {
    let value = i.to_string();
    let mut b = BatchBuilder::new(64);
    for _ in 0..2 {
        b.push(RecordSpec::new(None, Some(value.as_bytes())).timestamp(1_700_000_000_000));
    }
    let mut bytes = b.build();
    if let Some((pid, seq)) = producer {
        set_producer(&mut bytes, pid, 0, seq);
    }
    Bytes::from(bytes)
}

/// Every topic's request numbers, in offset order, read back through the native listener.
fn request_order(server: &ServerProc) -> Vec<Vec<usize>> {
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let mut all = Vec::new();
        for t in TOPICS {
            let records = common::read_records(&mut c, t, 0).await;
            all.push(records.iter().map(|(_, v)| v.parse().unwrap()).collect());
        }
        all
    })
}

/// Each topic holds every request that wrote to it, twice each, in request order.
fn assert_in_request_order(server: &ServerProc, protocol: &str) {
    let order = request_order(server);
    for (t, got) in order.iter().enumerate() {
        let expected: Vec<usize> = (0..REQUESTS)
            .filter(|i| subset(*i).contains(&t))
            .flat_map(|i| [i, i])
            .collect();
        assert_eq!(
            got, &expected,
            "{protocol}: topic {} holds requests out of request order",
            TOPICS[t]
        );
    }
}

fn start() -> (tempfile::TempDir, ServerProc) {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        for t in TOPICS {
            c.create_topic(t, 1, vec![]).await.unwrap();
        }
    });
    (tmp, server)
}

/// Per topic, the next sequence of an idempotent producer.
struct Sequences([i32; TOPICS.len()]);

impl Sequences {
    fn take(&mut self, t: usize) -> i32 {
        let seq = self.0[t];
        self.0[t] += 2;
        seq
    }
}

fn kafka_produce(i: usize, producer: Option<i64>, seqs: &mut Sequences) -> Vec<u8> {
    let topics = subset(i)
        .into_iter()
        .map(|t| {
            let records = batch(i, producer.map(|pid| (pid, seqs.take(t))));
            produce_request::TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPICS[t])))
                .with_partition_data(vec![produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(records))])
        })
        .collect();
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(topics);
    let mut body = BytesMut::new();
    request.encode(&mut body, 9).unwrap();
    body.to_vec()
}

fn init_producer_id(c: &mut BlockingClient) -> i64 {
    let r = InitProducerIdRequest::default().with_transactional_id(None);
    match c.call(ApiKey::InitProducerId, 3, &RequestKind::InitProducerId(r)) {
        Ok(ResponseKind::InitProducerId(r)) if r.error_code == 0 => r.producer_id.0,
        other => panic!("InitProducerId: {other:?}"),
    }
}

/// Writes every request, then reads every reply: all accepted.
fn kafka_pipeline(server: &ServerProc, idempotent: bool) {
    let mut c = BlockingClient::connect_with_timeout(&server.kafka_addr(), Duration::from_secs(30))
        .unwrap();
    let producer = idempotent.then(|| init_producer_id(&mut c));
    let mut seqs = Sequences([0; TOPICS.len()]);
    for i in 0..REQUESTS {
        c.send_raw(ApiKey::Produce, 9, &kafka_produce(i, producer, &mut seqs))
            .unwrap();
    }
    for i in 0..REQUESTS {
        let frame = c.read_frame().expect("a reply to every request");
        let (_, reply) = shardlog::kafka::decode_response(ApiKey::Produce, 9, frame).unwrap();
        let ResponseKind::Produce(reply) = reply else {
            panic!("{reply:?}")
        };
        for p in reply.responses.iter().flat_map(|t| &t.partition_responses) {
            assert_eq!(p.error_code, 0, "request {i}: {p:?}");
        }
    }
}

#[test]
fn pipelined_kafka_produces_land_in_request_order() {
    let (_tmp, server) = start();
    kafka_pipeline(&server, false);
    assert_in_request_order(&server, "kafka");
}

#[test]
fn pipelined_idempotent_kafka_produces_keep_their_sequences() {
    let (_tmp, server) = start();
    kafka_pipeline(&server, true);
    assert_in_request_order(&server, "kafka, idempotent");
}

/// Native MultiProduce, pipelined the same way (a native producer's idempotence is the
/// same engine check).
fn native_pipeline(server: &ServerProc, producer: Option<i64>) {
    let addr = server.addr();
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let mut seqs = Sequences([0; TOPICS.len()]);
        for i in 0..REQUESTS {
            let partitions = subset(i)
                .into_iter()
                .map(|t| ProduceEntry {
                    topic: TOPICS[t].to_string(),
                    partition: 0,
                    records: batch(i, producer.map(|pid| (pid, seqs.take(t)))),
                })
                .collect();
            c.send(&Request::MultiProduce {
                acks: -1,
                partitions,
            })
            .await
            .unwrap();
        }
        for i in 0..REQUESTS {
            let reply = c.recv(NativeKey::MultiProduce).await.unwrap();
            let Ok(ResponseBody::MultiProduce(all)) = reply.result else {
                panic!("request {i}: {:?}", reply.result)
            };
            for p in all {
                assert_eq!(p.error, None, "request {i}: {p:?}");
            }
        }
    });
}

#[test]
fn pipelined_native_produces_land_in_request_order() {
    let (_tmp, server) = start();
    native_pipeline(&server, None);
    assert_in_request_order(&server, "native");
    let (_tmp, server) = start();
    native_pipeline(&server, Some(7_000));
    assert_in_request_order(&server, "native, idempotent");
}
