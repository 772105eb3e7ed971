//! `shardlog consumer-groups`: Kafka's kafka-consumer-groups, with its flags and output.
//! Like Kafka's tool it makes Kafka's requests: ListGroups, DescribeGroups, OffsetFetch,
//! ListOffsets, Metadata, OffsetCommit (generation -1, no member: only while the group is
//! inactive), OffsetDelete and DeleteGroups; to the Kafka listener as they are, to the
//! native listener through their native counterparts (`native_groups`).

use std::collections::BTreeMap;
use std::io::Write;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, StrBytes};

use super::native_groups::{GroupsApi, NativeGroups};
use super::time_arg::{format_time, parse_time_flag};
use crate::kafka::blocking_client::BlockingClient;
use crate::kafka_codes::describe;

type Out<'a> = &'a mut dyn Write;
type Result<T> = std::result::Result<T, String>;

/// What --describe shows: offsets and lag (default, --offsets), the members (--members,
/// with their partitions when verbose), or the group's state (--state).
#[non_exhaustive]
pub enum View {
    Offsets,
    Members { verbose: bool },
    State,
}

/// Which groups an action is about: --group G, --all-groups, or neither given.
#[non_exhaustive]
pub enum Groups {
    One(String),
    All,
    None,
}

#[non_exhaustive]
pub enum Action {
    /// `Some(states)`: a STATE column, only these states unless empty.
    List {
        states: Option<Vec<String>>,
    },
    Describe {
        view: View,
    },
    Delete,
    /// Kafka's --delete-offsets: `--topic T` or `T:0,2`.
    DeleteOffsets {
        topics: Vec<String>,
    },
    Reset(ResetArgs),
}

pub struct ResetArgs {
    /// `T` or `T:0,2`; empty with `all_topics`: every topic the group committed.
    pub topics: Vec<String>,
    pub all_topics: bool,
    pub target: Target,
    pub execute: bool,
    pub export: bool,
}

pub enum Target {
    Datetime(String),
    Duration(String),
    Earliest,
    Latest,
    Offset(i64),
    ShiftBy(i64),
    FromFile(std::path::PathBuf),
}

struct Tool {
    client: Box<dyn GroupsApi>,
    /// How long a request is retried while the server answers with retriable errors.
    timeout: std::time::Duration,
}

fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Where the tool connects and how.
pub struct Server<'a> {
    pub bootstrap: &'a str,
    pub timeout: std::time::Duration,
    /// The listener's security (--command-config, -X).
    pub client: &'a super::client_config::ClientConfigArgs,
}

/// The groups API of the listener at `server`: the native requests on the native
/// listener; anything else (a Kafka listener, no answer, no server) is the Kafka client's to
/// report, in its own words. A secured listener cannot be probed in plaintext: the native
/// SASL/TLS exchange is tried first, then Kafka's.
fn groups_api(server: &Server<'_>) -> Result<Box<dyn GroupsApi>> {
    let (bootstrap, timeout) = (server.bootstrap, server.timeout);
    let security = server.client.security()?;
    if security.protocol != crate::security::SecurityProtocol::Plaintext {
        if let Ok(native) = NativeGroups::connect_secure(bootstrap, &security, timeout) {
            return on_native(native, server);
        }
        let kafka = super::secure_stream::kafka_client(bootstrap, &security, timeout)?;
        return Ok(Box::new(kafka));
    }
    if super::probe::probe(bootstrap, timeout) == Ok(super::probe::Protocol::Native) {
        let native = NativeGroups::connect(bootstrap, timeout)?;
        return on_native(native, server);
    }
    let kafka = BlockingClient::connect_with_timeout(bootstrap, timeout)
        .map_err(|e| format!("connecting to the Kafka listener at {bootstrap}: {e}"))?;
    Ok(Box::new(kafka))
}

/// A native listener's groups API; on a cluster node, its Kafka listener's instead (the
/// native API cannot say which node coordinates a group), reached the one way every tool
/// reaches a Kafka listener from either listener's address.
fn on_native(mut native: NativeGroups, server: &Server<'_>) -> Result<Box<dyn GroupsApi>> {
    if !native.in_cluster() {
        return Ok(Box::new(native));
    }
    let timeout_ms = server.timeout.as_millis() as u64;
    let kafka = super::probe::kafka_client_of(server.bootstrap, server.client, timeout_ms)?;
    Ok(Box::new(kafka))
}

