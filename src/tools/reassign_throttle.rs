//! `topics reassign --execute --throttle RATE` as Kafka's kafka-reassign-partitions does it:
//! the brokers of each move get `leader.replication.throttled.rate` and
//! `follower.replication.throttled.rate` (bytes/s, dynamic broker configs, each set on the
//! broker itself), and each moving topic lists the replicas throttled: its current replicas
//! as leaders (`leader.replication.throttled.replicas`), the added ones as followers
//! (`follower.replication.throttled.replicas`). Only replicas catching up are held back;
//! in-sync followers are not. `--verify`, once every move is done, removes all of it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

use super::replica_view::ReplicaView;
use super::topic_changes::{alter_configs, alter_resource, BROKER_RESOURCE};
use super::ServerAddr;
use crate::catalog::broker_defaults::THROTTLE_RATE_KEYS;
use crate::kafka::blocking_client::BlockingClient;

/// Each partition's target replicas, by (topic, partition) (`reassign`'s plan).
type Plan = BTreeMap<(String, i32), Vec<i32>>;

const LEADER_REPLICAS: &str = "leader.replication.throttled.replicas";
const FOLLOWER_REPLICAS: &str = "follower.replication.throttled.replicas";

/// Per topic, the (leader list, follower list) of the throttled replicas of `plan`'s moves.
fn throttled_replicas(view: &ReplicaView, plan: &Plan) -> BTreeMap<String, (String, String)> {
    let mut lists: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for ((topic, p), target) in moving(view, plan) {
        let current = view.partitions.get(&(topic.clone(), *p));
        let current = current.map_or(&[][..], |r| &r.replicas[..]);
        let (leaders, followers) = lists.entry(topic.clone()).or_default();
        leaders.extend(current.iter().map(|b| format!("{p}:{b}")));
        let added = target.iter().filter(|b| !current.contains(b));
        followers.extend(added.map(|b| format!("{p}:{b}")));
    }
    let joined = lists
        .into_iter()
        .map(|(t, (l, f))| (t, (l.join(","), f.join(","))));
    joined.collect()
}

/// The partitions of `plan` whose replicas change.
fn moving<'a>(
    view: &'a ReplicaView,
    plan: &'a Plan,
) -> impl Iterator<Item = (&'a (String, i32), &'a Vec<i32>)> {
    plan.iter().filter(|(key, target)| {
        view.partitions
            .get(*key)
            .is_none_or(|r| r.replicas != **target)
    })
}

/// The brokers a move involves: each partition's current and target replicas.
fn brokers_of(view: &ReplicaView, plan: &Plan) -> BTreeSet<i32> {
    let mut brokers = BTreeSet::new();
    for ((topic, p), target) in moving(view, plan) {
        brokers.extend(target);
        if let Some(r) = view.partitions.get(&(topic.clone(), *p)) {
            brokers.extend(&r.replicas);
        }
    }
    brokers
}

/// Sets the throttle of `plan`'s moves at `rate` bytes/s (before the moves start).
pub fn apply(
    kafka: &mut BlockingClient,
    (server, view): (&ServerAddr, &ReplicaView),
    plan: &Plan,
    rate: u64,
    out: &mut dyn Write,
) -> Result<(), String> {
    if rate == 0 {
        return Err("--throttle needs a rate of at least 1 byte/s".into());
    }
    let rates = THROTTLE_RATE_KEYS.map(|k| (k.to_string(), rate.to_string()));
    for broker in brokers_of(view, plan) {
        alter_broker(server, view, broker, (&rates, &[]))?;
    }
    for (topic, (leaders, followers)) in throttled_replicas(view, plan) {
        let set = [
            (LEADER_REPLICAS.to_string(), leaders),
            (FOLLOWER_REPLICAS.to_string(), followers),
        ];
        alter_configs(kafka, &topic, &set, &[])?;
    }
    let io = |e: std::io::Error| e.to_string();
    writeln!(out, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.").map_err(io)?;
    writeln!(out, "The inter-broker throttle limit was set to {rate} B/s").map_err(io)
}

/// Removes every throttle of `plan`'s moves (once they are all done).
pub fn remove(
    kafka: &mut BlockingClient,
    (server, view): (&ServerAddr, &ReplicaView),
    plan: &Plan,
    out: &mut dyn Write,
) -> Result<(), String> {
    let rates = THROTTLE_RATE_KEYS.map(str::to_string);
    let io = |e: std::io::Error| e.to_string();
    for node in &view.nodes {
        // A node that went away keeps its rate until asked again; the others go on.
        if let Err(e) = alter_broker(server, view, node.id, (&[], &rates)) {
            writeln!(
                out,
                "Warning: the throttle rate of broker {} stays: {e}",
                node.id
            )
            .map_err(io)?;
        }
    }
    let topics: BTreeSet<&String> = plan.keys().map(|(t, _)| t).collect();
    let lists = [LEADER_REPLICAS.to_string(), FOLLOWER_REPLICAS.to_string()];
    for topic in topics {
        alter_configs(kafka, topic, &[], &lists)?;
    }
    writeln!(out, "Throttle was removed.").map_err(|e| e.to_string())
}

/// Sets (`set`) or removes broker `id`'s own throttle rates, through that broker (a broker
/// changes only its own configs; the cluster default is "").
fn alter_broker(
    server: &ServerAddr,
    view: &ReplicaView,
    id: i32,
    (set, delete): (&[(String, String)], &[String]),
) -> Result<(), String> {
    let node = view.nodes.iter().find(|n| n.id == id);
    let node =
        node.ok_or_else(|| format!("broker {id} is not live: its throttle cannot be changed"))?;
    let security = server.client.security()?;
    let timeout = Duration::from_millis(server.timeout_ms);
    let address = format!("{}:{}", node.host, node.port);
    let mut client = super::secure_stream::kafka_client(&address, &security, timeout)?;
    let broker = (BROKER_RESOURCE, id.to_string());
    alter_resource(&mut client, (broker.0, &broker.1), set, delete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::replica_view::Replicas;

    #[test]
    fn current_replicas_lead_and_added_ones_follow() {
        let placed = |replicas: Vec<i32>| Replicas {
            leader: replicas[0],
            isr: replicas.clone(),
            replicas,
            offline: Vec::new(),
        };
        let view = ReplicaView {
            partitions: [
                (("t".to_string(), 0), placed(vec![1, 2])),
                (("t".to_string(), 1), placed(vec![2, 3])),
            ]
            .into(),
            ..ReplicaView::default()
        };
        let plan: Plan = [
            (("t".to_string(), 0), vec![2, 4]),
            (("t".to_string(), 1), vec![2, 3]),
        ]
        .into();
        let lists = throttled_replicas(&view, &plan);
        // t-1 stays where it is: nothing of it is throttled.
        assert_eq!(lists["t"], ("0:1,0:2".into(), "0:4".into()));
        assert_eq!(brokers_of(&view, &plan), [1, 2, 4].into());
    }
}
