//! Cluster mode's membership and controller election against a real etcd member on
//! loopback and real `shardlog serve` processes: every node sees every live node and the
//! same controller (Kafka's DescribeCluster), a kill -9 of the controller elects another
//! with a larger controller epoch and drops the dead node, a restart registers again with
//! a larger broker epoch, a live node's broker.id is refused to another node, SIGTERM
//! leaves the cluster at once, and etcd lost and back is ridden out without a restart.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::etcd::EtcdServer;
use common::security::serve_refuses;
use common::server_proc::{free_port, ServerProc};
use kafka_protocol::messages::{ApiKey, DescribeClusterRequest, RequestKind, ResponseKind};
use shardlog::kafka::blocking_client::BlockingClient;

/// A node of the cluster on `etcd`, its registration renewed every 200 ms.
pub(crate) fn node(dir: &Path, etcd: &EtcdServer, id: i32, session_timeout_ms: u64) -> ServerProc {
    let id = id.to_string();
    let timeout = session_timeout_ms.to_string();
    let endpoint = etcd.endpoint();
    let keys = [
        ("cluster.etcd.endpoints", endpoint.as_str()),
        ("broker.id", id.as_str()),
        ("broker.session.timeout.ms", timeout.as_str()),
        ("broker.heartbeat.interval.ms", "200"),
        ("kafka.listen", "auto"),
    ];
    ServerProc::start(&dir.join(format!("node-{id}")), 1, &keys)
}

/// What a node says of the cluster: (controller id, [(broker id, host:port)]).
pub(crate) type Described = (i32, Vec<(i32, String)>);

pub(crate) fn describe(node: &ServerProc) -> Described {
    let mut k = BlockingClient::connect(&node.kafka_addr()).unwrap();
    let request = RequestKind::DescribeCluster(DescribeClusterRequest::default());
    let Ok(ResponseKind::DescribeCluster(r)) = k.call(ApiKey::DescribeCluster, 0, &request) else {
        panic!("DescribeCluster failed")
    };
    assert_eq!(r.error_code, 0);
    let brokers = r.brokers.iter();
    let brokers = brokers.map(|b| (b.broker_id.0, format!("{}:{}", b.host, b.port)));
    (r.controller_id.0, brokers.collect())
}

/// The (id, Kafka address) of each node, by id.
pub(crate) fn members(nodes: &[(i32, &ServerProc)]) -> Vec<(i32, String)> {
    nodes.iter().map(|(id, n)| (*id, n.kafka_addr())).collect()
}

