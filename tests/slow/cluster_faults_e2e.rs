//! Faults under acks=all load on a three-node cluster (a real etcd, real processes): a
//! producer writes unique values to every partition's leader while leaders are killed
//! (kill -9, then restarted) and paused (SIGSTOP past the session timeout, then SIGCONT);
//! afterwards every acknowledged value is read back exactly once from the partitions'
//! leaders, and the longest gap between two acknowledgements is reported (the failover
//! time clients see). Every loop is bounded in time.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::etcd::EtcdServer;
use common::server_proc::ServerProc;
use kafka_protocol::messages::{
    metadata_request, produce_request, ApiKey, MetadataRequest, ProduceRequest, RequestKind,
    ResponseKind,
};
use shardlog::kafka::blocking_client::BlockingClient;

use super::cluster_e2e::{members, wait_for_agreement};
use super::cluster_topics_e2e::{batch, create, name, wait_for_metadata, Described};

pub(crate) const TOPIC: &str = "load";
const PARTITIONS: i32 = 3;

/// A node whose acks=all produces give up after 3 s (the producer's timeout is longer).
fn node(dir: &std::path::Path, etcd: &EtcdServer, id: i32) -> ServerProc {
    node_as(dir, etcd, id, None)
}

/// As `node`, run as the user `uid` when given.
fn node_as(dir: &std::path::Path, etcd: &EtcdServer, id: i32, uid: Option<u32>) -> ServerProc {
    node_with(dir, etcd, (id, uid), &[])
}

/// As `node_as`, with `extra` keys (which replace the defaults of the same name).
pub(crate) fn node_with(
    dir: &std::path::Path,
    etcd: &EtcdServer,
    (id, uid): (i32, Option<u32>),
    extra: &[(&str, &str)],
) -> ServerProc {
    let keys = node_keys(etcd, id, extra);
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let data = dir.join(format!("node-{id}"));
    match uid {
        Some(uid) => ServerProc::start_as(&data, 1, &keys, uid),
        None => ServerProc::start(&data, 1, &keys),
    }
}

