//! The admin APIs Kafka's tools call, byte for byte through a real server's Kafka listener
//! (every advertised version, encoded and decoded with the kafka-protocol crate):
//! DeleteRecords, DescribeCluster, IncrementalAlterConfigs, AlterConfigs, DescribeConfigs
//! of the broker, ElectLeaders on one node, and authorized operations in Metadata and
//! DescribeGroups.

use crate::common;

use bytes::Bytes;
use common::server_proc::ServerProc;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::catalog::broker_defaults::{BROKER_SYNONYMS, INERT_BROKER_KEYS};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;
use shardlog::kafka::ADVERTISED;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;

fn versions(key: ApiKey) -> std::ops::RangeInclusive<i16> {
    let &(_, min, max) = ADVERTISED.iter().find(|(k, _, _)| *k == key).unwrap();
    min..=max
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

struct Kafka(BlockingClient);

impl Kafka {
    fn call(&mut self, key: ApiKey, v: i16, r: RequestKind) -> ResponseKind {
        self.0
            .call(key, v, &r)
            .unwrap_or_else(|e| panic!("{key:?} v{v}: {e}"))
    }
}

fn server(tmp: &tempfile::TempDir) -> (ServerProc, Kafka) {
    let server = ServerProc::start(&tmp.path().join("data"), 2, &[("kafka.listen", "auto")]);
    let kafka = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    (server, kafka)
}

/// Creates `topic` and writes `records` one-record batches to partition 0 (natively).
fn topic_with_records(server: &ServerProc, topic: &str, records: usize) {
    let (addr, topic) = (server.addr(), topic.to_string());
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        c.create_topic(&topic, 1, vec![]).await.unwrap();
        for i in 0..records {
            let (mut b, value) = (BatchBuilder::new(64), format!("r{i}"));
            b.push(RecordSpec::new(None, Some(value.as_bytes())).timestamp(1));
            c.produce(&topic, 0, -1, Bytes::from(b.build()))
                .await
                .unwrap();
        }
    });
}

fn delete_records(k: &mut Kafka, v: i16, topic: &str, offset: i64) -> (i16, i64) {
    let r = DeleteRecordsRequest::default()
        .with_timeout_ms(5_000)
        .with_topics(vec![delete_records_request::DeleteRecordsTopic::default()
            .with_name(TopicName(s(topic)))
            .with_partitions(vec![
                delete_records_request::DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(offset),
            ])]);
    let ResponseKind::DeleteRecords(r) =
        k.call(ApiKey::DeleteRecords, v, RequestKind::DeleteRecords(r))
    else {
        panic!()
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.low_watermark)
}

#[test]
fn delete_records_moves_the_low_watermark_and_refuses_what_is_out_of_range() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    topic_with_records(&server, "dr", 10);
    let mut low = 0;
    for v in versions(ApiKey::DeleteRecords) {
        low += 2;
        assert_eq!(delete_records(&mut k, v, "dr", low), (0, low), "v{v}");
        // Never back: an offset below the low watermark leaves it where it is.
        assert_eq!(delete_records(&mut k, v, "dr", 1), (0, low), "v{v}");
        assert_eq!(
            delete_records(&mut k, v, "dr", 11).0,
            1,
            "OFFSET_OUT_OF_RANGE v{v}"
        );
        assert_eq!(
            delete_records(&mut k, v, "nope", 0).0,
            3,
            "UNKNOWN_TOPIC v{v}"
        );
    }
    // -1: up to the high watermark.
    assert_eq!(delete_records(&mut k, 2, "dr", -1), (0, 10));
    assert_eq!(
        delete_records(&mut k, 2, "__consumer_offsets", 0).0,
        17,
        "internal topic"
    );
}

/// ElectLeaders of `election_type` for `asked` (None: every partition): (top error,
/// [(topic, partition, error)]).
fn elect(
    k: &mut Kafka,
    v: i16,
    election_type: i8,
    asked: Option<&[(&str, &[i32])]>,
) -> (i16, Vec<(String, i32, i16)>) {
    let request = common::elect::request(election_type, asked);
    let ResponseKind::ElectLeaders(r) =
        k.call(ApiKey::ElectLeaders, v, RequestKind::ElectLeaders(request))
    else {
        panic!("not an ElectLeaders answer")
    };
    common::elect::results(&r)
}

#[test]
fn elect_leaders_on_one_node_finds_every_partition_led_by_its_only_replica() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    topic_with_records(&server, "t", 1);
    for v in versions(ApiKey::ElectLeaders) {
        // v0 has no election type: PREFERRED.
        for election_type in if v == 0 { 0..=0 } else { 0..=1 } {
            let asked: &[(&str, &[i32])] = &[("t", &[0, 1, -1]), ("absent", &[0])];
            let (top, results) = elect(&mut k, v, election_type, Some(asked));
            assert_eq!(top, 0, "v{v}");
            let expected = [("t", 0, 84), ("t", 1, 3), ("t", -1, 3), ("absent", 0, 3)];
            let expected: Vec<(String, i32, i16)> = (expected.iter())
                .map(|(t, p, e)| (t.to_string(), *p, *e))
                .collect();
            assert_eq!(
                results, expected,
                "v{v}: ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION"
            );
        }
        assert_eq!(
            elect(&mut k, v, 0, None),
            (0, Vec::new()),
            "v{v}: nothing needed"
        );
    }
    assert_eq!(
        elect(&mut k, 1, 7, None).0,
        42,
        "an unknown election type: INVALID_REQUEST"
    );
}