/// The groups API of the first address of a bootstrap list that answers, and that address.
fn first_answering<'a>(server: &Server<'a>) -> Result<(Box<dyn GroupsApi>, &'a str)> {
    let mut failures = Vec::new();
    for addr in super::bootstrap_list(server.bootstrap) {
        let one = Server {
            bootstrap: addr,
            timeout: server.timeout,
            client: server.client,
        };
        match groups_api(&one) {
            Ok(api) => return Ok((api, addr)),
            Err(e) => failures.push((addr, e)),
        }
    }
    Err(super::bootstrap_failures(failures))
}

pub fn run(server: Server<'_>, groups: Groups, action: Action, out: Out) -> Result<()> {
    let (home, reached) = first_answering(&server)?;
    let config = server.client.clone();
    let routed = super::groups_routing::Routed::new(home, reached, config, server.timeout);
    let mut tool = Tool {
        client: Box::new(routed),
        timeout: server.timeout,
    };
    let need_group = || match &groups {
        Groups::One(g) => Ok(g.clone()),
        _ => Err("--group is required".to_string()),
    };
    match action {
        Action::List { states } => tool.list(states, out),
        Action::Describe { view } => {
            for group in tool.chosen(&groups)? {
                tool.describe(&group, &view, out)?;
            }
            Ok(())
        }
        Action::Delete => {
            for group in tool.chosen(&groups)? {
                tool.delete(&group, out)?;
            }
            Ok(())
        }
        Action::DeleteOffsets { topics } => tool.delete_offsets(&need_group()?, &topics, out),
        Action::Reset(args) => tool.reset(&need_group()?, args, out),
    }
}

impl Tool {
    /// One request, retried while the server is starting (`retry.rs`).
    fn call(&mut self, key: ApiKey, version: i16, r: RequestKind) -> Result<ResponseKind> {
        let client = &mut self.client;
        super::retry::until_settled(self.timeout, || client.call(key, version, &r))
            .map_err(|e| format!("{key:?}: {e}"))
    }

    /// The groups an action names: the one --group, or every group (--all-groups).
    fn chosen(&mut self, groups: &Groups) -> Result<Vec<String>> {
        match groups {
            Groups::One(g) => Ok(vec![g.clone()]),
            Groups::All => Ok(self
                .listed(Vec::new())?
                .into_iter()
                .map(|(g, _)| g)
                .collect()),
            Groups::None => Err("--group or --all-groups is required".into()),
        }
    }

    /// (group, state) of every group, only those in `states` unless it is empty.
    fn listed(&mut self, states: Vec<String>) -> Result<Vec<(String, String)>> {
        let req = ListGroupsRequest::default()
            .with_states_filter(states.iter().map(|s| name(s)).collect());
        let ResponseKind::ListGroups(r) =
            self.call(ApiKey::ListGroups, 4, RequestKind::ListGroups(req))?
        else {
            return Err("unexpected ListGroups reply".into());
        };
        Ok(r.groups
            .into_iter()
            .map(|g| (g.group_id.0.to_string(), g.group_state.to_string()))
            .collect())
    }

    /// Kafka's --list, and with --state its GROUP/STATE table (filtered when states are given).
    fn list(&mut self, states: Option<Vec<String>>, out: Out) -> Result<()> {
        let with_state = states.is_some();
        let groups = self.listed(states.unwrap_or_default())?;
        if with_state {
            line(out, &format!("{:<40} {}", "GROUP", "STATE"))?;
        }
        for (group, state) in groups {
            let row = match with_state {
                true => format!("{group:<40} {state}"),
                false => group,
            };
            line(out, &row)?;
        }
        Ok(())
    }

