//! Operating a three-node cluster (a real etcd, real processes): a rolling restart by
//! SIGTERM under acks=all load hands each node's leaderships to in-sync followers before
//! it stops (controlled shutdown), exits 0, loses no acknowledged record and leaves no
//! gap in acknowledgements as long as a failure detection; leadership returns to the
//! preferred replicas on its own (auto.leader.rebalance.enable), or when asked with
//! ElectLeaders PREFERRED on any node; UNCLEAN elects a replica outside the ISR only
//! when asked; replicas are spread over racks (broker.rack), which Metadata reports. Every loop is bounded in time.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::cli::shardlog;
use common::etcd::EtcdServer;
use common::kafka_clients::{run_bounded, script};
use common::server_proc::ServerProc;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::cluster_e2e::{describe, members, wait_for_agreement};
use super::cluster_faults_e2e::{
    every_acknowledged_value_is_found_once, node_with, start_load, Load, TOPIC,
};
use super::cluster_topics_e2e::{call, create, produce_acks, wait_for_metadata, Described};

/// A failure is detected after this long; a handed-off leadership must not cost as much.
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

fn at(id: i32) -> usize {
    (id - 1) as usize
}

fn in_sync(p: &Described) -> bool {
    p.leader > 0 && p.isr.len() == p.replicas.len()
}

fn preferred_lead(p: &Described) -> bool {
    in_sync(p) && p.leader == p.replicas[0]
}

/// The longest time without an acknowledgement between `from` and `to` (counting from
/// the last acknowledgement before `from`).
fn longest_gap(times: &[Instant], from: Instant, to: Instant) -> Duration {
    let before = times.iter().rev().find(|t| **t <= from).copied();
    let during = times.iter().copied().filter(|t| *t > from && *t <= to);
    let mut last = before.unwrap_or(from);
    let mut longest = Duration::ZERO;
    for t in during.chain(std::iter::once(to)) {
        longest = longest.max(t - last);
        last = t;
    }
    longest
}

#[test]
fn a_rolling_restart_under_acks_all_hands_off_leadership_first_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let session = SESSION_TIMEOUT.as_millis().to_string();
    let extra = [
        ("broker.session.timeout.ms", session.as_str()),
        ("leader.imbalance.check.interval.seconds", "1"),
    ];
    let mut nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_with(tmp.path(), &etcd, (id, None), &extra))
        .collect();
    let Load {
        stop,
        acked,
        producer,
    } = start_load(&nodes);
    std::thread::sleep(Duration::from_secs(2));
    let mut gaps = Vec::new();
    for id in 1..=3 {
        let from = Instant::now();
        assert!(
            nodes[at(id)].terminate(Duration::from_secs(30)),
            "node {id} exits 0 after SIGTERM"
        );
        let stopped_in = from.elapsed();
        let log = nodes[at(id)].log_text();
        let handed_off = log.matches("controlled shutdown: every leadership moved");
        assert_eq!(handed_off.count(), 1, "node {id}:\n{log}");
        // Leadership returns to the preferred replicas once it is back in sync (the
        // balance is checked every second here).
        std::thread::sleep(Duration::from_secs(1));
        let gap_off = longest_gap(&acked.lock().unwrap().times, from, Instant::now());
        let back = Instant::now();
        nodes[at(id)].respawn();
        let refs: Vec<&ServerProc> = nodes.iter().collect();
        wait_for_metadata(&refs, TOPIC, |(_, p, b)| {
            b.len() == 3 && p.iter().all(preferred_lead)
        });
        std::thread::sleep(Duration::from_secs(1));
        let gap_back = longest_gap(&acked.lock().unwrap().times, back, Instant::now());
        eprintln!("rolling restart of node {id}: stopped {stopped_in:?} after SIGTERM; longest gap between acknowledgements while it stopped {gap_off:?}, while it came back and led again {gap_back:?}");
        gaps.push(gap_off.max(gap_back));
    }
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    let acked = acked.lock().unwrap();
    every_acknowledged_value_is_found_once(&nodes, &acked);
    operators_see_the_restarts(&nodes);
    eprintln!(
        "rolling restart under acks=all: {} acknowledged, all found once; longest gaps {gaps:?}",
        acked.values.len()
    );
    for (id, gap) in (1..=3).zip(&gaps) {
        assert!(
            *gap < SESSION_TIMEOUT,
            "restarting node {id} stalled acknowledgements for {gap:?}, as long as a failure detection: its leaderships were not handed off"
        );
    }
}

