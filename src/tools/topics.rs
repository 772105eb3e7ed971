//! `shardlog topics create|list|describe|delete|alter|roll|maintain|restore|rebuild-manifest`:
//! kafka-topics and
//! kafka-configs in one tool.

use std::io::Write;

use super::replica_view::{self, Filters, ReplicaView};
use super::topic_changes;
use crate::client::Client;
use crate::protocol::{ErrorCode, TopicLogInfo, TopicMetadata};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TopicsAction {
    Create,
    List,
    Describe,
    Delete,
    /// Set (--config k=v) or reset (--delete-config k) topic configs, live; grow the
    /// topic to --partitions N (never shrink).
    Alter,
    /// Roll the active segment (of --partition, or of every partition).
    Roll,
    /// Run retention and a cleaning pass now.
    Maintain,
    /// Recreate a tiered topic from the object store (a node that lost it): every remote
    /// segment, its configs, its log start and end.
    Restore,
    /// Rebuild a tiered partition's manifest lost from the bucket (of --partition, or of
    /// every partition that lost one) from the segment objects there, each checked batch
    /// by batch; uploads and remote retention then resume.
    RebuildManifest,
    /// Kafka's kafka-reassign-partitions (`--reassign generate|execute|verify|cancel`,
    /// with its JSON files).
    Reassign,
}

#[derive(clap::Args, Debug, Clone)]
pub struct TopicsArgs {
    pub action: TopicsAction,
    #[command(flatten)]
    pub server: super::ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: Option<String>,
    /// Number of partitions (create: default 1; alter: grow to this many).
    #[arg(long)]
    pub partitions: Option<i32>,
    /// create, on a cluster: replicas of each partition (default: the cluster's
    /// default.replication.factor).
    #[arg(long)]
    pub replication_factor: Option<i16>,
    /// roll: only this partition [default: all].
    #[arg(long)]
    pub partition: Option<i32>,
    /// Topic config as key=value (repeatable).
    #[arg(long = "config")]
    pub configs: Vec<String>,
    /// alter: return this config to its default (repeatable).
    #[arg(long = "delete-config")]
    pub delete_configs: Vec<String>,
    /// describe: only partitions with fewer in-sync replicas than replicas.
    #[arg(long)]
    pub under_replicated_partitions: bool,
    /// describe: only partitions with fewer in-sync replicas than min.insync.replicas.
    #[arg(long)]
    pub under_min_isr_partitions: bool,
    /// describe: only partitions without a leader.
    #[arg(long)]
    pub unavailable_partitions: bool,
    /// reassign: what to do with the plan.
    #[arg(long, value_enum)]
    pub reassign: Option<super::reassign::ReassignMode>,
    /// reassign execute|verify|cancel: Kafka's plan file
    /// (`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}`).
    #[arg(long)]
    pub reassignment_json_file: Option<std::path::PathBuf>,
    /// reassign generate: the topics to move (`{"version":1,"topics":[{"topic":"t"}]}`).
    #[arg(long)]
    pub topics_to_move_json_file: Option<std::path::PathBuf>,
    /// reassign generate: the brokers to move them onto (`1,2,3`; Kafka's --broker-list).
    #[arg(long)]
    pub brokers: Option<String>,
    /// reassign execute: bytes/s the moves may copy (Kafka's --throttle), on the brokers of
    /// each move; `--verify` removes it once every move is done.
    #[arg(long)]
    pub throttle: Option<u64>,
}

fn parse_configs(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("--config {kv:?} must be key=value"))
        })
        .collect()
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

