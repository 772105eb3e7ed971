//! Results: latency summaries from HdrHistogram, the machine description, the JSON document
//! (`--json`) and the tables printed on stdout.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::breakdown::{self, Breakdown};

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct LatencyUs {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

impl LatencyUs {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        LatencyUs {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
            max: h.max(),
        }
    }
}

pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub kernel: String,
    pub filesystem: String,
}

/// Filesystem type of `path` (statfs magic, named when known).
fn filesystem_of(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return "unknown".into();
    };
    // SAFETY: statfs writes into the zeroed struct we own.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return "unknown".into();
    }
    match st.f_type as i64 {
        0xEF53 => "ext4".into(),
        0x58465342 => "xfs".into(),
        0x9123683E => "btrfs".into(),
        0x01021994 => "tmpfs".into(),
        0x2FC12FC1 => "zfs".into(),
        0x6969 => "nfs".into(),
        0x794c7630 => "overlayfs".into(),
        other => format!("0x{other:x}"),
    }
}

impl Machine {
    pub fn describe(data_path: &std::path::Path) -> Self {
        Machine {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            filesystem: filesystem_of(data_path),
        }
    }
}

/// The git revision of the working directory, if it is a checkout.
pub fn git_revision() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[derive(Debug, Clone, Serialize)]
pub struct WriteResult {
    pub bytes: u64,
    pub records: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    pub records_per_s: f64,
    /// None for acks=0 (no replies to time).
    pub latency_us: Option<LatencyUs>,
    /// Latencies measured from the intended send time (open loop, --rate).
    pub corrected_for_coordinated_omission: bool,
    /// The server process's CPU-seconds per GB written (every thread, from its Metrics).
    pub server_cpu_seconds_per_gb: f64,
    /// Where the time went in the server during the run.
    pub server: Breakdown,
    /// (seconds since start, MB/s over the interval before it), sampled 10 times a second.
    pub throughput_mb_per_s: Vec<(f64, f64)>,
    /// Each node the run wrote to (one outside a cluster).
    pub nodes: Vec<NodeReport>,
}

/// What one node of a cluster took during a write run.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub node: i32,
    /// Its native listener.
    pub addr: String,
    /// Partitions of the topic it leads.
    pub partitions_led: usize,
    /// Acknowledged by it.
    pub bytes: u64,
    pub records: u64,
    /// Its process's CPU during the run.
    pub server_cpu_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LookupResult {
    pub lookups: u64,
    pub latency_us: LatencyUs,
    /// Device reads the server issued per lookup (from its Stats counters).
    pub device_reads_per_lookup_mean: f64,
    pub device_reads_per_lookup_max: u64,
    /// Where the time went in the server during the pass (empty for the network baseline).
    pub server: Breakdown,
    /// Warm passes: an ApiVersions round trip timed on the same connection just before each
    /// lookup (the floor under the same conditions).
    pub round_trip_us: Option<LatencyUs>,
    /// The pass's latencies (for `--plot`).
    #[serde(skip)]
    pub hist: Option<Histogram<u64>>,
}

pub fn print_write(r: &WriteResult) {
    println!(
        "write   {:>10.1} MB/s {:>12.0} records/s  {} records, {:.2} s",
        r.mb_per_s, r.records_per_s, r.records, r.seconds
    );
    if let Some(l) = r.latency_us {
        println!(
            "        produce latency us  p50 {}  p90 {}  p99 {}  p99.9 {}  p99.99 {}  max {}{}",
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.p9999,
            l.max,
            if r.corrected_for_coordinated_omission {
                "  (open loop, corrected for coordinated omission)"
            } else {
                ""
            }
        );
    }
    breakdown::print_cpu(&r.server, r.bytes, r.records);
    if r.nodes.len() > 1 {
        print_nodes(&r.nodes, r.seconds);
    }
    breakdown::print("per produce request", &r.server);
}

/// One line per node of a cluster run.
fn print_nodes(nodes: &[NodeReport], seconds: f64) {
    for n in nodes {
        let per_record = n.server_cpu_seconds * 1e9 / n.records.max(1) as f64;
        println!(
            "        node {:<4} {:<21} leads {:>4} partitions {:>10.1} MB/s {:>12.0} records/s  server CPU {:.2} s, {:.0} ns per record",
            n.node,
            n.addr,
            n.partitions_led,
            n.bytes as f64 / 1e6 / seconds,
            n.records as f64 / seconds,
            n.server_cpu_seconds,
            per_record
        );
    }
}

pub fn print_lookup_table(rows: &[(String, &LookupResult)]) {
    println!(
        "{:<22} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>12}",
        "lookup", "p50 us", "p90", "p99", "p99.9", "max", "count", "dev reads/op"
    );
    for (name, r) in rows {
        let l = r.latency_us;
        println!(
            "{:<22} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8.2} (max {})",
            name,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            r.lookups,
            r.device_reads_per_lookup_mean,
            r.device_reads_per_lookup_max
        );
    }
    for (name, r) in rows {
        if let Some(rt) = r.round_trip_us {
            println!(
                "  {name}: round trip interleaved with its lookups p50 {} p99 {} us",
                rt.p50, rt.p99
            );
        }
        if !r.server.rows.is_empty() {
            print!("  {name}:");
            breakdown::print_cpu(&r.server, 0, 0);
        }
        breakdown::print(&format!("{name}, per lookup"), &r.server);
    }
}

/// A command's JSON document: the tool, git revision and machine (of the working
/// directory's filesystem), its config, and its figures under `key`.
pub fn document(
    tool: &str,
    config: serde_json::Value,
    key: &str,
    figures: serde_json::Value,
) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "tool": tool,
        "git_revision": git_revision(),
        "machine": Machine::describe(&std::env::current_dir().unwrap_or_default()),
        "config": config,
    });
    doc[key] = figures;
    doc
}

pub fn write_json(path: &std::path::Path, doc: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}
