//! The `shardlog` binary: the server (`serve`) and the tools, as clap subcommands. Tool
//! flags mirror Kafka's tools and kcat.

use std::process::ExitCode;

mod cli;

use clap::Parser;
use cli::*;
use shardlog::server::{self, ServerConfig};
use shardlog::tools;

/// --reset-offsets: the one target given and the scope.
fn reset_action(
    a: &ConsumerGroupsArgs,
) -> Result<shardlog::tools::consumer_groups::Action, String> {
    use shardlog::tools::consumer_groups::{Action, ResetArgs, Target};
    let targets = [
        a.to_datetime.clone().map(Target::Datetime),
        a.by_duration.clone().map(Target::Duration),
        a.to_earliest.then_some(Target::Earliest),
        a.to_latest.then_some(Target::Latest),
        // Kafka's --to-current: the commit, or the log end without one (a shift by 0).
        a.to_current.then_some(Target::ShiftBy(0)),
        a.to_offset.map(Target::Offset),
        a.shift_by.map(Target::ShiftBy),
        a.from_file.clone().map(Target::FromFile),
    ];
    let mut targets = targets.into_iter().flatten();
    let target = targets.next().ok_or("--reset-offsets needs one of --to-datetime, --by-duration, --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --from-file")?;
    if targets.next().is_some() {
        return Err("give only one reset target".into());
    }
    Ok(Action::Reset(ResetArgs {
        topics: a.topic.clone(),
        all_topics: a.all_topics,
        target,
        execute: a.execute,
        export: a.export,
    }))
}

fn consumer_groups(a: ConsumerGroupsArgs, timeout_ms: u64) -> Result<(), String> {
    use shardlog::tools::consumer_groups::{run, Action, Groups};
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
        Action::List {
            states: a.state.map(|s| {
                s.split(',')
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect()
            }),
        }
    } else if a.describe {
        use shardlog::tools::consumer_groups::View;
        let view = match (a.state.is_some(), a.members) {
            (true, _) => View::State,
            (false, true) => View::Members { verbose: a.verbose },
            (false, false) => View::Offsets,
        };
        Action::Describe { view }
    } else if a.delete {
        Action::Delete
    } else if a.delete_offsets {
        Action::DeleteOffsets { topics: a.topic }
    } else {
        reset_action(&a)?
    };
    let groups = match (a.group, a.all_groups) {
        (_, true) => Groups::All,
        (Some(g), false) => Groups::One(g),
        (None, false) => Groups::None,
    };
    let server = shardlog::tools::consumer_groups::Server {
        bootstrap: &a.server.bootstrap,
        timeout: std::time::Duration::from_millis(timeout_ms),
        client: &a.server.client,
    };
    run(server, groups, action, &mut std::io::stdout().lock())
}

fn produce(args: tools::produce::ProduceArgs) -> Result<(), String> {
    let topic = args.topic.clone();
    run_tool(async move {
        let n = tools::produce::run(args, &mut std::io::stdin().lock()).await?;
        eprintln!("produced {n} records to {topic}");
        Ok(())
    })
}

fn consume(args: tools::consume::ConsumeArgs) -> Result<(), String> {
    run_tool(async move {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let summary = tools::consume::run(args, &mut out).await?;
        drop(out);
        eprint!("{summary}");
        Ok(())
    })
}

/// Runs a tool's future on a small unpinned glommio executor.
fn run_tool(f: impl std::future::Future<Output = Result<(), String>>) -> Result<(), String> {
    glommio::LocalExecutorBuilder::default()
        .io_memory(1 << 20)
        .make()
        .map_err(|e| format!("starting executor: {e}"))?
        .run(f)
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
    Ok(handle.wait()?)
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

fn dump_log(mut opts: tools::dump_log::DumpOptions) -> Result<(), String> {
    // Remote segment files (tiered storage) are fetched into a private directory first,
    // removed when `fetched` goes.
    let endpoint = opts.client.property("remote.storage.endpoint")?;
    let fetched =
        tools::remote_files::Fetched::all(&opts.files, endpoint.as_deref().unwrap_or(""))?;
    opts.files = fetched.files.clone();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let outcome = tools::dump_log::run(&opts, &mut stdout.lock(), &mut stderr.lock());
    match outcome {
        Ok(true) => Ok(()),
        Ok(false) => Err("some files could not be dumped or failed a check".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs a tool that writes its report to stdout.
fn to_stdout<F>(tool: impl FnOnce(std::io::StdoutLock<'static>) -> F) -> Result<(), String>
where
    F: std::future::Future<Output = Result<(), String>>,
{
    run_tool(async move { tool(std::io::stdout().lock()).await })
}

fn crash_check(action: CrashCheckAction) -> Result<(), String> {
    match action {
        CrashCheckAction::Produce {
            server: tools::ServerAddr { bootstrap, .. },
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
            server: tools::ServerAddr { bootstrap, .. },
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
    let tool = !matches!(cli.command, Command::Serve(_));
    let timeout_ms = cli.timeout_ms;
    let result: Result<(), String> = match cli.command {
        Command::Serve(args) => serve(args),
        Command::ConsumerGroups(args) => consumer_groups(*args, timeout_ms),
        Command::Topics(mut args) => {
            args.server.timeout_ms = timeout_ms;
            to_stdout(|mut out| async move { tools::topics::run(args, &mut out).await })
        }
        Command::Cluster(mut args) => {
            args.server.timeout_ms = timeout_ms;
            to_stdout(|mut out| async move { tools::cluster::run(args, &mut out).await })
        }
        Command::DeleteRecords(mut args) => {
            args.server.timeout_ms = timeout_ms;
            to_stdout(|mut out| async move { tools::delete_records::run(args, &mut out).await })
        }
        Command::Timestamps(mut args) => {
            args.server.timeout_ms = timeout_ms;
            to_stdout(|mut out| async move { tools::timestamps::run(args, &mut out).await })
        }
        Command::LogDirs {
            mut server,
            topic_list,
            brokers,
        } => run_tool(async move {
            server.timeout_ms = timeout_ms;
            let out = &mut std::io::stdout().lock();
            tools::log_dirs::run(&server, (topic_list, brokers), out).await
        }),
        Command::Produce(mut args) => {
            args.server.timeout_ms = timeout_ms;
            produce(args)
        }
        Command::Consume(mut args) => {
            args.server.timeout_ms = timeout_ms;
            consume(args)
        }
        Command::GetOffsets(mut args) => {
            args.server.timeout_ms = timeout_ms;
            to_stdout(|mut out| async move { tools::get_offsets::run(args, &mut out).await })
        }
        Command::CrashCheck { action } => crash_check(action),
        Command::DumpLog(args) => dump_log(args),
        Command::Acls(args) => tools::acls::run(args, &mut std::io::stdout().lock()),
        Command::Users(args) => tools::users::run(args, &mut std::io::stdout().lock()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`| head`): a tool ends quietly with success, as Unix tools
        // do, whichever tool it is.
        Err(e) if tool && e.to_lowercase().contains("broken pipe") => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shardlog: {e}");
            ExitCode::FAILURE
        }
    }
}
