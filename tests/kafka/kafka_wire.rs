//! The Kafka listener byte for byte, through a real server on loopback: every advertised
//! version of every API encoded with the kafka-protocol crate and its response decoded
//! with it; the ApiVersions v0 error reply; closed connections for what cannot be parsed;
//! idempotent retries; the long poll; and records produced through Kafka read back
//! byte-identical through the native protocol and dump-log.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::format::batch::set_producer;
use shardlog::format::compression::Codec;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::kafka::ADVERTISED;

/// The Kafka port of a test server: away from its native ports, inside the test range.
fn kafka_port(native: u16) -> u16 {
    if native > 20_000 {
        native - 5_000
    } else {
        native + 5_000
    }
}

/// A server with its Kafka listener on a port of its own; returns it and both addresses.
fn server(dir: &std::path::Path) -> (shardlog::server::ServerHandle, String, String) {
    let (handle, port) = common::start_server(dir, 2, |c| {
        c.kafka_listen = Some(SocketAddr::new(c.listen.ip(), kafka_port(c.listen.port())));
        c.group_initial_rebalance_delay_ms = 50;
        c.offsets_topic_num_partitions = 4;
    });
    let kafka = format!("127.0.0.1:{}", kafka_port(port));
    (handle, format!("127.0.0.1:{port}"), kafka)
}

/// The library's blocking Kafka client, with the API key taken from the request.
struct Conn(BlockingClient);

impl Conn {
    fn open(addr: &str) -> Conn {
        Conn(BlockingClient::connect(addr).unwrap())
    }

    fn send_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> i32 {
        self.0.send_raw(key, version, body).unwrap()
    }

    fn read_frame(&mut self) -> Option<Bytes> {
        self.0.read_frame()
    }

    fn call(&mut self, version: i16, request: RequestKind) -> ResponseKind {
        let key = api_key(&request);
        self.0
            .call(key, version, &request)
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"))
    }
}

fn api_key(r: &RequestKind) -> ApiKey {
    match r {
        RequestKind::ApiVersions(_) => ApiKey::ApiVersions,
        RequestKind::Metadata(_) => ApiKey::Metadata,
        RequestKind::Produce(_) => ApiKey::Produce,
        RequestKind::Fetch(_) => ApiKey::Fetch,
        RequestKind::ListOffsets(_) => ApiKey::ListOffsets,
        RequestKind::CreateTopics(_) => ApiKey::CreateTopics,
        RequestKind::DeleteTopics(_) => ApiKey::DeleteTopics,
        RequestKind::DescribeConfigs(_) => ApiKey::DescribeConfigs,
        RequestKind::InitProducerId(_) => ApiKey::InitProducerId,
        RequestKind::FindCoordinator(_) => ApiKey::FindCoordinator,
        RequestKind::JoinGroup(_) => ApiKey::JoinGroup,
        RequestKind::SyncGroup(_) => ApiKey::SyncGroup,
        RequestKind::Heartbeat(_) => ApiKey::Heartbeat,
        RequestKind::LeaveGroup(_) => ApiKey::LeaveGroup,
        RequestKind::OffsetCommit(_) => ApiKey::OffsetCommit,
        RequestKind::OffsetFetch(_) => ApiKey::OffsetFetch,
        RequestKind::DescribeGroups(_) => ApiKey::DescribeGroups,
        RequestKind::ListGroups(_) => ApiKey::ListGroups,
        RequestKind::DeleteGroups(_) => ApiKey::DeleteGroups,
        other => panic!("not used here: {other:?}"),
    }
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn versions(key: ApiKey) -> std::ops::RangeInclusive<i16> {
    let &(_, min, max) = ADVERTISED.iter().find(|(k, _, _)| *k == key).unwrap();
    min..=max
}

fn create(topic: &str, partitions: i32) -> RequestKind {
    RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)
            .with_configs(vec![create_topics_request::CreatableTopicConfig::default()
                .with_name(StrBytes::from_static_str("retention.ms"))
                .with_value(Some(StrBytes::from_static_str("3600000")))]),
    ]))
}

