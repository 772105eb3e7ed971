//! Topics in cluster mode against a real etcd and three `shardlog serve` processes: the
//! controller alone creates and deletes topics (other nodes forward to it), replicas
//! are placed over the live brokers (a factor above them is INVALID_REPLICATION_FACTOR),
//! topics grow on the controller (CreatePartitions), a config change made on any node
//! reaches every node,
//! every node answers Metadata alike (and reports one cluster id), only a partition's
//! leader takes writes and reads (NOT_LEADER_OR_FOLLOWER elsewhere), a partition whose only replica dies goes offline
//! and comes back with its records and a larger leader epoch,
//! a node that was away copies the topics created meanwhile, and a deleted topic leaves
//! every node.

use crate::common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::etcd::EtcdServer;
use common::server_proc::ServerProc;
use kafka_protocol::messages::{
    create_topics_request, delete_topics_request, fetch_request, metadata_request, produce_request,
    ApiKey, CreateTopicsRequest, DeleteTopicsRequest, FetchRequest, MetadataRequest,
    ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;

use super::cluster_e2e::describe;

pub(crate) fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

pub(crate) fn call(
    node: &ServerProc,
    key: ApiKey,
    version: i16,
    request: RequestKind,
) -> ResponseKind {
    let mut k = BlockingClient::connect(&node.kafka_addr()).unwrap();
    k.call(key, version, &request)
        .unwrap_or_else(|e| panic!("{key:?}: {e}"))
}

/// CreateTopics v5: (error code, replication factor answered).
pub(crate) fn create(node: &ServerProc, topic: &str, partitions: i32, factor: i16) -> (i16, i16) {
    let t = create_topics_request::CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(factor);
    let request = CreateTopicsRequest::default()
        .with_topics(vec![t])
        .with_timeout_ms(10_000);
    let ResponseKind::CreateTopics(r) = call(
        node,
        ApiKey::CreateTopics,
        5,
        RequestKind::CreateTopics(request),
    ) else {
        panic!()
    };
    (r.topics[0].error_code, r.topics[0].replication_factor)
}

/// CreatePartitions v1 growing `topic` to `count`: the error code.
fn grow(node: &ServerProc, topic: &str, count: i32) -> i16 {
    use kafka_protocol::messages::{create_partitions_request, CreatePartitionsRequest};
    let t = create_partitions_request::CreatePartitionsTopic::default()
        .with_name(name(topic))
        .with_count(count)
        .with_assignments(None);
    let request = CreatePartitionsRequest::default()
        .with_topics(vec![t])
        .with_timeout_ms(10_000);
    let ResponseKind::CreatePartitions(r) = call(
        node,
        ApiKey::CreatePartitions,
        1,
        RequestKind::CreatePartitions(request),
    ) else {
        panic!()
    };
    r.results[0].error_code
}

/// IncrementalAlterConfigs v0 setting one topic config: the error code.
pub(crate) fn set_config(node: &ServerProc, topic: &str, key: &str, value: &str) -> i16 {
    set_resource_config(node, (2, topic), key, value)
}

/// IncrementalAlterConfigs v0 SET of one key of a resource (2: a topic, 4: a broker): the
/// error code.
pub(crate) fn set_resource_config(
    node: &ServerProc,
    (kind, topic): (i8, &str),
    key: &str,
    value: &str,
) -> i16 {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::IncrementalAlterConfigsRequest;
    let config = AlterableConfig::default()
        .with_name(StrBytes::from_string(key.to_string()))
        .with_config_operation(0)
        .with_value(Some(StrBytes::from_string(value.to_string())));
    let resource = AlterConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(StrBytes::from_string(topic.to_string()))
        .with_configs(vec![config]);
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
    let ResponseKind::IncrementalAlterConfigs(r) = call(
        node,
        ApiKey::IncrementalAlterConfigs,
        0,
        RequestKind::IncrementalAlterConfigs(request),
    ) else {
        panic!()
    };
    r.responses[0].error_code
}

/// DescribeConfigs v1 of one topic key: its value.
fn config(node: &ServerProc, topic: &str, key: &str) -> Option<String> {
    described(node, (2, topic), key)
}

/// DescribeConfigs v1 of one key of a resource (type 2: a topic, 4: a broker): its value.
pub(crate) fn described(node: &ServerProc, (kind, name): (i8, &str), key: &str) -> Option<String> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::DescribeConfigsRequest;
    let resource = DescribeConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(StrBytes::from_string(name.to_string()))
        .with_configuration_keys(Some(vec![StrBytes::from_string(key.to_string())]));
    let request = DescribeConfigsRequest::default().with_resources(vec![resource]);
    let ResponseKind::DescribeConfigs(r) = call(
        node,
        ApiKey::DescribeConfigs,
        1,
        RequestKind::DescribeConfigs(request),
    ) else {
        panic!()
    };
    let found = r.results[0].configs.iter().find(|c| c.name.as_str() == key);
    found.and_then(|c| c.value.as_ref().map(|v| v.to_string()))
}

