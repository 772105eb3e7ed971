//! The command line: the subcommands (clap derive). Each tool declares its own flags on its
//! argument struct (`tools::*`), mirroring Kafka's tools and kcat; `main.rs` runs them.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use shardlog::tools;

#[derive(Parser)]
#[command(
    name = "shardlog",
    version,
    about = "Thread-per-core log storage engine in Kafka's on-disk format"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Tools: give up on a server that does not accept or answer within this many ms.
    #[arg(long, global = true, default_value_t = 30_000)]
    pub timeout_ms: u64,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Data directory [default: ./data].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Address every shard listens on [default: 127.0.0.1:7411].
    #[arg(long)]
    pub listen: Option<String>,
    /// Address of the Kafka-protocol listener, or `off` [default: 127.0.0.1:9092].
    #[arg(long)]
    pub kafka_listen: Option<String>,
    /// Number of shards [default: one per available CPU].
    #[arg(long)]
    pub shards: Option<usize>,
    /// key=value file with server settings (flags override it).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ConsumerGroupsArgs {
    /// The server to talk to, either listener: the same flags and default as every tool
    /// (-b, --bootstrap-server, --bootstrap; 127.0.0.1:7411) and its security.
    #[command(flatten)]
    pub server: tools::ServerAddr,
    #[arg(long)]
    pub list: bool,
    #[arg(long)]
    pub describe: bool,
    #[arg(long)]
    pub delete: bool,
    #[arg(long)]
    pub reset_offsets: bool,
    /// Delete the committed offsets of --topic T[:0,2] (the group must be inactive).
    #[arg(long)]
    pub delete_offsets: bool,
    #[arg(long)]
    pub group: Option<String>,
    /// With --describe or --delete: every group instead of one --group.
    #[arg(long, conflicts_with = "group")]
    pub all_groups: bool,
    /// With --describe: the members and how many partitions each has.
    #[arg(long)]
    pub members: bool,
    /// With --describe: the group's state, strategy and member count. With --list: a STATE
    /// column, and only groups in these states if given (comma-separated, e.g. Stable,Empty).
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    pub state: Option<String>,
    /// With --describe: each partition's offsets and lag (the default view).
    #[arg(long, conflicts_with_all = ["members", "state"])]
    pub offsets: bool,
    /// With --describe --members: each member's partitions too.
    #[arg(long, requires = "members")]
    pub verbose: bool,
    /// Reset scope: TOPIC or TOPIC:0,2 (repeatable).
    #[arg(long)]
    pub topic: Vec<String>,
    /// Reset scope: every topic the group has committed offsets for.
    #[arg(long)]
    pub all_topics: bool,
    #[arg(long)]
    pub to_datetime: Option<String>,
    /// An ISO-8601 duration before now, such as PT1H30M.
    #[arg(long)]
    pub by_duration: Option<String>,
    #[arg(long)]
    pub to_earliest: bool,
    #[arg(long)]
    pub to_latest: bool,
    /// Reset to the committed offsets (the log end where none is committed): Kafka's
    /// --to-current, to export a plan of where the group is.
    #[arg(long)]
    pub to_current: bool,
    #[arg(long)]
    pub to_offset: Option<i64>,
    #[arg(long, allow_hyphen_values = true)]
    pub shift_by: Option<i64>,
    /// A CSV of topic,partition,offset (what --export writes).
    #[arg(long)]
    pub from_file: Option<PathBuf>,
    /// Print the plan only (the default).
    #[arg(long)]
    pub dry_run: bool,
    /// Commit the plan (the group must be inactive).
    #[arg(long)]
    pub execute: bool,
    /// Print the plan as CSV for --from-file.
    #[arg(long)]
    pub export: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the server: one pinned shard per CPU, listening on --listen (all shards) and on
    /// port+1+i (shard i).
    #[command(
        after_help = "Example: shardlog serve --data-dir /var/lib/shardlog --listen 127.0.0.1:7411 --config server.properties"
    )]
    Serve(ServeArgs),
    /// Create, list, describe, delete or alter topics; roll segments; run maintenance.
    #[command(after_help = "Examples:
  shardlog topics create --topic orders --partitions 8 --config retention.ms=86400000
  shardlog topics describe --topic orders
  shardlog topics describe --under-replicated-partitions -b 127.0.0.1:9092
  shardlog topics alter --topic orders --config cleanup.policy=compact --delete-config retention.ms")]
    Topics(tools::topics::TopicsArgs),
    /// The cluster as any node's Kafka listener tells it: the controller, and each live
    /// node with how many partitions it leads and holds replicas of; or every replica
    /// moved off one broker (decommission).
    #[command(after_help = "Examples:
  shardlog cluster describe -b 127.0.0.1:9092
  shardlog cluster decommission --broker 3 -b 127.0.0.1:9092")]
    Cluster(tools::cluster::ClusterArgs),
    /// Kafka's kafka-delete-records: records below an offset are no longer served.
    #[command(
        after_help = "Example: shardlog delete-records --topic orders --partition 0 --offset 1200"
    )]
    DeleteRecords(tools::delete_records::DeleteRecordsArgs),
    /// Per partition: timestamp type, first/last/min/max, out-of-order, future and pre-2000
    /// timestamps. Example: shardlog timestamps --topic orders --deep --from-time 2024-03-09T02:00:00Z
    #[command(
        after_help = "Example: shardlog timestamps --topic orders --deep --from-time 2024-03-09T02:00:00Z --to-time 2024-03-09T02:30:00Z"
    )]
    Timestamps(tools::timestamps::TimestampsArgs),
    /// Sizes and offsets of every partition as JSON, like kafka-log-dirs --describe.
    #[command(after_help = "Example: shardlog log-dirs --topic-list orders,payments")]
    LogDirs {
        #[command(flatten)]
        server: tools::ServerAddr,
        /// Comma-separated topics [default: all].
        #[arg(long, value_delimiter = ',')]
        topic_list: Option<Vec<String>>,
        /// On a cluster: comma-separated broker ids [default: every live broker] (Kafka's
        /// kafka-log-dirs --broker-list; here --broker-list is the bootstrap's alias, as in
        /// Kafka's console tools).
        #[arg(long, value_delimiter = ',')]
        brokers: Option<Vec<i32>>,
    },
    /// Produce one record per stdin line.
    #[command(
        after_help = "Example: printf '1709992800000|alice|paid\\n' | shardlog produce --topic orders --timestamp-separator '|' --key-separator '|' --acks all"
    )]
    Produce(tools::produce::ProduceArgs),
    /// Kafka's kafka-consumer-groups: list, describe (lag), delete, reset offsets (to a
    /// datetime, by a duration, earliest, latest, an offset, a shift, a file). Speaks to the
    /// Kafka listener, as Kafka's tool does.
    #[command(after_help = "Examples:
  shardlog consumer-groups --list
  shardlog consumer-groups --describe --group billing
  shardlog consumer-groups --reset-offsets --group billing --topic orders --to-datetime 2026-11-29T14:00:00.000 --dry-run
  shardlog consumer-groups --reset-offsets --group billing --topic orders:0,2 --by-duration PT1H30M --execute
