//! `shardlog topics reassign`: Kafka's `kafka-reassign-partitions` over any node's Kafka
//! listener, with its JSON files. `--generate` proposes a plan that moves the topics of
//! `--topics-to-move-json-file` onto `--brokers` (Kafka's placement, racks
//! respected); `--execute` starts the plan of `--reassignment-json-file` (after printing
//! the current assignment, for a rollback); `--verify` says of each partition whether it
//! is done; `--cancel` cancels it (AlterPartitionReassignments with replicas = null).

use std::collections::BTreeMap;
use std::io::Write;

use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, ApiKey, BrokerId, ListPartitionReassignmentsRequest,
    RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use super::replica_view::{self, ReplicaView};
use crate::kafka::blocking_client::BlockingClient;

/// What `topics reassign` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReassignMode {
    Generate,
    Execute,
    Verify,
    Cancel,
}

/// A plan: each partition's target replicas, by (topic, partition).
pub(super) type Plan = BTreeMap<(String, i32), Vec<i32>>;

/// Each partition's target replicas, or None to cancel its reassignment.
pub(super) type Wanted = Vec<((String, i32), Option<Vec<i32>>)>;

/// What `topics reassign` was given.
pub struct ReassignArgs<'a> {
    pub mode: Option<ReassignMode>,
    pub server: &'a super::ServerAddr,
    pub plan: Option<&'a std::path::Path>,
    pub topics_to_move: Option<&'a std::path::Path>,
    pub brokers: Option<&'a str>,
    /// execute: bytes/s the moves may copy (`reassign_throttle`).
    pub throttle: Option<u64>,
}

pub fn run(args: &ReassignArgs<'_>, out: &mut dyn Write) -> Result<(), String> {
    let mode = args.mode.ok_or(
        "topics reassign needs a mode: --reassign generate|execute|verify|cancel".to_string(),
    )?;
    let server = args.server;
    let mut kafka =
        super::probe::kafka_client_of(&server.bootstrap, &server.client, server.timeout_ms)?;
    let io = |e: std::io::Error| e.to_string();
    match mode {
        ReassignMode::Generate => {
            let topics = topics_to_move(args)?;
            let view = replica_view::read(&mut kafka, Some(&topics))?;
            let brokers = broker_list(args)?;
            let current = assignment_of(&view, &topics);
            let proposed = generate(&view, &current, &brokers)?;
            writeln!(
                out,
                "Current partition replica assignment\n{}\n",
                to_json(&current)
            )
            .map_err(io)?;
            writeln!(
                out,
                "Proposed partition reassignment configuration\n{}",
                to_json(&proposed)
            )
            .map_err(io)
        }
        ReassignMode::Execute => {
            let plan = read_plan(args)?;
            let topics: Vec<String> = plan.keys().map(|(t, _)| t.clone()).collect();
            let view = replica_view::read(&mut kafka, Some(&topics))?;
            let current = assignment_of(&view, &topics);
            let current: Plan = current
                .into_iter()
                .filter(|(k, _)| plan.contains_key(k))
                .collect();
            writeln!(out, "Current partition replica assignment\n\n{}\n\nSave this to use as the --reassignment-json-file option during rollback", to_json(&current)).map_err(io)?;
            if let Some(rate) = args.throttle {
                super::reassign_throttle::apply(&mut kafka, (server, &view), &plan, rate, out)?;
            }
            let wanted = plan.iter().map(|(k, v)| (k.clone(), Some(v.clone())));
            alter(&mut kafka, wanted.collect())?;
            writeln!(
                out,
                "Successfully started partition reassignments for {}",
                names(&plan)
            )
            .map_err(io)
        }
        ReassignMode::Verify => verify(&mut kafka, server, &read_plan(args)?, out),
        ReassignMode::Cancel => {
            let plan = read_plan(args)?;
            alter(&mut kafka, plan.keys().map(|k| (k.clone(), None)).collect())?;
            writeln!(
                out,
                "Successfully cancelled partition reassignments for: {}",
                names(&plan)
            )
            .map_err(io)
        }
    }
}

fn names(plan: &Plan) -> String {
    let each: Vec<String> = plan.keys().map(|(t, p)| format!("{t}-{p}")).collect();
    each.join(",")
}