/// The cluster id the data directory holds (created at its first start).
fn cluster_id(tmp: &tempfile::TempDir) -> String {
    let id = std::fs::read_to_string(tmp.path().join("data/cluster-id")).unwrap();
    assert_eq!(id.len(), 32, "32 hex digits: {id:?}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id:?}");
    id
}

/// Metadata's cluster id, v2 and later.
fn metadata_cluster_id(k: &mut Kafka, v: i16) -> Option<String> {
    let request = MetadataRequest::default().with_topics(None);
    let ResponseKind::Metadata(m) = k.call(ApiKey::Metadata, v, RequestKind::Metadata(request))
    else {
        panic!()
    };
    m.cluster_id.map(|id| id.to_string())
}

#[test]
fn the_cluster_id_is_the_data_directorys_own_and_outlives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, mut k) = server(&tmp);
    let id = cluster_id(&tmp);
    for v in versions(ApiKey::Metadata).filter(|v| *v >= 2) {
        assert_eq!(metadata_cluster_id(&mut k, v).as_ref(), Some(&id), "v{v}");
    }
    drop((k, first));
    let (_server, mut k) = server(&tmp);
    assert_eq!(cluster_id(&tmp), id, "the file is not rewritten");
    let newest = *versions(ApiKey::Metadata).end();
    assert_eq!(
        metadata_cluster_id(&mut k, newest),
        Some(id),
        "after a restart"
    );
    let other = tempfile::tempdir().unwrap();
    let (_other_server, _k) = server(&other);
    assert_ne!(
        cluster_id(&other),
        cluster_id(&tmp),
        "each data directory its own"
    );
}

#[test]
fn describe_cluster_names_this_broker_and_its_operations_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    for v in versions(ApiKey::DescribeCluster) {
        for asked in [false, true] {
            let r =
                DescribeClusterRequest::default().with_include_cluster_authorized_operations(asked);
            let ResponseKind::DescribeCluster(r) =
                k.call(ApiKey::DescribeCluster, v, RequestKind::DescribeCluster(r))
            else {
                panic!()
            };
            assert_eq!(
                (r.error_code, r.cluster_id.as_str()),
                (0, cluster_id(&tmp).as_str()),
                "v{v}"
            );
            assert_eq!(r.controller_id.0, 0);
            let b = &r.brokers[0];
            assert_eq!(
                format!("{}:{}", b.host, b.port),
                server.kafka_addr(),
                "v{v}"
            );
            // Every cluster operation without an authorizer, i32::MIN when not asked.
            let want = if asked { 0b1_1111_1010_0000 } else { i32::MIN };
            assert_eq!(r.cluster_authorized_operations, want, "v{v} asked={asked}");
        }
    }
    // Metadata v8-10 and DescribeGroups v3+ report operations when asked, too.
    let ResponseKind::Metadata(m) = k.call(
        ApiKey::Metadata,
        10,
        RequestKind::Metadata(
            MetadataRequest::default()
                .with_topics(None)
                .with_include_topic_authorized_operations(true),
        ),
    ) else {
        panic!()
    };
    assert!(m
        .topics
        .iter()
        .all(|t| t.topic_authorized_operations == 0b1101_1111_1000));
    let ResponseKind::DescribeGroups(g) = k.call(
        ApiKey::DescribeGroups,
        5,
        RequestKind::DescribeGroups(
            DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(s("nobody"))])
                .with_include_authorized_operations(true),
        ),
    ) else {
        panic!()
    };
    assert_eq!(g.groups[0].authorized_operations, 0b1_0100_1000);
}

/// (name, value, source) of every config DescribeConfigs v4 gives for a resource.
fn configs_of(k: &mut Kafka, kind: i8, name: &str) -> Vec<(String, String, i8)> {
    let r = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))
            .with_configuration_keys(None),
    ]);
    let ResponseKind::DescribeConfigs(r) =
        k.call(ApiKey::DescribeConfigs, 4, RequestKind::DescribeConfigs(r))
    else {
        panic!()
    };
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    r.results[0]
        .configs
        .iter()
        .map(|c| {
            (
                c.name.to_string(),
                c.value.as_ref().unwrap().to_string(),
                c.config_source,
            )
        })
        .collect()
}

fn topic_configs(k: &mut Kafka, topic: &str) -> Vec<(String, String, i8)> {
    configs_of(k, TOPIC, topic)
}

fn value(configs: &[(String, String, i8)], key: &str) -> (String, i8) {
    let (_, v, source) = configs.iter().find(|c| c.0 == key).unwrap();
    (v.clone(), *source)
}