pub(crate) fn delete(node: &ServerProc, topic: &str) -> i16 {
    let t = delete_topics_request::DeleteTopicState::default().with_name(Some(name(topic)));
    let request = DeleteTopicsRequest::default()
        .with_topics(vec![t])
        .with_timeout_ms(10_000);
    let ResponseKind::DeleteTopics(r) = call(
        node,
        ApiKey::DeleteTopics,
        6,
        RequestKind::DeleteTopics(request),
    ) else {
        panic!()
    };
    r.responses[0].error_code
}

/// One partition as Metadata v9 describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Described {
    pub error: i16,
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline: Vec<i32>,
}

/// Metadata v9 of one topic: (topic error, partitions, broker ids listed).
pub(crate) fn metadata(node: &ServerProc, topic: &str) -> (i16, Vec<Described>, Vec<i32>) {
    let t = metadata_request::MetadataRequestTopic::default().with_name(Some(name(topic)));
    let request = MetadataRequest::default()
        .with_topics(Some(vec![t]))
        .with_allow_auto_topic_creation(false);
    let ResponseKind::Metadata(r) = call(node, ApiKey::Metadata, 9, RequestKind::Metadata(request))
    else {
        panic!()
    };
    let t = &r.topics[0];
    let ids = |v: &[kafka_protocol::messages::BrokerId]| v.iter().map(|b| b.0).collect::<Vec<_>>();
    let mut partitions: Vec<(i32, Described)> = (t.partitions.iter())
        .map(|p| {
            let d = Described {
                error: p.error_code,
                leader: p.leader_id.0,
                leader_epoch: p.leader_epoch,
                replicas: ids(&p.replica_nodes),
                isr: ids(&p.isr_nodes),
                offline: ids(&p.offline_replicas),
            };
            (p.partition_index, d)
        })
        .collect();
    partitions.sort_by_key(|(i, _)| *i);
    let brokers = ids(&r.brokers.iter().map(|b| b.node_id).collect::<Vec<_>>());
    (
        t.error_code,
        partitions.into_iter().map(|(_, d)| d).collect(),
        brokers,
    )
}

/// The cluster id a node reports (DescribeCluster).
fn cluster_id(node: &ServerProc) -> String {
    let request = kafka_protocol::messages::DescribeClusterRequest::default();
    let kind = RequestKind::DescribeCluster(request);
    let ResponseKind::DescribeCluster(r) = call(node, ApiKey::DescribeCluster, 0, kind) else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    r.cluster_id.to_string()
}

