//! loadgen: shardlog's load generator. `write` measures sequential-write throughput and
//! produce latency, `lookup` measures lookups by offset and by timestamp with a cold and a
//! warm cache, `consume` reads a topic front to back as a catching-up consumer does, and
//! `bench` runs them against a server it starts itself.

mod bench;
mod breakdown;
mod cluster;
mod connect;
mod consume;
mod linger;
mod lookup;
mod nodes;
mod open_txns;
mod plot;
mod report;
mod units;
mod write;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "loadgen",
    version,
    about = "shardlog load generator: write throughput, lookup latency cold vs warm"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sequential-write load: MB/s, records/s and produce latency percentiles.
    Write(WriteArgs),
    /// Random lookups over the existing log, by offset or by timestamp, cold and/or warm.
    Lookup(LookupArgs),
    /// Sequential consume of a topic's whole log: MB/s, per-fetch latency, cold and warm.
    Consume(ConsumeArgs),
    /// Leave many transactions open on a Kafka listener (recovery figures of transactions).
    OpenTxns(open_txns::OpenTxnsArgs),
    /// Start a server on a temp data dir, write, then look up (offset/timestamp, cold/warm).
    Bench {
        /// Where the temporary data directory goes [default: the system temp dir].
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// 1 GiB write and 200 lookups per row instead of 4 GiB and 2000.
        #[arg(long)]
        quick: bool,
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write SVG plots here (latency percentile curves, throughput over time).
        #[arg(long)]
        plot: Option<PathBuf>,
    },
}

pub(crate) fn progress_bytes(total: u64) -> ProgressBar {
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .expect("valid template"),
    );
    pb
}

pub(crate) fn progress_count(total: u64) -> ProgressBar {
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} lookups eta {eta}")
            .expect("valid template"),
    );
    pb
}

fn parse_acks(s: &str) -> Result<i16, String> {
    shardlog::tools::produce::parse_acks(s)
}

#[derive(clap::Args)]
struct WriteArgs {
    /// A native listener, or a comma-separated list of a cluster's (the first that answers
    /// says where every partition's leader is; each partition is written on its leader).
    #[arg(long, default_value = "127.0.0.1:7411")]
    bootstrap: String,
    /// The native listener's security (Kafka's --command-config, kcat's -X).
    #[command(flatten)]
    client: shardlog::tools::client_config::ClientConfigArgs,
    #[arg(long)]
    topic: String,
    /// Partitions when creating the topic.
    #[arg(long, default_value_t = 2)]
    partitions: i32,
    /// Create the topic first (fails if it exists).
    #[arg(long)]
    create: bool,
    /// With --create on a cluster: replicas of each partition (default: the cluster's
    /// default.replication.factor).
    #[arg(long)]
    replication_factor: Option<i16>,
    #[arg(long, default_value = "1KiB", value_parser = units::parse_size)]
    record_size: u64,
    #[arg(long, default_value_t = 1000)]
    batch_records: usize,
    /// Batches of about this many record bytes (e.g. 16KiB, Kafka producers' batch.size):
    /// records per batch = this / --record-size, instead of --batch-records.
    #[arg(long, value_parser = units::parse_size)]
    batch_bytes: Option<u64>,
    /// Stop after this many bytes (e.g. 4GiB) [default: 1GiB unless --duration].
    #[arg(long, value_parser = units::parse_size, conflicts_with = "duration")]
    total_bytes: Option<u64>,
    /// Stop after this long (e.g. 30s, 2m).
    #[arg(long, value_parser = units::parse_duration_secs)]
    duration: Option<f64>,
    #[arg(long, default_value_t = 2)]
    connections: usize,
    /// 0, 1 or all.
    #[arg(long, default_value = "1")]
    acks: String,
    /// Open-loop rate in records/s; latencies measured from each request's due time.
    #[arg(long)]
    rate: Option<f64>,
    /// With --rate, a producer's linger.ms: a batch is sent when full or when its oldest
    /// record has waited this long, so at low rates batches hold fewer records; latencies
    /// are then measured from each batch's oldest record (its wait included).
    #[arg(long, requires = "rate")]
    linger_ms: Option<f64>,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 4)]
    pipeline: usize,
    /// Connect to the bootstrap only (requests are forwarded between shards).
    #[arg(long)]
    no_shard_aware: bool,
    /// Client executors (one per core).
    #[arg(long, default_value_t = 1)]
    client_cores: usize,
    /// Partitions each request writes to: 1 is Produce, more is one MultiProduce to that
    /// many partitions (one batch each), sent to the bootstrap.
    #[arg(long, default_value_t = 1)]
    partitions_per_request: usize,
    /// Each connection writes in turn to every partition its shard owns, one batch per
    /// request to the next one (writes across many partitions: `--partitions 10000`).
    #[arg(long, conflicts_with = "partitions_per_request")]
    rotate_partitions: bool,
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG plots here (latency percentile curves, throughput over time).
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(clap::Args)]
struct LookupArgs {
    #[arg(long, default_value = "127.0.0.1:7411")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    #[arg(long, value_enum)]
    by: lookup::By,
    #[arg(long, default_value_t = 1000)]
    count: usize,
    #[command(flatten)]
    passes: PassArgs,
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write SVG plots here (latency percentile curves, throughput over time).
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ConsumeArgs {
    #[arg(long, default_value = "127.0.0.1:7411")]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    /// Bytes each fetch asks for (a Kafka consumer's max.partition.fetch.bytes).
    #[arg(long, default_value = "1MiB", value_parser = units::parse_size)]
    fetch_bytes: u64,
    #[command(flatten)]
    passes: PassArgs,
    #[arg(long)]
    json: Option<PathBuf>,
}

/// How the passes of a read workload (lookup, consume) run.
#[derive(clap::Args, Clone, Copy)]
struct PassArgs {
    #[arg(long, value_enum, default_value = "both")]
    cache: lookup::CacheMode,
    /// Cold passes also drop the kernel page cache (needs root, and a server started
    /// with allow.drop.kernel.cache=true).
    #[arg(long)]
    drop_kernel_page_cache: bool,
    #[arg(long)]
    no_shard_aware: bool,
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Write(args) => write_command(args),
        Command::Lookup(args) => lookup_command(args),
        Command::Consume(args) => consume_command(args),
        Command::OpenTxns(args) => open_txns::run(args),
        Command::Bench {
            data_dir,
            quick,
            json,
            plot,
        } => bench::run(bench::BenchOpts {
            data_dir,
            quick,
            json,
            plot,
        }),
    }
}