    fn describe_group(&mut self, group: &str) -> Result<describe_groups_response::DescribedGroup> {
        let req = DescribeGroupsRequest::default().with_groups(vec![GroupId(name(group))]);
        let ResponseKind::DescribeGroups(mut r) =
            self.call(ApiKey::DescribeGroups, 5, RequestKind::DescribeGroups(req))?
        else {
            return Err("unexpected DescribeGroups reply".into());
        };
        r.groups.pop().ok_or("empty DescribeGroups reply".into())
    }

    /// The group's committed offsets: (topic, partition) -> offset.
    fn committed(&mut self, group: &str) -> Result<BTreeMap<(String, i32), i64>> {
        let req = OffsetFetchRequest::default()
            .with_group_id(GroupId(name(group)))
            .with_topics(None);
        let ResponseKind::OffsetFetch(r) =
            self.call(ApiKey::OffsetFetch, 7, RequestKind::OffsetFetch(req))?
        else {
            return Err("unexpected OffsetFetch reply".into());
        };
        if r.error_code != 0 {
            return Err(format!("group {group:?}: {}", describe(r.error_code)));
        }
        let mut out = BTreeMap::new();
        for t in r.topics {
            for p in t.partitions.iter().filter(|p| p.committed_offset >= 0) {
                out.insert(
                    (t.name.0.to_string(), p.partition_index),
                    p.committed_offset,
                );
            }
        }
        Ok(out)
    }

    /// ListOffsets for one partition: (offset, timestamp); offset -1 when none.
    fn list_offset(&mut self, topic: &str, partition: i32, ts: i64) -> Result<(i64, i64)> {
        let req = ListOffsetsRequest::default().with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![list_offsets_request::ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_timestamp(ts)]),
        ]);
        let ResponseKind::ListOffsets(r) =
            self.call(ApiKey::ListOffsets, 7, RequestKind::ListOffsets(req))?
        else {
            return Err("unexpected ListOffsets reply".into());
        };
        let p = &r.topics[0].partitions[0];
        if p.error_code != 0 {
            return Err(format!("{topic}-{partition}: {}", describe(p.error_code)));
        }
        Ok((p.offset, p.timestamp))
    }

    fn partitions_of(&mut self, topic: &str) -> Result<Vec<i32>> {
        let req = MetadataRequest::default()
            .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default(
            )
            .with_name(Some(TopicName(name(topic))))]));
        let ResponseKind::Metadata(r) =
            self.call(ApiKey::Metadata, 9, RequestKind::Metadata(req))?
        else {
            return Err("unexpected Metadata reply".into());
        };
        let t = &r.topics[0];
        if t.error_code != 0 {
            return Err(format!("topic {topic:?}: {}", describe(t.error_code)));
        }
        Ok(t.partitions.iter().map(|p| p.partition_index).collect())
    }

    fn describe(&mut self, group: &str, view: &View, out: Out) -> Result<()> {
        let g = self.describe_group(group)?;
        // Kafka's answer for a group it does not know (or one deleted).
        if g.group_state.as_str() == "Dead" && self.committed(group)?.is_empty() {
            return Err(format!("Consumer group '{group}' does not exist."));
        }
        if let View::State = view {
            line(out, STATE_HEADER)?;
            let row = format!(
                "{group:<20} {:<25} {:<20} {:<20} {}",
                "shardlog (0)",
                g.protocol_data,
                g.group_state,
                g.members.len()
            );
            return line(out, &row);
        }
        if let View::Members { verbose } = view {
            return describe_members(group, &g, *verbose, out);
        }
        self.describe_offsets(group, &g, out)
    }

    /// Kafka's default --describe: per partition, the commit, the log end, the lag and the
    /// member that owns it.
    fn describe_offsets(
        &mut self,
        group: &str,
        g: &describe_groups_response::DescribedGroup,
        out: Out,
    ) -> Result<()> {
        if g.members.is_empty() {
            line(
                out,
                &format!("\nConsumer group '{group}' has no active members.\n"),
            )?;
        }
        let owners = assignments(g);
        let committed = self.committed(group)?;
        let mut rows: Vec<(String, i32)> = committed.keys().cloned().collect();
        rows.extend(owners.keys().cloned());
        rows.sort();
        rows.dedup();
        line(out, OFFSETS_HEADER)?;
        for (topic, p) in rows {
            let end = self.list_offset(&topic, p, -1)?.0;
            let current = committed.get(&(topic.clone(), p));
            let lag = current.map_or("-".to_string(), |c| (end - c).max(0).to_string());
            let current = current.map_or("-".to_string(), |c| c.to_string());
            let (id, host, client) = owners
                .get(&(topic.clone(), p))
                .map_or(("-", "-", "-"), |o| (o.0, o.1, o.2));
            let row = format!("{group:<20} {topic:<20} {p:<10} {current:<15} {end:<15} {lag:<6} {id:<45} {host:<16} {client}");
            line(out, &row)?;
        }
        Ok(())
    }

    fn delete(&mut self, group: &str, out: Out) -> Result<()> {
        let req = DeleteGroupsRequest::default().with_groups_names(vec![GroupId(name(group))]);
        let ResponseKind::DeleteGroups(r) =
            self.call(ApiKey::DeleteGroups, 2, RequestKind::DeleteGroups(req))?
        else {
            return Err("unexpected DeleteGroups reply".into());
        };
        match r.results[0].error_code {
            0 => writeln!(out, "Deletion of requested consumer groups ('{group}') was successful.")
                .map_err(|e| e.to_string()),
            68 => Err(format!("Deletion of group '{group}' failed: the group is not empty (it has active members).")),
            69 => Err(format!("Deletion of group '{group}' failed: the group does not exist.")),
            code => Err(format!(
                "Deletion of group '{group}' failed: {}",
                describe(code)
            )),
        }
    }
}

