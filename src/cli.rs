//! The command line: every subcommand's flags (clap derive). Tool flags mirror Kafka's
//! tools and kcat; `main.rs` runs them.

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

/// The server a tool talks to.
#[derive(clap::Args)]
pub struct ServerAddr {
    /// Server address (Kafka's --bootstrap-server, kcat's -b).
    #[arg(
        long,
        short = 'b',
        visible_alias = "bootstrap-server",
        default_value = "127.0.0.1:7411"
    )]
    pub bootstrap: String,
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
    /// The Kafka listener to talk to (Kafka's --bootstrap-server; -b as every tool).
    #[arg(long, short = 'b', default_value = "127.0.0.1:9092")]
    pub bootstrap_server: String,
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
    /// With --describe: the members and how many partitions each has.
    #[arg(long)]
    pub members: bool,
    /// With --describe: the group's state, strategy and member count.
    #[arg(long)]
    pub state: bool,
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
        after_help = "Example: shardlog serve --data-dir /var/lib/shardlog --listen 0.0.0.0:7411 --config server.properties"
    )]
    Serve(ServeArgs),
    /// Create, list, describe, delete or alter topics; roll segments; run maintenance.
    #[command(after_help = "Examples:
  shardlog topics create --topic orders --partitions 8 --config retention.ms=86400000
  shardlog topics describe --topic orders
  shardlog topics alter --topic orders --config cleanup.policy=compact --delete-config retention.ms")]
    Topics(TopicsArgs),
    /// Kafka's kafka-delete-records: records below an offset are no longer served.
    #[command(
        after_help = "Example: shardlog delete-records --topic orders --partition 0 --offset 1200"
    )]
    DeleteRecords(DeleteRecordsArgs),
    /// Per partition: timestamp type, first/last/min/max, out-of-order, future and pre-2000
    /// timestamps. Example: shardlog timestamps --topic orders --deep --from-time 2024-03-09T02:00:00Z
    #[command(
        after_help = "Example: shardlog timestamps --topic orders --deep --from-time 2024-03-09T02:00:00Z --to-time 2024-03-09T02:30:00Z"
    )]
    Timestamps(TimestampsArgs),
    /// Sizes and offsets of every partition as JSON, like kafka-log-dirs --describe.
    #[command(after_help = "Example: shardlog log-dirs --topic-list orders,payments")]
    LogDirs {
        #[command(flatten)]
        server: ServerAddr,
        /// Comma-separated topics [default: all].
        #[arg(long, value_delimiter = ',')]
        topic_list: Option<Vec<String>>,
    },
    /// Produce one record per stdin line.
    #[command(
        after_help = "Example: printf '1709992800000|alice|paid\\n' | shardlog produce --topic orders --timestamp-separator '|' --key-separator '|' --acks all"
    )]
    Produce(ProduceArgs),
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
    Consume(ConsumeArgs),
    /// Offsets by time per partition, as Kafka's GetOffsetShell.
    #[command(
        after_help = "Example: shardlog get-offsets --topic orders --time 2024-03-09T14:05:00Z --show-timestamp"
    )]
    GetOffsets(GetOffsetsArgs),
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
    DumpLog(DumpLogArgs),
}

#[derive(clap::Args)]
pub struct TopicsArgs {
    pub action: tools::topics::TopicsAction,
    #[command(flatten)]
    pub server: ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: Option<String>,
    /// Number of partitions (create).
    #[arg(long, default_value_t = 1)]
    pub partitions: i32,
    /// roll: only this partition [default: all].
    #[arg(long)]
    pub partition: Option<i32>,
    /// Topic config as key=value (repeatable).
    #[arg(long = "config")]
    pub configs: Vec<String>,
    /// alter: return this config to its default (repeatable).
    #[arg(long = "delete-config")]
    pub delete_configs: Vec<String>,
}