fn incremental(
    k: &mut Kafka,
    v: i16,
    kind: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, String) {
    let configs = ops
        .iter()
        .map(|&(key, op, val)| {
            incremental_alter_configs_request::AlterableConfig::default()
                .with_name(s(key))
                .with_config_operation(op)
                .with_value(val.map(s))
        })
        .collect();
    let r = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(kind)
                .with_resource_name(s(name))
                .with_configs(configs),
        ]);
    let ResponseKind::IncrementalAlterConfigs(r) = k.call(
        ApiKey::IncrementalAlterConfigs,
        v,
        RequestKind::IncrementalAlterConfigs(r),
    ) else {
        panic!()
    };
    let res = &r.responses[0];
    (
        res.error_code,
        res.error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

#[test]
fn incremental_alter_configs_sets_deletes_appends_and_subtracts_topic_configs() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    topic_with_records(&server, "cfg", 0);
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        let set = [("retention.ms", 0, Some("1000"))];
        assert_eq!(
            incremental(&mut k, v, TOPIC, "cfg", &set, false).0,
            0,
            "v{v}"
        );
        assert_eq!(
            value(&topic_configs(&mut k, "cfg"), "retention.ms"),
            ("1000".into(), 1)
        );
        let append = [("cleanup.policy", 2, Some("compact"))];
        assert_eq!(incremental(&mut k, v, TOPIC, "cfg", &append, false).0, 0);
        assert_eq!(
            value(&topic_configs(&mut k, "cfg"), "cleanup.policy").0,
            "compact,delete"
        );
        let subtract = [("cleanup.policy", 3, Some("delete"))];
        assert_eq!(incremental(&mut k, v, TOPIC, "cfg", &subtract, false).0, 0);
        assert_eq!(
            value(&topic_configs(&mut k, "cfg"), "cleanup.policy").0,
            "compact"
        );
        let delete = [("retention.ms", 1, None), ("cleanup.policy", 1, None)];
        assert_eq!(incremental(&mut k, v, TOPIC, "cfg", &delete, false).0, 0);
        let after = topic_configs(&mut k, "cfg");
        assert_eq!(
            value(&after, "retention.ms"),
            ("604800000".into(), 5),
            "back to the default"
        );
        assert_eq!(value(&after, "cleanup.policy"), ("delete".into(), 5));
    }
    // Refusals change nothing: a bad value, validate-only, a list op on a number, the broker.
    let before = topic_configs(&mut k, "cfg");
    let (code, msg) = incremental(
        &mut k,
        1,
        TOPIC,
        "cfg",
        &[("retention.ms", 0, Some("soon"))],
        false,
    );
    assert_eq!(code, 40, "INVALID_CONFIG: {msg}");
    assert!(msg.contains("retention.ms"), "{msg}");
    assert_eq!(
        incremental(
            &mut k,
            1,
            TOPIC,
            "cfg",
            &[("segment.ms", 0, Some("5000"))],
            true
        )
        .0,
        0
    );
    assert_eq!(
        incremental(
            &mut k,
            1,
            TOPIC,
            "cfg",
            &[("segment.ms", 2, Some("1"))],
            false
        )
        .0,
        40
    );
    assert_eq!(
        incremental(
            &mut k,
            1,
            TOPIC,
            "nope",
            &[("segment.ms", 0, Some("1"))],
            false
        )
        .0,
        3
    );
    let (code, msg) = incremental(
        &mut k,
        1,
        BROKER,
        "0",
        &[("log.cleaner.threads", 0, Some("1"))],
        false,
    );
    assert_eq!(code, 40, "{msg}");
    assert!(msg.contains("not a broker config"), "{msg}");
    assert_eq!(
        topic_configs(&mut k, "cfg"),
        before,
        "refused changes changed nothing"
    );
}

#[test]
fn alter_configs_replaces_a_topics_whole_config_and_broker_configs_are_described() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    topic_with_records(&server, "whole", 0);
    assert_eq!(
        incremental(
            &mut k,
            1,
            TOPIC,
            "whole",
            &[("retention.ms", 0, Some("1000"))],
            false
        )
        .0,
        0
    );
    for v in versions(ApiKey::AlterConfigs) {
        let r = AlterConfigsRequest::default().with_resources(vec![
            alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(TOPIC)
                .with_resource_name(s("whole"))
                .with_configs(vec![alter_configs_request::AlterableConfig::default()
                    .with_name(s("segment.ms"))
                    .with_value(Some(s(&format!("{}", 60_000 + v as i64))))]),
        ]);
        let ResponseKind::AlterConfigs(r) =
            k.call(ApiKey::AlterConfigs, v, RequestKind::AlterConfigs(r))
        else {
            panic!()
        };
        assert_eq!(r.responses[0].error_code, 0, "v{v}: {r:?}");
        let after = topic_configs(&mut k, "whole");
        assert_eq!(
            value(&after, "segment.ms"),
            (format!("{}", 60_000 + v as i64), 1)
        );
        // Keys not given return to their defaults.
        assert_eq!(value(&after, "retention.ms").1, 5, "v{v}");
    }
    let r = DescribeConfigsRequest::default().with_resources(vec![
        describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(BROKER)
            .with_resource_name(s("0"))
            .with_configuration_keys(None),
    ]);
    let ResponseKind::DescribeConfigs(r) =
        k.call(ApiKey::DescribeConfigs, 4, RequestKind::DescribeConfigs(r))
    else {
        panic!()
    };
    let configs = &r.results[0].configs;
    let kafka_listen = configs
        .iter()
        .find(|c| c.name.as_str() == "kafka.listen")
        .unwrap();
    assert_eq!(
        kafka_listen.value.as_deref(),
        Some(server.kafka_addr().as_str())
    );
    assert_eq!(
        kafka_listen.config_source, 4,
        "set at start: a static broker config"
    );
    let idle = configs
        .iter()
        .find(|c| c.name.as_str() == "connections.max.idle.ms")
        .unwrap();
    assert_eq!(idle.config_source, 5, "left at its default");
    // Server settings are static; the broker defaults of topic configs are dynamic, and so
    // are the Kerberos keys Kafka's clients set (accepted, inert here).
    let dynamic_keys = || {
        let inert = INERT_BROKER_KEYS.iter().map(|(b, _)| *b);
        BROKER_SYNONYMS.iter().map(|(b, _)| *b).chain(inert)
    };
    for c in configs {
        let dynamic = dynamic_keys().any(|b| b == c.name.as_str());
        assert_eq!(c.read_only, !dynamic, "{}", c.name);
    }
    let writable = configs.iter().filter(|c| !c.read_only).count();
    assert_eq!(writable, dynamic_keys().count());
}