fn produce(topic: &str, partition: i32, records: Vec<u8>) -> RequestKind {
    RequestKind::Produce(
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(Bytes::from(records))),
                ])]),
    )
}

fn fetch(topic: &str, partitions: &[(i32, i64)], max_wait_ms: i32) -> RequestKind {
    RequestKind::Fetch(
        FetchRequest::default()
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![fetch_request::FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&(p, offset)| {
                            fetch_request::FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(1 << 20)
                        })
                        .collect(),
                )]),
    )
}

fn list_offsets(topic: &str, timestamp: i64) -> RequestKind {
    RequestKind::ListOffsets(ListOffsetsRequest::default().with_topics(vec![
        list_offsets_request::ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(timestamp)]),
    ]))
}

fn records(values: &[&str], ts: i64, codec: Codec) -> Vec<u8> {
    let mut b = BatchBuilder::new(256).compression(codec);
    for (i, v) in values.iter().enumerate() {
        b.push(
            RecordSpec::new(Some(b"key"), Some(v.as_bytes()))
                .timestamp(ts + i as i64)
                .header("h", Some(b"1")),
        );
    }
    b.build()
}

#[test]
fn every_advertised_version_of_every_api_round_trips_through_the_crate() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, _native, kafka) = server(tmp.path());
    let mut c = Conn::open(&kafka);
    let ts = shardlog::time::now_ms();
    for v in versions(ApiKey::ApiVersions) {
        let ResponseKind::ApiVersions(r) = c.call(v, RequestKind::ApiVersions(Default::default()))
        else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
        let table: Vec<_> = r
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        let want: Vec<_> = ADVERTISED
            .iter()
            .map(|&(k, a, b)| (k as i16, a, b))
            .collect();
        assert_eq!(table, want, "ApiVersions v{v}");
    }
    for v in versions(ApiKey::CreateTopics) {
        let ResponseKind::CreateTopics(r) = c.call(v, create(&format!("t{v}"), 2)) else {
            panic!()
        };
        assert_eq!(r.topics[0].error_code, 0, "CreateTopics v{v}: {r:?}");
        let ResponseKind::CreateTopics(again) = c.call(v, create(&format!("t{v}"), 2)) else {
            panic!()
        };
        assert_eq!(again.topics[0].error_code, 36, "CreateTopics v{v}");
    }
    assert!(
        matches!(c.call(7, create("wire", 1)), ResponseKind::CreateTopics(r) if r.topics[0].error_code == 0)
    );
    for v in versions(ApiKey::Metadata) {
        let topics = if v == 0 { Some(vec![]) } else { None };
        let ResponseKind::Metadata(r) = c.call(
            v,
            RequestKind::Metadata(MetadataRequest::default().with_topics(topics)),
        ) else {
            panic!()
        };
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(
            format!("{}:{}", r.brokers[0].host, r.brokers[0].port),
            kafka
        );
        let wire = r
            .topics
            .iter()
            .find(|t| t.name == Some(name("wire")))
            .unwrap();
        assert_eq!(
            (wire.error_code, wire.partitions.len()),
            (0, 1),
            "Metadata v{v}"
        );
        assert_eq!(wire.partitions[0].leader_epoch, -1);
        if v >= 1 {
            assert_eq!(r.controller_id, r.brokers[0].node_id, "Metadata v{v}");
        }
    }
    let mut produced = 0i64;
    for v in versions(ApiKey::Produce) {
        let batch = records(&["a", "b"], ts, Codec::None);
        let ResponseKind::Produce(r) = c.call(v, produce("wire", 0, batch)) else {
            panic!()
        };
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(
            (p.error_code, p.base_offset),
            (0, produced),
            "Produce v{v}: {p:?}"
        );
        assert_eq!(p.log_append_time_ms, -1, "CreateTime: no log append time");
        produced += 2;
    }
    for v in versions(ApiKey::Fetch) {
        let ResponseKind::Fetch(r) = c.call(v, fetch("wire", &[(0, 2)], 0)) else {
            panic!()
        };
        let p = &r.responses[0].partitions[0];
        assert_eq!(
            (p.error_code, p.high_watermark),
            (0, produced),
            "Fetch v{v}"
        );
        let data = p.records.clone().unwrap();
        let batches = shardlog::format::batch::split_batches(&data).unwrap();
        assert_eq!(batches[0].1.base_offset, 2, "the batch holding offset 2");
        assert_eq!(batches[0].1.partition_leader_epoch, -1, "stamped on append");
    }
    for v in versions(ApiKey::ListOffsets) {
        for (t, want) in [(-2, 0), (-1, produced), (ts + 1, 1), (ts + 10, -1)] {
            let ResponseKind::ListOffsets(r) = c.call(v, list_offsets("wire", t)) else {
                panic!()
            };
            let p = &r.topics[0].partitions[0];
            assert_eq!(
                (p.error_code, p.offset),
                (0, want),
                "ListOffsets v{v} t={t}"
            );
        }
    }
    for v in versions(ApiKey::DescribeConfigs) {
        let ResponseKind::DescribeConfigs(r) = c.call(
            v,
            RequestKind::DescribeConfigs(DescribeConfigsRequest::default().with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("wire"))
                    .with_configuration_keys(None),
            ])),
        ) else {
            panic!()
        };
        let retention = r.results[0]
            .configs
            .iter()
            .find(|c| c.name.as_str() == "retention.ms")
            .unwrap_or_else(|| panic!("DescribeConfigs v{v}: {r:?}"));
        assert_eq!(
            retention.value.as_deref(),
            Some("3600000"),
            "DescribeConfigs v{v}"
        );
        assert_eq!(retention.config_source, 1, "a topic override");
    }
    let mut ids = std::collections::BTreeSet::new();
    for v in versions(ApiKey::InitProducerId) {
        let ResponseKind::InitProducerId(r) = c.call(
            v,
            RequestKind::InitProducerId(
                InitProducerIdRequest::default().with_transactional_id(None),
            ),
        ) else {
            panic!()
        };
        assert_eq!(
            (r.error_code, r.producer_epoch),
            (0, 0),
            "InitProducerId v{v}"
        );
        assert!(ids.insert(r.producer_id.0), "producer ids are never reused");
    }
    for v in versions(ApiKey::DeleteTopics) {
        let request = DeleteTopicsRequest::default();
        let request = if v >= 6 {
            request.with_topics(vec![delete_topics_request::DeleteTopicState::default()
                .with_name(Some(name(&format!("t{}", v + 1))))])
        } else {
            request.with_topic_names(vec![name(&format!("t{}", v + 1))])
        };
        let ResponseKind::DeleteTopics(r) = c.call(v, RequestKind::DeleteTopics(request)) else {
            panic!()
        };
        assert_eq!(r.responses[0].error_code, 0, "DeleteTopics v{v}: {r:?}");
    }
}