impl Tool {
    fn delete_offsets(&mut self, group: &str, topics: &[String], out: Out) -> Result<()> {
        let args = ResetArgs {
            topics: topics.to_vec(),
            all_topics: false,
            target: Target::Earliest,
            execute: false,
            export: false,
        };
        let partitions = self.scope(group, &args)?;
        let req = offset_delete_request(group, &partitions);
        let ResponseKind::OffsetDelete(r) =
            self.call(ApiKey::OffsetDelete, 0, RequestKind::OffsetDelete(req))?
        else {
            return Err("unexpected OffsetDelete reply".into());
        };
        match r.error_code {
            0 => {}
            69 => return Err(format!("Group '{group}' does not exist.")),
            code => {
                return Err(format!(
                    "Deleting offsets of group '{group}' failed: {}",
                    describe(code)
                ))
            }
        }
        print_delete_statuses(&r, out)
    }
}

fn offset_delete_request(group: &str, partitions: &[(String, i32)]) -> OffsetDeleteRequest {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        by_topic.entry(t).or_default().push(*p);
    }
    let topics: Vec<offset_delete_request::OffsetDeleteRequestTopic> = by_topic
        .into_iter()
        .map(|(t, ps)| {
            let partitions = ps
                .into_iter()
                .map(|p| {
                    offset_delete_request::OffsetDeleteRequestPartition::default()
                        .with_partition_index(p)
                })
                .collect();
            offset_delete_request::OffsetDeleteRequestTopic::default()
                .with_name(TopicName(name(t)))
                .with_partitions(partitions)
        })
        .collect();
    let asked: usize = topics.iter().map(|t| t.partitions.len()).sum();
    assert_eq!(
        asked,
        partitions.len(),
        "every partition is in the request once"
    );
    OffsetDeleteRequest::default()
        .with_group_id(GroupId(name(group)))
        .with_topics(topics)
}

/// Kafka's --delete-offsets table; an error if any partition failed.
fn print_delete_statuses(r: &OffsetDeleteResponse, out: Out) -> Result<()> {
    line(out, &format!("{:<20} {:<10} STATUS", "TOPIC", "PARTITION"))?;
    let mut failed = false;
    for t in &r.topics {
        for p in &t.partitions {
            let status = match p.error_code {
                0 => "Successful".to_string(),
                86 => "Error: the group is active (it has members)".to_string(),
                code => format!("Error: {}", describe(code)),
            };
            failed |= p.error_code != 0;
            line(
                out,
                &format!("{:<20} {:<10} {status}", t.name.0, p.partition_index),
            )?;
        }
    }
    if failed {
        return Err("some offsets were not deleted".into());
    }
    Ok(())
}