/// Waits (bounded) until every node answers Metadata for `topic` alike and `ready` holds
/// for that answer; returns it.
pub(crate) fn wait_for_metadata(
    nodes: &[&ServerProc],
    topic: &str,
    ready: impl Fn(&(i16, Vec<Described>, Vec<i32>)) -> bool,
) -> (i16, Vec<Described>, Vec<i32>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen: Vec<_> = nodes.iter().map(|n| metadata(n, topic)).collect();
        if seen.iter().all(|s| *s == seen[0]) && ready(&seen[0]) {
            return seen[0].clone();
        }
        assert!(
            Instant::now() < deadline,
            "no agreement on {topic}: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub(crate) fn batch(value: &str) -> Bytes {
    let mut b = BatchBuilder::new(64);
    b.push(RecordSpec::new(None, Some(value.as_bytes())).timestamp(1_700_000_000_000));
    Bytes::from(b.build())
}

/// Produce v9 (acks=1) of one record to `topic`-`partition`: the error code.
fn produce(node: &ServerProc, topic: &str, partition: i32, value: &str) -> i16 {
    produce_acks(node, topic, partition, value, 1).0
}

/// Produce v9 of one record with `acks`: (error code, base offset).
pub(crate) fn produce_acks(
    node: &ServerProc,
    topic: &str,
    partition: i32,
    value: &str,
    acks: i16,
) -> (i16, i64) {
    produce_to(&node.kafka_addr(), (topic, partition), value, acks)
        .unwrap_or_else(|e| panic!("Produce: {e}"))
}

/// Produce v9 of one record with `acks` to the Kafka listener at `addr`: (error code,
/// base offset), or why it was not answered.
pub(crate) fn produce_to(
    addr: &str,
    (topic, partition): (&str, i32),
    value: &str,
    acks: i16,
) -> Result<(i16, i64), String> {
    let p = produce_request::PartitionProduceData::default()
        .with_index(partition)
        .with_records(Some(batch(value)));
    let t = produce_request::TopicProduceData::default()
        .with_name(name(topic))
        .with_partition_data(vec![p]);
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![t]);
    let mut k = BlockingClient::connect(addr).map_err(|e| e.to_string())?;
    let answer = k.call(ApiKey::Produce, 9, &RequestKind::Produce(request));
    let Ok(ResponseKind::Produce(r)) = answer else {
        return Err(format!("{answer:?}"));
    };
    let p = &r.responses[0].partition_responses[0];
    Ok((p.error_code, p.base_offset))
}

/// A consumer's Fetch v11 of one partition from `offset`, not waiting.
fn consumer_fetch(topic: &str, partition: i32, offset: i64) -> RequestKind {
    let p = fetch_request::FetchPartition::default()
        .with_partition(partition)
        .with_fetch_offset(offset)
        .with_partition_max_bytes(1 << 20);
    let t = fetch_request::FetchTopic::default()
        .with_topic(name(topic))
        .with_partitions(vec![p]);
    RequestKind::Fetch(
        FetchRequest::default()
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![t]),
    )
}

/// Fetch v11 from offset 0: (error code, record bytes returned).
pub(crate) fn fetch(node: &ServerProc, topic: &str, partition: i32) -> (i16, usize) {
    fetch_version(node, topic, partition, 11)
}

/// A Fetch of `version` from offset 0: (error code, record bytes returned).
pub(crate) fn fetch_version(
    node: &ServerProc,
    topic: &str,
    partition: i32,
    version: i16,
) -> (i16, usize) {
    let request = consumer_fetch(topic, partition, 0);
    let ResponseKind::Fetch(r) = call(node, ApiKey::Fetch, version, request) else {
        panic!()
    };
    let p = &r.responses[0].partitions[0];
    (p.error_code, p.records.as_ref().map_or(0, Bytes::len))
}

/// Every record of `topic`-`partition` a consumer reads from `addr` (from offset 0 up to
/// the high watermark): (offset, value).
pub(crate) fn records(addr: &str, topic: &str, partition: i32) -> Vec<(i64, String)> {
    use shardlog::format::batch::{split_batches, RecordsSection};
    let mut k = BlockingClient::connect(addr).unwrap();
    let mut out = Vec::new();
    let mut next = 0;
    loop {
        let request = consumer_fetch(topic, partition, next);
        let Ok(ResponseKind::Fetch(r)) = k.call(ApiKey::Fetch, 11, &request) else {
            panic!("fetch of {topic}-{partition} from {addr}")
        };
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "fetch of {topic}-{partition} from {addr}");
        let data: Bytes = p.records.clone().unwrap_or_default();
        if data.is_empty() {
            return out;
        }
        for (start, h) in split_batches(&data).unwrap() {
            let bytes = &data[start..start + h.size()];
            for r in RecordsSection::of(bytes, &h).unwrap().decode().unwrap() {
                let value = String::from_utf8_lossy(r.value.unwrap_or_default()).to_string();
                out.push((r.offset, value));
            }
            next = h.last_offset() + 1;
        }
    }
}