#[test]
fn what_cannot_be_served_gets_kafkas_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, _native, kafka) = server(tmp.path());
    // ApiVersions newer than ours: the v0 error layout, body unread.
    let mut c = Conn::open(&kafka);
    let cid = c.send_raw(ApiKey::ApiVersions, 9, b"\x01\x02 whatever a v9 body holds");
    let frame = c.read_frame().unwrap();
    let (got, ResponseKind::ApiVersions(r)) =
        shardlog::kafka::decode_response(ApiKey::ApiVersions, 0, frame).unwrap()
    else {
        panic!()
    };
    assert_eq!((got, r.error_code), (cid, 35));
    assert!(r
        .api_keys
        .iter()
        .any(|k| k.api_key == 18 && k.max_version == 4));
    // The connection still serves.
    assert!(matches!(
        c.call(3, RequestKind::ApiVersions(Default::default())),
        ResponseKind::ApiVersions(r) if r.error_code == 0
    ));
    // A version we do not advertise, an API we do not serve, a body that does not decode:
    // the connection is closed (as a Kafka broker does), the server serves everyone else.
    for (key, version, body) in [
        (ApiKey::Fetch, 13, &b""[..]),
        (ApiKey::OffsetForLeaderEpoch, 4, &b""[..]),
        (ApiKey::Metadata, 4, &b"\xff\xff\xff\x7f"[..]),
    ] {
        let mut c = Conn::open(&kafka);
        c.send_raw(key, version, body);
        assert!(c.read_frame().is_none(), "{key:?} v{version}");
    }
    // Arrays declaring 2^31 elements in a few bytes (the crate allocates by the count before
    // reading): the connection is closed, the process lives on.
    let huge = 0x7fff_fff0i32.to_be_bytes();
    let produce_v3 = [
        &(-1i16).to_be_bytes()[..],
        &(-1i16).to_be_bytes(),
        &1000i32.to_be_bytes(),
        &huge,
    ]
    .concat();
    let fetch_v4 = [
        &(-1i32).to_be_bytes()[..],
        &0i32.to_be_bytes(),
        &1i32.to_be_bytes(),
        &1i32.to_be_bytes(),
        &[0u8],
        &huge,
    ]
    .concat();
    let metadata_v9 = [0xffu8, 0xff, 0xff, 0xff, 0x07];
    for (key, version, body) in [
        (ApiKey::Metadata, 1, &huge[..]),
        (ApiKey::Produce, 3, &produce_v3[..]),
        (ApiKey::Fetch, 4, &fetch_v4[..]),
        (ApiKey::Metadata, 9, &metadata_v9[..]),
    ] {
        let mut c = Conn::open(&kafka);
        c.send_raw(key, version, body);
        assert!(
            c.read_frame().is_none(),
            "{key:?} v{version} with a huge array count"
        );
    }
    assert!(
        matches!(
            Conn::open(&kafka).call(3, RequestKind::ApiVersions(Default::default())),
            ResponseKind::ApiVersions(r) if r.error_code == 0
        ),
        "the server lives on"
    );
    // Unknown topics and partitions: per-partition errors, every requested one listed.
    let mut c = Conn::open(&kafka);
    let ResponseKind::Fetch(r) = c.call(12, fetch("nope", &[(0, 0), (7, 0)], 0)) else {
        panic!()
    };
    let codes: Vec<i16> = r.responses[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    assert_eq!(codes, vec![3, 3]);
    let ResponseKind::CreateTopics(r) = c.call(
        7,
        RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(name("rf3"))
                .with_num_partitions(1)
                .with_replication_factor(3),
        ])),
    ) else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 38, "INVALID_REPLICATION_FACTOR");
    // A produce of garbage records: CORRUPT_MESSAGE / INVALID_RECORD, nothing written.
    c.call(7, create("g", 1));
    let ResponseKind::Produce(r) = c.call(9, produce("g", 0, vec![0u8; 70])) else {
        panic!()
    };
    assert_ne!(r.responses[0].partition_responses[0].error_code, 0);
    // A transactional id with a timeout it cannot have: INVALID_TRANSACTION_TIMEOUT, then
    // a valid one gets its producer id at epoch 0.
    let init = |timeout_ms: i32| {
        RequestKind::InitProducerId(
            InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx"))))
                .with_transaction_timeout_ms(timeout_ms),
        )
    };
    let ResponseKind::InitProducerId(r) = c.call(4, init(0)) else {
        panic!()
    };
    assert_eq!(r.error_code, 50);
    let ResponseKind::InitProducerId(r) = c.call(4, init(60_000)) else {
        panic!()
    };
    assert_eq!((r.error_code, r.producer_epoch), (0, 0), "{r:?}");
    assert!(r.producer_id.0 >= 0);
}