fn read_json(path: Option<&std::path::Path>, flag: &str) -> Result<Value, String> {
    let path = path.ok_or(format!("{flag} is required"))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

/// Kafka's topics-to-move file: `{"version":1,"topics":[{"topic":"t"}]}`.
fn topics_to_move(args: &ReassignArgs<'_>) -> Result<Vec<String>, String> {
    let v = read_json(args.topics_to_move, "--topics-to-move-json-file")?;
    let topics = v["topics"]
        .as_array()
        .ok_or("the file has no \"topics\" list")?;
    let each = topics
        .iter()
        .map(|t| t["topic"].as_str().map(str::to_string));
    let names: Option<Vec<String>> = each.collect();
    names
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "every entry of \"topics\" names a \"topic\"".into())
}

/// Kafka's reassignment file: `{"version":1,"partitions":[{"topic":"t","partition":0,
/// "replicas":[1,2]}]}` (`log_dirs` is accepted and must be "any": one log dir per node).
fn read_plan(args: &ReassignArgs<'_>) -> Result<Plan, String> {
    let v = read_json(args.plan, "--reassignment-json-file")?;
    let parts = v["partitions"]
        .as_array()
        .ok_or("the file has no \"partitions\" list")?;
    let mut plan = Plan::new();
    for p in parts {
        let bad =
            || format!("a partition entry needs \"topic\", \"partition\" and \"replicas\": {p}");
        let topic = p["topic"].as_str().ok_or_else(bad)?.to_string();
        let partition = p["partition"]
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(bad)?;
        let replicas = p["replicas"].as_array().ok_or_else(bad)?.iter();
        let replicas: Option<Vec<i32>> =
            replicas.map(|r| i32::try_from(r.as_i64()?).ok()).collect();
        let dirs = p["log_dirs"].as_array().into_iter().flatten();
        if dirs.clone().any(|d| d.as_str() != Some("any")) {
            return Err(format!(
                "log_dirs other than \"any\" are not supported (one log dir per node): {p}"
            ));
        }
        if plan
            .insert((topic, partition), replicas.ok_or_else(bad)?)
            .is_some()
        {
            return Err(format!("a partition is listed twice: {p}"));
        }
    }
    if plan.is_empty() {
        return Err("the plan lists no partition".into());
    }
    assert_eq!(
        plan.len(),
        parts.len(),
        "each listed partition is planned once"
    );
    Ok(plan)
}

fn broker_list(args: &ReassignArgs<'_>) -> Result<Vec<i32>, String> {
    let list = args.brokers.ok_or("--brokers is required with generate")?;
    let ids: Result<Vec<i32>, _> = list.split(',').map(|b| b.trim().parse::<i32>()).collect();
    let mut ids = ids.map_err(|_| format!("--brokers {list:?} must be broker ids like 1,2,3"))?;
    ids.sort_unstable();
    ids.dedup();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "broker ids are distinct, in order"
    );
    Ok(ids)
}

/// The current replicas of `topics`' partitions.
fn assignment_of(view: &ReplicaView, topics: &[String]) -> Plan {
    let placed = view
        .partitions
        .iter()
        .filter(|((t, _), _)| topics.contains(t));
    placed
        .map(|((t, p), r)| ((t.clone(), *p), r.replicas.clone()))
        .collect()
}

/// Kafka's `--generate`: each topic's partitions placed anew over `brokers` with its
/// replication factor (rack-aware where the nodes have racks).
fn generate(view: &ReplicaView, current: &Plan, brokers: &[i32]) -> Result<Plan, String> {
    let rack_of = |id: i32| {
        view.nodes
            .iter()
            .find(|n| n.id == id)
            .and_then(|n| n.rack.clone())
    };
    let with_racks: Vec<(i32, Option<String>)> = brokers.iter().map(|&b| (b, rack_of(b))).collect();
    let mut by_topic: BTreeMap<&str, Vec<(i32, usize)>> = BTreeMap::new();
    for ((t, p), replicas) in current {
        by_topic
            .entry(t.as_str())
            .or_default()
            .push((*p, replicas.len()));
    }
    let mut proposed = Plan::new();
    for (topic, parts) in by_topic {
        let factor = parts.iter().map(|(_, f)| *f).max().unwrap_or(1);
        let (start, shift) = (fastrand::usize(..brokers.len().max(1)), fastrand::usize(..));
        let placed = crate::replication::controller::place_on_racks(
            parts.len(),
            factor,
            &with_racks,
            start,
            shift,
        )
        .map_err(|e| format!("topic {topic}: {e}"))?;
        assert_eq!(placed.len(), parts.len(), "one placement per partition");
        for ((p, _), replicas) in parts.iter().zip(placed) {
            assert_eq!(
                replicas.len(),
                factor,
                "a placement keeps the replication factor"
            );
            assert!(
                replicas.iter().all(|r| brokers.contains(r)),
                "placed on the brokers given"
            );
            proposed.insert((topic.to_string(), *p), replicas);
        }
    }
    Ok(proposed)
}