pub async fn run(args: TopicsArgs, out: &mut dyn Write) -> Result<(), String> {
    if args.action == TopicsAction::Reassign {
        let asked = super::reassign::ReassignArgs {
            mode: args.reassign,
            server: &args.server,
            plan: args.reassignment_json_file.as_deref(),
            topics_to_move: args.topics_to_move_json_file.as_deref(),
            brokers: args.brokers.as_deref(),
            throttle: args.throttle,
        };
        return super::reassign::run(&asked, out);
    }
    let mut client = super::connect(&args.server).await?;
    let need_topic = || {
        args.topic
            .clone()
            .ok_or_else(|| "--topic is required for this action".to_string())
    };
    let failed = |e: crate::client::ClientError| e.to_string();
    match args.action {
        TopicsAction::Create => {
            let topic = need_topic()?;
            let configs = parse_configs(&args.configs)?;
            create(&mut client, &args, &topic, configs).await?;
            writeln!(out, "Created topic {topic}.").map_err(io)?;
        }
        TopicsAction::Restore => {
            let topic = need_topic()?;
            let configs = vec![("remote.recovery".to_string(), "true".to_string())];
            create(&mut client, &args, &topic, configs).await?;
            writeln!(out, "Restored topic {topic} from the object store.").map_err(io)?;
        }
        TopicsAction::Delete => {
            let topic = need_topic()?;
            match client.delete_topic(&topic).await {
                Err(e) if on_kafka_api(&e) => topic_changes::delete(&mut kafka(&args)?, &topic)?,
                done => done.map_err(failed)?,
            }
            writeln!(out, "Deleted topic {topic}.").map_err(io)?;
        }
        TopicsAction::List => {
            let md = client.metadata(None).await.map_err(failed)?;
            for t in md.topics {
                writeln!(out, "{}", t.name).map_err(io)?;
            }
        }
        TopicsAction::Reassign => unreachable!("answered over the Kafka listener above"),
        TopicsAction::Describe => describe(&mut client, &args, out).await?,
        TopicsAction::Alter => alter(&mut client, &args, need_topic()?, out).await?,
        TopicsAction::Roll => {
            let topic = need_topic()?;
            let partition = args.partition.unwrap_or(-1);
            client
                .roll_segments(&topic, partition)
                .await
                .map_err(failed)?;
            writeln!(out, "Rolled {topic} (partition {partition}; -1 = all).").map_err(io)?;
        }
        TopicsAction::Maintain => maintain(&mut client, need_topic()?, out).await?,
        TopicsAction::RebuildManifest => {
            let partition = args.partition.unwrap_or(-1);
            rebuild_manifest(&mut client, need_topic()?, partition, out).await?
        }
    }
    Ok(())
}

/// Retention and cleaning now; on a tiered topic what local retention deleted are local
/// copies (the bucket keeps serving them within the topic's retention).
async fn maintain(client: &mut Client, topic: String, out: &mut dyn Write) -> Result<(), String> {
    let (segments, bytes, records) = client
        .run_log_maintenance(&topic)
        .await
        .map_err(|e| e.to_string())?;
    let meta = super::topic_metadata(client, &topic).await?;
    let tiered = meta
        .configs
        .iter()
        .any(|(k, v)| k == "remote.storage.enable" && v == "true");
    let what = match tiered {
        true => "local segment copies (the bucket keeps serving what it holds within retention.ms and retention.bytes)",
        false => "segments",
    };
    writeln!(
        out,
        "Topic {topic}: retention deleted {segments} {what} ({bytes} bytes); cleaning removed {records} records."
    )
    .map_err(io)
}

/// Each partition's outcome; fails when any partition asked for by number could not be
/// rebuilt (with every partition, those whose manifest is there are only reported).
async fn rebuild_manifest(
    client: &mut Client,
    topic: String,
    partition: i32,
    out: &mut dyn Write,
) -> Result<(), String> {
    let rebuilt = client
        .rebuild_remote_manifest(&topic, partition)
        .await
        .map_err(|e| e.to_string())?;
    let mut failed = 0;
    for r in &rebuilt {
        let p = r.partition;
        if r.error_code != ErrorCode::None {
            writeln!(out, "{topic}-{p}: not rebuilt: {}", r.error_message).map_err(io)?;
            failed += 1;
            continue;
        }
        let (n, start, next) = (r.segments, r.log_start_offset, r.next_offset);
        writeln!(
            out,
            "{topic}-{p}: manifest rebuilt: {n} segments, offsets {start}..{next}"
        )
        .map_err(io)?;
        for note in &r.notes {
            writeln!(out, "  note: {note}").map_err(io)?;
        }
    }
    match (partition, failed) {
        (-1, f) if f < rebuilt.len() || rebuilt.is_empty() => Ok(()),
        (_, 0) => Ok(()),
        _ => Err(format!(
            "{failed} of {} partitions not rebuilt",
            rebuilt.len()
        )),
    }
}