#[test]
fn idempotent_retries_through_kafka_get_the_original_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, _native, kafka) = server(tmp.path());
    let mut c = Conn::open(&kafka);
    c.call(7, create("idem", 1));
    let ResponseKind::InitProducerId(id) = c.call(
        4,
        RequestKind::InitProducerId(InitProducerIdRequest::default().with_transactional_id(None)),
    ) else {
        panic!()
    };
    assert_eq!(id.error_code, 0, "{id:?}");
    let ts = shardlog::time::now_ms();
    let batch = |seq: i32| {
        let mut b = records(&["x", "y", "z"], ts, Codec::Lz4);
        set_producer(&mut b, id.producer_id.0, 0, seq);
        b
    };
    let send = |c: &mut Conn, b: Vec<u8>| {
        let ResponseKind::Produce(r) = c.call(10, produce("idem", 0, b)) else {
            panic!()
        };
        let p = r.responses[0].partition_responses[0].clone();
        (p.error_code, p.base_offset)
    };
    assert_eq!(send(&mut c, batch(0)), (0, 0));
    assert_eq!(
        send(&mut c, batch(0)),
        (0, 0),
        "a retry is not stored twice"
    );
    assert_eq!(send(&mut c, batch(3)), (0, 3));
    assert_eq!(send(&mut c, batch(9)).0, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    let ResponseKind::ListOffsets(r) = c.call(7, list_offsets("idem", -1)) else {
        panic!()
    };
    assert_eq!(r.topics[0].partitions[0].offset, 6);
}

