//! The `shardlog` binary: the server (`serve`) and the tools, as clap subcommands. Tool
//! flags mirror Kafka's tools and kcat.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::{Parser, Subcommand};
use shardlog::server::{self, ServerConfig};
use shardlog::tools;

#[derive(Parser)]
#[command(
    name = "shardlog",
    version,
    about = "Thread-per-core log storage engine in Kafka's on-disk format"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Tools: give up on a server that does not accept or answer within this many ms.
    #[arg(long, global = true, default_value_t = 30_000)]
    timeout_ms: u64,
}

/// The server a tool talks to.
#[derive(clap::Args)]
struct ServerAddr {
    /// Server address (Kafka's --bootstrap-server, kcat's -b).
    #[arg(
        long,
        short = 'b',
        visible_alias = "bootstrap-server",
        default_value = "127.0.0.1:7411"
    )]
    bootstrap: String,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Data directory [default: ./data].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address every shard listens on [default: 127.0.0.1:7411].
    #[arg(long)]
    listen: Option<String>,
    /// Address of the Kafka-protocol listener, or `off` [default: 127.0.0.1:9092].
    #[arg(long)]
    kafka_listen: Option<String>,
    /// Number of shards [default: one per available CPU].
    #[arg(long)]
    shards: Option<usize>,
    /// key=value file with server settings (flags override it).
    #[arg(long)]
    config: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ConsumerGroupsArgs {
    /// The Kafka listener to talk to.
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap_server: String,
    #[arg(long)]
    list: bool,
    #[arg(long)]
    describe: bool,
    #[arg(long)]
    delete: bool,
    #[arg(long)]
    reset_offsets: bool,
    /// Delete the committed offsets of --topic T[:0,2] (the group must be inactive).
    #[arg(long)]
    delete_offsets: bool,
    #[arg(long)]
    group: Option<String>,
    /// With --describe: the members and how many partitions each has.
    #[arg(long)]
    members: bool,
    /// With --describe: the group's state, strategy and member count.
    #[arg(long)]
    state: bool,
    /// Reset scope: TOPIC or TOPIC:0,2 (repeatable).
    #[arg(long)]
    topic: Vec<String>,
    /// Reset scope: every topic the group has committed offsets for.
    #[arg(long)]
    all_topics: bool,
    #[arg(long)]
    to_datetime: Option<String>,
    /// An ISO-8601 duration before now, such as PT1H30M.
    #[arg(long)]
    by_duration: Option<String>,
    #[arg(long)]
    to_earliest: bool,
    #[arg(long)]
    to_latest: bool,
    #[arg(long)]
    to_offset: Option<i64>,
    #[arg(long, allow_hyphen_values = true)]
    shift_by: Option<i64>,
    /// A CSV of topic,partition,offset (what --export writes).
    #[arg(long)]
    from_file: Option<PathBuf>,
    /// Print the plan only (the default).
    #[arg(long)]
    dry_run: bool,
    /// Commit the plan (the group must be inactive).
    #[arg(long)]
    execute: bool,
    /// Print the plan as CSV for --from-file.
    #[arg(long)]
    export: bool,
}

fn consumer_groups(a: ConsumerGroupsArgs) -> Result<(), String> {
    use shardlog::tools::consumer_groups::{run, Action, ResetArgs, Target};
    let chosen = [
        a.list,
        a.describe,
        a.delete,
        a.reset_offsets,
        a.delete_offsets,
    ];
    if chosen.iter().filter(|x| **x).count() != 1 {
        return Err(
            "exactly one of --list, --describe, --delete, --reset-offsets, --delete-offsets is needed"
                .into(),
        );
    }
    if a.execute && a.dry_run {
        return Err("--execute and --dry-run exclude each other".into());
    }
    let action = if a.list {
        Action::List
    } else if a.describe {
        Action::Describe {
            members: a.members,
            state: a.state,
        }
    } else if a.delete {
        Action::Delete
    } else if a.delete_offsets {
        Action::DeleteOffsets { topics: a.topic }
    } else {
        let targets = [
            a.to_datetime.clone().map(Target::Datetime),
            a.by_duration.clone().map(Target::Duration),
            a.to_earliest.then_some(Target::Earliest),
            a.to_latest.then_some(Target::Latest),
            a.to_offset.map(Target::Offset),
            a.shift_by.map(Target::ShiftBy),
            a.from_file.clone().map(Target::FromFile),
        ];
        let mut targets = targets.into_iter().flatten();
        let target = targets.next().ok_or("--reset-offsets needs one of --to-datetime, --by-duration, --to-earliest, --to-latest, --to-offset, --shift-by, --from-file")?;
        if targets.next().is_some() {
            return Err("give only one reset target".into());
        }
        Action::Reset(ResetArgs {
            topics: a.topic,
            all_topics: a.all_topics,
            target,
            execute: a.execute,
            export: a.export,
        })
    };
    run(
        &a.bootstrap_server,
        a.group,
        action,
        &mut std::io::stdout().lock(),
    )
}