const STATE_HEADER: &str = "GROUP                COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS";
const MEMBERS_HEADER: &str = "GROUP                CONSUMER-ID                                   HOST             CLIENT-ID                 #PARTITIONS";
const OFFSETS_HEADER: &str = "GROUP                TOPIC                PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG    CONSUMER-ID                                   HOST             CLIENT-ID";

fn line(out: Out, text: &str) -> Result<()> {
    writeln!(out, "{text}").map_err(|e| e.to_string())
}

/// --describe --members: each member and how many partitions it has.
fn describe_members(
    group: &str,
    g: &describe_groups_response::DescribedGroup,
    verbose: bool,
    out: Out,
) -> Result<()> {
    let owners = assignments(g);
    let header = match verbose {
        true => format!("{MEMBERS_HEADER}  ASSIGNMENT"),
        false => MEMBERS_HEADER.to_string(),
    };
    line(out, &header)?;
    for m in &g.members {
        let owned: Vec<&(String, i32)> = owners
            .iter()
            .filter(|(_, o)| o.0 == m.member_id.as_str())
            .map(|(tp, _)| tp)
            .collect();
        let mut row = format!(
            "{group:<20} {:<45} {:<16} {:<25} {:<12}",
            m.member_id,
            m.client_host,
            m.client_id,
            owned.len()
        );
        if verbose {
            row.push_str(&format!(" {}", kafka_assignment(&owned)));
        }
        line(out, row.trim_end())?;
    }
    Ok(())
}

/// Kafka's ASSIGNMENT column: `topic(0,1),other(3)`, or `-` for none.
fn kafka_assignment(owned: &[&(String, i32)]) -> String {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in owned {
        by_topic.entry(t.as_str()).or_default().push(*p);
    }
    if by_topic.is_empty() {
        return "-".into();
    }
    let topics: Vec<String> = by_topic
        .into_iter()
        .map(|(t, ps)| {
            let ps: Vec<String> = ps.iter().map(|p| p.to_string()).collect();
            format!("{t}({})", ps.join(","))
        })
        .collect();
    topics.join(",")
}

/// (topic, partition) -> (member id, host, client id), from the members' assignments.
fn assignments(
    g: &describe_groups_response::DescribedGroup,
) -> BTreeMap<(String, i32), (&str, &str, &str)> {
    let mut out = BTreeMap::new();
    for m in &g.members {
        let mut bytes = m.member_assignment.clone();
        if bytes.len() < 2 {
            continue;
        }
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        let _ = bytes::Buf::get_i16(&mut bytes);
        let Ok(a) = ConsumerProtocolAssignment::decode(&mut bytes, version) else {
            continue;
        };
        for tp in a.assigned_partitions {
            for p in tp.partitions {
                let owner = (
                    m.member_id.as_str(),
                    m.client_host.as_str(),
                    m.client_id.as_str(),
                );
                out.insert((tp.topic.0.to_string(), p), owner);
            }
        }
    }
    out
}

/// One partition of a reset plan.
struct Planned {
    topic: String,
    partition: i32,
    offset: i64,
    /// For time targets: the found record's timestamp, or why there is none.
    note: String,
}

impl Tool {
    fn reset(&mut self, group: &str, args: ResetArgs, out: Out) -> Result<()> {
        let state = self.describe_group(group)?.group_state.to_string();
        if args.execute && !matches!(state.as_str(), "Empty" | "Dead") {
            return Err(format!(
                "Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
            ));
        }
        let partitions = self.scope(group, &args)?;
        let plan = self.plan(group, &partitions, &args.target)?;
        if args.export {
            for p in &plan {
                writeln!(out, "{},{},{}", p.topic, p.partition, p.offset)
                    .map_err(|e| e.to_string())?;
            }
        } else {
            print_plan(group, &plan, out)?;
        }
        if args.execute {
            self.commit(group, &plan)?;
        }
        Ok(())
    }