fn broker_configs(k: &mut Kafka, name: &str) -> Vec<(String, String, i8)> {
    configs_of(k, BROKER, name)
}

/// Segments of partition 0 of `topic` (native DescribeLogs).
fn segments(server: &ServerProc, topic: &str) -> i32 {
    let (addr, topic) = (server.addr(), topic.to_string());
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let logs = c.describe_logs(Some(vec![topic])).await.unwrap();
        logs.topics[0].partitions[0].segments
    })
}

/// kafka-configs --entity-type brokers (--entity-default or --entity-name 0): the broker
/// defaults of topic configs change every topic that does not override them, live (the
/// partitions roll by the new segment size), survive a restart, and are refused with
/// Kafka's codes when static, unknown, invalid or for another broker.
#[test]
fn dynamic_broker_defaults_reach_every_topic_without_its_own_value() {
    const SET: i8 = 0;
    const DELETE: i8 = 1;
    let tmp = tempfile::tempdir().unwrap();
    let (mut server, mut k) = server(&tmp);
    topic_with_records(&server, "plain", 0);
    let set = |k: &mut Kafka, v, name: &str, key: &str, val: &str| {
        incremental(k, v, BROKER, name, &[(key, SET, Some(val))], false)
    };
    assert_eq!(incremental(&mut k, 0, TOPIC, "plain", &[], false).0, 0);
    assert_eq!(
        incremental(
            &mut k,
            1,
            TOPIC,
            "plain",
            &[("retention.bytes", SET, Some("99999"))],
            false
        )
        .0,
        0
    );
    assert_eq!(set(&mut k, 0, "", "log.retention.bytes", "123456").0, 0);
    assert_eq!(set(&mut k, 1, "", "log.retention.ms", "3600000").0, 0);
    let plain = topic_configs(&mut k, "plain");
    assert_eq!(value(&plain, "retention.ms"), ("3600000".into(), 3));
    assert_eq!(
        value(&plain, "retention.bytes"),
        ("99999".into(), 1),
        "its own value wins"
    );
    assert_eq!(set(&mut k, 1, "0", "log.retention.ms", "7200000").0, 0);
    assert_eq!(
        value(&topic_configs(&mut k, "plain"), "retention.ms"),
        ("7200000".into(), 2)
    );
    // Live: with a 1 KiB default segment size, new records roll new segments.
    assert_eq!(set(&mut k, 1, "0", "log.segment.bytes", "1024").0, 0);
    topic_with_records(&server, "later", 0);
    assert_eq!(
        value(&topic_configs(&mut k, "later"), "segment.bytes"),
        ("1024".into(), 2)
    );
    let (addr, records) = (server.addr(), 60);
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        for i in 0..records {
            let (mut b, value) = (BatchBuilder::new(64), format!("record {i:>40}"));
            b.push(RecordSpec::new(None, Some(value.as_bytes())).timestamp(1));
            c.produce("plain", 0, -1, Bytes::from(b.build()))
                .await
                .unwrap();
        }
    });
    assert!(
        segments(&server, "plain") > 1,
        "the partition rolled by the new default"
    );
    let broker = broker_configs(&mut k, "0");
    assert_eq!(value(&broker, "log.retention.ms"), ("7200000".into(), 2));
    assert_eq!(value(&broker, "log.retention.bytes"), ("123456".into(), 3));
    assert_eq!(value(&broker, "log.roll.ms"), ("604800000".into(), 5));
    let cluster = broker_configs(&mut k, "");
    let names: Vec<&str> = cluster.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["log.retention.bytes", "log.retention.ms"]);
    // Refusals change nothing.
    let (code, msg) = set(&mut k, 1, "0", "num.partitions", "3");
    assert_eq!(code, 40, "{msg}");
    assert!(msg.contains("cannot be updated dynamically"), "{msg}");
    assert_eq!(set(&mut k, 1, "0", "log.retention.ms", "soon").0, 40);
    assert_eq!(set(&mut k, 1, "0", "no.such.config", "1").0, 40);
    assert_eq!(set(&mut k, 1, "5", "log.retention.ms", "1").0, 42);
    let (code, _) = incremental(
        &mut k,
        1,
        BROKER,
        "0",
        &[("log.roll.ms", SET, Some("1000"))],
        true,
    );
    assert_eq!(code, 0, "validate only");
    assert_eq!(value(&broker_configs(&mut k, "0"), "log.roll.ms").1, 5);
    // Durable.
    server.restart_after_kill();
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    assert_eq!(
        value(&topic_configs(&mut k, "plain"), "retention.ms"),
        ("7200000".into(), 2)
    );
    // Deleting this broker's value falls back to the cluster default; the legacy
    // AlterConfigs replaces a scope's whole set.
    let del = &[("log.retention.ms", DELETE, None)];
    assert_eq!(incremental(&mut k, 1, BROKER, "0", del, false).0, 0);
    assert_eq!(
        value(&topic_configs(&mut k, "plain"), "retention.ms"),
        ("3600000".into(), 3)
    );
    let r = AlterConfigsRequest::default().with_resources(vec![
        alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(BROKER)
            .with_resource_name(s(""))
            .with_configs(vec![]),
    ]);
    let ResponseKind::AlterConfigs(r) =
        k.call(ApiKey::AlterConfigs, 2, RequestKind::AlterConfigs(r))
    else {
        panic!()
    };
    assert_eq!(r.responses[0].error_code, 0, "{r:?}");
    assert_eq!(
        value(&topic_configs(&mut k, "plain"), "retention.ms"),
        ("604800000".into(), 5)
    );
    assert!(broker_configs(&mut k, "").is_empty());
}

