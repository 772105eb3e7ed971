//! `shardlog cluster decommission --broker N`: moves every replica off one broker in one
//! command (what Kafka operators script from kafka-reassign-partitions, and Redpanda's
//! `rpk redpanda admin brokers decommission` does). Each partition on the broker keeps its
//! other replicas and its replication factor; the broker's copy goes to a broker outside
//! the partition's replicas, preferring one whose rack none of the other replicas is in
//! (the rack spread stays), then the one holding the fewest replicas. The whole plan is refused, nothing moved, when a
//! partition has nowhere to go. It prints the current assignment (for a rollback with
//! `topics reassign --reassign execute`), starts the moves with
//! AlterPartitionReassignments, and waits (bounded) until no partition lists the broker.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use super::reassign::{alter, to_json, Plan};
use super::replica_view::{self, ReplicaView};

/// How often the moves are looked at while waiting.
const POLL: Duration = Duration::from_millis(500);

pub fn run(
    server: &super::ServerAddr,
    broker: i32,
    wait: Duration,
    out: &mut dyn Write,
) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let mut kafka =
        super::probe::kafka_client_of(&server.bootstrap, &server.client, server.timeout_ms)?;
    let view = replica_view::read(&mut kafka, None)?;
    let plan = plan_off(&view, broker)?;
    if plan.is_empty() {
        return writeln!(out, "Broker {broker} holds no replica: nothing to move").map_err(io);
    }
    let current: Plan = (view.partitions.iter())
        .filter(|(k, _)| plan.contains_key(*k))
        .map(|(k, r)| (k.clone(), r.replicas.clone()))
        .collect();
    writeln!(out, "Current partition replica assignment\n\n{}\n\nSave this to use as the --reassignment-json-file option during rollback\n", to_json(&current)).map_err(io)?;
    writeln!(
        out,
        "Moving {} partitions off broker {broker}\n{}",
        plan.len(),
        to_json(&plan)
    )
    .map_err(io)?;
    alter(
        &mut kafka,
        plan.iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect(),
    )?;
    wait_until_moved(&mut kafka, broker, wait, out)
}

/// Each partition with a replica on `broker`, with that replica replaced.
fn plan_off(view: &ReplicaView, broker: i32) -> Result<Plan, String> {
    let holds = |r: &replica_view::Replicas| r.replicas.contains(&broker);
    let known = view.nodes.iter().any(|n| n.id == broker);
    if !known && !view.partitions.values().any(holds) {
        return Err(format!(
            "broker {broker} is not a live node and holds no replica"
        ));
    }
    let rack_of = |id: i32| {
        view.nodes
            .iter()
            .find(|n| n.id == id)
            .and_then(|n| n.rack.clone())
    };
    let mut load: BTreeMap<i32, usize> = (view.nodes.iter())
        .filter(|n| n.id != broker)
        .map(|n| (n.id, 0))
        .collect();
    for r in view.partitions.values() {
        r.replicas
            .iter()
            .for_each(|id| *load.entry(*id).or_default() += 1);
    }
    load.remove(&broker);
    let mut plan = Plan::new();
    for ((topic, p), r) in view.partitions.iter().filter(|(_, r)| holds(r)) {
        let outside = load.keys().filter(|id| !r.replicas.contains(id));
        // A broker without a rack counts as a rack of its own.
        let taken: Vec<String> = (r.replicas.iter())
            .filter(|id| **id != broker)
            .filter_map(|id| rack_of(*id))
            .collect();
        let shares_a_rack = |id: i32| rack_of(id).is_some_and(|rack| taken.contains(&rack));
        let chosen = outside
            .min_by_key(|id| (shares_a_rack(**id), load[*id], **id))
            .copied()
            .ok_or_else(|| {
                format!(
                    "{topic}-{p} has replicas {:?}: no other broker is left to take broker {broker}'s copy (add a broker, or lower the topic's replication factor first); nothing was moved",
                    r.replicas
                )
            })?;
        *load.entry(chosen).or_default() += 1;
        let replicas: Vec<i32> = (r.replicas.iter())
            .map(|id| if *id == broker { chosen } else { *id })
            .collect();
        assert!(
            !replicas.contains(&broker),
            "the broker leaves the partition"
        );
        assert_eq!(
            replicas.len(),
            r.replicas.len(),
            "the replication factor stays"
        );
        plan.insert((topic.clone(), *p), replicas);
    }
    Ok(plan)
}