#[derive(clap::Args)]
pub struct DeleteRecordsArgs {
    #[command(flatten)]
    pub server: ServerAddr,
    /// Topic name.
    #[arg(long, required_unless_present = "offset_json_file")]
    pub topic: Option<String>,
    /// Partition [default: all; produce: by key (murmur2), round-robin without one].
    #[arg(long, default_value_t = 0)]
    pub partition: i32,
    /// New log start offset (-1: the log end).
    #[arg(
        long,
        allow_hyphen_values = true,
        required_unless_present = "offset_json_file"
    )]
    pub offset: Option<i64>,
    /// Kafka's JSON: {"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}.
    #[arg(long, conflicts_with_all = ["topic", "offset"])]
    pub offset_json_file: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct TimestampsArgs {
    #[command(flatten)]
    pub server: ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: String,
    /// Only timestamps >= this (ms or ISO-8601; no zone means UTC).
    #[arg(long)]
    pub from_time: Option<String>,
    /// Only timestamps < this (ms or ISO-8601; no zone means UTC).
    #[arg(long)]
    pub to_time: Option<String>,
    /// Decode every record (default: one maxTimestamp per batch, from its header).
    #[arg(long)]
    pub deep: bool,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct ProduceArgs {
    #[command(flatten)]
    pub server: ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: String,
    /// Partition [default: all; produce: by key (murmur2), round-robin without one].
    #[arg(long)]
    pub partition: Option<i32>,
    /// 0, 1 or all.
    #[arg(long, default_value = "1")]
    pub acks: String,
    /// Split each line into key and value at this separator.
    #[arg(long)]
    pub key_separator: Option<String>,
    /// Each line starts with the record's CreateTime (epoch ms or ISO-8601) and this
    /// separator.
    #[arg(long)]
    pub timestamp_separator: Option<String>,
    /// Records per batch (a batch also ends at 1 MiB).
    #[arg(long, default_value_t = 1000)]
    pub batch_records: usize,
    /// kcat's -Z: send an empty value as null (a tombstone) and an empty key as no key.
    #[arg(short = 'Z', long)]
    pub null_empty: bool,
    /// kcat's -H name=value: a header on every record (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Compress batches: none, gzip, snappy, lz4 or zstd.
    #[arg(long, default_value = "none", value_parser = parse_codec)]
    pub compression_codec: shardlog::format::compression::Codec,
}

#[derive(clap::Args)]
pub struct ConsumeArgs {
    #[command(flatten)]
    pub server: ServerAddr,
    /// Topic name.
    #[arg(long)]
    pub topic: String,
    /// Partition [default: all; produce: by key (murmur2), round-robin without one].
    #[arg(long)]
    pub partition: Option<i32>,
    /// kcat's -o: N, -N (N before the end of each partition), s@TIME, beginning or
    /// earliest, end or latest; e@TIME (given as a second -o) ends at the first record
    /// with timestamp >= TIME, as --to-time TIME --stop-at-first.
    #[arg(
        long,
        short = 'o',
        default_value = "earliest",
        allow_hyphen_values = true
    )]
    pub offset: Vec<String>,
    /// Start at each partition's first record with timestamp >= this (ms or ISO-8601;
    /// no zone means UTC).
    #[arg(long)]
    pub from_time: Option<String>,
    /// Print only records with timestamp < this (ms or ISO-8601; no zone means UTC).
    #[arg(long)]
    pub to_time: Option<String>,
    /// Stop after printing this many records (0 prints none).
    #[arg(long)]
    pub max_records: Option<u64>,
    /// kcat tokens: %t %p %o %T (epoch ms) %I (ISO-8601 in --time-zone) %k %s %h %K %S
    /// (lengths, -1 null) %R \n \t.
    #[arg(long, default_value = "%s\\n")]
    pub format: String,
    /// Keep waiting for new records instead of exiting at the end of the log.
    #[arg(long)]
    pub follow: bool,
    /// kcat's -Z: print a null key or value as NULL (default: nothing).
    #[arg(short = 'Z', long)]
    pub print_null: bool,
    /// End each partition's window at its first record with timestamp >= --to-time
    /// (kcat's rule; late records after it are missed).
    #[arg(long)]
    pub stop_at_first: bool,
    /// Exact windows: wait for records up to this much later than --to-time.
    #[arg(long, default_value_t = 3_600_000)]
    pub max_lateness_ms: i64,
    /// Exact windows: a partition ends after this many records in a row at or past
    /// --to-time + --max-lateness-ms (an isolated future-dated record does not end it).
    #[arg(long, default_value_t = 1000)]
    pub settle_records: u64,
    /// Zone for %I: UTC, Z, +08, +0800 or +08:00.
    #[arg(long, default_value = "UTC", allow_hyphen_values = true)]
    pub time_zone: String,
    /// Kafka's console consumer --group: resume from the group's committed offsets and
    /// commit the position as records print and on exit (the group must have no
    /// members; Kafka clients join groups through the Kafka listener).
    #[arg(long)]
    pub group: Option<String>,
    /// How often the position is committed while following.
    #[arg(long, default_value_t = 5000)]
    pub commit_interval_ms: u64,
}

#[derive(clap::Args)]
pub struct GetOffsetsArgs {
    #[command(flatten)]
    pub server: ServerAddr,
    /// A topic name or regular expression [default: every topic].
    #[arg(long)]
    pub topic: Option<String>,
    /// Comma-separated partitions [default: all].
    #[arg(long, value_delimiter = ',')]
    pub partitions: Option<Vec<i32>>,
    /// Kafka's list of topic[:N | N-M | N- | -M], e.g. orders:0-3,logs.*
    #[arg(long)]
    pub topic_partitions: Option<String>,
    /// ms, ISO-8601 (no zone means UTC), earliest/-2, latest/-1 or max-timestamp/-3.
    #[arg(long, default_value = "latest", allow_hyphen_values = true)]
    pub time: String,
    /// Append the found record's timestamp.
    #[arg(long)]
    pub show_timestamp: bool,
}

#[derive(clap::Args)]
pub struct DumpLogArgs {
    /// Comma-separated list of files to dump.
    #[arg(long, value_delimiter = ',', required = true)]
    pub files: Vec<PathBuf>,
    /// Print every record, not only batch headers.
    #[arg(long)]
    pub deep_iteration: bool,
    /// Print record keys and payloads (implies --deep-iteration).
    #[arg(long)]
    pub print_data_log: bool,
    /// Only check that index files pass the sanity check (exit 1 if one fails).
    #[arg(long)]
    pub index_sanity_check: bool,
    /// Check index files against their .log without printing the entries.
    #[arg(long)]
    pub verify_index_only: bool,
    /// Print records' keys and payloads only, without offsets, times and sizes.
    #[arg(long)]
    pub skip_record_metadata: bool,
    /// Largest batch to read; a larger one is reported (exit 1).
    #[arg(long, default_value_t = tools::dump_log::DEFAULT_MAX_MESSAGE_SIZE)]
    pub max_message_size: usize,
}

#[derive(Subcommand)]
pub enum CrashCheckAction {
    /// Produce with acks=all, appending `partition offset crc32c` per acknowledged record.
    Produce {
        #[command(flatten)]
        server: ServerAddr,
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
        server: ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: String,
        /// File of acknowledged records, one `partition offset crc32c` per line.
        #[arg(long)]
        acks_file: PathBuf,
    },
}

pub fn parse_codec(name: &str) -> Result<shardlog::format::compression::Codec, String> {
    shardlog::format::compression::Codec::from_name(name)
        .ok_or_else(|| format!("{name:?} is not one of none, gzip, snappy, lz4, zstd"))
}