fn create_partitions(k: &mut Kafka, v: i16, topic: &str, count: i32, validate_only: bool) -> i16 {
    let r = CreatePartitionsRequest::default()
        .with_timeout_ms(5_000)
        .with_validate_only(validate_only)
        .with_topics(vec![
            create_partitions_request::CreatePartitionsTopic::default()
                .with_name(TopicName(s(topic)))
                .with_count(count)
                .with_assignments(None),
        ]);
    let ResponseKind::CreatePartitions(r) = k.call(
        ApiKey::CreatePartitions,
        v,
        RequestKind::CreatePartitions(r),
    ) else {
        panic!()
    };
    r.results[0].error_code
}

fn partition_count(k: &mut Kafka, topic: &str) -> usize {
    let r = MetadataRequest::default().with_topics(Some(vec![
        metadata_request::MetadataRequestTopic::default().with_name(Some(TopicName(s(topic)))),
    ]));
    let ResponseKind::Metadata(m) = k.call(ApiKey::Metadata, 12, RequestKind::Metadata(r)) else {
        panic!()
    };
    m.topics[0].partitions.len()
}

#[test]
fn create_partitions_grows_a_topic_whose_new_partitions_take_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    topic_with_records(&server, "cp", 3);
    let mut count = 1;
    for v in versions(ApiKey::CreatePartitions) {
        assert_eq!(
            create_partitions(&mut k, v, "cp", count + 2, true),
            0,
            "validate v{v}"
        );
        assert_eq!(
            partition_count(&mut k, "cp"),
            count as usize,
            "validate-only changes nothing"
        );
        count += 2;
        assert_eq!(create_partitions(&mut k, v, "cp", count, false), 0, "v{v}");
        assert_eq!(partition_count(&mut k, "cp"), count as usize, "v{v}");
        // Never shrink, never stay: INVALID_PARTITIONS.
        assert_eq!(create_partitions(&mut k, v, "cp", count, false), 37, "v{v}");
        assert_eq!(create_partitions(&mut k, v, "cp", 1, false), 37, "v{v}");
        assert_eq!(create_partitions(&mut k, v, "nope", 4, false), 3, "v{v}");
    }
    assert_eq!(
        create_partitions(&mut k, 3, "__consumer_offsets", 99, false),
        17
    );
    // Every new partition is open on its owner shard and takes records; the old keep theirs.
    let (addr, n) = (server.addr(), count);
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        for p in 1..n {
            let (mut b, value) = (BatchBuilder::new(64), format!("p{p}"));
            b.push(RecordSpec::new(None, Some(value.as_bytes())).timestamp(1));
            let (base, _, _) = c
                .produce("cp", p, -1, Bytes::from(b.build()))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(base, 0, "partition {p} starts empty");
        }
        let logs = c
            .describe_logs(Some(vec!["cp".into()]))
            .await
            .unwrap()
            .topics;
        let ends: Vec<i64> = logs[0]
            .partitions
            .iter()
            .map(|p| p.log_end_offset)
            .collect();
        let mut want = vec![1; n as usize];
        want[0] = 3;
        assert_eq!(ends, want);
        let owners: std::collections::BTreeSet<i32> =
            logs[0].partitions.iter().map(|p| p.owner_shard).collect();
        assert_eq!(owners.len(), 2, "new partitions are spread over the shards");
    });
    // The grown topic survives kill -9 (the metadata file was its commit point).
    let mut server = server;
    server.restart_after_kill();
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    assert_eq!(partition_count(&mut k, "cp"), count as usize);
}

