//! Tiered storage on a three-node cluster (a real etcd, real processes, one S3 bucket on
//! loopback): only a partition's leader copies its sealed segments, stamping the
//! manifest with its leader epoch; followers delete local segments only once the bucket
//! holds them; after a kill -9 of the leader the new leader continues the same manifest
//! (no gap, no segment copied twice) and every acknowledged record is still read, old ones
//! from the bucket. A tiered topic whose name the bucket still holds is refused. A
//! single-node read replica of the cluster's bucket serves what the bucket holds, record for
//! record as the cluster does, and once the cluster is gone a single node restores the
//! topic from the bucket and serves the same. Every loop is bounded in time.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::etcd::EtcdServer;
use common::s3::S3Server;
use common::server_proc::ServerProc;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_faults_e2e::node_keys;
use super::cluster_operations_e2e::metric;
use super::cluster_topics_e2e::{
    create, metadata, produce_acks, records, set_config, wait_for_metadata,
};

const TOPIC: &str = "tiered";
const PREFIX: &str = "shared";

fn manifest(s3: &S3Server) -> Option<serde_json::Value> {
    s3.manifest(PREFIX, TOPIC, 0)
}

/// Node `id` of the cluster, with the bucket and a fast uploader.
fn node(dir: &Path, etcd: &EtcdServer, s3: &S3Server, id: i32) -> ServerProc {
    let mut extra = s3.server_keys(PREFIX);
    extra.push(("remote.upload.interval.ms".into(), "200".into()));
    extra.push(("log.retention.check.interval.ms".into(), "200".into()));
    let extra: Vec<(&str, &str)> = extra
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let keys = node_keys(etcd, id, &extra);
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let data = dir.join(format!("node-{id}"));
    ServerProc::start_wrapped(&data, 1, &keys, Some(&s3.env_wrapper()))
}

/// (leader epoch, next offset) the manifest names, and whether its segments follow each
/// other with no gap and no overlap.
fn manifest_state(m: &serde_json::Value) -> (i64, i64, bool) {
    let segments = m["segments"].as_array().cloned().unwrap_or_default();
    let bounds: Vec<(i64, i64)> = (segments.iter())
        .map(|s| {
            (
                s["base_offset"].as_i64().unwrap(),
                s["last_offset"].as_i64().unwrap(),
            )
        })
        .collect();
    let contiguous = bounds.windows(2).all(|w| w[1].0 == w[0].1 + 1);
    let next = bounds.last().map_or(0, |b| b.1 + 1);
    (m["leader_epoch"].as_i64().unwrap_or(-1), next, contiguous)
}

/// The nodes' warnings and errors (what a failed wait shows).
fn complaints(nodes: &[ServerProc]) -> String {
    let lines = nodes.iter().flat_map(|n| {
        let text = n.log_text();
        let bad = text
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "));
        bad.map(str::to_string).collect::<Vec<_>>()
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// Waits (bounded) until the manifest is stamped with `epoch` and reaches `offset`.
fn wait_manifest(
    bucket: &S3Server,
    nodes: &[ServerProc],
    epoch: i32,
    offset: i64,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(m) = manifest(bucket) {
            let (stamped, next, _) = manifest_state(&m);
            if stamped == i64::from(epoch) && next >= offset {
                return m;
            }
        }
        assert!(
            Instant::now() < deadline,
            "manifest: {:?}\n{}",
            manifest(bucket),
            complaints(nodes)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The base offsets of a node's local segments of the partition.
fn local_bases(node_dir: &Path) -> Vec<i64> {
    let dir = node_dir.join(format!("{TOPIC}-0"));
    let mut bases: Vec<i64> = (std::fs::read_dir(dir).into_iter().flatten().flatten())
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".log")?.parse().ok())
        .collect();
    bases.sort();
    bases
}

fn produce_many(node: &ServerProc, from: usize, n: usize) {
    let pad = "x".repeat(400);
    for i in from..from + n {
        let (err, _) = produce_acks(node, TOPIC, 0, &format!("{i:06}-{pad}"), -1);
        assert_eq!(err, 0, "record {i}");
    }
}

#[test]
fn only_the_leader_uploads_and_a_new_leader_continues_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let bucket = S3Server::start(&tmp.path().join("s3"));
    let mut nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node(tmp.path(), &etcd, &bucket, id))
        .collect();
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    wait_for_agreement(&refs, &all, Duration::from_secs(20));
    assert_eq!(create(&nodes[0], TOPIC, 1, 3).0, 0);
    // The records carry a 2023 timestamp: time retention stays off.
    for (k, v) in [
        ("retention.ms", "-1"),
        ("segment.bytes", "16384"),
        ("local.retention.bytes", "16384"),
        ("remote.storage.enable", "true"),
    ] {
        assert_eq!(set_config(&nodes[0], TOPIC, k, v), 0, "{k}");
    }
    let (_, parts, _) = wait_for_metadata(&refs, TOPIC, |m| m.1[0].isr.len() == 3);
    let (leader, epoch) = (parts[0].leader, parts[0].leader_epoch);
    let at = |id: i32| (id - 1) as usize;
    produce_many(&nodes[at(leader)], 0, 300);
    let m = wait_manifest(&bucket, &nodes, epoch, 200);
    assert!(m["writer"].as_str().unwrap().starts_with("cluster-"), "{m}");
    assert!(manifest_state(&m).2, "{m}");

    // Only the leader copied; the followers learn the copied end and trim their copies.
    for id in 1..=3 {
        let uploaded = metric(&nodes[at(id)], "remote_uploaded_segments");
        assert_eq!(uploaded > 0, id == leader, "node {id} uploaded {uploaded}");
    }
    let followers: Vec<i32> = (1..=3).filter(|&id| id != leader).collect();
    let trimmed = || {
        let (_, next, _) = manifest_state(&manifest(&bucket).unwrap());
        let firsts: Vec<Option<i64>> = (followers.iter())
            .map(|&id| {
                local_bases(&tmp.path().join(format!("node-{id}")))
                    .first()
                    .copied()
            })
            .collect();
        let done = firsts.iter().all(|b| b.is_some_and(|b| b > 0 && b <= next));
        (
            done,
            format!("copied end {next}, followers' first local offsets {firsts:?}"),
        )
    };
    wait_until(&nodes, trimmed);

    // The leader goes: its successor stamps the manifest with its epoch and goes on.
    nodes[at(leader)].kill9();
    let alive: Vec<&ServerProc> = followers.iter().map(|&id| &nodes[at(id)]).collect();
    let (_, parts, _) = wait_for_metadata(&alive, TOPIC, |m| {
        m.1[0].leader != leader && m.1[0].leader > 0
    });
    let (successor, new_epoch) = (parts[0].leader, parts[0].leader_epoch);
    assert!(new_epoch > epoch);
    produce_many(&nodes[at(successor)], 300, 300);
    let m = wait_manifest(&bucket, &nodes, new_epoch, 500);
    assert!(manifest_state(&m).2, "a gap or an overlap: {m}");
    let got = records(&nodes[at(successor)].kafka_addr(), TOPIC, 0);
    let offsets: Vec<i64> = got.iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, (0..600).collect::<Vec<i64>>());
    for (o, v) in &got {
        assert!(v.starts_with(&format!("{o:06}-")), "offset {o}: {v}");
    }
    let bases = local_bases(&tmp.path().join(format!("node-{successor}")));
    assert!(
        bases[0] > 0,
        "the new leader's local retention went on: {bases:?}"
    );
    a_read_replica_serves_the_clusters_bucket(tmp.path(), &bucket, &got);

    // Tiering is refused for a topic whose name the bucket still holds (an old
    // incarnation's objects), in a cluster too, and the topic stays as it was.
    let node = &nodes[at(successor)];
    let stale = bucket.object(&format!(
        "{PREFIX}/topics/stale/0/00000000000000000000-ab.log"
    ));
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(stale, b"old").unwrap();
    assert_eq!(create(node, "stale", 1, 2).0, 0);
    assert_ne!(
        set_config(node, "stale", "remote.storage.enable", "true"),
        0
    );
    let (err, parts, _) = metadata(node, "stale");
    assert_eq!((err, parts.len()), (0, 1));
    assert!(!node.log_text().contains("panicked"));

    // The cluster is lost; a single node restores the topic from its bucket.
    nodes.iter_mut().for_each(ServerProc::kill9);
    a_single_node_restores_the_clusters_topic(tmp.path(), &bucket, &got);
}