#[test]
fn a_fetch_at_the_end_waits_for_an_append_and_returns_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, _native, kafka) = server(tmp.path());
    let mut c = Conn::open(&kafka);
    c.call(7, create("poll", 1));
    let producer_addr = kafka.clone();
    let ts = shardlog::time::now_ms();
    let appender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let mut p = Conn::open(&producer_addr);
        p.call(9, produce("poll", 0, records(&["late"], ts, Codec::Snappy)));
    });
    let started = Instant::now();
    // Waits up to 20 s; the append 300 ms in must end it, with the record in the reply.
    let ResponseKind::Fetch(r) = c.call(12, fetch("poll", &[(0, 0)], 20_000)) else {
        panic!()
    };
    let waited = started.elapsed();
    appender.join().unwrap();
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.high_watermark, 1);
    assert!(
        !p.records.as_ref().unwrap().is_empty(),
        "woken by the append"
    );
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    // Nothing to wait for: max_wait 0 answers at once, with no records.
    let ResponseKind::Fetch(r) = c.call(12, fetch("poll", &[(0, 1)], 0)) else {
        panic!()
    };
    assert!(r.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap()
        .is_empty());
}

#[test]
fn records_produced_through_kafka_read_back_byte_identical_natively_and_in_dump_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, native, kafka) = server(tmp.path());
    let mut c = Conn::open(&kafka);
    c.call(7, create("x", 1));
    let ts = shardlog::time::now_ms();
    let sent: Vec<Vec<u8>> = Codec::ALL
        .iter()
        .map(|&codec| records(&["one", "two", "three"], ts, codec))
        .collect();
    for b in &sent {
        c.call(10, produce("x", 0, b.clone()));
    }
    let fetched = common::client(move || async move {
        let mut n = shardlog::client::Client::connect(&native).await.unwrap();
        n.fetch("x", 0, 0, 1 << 20).await.unwrap().records
    });
    let batches = shardlog::format::batch::split_batches(&fetched).unwrap();
    assert_eq!(batches.len(), sent.len());
    for ((start, h), original) in batches.iter().zip(&sent) {
        let stored = &fetched[*start..start + h.size()];
        // Only baseOffset and partitionLeaderEpoch (outside the CRC) are the log's.
        assert_eq!(&stored[12..16], &(-1i32).to_be_bytes());
        assert_eq!(&stored[16..], &original[16..], "codec {}", h.compression());
    }
    let dump = std::process::Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["dump-log", "--print-data-log", "--files"])
        .arg(tmp.path().join("x-0").join("00000000000000000000.log"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(dump.status.success(), "{text}");
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        assert!(
            text.contains(&format!("compresscodec: {codec}")),
            "{codec}: {text}"
        );
    }
    assert_eq!(text.matches("payload: three").count(), 5, "{text}");
}