    /// The partitions a reset covers: `--topic T[:0,2]`, or every committed topic.
    fn scope(&mut self, group: &str, args: &ResetArgs) -> Result<Vec<(String, i32)>> {
        if let Target::FromFile(path) = &args.target {
            return Ok(read_plan_file(path)?
                .into_iter()
                .map(|(t, p, _)| (t, p))
                .collect());
        }
        if args.all_topics {
            let committed = self.committed(group)?;
            return Ok(committed.keys().cloned().collect());
        }
        if args.topics.is_empty() {
            return Err("one of --topic, --all-topics or --from-file is required".into());
        }
        let mut out = Vec::new();
        for spec in &args.topics {
            match spec.split_once(':') {
                Some((t, ps)) => {
                    for p in ps.split(',') {
                        let p = p
                            .trim()
                            .parse()
                            .map_err(|_| format!("--topic {spec:?}: bad partition {p:?}"))?;
                        out.push((t.to_string(), p));
                    }
                }
                None => {
                    for p in self.partitions_of(spec)? {
                        out.push((spec.clone(), p));
                    }
                }
            }
        }
        Ok(out)
    }

    fn plan(
        &mut self,
        group: &str,
        partitions: &[(String, i32)],
        target: &Target,
    ) -> Result<Vec<Planned>> {
        let time = match target {
            Target::Datetime(raw) => Some(parse_time_flag("--to-datetime", raw)?),
            Target::Duration(raw) => Some(crate::time::now_ms() - parse_duration(raw)?),
            _ => None,
        };
        let committed = self.committed(group)?;
        let from_file: BTreeMap<(String, i32), i64> = match target {
            Target::FromFile(path) => read_plan_file(path)?
                .into_iter()
                .map(|(t, p, o)| ((t, p), o))
                .collect(),
            _ => BTreeMap::new(),
        };
        let mut plan = Vec::new();
        for (topic, p) in partitions {
            let earliest = self.list_offset(topic, *p, -2)?.0;
            let latest = self.list_offset(topic, *p, -1)?.0;
            let clamp = |o: i64| o.clamp(earliest, latest);
            let (offset, note) = match (target, time) {
                (_, Some(t)) => self.offset_for_time(topic, *p, t, latest)?,
                (Target::Earliest, _) => (earliest, String::new()),
                (Target::Latest, _) => (latest, String::new()),
                (Target::Offset(o), _) => (clamp(*o), String::new()),
                (Target::ShiftBy(n), _) => {
                    let current = committed
                        .get(&(topic.clone(), *p))
                        .copied()
                        .unwrap_or(latest);
                    (clamp(current.saturating_add(*n)), String::new())
                }
                (Target::FromFile(_), _) => (clamp(from_file[&(topic.clone(), *p)]), String::new()),
                (Target::Datetime(_) | Target::Duration(_), None) => {
                    unreachable!("time parsed above")
                }
            };
            assert!(
                (earliest..=latest).contains(&offset) || time.is_some(),
                "a reset lands inside the partition"
            );
            plan.push(Planned {
                topic: topic.clone(),
                partition: *p,
                offset,
                note,
            });
        }
        assert_eq!(
            plan.len(),
            partitions.len(),
            "one planned offset per partition"
        );
        Ok(plan)
    }

    /// offsetsForTimes; a partition with no record at or after `t` goes to its log end.
    fn offset_for_time(
        &mut self,
        topic: &str,
        p: i32,
        t: i64,
        latest: i64,
    ) -> Result<(i64, String)> {
        let (offset, ts) = self.list_offset(topic, p, t)?;
        if offset < 0 {
            return Ok((latest, "no record at or after the time: log end".into()));
        }
        let utc = chrono::FixedOffset::east_opt(0).expect("zero offset");
        Ok((
            offset,
            format!("record at {} ({})", format_time(ts, utc), gap(ts - t)),
        ))
    }