/// `shardlog topics describe` of `topic` against a node's native listener, with `flags`.
fn describe_cli(node: &ServerProc, topic: &str, flags: &[&str]) -> String {
    let addr = node.addr();
    let mut args = vec!["topics", "describe", "-b", &addr, "--topic", topic];
    args.extend_from_slice(flags);
    let (out, err, ok) = shardlog(&args, None);
    assert!(ok, "{err}");
    out
}

/// A node's value of a metric (native Metrics API, summed over its shards).
pub(crate) fn metric(node: &ServerProc, name: &str) -> u64 {
    let report = node.metrics();
    let value = report.values.iter().find(|(n, _)| n == name);
    value.map_or_else(|| panic!("no metric {name}"), |(_, v)| *v)
}

/// What the alerting metrics say once the restarts are over: one controller, nothing
/// under-replicated or offline; the elections and ISR changes were counted.
fn operators_see_the_restarts(nodes: &[ServerProc]) {
    let sum = |name: &str| nodes.iter().map(|n| metric(n, name)).sum::<u64>();
    assert_eq!(sum("active_controller"), 1);
    assert_eq!(sum("under_replicated_partitions"), 0);
    assert_eq!(sum("under_min_isr_partitions"), 0);
    assert_eq!(sum("offline_partitions"), 0);
    assert_eq!(sum("unclean_leader_elections"), 0);
    // The counters are each process's since it started: the last restart's elections (its
    // leaderships moved back) and ISR expansions (it rejoined) were counted by nodes that
    // have run since.
    assert!(sum("leader_elections") >= 1, "{}", sum("leader_elections"));
    assert!(sum("isr_expands") >= 1, "{}", sum("isr_expands"));
    assert!(
        sum("controller_changes") >= 3,
        "every node saw a controller"
    );
}

/// ElectLeaders v1 of `election_type` for `asked` (None: every partition): (top error,
/// [(topic, partition, error)]).
fn elect(
    node: &ServerProc,
    election_type: i8,
    asked: Option<&[(&str, &[i32])]>,
) -> (i16, Vec<(String, i32, i16)>) {
    let request = RequestKind::ElectLeaders(common::elect::request(election_type, asked));
    let ResponseKind::ElectLeaders(r) = call(node, ApiKey::ElectLeaders, 1, request) else {
        panic!("not an ElectLeaders answer")
    };
    common::elect::results(&r)
}

fn rack_of(id: i32) -> String {
    format!("rack-{}", id % 2)
}

const PREFERRED: i8 = 0;
const UNCLEAN: i8 = 1;