/// Creates the topic: on the native API, or on a cluster (where the native API changes
/// one node only) or with a replication factor through the Kafka API, as `shardlog topics
/// create` does.
fn create_topic(
    bootstrap: &str,
    topic: &str,
    (partitions, factor): (i32, Option<i16>),
    client: &shardlog::tools::client_config::ClientConfigArgs,
) -> Result<(), String> {
    use shardlog::client::ClientError;
    use shardlog::protocol::ErrorCode;
    use shardlog::tools::topic_changes;
    let through_kafka = |factor: i16| {
        let timeout_ms = shardlog::client::DEFAULT_TIMEOUT.as_millis() as u64;
        let mut kafka = shardlog::tools::probe::kafka_client_of(bootstrap, client, timeout_ms)?;
        topic_changes::create(&mut kafka, topic, (partitions, factor), &[])?;
        wait_until_led(bootstrap, topic)
    };
    if let Some(factor) = factor {
        return through_kafka(factor);
    }
    let (b, t) = (bootstrap.to_string(), topic.to_string());
    let native = breakdown::blocking(move || async move {
        let mut c = connect::connect(&b).await?;
        Ok(c.create_topic(&t, partitions, vec![]).await)
    })?;
    match native {
        Err(ClientError::Server {
            code: ErrorCode::TopicChangeOnKafkaApi,
            ..
        }) => through_kafka(topic_changes::DEFAULT_FACTOR),
        done => done.map_err(|e| e.to_string()),
    }
}