#[derive(Subcommand)]
enum Command {
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
    Topics {
        action: tools::topics::TopicsAction,
        #[command(flatten)]
        server: ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: Option<String>,
        /// Number of partitions (create).
        #[arg(long, default_value_t = 1)]
        partitions: i32,
        /// roll: only this partition [default: all].
        #[arg(long)]
        partition: Option<i32>,
        /// Topic config as key=value (repeatable).
        #[arg(long = "config")]
        configs: Vec<String>,
        /// alter: return this config to its default (repeatable).
        #[arg(long = "delete-config")]
        delete_configs: Vec<String>,
    },
    /// Kafka's kafka-delete-records: records below an offset are no longer served.
    #[command(
        after_help = "Example: shardlog delete-records --topic orders --partition 0 --offset 1200"
    )]
    DeleteRecords {
        #[command(flatten)]
        server: ServerAddr,
        /// Topic name.
        #[arg(long, required_unless_present = "offset_json_file")]
        topic: Option<String>,
        /// Partition [default: all; produce: by key (murmur2), round-robin without one].
        #[arg(long, default_value_t = 0)]
        partition: i32,
        /// New log start offset (-1: the log end).
        #[arg(
            long,
            allow_hyphen_values = true,
            required_unless_present = "offset_json_file"
        )]
        offset: Option<i64>,
        /// Kafka's JSON: {"partitions":[{"topic":"t","partition":0,"offset":3}],"version":1}.
        #[arg(long, conflicts_with_all = ["topic", "offset"])]
        offset_json_file: Option<PathBuf>,
    },
    /// Per partition: timestamp type, first/last/min/max, out-of-order, future and pre-2000
    /// timestamps. Example: shardlog timestamps --topic orders --deep --from-time 2024-03-09T02:00:00Z
    #[command(
        after_help = "Example: shardlog timestamps --topic orders --deep --from-time 2024-03-09T02:00:00Z --to-time 2024-03-09T02:30:00Z"
    )]
    Timestamps {
        #[command(flatten)]
        server: ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: String,
        /// Only timestamps >= this (ms or ISO-8601; no zone means UTC).
        #[arg(long)]
        from_time: Option<String>,
        /// Only timestamps < this (ms or ISO-8601; no zone means UTC).
        #[arg(long)]
        to_time: Option<String>,
        /// Decode every record (default: one maxTimestamp per batch, from its header).
        #[arg(long)]
        deep: bool,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
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
    Produce {
        #[command(flatten)]
        server: ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: String,
        /// Partition [default: all; produce: by key (murmur2), round-robin without one].
        #[arg(long)]
        partition: Option<i32>,
        /// 0, 1 or all.
        #[arg(long, default_value = "1")]
        acks: String,
        /// Split each line into key and value at this separator.
        #[arg(long)]
        key_separator: Option<String>,
        /// Each line starts with the record's CreateTime (epoch ms or ISO-8601) and this
        /// separator.
        #[arg(long)]
        timestamp_separator: Option<String>,
        /// Records per batch (a batch also ends at 1 MiB).
        #[arg(long, default_value_t = 1000)]
        batch_records: usize,
        /// kcat's -Z: send an empty value as null (a tombstone) and an empty key as no key.
        #[arg(short = 'Z', long)]
        null_empty: bool,
        /// kcat's -H name=value: a header on every record (repeatable).
        #[arg(short = 'H', long = "header")]
        headers: Vec<String>,
        /// Compress batches: none, gzip, snappy, lz4 or zstd.
        #[arg(long, default_value = "none", value_parser = parse_codec)]
        compression_codec: shardlog::format::compression::Codec,
    },
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
    Consume {
        #[command(flatten)]
        server: ServerAddr,
        /// Topic name.
        #[arg(long)]
        topic: String,
        /// Partition [default: all; produce: by key (murmur2), round-robin without one].
        #[arg(long)]
        partition: Option<i32>,
        /// kcat's -o: N, -N (N before the end of each partition), s@TIME, beginning or
        /// earliest, end or latest; e@TIME (given as a second -o) ends at the first record
        /// with timestamp >= TIME, as --to-time TIME --stop-at-first.
        #[arg(
            long,
            short = 'o',
            default_value = "earliest",
            allow_hyphen_values = true
        )]
        offset: Vec<String>,
        /// Start at each partition's first record with timestamp >= this (ms or ISO-8601;
        /// no zone means UTC).
        #[arg(long)]
        from_time: Option<String>,
        /// Print only records with timestamp < this (ms or ISO-8601; no zone means UTC).
        #[arg(long)]
        to_time: Option<String>,
        /// Stop after printing this many records (0 prints none).
        #[arg(long)]
        max_records: Option<u64>,
        /// kcat tokens: %t %p %o %T (epoch ms) %I (ISO-8601 in --time-zone) %k %s %h %K %S
        /// (lengths, -1 null) %R \n \t.
        #[arg(long, default_value = "%s\\n")]
        format: String,
        /// Keep waiting for new records instead of exiting at the end of the log.
        #[arg(long)]
        follow: bool,
        /// kcat's -Z: print a null key or value as NULL (default: nothing).
        #[arg(short = 'Z', long)]
        print_null: bool,
        /// End each partition's window at its first record with timestamp >= --to-time
        /// (kcat's rule; late records after it are missed).
        #[arg(long)]
        stop_at_first: bool,
        /// Exact windows: wait for records up to this much later than --to-time.
        #[arg(long, default_value_t = 3_600_000)]
        max_lateness_ms: i64,
        /// Exact windows: a partition ends after this many records in a row at or past
        /// --to-time + --max-lateness-ms (an isolated future-dated record does not end it).
        #[arg(long, default_value_t = 1000)]
        settle_records: u64,
        /// Zone for %I: UTC, Z, +08, +0800 or +08:00.
        #[arg(long, default_value = "UTC", allow_hyphen_values = true)]
        time_zone: String,
        /// Kafka's console consumer --group: resume from the group's committed offsets and
        /// commit the position as records print and on exit (the group must have no
        /// members; Kafka clients join groups through the Kafka listener).
        #[arg(long)]
        group: Option<String>,
        /// How often the position is committed while following.
        #[arg(long, default_value_t = 5000)]
        commit_interval_ms: u64,
    },
    /// Offsets by time per partition, as Kafka's GetOffsetShell.
    #[command(
        after_help = "Example: shardlog get-offsets --topic orders --time 2024-03-09T14:05:00Z --show-timestamp"
    )]
    GetOffsets {
        #[command(flatten)]
        server: ServerAddr,
        /// A topic name or regular expression [default: every topic].
        #[arg(long)]
        topic: Option<String>,
        /// Comma-separated partitions [default: all].
        #[arg(long, value_delimiter = ',')]
        partitions: Option<Vec<i32>>,
        /// Kafka's list of topic[:N | N-M | N- | -M], e.g. orders:0-3,logs.*
        #[arg(long)]
        topic_partitions: Option<String>,
        /// ms, ISO-8601 (no zone means UTC), earliest/-2, latest/-1 or max-timestamp/-3.
        #[arg(long, default_value = "latest", allow_hyphen_values = true)]
        time: String,
        /// Append the found record's timestamp.
        #[arg(long)]
        show_timestamp: bool,
    },
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
    DumpLog {
        /// Comma-separated list of files to dump.
        #[arg(long, value_delimiter = ',', required = true)]
        files: Vec<PathBuf>,
        /// Print every record, not only batch headers.
        #[arg(long)]
        deep_iteration: bool,
        /// Print record keys and payloads (implies --deep-iteration).
        #[arg(long)]
        print_data_log: bool,
        /// Only check that index files pass the sanity check (exit 1 if one fails).
        #[arg(long)]
        index_sanity_check: bool,
        /// Check index files against their .log without printing the entries.
        #[arg(long)]
        verify_index_only: bool,
        /// Print records' keys and payloads only, without offsets, times and sizes.
        #[arg(long)]
        skip_record_metadata: bool,
        /// Largest batch to read; a larger one is reported (exit 1).
        #[arg(long, default_value_t = tools::dump_log::DEFAULT_MAX_MESSAGE_SIZE)]
        max_message_size: usize,
    },
}