/// Waits (bounded) until every one of `nodes` lists exactly `members` and names the same
/// controller, one of them; returns that controller.
pub(crate) fn wait_for_agreement(
    nodes: &[&ServerProc],
    members: &[(i32, String)],
    within: Duration,
) -> i32 {
    let deadline = Instant::now() + within;
    loop {
        let seen: Vec<Described> = nodes.iter().map(|n| describe(n)).collect();
        let controller = seen[0].0;
        let agreed = seen
            .iter()
            .all(|(c, brokers)| *c == controller && brokers == members);
        if agreed && members.iter().any(|(id, _)| *id == controller) {
            return controller;
        }
        assert!(
            Instant::now() < deadline,
            "no agreement on {members:?} within {within:?}: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The numbers after `field=` on the log's lines that contain `event`, in order.
fn logged(node: &ServerProc, event: &str, field: &str) -> Vec<i64> {
    let text = node.log_text();
    let lines = text.lines().filter(|l| l.contains(event));
    let value = |l: &str| {
        let at = l.find(&format!("{field}="))? + field.len() + 1;
        let digits: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    lines.filter_map(value).collect()
}

/// Nodes 1, 2 and 3 on `etcd` (session timeout 3 s), once they agree: the nodes, their
/// (id, Kafka address), and the controller.
pub(crate) fn three_nodes(
    dir: &Path,
    etcd: &EtcdServer,
) -> (Vec<ServerProc>, Vec<(i32, String)>, i32) {
    let nodes: Vec<ServerProc> = (1..=3).map(|id| node(dir, etcd, id, 3_000)).collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    (nodes, all, controller)
}

#[test]
fn three_nodes_agree_on_members_and_controller_and_fail_over_after_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (mut nodes, all, controller) = three_nodes(tmp.path(), &etcd);
    assert_idle_cost_flat(&nodes);

    // kill -9 the controller: its lease ends within the session timeout, another node
    // takes over with a larger controller epoch, and the dead node leaves the list.
    let dead = (controller - 1) as usize;
    let old_epoch = *logged(&nodes[dead], "became the controller", "controller_epoch")
        .last()
        .unwrap();
    let old_broker_epoch = *logged(&nodes[dead], "registered in the cluster", "epoch")
        .last()
        .unwrap();
    let killed = Instant::now();
    nodes[dead].kill9();
    let live: Vec<(i32, String)> = all
        .iter()
        .filter(|(id, _)| *id != controller)
        .cloned()
        .collect();
    let survivors: Vec<&ServerProc> = (0..3).filter(|&i| i != dead).map(|i| &nodes[i]).collect();
    let successor = wait_for_agreement(&survivors, &live, Duration::from_secs(20));
    assert_ne!(successor, controller);
    eprintln!(
        "kill -9 of the controller (session timeout 3 s): node {successor} controls, and both survivors agree, {:?} later",
        killed.elapsed()
    );
    let new_epoch = *logged(
        &nodes[(successor - 1) as usize],
        "became the controller",
        "controller_epoch",
    )
    .last()
    .unwrap();
    assert!(
        new_epoch > old_epoch,
        "controller epoch {old_epoch} -> {new_epoch}"
    );

    // The dead node comes back: registered again, with a larger broker epoch.
    nodes[dead].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    assert_eq!(
        wait_for_agreement(&refs, &all, Duration::from_secs(20)),
        successor
    );
    let new_broker_epoch = *logged(&nodes[dead], "registered in the cluster", "epoch")
        .last()
        .unwrap();
    assert!(
        new_broker_epoch > old_broker_epoch,
        "broker epoch {old_broker_epoch} -> {new_broker_epoch}"
    );

    // A node killed and started at once finds its own registration still alive: it takes
    // it over (not refused as a duplicate) with a new broker epoch.
    let other = (0..3)
        .find(|&i| i != dead && i != (successor - 1) as usize)
        .unwrap();
    nodes[other].restart_after_kill();
    assert!(nodes[other]
        .log_text()
        .contains("an earlier run of this node is still registered"));
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    wait_for_agreement(&refs, &all, Duration::from_secs(20));
}

/// Idle cluster nodes renew their leases and nothing else: descriptors do not grow and
/// the heartbeats cost little CPU.
pub(crate) fn assert_idle_cost_flat(nodes: &[ServerProc]) {
    let before: Vec<(usize, u64)> = nodes
        .iter()
        .map(|n| (n.open_fds(), n.cpu_ticks()))
        .collect();
    let idle = Duration::from_secs(4);
    std::thread::sleep(idle);
    for (n, (fds, ticks)) in nodes.iter().zip(before) {
        let cpu_s = (n.cpu_ticks() - ticks) as f64 / 100.0;
        assert!(
            n.open_fds() <= fds,
            "descriptors grew while idle: {fds} -> {}",
            n.open_fds()
        );
        assert!(
            cpu_s < 0.1 * idle.as_secs_f64(),
            "an idle cluster node used {cpu_s} s of CPU in {idle:?}"
        );
    }
}

#[test]
fn a_live_node_s_broker_id_is_refused_to_another_node() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let first = node(tmp.path(), &etcd, 1, 10_000);
    let config = format!(
        "cluster.etcd.endpoints={}\nbroker.id=1\nkafka.listen=127.0.0.1:{}\nshards=1\n",
        etcd.endpoint(),
        free_port()
    );
    let second = tmp.path().join("second");
    std::fs::create_dir_all(&second).unwrap();
    let refused = serve_refuses(&second, &config);
    assert!(
        refused.contains("broker.id 1 is registered by another live node"),
        "{refused}"
    );
    assert!(
        refused.contains(&first.kafka_addr()),
        "names the holder: {refused}"
    );
    // The first node is still the registered one.
    assert_eq!(describe(&first).1, members(&[(1, &first)]));
}

#[test]
fn an_unreachable_etcd_is_named_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let config = format!(
        "cluster.etcd.endpoints={endpoint}\nkafka.listen=127.0.0.1:{}\n",
        free_port()
    );
    let refused = serve_refuses(tmp.path(), &config);
    assert!(
        refused.contains(&format!("etcd is unreachable at {endpoint}")),
        "{refused}"
    );
}

#[test]
fn sigterm_leaves_the_cluster_at_once_and_hands_over_the_controller() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    // A session timeout far longer than the waits below: only a revoked lease explains
    // the node leaving in time.
    let mut nodes = [
        node(tmp.path(), &etcd, 1, 120_000),
        node(tmp.path(), &etcd, 2, 120_000),
    ];
    let all = members(&[(1, &nodes[0]), (2, &nodes[1])]);
    let controller = wait_for_agreement(&[&nodes[0], &nodes[1]], &all, Duration::from_secs(20));
    let leaving = (controller - 1) as usize;
    let staying = 1 - leaving;
    assert!(
        nodes[leaving].terminate(Duration::from_secs(30)),
        "SIGTERM exits 0"
    );
    assert!(nodes[leaving].log_text().contains("left the cluster"));
    let rest = members(&[((staying + 1) as i32, &nodes[staying])]);
    let successor = wait_for_agreement(&[&nodes[staying]], &rest, Duration::from_secs(15));
    assert_eq!(successor, (staying + 1) as i32);
}

#[test]
fn a_node_rides_out_etcd_going_away_and_coming_back() {
    use super::cluster_topics_e2e::{create, produce_acks, wait_for_metadata};
    let tmp = tempfile::tempdir().unwrap();
    let mut etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let node = node(tmp.path(), &etcd, 7, 3_000);
    let me = members(&[(7, &node)]);
    wait_for_agreement(&[&node], &me, Duration::from_secs(20));
    assert_eq!(create(&node, "kept", 1, 1), (0, 1));
    wait_for_metadata(&[&node], "kept", |(e, p, _)| *e == 0 && p[0].leader == 7);
    assert_eq!(produce_acks(&node, "kept", 0, "before", -1).0, 0);
    etcd.kill();
    // Longer than the session timeout: the node keeps answering meanwhile, but once its
    // lease may have expired it takes no writes as a leader (another could be elected).
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        assert_eq!(describe(&node).1, me);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(node.log_text().contains("heartbeat failed"));
    assert!(node.log_text().contains("fenced"));
    assert_eq!(
        produce_acks(&node, "kept", 0, "fenced", -1).0,
        6,
        "NOT_LEADER_OR_FOLLOWER"
    );
    etcd.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !node.log_text().contains("etcd answers again") {
        assert!(
            Instant::now() < deadline,
            "never reconnected:\n{}",
            node.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for_agreement(&[&node], &me, Duration::from_secs(20));
    wait_for_metadata(&[&node], "kept", |(e, p, _)| *e == 0 && p[0].leader == 7);
    assert_eq!(
        produce_acks(&node, "kept", 0, "after", -1).0,
        0,
        "a leader again"
    );
}