/// A cluster node's settings: fast heartbeats and timeouts, then `extra` (which wins).
pub(crate) fn node_keys(
    etcd: &EtcdServer,
    id: i32,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let id = id.to_string();
    let endpoint = etcd.endpoint();
    let defaults = [
        ("cluster.etcd.endpoints", endpoint.as_str()),
        ("broker.id", id.as_str()),
        ("broker.session.timeout.ms", "3000"),
        ("broker.heartbeat.interval.ms", "200"),
        ("replica.lag.time.max.ms", "3000"),
        ("request.timeout.ms", "3000"),
        ("kafka.listen", "auto"),
    ];
    let replaced = |k: &str| extra.iter().any(|(e, _)| *e == k);
    let kept = defaults.into_iter().filter(|(k, _)| !replaced(k));
    (kept.chain(extra.iter().copied()))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The leaders of the topic's partitions as `addr` sees them (-1: none), or None when it
/// does not answer.
pub(crate) fn leaders(addr: &str) -> Option<Vec<i32>> {
    let mut k = BlockingClient::connect_with_timeout(addr, Duration::from_secs(2)).ok()?;
    let t = metadata_request::MetadataRequestTopic::default().with_name(Some(name(TOPIC)));
    let request = MetadataRequest::default().with_topics(Some(vec![t]));
    let Ok(ResponseKind::Metadata(r)) =
        k.call(ApiKey::Metadata, 9, &RequestKind::Metadata(request))
    else {
        return None;
    };
    let mut parts: Vec<(i32, i32)> = (r.topics.first()?.partitions.iter())
        .map(|p| (p.partition_index, p.leader_id.0))
        .collect();
    parts.sort_unstable();
    Some(parts.into_iter().map(|(_, l)| l).collect())
}

/// What the producer saw: acknowledged (partition, value), and the acknowledgement times.
#[derive(Default)]
pub(crate) struct Acked {
    pub values: Vec<(i32, String)>,
    pub times: Vec<Instant>,
}

/// Produces unique values round-robin to each partition's leader (acks=all) until `stop`.
fn produce_load(addrs: Vec<(i32, String)>, stop: Arc<AtomicBool>, acked: Arc<Mutex<Acked>>) {
    let mut leader_of: Vec<i32> = vec![-1; PARTITIONS as usize];
    let mut clients: HashMap<i32, BlockingClient> = HashMap::new();
    let addr_of: HashMap<i32, String> = addrs.iter().cloned().collect();
    let mut attempt = 0u64;
    while !stop.load(Ordering::Relaxed) {
        attempt += 1;
        let p = (attempt % PARTITIONS as u64) as i32;
        let leader = leader_of[p as usize];
        if leader < 0 {
            refresh(&addrs, &mut leader_of);
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let value = format!("p{p}-a{attempt}");
        let client = match clients.entry(leader) {
            std::collections::hash_map::Entry::Occupied(c) => Some(c.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => {
                BlockingClient::connect_with_timeout(&addr_of[&leader], Duration::from_secs(5))
                    .ok()
                    .map(|c| v.insert(c))
            }
        };
        let answer = client.and_then(|c| produce(c, p, &value));
        match answer {
            Some(0) => {
                let mut a = acked.lock().unwrap();
                a.values.push((p, value));
                a.times.push(Instant::now());
            }
            _ => {
                clients.remove(&leader);
                leader_of[p as usize] = -1;
            }
        }
    }
}

fn refresh(addrs: &[(i32, String)], leader_of: &mut [i32]) {
    for (_, addr) in addrs {
        if let Some(found) = leaders(addr).filter(|l| l.len() == leader_of.len()) {
            leader_of.copy_from_slice(&found);
            return;
        }
    }
}

/// Produce v9 acks=all of one record: the error code, None when the connection failed.
fn produce(k: &mut BlockingClient, partition: i32, value: &str) -> Option<i16> {
    let p = produce_request::PartitionProduceData::default()
        .with_index(partition)
        .with_records(Some(batch(value)));
    let t = produce_request::TopicProduceData::default()
        .with_name(name(TOPIC))
        .with_partition_data(vec![p]);
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(3_000)
        .with_topic_data(vec![t]);
    match k.call(ApiKey::Produce, 9, &RequestKind::Produce(request)) {
        Ok(ResponseKind::Produce(r)) => Some(r.responses[0].partition_responses[0].error_code),
        _ => None,
    }
}

/// Every value of a partition, read from its leader with consumer fetches.
fn values(addr: &str, partition: i32) -> Vec<String> {
    let read = super::cluster_topics_e2e::records(addr, TOPIC, partition);
    read.into_iter().map(|(_, value)| value).collect()
}

fn in_sync(p: &Described) -> bool {
    p.isr.len() == p.replicas.len()
}

#[test]
fn every_acknowledged_record_survives_leader_kills_and_pauses() {
    let tmp = tempfile::tempdir().unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let mut nodes: Vec<ServerProc> = (1..=3).map(|id| node(tmp.path(), &etcd, id)).collect();
    let at = |id: i32| (id - 1) as usize;
    let Load {
        stop,
        acked,
        producer,
    } = start_load(&nodes);
    let started = Instant::now();
    // Two kills and one pause of partition 0's current leader, each with time to recover.
    for round in 0..3 {
        std::thread::sleep(Duration::from_secs(2));
        let Some(leader) = leaders(&nodes[0].kafka_addr())
            .or_else(|| leaders(&nodes[1].kafka_addr()))
            .and_then(|l| l.first().copied())
            .filter(|&l| l > 0)
        else {
            continue;
        };
        let victim = &mut nodes[at(leader)];
        if round == 1 {
            let pid = victim.pid().to_string();
            std::process::Command::new("kill")
                .args(["-STOP", &pid])
                .status()
                .unwrap();
            std::thread::sleep(Duration::from_secs(5));
            std::process::Command::new("kill")
                .args(["-CONT", &pid])
                .status()
                .unwrap();
        } else {
            victim.kill9();
            std::thread::sleep(Duration::from_secs(4));
            victim.respawn();
        }
        let refs: Vec<&ServerProc> = nodes.iter().collect();
        wait_for_metadata(&refs, TOPIC, |(_, p, b)| {
            b.len() == 3 && p.iter().all(|p| p.leader > 0)
        });
    }
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    let elapsed = started.elapsed();
    let acked = acked.lock().unwrap();
    let gap = every_acknowledged_value_is_found_once(&nodes, &acked);
    eprintln!(
        "faults under acks=all: {} acknowledged in {elapsed:?}, all found once; longest gap between acknowledgements {gap:?}",
        acked.values.len(),
    );
}

/// The acks=all load on a running cluster: its stop, what it acknowledged, its thread.
pub(crate) struct Load {
    pub stop: Arc<AtomicBool>,
    pub acked: Arc<Mutex<Acked>>,
    pub producer: std::thread::JoinHandle<()>,
}

/// Once the three nodes agree: the topic created with three replicas each and in sync, and
/// the load started against it.
pub(crate) fn start_load(nodes: &[ServerProc]) -> Load {
    let all = members(&[(1, &nodes[0]), (2, &nodes[1]), (3, &nodes[2])]);
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let controller = wait_for_agreement(&refs, &all, Duration::from_secs(20));
    let created = create(&nodes[(controller - 1) as usize], TOPIC, PARTITIONS, 3);
    assert_eq!(created, (0, 3));
    wait_for_metadata(&refs, TOPIC, |(e, p, _)| {
        *e == 0 && p.len() == 3 && p.iter().all(in_sync)
    });
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Acked::default()));
    let producer = {
        let (stop, acked) = (stop.clone(), acked.clone());
        std::thread::spawn(move || produce_load(all, stop, acked))
    };
    Load {
        stop,
        acked,
        producer,
    }
}

/// Once every partition is led and in sync again: every acknowledged value is read back
/// exactly once from the partitions' leaders. The longest gap between acknowledgements.
pub(crate) fn every_acknowledged_value_is_found_once(
    nodes: &[ServerProc],
    acked: &Acked,
) -> Duration {
    let at = |id: i32| (id - 1) as usize;
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let (_, parts, _) = wait_for_metadata(&refs, TOPIC, |(_, p, b)| {
        b.len() == 3 && p.iter().all(|p| p.leader > 0 && in_sync(p))
    });
    let mut found: HashMap<String, usize> = HashMap::new();
    for (p, part) in parts.iter().enumerate() {
        for v in values(&nodes[at(part.leader)].kafka_addr(), p as i32) {
            *found.entry(v).or_default() += 1;
        }
    }
    let lost: Vec<&(i32, String)> = acked
        .values
        .iter()
        .filter(|(_, v)| !found.contains_key(v))
        .collect();
    let doubled: Vec<(&String, &usize)> = found.iter().filter(|(_, n)| **n > 1).collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    assert!(doubled.is_empty(), "stored twice: {doubled:?}");
    assert!(
        acked.values.len() > 100,
        "the load kept going: {} acknowledged",
        acked.values.len()
    );
    acked
        .times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

/// The user node `id` runs as in the partition test.
fn uid_of(id: i32) -> u32 {
    61_000 + id as u32
}

/// Every port a one-shard node listens on: native, its shard's own, Kafka.
fn ports_of(node: &ServerProc) -> Vec<u16> {
    let kafka = node.kafka_addr();
    let kafka = kafka.rsplit(':').next().unwrap().parse().unwrap();
    vec![node.port, node.port + 1, kafka]
}

#[test]
fn every_acknowledged_record_survives_a_leader_cut_off_from_its_peers() {
    let tmp = tempfile::tempdir().unwrap();
    // The nodes run as users of their own: they must be able to enter the directory.
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let etcd = EtcdServer::start(&tmp.path().join("etcd"));
    let nodes: Vec<ServerProc> = (1..=3)
        .map(|id| node_as(tmp.path(), &etcd, id, Some(uid_of(id))))
        .collect();
    let refs: Vec<&ServerProc> = nodes.iter().collect();
    let Load {
        stop,
        acked,
        producer,
    } = start_load(&nodes);
    std::thread::sleep(Duration::from_secs(2));
    let (_, parts, _) = wait_for_metadata(&refs, TOPIC, |(_, p, _)| p[0].leader > 0);
    let cut = parts[0].leader;
    let firewall = common::firewall::Firewall::new();
    for other in (1..=3).filter(|&id| id != cut) {
        firewall.block(uid_of(cut), &ports_of(&nodes[(other - 1) as usize]));
        firewall.block(uid_of(other), &ports_of(&nodes[(cut - 1) as usize]));
    }
    let acked_before = acked.lock().unwrap().values.len();
    // etcd still sees the cut-off node: it keeps leading, and shrinks its ISR to itself.
    let (_, alone, _) = wait_for_metadata(&refs, TOPIC, |(_, p, _)| p[0].isr == [cut]);
    assert_eq!(alone[0].leader, cut, "a live leader is not replaced");
    std::thread::sleep(Duration::from_secs(3));
    let acked_cut = acked.lock().unwrap().values.len() - acked_before;
    firewall.heal();
    wait_for_metadata(&refs, TOPIC, |(_, p, _)| p.iter().all(in_sync));

    // Now cut partition 0's leader off from etcd too: its lease ends, the others elect a
    // leader from the ISR, and it stops acknowledging (fenced) until it registers again.
    let (_, parts, _) = wait_for_metadata(&refs, TOPIC, |(_, p, _)| p[0].leader > 0);
    let isolated = parts[0].leader;
    let others: Vec<&ServerProc> = (1..=3)
        .filter(|&id| id != isolated)
        .map(|id| &nodes[(id - 1) as usize])
        .collect();
    firewall.block(uid_of(isolated), &[etcd.client_port]);
    for other in &others {
        firewall.block(uid_of(isolated), &ports_of(other));
    }
    for id in (1..=3).filter(|&id| id != isolated) {
        firewall.block(uid_of(id), &ports_of(&nodes[(isolated - 1) as usize]));
    }
    let (_, moved, _) = wait_for_metadata(&others, TOPIC, |(_, p, _)| {
        p[0].leader > 0 && p[0].leader != isolated
    });
    std::thread::sleep(Duration::from_secs(2));
    firewall.heal();
    drop(firewall);
    wait_for_metadata(&refs, TOPIC, |(_, p, b)| {
        b.len() == 3 && p.iter().all(in_sync)
    });
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();

    let acked = acked.lock().unwrap();
    let gap = every_acknowledged_value_is_found_once(&nodes, &acked);
    assert!(
        acked_cut > 0,
        "the cut-off leader kept acknowledging with an ISR of itself"
    );
    eprintln!(
        "under acks=all, leader {cut} cut off from its peers, then leader {isolated} from its peers and etcd (node {} took over): {} acknowledged ({acked_cut} while {cut} was cut off), all found once; longest gap between acknowledgements {gap:?}",
        moved[0].leader,
        acked.values.len(),
    );
}
