//! The `shardlog` binary: the server (`serve`) and the tools, as clap subcommands. Tool
//! flags mirror Kafka's tools and kcat.

use std::process::ExitCode;

mod cli;

use clap::Parser;
use cli::*;
use shardlog::server::{self, ServerConfig};
use shardlog::tools;

fn consumer_groups(a: ConsumerGroupsArgs, timeout_ms: u64) -> Result<(), String> {
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
        std::time::Duration::from_millis(timeout_ms),
        a.group,
        action,
        &mut std::io::stdout().lock(),
    )
}

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

/// Runs a tool's future on a small unpinned glommio executor.
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
    handle.stop_on_signals()?;
    if !handle.previous_shutdown_was_clean {
        tracing::warn!("no clean-shutdown marker found: the previous run did not shut down cleanly (or this is a new data directory)");
    }
    handle.wait()
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

fn topics(args: TopicsArgs, timeout_ms: u64) -> Result<(), String> {
    let TopicsArgs {
        action,
        server: ServerAddr { bootstrap },
        topic,
        partitions,
        partition,
        configs,
        delete_configs,
    } = args;
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

fn delete_records(args: DeleteRecordsArgs, timeout_ms: u64) -> Result<(), String> {
    let DeleteRecordsArgs {
        server: ServerAddr { bootstrap },
        topic,
        partition,
        offset,
        offset_json_file,
    } = args;
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

fn timestamps(args: TimestampsArgs, timeout_ms: u64) -> Result<(), String> {
    let TimestampsArgs {
        server: ServerAddr { bootstrap },
        topic,
        from_time,
        to_time,
        deep,
        json,
    } = args;
    let args = tools::timestamps::TimestampsArgs {
        bootstrap,
        timeout_ms,
        topic,
        from_time,
        to_time,
        deep,
        json,
    };
    run_tool(async move { tools::timestamps::run(args, &mut std::io::stdout().lock()).await })
}

fn produce(args: ProduceArgs, timeout_ms: u64) -> Result<(), String> {
    let ProduceArgs {
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
    } = args;
    let headers = headers
        .iter()
        .map(|h| tools::produce::parse_header(h))
        .collect::<Result<Vec<_>, String>>()?;
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

fn consume(args: ConsumeArgs, timeout_ms: u64) -> Result<(), String> {
    let ConsumeArgs {
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
    } = args;
    let (offset, to_time, stop_at_first) = kcat_offsets(offset, to_time, stop_at_first)?;
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

fn get_offsets(args: GetOffsetsArgs, timeout_ms: u64) -> Result<(), String> {
    let GetOffsetsArgs {
        server: ServerAddr { bootstrap },
        topic,
        partitions,
        topic_partitions,
        time,
        show_timestamp,
    } = args;
    let args = tools::get_offsets::GetOffsetsArgs {
        bootstrap,
        timeout_ms,
        topic,
        partitions,
        topic_partitions,
        time,
        show_timestamp,
    };
    run_tool(async move { tools::get_offsets::run(args, &mut std::io::stdout().lock()).await })
}

fn dump_log(args: DumpLogArgs) -> Result<(), String> {
    let DumpLogArgs {
        files,
        deep_iteration,
        print_data_log,
        index_sanity_check,
        verify_index_only,
        skip_record_metadata,
        max_message_size,
    } = args;
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

fn crash_check(action: CrashCheckAction) -> Result<(), String> {
    match action {
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
    }
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
        Command::ConsumerGroups(args) => consumer_groups(*args, timeout_ms),
        Command::Topics(args) => topics(args, timeout_ms),
        Command::DeleteRecords(args) => delete_records(args, timeout_ms),
        Command::Timestamps(args) => timestamps(args, timeout_ms),
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
        Command::Produce(args) => produce(args, timeout_ms),
        Command::Consume(args) => consume(args, timeout_ms),
        Command::GetOffsets(args) => get_offsets(args, timeout_ms),
        Command::CrashCheck { action } => crash_check(action),
        Command::DumpLog(args) => dump_log(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shardlog: {e}");
            ExitCode::FAILURE
        }
    }
}
