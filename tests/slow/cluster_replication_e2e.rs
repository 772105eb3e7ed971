//! Replication factor 3 against a real etcd and three `shardlog serve` processes: followers
//! catch up and join the ISR, acks=all is answered once the ISR has the batch, a kill -9 of
//! a leader elects an in-sync follower with the next leader epoch that holds every
//! acknowledged record (and takes new writes), the dead node comes back as a follower and
//! rejoins the ISR, and its copy matches the leader's byte for byte; a follower whose disk
//! was wiped registers anew, copies its replicas back from the leader and rejoins the ISR.

use crate::common;

use std::time::{Duration, Instant};

use common::etcd::EtcdServer;
use common::server_proc::ServerProc;

use super::cluster_topics_e2e::{create, produce_acks, wait_for_metadata, Described};

const ACKS_ALL: i16 = -1;

/// The offsets `node` serves of `topic`-`partition` (one record per batch here).
fn offsets(node: &ServerProc, topic: &str, partition: i32) -> Vec<i64> {
    let read = super::cluster_topics_e2e::records(&node.kafka_addr(), topic, partition);
    read.into_iter().map(|(offset, _)| offset).collect()
}

/// Waits (bounded) until `node` serves exactly `expected` of `topic`-`partition`.
fn wait_for_offsets(node: &ServerProc, topic: &str, partition: i32, expected: &[i64]) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let found = offsets(node, topic, partition);
        if found == expected {
            return;
        }
        assert!(
            Instant::now() < deadline
                && found.len() <= expected.len()
                && expected.starts_with(&found),
            "{topic}-{partition}: found {found:?}, acknowledged {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The batches in a partition directory's `.log` files, in offset order, as (base offset,
/// leader epoch, CRC): up to the first bytes that are not a batch (a preallocated tail).
fn on_disk(dir: &std::path::Path) -> Vec<(i64, i32, u32)> {
    let mut logs: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    let mut out = Vec::new();
    for log in logs {
        let chain = shardlog::io::chain::ByteChain::from(std::fs::read(log).unwrap());
        for batch in shardlog::format::cursor::BatchCursor::new(&chain) {
            let Ok((_, h)) = batch else { break };
            if h.magic != 2 {
                break;
            }
            out.push((h.base_offset, h.partition_leader_epoch, h.crc));
        }
    }
    out
}

fn in_sync(p: &Described) -> bool {
    let mut isr = p.isr.clone();
    isr.sort_unstable();
    let mut replicas = p.replicas.clone();
    replicas.sort_unstable();
    isr == replicas
}

#[test]
fn acks_all_survives_a_leader_s_kill_9_and_the_node_rejoins_the_isr() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (mut nodes, _, controller) = super::cluster_e2e::three_nodes(tmp.path(), &etcd);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let at = |id: i32| (id - 1) as usize;
    assert_eq!(create(&nodes[at(controller)], "events", 3, 3), (0, 3));
    let (_, parts, _) = wait_for_metadata(&refs, "events", |(e, p, _)| {
        *e == 0 && p.len() == 3 && p.iter().all(in_sync)
    });

    // acks=all to every partition's leader: each answered once the ISR has it.
    let mut acked: Vec<Vec<i64>> = vec![Vec::new(); 3];
    for i in 0..30 {
        let p = i % 3;
        let leader = &nodes[at(parts[p].leader)];
        let (error, offset) = produce_acks(leader, "events", p as i32, &format!("r{i}"), ACKS_ALL);
        assert_eq!(error, 0, "acks=all to events-{p}");
        acked[p].push(offset);
    }
    let victim = parts[0].leader;
    assert_eq!(offsets(&nodes[at(victim)], "events", 0), acked[0]);

    // kill -9 partition 0's leader: an in-sync follower takes over with the next epoch and
    // holds every acknowledged record.
    nodes[at(victim)].kill9();
    let survivors: Vec<&ServerProc> = (1..=3)
        .filter(|&id| id != victim)
        .map(|id| &nodes[at(id)])
        .collect();
    let started = Instant::now();
    let (_, moved, _) = wait_for_metadata(&survivors, "events", |(_, p, b)| {
        b.len() == 2 && p[0].leader != victim && p[0].leader != -1
    });
    let failover = started.elapsed();
    let successor = moved[0].leader;
    assert_eq!(moved[0].leader_epoch, parts[0].leader_epoch + 1);
    assert!(
        !moved[0].isr.contains(&victim),
        "the dead node left the ISR: {:?}",
        moved[0]
    );
    // A new leader's high watermark moves past what it copied once the other in-sync
    // follower fetches from it; a lost record would never appear.
    wait_for_offsets(&nodes[at(successor)], "events", 0, &acked[0]);
    let (error, offset) = produce_acks(&nodes[at(successor)], "events", 0, "after", ACKS_ALL);
    assert_eq!(error, 0, "the new leader takes acks=all writes");
    acked[0].push(offset);
    eprintln!("failover after kill -9: {failover:?} (session timeout 3 s)");

    // The node comes back as a follower, catches up and rejoins the ISR.
    nodes[at(victim)].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    wait_for_metadata(&refs, "events", |(_, p, b)| {
        b.len() == 3 && p.iter().all(in_sync)
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    // Its own copy (read as if it led: the files under its data directory) matches.
    wait_for_offsets(&nodes[at(successor)], "events", 0, &acked[0]);
    let dir = tmp.path().join(format!("node-{victim}")).join("events-0");
    let leader_dir = tmp
        .path()
        .join(format!("node-{successor}"))
        .join("events-0");
    while on_disk(&dir) != on_disk(&leader_dir) {
        assert!(
            Instant::now() < deadline,
            "the follower's copy never matched the leader's:\n{:?}\n{:?}",
            on_disk(&dir),
            on_disk(&leader_dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(on_disk(&dir).len(), acked[0].len());
    let epochs = std::fs::read_to_string(dir.join("leader-epoch-checkpoint")).unwrap();
    let leader_epochs =
        std::fs::read_to_string(leader_dir.join("leader-epoch-checkpoint")).unwrap();
    assert_eq!(epochs, leader_epochs, "the same epoch history");
    // Followers' long polls keep an idle cluster cheap: descriptors flat, little CPU.
    super::cluster_e2e::assert_idle_cost_flat(&nodes);
}

#[test]
fn a_node_whose_disk_was_wiped_rejoins_and_copies_its_replicas_back() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let (mut nodes, _, controller) = super::cluster_e2e::three_nodes(tmp.path(), &etcd);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let at = |id: i32| (id - 1) as usize;
    assert_eq!(create(&nodes[at(controller)], "kept", 1, 3), (0, 3));
    let (_, parts, _) = wait_for_metadata(&refs, "kept", |(e, p, _)| {
        *e == 0 && p.len() == 1 && p.iter().all(in_sync)
    });
    let leader = parts[0].leader;
    let mut acked = Vec::new();
    for i in 0..20 {
        let (error, offset) =
            produce_acks(&nodes[at(leader)], "kept", 0, &format!("r{i}"), ACKS_ALL);
        assert_eq!(error, 0, "acks=all to kept-0");
        acked.push(offset);
    }

    // A follower loses its disk: killed, dropped from the ISR, its data directory gone.
    let wiped = (1..=3).find(|&id| id != leader).unwrap();
    nodes[at(wiped)].kill9();
    let others: Vec<&ServerProc> = (1..=3)
        .filter(|&id| id != wiped)
        .map(|id| &nodes[at(id)])
        .collect();
    wait_for_metadata(&others, "kept", |(_, p, b)| {
        b.len() == 2 && !p[0].isr.contains(&wiped)
    });
    std::fs::remove_dir_all(tmp.path().join(format!("node-{wiped}"))).unwrap();

    // It registers anew (a new directory id), copies the topic, fetches from the start and
    // rejoins the ISR with the leader's batches, byte for byte.
    nodes[at(wiped)].respawn();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    wait_for_metadata(&refs, "kept", |(_, p, b)| {
        b.len() == 3 && p.iter().all(in_sync)
    });
    let dir = tmp.path().join(format!("node-{wiped}")).join("kept-0");
    let leader_dir = tmp.path().join(format!("node-{leader}")).join("kept-0");
    let deadline = Instant::now() + Duration::from_secs(20);
    while on_disk(&dir) != on_disk(&leader_dir) {
        assert!(
            Instant::now() < deadline,
            "the wiped node's copy never matched the leader's"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        on_disk(&dir).len(),
        acked.len(),
        "every acknowledged batch copied back"
    );
}
