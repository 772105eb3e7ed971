//! loadgen and the tools against a three-node cluster (a real etcd, real processes,
//! loopback): the native ClusterMetadata names every node at its native listener with its
//! epoch, the controller and its epoch, and each partition's leader, leader epoch, replicas
//! and ISR exactly as Kafka's Metadata does; loadgen, given a bootstrap list whose first
//! address is dead, creates the topic through the Kafka API, writes each partition on its
//! leader with acks=all, reports every node, and `loadgen consume` reads back every byte
//! it wrote; `shardlog produce`, `consume`, `get-offsets`, `delete-records` and
//! `timestamps`, given one node, reach every partition on its leader. Every loop is
//! bounded in time.

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

/// etcd and three nodes that agree on their controller.
fn three_nodes(dir: &std::path::Path) -> (EtcdServer, Vec<ServerProc>) {
    let etcd = EtcdServer::start(&dir.join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(dir, &etcd, (id, None), &[]))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    wait_for_agreement(&refs, &all, Duration::from_secs(20));
    (etcd, nodes)
}

#[test]
fn loadgen_writes_every_partition_on_its_leader_and_reports_each_node() {
    let tmp = tempfile::tempdir().unwrap();
    let (_etcd, nodes) = three_nodes(tmp.path());
    let refs: Vec<&ServerProc> = nodes.iter().collect();
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

fn shardlog(args: &[&str], stdin: Option<&str>) -> String {
    let (out, err, ok) = common::cli::shardlog(args, stdin);
    assert!(ok, "shardlog {args:?}: {out}\n{err}");
    out
}

#[test]
fn the_tools_reach_every_partition_on_its_leader() {
    let tmp = tempfile::tempdir().unwrap();
    let (_etcd, nodes) = three_nodes(tmp.path());
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let one = nodes[0].addr();
    let topic = ["-b", one.as_str(), "--topic", "tools"];
    let create = ["--partitions", "3", "--replication-factor", "3"];
    shardlog(&[&["topics", "create"][..], &topic, &create].concat(), None);
    let (_, placed, _) = wait_for_metadata(&refs, "tools", |(e, p, _)| {
        *e == 0 && p.len() == 3 && p.iter().all(|p| p.leader > 0 && p.isr.len() == 3)
    });
    assert!(
        placed.iter().any(|p| p.leader != 1),
        "some partition is led elsewhere"
    );
    let lines: Vec<String> = (0..30).map(|i| format!("k{i}|v{i}")).collect();
    let input = lines.join("\n") + "\n";
    let keyed = ["--key-separator", "|", "--acks", "all"];
    shardlog(&[&["produce"][..], &topic, &keyed].concat(), Some(&input));
    let format = ["--format", "%k|%s\\n"];
    let read = shardlog(&[&["consume"][..], &topic, &format].concat(), None);
    let mut read: Vec<&str> = read.lines().collect();
    let mut expected: Vec<&str> = lines.iter().map(String::as_str).collect();
    read.sort();
    expected.sort();
    assert_eq!(
        read, expected,
        "every record read back, on each partition's leader"
    );
    let ends = shardlog(&[&["get-offsets"][..], &topic].concat(), None);
    let total: i64 = ends
        .lines()
        .map(|l| l.rsplit(':').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!((ends.lines().count(), total), (3, 30), "{ends}");
    // A delete on a partition node 1 does not lead.
    let elsewhere = placed
        .iter()
        .position(|p| p.leader != 1)
        .unwrap()
        .to_string();
    let delete = ["--partition", elsewhere.as_str(), "--offset", "1"];
    let deleted = shardlog(&[&["delete-records"][..], &topic, &delete].concat(), None);
    assert!(deleted.contains("low_watermark: 1"), "{deleted}");
    shardlog(&[&["timestamps"][..], &topic].concat(), None);
    groups_reach_their_coordinators(&nodes, &topic);
    log_dirs_lists_every_brokers_replicas(&nodes);
}

/// `log-dirs` as kafka-log-dirs: every live broker, each with the replicas it holds (a
/// topic of one replica per partition: each broker holds one of three), or those of
/// `--brokers`.
fn log_dirs_lists_every_brokers_replicas(nodes: &[ServerProc]) {
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let one = nodes[0].addr();
    let solo = ["-b", one.as_str(), "--topic", "solo", "--partitions", "3"];
    shardlog(
        &[
            &["topics", "create"][..],
            &solo,
            &["--replication-factor", "1"],
        ]
        .concat(),
        None,
    );
    let (_, placed, _) = wait_for_metadata(&refs, "solo", |(e, p, _)| {
        *e == 0 && p.len() == 3 && p.iter().all(|p| p.leader > 0)
    });
    let listed = shardlog(&["log-dirs", "-b", &one, "--topic-list", "solo"], None);
    let doc: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let brokers = doc["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 3, "{doc}");
    for b in brokers {
        let id = b["broker"].as_i64().unwrap() as i32;
        let held: Vec<String> = (b["logDirs"][0]["partitions"].as_array().unwrap().iter())
            .map(|p| p["partition"].as_str().unwrap().to_string())
            .collect();
        let want: Vec<String> = (placed.iter().enumerate())
            .filter(|(_, p)| p.replicas == [id])
            .map(|(i, _)| format!("solo-{i}"))
            .collect();
        assert_eq!(held, want, "broker {id}: {doc}");
    }
    let two = shardlog(
        &[
            "log-dirs",
            "-b",
            &one,
            "--topic-list",
            "solo",
            "--brokers",
            "2",
        ],
        None,
    );
    let doc: serde_json::Value = serde_json::from_str(&two).unwrap();
    assert_eq!(doc["brokers"].as_array().map(Vec::len), Some(1), "{doc}");
    assert_eq!(doc["brokers"][0]["broker"], 2, "{doc}");
}

/// `consume --group` commits at each group's coordinator, and `consumer-groups`, given
/// other nodes, lists every group (each node lists those it coordinates) and describes
/// each from its coordinator with the leaders' log ends: no lag.
fn groups_reach_their_coordinators(nodes: &[ServerProc], topic: &[&str]) {
    let groups = ["g1", "g2", "g3", "g4", "g5", "g6"];
    for group in groups {
        let read = ["--group", group, "--format", "%s\\n"];
        let out = shardlog(&[&["consume"][..], topic, &read].concat(), None);
        assert_eq!(
            out.lines().count(),
            29,
            "{group}: every record but the one deleted: {out}"
        );
    }
    let list = format!("{},{}", nodes[1].addr(), nodes[2].kafka_addr());
    let listed = shardlog(&["consumer-groups", "-b", &list, "--list"], None);
    for group in groups {
        assert!(
            listed.lines().any(|l| l == group),
            "{group} listed: {listed}"
        );
        let describe = ["--describe", "--group", group];
        let two = nodes[1].addr();
        let out = shardlog(
            &[&["consumer-groups", "-b", two.as_str()][..], &describe].concat(),
            None,
        );
        let rows: Vec<&str> = out.lines().filter(|l| l.contains(" tools ")).collect();
        assert_eq!(rows.len(), 3, "{group}: {out}");
        let lags: Vec<&str> = rows
            .iter()
            .map(|r| r.split_whitespace().nth(5).unwrap())
            .collect();
        assert!(lags.iter().all(|l| *l == "0"), "{group} has no lag: {out}");
    }
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
