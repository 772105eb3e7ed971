//! Decommissioning a broker in one command on a three-node cluster (a real etcd, real
//! processes): `shardlog cluster decommission --broker 3` moves every replica off node 3
//! (each partition keeps its replication factor and its other replicas), waits until none
//! is left, and every acknowledged record is still read; run again it has nothing to move;
//! a partition with nowhere to go refuses the whole plan and moves nothing. Every wait is
//! bounded in time.

use std::time::Duration;

use crate::common;
use common::cli::shardlog;
use common::etcd::EtcdServer;
use common::server_proc::ServerProc;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_faults_e2e::node_with;
use super::cluster_topics_e2e::{create, produce_acks, records, wait_for_metadata, Described};

const LEAVING: i32 = 3;
const PARTITIONS: i32 = 3;
const PER_PARTITION: usize = 20;

fn at(id: i32) -> usize {
    (id - 1) as usize
}

fn decommission(node: &ServerProc, broker: i32) -> (String, String, bool) {
    let (addr, broker) = (node.addr(), broker.to_string());
    let args = [
        "cluster",
        "decommission",
        "--broker",
        &broker,
        "-b",
        &addr,
        "--wait-ms",
        "60000",
    ];
    shardlog(&args, None)
}

fn in_sync(p: &Described) -> bool {
    p.leader > 0 && p.isr.len() == p.replicas.len()
}

#[test]
fn a_broker_is_emptied_in_one_command_and_loses_no_record() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(tmp.path(), &etcd, (id, None), &[]))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    assert_eq!(
        create(&nodes[at(controller)], "spread", PARTITIONS, 2),
        (0, 2)
    );
    let (_, parts, _) = wait_for_metadata(&refs, "spread", |(e, p, _)| {
        *e == 0 && p.len() == PARTITIONS as usize && p.iter().all(in_sync)
    });
    assert!(
        parts.iter().any(|p| p.replicas.contains(&LEAVING)),
        "{parts:?}"
    );
    for (p, part) in parts.iter().enumerate() {
        for i in 0..PER_PARTITION {
            let value = format!("p{p}-{i}");
            let (error, _) = produce_acks(&nodes[at(part.leader)], "spread", p as i32, &value, -1);
            assert_eq!(error, 0, "{value}");
        }
    }

    let (out, err, ok) = decommission(&nodes[0], LEAVING);
    assert!(ok, "decommission failed: {out}{err}");
    assert!(
        out.contains("Save this to use as the --reassignment-json-file"),
        "{out}"
    );
    assert!(out.contains("Broker 3 holds no replica now"), "{out}");
    let (_, moved, _) = wait_for_metadata(&refs, "spread", |(_, p, _)| p.iter().all(in_sync));
    for (p, part) in moved.iter().enumerate() {
        assert!(!part.replicas.contains(&LEAVING), "{moved:?}");
        assert_eq!(
            part.replicas.len(),
            2,
            "the replication factor stays: {moved:?}"
        );
        let read = records(&nodes[at(part.leader)].kafka_addr(), "spread", p as i32);
        let values: Vec<String> = read.into_iter().map(|(_, v)| v).collect();
        let expected: Vec<String> = (0..PER_PARTITION).map(|i| format!("p{p}-{i}")).collect();
        assert_eq!(values, expected, "partition {p}");
    }
    let (out, _, ok) = decommission(&nodes[0], LEAVING);
    assert!(ok && out.contains("nothing to move"), "{out}");

    // Three replicas on three brokers: broker 3's copy has nowhere to go.
    assert_eq!(create(&nodes[at(controller)], "full", 1, 3), (0, 3));
    let (_, full, _) = wait_for_metadata(&refs, "full", |(_, p, _)| p.len() == 1 && in_sync(&p[0]));
    let (out, err, ok) = decommission(&nodes[1], LEAVING);
    assert!(!ok, "{out}");
    assert!(
        err.contains("full-0") && err.contains("nothing was moved"),
        "{err}"
    );
    let (_, after, _) = wait_for_metadata(&refs, "full", |_| true);
    assert_eq!(after[0].replicas, full[0].replicas, "nothing moved");
    let (out, err, ok) = decommission(&nodes[1], 9);
    assert!(!ok && err.contains("not a live node"), "{out}{err}");
}