#[derive(Subcommand)]
enum CrashCheckAction {
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

/// Runs a tool's future on a small unpinned glommio executor.
/// kcat's `-o` values: one start (N, -N, s@TIME, beginning, end) and at most one e@TIME,
/// which is `--to-time TIME --stop-at-first`. Returns (start, to-time, stop-at-first).
fn kcat_offsets(
    offsets: Vec<String>,
    to_time: Option<String>,
    stop_at_first: bool,
) -> Result<(String, Option<String>, bool), String> {
    let (ends, starts): (Vec<String>, Vec<String>) =
        offsets.into_iter().partition(|o| o.starts_with("e@"));
    let to_time = match (ends.as_slice(), to_time) {
        ([], t) => t,
        ([e], None) => Some(e[2..].to_string()),
        _ => return Err("give at most one e@TIME, and not together with --to-time".into()),
    };
    let start = match starts.as_slice() {
        [] => "earliest".to_string(),
        [s] => s.clone(),
        _ => return Err("give one start --offset (and at most one e@TIME)".into()),
    };
    Ok((start, to_time, stop_at_first || !ends.is_empty()))
}

fn run_tool(f: impl std::future::Future<Output = Result<(), String>>) -> Result<(), String> {
    let result = glommio::LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .make()
        .map_err(|e| format!("starting executor: {e}"))?
        .run(f);
    match result {
        // The reader went away (`| head`): end quietly, as Unix tools do.
        Err(e) if e.to_lowercase().contains("broken pipe") => Ok(()),
        other => other,
    }
}

fn parse_codec(name: &str) -> Result<shardlog::format::compression::Codec, String> {
    shardlog::format::compression::Codec::from_name(name)
        .ok_or_else(|| format!("{name:?} is not one of none, gzip, snappy, lz4, zstd"))
}

fn serve(args: ServeArgs) -> Result<(), String> {
    let mut config = ServerConfig::default();
    if let Some(f) = args.config {
        config.apply_file(&f)?;
    }
    if let Some(d) = args.data_dir {
        config.data_dir = d;
    }
    if let Some(l) = args.listen {
        config.listen = server::config::parse_listen(&l)?;
    }
    if let Some(l) = args.kafka_listen {
        config.kafka_listen = server::config::parse_optional_listen(&l)?;
    }
    if let Some(n) = args.shards {
        config.shards = n;
    }
    exit_on_panic();
    let handle = server::start(config)?;
    let flag = handle.shutdown_flag();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, flag.clone())
            .map_err(|e| format!("installing signal handler: {e}"))?;
    }
    if !handle.previous_shutdown_was_clean {
        tracing::warn!("no clean-shutdown marker found: the previous run did not shut down cleanly (or this is a new data directory)");
    }
    let result = handle.wait();
    debug_assert!(flag.load(Ordering::SeqCst));
    result
}