/// kafka-topics --alter --partitions and kafka-configs --alter in one: the topic grows
/// first, then its configs change.
/// Whether the server is a cluster node, which takes topic changes on the Kafka API only.
fn on_kafka_api(e: &crate::client::ClientError) -> bool {
    use crate::client::ClientError;
    use crate::protocol::ErrorCode;
    matches!(e, ClientError::Server { code, .. } if *code == ErrorCode::TopicChangeOnKafkaApi)
}

/// A Kafka client of the server: its Kafka listener, under the same security.
fn kafka(args: &TopicsArgs) -> Result<crate::kafka::blocking_client::BlockingClient, String> {
    let server = &args.server;
    super::probe::kafka_client_of(&server.bootstrap, &server.client, server.timeout_ms)
}

/// CreateTopic on the native API; on a cluster, CreateTopics on the Kafka API.
async fn create(
    client: &mut Client,
    args: &TopicsArgs,
    topic: &str,
    configs: Vec<(String, String)>,
) -> Result<(), String> {
    let partitions = args.partitions.unwrap_or(1);
    // A factor is the Kafka API's to judge (a single node refuses more than one replica).
    if let Some(factor) = args.replication_factor {
        return topic_changes::create(&mut kafka(args)?, topic, (partitions, factor), &configs);
    }
    match client
        .create_topic(topic, partitions, configs.clone())
        .await
    {
        Err(e) if on_kafka_api(&e) => {
            let factor = topic_changes::DEFAULT_FACTOR;
            topic_changes::create(&mut kafka(args)?, topic, (partitions, factor), &configs)
        }
        done => done.map_err(|e| e.to_string()),
    }
}

async fn alter(
    client: &mut Client,
    args: &TopicsArgs,
    topic: String,
    out: &mut dyn Write,
) -> Result<(), String> {
    let failed = |e: crate::client::ClientError| e.to_string();
    let set = parse_configs(&args.configs)?;
    let configs = !set.is_empty() || !args.delete_configs.is_empty();
    if !configs && args.partitions.is_none() {
        return Err("alter needs --partitions N, --config k=v or --delete-config k".into());
    }
    if let Some(count) = args.partitions {
        match client.create_partitions(&topic, count).await {
            Err(e) if on_kafka_api(&e) => topic_changes::grow(&mut kafka(args)?, &topic, count)?,
            done => done.map_err(failed)?,
        }
        writeln!(out, "Topic {topic} now has {count} partitions.").map_err(io)?;
    }
    if configs {
        let delete = args.delete_configs.clone();
        match client
            .alter_configs(&topic, set.clone(), delete.clone())
            .await
        {
            Err(e) if on_kafka_api(&e) => {
                topic_changes::alter_configs(&mut kafka(args)?, &topic, &set, &delete)?
            }
            done => done.map_err(failed)?,
        }
        writeln!(out, "Completed updating config for topic {topic}.").map_err(io)?;
    }
    Ok(())
}

