//! The coordinators follow leadership on a three-node cluster (a real etcd, real processes,
//! confluent-kafka as the client). Groups: `__consumer_offsets` is created in the cluster on
//! first use (replicated on every node), every node names the same coordinator (the leader
//! of the group's offsets partition), the others answer NOT_COORDINATOR, and after a kill -9
//! of the coordinator the group resumes on a new one from exactly the offsets it committed:
//! no record read twice, none skipped. Transactions: a consume-transform-produce
//! transaction writes partitions led by every node (markers sent to their leaders), commits
//! and aborts as a read_committed reader and the group's offsets show, and after a kill -9
//! of its coordinator the same transactional id carries on at the new one.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::etcd::EtcdServer;
use common::kafka_clients::{run_bounded, script};
use common::server_proc::ServerProc;
use kafka_protocol::messages::{
    offset_fetch_request, ApiKey, FindCoordinatorRequest, GroupId, OffsetFetchRequest, RequestKind,
    ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use shardlog::kafka::blocking_client::BlockingClient;

use super::cluster_e2e::three_nodes;
use super::cluster_topics_e2e::name;

const TOPIC: &str = "orders";
const GROUP: &str = "billing";
const NOT_COORDINATOR: i16 = 16;

/// Runs cluster_groups.py and returns its JSON line.
fn client(args: &[&str]) -> serde_json::Value {
    run_script("cluster_groups.py", args)
}

/// Runs a client script and returns its JSON line.
fn run_script(script_name: &str, args: &[&str]) -> serde_json::Value {
    let out = run_bounded(&mut script(script_name, args), Duration::from_secs(180));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{script_name} {args:?} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// What a consume printed: the (partition, offset) pairs read, and the commits by partition.
fn consumed(out: &serde_json::Value) -> (BTreeSet<(i64, i64)>, BTreeMap<i64, i64>) {
    let pairs = out["consumed"].as_array().unwrap().iter();
    let read = pairs.map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()));
    let commits = out["committed"].as_object().unwrap().iter();
    let committed = commits.map(|(p, o)| (p.parse().unwrap(), o.as_i64().unwrap()));
    (read.collect(), committed.collect())
}

/// A key's coordinator as `node` names it (-1 while it has none): `(0, group)` or `(1,
/// transactional id)`.
fn coordinator(node: &str, (key_type, key): (i8, &'static str)) -> i32 {
    let Ok(mut k) = BlockingClient::connect_with_timeout(node, Duration::from_secs(2)) else {
        return -1;
    };
    let request = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_static_str(key))
        .with_key_type(key_type);
    match k.call(
        ApiKey::FindCoordinator,
        3,
        &RequestKind::FindCoordinator(request),
    ) {
        Ok(ResponseKind::FindCoordinator(r)) if r.error_code == 0 => r.node_id.0,
        _ => -1,
    }
}

