//! Reassigning partitions on a three-node cluster (a real etcd, real processes), with
//! `shardlog topics reassign` (Kafka's kafka-reassign-partitions files): a partition
//! moves from one node to the two others under acks=all load, the new replicas catch up
//! into the ISR, leadership moves into the target, the old copy is deleted, and no
//! acknowledged record is lost; a move held back by a replication throttle stays in
//! progress through a kill -9 of the new replica's node and of the controller, can be
//! cancelled, and completes once the throttle is lifted; bad plans are refused with
//! Kafka's errors and change nothing; throttled replicas catch up no faster than the
//! throttled rate; `--generate` proposes a plan over the brokers given. Every loop is
//! bounded in time.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cli::shardlog;
use common::etcd::EtcdServer;
use common::server_proc::ServerProc;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_faults_e2e::node_with;
use super::cluster_operations_e2e::metric;
use super::cluster_topics_e2e::{
    create, described, metadata, produce_acks, records, set_config, set_resource_config,
    wait_for_metadata, Described,
};

const MOVING: &str = "moving";

fn at(id: i32) -> usize {
    (id - 1) as usize
}

/// Three nodes that agree, and the controller's id.
fn three(dir: &std::path::Path, etcd: &EtcdServer) -> (Vec<ServerProc>, i32) {
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(dir, etcd, (id, None), &[]))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    (nodes, controller)
}

/// `shardlog topics reassign --reassign MODE` against `node` with the plan in `plan`.
fn reassign(node: &ServerProc, mode: &str, plan: &std::path::Path) -> (String, String, bool) {
    let file = plan.to_string_lossy().into_owned();
    reassign_tool(node, mode, &["--reassignment-json-file", &file])
}

/// `shardlog topics reassign --reassign MODE` against `node` with `more` arguments.
fn reassign_tool(node: &ServerProc, mode: &str, more: &[&str]) -> (String, String, bool) {
    let addr = node.addr();
    let mut args = vec!["topics", "reassign", "-b", &addr, "--reassign", mode];
    args.extend_from_slice(more);
    shardlog(&args, None)
}

/// `--verify` says the move is still under way.
fn still_in_progress(node: &ServerProc, plan: &std::path::Path) {
    let (out, err, ok) = reassign(node, "verify", plan);
    assert!(ok && out.contains("is still in progress."), "{out}{err}");
}

/// Plans with a broker that is not registered, a broker twice, or no broker are refused
/// with Kafka's reasons, and the partition is as it was.
fn bad_plans_change_nothing(
    tmp: &tempfile::TempDir,
    node: &ServerProc,
    before: &Described,
    outside: i32,
) {
    for (name, replicas, why) in [
        (
            "nine.json",
            vec![before.replicas[0], 9],
            "broker 9, but no such broker is registered",
        ),
        ("twice.json", vec![outside, outside], "more than once"),
        ("empty.json", vec![], "empty replica list"),
    ] {
        let (out, err, ok) = reassign(node, "execute", &plan(tmp.path(), name, &replicas));
        assert!(
            !ok && err.contains("INVALID_REPLICA_ASSIGNMENT (39)") && err.contains(why),
            "{name}: {out}{err}"
        );
    }
    assert_eq!(metadata(node, MOVING).1[0], *before, "nothing changed");
}

