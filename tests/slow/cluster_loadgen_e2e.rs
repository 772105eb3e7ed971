//! loadgen against a three-node cluster (a real etcd, real processes, loopback): the
//! native ClusterMetadata names every node at its native listener with its epoch, the
//! controller and its epoch, and each partition's leader, leader epoch, replicas and ISR
//! exactly as Kafka's Metadata does; loadgen, given a bootstrap list whose first address
//! is dead, creates the topic through the Kafka API, writes each partition on its leader
//! with acks=all, reports every node, and `loadgen consume` reads back every byte it
//! wrote. Every loop is bounded in time.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::etcd::EtcdServer;
use common::server_proc::ServerProc;
use shardlog::protocol::{ClusterMetadataResponse, ErrorCode, Request, ResponseBody};
use shardlog::tools::native_blocking::NativeBlocking;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_faults_e2e::node_with;
use super::cluster_topics_e2e::wait_for_metadata;

const TOPIC: &str = "loaded";
const PARTITIONS: usize = 6;

/// The loadgen binary cargo built beside shardlog's (`cargo test` builds the workspace).
fn loadgen_bin() -> PathBuf {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_shardlog")).with_file_name("loadgen");
    assert!(
        bin.exists(),
        "{} is missing: build the workspace first (cargo build -p loadgen)",
        bin.display()
    );
    bin
}

fn loadgen(args: &[&str]) -> String {
    let out = Command::new(loadgen_bin()).args(args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "loadgen {args:?}: {stdout}\n{stderr}");
    stdout.into_owned()
}

fn cluster_metadata(node: &ServerProc) -> ClusterMetadataResponse {
    let mut c = NativeBlocking::connect(&node.addr(), Duration::from_secs(5)).unwrap();
    let asked = Request::ClusterMetadata {
        topics: Some(vec![TOPIC.to_string()]),
    };
    match c.call(&asked) {
        Ok(ResponseBody::ClusterMetadata(m)) => m,
        other => panic!("ClusterMetadata: {other:?}"),
    }
}

#[test]
fn loadgen_writes_every_partition_on_its_leader_and_reports_each_node() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(tmp.path(), &etcd, (id, None), &[]))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    wait_for_agreement(&refs, &all, Duration::from_secs(20));
    let dead = format!("127.0.0.1:{}", common::server_proc::free_port());
    let bootstrap = format!("{dead},{},{}", nodes[1].addr(), nodes[2].addr());
    let json = tmp.path().join("write.json");
    let partitions = PARTITIONS.to_string();
    let out = loadgen(&[
        "write",
        "--bootstrap",
        &bootstrap,
        "--topic",
        TOPIC,
        "--create",
        "--partitions",
        &partitions,
        "--replication-factor",
        "3",
        "--acks",
        "all",
        "--record-size",
        "100",
        "--batch-bytes",
        "16KiB",
        "--connections",
        "6",
        "--total-bytes",
        "6MiB",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (_, placed, _) = wait_for_metadata(&refs, TOPIC, |(e, p, _)| {
        *e == 0 && p.len() == PARTITIONS && p.iter().all(|p| p.isr.len() == 3)
    });
    same_as_kafkas_metadata(&nodes, &placed);
    every_node_reported(&out, &json, &placed);
    let consumed = loadgen(&[
        "consume",
        "--bootstrap",
        &bootstrap,
        "--topic",
        TOPIC,
        "--cache",
        "warm",
    ]);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let bytes = written["write"]["bytes"].as_u64().unwrap();
    assert!(
        consumed.contains(&format!(" {bytes} bytes in ")),
        "consume read every byte written ({bytes}): {consumed}"
    );
}

/// Every node answers ClusterMetadata alike, and as Kafka's Metadata: the same leaders,
/// leader epochs, replicas and ISR; three nodes at their native listeners with their
/// registration epochs; the elected controller with its epoch.
fn same_as_kafkas_metadata(nodes: &[ServerProc], placed: &[super::cluster_topics_e2e::Described]) {
    for (i, node) in nodes.iter().enumerate() {
        let m = cluster_metadata(node);
        assert_eq!(m.node_id, i as i32 + 1);
        assert_eq!(m.nodes.len(), 3, "{m:?}");
        assert_eq!(m.nodes[0].node_id, m.node_id, "the answering node first");
        for n in &m.nodes {
            let at = format!("{}:{}", n.host, n.port);
            assert_eq!(at, nodes[(n.node_id - 1) as usize].addr(), "{m:?}");
            assert!(n.epoch > 0 && !n.shutting_down, "{m:?}");
        }
        assert!(m.controller_id > 0 && m.controller_epoch > 0, "{m:?}");
        let t = m.topic(TOPIC).unwrap();
        assert_eq!(t.error_code, ErrorCode::None);
        assert_eq!(t.partitions.len(), placed.len());
        for (p, k) in t.partitions.iter().zip(placed) {
            let kafka = (k.leader, k.leader_epoch, &k.replicas, &k.isr, &k.offline);
            assert_eq!(
                (p.leader, p.leader_epoch, &p.replicas, &p.isr, &p.offline),
                kafka
            );
        }
    }
}

/// loadgen's per-node lines and JSON: each node's partitions led as the cluster says, all
/// the records between them, and CPU on every node (followers replicate).
fn every_node_reported(
    out: &str,
    json: &std::path::Path,
    placed: &[super::cluster_topics_e2e::Described],
) {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let result = &doc["write"];
    let reported = result["nodes"].as_array().unwrap();
    assert_eq!(reported.len(), 3, "{doc}");
    let mut records = 0;
    for n in reported {
        let id = n["node"].as_i64().unwrap() as i32;
        let led = placed.iter().filter(|p| p.leader == id).count();
        assert_eq!(n["partitions_led"].as_u64(), Some(led as u64), "{doc}");
        assert_eq!(n["records"].as_u64().unwrap() > 0, led > 0, "{doc}");
        assert!(n["server_cpu_seconds"].as_f64().unwrap() > 0.0, "{doc}");
        records += n["records"].as_u64().unwrap();
        assert!(out.contains(&format!("node {id:<4}")), "{out}");
    }
    assert_eq!(Some(records), result["records"].as_u64(), "{doc}");
    let bytes = result["bytes"].as_u64().unwrap();
    assert!(bytes >= 6 << 20 && records * 100 < bytes, "{doc}");
}