/// A fresh single node on the cluster's bucket: `topics restore` brings the topic back and
/// every record the bucket holds is served as the cluster served it.
fn a_single_node_restores_the_clusters_topic(
    dir: &Path,
    bucket: &S3Server,
    cluster: &[(i64, String)],
) {
    let mut keys = bucket.server_keys(PREFIX);
    keys.push(("kafka.listen".into(), "auto".into()));
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let single =
        ServerProc::start_wrapped(&dir.join("restored"), 1, &keys, Some(&bucket.env_wrapper()));
    let restore = ["topics", "restore", "-b", &single.addr(), "--topic", TOPIC];
    let (out, err, ok) = common::cli::shardlog(&restore, None);
    assert!(ok, "restore failed: {out}{err}");
    let (_, held, _) = manifest_state(&manifest(bucket).unwrap());
    let served = records(&single.kafka_addr(), TOPIC, 0);
    assert_eq!(served.len() as i64, held, "every record the bucket holds");
    assert_eq!(
        served[..],
        cluster[..served.len()],
        "the bucket's records as the cluster's"
    );
}

/// A single node with `remote.read.replica=true` on the cluster's bucket finds the topic
/// and serves every record the manifest holds, as the cluster serves them (`cluster`:
/// (offset, value) read from the cluster's leader).
fn a_read_replica_serves_the_clusters_bucket(
    dir: &Path,
    bucket: &S3Server,
    cluster: &[(i64, String)],
) {
    let mut keys = bucket.server_keys(PREFIX);
    keys.push(("remote.read.replica".into(), "true".into()));
    keys.push(("remote.upload.interval.ms".into(), "200".into()));
    keys.push(("kafka.listen".into(), "auto".into()));
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let replica = ServerProc::start_wrapped(
        &dir.join("read-replica"),
        1,
        &keys,
        Some(&bucket.env_wrapper()),
    );
    let (_, held, _) = manifest_state(&manifest(bucket).unwrap());
    let nodes = std::slice::from_ref(&replica);
    wait_until(nodes, || {
        let (err, parts, _) = metadata(&replica, TOPIC);
        (
            err == 0 && parts.len() == 1,
            format!("metadata: {err} {parts:?}"),
        )
    });
    let served = records(&replica.kafka_addr(), TOPIC, 0);
    assert!(served.len() as i64 >= held, "{} of {held}", served.len());
    assert_eq!(
        served[..],
        cluster[..served.len()],
        "the bucket's records as the cluster's"
    );
}

/// Waits (bounded) until `check` says done; a timeout shows its last word and the logs.
fn wait_until(nodes: &[ServerProc], mut check: impl FnMut() -> (bool, String)) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (done, state) = check();
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "{state}\n{}", complaints(nodes));
        std::thread::sleep(Duration::from_millis(100));
    }
}
