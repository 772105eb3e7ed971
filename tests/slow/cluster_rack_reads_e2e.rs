//! Fetching from the closest replica (KIP-392) on a three-node cluster, one rack per node
//! (a real etcd, real processes): with Kafka's RackAwareReplicaSelector the leader sends a
//! consumer that names another node's rack to that in-sync follower (no records, its id
//! in `preferred_read_replica`), the follower serves it up to its high watermark, a
//! consumer in the leader's rack or in no rack reads from the leader, and an older Fetch
//! (no client metadata) is still the leader's only. librdkafka's consumer with
//! `client.rack` then reads every acknowledged record from its rack's follower. Every loop
//! is bounded in time.

use crate::common;

use std::time::Duration;

use bytes::Bytes;
use common::etcd::EtcdServer;
use common::kafka_clients::{run_bounded, script};
use common::server_proc::ServerProc;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_faults_e2e::node_with;
use super::cluster_operations_e2e::metric;
use super::cluster_topics_e2e::{call, create, produce_acks, wait_for_metadata};

const TOPIC: &str = "near";
const RECORDS: usize = 40;
const ACKS_ALL: i16 = -1;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;

fn at(id: i32) -> usize {
    (id - 1) as usize
}

fn rack_of(id: i32) -> String {
    format!("rack-{id}")
}

/// One partition's answer to a consumer's Fetch from offset 0.
#[derive(Debug)]
struct Answer {
    error: i16,
    preferred_read_replica: i32,
    high_watermark: i64,
    record_bytes: usize,
}

fn fetch(node: &ServerProc, version: i16, rack: &str) -> Answer {
    let p = FetchPartition::default()
        .with_partition(0)
        .with_fetch_offset(0)
        .with_partition_max_bytes(1 << 20);
    let t = FetchTopic::default()
        .with_topic(TopicName(StrBytes::from_string(TOPIC.into())))
        .with_partitions(vec![p]);
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![t])
        .with_rack_id(StrBytes::from_string(rack.into()));
    let ResponseKind::Fetch(r) = call(node, ApiKey::Fetch, version, RequestKind::Fetch(request))
    else {
        panic!("not a Fetch answer")
    };
    let p = &r.responses[0].partitions[0];
    Answer {
        error: p.error_code,
        preferred_read_replica: p.preferred_read_replica.0,
        high_watermark: p.high_watermark,
        record_bytes: p.records.as_ref().map_or(0, Bytes::len),
    }
}

#[test]
fn a_consumer_reads_from_the_in_sync_follower_in_its_rack() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| {
            let rack = rack_of(id);
            let extra = [
                ("broker.rack", rack.as_str()),
                (
                    "replica.selector.class",
                    "org.apache.kafka.common.replica.RackAwareReplicaSelector",
                ),
                ("auto.leader.rebalance.enable", "false"),
            ];
            node_with(tmp.path(), &etcd, (id, None), &extra)
        })
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    assert_eq!(create(&nodes[at(controller)], TOPIC, 1, 3), (0, 3));
    let (_, parts, _) = wait_for_metadata(&refs, TOPIC, |(e, p, _)| {
        *e == 0 && p.len() == 1 && p[0].leader > 0 && p[0].isr.len() == 3
    });
    let (leader, follower) = (parts[0].leader, parts[0].replicas[1]);
    let leader = &nodes[at(leader)];
    for i in 0..RECORDS {
        let (error, offset) = produce_acks(leader, TOPIC, 0, &format!("v{i}"), ACKS_ALL);
        assert_eq!((error, offset), (0, i as i64));
    }

    // The leader names the follower in the consumer's rack and sends no records.
    let sent = fetch(leader, 11, &rack_of(follower));
    assert_eq!(
        (sent.error, sent.preferred_read_replica),
        (0, follower),
        "{sent:?}"
    );
    assert_eq!(sent.record_bytes, 0, "{sent:?}");
    assert_eq!(sent.high_watermark, RECORDS as i64, "{sent:?}");
    // In the leader's own rack, in no rack, or in a rack nobody is in: the leader serves.
    let leader_rack = rack_of(parts[0].leader);
    for rack in [leader_rack.as_str(), "", "rack-9"] {
        let served = fetch(leader, 11, rack);
        assert_eq!(
            (served.error, served.preferred_read_replica),
            (0, -1),
            "{rack}: {served:?}"
        );
        assert!(served.record_bytes > 0, "{rack}: {served:?}");
    }
    follower_serves(&nodes[at(follower)], &rack_of(follower));
    librdkafka_reads_from_its_racks_follower(leader, &nodes[at(follower)], &rack_of(follower));
}

/// The follower serves a v11 consumer fetch up to its high watermark (every record, once
/// it has caught up), and refuses a v10 one.
fn follower_serves(follower: &ServerProc, rack: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let served = fetch(follower, 11, rack);
        assert_eq!(
            (served.error, served.preferred_read_replica),
            (0, -1),
            "{served:?}"
        );
        if served.high_watermark == RECORDS as i64 {
            assert!(served.record_bytes > 0, "{served:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{served:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(fetch(follower, 10, rack).error, NOT_LEADER_OR_FOLLOWER);
}

/// librdkafka's consumer with `client.rack` reads every record, in order, and the bytes
/// it read came from its rack's follower.
fn librdkafka_reads_from_its_racks_follower(
    leader: &ServerProc,
    follower: &ServerProc,
    rack: &str,
) {
    let served_before = metric(follower, "api.kafka.Fetch.bytes_out");
    let count = RECORDS.to_string();
    let out = run_bounded(
        &mut script(
            "rack_consume.py",
            &[&leader.kafka_addr(), TOPIC, rack, &count],
        ),
        Duration::from_secs(90),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "rack_consume.py: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: serde_json::Value = serde_json::from_str(&text).unwrap();
    let expected: Vec<String> = (0..RECORDS).map(|i| format!("v{i}")).collect();
    assert_eq!(read["values"], serde_json::json!(expected));
    let served = metric(follower, "api.kafka.Fetch.bytes_out") - served_before;
    let values: usize = expected.iter().map(String::len).sum();
    assert!(
        served as usize > values,
        "the follower sent {served} bytes of fetches for {values} bytes of values"
    );
}