fn gid(g: &str) -> GroupId {
    GroupId(StrBytes::from_string(g.to_string()))
}

/// A one-member group through JoinGroup `v` (and SyncGroup `sv`): (member id, generation).
fn form_group(c: &mut Conn, v: i16, sv: i16, group: &str) -> (StrBytes, i32) {
    let mut member = StrBytes::default();
    loop {
        let join = JoinGroupRequest::default()
            .with_group_id(gid(group))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(member.clone())
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
            )
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(Bytes::from_static(b"meta"))]);
        let ResponseKind::JoinGroup(j) = c.call(v, RequestKind::JoinGroup(join)) else {
            panic!()
        };
        if j.error_code == 79 {
            assert!(v >= 4, "MEMBER_ID_REQUIRED only from v4");
            member = j.member_id;
            continue;
        }
        assert_eq!(j.error_code, 0, "JoinGroup v{v}: {j:?}");
        assert_eq!(j.leader, j.member_id, "the only member leads");
        assert_eq!(j.members.len(), 1);
        assert_eq!(j.members[0].metadata, Bytes::from_static(b"meta"));
        let sync = SyncGroupRequest::default()
            .with_group_id(gid(group))
            .with_generation_id(j.generation_id)
            .with_member_id(j.member_id.clone())
            .with_assignments(vec![
                sync_group_request::SyncGroupRequestAssignment::default()
                    .with_member_id(j.member_id.clone())
                    .with_assignment(Bytes::from_static(b"assigned")),
            ]);
        let ResponseKind::SyncGroup(r) = c.call(sv, RequestKind::SyncGroup(sync)) else {
            panic!()
        };
        assert_eq!(
            (r.error_code, r.assignment.as_ref()),
            (0, &b"assigned"[..]),
            "SyncGroup v{sv}"
        );
        return (j.member_id, j.generation_id);
    }
}