/// A topic created on a cluster has leaders once the controller elected them: waits (up
/// to 30 s) until every partition has one.
fn wait_until_led(bootstrap: &str, topic: &str) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (b, t) = (bootstrap.to_string(), topic.to_string());
        let routed = breakdown::blocking(move || async move {
            let routes = cluster::routes(&b, &t, false).await;
            Ok(match routes {
                Ok(routes) => cluster::leaders_agree(&routes, &t).await,
                Err(e) => Err(e),
            })
        })?;
        match routed {
            Ok(_) => return Ok(()),
            Err(e) if std::time::Instant::now() >= deadline => {
                return Err(format!("created {topic:?}, but after 30 s: {e}"))
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

/// Records of `record_size` bytes (above 0: the parser refuses 0) that fill a batch of
/// `batch_bytes`; at least one.
fn records_per_batch(batch_bytes: u64, record_size: u64) -> usize {
    (batch_bytes / record_size).max(1) as usize
}

fn write_command(args: WriteArgs) -> Result<(), String> {
    let WriteArgs {
        bootstrap,
        client,
        topic,
        partitions,
        create,
        replication_factor,
        record_size,
        batch_records,
        batch_bytes,
        total_bytes,
        duration,
        connections,
        acks,
        rate,
        linger_ms,
        pipeline,
        no_shard_aware,
        client_cores,
        partitions_per_request,
        rotate_partitions,
        json,
        plot,
    } = args;
    let acks = parse_acks(&acks)?;
    let batch_records = match batch_bytes {
        Some(bytes) => records_per_batch(bytes, record_size),
        None => batch_records,
    };
    let linger = linger::Linger::of(linger_ms, rate, connections, batch_records)?;
    let batch_records = linger.map_or(batch_records, |l| l.records);
    connect::set_security(client.security()?);
    if create {
        create_topic(
            &bootstrap,
            &topic,
            (partitions, replication_factor),
            &client,
        )?;
    }
    let opts = write::WriteOpts {
        bootstrap,
        topic,
        record_size: record_size as usize,
        batch_records,
        total_bytes,
        duration_secs: duration,
        connections,
        acks,
        rate_records_per_s: rate,
        oldest_record_wait: linger.map_or(Duration::ZERO, |l| l.oldest_record_wait),
        pipeline,
        shard_aware: !no_shard_aware,
        client_cores,
        partitions_per_request,
        rotate_partitions,
    };
    let pb = match (total_bytes, duration) {
        (Some(t), _) => progress_bytes(t),
        (None, None) => progress_bytes(1 << 30),
        (None, Some(_)) => ProgressBar::new_spinner(),
    };
    let r = write::run(opts.clone(), pb)?;
    report::print_write(&r);
    if let Some(dir) = &plot {
        plot::write_all(dir, Some(&r), &[])?;
    }
    if let Some(path) = json {
        let config = json!({
            "bootstrap": opts.bootstrap, "topic": opts.topic,
            "record_size": opts.record_size, "batch_records": opts.batch_records,
            "total_bytes": opts.total_bytes, "duration_secs": opts.duration_secs,
            "connections": opts.connections, "acks": opts.acks,
            "rate_records_per_s": opts.rate_records_per_s, "linger_ms": linger_ms,
            "pipeline": opts.pipeline,
            "shard_aware": opts.shard_aware,
        });
        let figures = serde_json::to_value(&r).map_err(|e| e.to_string())?;
        let doc = report::document("loadgen write", config, "write", figures);
        report::write_json(&path, &doc)?;
    }
    Ok(())
}

fn lookup_command(args: LookupArgs) -> Result<(), String> {
    let LookupArgs {
        bootstrap,
        topic,
        by,
        count,
        passes:
            PassArgs {
                cache,
                drop_kernel_page_cache,
                no_shard_aware,
            },
        json,
        plot,
    } = args;
    let opts = lookup::LookupOpts {
        bootstrap,
        topic,
        by,
        cache,
        count,
        shard_aware: !no_shard_aware,
        drop_kernel_page_cache,
    };
    let modes = if cache == lookup::CacheMode::Both {
        2
    } else {
        1
    };
    let pb = progress_count((count * modes) as u64);
    let o = opts.clone();
    let rows = breakdown::blocking(move || async move { lookup::run(&o, &pb).await })?;
    let table: Vec<(String, &report::LookupResult)> =
        rows.iter().map(|(n, r)| (n.clone(), r)).collect();
    report::print_lookup_table(&table);
    if let Some(dir) = &plot {
        plot::write_all(dir, None, &table)?;
    }
    if let Some(path) = json {
        let mut m = serde_json::Map::new();
        for (n, r) in &rows {
            m.insert(n.replace(' ', "_"), serde_json::to_value(r).unwrap());
        }
        let config = json!({ "bootstrap": opts.bootstrap, "topic": opts.topic, "count": opts.count, "shard_aware": opts.shard_aware });
        let doc = report::document("loadgen lookup", config, "lookup", m.into());
        report::write_json(&path, &doc)?;
    }
    Ok(())
}

fn consume_command(args: ConsumeArgs) -> Result<(), String> {
    let fetch_bytes = i32::try_from(args.fetch_bytes)
        .map_err(|_| format!("--fetch-bytes {} is over 2 GiB", args.fetch_bytes))?;
    let opts = consume::ConsumeOpts {
        bootstrap: args.bootstrap,
        topic: args.topic,
        fetch_bytes,
        cache: args.passes.cache,
        shard_aware: !args.passes.no_shard_aware,
        drop_kernel_page_cache: args.passes.drop_kernel_page_cache,
    };
    let o = opts.clone();
    let rows = breakdown::blocking(move || async move { consume::run(&o).await })?;
    consume::print(&rows);
    if let Some(path) = args.json {
        let passes: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(n, r)| (n.clone(), serde_json::to_value(r).unwrap_or_default()))
            .collect();
        let config = json!({ "bootstrap": opts.bootstrap, "topic": opts.topic, "fetch_bytes": opts.fetch_bytes, "shard_aware": opts.shard_aware });
        let doc = report::document("loadgen consume", config, "consume", passes.into());
        report::write_json(&path, &doc)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}