fn metadata_of(k: &mut Kafka, v: i16, topic: &str, allow_create: bool) -> (i16, usize) {
    let r = MetadataRequest::default()
        .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default(
        )
        .with_name(Some(TopicName(s(topic))))]))
        // The field exists from v4; earlier versions always allow creation.
        .with_allow_auto_topic_creation(allow_create || v < 4);
    let ResponseKind::Metadata(m) = k.call(ApiKey::Metadata, v, RequestKind::Metadata(r)) else {
        panic!()
    };
    (m.topics[0].error_code, m.topics[0].partitions.len())
}

#[test]
fn topics_are_created_on_first_use_as_kafka_creates_them() {
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(
        &tmp.path().join("data"),
        2,
        &[("kafka.listen", "auto"), ("num.partitions", "3")],
    );
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    // A consumer's request (v4+, creation not allowed) leaves an unknown topic unknown.
    assert_eq!(metadata_of(&mut k, 12, "fresh", false), (3, 0));
    // A producer's creates it, with num.partitions, and answers with it at once.
    assert_eq!(metadata_of(&mut k, 12, "fresh", true), (0, 3));
    assert_eq!(metadata_of(&mut k, 12, "fresh", false), (0, 3));
    // Before v4 every Metadata request may create (Kafka's rule).
    assert_eq!(metadata_of(&mut k, 3, "older", true), (0, 3));
    // Invalid and internal names are never created.
    assert_eq!(metadata_of(&mut k, 12, "bad name!", true).0, 17);
    assert_eq!(metadata_of(&mut k, 12, "__consumer_offsets", true).0, 3);
    // CreateTopics with -1 partitions takes num.partitions too.
    let r = CreateTopicsRequest::default().with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(TopicName(s("minus-one")))
            .with_num_partitions(-1)
            .with_replication_factor(-1),
    ]);
    let ResponseKind::CreateTopics(r) =
        k.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(r))
    else {
        panic!()
    };
    assert_eq!((r.topics[0].error_code, r.topics[0].num_partitions), (0, 3));
    drop(server);
    // Switched off, nothing is created.
    let tmp = tempfile::tempdir().unwrap();
    let server = ServerProc::start(
        &tmp.path().join("data"),
        2,
        &[
            ("kafka.listen", "auto"),
            ("auto.create.topics.enable", "false"),
        ],
    );
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    assert_eq!(metadata_of(&mut k, 12, "fresh", true), (3, 0));
}

#[test]
fn describe_log_dirs_reports_the_data_dir_and_each_partitions_size() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    topic_with_records(&server, "sized", 4);
    for v in versions(ApiKey::DescribeLogDirs) {
        for topics in [
            None,
            Some(vec![
                describe_log_dirs_request::DescribableLogDirTopic::default()
                    .with_topic(TopicName(s("sized")))
                    .with_partitions(vec![0]),
            ]),
        ] {
            let r = DescribeLogDirsRequest::default().with_topics(topics);
            let ResponseKind::DescribeLogDirs(r) =
                k.call(ApiKey::DescribeLogDirs, v, RequestKind::DescribeLogDirs(r))
            else {
                panic!()
            };
            let dir = &r.results[0];
            assert_eq!(dir.error_code, 0, "v{v}");
            let data = tmp.path().join("data");
            assert_eq!(dir.log_dir.as_str(), data.to_str().unwrap(), "v{v}");
            let t = dir
                .topics
                .iter()
                .find(|t| t.name.0.as_str() == "sized")
                .unwrap();
            let p = &t.partitions[0];
            // Four one-record batches, each 70 bytes on disk.
            assert_eq!((p.partition_index, p.partition_size), (0, 4 * 70), "v{v}");
            if v >= 4 {
                assert!(dir.total_bytes > 0 && dir.usable_bytes <= dir.total_bytes);
            }
        }
    }
}

/// CreateTopics with `configs`; the topic's error code and message.
fn create_with(k: &mut Kafka, topic: &str, configs: &[(&str, &str)]) -> (i16, String) {
    let configs = configs
        .iter()
        .map(|(key, v)| {
            create_topics_request::CreatableTopicConfig::default()
                .with_name(s(key))
                .with_value(Some(s(v)))
        })
        .collect();
    let r = CreateTopicsRequest::default().with_topics(vec![
        create_topics_request::CreatableTopic::default()
            .with_name(TopicName(s(topic)))
            .with_num_partitions(1)
            .with_replication_factor(1)
            .with_configs(configs),
    ]);
    let ResponseKind::CreateTopics(r) =
        k.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(r))
    else {
        panic!()
    };
    let t = &r.topics[0];
    let message = t.error_message.as_ref().map(|m| m.to_string());
    (t.error_code, message.unwrap_or_default())
}

/// Produce v9 of one batch to partition 0: (error code, message).
fn produce_batch(k: &mut Kafka, topic: &str, acks: i16, batch: Vec<u8>) -> (i16, String) {
    let r = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(s(topic)))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(Bytes::from(batch))),
            ])]);
    let ResponseKind::Produce(r) = k.call(ApiKey::Produce, 9, RequestKind::Produce(r)) else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    let message = p.error_message.as_ref().map(|m| m.to_string());
    (p.error_code, message.unwrap_or_default())
}

fn batch_of(values: &[String]) -> Vec<u8> {
    let mut b = BatchBuilder::new(256);
    for v in values {
        b.push(RecordSpec::new(None, Some(v.as_bytes())).timestamp(shardlog::time::now_ms()));
    }
    b.build()
}