#[test]
fn every_advertised_version_of_the_group_apis_round_trips_through_the_crate() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, _native, kafka) = server(tmp.path());
    let mut c = Conn::open(&kafka);
    c.call(7, create("gt", 2));
    for v in versions(ApiKey::FindCoordinator) {
        let r = if v >= 4 {
            FindCoordinatorRequest::default()
                .with_coordinator_keys(vec![StrBytes::from_static_str("g")])
        } else {
            FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g"))
        };
        let ResponseKind::FindCoordinator(r) = c.call(v, RequestKind::FindCoordinator(r)) else {
            panic!()
        };
        let port = if v >= 4 {
            r.coordinators[0].port
        } else {
            r.port
        };
        assert_eq!(format!("127.0.0.1:{port}"), kafka, "FindCoordinator v{v}");
    }
    for v in versions(ApiKey::JoinGroup) {
        let sv = v.min(5);
        let group = format!("g{v}");
        let (member, generation) = form_group(&mut c, v, sv, &group);
        for hv in versions(ApiKey::Heartbeat) {
            let hb = HeartbeatRequest::default()
                .with_group_id(gid(&group))
                .with_generation_id(generation)
                .with_member_id(member.clone());
            let ResponseKind::Heartbeat(r) = c.call(hv, RequestKind::Heartbeat(hb)) else {
                panic!()
            };
            assert_eq!(r.error_code, 0, "Heartbeat v{hv}");
        }
        let cv = (v + 2).clamp(2, 8);
        let commit = OffsetCommitRequest::default()
            .with_group_id(gid(&group))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(member.clone())
            .with_topics(vec![
                offset_commit_request::OffsetCommitRequestTopic::default()
                    .with_name(name("gt"))
                    .with_partitions(vec![
                        offset_commit_request::OffsetCommitRequestPartition::default()
                            .with_partition_index(1)
                            .with_committed_offset(42),
                    ]),
            ]);
        let ResponseKind::OffsetCommit(r) = c.call(cv, RequestKind::OffsetCommit(commit)) else {
            panic!()
        };
        assert_eq!(
            r.topics[0].partitions[0].error_code, 0,
            "OffsetCommit v{cv}"
        );
        let lv = v.min(5);
        let leave = if lv >= 3 {
            LeaveGroupRequest::default()
                .with_group_id(gid(&group))
                .with_members(vec![
                    leave_group_request::MemberIdentity::default().with_member_id(member.clone())
                ])
        } else {
            LeaveGroupRequest::default()
                .with_group_id(gid(&group))
                .with_member_id(member.clone())
        };
        let ResponseKind::LeaveGroup(r) = c.call(lv, RequestKind::LeaveGroup(leave)) else {
            panic!()
        };
        let code = if lv >= 3 {
            r.members[0].error_code
        } else {
            r.error_code
        };
        assert_eq!(code, 0, "LeaveGroup v{lv}");
    }
    for v in versions(ApiKey::OffsetFetch) {
        let r = if v >= 8 {
            OffsetFetchRequest::default().with_groups(vec![
                offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(gid("g3"))
                    .with_topics(None),
            ])
        } else {
            OffsetFetchRequest::default()
                .with_group_id(gid("g3"))
                .with_topics(Some(vec![
                    offset_fetch_request::OffsetFetchRequestTopic::default()
                        .with_name(name("gt"))
                        .with_partition_indexes(vec![0, 1]),
                ]))
        };
        let ResponseKind::OffsetFetch(r) = c.call(v, RequestKind::OffsetFetch(r)) else {
            panic!()
        };
        let offsets: Vec<(i32, i64)> = if v >= 8 {
            r.groups[0].topics[0]
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset))
                .collect()
        } else {
            r.topics[0]
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset))
                .collect()
        };
        let want = if v >= 8 {
            vec![(1, 42)]
        } else {
            vec![(0, -1), (1, 42)]
        };
        assert_eq!(offsets, want, "OffsetFetch v{v}");
    }
    for v in versions(ApiKey::ListGroups) {
        let ResponseKind::ListGroups(r) = c.call(v, RequestKind::ListGroups(Default::default()))
        else {
            panic!()
        };
        assert_eq!(r.groups.len(), 8, "ListGroups v{v}: {r:?}");
    }
    // v4+ filter by state, v5+ by type (every group here is a classic one).
    let mut filtered = |states: &[&str], types: &[&str]| {
        let r = ListGroupsRequest::default()
            .with_states_filter(states.iter().map(|s| name(s).0).collect())
            .with_types_filter(types.iter().map(|s| name(s).0).collect());
        let ResponseKind::ListGroups(r) = c.call(5, RequestKind::ListGroups(r)) else {
            panic!()
        };
        r.groups.len()
    };
    assert_eq!(filtered(&["Empty"], &[]), 8);
    assert_eq!(filtered(&["Stable"], &[]), 0);
    assert_eq!(filtered(&[], &["Classic"]), 8);
    assert_eq!(filtered(&[], &["consumer"]), 0);
    for v in versions(ApiKey::DescribeGroups) {
        let r = DescribeGroupsRequest::default().with_groups(vec![gid("g7"), gid("none")]);
        let ResponseKind::DescribeGroups(r) = c.call(v, RequestKind::DescribeGroups(r)) else {
            panic!()
        };
        let states: Vec<&str> = r.groups.iter().map(|g| g.group_state.as_str()).collect();
        assert_eq!(states, ["Empty", "Dead"], "DescribeGroups v{v}");
    }
    for v in versions(ApiKey::DeleteGroups) {
        let r = DeleteGroupsRequest::default().with_groups_names(vec![gid(&format!("g{v}"))]);
        let ResponseKind::DeleteGroups(r) = c.call(v, RequestKind::DeleteGroups(r)) else {
            panic!()
        };
        assert_eq!(r.results[0].error_code, 0, "DeleteGroups v{v}");
    }
}
