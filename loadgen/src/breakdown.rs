//! Where the time of a run went inside the server: the server's stage histograms (its
//! Metrics API) read before and after the run and subtracted, so the figures cover exactly
//! the requests of the run. Printed under each end-to-end figure.

use serde::Serialize;
use shardlog::client::Client;
use shardlog::metrics::{Distribution, MetricsReport};

/// The requests the load generator itself sends to observe the server (not the workload).
const OBSERVING: [&str; 4] = [".Metrics", ".Stats", ".DropCaches", ".ApiVersions"];

/// One stage of the server's work during a run.
#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    pub stage: String,
    /// Times it happened per operation of the run (a cold lookup does ~2 device reads).
    pub per_op: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Breakdown {
    /// The server's own time per request (frame read to reply written), then each stage.
    pub rows: Vec<StageRow>,
    /// CPU seconds the whole server process (every thread) spent during the run.
    pub cpu_seconds: f64,
    /// Heap blocks the server allocated during the run, per operation.
    pub allocations_per_op: f64,
    /// Operations of the run per socket write of replies (several ready together share one).
    pub ops_per_reply_write: f64,
}

impl Breakdown {
    /// The server's CPU-seconds per GB (1e9 bytes) moved by the run.
    pub fn cpu_seconds_per_gb(&self, bytes: u64) -> f64 {
        if bytes == 0 {
            return 0.0;
        }
        self.cpu_seconds / (bytes as f64 / 1e9)
    }
}

/// Takes the server's metrics now (the start of a run).
pub async fn mark(c: &mut Client) -> Result<MetricsReport, String> {
    c.metrics().await.map_err(|e| format!("Metrics: {e}"))
}

fn row(name: &str, d: &Distribution, ops: u64) -> StageRow {
    let us = |ns: u64| ns as f64 / 1000.0;
    let n = d.count_recorded();
    StageRow {
        stage: name.to_string(),
        per_op: n as f64 / ops.max(1) as f64,
        p50_us: us(d.quantile(0.5)),
        p99_us: us(d.quantile(0.99)),
        mean_us: d.sum.checked_div(n).map_or(0.0, us),
    }
}

/// The stages, CPU and counters of a run's metrics (`delta`), over `ops` operations.
fn breakdown_of(delta: &MetricsReport, ops: u64) -> Breakdown {
    let mut rows: Vec<StageRow> = delta
        .distributions
        .iter()
        .filter(|d| d.name.starts_with("api.") && d.dist.count_recorded() > 0)
        .filter(|d| !OBSERVING.iter().any(|api| d.name.ends_with(api)))
        .map(|d| row(&d.name, &d.dist, ops))
        .collect();
    rows.extend(
        delta
            .distributions
            .iter()
            .filter(|d| d.name.starts_with("stage.") && d.dist.count_recorded() > 0)
            .map(|d| row(&d.name, &d.dist, ops)),
    );
    let cpu_ms = delta.value(shardlog::metrics::PROCESS_CPU_MS).unwrap_or(0);
    let allocations = delta.value("heap_allocations").unwrap_or(0);
    let reply_writes = delta.value("reply_writes").unwrap_or(0);
    Breakdown {
        rows,
        cpu_seconds: cpu_ms as f64 / 1000.0,
        allocations_per_op: allocations as f64 / ops.max(1) as f64,
        ops_per_reply_write: ops as f64 / reply_writes.max(1) as f64,
    }
}

/// One breakdown of several nodes' metrics over a run (`deltas`, over `ops` operations),
/// and each node's CPU-seconds.
pub fn sum_of(mut deltas: Vec<MetricsReport>, ops: u64) -> (Breakdown, Vec<f64>) {
    let cpu = |d: &MetricsReport| d.value(shardlog::metrics::PROCESS_CPU_MS).unwrap_or(0);
    let each = deltas.iter().map(|d| cpu(d) as f64 / 1000.0).collect();
    let mut sum = deltas.pop().expect("a run has a node");
    for d in &deltas {
        sum.merge(d);
    }
    (breakdown_of(&sum, ops), each)
}

/// Runs `f`'s future on an executor of its own and waits for its result.
pub fn blocking<T: Send + 'static, F: std::future::Future<Output = Result<T, String>> + 'static>(
    f: impl FnOnce() -> F + Send + 'static,
) -> Result<T, String> {
    glommio::LocalExecutorBuilder::default()
        .spawn(f)
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|e| e.to_string())?
}

/// Prints the server's CPU over the run, per GB of `bytes` when the run moved data and per
/// record when it wrote records (small records cost per record, not per byte).
pub fn print_cpu(b: &Breakdown, bytes: u64, records: u64) {
    let mut line = format!("        server CPU {:.2} s", b.cpu_seconds);
    if bytes > 0 {
        line += &format!(", {:.3} CPU-seconds per GB", b.cpu_seconds_per_gb(bytes));
    }
    if records > 0 {
        line += &format!(
            ", {:.0} ns per record",
            b.cpu_seconds * 1e9 / records as f64
        );
    }
    line += &format!(
        ", {:.1} heap allocations per request, {:.1} replies per write",
        b.allocations_per_op, b.ops_per_reply_write
    );
    println!("{line}");
}

pub fn print(title: &str, b: &Breakdown) {
    if b.rows.is_empty() {
        return;
    }
    println!("  server breakdown, {title}:");
    println!(
        "    {:<28} {:>7} {:>9} {:>9} {:>9}",
        "stage", "per op", "p50 us", "p99 us", "mean us"
    );
    for r in &b.rows {
        println!(
            "    {:<28} {:>7.2} {:>9.1} {:>9.1} {:>9.1}",
            r.stage, r.per_op, r.p50_us, r.p99_us, r.mean_us
        );
    }
}