pub(super) fn to_json(plan: &Plan) -> String {
    let parts: Vec<Value> = plan
        .iter()
        .map(|((t, p), r)| json!({"topic": t, "partition": p, "replicas": r, "log_dirs": vec!["any"; r.len()]}))
        .collect();
    json!({"version": 1, "partitions": parts}).to_string()
}

fn topic_name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.to_string()))
}

/// AlterPartitionReassignments v1 (the replication factor may change, as Kafka's tool
/// allows): fails with every partition refused and why.
pub(super) fn alter(kafka: &mut BlockingClient, wanted: Wanted) -> Result<(), String> {
    let mut topics: Vec<ReassignableTopic> = Vec::new();
    for ((t, p), replicas) in wanted {
        let partition = ReassignablePartition::default()
            .with_partition_index(p)
            .with_replicas(replicas.map(|r| r.into_iter().map(BrokerId).collect()));
        match topics.last_mut().filter(|x| *x.name.0 == *t) {
            Some(x) => x.partitions.push(partition),
            None => topics.push(
                ReassignableTopic::default()
                    .with_name(topic_name(&t))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_allow_replication_factor_change(true)
        .with_topics(topics);
    let answer = kafka.call(
        ApiKey::AlterPartitionReassignments,
        1,
        &RequestKind::AlterPartitionReassignments(request),
    );
    let Ok(ResponseKind::AlterPartitionReassignments(r)) = answer else {
        return Err(format!("AlterPartitionReassignments failed: {answer:?}"));
    };
    if r.error_code != 0 {
        return Err(format!(
            "the reassignment was refused: {} ({})",
            crate::kafka_codes::describe(r.error_code),
            r.error_message.as_deref().unwrap_or("")
        ));
    }
    let mut refused = Vec::new();
    for t in &r.responses {
        for p in t.partitions.iter().filter(|p| p.error_code != 0) {
            let why = p.error_message.as_deref().unwrap_or("");
            refused.push(format!(
                "{}-{}: {} ({why})",
                &*t.name.0,
                p.partition_index,
                crate::kafka_codes::describe(p.error_code)
            ));
        }
    }
    match refused.is_empty() {
        true => Ok(()),
        false => Err(format!("refused:\n{}", refused.join("\n"))),
    }
}

/// Kafka's `--verify`: each partition still moving, done, or moved elsewhere.
fn verify(
    kafka: &mut BlockingClient,
    server: &super::ServerAddr,
    plan: &Plan,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut asked: Vec<ListPartitionReassignmentsTopics> = Vec::new();
    for (t, p) in plan.keys() {
        match asked.last_mut().filter(|x| *x.name.0 == **t) {
            Some(x) => x.partition_indexes.push(*p),
            None => asked.push(
                ListPartitionReassignmentsTopics::default()
                    .with_name(topic_name(t))
                    .with_partition_indexes(vec![*p]),
            ),
        }
    }
    let request = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(Some(asked));
    let answer = kafka.call(
        ApiKey::ListPartitionReassignments,
        0,
        &RequestKind::ListPartitionReassignments(request),
    );
    let Ok(ResponseKind::ListPartitionReassignments(r)) = answer else {
        return Err(format!("ListPartitionReassignments failed: {answer:?}"));
    };
    let moving: Vec<(String, i32)> = (r.topics.iter())
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index))
        })
        .collect();
    let topics: Vec<String> = plan.keys().map(|(t, _)| t.clone()).collect();
    let view = replica_view::read(kafka, Some(&topics))?;
    let io = |e: std::io::Error| e.to_string();
    writeln!(out, "Status of partition reassignment:").map_err(io)?;
    let mut all_done = true;
    for ((t, p), target) in plan {
        let now = view
            .partitions
            .get(&(t.clone(), *p))
            .map(|r| r.replicas.clone());
        let line = match (moving.contains(&(t.clone(), *p)), now) {
            (true, _) => format!("Reassignment of partition {t}-{p} is still in progress."),
            (false, Some(now)) if now == *target => format!("Reassignment of partition {t}-{p} is completed."),
            (false, now) => format!("There is no active reassignment of partition {t}-{p}, but replica set is {now:?} rather than {target:?}."),
        };
        all_done &= line.ends_with("is completed.");
        writeln!(out, "{line}").map_err(io)?;
    }
    // As Kafka's tool: the throttle goes once every move is done (none set: nothing to do).
    match all_done {
        true => super::reassign_throttle::remove(kafka, (server, &view), plan, out),
        false => Ok(()),
    }
}