/// kafka-topics --describe plus kafka-configs' view: overrides apart from defaults, and per
/// partition its leader, replicas and ISR (from the Kafka listener's Metadata), log start
/// and end offsets, size, segments and owner shard. With kafka-topics' filters, only the
/// partitions they name, in kafka-topics' lines.
async fn describe(
    client: &mut Client,
    args: &TopicsArgs,
    out: &mut dyn Write,
) -> Result<(), String> {
    let names = args.topic.clone().map(|t| vec![t]);
    let md = client
        .metadata(names.clone())
        .await
        .map_err(|e| e.to_string())?;
    let logs = client
        .describe_logs(names.clone())
        .await
        .map_err(|e| e.to_string())?;
    let filters = Filters {
        under_replicated: args.under_replicated_partitions,
        under_min_isr: args.under_min_isr_partitions,
        unavailable: args.unavailable_partitions,
    };
    let placement = placement(&args.server, names.as_deref(), filters)?;
    for (t, log) in md.topics.iter().zip(&logs.topics) {
        if t.error_code != ErrorCode::None || log.error_code != ErrorCode::None {
            return Err(format!("topic {:?} does not exist", t.name));
        }
        if filters.any() {
            filtered(t, &placement, filters, out).map_err(io)?;
            continue;
        }
        describe_topic(t, log, out).map_err(io)?;
        for p in &log.partitions {
            let port = md.shard_port(p.owner_shard).unwrap_or(-1);
            write!(out, "\tTopic: {}\tPartition: {}", t.name, p.partition).map_err(io)?;
            if let Some(r) = placement.partitions.get(&(t.name.clone(), p.partition)) {
                write!(out, "\t{}", r.columns()).map_err(io)?;
            }
            write!(
                out,
                "\tOwnerShard: {}\tShardPort: {port}\tLogStartOffset: {}\tLogEndOffset: {}\tSize: {}\tSegments: {}",
                p.owner_shard, p.log_start_offset, p.log_end_offset, p.size_bytes, p.segments
            )
            .map_err(io)?;
            let r = &p.remote;
            if r.local_log_start_offset >= 0 {
                write!(
                    out,
                    "\tLocalLogStartOffset: {}\tRemoteLogStartOffset: {}\tRemoteSize: {}\tRemoteSegments: {}\tUploadLagBytes: {}",
                    r.local_log_start_offset, r.remote_log_start_offset, r.remote_size_bytes, r.remote_segments, r.upload_lag_bytes
                )
                .map_err(io)?;
            }
            writeln!(out).map_err(io)?;
        }
    }
    Ok(())
}

/// Where the partitions live, from the server's Kafka listener. Without filters it is
/// best effort (a server without a Kafka listener is described without it).
fn placement(
    server: &super::ServerAddr,
    topics: Option<&[String]>,
    filters: Filters,
) -> Result<ReplicaView, String> {
    let read = super::probe::kafka_client_of(&server.bootstrap, &server.client, server.timeout_ms)
        .and_then(|mut kafka| replica_view::read(&mut kafka, topics));
    match read {
        Ok(view) => Ok(view),
        Err(e) if filters.any() => Err(format!("the partitions' replicas: {e}")),
        Err(e) => {
            eprintln!("note: no leaders, replicas or ISRs shown: {e}");
            Ok(ReplicaView::default())
        }
    }
}

/// The partitions of `t` the filters keep, as kafka-topics prints them.
fn filtered(
    t: &TopicMetadata,
    placement: &ReplicaView,
    filters: Filters,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let min_insync = t.configs.iter().find(|(k, _)| k == "min.insync.replicas");
    let min_insync = min_insync.and_then(|(_, v)| v.parse().ok()).unwrap_or(1);
    let of_topic = placement
        .partitions
        .iter()
        .filter(|((name, _), _)| *name == t.name);
    for ((_, p), r) in of_topic.filter(|(_, r)| filters.keep(r, min_insync)) {
        writeln!(out, "\tTopic: {}\tPartition: {p}\t{}", t.name, r.columns())?;
    }
    Ok(())
}

fn describe_topic(
    t: &TopicMetadata,
    log: &TopicLogInfo,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (overrides, defaults): (Vec<_>, Vec<_>) = t
        .configs
        .iter()
        .partition(|(k, _)| log.overrides.contains(k));
    let join = |pairs: Vec<&(String, String)>| {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    writeln!(
        out,
        "Topic: {}\tPartitionCount: {}\tConfigs: {}",
        t.name,
        t.partitions.len(),
        join(overrides)
    )?;
    writeln!(out, "\tDefaults: {}", join(defaults))
}