/// Issue 39: the topic configs Kafka's clients send are accepted with Kafka's validation
/// and do what Kafka does on one node: max.message.bytes bounds a batch (MESSAGE_TOO_LARGE),
/// compression.type recompresses, min.insync.replicas above the one replica refuses
/// acks=all (NOT_ENOUGH_REPLICAS); keys with no effect here are kept and described; the
/// Kerberos broker keys librdkafka sets are accepted.
#[test]
fn topic_configs_kafka_clients_send_are_accepted_and_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, mut k) = server(&tmp);
    let configs = [
        ("max.message.bytes", "2000"),
        ("compression.type", "lz4"),
        ("min.insync.replicas", "2"),
        ("flush.messages", "1"),
        ("flush.ms", "1000"),
        ("preallocate", "true"),
        ("segment.jitter.ms", "0"),
        ("unclean.leader.election.enable", "false"),
        ("message.downconversion.enable", "true"),
        ("follower.replication.throttled.replicas", "*"),
    ];
    assert_eq!(create_with(&mut k, "tuned", &configs), (0, String::new()));
    let described = topic_configs(&mut k, "tuned");
    for (key, v) in configs {
        assert_eq!(value(&described, key).0, v, "{key}");
    }
    // Kafka's validation: each refused with INVALID_CONFIG (40), nothing created.
    for bad in [
        ("min.insync.replicas", "0"),
        ("compression.type", "brotli"),
        ("flush.messages", "0"),
        ("leader.replication.throttled.replicas", "0:x"),
    ] {
        let (code, why) = create_with(&mut k, "refused", &[bad]);
        assert_eq!(code, 40, "{bad:?}: {why}");
        assert!(why.contains(bad.0), "{why}");
    }
    let small: Vec<String> = (0..10).map(|i| format!("value-{i}")).collect();
    let (code, why) = produce_batch(&mut k, "tuned", -1, batch_of(&small));
    assert_eq!(code, 19, "acks=all with min.insync.replicas 2: {why}");
    assert_eq!(produce_batch(&mut k, "tuned", 1, batch_of(&small)).0, 0);
    // Incompressible: over the limit after compression too (Kafka checks the stored batch).
    let big: Vec<String> = (0..100)
        .map(|_| (0..40).map(|_| fastrand::alphanumeric()).collect())
        .collect();
    let (code, why) = produce_batch(&mut k, "tuned", 1, batch_of(&big));
    assert_eq!(code, 10, "MESSAGE_TOO_LARGE: {why}");
    assert!(why.contains("max.message.bytes"), "{why}");
    // The accepted batch was stored lz4-compressed, its records intact.
    let (addr, values) = (server.addr(), small.clone());
    common::client(move || async move {
        let mut c = shardlog::client::Client::connect(&addr).await.unwrap();
        let f = c.fetch("tuned", 0, 0, 1 << 20).await.unwrap();
        let header = shardlog::format::BatchHeader::parse(&f.records).unwrap();
        assert_eq!(
            header.codec().unwrap(),
            shardlog::format::compression::Codec::Lz4
        );
        let read = common::read_records(&mut c, "tuned", 0).await;
        let read: Vec<String> = read.into_iter().map(|(_, v)| v).collect();
        assert_eq!(read, values);
    });
    // The broker key librdkafka's 0081 alters.
    let kerberos = [("sasl.kerberos.min.time.before.relogin", 0i8, Some("58000"))];
    assert_eq!(incremental(&mut k, 1, BROKER, "0", &kerberos, false).0, 0);
    let broker = broker_configs(&mut k, "0");
    assert_eq!(
        value(&broker, "sasl.kerberos.min.time.before.relogin").0,
        "58000"
    );
}

/// The topic id Metadata v12 reports for `topic`.
fn topic_id(k: &mut Kafka, topic: &str) -> uuid::Uuid {
    let r = MetadataRequest::default().with_topics(Some(vec![
        metadata_request::MetadataRequestTopic::default().with_name(Some(TopicName(s(topic)))),
    ]));
    let ResponseKind::Metadata(m) = k.call(ApiKey::Metadata, 12, RequestKind::Metadata(r)) else {
        panic!()
    };
    assert_eq!(m.topics[0].error_code, 0, "{m:?}");
    m.topics[0].topic_id
}