const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const INVALID_REPLICATION_FACTOR: i16 = 38;
const LEADER_NOT_AVAILABLE: i16 = 5;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

#[test]
fn the_controller_places_topics_every_node_serves_them_alike_and_only_leaders_take_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (mut nodes, _, controller) = super::cluster_e2e::three_nodes(tmp.path(), &etcd);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let at = |id: i32| (id - 1) as usize;
    let other = (1..=3).find(|&id| id != controller).unwrap();

    // A node that is not the controller forwards topic changes to it (KIP-590).
    let c = &nodes[at(controller)];
    let o = &nodes[at(other)];
    assert_eq!(create(o, "orders", 6, 4).0, INVALID_REPLICATION_FACTOR);
    assert_eq!(create(o, "orders", 6, 3), (0, 3));
    assert_eq!(create(c, "orders", 6, 3).0, 36, "TOPIC_ALREADY_EXISTS");

    let (error, parts, brokers) =
        wait_for_metadata(&refs, "orders", |(e, p, _)| *e == 0 && p.len() == 6);
    assert_eq!((error, brokers), (0, vec![1, 2, 3]));
    for p in &parts {
        let mut replicas = p.replicas.clone();
        replicas.sort_unstable();
        assert_eq!(replicas, [1, 2, 3], "{p:?}");
        // Followers join the ISR as they catch up (replication's test follows them).
        assert_eq!((p.leader, p.leader_epoch), (p.replicas[0], 0));
        assert!(p.isr.contains(&p.leader), "{p:?}");
    }
    for id in 1..=3 {
        let led = parts.iter().filter(|p| p.leader == id).count();
        assert_eq!(led, 2, "leaders spread evenly: {parts:?}");
    }
    // One cluster, one id: three data directories agree, so it is etcd's; and no node
    // made an id of its own (a single node's `cluster-id` file).
    let ids: Vec<String> = refs.iter().map(|n| cluster_id(n)).collect();
    for id in 1..=3 {
        let own = tmp.path().join(format!("node-{id}/cluster-id"));
        assert!(
            !own.exists(),
            "{} was created in cluster mode",
            own.display()
        );
    }
    assert!(
        !ids[0].is_empty() && ids.iter().all(|id| *id == ids[0]),
        "{ids:?}"
    );

    // The controller grows a topic; every node serves the new partitions alike.
    assert_eq!(
        grow(c, "orders", 5),
        37,
        "INVALID_PARTITIONS: it only grows"
    );
    assert_eq!(grow(o, "orders", 8), 0, "forwarded");
    let (_, grown, _) = wait_for_metadata(&refs, "orders", |(e, p, _)| *e == 0 && p.len() == 8);
    let placed = |p: &[Described]| -> Vec<(i32, Vec<i32>, i32)> {
        p.iter()
            .map(|d| (d.leader, d.replicas.clone(), d.leader_epoch))
            .collect()
    };
    assert_eq!(
        placed(&grown[..6]),
        placed(&parts[..6]),
        "the first partitions untouched"
    );
    let mut new_replicas = grown[7].replicas.clone();
    new_replicas.sort_unstable();
    assert_eq!(new_replicas, [1, 2, 3]);
    // Metadata names the new partition before its leader has opened it: until then the
    // leader answers UNKNOWN_TOPIC_OR_PARTITION, which Kafka's clients retry.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut code = produce(&nodes[at(grown[7].leader)], "orders", 7, "new");
    while code == 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        code = produce(&nodes[at(grown[7].leader)], "orders", 7, "new");
    }
    assert_eq!(code, 0, "the new partition takes writes on its leader");

    // A config change on any node reaches every node.
    assert_eq!(
        set_config(&nodes[at(other)], "orders", "retention.ms", "123456"),
        0
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !refs
        .iter()
        .all(|n| config(n, "orders", "retention.ms").as_deref() == Some("123456"))
    {
        assert!(
            Instant::now() < deadline,
            "the config never reached every node"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        set_config(c, "orders", "retention.ms", "-7"),
        40,
        "INVALID_CONFIG"
    );

    // Only the leader takes writes.
    let leader = parts[0].leader;
    let follower = parts[0].replicas[1];
    assert_eq!(produce(&nodes[at(leader)], "orders", 0, "first"), 0);
    assert_eq!(
        produce(&nodes[at(follower)], "orders", 0, "lost"),
        NOT_LEADER_OR_FOLLOWER
    );
    // A fetch without client metadata (before v11) is the leader's only (KIP-392).
    assert_eq!(
        fetch_version(&nodes[at(follower)], "orders", 0, 10).0,
        NOT_LEADER_OR_FOLLOWER
    );
    // Readable once the in-sync followers have it (the high watermark passed it).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (error, bytes) = fetch(&nodes[at(leader)], "orders", 0);
        assert_eq!(error, 0);
        if bytes > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the record never became readable"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // One replica per partition: when its node dies the partition goes offline (never to
    // a node without its records), and comes back with it and the next leader epoch.
    assert_eq!(create(c, "solo", 3, 1), (0, 1));
    let (_, solo, _) = wait_for_metadata(&refs, "solo", |(e, p, _)| *e == 0 && p.len() == 3);
    let lost = solo[0].leader;
    assert_eq!(produce(&nodes[at(lost)], "solo", 0, "kept"), 0);
    nodes[at(lost)].kill9();
    let survivors: Vec<&ServerProc> = (1..=3)
        .filter(|&id| id != lost)
        .map(|id| &nodes[at(id)])
        .collect();
    let (_, offline, _) = wait_for_metadata(&survivors, "solo", |(_, p, b)| {
        b.len() == 2 && p[0].leader == -1
    });
    let p0 = &offline[0];
    assert_eq!(
        (p0.error, p0.isr.clone(), p0.leader_epoch),
        (LEADER_NOT_AVAILABLE, vec![lost], 1)
    );
    assert_eq!(p0.offline, [lost]);
    for p in offline.iter().filter(|p| p.replicas[0] != lost) {
        assert_eq!((p.error, p.leader_epoch), (0, 0), "untouched: {p:?}");
    }
    assert_eq!(
        produce(survivors[0], "solo", 0, "lost"),
        NOT_LEADER_OR_FOLLOWER
    );

    // A topic created while the node is away reaches it when it is back.
    let live_controller = describe(survivors[0]).0;
    assert_eq!(create(&nodes[at(live_controller)], "late", 2, 2), (0, 2));
    assert_eq!(
        create(&nodes[at(live_controller)], "wide", 1, 3).0,
        INVALID_REPLICATION_FACTOR
    );

    nodes[at(lost)].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let (_, back, _) = wait_for_metadata(&refs, "solo", |(_, p, b)| {
        b.len() == 3 && p[0].leader == lost
    });
    assert_eq!(
        (back[0].error, back[0].leader_epoch),
        (0, 2),
        "re-elected with the next epoch"
    );
    let (error, bytes) = fetch(&nodes[at(lost)], "solo", 0);
    assert!(
        error == 0 && bytes > 0,
        "the acknowledged record is back: {error} {bytes}"
    );
    wait_for_metadata(&refs, "late", |(e, p, _)| *e == 0 && p.len() == 2);

    // A deleted topic leaves every node.
    let live_controller = describe(&nodes[0]).0;
    assert_eq!(
        delete(&nodes[at(other_than(live_controller))], "orders"),
        0,
        "forwarded"
    );
    assert_eq!(delete(&nodes[at(live_controller)], "orders"), 3, "gone");
    wait_for_metadata(&refs, "orders", |(e, _, _)| {
        *e == UNKNOWN_TOPIC_OR_PARTITION
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    for id in 1..=3 {
        let dir = tmp.path().join(format!("node-{id}")).join("orders-0");
        while dir.exists() {
            assert!(Instant::now() < deadline, "{} still there", dir.display());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub(crate) fn other_than(id: i32) -> i32 {
    if id == 1 {
        2
    } else {
        1
    }
}
