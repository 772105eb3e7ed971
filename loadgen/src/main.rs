//! loadgen: shardlog's load generator. The workload drivers arrive with the loadgen issue
//! (they need the server and its protocol); until then this binary says so and fails,
//! rather than printing numbers it did not measure.

use clap::Parser;

#[derive(Parser)]
#[command(name = "loadgen", about = "shardlog load generator (not built yet)")]
struct Cli {}

fn main() -> std::process::ExitCode {
    let _ = Cli::parse();
    eprintln!(
        "loadgen: workloads are not implemented yet; for engine figures run \
         `cargo bench --bench engine` (or scripts/bench.sh)"
    );
    std::process::ExitCode::from(2)
}