/// Writes a plan moving `MOVING`-0 onto `replicas`.
fn plan(dir: &std::path::Path, name: &str, replicas: &[i32]) -> std::path::PathBuf {
    let path = dir.join(name);
    let text = serde_json::json!({"version": 1, "partitions": [{"topic": MOVING, "partition": 0, "replicas": replicas}]});
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

/// Waits (bounded) until `--verify` says the plan is done; the time it took.
fn wait_completed(node: &ServerProc, plan: &std::path::Path, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (out, err, ok) = reassign(node, "verify", plan);
        assert!(ok, "{err}");
        if out.contains("is completed.") {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "not completed within {within:?}:\n{out}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The partition as every node describes it, once they agree and `ready` holds.
fn agreed(nodes: &[&ServerProc], ready: impl Fn(&Described) -> bool) -> Described {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen: Vec<Option<Described>> = (nodes.iter())
            .map(|n| metadata(n, MOVING).1.first().cloned())
            .collect();
        if let Some(first) = seen[0].clone().filter(&ready) {
            if seen.iter().all(|s| s.as_ref() == Some(&first)) {
                return first;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no agreement on {MOVING}-0: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The bytes of `.log` files in `node`'s copy of `MOVING`-0.
fn local_log_bytes(dir: &std::path::Path, id: i32) -> u64 {
    let copy = dir.join(format!("node-{id}")).join(format!("{MOVING}-0"));
    let files = std::fs::read_dir(&copy).unwrap_or_else(|e| panic!("{}: {e}", copy.display()));
    let logs = files
        .map(|f| f.unwrap())
        .filter(|f| f.file_name().to_string_lossy().ends_with(".log"));
    logs.map(|f| f.metadata().unwrap().len()).sum()
}

/// acks=all producing to `MOVING`-0 through whichever node leads it, until stopped: the
/// values acknowledged.
fn produce_while(nodes: Vec<String>, stop: Arc<AtomicBool>, acked: Arc<Mutex<Vec<String>>>) {
    use super::cluster_topics_e2e::produce_to;
    let mut n = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        let value = format!("m-{n}");
        let taken = |addr: &String| {
            produce_to(addr, (MOVING, 0), &value, -1).is_ok_and(|(code, _)| code == 0)
        };
        if nodes.iter().any(taken) {
            acked.lock().unwrap().push(value);
            n += 1;
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_partition_moves_to_other_nodes_under_acks_all_and_its_old_copy_is_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (nodes, controller) = three(tmp.path(), &etcd);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    assert_eq!(create(&nodes[at(controller)], MOVING, 1, 1), (0, 1));
    let before = agreed(&refs, |p| p.leader > 0);
    let from = before.replicas[0];
    let to: Vec<i32> = (1..=3).filter(|&id| id != from).collect();
    for i in 0..2000 {
        let (code, _) = produce_acks(&nodes[at(from)], MOVING, 0, &format!("before-{i}"), -1);
        assert_eq!(code, 0);
    }
    let (stop, acked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let producer = {
        let addrs = nodes.iter().map(|n| n.kafka_addr()).collect();
        let (stop, acked) = (stop.clone(), acked.clone());
        std::thread::spawn(move || produce_while(addrs, stop, acked))
    };
    std::thread::sleep(Duration::from_millis(500));
    let moved = plan(tmp.path(), "move.json", &to);
    // Asked of a node that is not the controller: it forwards the request.
    let asked = &nodes[at(if controller == 1 { 2 } else { 1 })];
    let (out, err, ok) = reassign(asked, "execute", &moved);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains(&format!("\"replicas\":[{from}]")),
        "the rollback plan:\n{out}"
    );
    assert!(
        out.contains("Successfully started partition reassignments for moving-0"),
        "{out}"
    );
    let took = wait_completed(asked, &moved, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    let after = agreed(&refs, |p| p.leader > 0 && p.isr.len() == 2);
    assert_eq!(after.replicas, to);
    assert!(
        to.contains(&after.leader),
        "leadership moved into the target: {after:?}"
    );
    let found: Vec<String> = records(&nodes[at(after.leader)].kafka_addr(), MOVING, 0)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let acked = acked.lock().unwrap();
    let lost: Vec<&String> = acked.iter().filter(|v| !found.contains(v)).collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    assert_eq!(
        found.iter().filter(|v| v.starts_with("before-")).count(),
        2000
    );
    assert!(acked.len() > 10, "the load kept going: {}", acked.len());
    let deadline = Instant::now() + Duration::from_secs(10);
    while local_log_bytes(tmp.path(), from) > 0 {
        assert!(
            Instant::now() < deadline,
            "node {from} kept its copy after the move"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("reassignment of {MOVING}-0 from [{from}] to {to:?} under acks=all: completed in {took:?}; {} acknowledged during it, all found; the old copy deleted", acked.len());
}

#[test]
fn a_pending_reassignment_survives_kills_can_be_cancelled_and_bad_plans_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    // A new replica copies next to nothing (its topic lists it as throttled below), so a
    // move stays in progress for as long as the test wants; in-sync replicas never wait.
    let crawl = [("follower.replication.throttled.rate", "1")];
    let mut nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(tmp.path(), &etcd, (id, None), &crawl))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    assert_eq!(create(&nodes[at(controller)], MOVING, 1, 2), (0, 2));
    let before = agreed(&refs, |p| p.isr.len() == 2);
    // More than two fetches' worth (1 MiB each): the first fetch after each start of a
    // node is let through by its full bucket.
    fill(&nodes[at(before.leader)], MOVING, 40);
    let throttle = "follower.replication.throttled.replicas";
    assert_eq!(set_config(&nodes[0], MOVING, throttle, "*"), 0);
    let outside = (1..=3).find(|id| !before.replicas.contains(id)).unwrap();
    let asker = at((1..=3).find(|&id| id != outside).unwrap());
    bad_plans_change_nothing(&tmp, &nodes[asker], &before, outside);

    let target = vec![outside, before.replicas[0]];
    let moving = plan(tmp.path(), "onto-outside.json", &target);
    let (out, err, ok) = reassign(&nodes[asker], "execute", &moving);
    assert!(ok, "{out}{err}");
    still_in_progress(&nodes[asker], &moving);
    // The leader's view shows the move within a heartbeat.
    let leader = &nodes[at(metadata(&nodes[0], MOVING).1[0].leader)];
    let deadline = Instant::now() + Duration::from_secs(5);
    while metric(leader, "reassigning_partitions") != 1 {
        assert!(
            Instant::now() < deadline,
            "the leader never counted the move"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (out, err, ok) = reassign(&nodes[asker], "cancel", &moving);
    assert!(ok && out.contains("Successfully cancelled"), "{out}{err}");
    let (out, err, _) = reassign(&nodes[asker], "cancel", &moving);
    assert!(
        err.contains("NO_REASSIGNMENT_IN_PROGRESS (85)"),
        "{out}{err}"
    );
    let back = agreed(&refs, |p| p.isr.len() == 2 && p.replicas.len() == 2);
    let mut sorted = back.replicas.clone();
    sorted.sort_unstable();
    let mut original = before.replicas.clone();
    original.sort_unstable();
    assert_eq!(sorted, original, "the original replicas again");

    // Started again, it outlives a kill -9 of the new replica's node and of the
    // controller (the move lives in etcd), then completes once the throttle is lifted.
    let (out, err, ok) = reassign(&nodes[asker], "execute", &moving);
    assert!(ok, "{out}{err}");
    nodes[at(outside)].kill9();
    std::thread::sleep(Duration::from_secs(4));
    still_in_progress(&nodes[asker], &moving);
    nodes[at(outside)].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    nodes[at(controller)].kill9();
    let survivors: Vec<&ServerProc> = (nodes.iter().enumerate())
        .filter(|(i, _)| *i != at(controller))
        .map(|(_, n)| n)
        .collect();
    std::thread::sleep(Duration::from_secs(4));
    still_in_progress(survivors[0], &moving);
    assert_eq!(set_config(survivors[0], MOVING, throttle, ""), 0);
    wait_completed(survivors[0], &moving, Duration::from_secs(30));
    nodes[at(controller)].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let done = agreed(&refs, |p| p.isr.len() == 2);
    assert_eq!(done.replicas, target);
    let found = records(&nodes[at(done.leader)].kafka_addr(), MOVING, 0);
    assert_eq!(found.len(), 40, "every record is on the new leader");

    // --generate proposes the topic over the brokers given, with its replication factor.
    let topics = tmp.path().join("topics.json");
    std::fs::write(
        &topics,
        format!("{{\"version\":1,\"topics\":[{{\"topic\":\"{MOVING}\"}}]}}"),
    )
    .unwrap();
    let t = topics.to_string_lossy().into_owned();
    let more = ["--topics-to-move-json-file", &t, "--brokers", "1,3"];
    let (out, err, ok) = reassign_tool(&nodes[0], "generate", &more);
    assert!(ok, "{err}");
    let proposed = out
        .split("Proposed partition reassignment configuration\n")
        .nth(1)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(proposed.trim()).unwrap();
    let mut replicas: Vec<i64> = v["partitions"][0]["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_i64().unwrap())
        .collect();
    replicas.sort_unstable();
    assert_eq!(replicas, [1, 3], "{out}");
}

/// Fills `topic`-0 (led by `node`) with `n` records of 100 KB, acks=all.
fn fill(node: &ServerProc, topic: &str, n: usize) {
    let value = "x".repeat(100_000);
    for i in 0..n {
        let (code, _) = produce_acks(node, topic, 0, &format!("{i}{value}"), -1);
        assert_eq!(code, 0, "record {i}");
    }
}

/// Moves `topic`-0 onto `to` (plan and verify with the tool); how long it took.
fn move_onto(dir: &std::path::Path, node: &ServerProc, topic: &str, to: i32) -> Duration {
    let path = dir.join(format!("{topic}.json"));
    let text = serde_json::json!({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [to]}]});
    std::fs::write(&path, text.to_string()).unwrap();
    let (out, err, ok) = reassign(node, "execute", &path);
    assert!(ok, "{out}{err}");
    wait_completed(node, &path, Duration::from_secs(60))
}

#[test]
fn throttled_replicas_catch_up_no_faster_than_the_throttled_rate() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let rates = [
        ("leader.replication.throttled.rate", "1000000"),
        ("follower.replication.throttled.rate", "1000000"),
    ];
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(tmp.path(), &etcd, (id, None), &rates))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    // 4 MB each; one topic throttled where its new replica follows, one where its leader
    // sends, one not at all.
    let mut took = Vec::new();
    for (topic, list) in [
        (
            "by-follower",
            Some("follower.replication.throttled.replicas"),
        ),
        ("by-leader", Some("leader.replication.throttled.replicas")),
        ("unthrottled", None),
    ] {
        assert_eq!(create(&nodes[at(controller)], topic, 1, 1), (0, 1));
        let (_, parts, _) = wait_for_metadata(&refs, topic, |(e, p, _)| {
            *e == 0 && p.len() == 1 && p[0].leader > 0
        });
        let leader = parts[0].leader;
        fill(&nodes[at(leader)], topic, 40);
        if let Some(key) = list {
            assert_eq!(set_config(&nodes[0], topic, key, "*"), 0);
        }
        let to = (1..=3).find(|&id| id != leader).unwrap();
        took.push((topic, move_onto(tmp.path(), &nodes[0], topic, to)));
    }
    eprintln!("moving 4 MB at a 1 MB/s replication throttle: {took:?}");
    for (topic, t) in &took[..2] {
        assert!(
            *t >= Duration::from_secs(2),
            "{topic}: 4 MB at 1 MB/s moved in {t:?}"
        );
    }
}

/// `--throttle` as Kafka's tool sets it: both rates on each broker of the move (dynamic
/// broker configs, each on the broker itself), the moving replicas listed on the topic;
/// the move copies no faster than the rate; `--verify`, once it is done, removes it all.
#[test]
fn the_tools_throttle_holds_the_move_back_and_verify_removes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (nodes, controller) = three(tmp.path(), &etcd);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let topic = "tool-throttled";
    assert_eq!(create(&nodes[at(controller)], topic, 1, 1), (0, 1));
    let (_, parts, _) = wait_for_metadata(&refs, topic, |(e, p, _)| {
        *e == 0 && p.len() == 1 && p[0].leader > 0
    });
    let leader = parts[0].leader;
    fill(&nodes[at(leader)], topic, 40);
    let to = (1..=3).find(|&id| id != leader).unwrap();
    let path = tmp.path().join("tool.json");
    let text = serde_json::json!({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [to]}]});
    std::fs::write(&path, text.to_string()).unwrap();
    let file = path.to_string_lossy().into_owned();
    let more = ["--reassignment-json-file", &file, "--throttle", "1000000"];
    let (out, err, ok) = reassign_tool(&nodes[0], "execute", &more);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("throttle limit was set to 1000000 B/s"),
        "{out}"
    );
    for (id, key) in [
        (leader, "leader.replication.throttled.rate"),
        (to, "follower.replication.throttled.rate"),
    ] {
        let rate = described(&nodes[at(id)], (4, &id.to_string()), key);
        assert_eq!(rate.as_deref(), Some("1000000"), "broker {id}'s {key}");
    }
    let lists = [
        (
            "leader.replication.throttled.replicas",
            format!("0:{leader}"),
        ),
        ("follower.replication.throttled.replicas", format!("0:{to}")),
    ];
    for (key, want) in &lists {
        let got = described(&nodes[0], (2, topic), key);
        assert_eq!(got.as_deref(), Some(want.as_str()), "{key}");
    }
    let took = wait_completed(&nodes[0], &path, Duration::from_secs(60));
    eprintln!("moving 4 MB with --throttle 1000000: {took:?}");
    assert!(
        took >= Duration::from_secs(2),
        "4 MB at 1 MB/s moved in {took:?}"
    );
    // The verify that saw it done removed the throttle: rates back to the config's, lists empty.
    for id in [leader, to] {
        let rate = described(
            &nodes[at(id)],
            (4, &id.to_string()),
            "leader.replication.throttled.rate",
        );
        assert_eq!(
            rate.as_deref(),
            Some(i64::MAX.to_string().as_str()),
            "broker {id}"
        );
    }
    for (key, _) in &lists {
        assert_eq!(
            described(&nodes[0], (2, topic), key).as_deref(),
            Some(""),
            "{key}"
        );
    }
    // Another broker's configs are that broker's to change.
    let rate = "leader.replication.throttled.rate";
    let other = (1..=3).find(|&id| id != 1).unwrap().to_string();
    assert_eq!(set_resource_config(&nodes[0], (4, &other), rate, "5"), 42);
    assert_eq!(set_resource_config(&nodes[0], (4, "1"), rate, "5"), 0);
    a_cluster_wide_default_reaches_every_node(&nodes, topic);
}

/// `kafka-configs --entity-type brokers --entity-default` on one node: etcd holds it and
/// every node runs it (its broker configs and the topics without an override of their
/// own), while a broker's own value still wins on that broker.
fn a_cluster_wide_default_reaches_every_node(nodes: &[ServerProc], topic: &str) {
    let retention = "log.retention.ms";
    assert_eq!(
        set_resource_config(&nodes[1], (4, ""), retention, "123456789"),
        0
    );
    assert_eq!(
        set_resource_config(&nodes[2], (4, "3"), retention, "987654321"),
        0
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    for (i, node) in nodes.iter().enumerate() {
        let id = (i + 1).to_string();
        let want = if id == "3" { "987654321" } else { "123456789" };
        loop {
            let broker = described(node, (4, &id), retention);
            let topics = described(node, (2, topic), "retention.ms");
            if (broker.as_deref(), topics.as_deref()) == (Some(want), Some(want)) {
                break;
            }
            let seen = format!("node {id}: broker {broker:?}, topic {topics:?}, want {want}");
            assert!(std::time::Instant::now() < deadline, "{seen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // A value no broker config takes is refused, and nothing changes.
    assert_ne!(
        set_resource_config(&nodes[0], (4, ""), retention, "soon"),
        0
    );
    let kept = described(&nodes[0], (4, "1"), retention);
    assert_eq!(kept.as_deref(), Some("123456789"));
}