#[test]
fn elect_leaders_moves_leadership_to_preferred_replicas_and_unclean_only_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    // Nodes 1 and 3 share a rack: a two-replica partition goes to both racks.
    let mut nodes: Vec<ServerProc> = (1..=3)
        .map(|id| {
            let rack = rack_of(id);
            let extra = [
                ("auto.leader.rebalance.enable", "false"),
                ("controlled.shutdown.retry.backoff.ms", "1000"),
                ("broker.rack", rack.as_str()),
            ];
            node_with(tmp.path(), &etcd, (id, None), &extra)
        })
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    assert_eq!(create(&nodes[at(controller)], "events", 3, 3), (0, 3));
    let (_, parts, _) = wait_for_metadata(&refs, "events", |(e, p, _)| {
        *e == 0 && p.len() == 3 && p.iter().all(preferred_lead)
    });

    // Partition 0's preferred leader stops (its leaderships move) and comes back as a
    // follower; with no automatic rebalance its leaderships stay moved.
    let preferred = parts[0].replicas[0];
    assert!(nodes[at(preferred)].terminate(Duration::from_secs(30)));
    nodes[at(preferred)].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let (_, moved, _) = wait_for_metadata(&refs, "events", |(_, p, b)| {
        b.len() == 3 && p.iter().all(in_sync)
    });
    assert_ne!(moved[0].leader, preferred, "{moved:?}");

    // Asked of a node that is not the controller: forwarded, answered per partition.
    let controller = describe(&nodes[0]).0;
    let asker = &nodes[at(if controller == 1 { 2 } else { 1 })];
    let asked: &[(&str, &[i32])] = &[("events", &[0, 7]), ("nope", &[0])];
    let (top, results) = elect(asker, PREFERRED, Some(asked));
    assert_eq!(top, 0);
    let expected = [("events", 0, 0), ("events", 7, 3), ("nope", 0, 3)];
    let expected: Vec<(String, i32, i16)> = (expected.iter())
        .map(|(t, p, e)| (t.to_string(), *p, *e))
        .collect();
    assert_eq!(
        results, expected,
        "ELECTION done, UNKNOWN_TOPIC_OR_PARTITION"
    );
    wait_for_metadata(&refs, "events", |(_, p, _)| p[0].leader == preferred);
    let again = elect(asker, PREFERRED, Some(&[("events", &[0])]));
    assert_eq!(
        again.1,
        [("events".to_string(), 0, 84)],
        "ELECTION_NOT_NEEDED"
    );
    // Every partition (a null list): only those that needed an election are answered.
    let (_, every) = elect(asker, PREFERRED, None);
    assert!(
        every.iter().all(|(t, _, e)| t == "events" && *e == 0),
        "{every:?}"
    );
    wait_for_metadata(&refs, "events", |(_, p, _)| p.iter().all(preferred_lead));
    assert_eq!(elect(asker, PREFERRED, None).1, []);
    // librdkafka's AdminClient (kafka-leader-election's calls) reads the same answers.
    let by_client = |kind: &str, asked: &str| {
        let out = run_bounded(
            &mut script("elect.py", &[&asker.kafka_addr(), kind, asked]),
            Duration::from_secs(60),
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "elect.py: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let answered = by_client("preferred", "events:0,events:9");
    assert_eq!(answered["events-0"], "ELECTION_NOT_NEEDED", "{answered}");
    assert_eq!(answered["events-9"], "UNKNOWN_TOPIC_OR_PART", "{answered}");
    assert_eq!(by_client("preferred", "all"), serde_json::json!({}));
    let led = elect(asker, UNCLEAN, Some(&[("events", &[1])]));
    assert_eq!(led.1, [("events".to_string(), 1, 84)], "a led partition");
    assert_eq!(elect(asker, 5, None).0, 42, "an unknown election type");

    unclean_election_only_when_asked(&mut nodes);
}

/// A two-replica partition whose follower died, then its leader (the last in-sync
/// replica, so its controlled shutdown cannot hand off): the follower back is not elected
/// on its own; UNCLEAN elects it when asked.
fn unclean_election_only_when_asked(nodes: &mut [ServerProc]) {
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = describe(&nodes[0]).0;
    assert_eq!(create(&nodes[at(controller)], "lossy", 1, 2), (0, 2));
    let (_, parts, _) = wait_for_metadata(&refs, "lossy", |(_, p, _)| in_sync(&p[0]));
    let (leader, follower) = (parts[0].replicas[0], parts[0].replicas[1]);
    assert_ne!(rack_of(leader), rack_of(follower), "one replica per rack");
    let third = (1..=3).find(|id| *id != leader && *id != follower).unwrap();
    nodes[at(follower)].kill9();
    let alive = [&nodes[at(leader)], &nodes[at(third)]];
    wait_for_metadata(&alive, "lossy", |(_, p, _)| p[0].isr == [leader]);
    let under = ["--under-replicated-partitions"];
    let listed = describe_cli(&nodes[at(third)], "lossy", &under);
    let line = format!("\tTopic: lossy\tPartition: 0\tLeader: {leader}\tReplicas: {leader},{follower}\tIsr: {leader}\tOffline: {follower}\n");
    assert_eq!(listed, line, "kafka-topics --under-replicated-partitions");
    // A bootstrap list: the dead follower first, then a live node.
    let list = format!("{},{}", nodes[at(follower)].addr(), nodes[at(third)].addr());
    let (cluster, err, ok) = shardlog(&["cluster", "describe", "-b", &list], None);
    assert!(ok, "{err}");
    assert!(ok && cluster.contains("\tNodes: 2\t"), "{cluster}");
    for id in [leader, third] {
        let rack = rack_of(id);
        assert!(cluster.contains(&format!("\tNode: {id}\t")), "{cluster}");
        assert!(cluster.contains(&format!("\tRack: {rack}\t")), "{cluster}");
    }
    // The epochs Kafka's DescribeCluster does not carry: the controller's, each node's.
    let field = |line: &str, name: &str| -> i64 {
        let after = line.split(&format!("{name}: ")).nth(1).unwrap_or("");
        after
            .split(['\t', '\n'])
            .next()
            .unwrap()
            .parse()
            .unwrap_or(-1)
    };
    assert!(field(&cluster, "ControllerEpoch") > 0, "{cluster}");
    let mut nodes_listed = cluster.lines().filter(|l| l.contains("\tNode: "));
    assert!(nodes_listed.clone().count() == 2, "{cluster}");
    assert!(nodes_listed.all(|l| field(l, "Epoch") > 0), "{cluster}");
    let (error, _) = produce_acks(&nodes[at(leader)], "lossy", 0, "only-on-the-leader", 1);
    assert_eq!(error, 0);
    // The leader reports its dead follower behind (its next tick, within a second).
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric(&nodes[at(leader)], "replica_lag_records") < 1 {
        assert!(Instant::now() < deadline, "no follower lag reported");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The leader, its last in-sync replica, cannot hand off: it says so, waits its bound
    // (3 x 1 s here) and stops.
    let asked = Instant::now();
    assert!(nodes[at(leader)].terminate(Duration::from_secs(30)));
    let log = nodes[at(leader)].log_text();
    assert!(
        log.contains("the last in-sync replica of these partitions"),
        "{log}"
    );
    assert!(log.contains("stopping with partitions not moved"), "{log}");
    assert!(
        asked.elapsed() >= Duration::from_secs(3),
        "it waited its bound"
    );
    nodes[at(follower)].respawn();
    let alive = [&nodes[at(follower)], &nodes[at(third)]];
    wait_for_metadata(&alive, "lossy", |(_, p, b)| {
        b.len() == 2 && p[0].leader == -1
    });
    std::thread::sleep(Duration::from_secs(1));
    let (_, offline, _) = wait_for_metadata(&alive, "lossy", |_| true);
    assert_eq!(offline[0].leader, -1, "no clean leader: offline");
    let unavailable = describe_cli(&nodes[at(third)], "lossy", &["--unavailable-partitions"]);
    assert!(
        unavailable.contains("\tPartition: 0\tLeader: -1\t"),
        "{unavailable}"
    );
    let preferred = elect(alive[1], PREFERRED, Some(&[("lossy", &[0])]));
    assert_eq!(preferred.1[0].2, 80, "PREFERRED_LEADER_NOT_AVAILABLE");
    let unclean = elect(alive[1], UNCLEAN, Some(&[("lossy", &[0])]));
    assert_eq!(unclean.1, [("lossy".to_string(), 0, 0)]);
    let (_, elected, _) = wait_for_metadata(&alive, "lossy", |(_, p, _)| p[0].leader > 0);
    assert_eq!(
        (elected[0].leader, elected[0].isr.clone()),
        (follower, vec![follower])
    );
    let (error, _) = produce_acks(&nodes[at(follower)], "lossy", 0, "after", -1);
    assert_eq!(error, 0, "the unclean leader takes writes");
    let unclean = alive.iter().map(|n| metric(n, "unclean_leader_elections"));
    assert_eq!(unclean.sum::<u64>(), 1, "counted by the controller");
}