/// Waits (bounded) until every node in `addrs` names the same live coordinator of `key`.
fn agreed_coordinator(addrs: &[(i32, String)], key: (i8, &'static str)) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let named: Vec<i32> = addrs.iter().map(|(_, a)| coordinator(a, key)).collect();
        let live = addrs.iter().any(|(id, _)| *id == named[0]);
        if live && named.iter().all(|&c| c == named[0]) {
            return named[0];
        }
        assert!(
            Instant::now() < deadline,
            "no agreed coordinator: {named:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// OffsetFetch v5 of the group's commits on `node`: the error code.
fn offset_fetch_code(node: &str) -> i16 {
    let mut k = BlockingClient::connect(node).unwrap();
    let t = offset_fetch_request::OffsetFetchRequestTopic::default()
        .with_name(name(TOPIC))
        .with_partition_indexes(vec![0]);
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(Some(vec![t]));
    match k.call(ApiKey::OffsetFetch, 5, &RequestKind::OffsetFetch(request)) {
        Ok(ResponseKind::OffsetFetch(r)) => r.error_code,
        other => panic!("OffsetFetch failed: {other:?}"),
    }
}

fn bootstrap(addrs: &[(i32, String)]) -> String {
    let all: Vec<&str> = addrs.iter().map(|(_, a)| a.as_str()).collect();
    all.join(",")
}

#[test]
fn a_group_resumes_from_its_commits_after_its_coordinator_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (mut nodes, all, _) = three_nodes(tmp.path(), &etcd);
    client(&[&bootstrap(&all), "produce", TOPIC, "300"]);

    let first = client(&[&bootstrap(&all), "consume", TOPIC, GROUP, "150"]);
    let (read_first, committed) = consumed(&first);
    assert_eq!(read_first.len(), 150, "{first}");
    let old = agreed_coordinator(&all, (0, GROUP));
    for (id, addr) in all.iter().filter(|(id, _)| *id != old) {
        let code = offset_fetch_code(addr);
        assert_eq!(code, NOT_COORDINATOR, "node {id} is not the coordinator");
    }

    let victim: &mut ServerProc = &mut nodes[(old - 1) as usize];
    victim.kill9();
    let survivors: Vec<(i32, String)> = all.iter().filter(|(id, _)| *id != old).cloned().collect();
    let new = agreed_coordinator(&survivors, (0, GROUP));
    assert_ne!(new, old, "the coordinator moved off the killed node");

    let second = client(&[&bootstrap(&survivors), "consume", TOPIC, GROUP, "150"]);
    let (read_second, _) = consumed(&second);
    assert!(
        read_first.is_disjoint(&read_second),
        "a record was read twice"
    );
    assert_eq!(
        read_first.len() + read_second.len(),
        300,
        "a record was skipped"
    );
    for (p, offset) in committed {
        // No commit (-1001): the partition starts at the earliest offset.
        let expected = offset.max(0);
        let resumed = read_second
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, o)| *o)
            .min();
        assert_eq!(
            resumed.unwrap_or(100),
            expected,
            "partition {p} resumed at its commit"
        );
    }
    let log = nodes[(new - 1) as usize].log_text();
    assert!(log.contains("offsets partition loaded"), "{log}");
}

/// What a cluster_txn.py run saw: the committed values of `out`, and the sum of the
/// group's committed offsets on `in`.
fn transact(bootstrap: &str, tag: &str) -> (Vec<String>, i64) {
    let out = run_script("cluster_txn.py", &[bootstrap, "run", tag]);
    let values = out["committed"].as_array().unwrap().iter();
    let values = values.map(|v| v.as_str().unwrap().to_string()).collect();
    (values, out["group_offsets"].as_i64().unwrap())
}

/// The values a committed round `tag` leaves in `out`.
fn round(tag: &str) -> Vec<String> {
    (0..9).map(|i| format!("{tag}-0-{i}")).collect()
}

#[test]
fn a_transaction_over_every_node_commits_aborts_and_survives_its_coordinator_s_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (mut nodes, all, _) = three_nodes(tmp.path(), &etcd);
    run_script("cluster_txn.py", &[&bootstrap(&all), "setup"]);

    let (committed, offsets) = transact(&bootstrap(&all), "one");
    assert_eq!(committed, round("one"), "the committed round only");
    assert_eq!(offsets, 5, "the aborted round's offsets are dropped");

    let old = agreed_coordinator(&all, (1, "tx"));
    nodes[(old - 1) as usize].kill9();
    let survivors: Vec<(i32, String)> = all.iter().filter(|(id, _)| *id != old).cloned().collect();
    let (committed, offsets) = transact(&bootstrap(&survivors), "two");
    let mut expected = [round("one"), round("two")].concat();
    expected.sort();
    assert_eq!(committed, expected, "both committed rounds, no aborted one");
    assert_eq!(offsets, 10, "each committed round moved the group by 5");
    assert_ne!(agreed_coordinator(&survivors, (1, "tx")), old);
}