--to-datetime takes yyyy-MM-ddTHH:mm:ss[.SSS] with an optional zone (Z, +08, +0800, +08:00);
no zone means UTC. --dry-run is the default: the plan is printed and nothing changes.")]
    ConsumerGroups(Box<ConsumerGroupsArgs>),
    /// Print records (kcat format tokens), optionally only a time window.
    #[command(
        after_help = "Example: shardlog consume --topic orders --from-time 2024-03-09T02:00:00+08:00 --to-time 2024-03-09T02:30:00+08:00 --format '%p/%o %I %k=%s\\n'"
    )]
    Consume(tools::consume::ConsumeArgs),
    /// Offsets by time per partition, as Kafka's GetOffsetShell.
    #[command(
        after_help = "Example: shardlog get-offsets --topic orders --time 2024-03-09T14:05:00Z --show-timestamp"
    )]
    GetOffsets(tools::get_offsets::GetOffsetsArgs),
    /// Halves of the kill -9 test (scripts/crash-loop.sh).
    #[command(hide = true)]
    CrashCheck {
        #[command(subcommand)]
        action: CrashCheckAction,
    },
    /// Print .log, .index and .timeindex files as kafka-dump-log does (offline).
    #[command(
        after_help = "Example: shardlog dump-log --files data/orders-0/00000000000000000000.log --print-data-log"
    )]
    DumpLog(tools::dump_log::DumpOptions),
    /// Kafka's ACLs, with kafka-acls' flags: on a running server (--bootstrap-server, its
    /// Kafka listener) or a stopped server's data directory (--data-dir).
    #[command(
        after_help = "Example: shardlog acls --bootstrap-server 127.0.0.1:9092 --add --allow-principal User:alice --operation Read --topic orders --group billing"
    )]
    Acls(tools::acls::AclsArgs),
    /// SASL/SCRAM users of a data directory, set offline before the server starts.
    #[command(
        after_help = "Example: echo \"$PASSWORD\" | shardlog users set --data-dir /var/lib/shardlog --user admin --mechanism SCRAM-SHA-256 --password-stdin"
    )]
    Users(tools::users::UsersArgs),
}

#[derive(Subcommand)]
pub enum CrashCheckAction {
    /// Produce with acks=all, appending `partition offset crc32c` per acknowledged record.
    Produce {
        #[command(flatten)]
        server: tools::ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: String,
        /// File of acknowledged records, one `partition offset crc32c` per line.
        #[arg(long)]
        acks_file: PathBuf,
        /// Producer connections.
        #[arg(long, default_value_t = 4)]
        connections: usize,
        /// Stop producing after this many ms.
        #[arg(long, default_value_t = 600_000)]
        duration_ms: u64,
        /// Seed of the record contents.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Check every acknowledged record against the log.
    Verify {
        #[command(flatten)]
        server: tools::ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: String,
        /// File of acknowledged records, one `partition offset crc32c` per line.
        #[arg(long)]
        acks_file: PathBuf,
    },
}
