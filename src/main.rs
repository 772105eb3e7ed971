//! The `shardlog` binary: clap subcommands for the tools (and, later, the server).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "shardlog",
    version,
    about = "Thread-per-core log storage engine in Kafka's on-disk format"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print .log, .index and .timeindex files as kafka-dump-log does (offline).
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
        /// Only check that index files pass the sanity check.
        #[arg(long)]
        index_sanity_check: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::DumpLog {
            files,
            deep_iteration,
            print_data_log,
            index_sanity_check,
        } => {
            let opts = shardlog::tools::dump_log::DumpOptions {
                files,
                deep_iteration,
                print_data_log,
                index_sanity_check,
            };
            let stdout = std::io::stdout();
            let stderr = std::io::stderr();
            match shardlog::tools::dump_log::run(&opts, &mut stdout.lock(), &mut stderr.lock()) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("dump-log: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