    fn commit(&mut self, group: &str, plan: &[Planned]) -> Result<()> {
        let mut topics: BTreeMap<&str, Vec<&Planned>> = BTreeMap::new();
        for p in plan {
            topics.entry(&p.topic).or_default().push(p);
        }
        let req = OffsetCommitRequest::default()
            .with_group_id(GroupId(name(group)))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(StrBytes::default())
            .with_topics(
                topics
                    .into_iter()
                    .map(|(t, ps)| {
                        offset_commit_request::OffsetCommitRequestTopic::default()
                    .with_name(TopicName(name(t)))
                    .with_partitions(ps.iter().map(|p| {
                        offset_commit_request::OffsetCommitRequestPartition::default()
                            .with_partition_index(p.partition)
                            .with_committed_offset(p.offset)
                    }).collect())
                    })
                    .collect(),
            );
        let ResponseKind::OffsetCommit(r) =
            self.call(ApiKey::OffsetCommit, 8, RequestKind::OffsetCommit(req))?
        else {
            return Err("unexpected OffsetCommit reply".into());
        };
        for t in r.topics {
            if let Some(p) = t.partitions.iter().find(|p| p.error_code != 0) {
                return Err(format!(
                    "committing {}-{}: {}",
                    t.name.0,
                    p.partition_index,
                    describe(p.error_code)
                ));
            }
        }
        Ok(())
    }
}

/// How far a found record is from the target, readable at a glance.
fn gap(ms: i64) -> String {
    let s = ms / 1000;
    let exact = match s {
        0 => format!("{ms} ms"),
        1..60 => format!("{:.3} s", ms as f64 / 1000.0),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    };
    format!("{exact} after the target")
}

fn print_plan(group: &str, plan: &[Planned], out: Out) -> Result<()> {
    let mut w = |line: String| writeln!(out, "{line}").map_err(|e| e.to_string());
    w(format!(
        "{:<20} {:<20} {:<10} {:<12} {}",
        "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "NOTE"
    ))?;
    for p in plan {
        w(format!(
            "{group:<20} {:<20} {:<10} {:<12} {}",
            p.topic, p.partition, p.offset, p.note
        ))?;
    }
    Ok(())
}

/// Kafka's `--export` CSV: `topic,partition,offset` per line.
fn read_plan_file(path: &std::path::Path) -> Result<Vec<(String, i32, i64)>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            match f[..] {
                [t, p, o] => Ok((
                    t.to_string(),
                    p.parse().map_err(|_| format!("bad partition in {l:?}"))?,
                    o.parse().map_err(|_| format!("bad offset in {l:?}"))?,
                )),
                _ => Err(format!(
                    "{}: {l:?} is not topic,partition,offset",
                    path.display()
                )),
            }
        })
        .collect()
}

/// An ISO-8601 duration such as PT1H30M, P1DT2H or PT45.5S, in milliseconds.
pub fn parse_duration(raw: &str) -> Result<i64> {
    let bad =
        || format!("--by-duration {raw:?} is not an ISO-8601 duration such as PT1H30M or P1DT2H");
    let s = raw.trim().strip_prefix('P').ok_or_else(bad)?;
    let (days, time) = match s.split_once('T') {
        Some((d, t)) => (d, t),
        None => (s, ""),
    };
    let mut ms = 0f64;
    let mut take = |part: &str, units: &[(char, f64)]| -> Result<()> {
        let mut num = String::new();
        for c in part.chars() {
            match units.iter().find(|(u, _)| *u == c) {
                Some((_, scale)) if !num.is_empty() => {
                    ms += num.parse::<f64>().map_err(|_| bad())? * scale;
                    num.clear();
                }
                _ if c.is_ascii_digit() || c == '.' => num.push(c),
                _ => return Err(bad()),
            }
        }
        if num.is_empty() {
            Ok(())
        } else {
            Err(bad())
        }
    };
    take(days, &[('D', 86_400_000.0)])?;
    take(time, &[('H', 3_600_000.0), ('M', 60_000.0), ('S', 1_000.0)])?;
    if s.is_empty() || s == "T" {
        return Err(bad());
    }
    assert!(ms >= 0.0, "a duration has no sign");
    Ok(ms as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_durations_as_kafka_takes_them() {
        assert_eq!(parse_duration("PT1H30M"), Ok(5_400_000));
        assert_eq!(parse_duration("P1DT2H"), Ok(93_600_000));
        assert_eq!(parse_duration("PT45.5S"), Ok(45_500));
        assert_eq!(parse_duration("P2D"), Ok(172_800_000));
        for bad in ["", "P", "PT", "1H", "PT1X", "PTH"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