/// A panic on any thread stops the whole server with a non-zero exit: a shard that died
/// silently would leave its partitions unserved while the process looks alive. A supervisor
/// restarts it and recovery runs.
fn exit_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        eprintln!(
            "shardlog: a thread panicked; exiting (status 70) so the server restarts and recovers"
        );
        std::process::exit(70);
    }));
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let timeout_ms = cli.timeout_ms;
    let result: Result<(), String> = match cli.command {
        Command::Serve(args) => serve(args),
        Command::ConsumerGroups(args) => consumer_groups(*args),
        Command::Topics {
            action,
            server: ServerAddr { bootstrap },
            topic,
            partitions,
            partition,
            configs,
            delete_configs,
        } => {
            let args = tools::topics::TopicsArgs {
                bootstrap,
                timeout_ms,
                action,
                topic,
                partitions,
                partition,
                configs,
                delete_configs,
            };
            run_tool(async move { tools::topics::run(args, &mut std::io::stdout().lock()).await })
        }
        Command::DeleteRecords {
            server: ServerAddr { bootstrap },
            topic,
            partition,
            offset,
            offset_json_file,
        } => {
            let targets = match (offset_json_file, topic, offset) {
                (Some(file), _, _) => tools::delete_records::targets_from_file(&file),
                (None, Some(topic), Some(offset)) => Ok(vec![(topic, partition, offset)]),
                _ => Err("give --topic and --offset, or --offset-json-file".to_string()),
            };
            run_tool(async move {
                let args = tools::delete_records::DeleteRecordsArgs {
                    bootstrap,
                    timeout_ms,
                    targets: targets?,
                };
                tools::delete_records::run(args, &mut std::io::stdout().lock()).await
            })
        }
        Command::Timestamps {
            server: ServerAddr { bootstrap },
            topic,
            from_time,
            to_time,
            deep,
            json,
        } => {
            let args = tools::timestamps::TimestampsArgs {
                bootstrap,
                timeout_ms,
                topic,
                from_time,
                to_time,
                deep,
                json,
            };
            run_tool(
                async move { tools::timestamps::run(args, &mut std::io::stdout().lock()).await },
            )
        }
        Command::LogDirs {
            server: ServerAddr { bootstrap },
            topic_list,
        } => run_tool(async move {
            tools::log_dirs::run(
                &bootstrap,
                timeout_ms,
                topic_list,
                &mut std::io::stdout().lock(),
            )
            .await
        }),
        Command::Produce {
            server: ServerAddr { bootstrap },
            topic,
            partition,
            acks,
            key_separator,
            timestamp_separator,
            batch_records,
            null_empty,
            headers,
            compression_codec,
        } => {
            let headers: Result<Vec<_>, String> = headers
                .iter()
                .map(|h| tools::produce::parse_header(h))
                .collect();
            let headers = match headers {
                Ok(h) => h,
                Err(e) => {
                    eprintln!("shardlog: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let args = tools::produce::ProduceArgs {
                bootstrap,
                timeout_ms,
                topic: topic.clone(),
                partition,
                acks,
                key_separator,
                null_empty,
                headers,
                timestamp_separator,
                batch_records,
                compression: compression_codec,
            };
            run_tool(async move {
                let n = tools::produce::run(args, &mut std::io::stdin().lock()).await?;
                eprintln!("produced {n} records to {topic}");
                Ok(())
            })
        }
        Command::Consume {
            server: ServerAddr { bootstrap },
            topic,
            partition,
            offset,
            from_time,
            to_time,
            max_records,
            format,
            follow,
            print_null,
            stop_at_first,
            max_lateness_ms,
            settle_records,
            time_zone,
            group,
            commit_interval_ms,
        } => {
            let (offset, to_time, stop_at_first) =
                match kcat_offsets(offset, to_time, stop_at_first) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("shardlog: {e}");
                        return ExitCode::FAILURE;
                    }
                };
            let args = tools::consume::ConsumeArgs {
                bootstrap,
                timeout_ms,
                topic,
                partition,
                offset,
                from_time,
                to_time,
                max_records,
                format,
                follow,
                print_null,
                stop_at_first,
                max_lateness_ms,
                settle_records,
                time_zone,
                group,
                commit_interval_ms,
            };
            run_tool(async move {
                let stdout = std::io::stdout();
                let mut out = std::io::BufWriter::new(stdout.lock());
                let summary = tools::consume::run(args, &mut out).await?;
                drop(out);
                eprint!("{summary}");
                Ok(())
            })
        }
        Command::GetOffsets {
            server: ServerAddr { bootstrap },
            topic,
            partitions,
            topic_partitions,
            time,
            show_timestamp,
        } => {
            let args = tools::get_offsets::GetOffsetsArgs {
                bootstrap,
                timeout_ms,
                topic,
                partitions,
                topic_partitions,
                time,
                show_timestamp,
            };
            run_tool(
                async move { tools::get_offsets::run(args, &mut std::io::stdout().lock()).await },
            )
        }
        Command::CrashCheck { action } => match action {
            CrashCheckAction::Produce {
                server: ServerAddr { bootstrap },
                topic,
                acks_file,
                connections,
                duration_ms,
                seed,
            } => run_tool(async move {
                let n = tools::crash_check::produce(
                    &bootstrap,
                    &topic,
                    &acks_file,
                    connections,
                    std::time::Duration::from_millis(duration_ms),
                    seed,
                )
                .await?;
                eprintln!("crash-check: {n} records acknowledged");
                Ok(())
            }),
            CrashCheckAction::Verify {
                server: ServerAddr { bootstrap },
                topic,
                acks_file,
            } => run_tool(async move {
                let v = tools::crash_check::verify(&bootstrap, &topic, &acks_file).await?;
                println!(
                    "verified: {} acknowledged records present and intact; {} records in the log, offsets without gaps",
                    v.acknowledged, v.records_in_log
                );
                Ok(())
            }),
        },
        Command::DumpLog {
            files,
            deep_iteration,
            print_data_log,
            index_sanity_check,
            verify_index_only,
            skip_record_metadata,
            max_message_size,
        } => {
            let opts = tools::dump_log::DumpOptions {
                files,
                deep_iteration: deep_iteration || skip_record_metadata,
                print_data_log,
                index_sanity_check,
                verify_index_only,
                skip_record_metadata,
                max_message_size,
            };
            let stdout = std::io::stdout();
            let stderr = std::io::stderr();
            match tools::dump_log::run(&opts, &mut stdout.lock(), &mut stderr.lock()) {
                Ok(true) => Ok(()),
                Ok(false) => Err("some files could not be dumped or failed a check".into()),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shardlog: {e}");
            ExitCode::FAILURE
        }
    }
}