/// Waits until no partition lists `broker` among its replicas (its copies deleted by
/// their moves), reporting progress; an error naming what still moves after `wait`.
fn wait_until_moved(
    kafka: &mut crate::kafka::blocking_client::BlockingClient,
    broker: i32,
    wait: Duration,
    out: &mut dyn Write,
) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    let deadline = Instant::now() + wait;
    let mut reported = usize::MAX;
    loop {
        let view = replica_view::read(kafka, None)?;
        let left: Vec<String> = (view.partitions.iter())
            .filter(|(_, r)| r.replicas.contains(&broker))
            .map(|((t, p), _)| format!("{t}-{p}"))
            .collect();
        if left.is_empty() {
            return writeln!(
                out,
                "Broker {broker} holds no replica now: it can be stopped"
            )
            .map_err(io);
        }
        if left.len() != reported {
            writeln!(
                out,
                "{} partitions still have a replica on broker {broker}",
                left.len()
            )
            .map_err(io)?;
            reported = left.len();
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "after {wait:?}, still moving off broker {broker}: {} (the moves go on; run this again to wait more)",
                left.join(", ")
            ));
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::replica_view::{Node, Replicas};

    fn node(id: i32, rack: &str) -> Node {
        Node {
            id,
            host: "h".into(),
            port: 1,
            rack: Some(rack.into()),
        }
    }

    fn placed(replicas: &[i32]) -> Replicas {
        Replicas {
            leader: replicas[0],
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            offline: Vec::new(),
        }
    }

    #[test]
    fn the_broker_s_copies_go_to_the_least_loaded_keeping_racks_apart() {
        let nodes = vec![node(1, "a"), node(2, "b"), node(3, "a"), node(4, "c")];
        let mut view = ReplicaView {
            nodes,
            ..ReplicaView::default()
        };
        view.partitions.insert(("t".into(), 0), placed(&[1, 2]));
        view.partitions.insert(("t".into(), 1), placed(&[2, 1]));
        view.partitions.insert(("t".into(), 2), placed(&[3, 2]));
        let plan = plan_off(&view, 1).unwrap();
        assert_eq!(plan.len(), 2, "only partitions on broker 1 move");
        assert_eq!(
            plan[&("t".to_string(), 0)],
            [4, 2],
            "the least loaded, in its place"
        );
        assert_eq!(
            plan[&("t".to_string(), 1)],
            [2, 3],
            "then the next least loaded"
        );
        // Broker 5 holds least, but shares rack b with the partition's other replica.
        let mut view = ReplicaView {
            nodes: vec![node(1, "a"), node(2, "b"), node(4, "c"), node(5, "b")],
            ..ReplicaView::default()
        };
        view.partitions.insert(("x".into(), 0), placed(&[1, 2]));
        view.partitions.insert(("x".into(), 1), placed(&[4, 5]));
        view.partitions.insert(("x".into(), 2), placed(&[4, 2]));
        let plan = plan_off(&view, 1).unwrap();
        assert_eq!(plan[&("x".to_string(), 0)], [4, 2], "racks stay apart");
    }

    #[test]
    fn a_partition_with_nowhere_to_go_refuses_the_whole_plan() {
        let mut view = ReplicaView {
            nodes: vec![node(1, "a"), node(2, "b"), node(3, "c")],
            ..ReplicaView::default()
        };
        view.partitions
            .insert(("full".into(), 0), placed(&[1, 2, 3]));
        let why = plan_off(&view, 3).unwrap_err();
        assert!(
            why.contains("full-0") && why.contains("nothing was moved"),
            "{why}"
        );
        assert!(plan_off(&view, 9).unwrap_err().contains("not a live node"));
        view.partitions.clear();
        assert!(plan_off(&view, 3).unwrap().is_empty());
    }
}