/// Issue 39 (KIP-516): every topic has a real id, the same on every shard, in Metadata
/// and CreateTopics, in each partition's `partition.metadata` as Kafka writes it, kept
/// across restarts, and a new one when the topic is deleted and created again (so a
/// producer notices a topic recreated with fewer partitions). A topic from before ids is
/// given one at the next start, and keeps it.
#[test]
fn topics_have_ids_that_change_when_a_topic_is_recreated() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut server, mut k) = server(&tmp);
    assert_eq!(create_with(&mut k, "ids", &[]), (0, String::new()));
    let first = topic_id(&mut k, "ids");
    assert!(!first.is_nil());
    for _ in 0..4 {
        // Each request may land on either shard: they agree.
        assert_eq!(topic_id(&mut k, "ids"), first);
    }
    let recorded =
        std::fs::read_to_string(tmp.path().join("data/ids-0/partition.metadata")).unwrap();
    assert_eq!(
        shardlog::catalog::topics::read_partition_metadata(&recorded),
        Some(first),
        "{recorded}"
    );
    assert!(recorded.starts_with("version: 0\ntopic_id: "), "{recorded}");
    server.restart_after_kill();
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    assert_eq!(topic_id(&mut k, "ids"), first, "kept across a restart");
    let r = DeleteTopicsRequest::default().with_topic_names(vec![TopicName(s("ids"))]);
    let ResponseKind::DeleteTopics(d) =
        k.call(ApiKey::DeleteTopics, 4, RequestKind::DeleteTopics(r))
    else {
        panic!()
    };
    assert_eq!(d.responses[0].error_code, 0, "{d:?}");
    assert_eq!(create_with(&mut k, "ids", &[]), (0, String::new()));
    assert_ne!(
        topic_id(&mut k, "ids"),
        first,
        "a recreated topic is a new topic"
    );

    // A topic file from before ids: given one at the start, the same after the next.
    let file = tmp
        .path()
        .join("data/__shardlog_meta/topics/ids.properties");
    server.kill9();
    let text = std::fs::read_to_string(&file).unwrap();
    let legacy: String = text
        .lines()
        .filter(|l| !l.starts_with("topic.id="))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, legacy).unwrap();
    server.respawn();
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    let given = topic_id(&mut k, "ids");
    assert!(!given.is_nil());
    server.restart_after_kill();
    let mut k = Kafka(BlockingClient::connect(&server.kafka_addr()).unwrap());
    assert_eq!(topic_id(&mut k, "ids"), given);
    assert!(std::fs::read_to_string(&file)
        .unwrap()
        .contains("topic.id="));
}

/// Issue 39: a manual replica assignment that names this broker is accepted (CreateTopics
/// and CreatePartitions), as Kafka accepts one that names live brokers; one naming another
/// broker, or two replicas, is refused with INVALID_REPLICA_ASSIGNMENT (39).
#[test]
fn manual_assignments_naming_this_broker_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, mut k) = server(&tmp);
    let create = |k: &mut Kafka, name: &str, replicas: &[&[i32]]| {
        let assignments = replicas
            .iter()
            .enumerate()
            .map(|(p, r)| {
                create_topics_request::CreatableReplicaAssignment::default()
                    .with_partition_index(p as i32)
                    .with_broker_ids(r.iter().map(|&b| BrokerId(b)).collect())
            })
            .collect();
        let r = CreateTopicsRequest::default().with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(TopicName(s(name)))
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(assignments),
        ]);
        let ResponseKind::CreateTopics(r) =
            k.call(ApiKey::CreateTopics, 7, RequestKind::CreateTopics(r))
        else {
            panic!()
        };
        (r.topics[0].error_code, r.topics[0].num_partitions)
    };
    assert_eq!(create(&mut k, "placed", &[&[0], &[0], &[0]]), (0, 3));
    assert_eq!(partition_count(&mut k, "placed"), 3);
    assert_eq!(create(&mut k, "elsewhere", &[&[1]]).0, 39);
    assert_eq!(create(&mut k, "twice", &[&[0, 0]]).0, 39);
    let grow = |k: &mut Kafka, replicas: &[i32]| {
        let r = CreatePartitionsRequest::default().with_topics(vec![
            create_partitions_request::CreatePartitionsTopic::default()
                .with_name(TopicName(s("placed")))
                .with_count(4)
                .with_assignments(Some(vec![
                    create_partitions_request::CreatePartitionsAssignment::default()
                        .with_broker_ids(replicas.iter().map(|&b| BrokerId(b)).collect()),
                ])),
        ]);
        let ResponseKind::CreatePartitions(r) = k.call(
            ApiKey::CreatePartitions,
            3,
            RequestKind::CreatePartitions(r),
        ) else {
            panic!()
        };
        r.results[0].error_code
    };
    assert_eq!(grow(&mut k, &[7]), 39);
    assert_eq!(grow(&mut k, &[0]), 0);
    assert_eq!(partition_count(&mut k, "placed"), 4);
}

/// Issue 39 (KIP-467): a batch with some keyless records to a compacted topic is refused
/// whole with INVALID_RECORD, and `record_errors` names exactly those records (librdkafka's
/// 0011 fails only them instead of all 100).
#[test]
fn keyless_records_to_a_compacted_topic_are_named_in_record_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, mut k) = server(&tmp);
    let compacted = [("cleanup.policy", "compact")];
    assert_eq!(create_with(&mut k, "keyed", &compacted), (0, String::new()));
    let mut b = BatchBuilder::new(1024);
    let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        let key = (i % 7 != 3).then_some(key.as_bytes());
        b.push(RecordSpec::new(key, Some(b"v")).timestamp(shardlog::time::now_ms()));
    }
    let r = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(s("keyed")))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(Bytes::from(b.build()))),
            ])]);
    let ResponseKind::Produce(r) = k.call(ApiKey::Produce, 9, RequestKind::Produce(r)) else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 87, "{p:?}");
    let named: Vec<i32> = p.record_errors.iter().map(|e| e.batch_index).collect();
    assert_eq!(named, [3, 10, 17], "{p:?}");
    assert!(p.record_errors[0]
        .batch_index_error_message
        .as_ref()
        .is_some_and(|m| m.contains("without key")));
}
