//! Per-shard latency histograms and counters, cheap enough to stay on in production.
//!
//! Each shard's executor thread records into its own thread-local [`ShardMetrics`] (thread
//! per core: nothing is shared, no lock, no atomic): an `Instant::now()` pair and one
//! HdrHistogram increment per stage. A reader takes a [`MetricsSnapshot`] of every shard by
//! message passing (`ShardOp::Metrics`), then either merges them (the native Metrics API,
//! which carries whole histograms so a client can subtract two snapshots) or renders them
//! per shard (the Prometheus endpoint, `prometheus.rs`).

mod distribution;
pub mod prometheus;
mod snapshot;

use std::cell::RefCell;
use std::time::{Duration, Instant};

pub use distribution::{Distribution, HistogramError};
pub use snapshot::{
    ApiStats, FollowerLag, Gauges, MetricsReport, MetricsSnapshot, NamedDistribution,
    RemoteCounters, ReplicationGauges, PROCESS_CPU_MS,
};

/// A step of a request's life that is timed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Stage {
    /// The rest of a frame after its size prefix arrived (a client sending slowly shows here).
    FrameRead,
    /// Request header and body decoding.
    Decode,
    /// A request forwarded to the owner shard over the mesh, until its answer is back.
    MeshRoundTrip,
    /// Waiting in a partition's command queue until its task takes the command.
    QueueWait,
    /// The partition's task running the command (reads, appends, lookups).
    PartitionOp,
    /// Finding a batch: the sparse offset or time index lookup, index pages included.
    IndexLookup,
    /// One read submitted to the device (at most 1 MiB).
    DeviceRead,
    /// Flushing a group of appends to the device (acks=1: the write reached the device).
    Flush,
    /// The fdatasync of a group commit (acks=all).
    Fdatasync,
    /// Encoding the reply frame.
    Encode,
    /// Writing the reply to the socket.
    SocketWrite,
}

impl Stage {
    pub const ALL: [Stage; 11] = [
        Stage::FrameRead,
        Stage::Decode,
        Stage::MeshRoundTrip,
        Stage::QueueWait,
        Stage::PartitionOp,
        Stage::IndexLookup,
        Stage::DeviceRead,
        Stage::Flush,
        Stage::Fdatasync,
        Stage::Encode,
        Stage::SocketWrite,
    ];

    /// The stage's name in the Metrics API and the Prometheus `stage` label.
    pub fn name(self) -> &'static str {
        match self {
            Stage::FrameRead => "frame_read",
            Stage::Decode => "decode",
            Stage::MeshRoundTrip => "mesh_round_trip",
            Stage::QueueWait => "queue_wait",
            Stage::PartitionOp => "partition_op",
            Stage::IndexLookup => "index_lookup",
            Stage::DeviceRead => "device_read",
            Stage::Flush => "flush",
            Stage::Fdatasync => "fdatasync",
            Stage::Encode => "encode",
            Stage::SocketWrite => "socket_write",
        }
    }
}

/// A shard's live metrics (one per executor thread).
pub struct ShardMetrics {
    stages: Vec<Distribution>,
    apis: Vec<ApiStats>,
    /// Commands a partition task ran per group (group commit sizes).
    group_commit: Distribution,
    recovery_truncations: u64,
    /// SASL logins that succeeded on this shard's connections.
    authentications: u64,
    cleaner_runs: u64,
    cleaner_bytes_removed: u64,
    /// Writes of reply frames (each carries one or more replies).
    reply_writes: u64,
    remote: snapshot::RemoteCounters,
    open_segments: u64,
    /// ISR changes written by this shard's leaderships: (shrinks, expands).
    isr_changes: (u64, u64),
    /// How far behind their leader on this shard followers are, as of its last tick.
    follower_lags: Vec<FollowerLag>,
}

impl ShardMetrics {
    fn new() -> Self {
        ShardMetrics {
            stages: Stage::ALL.iter().map(|_| Distribution::latency()).collect(),
            apis: Vec::new(),
            group_commit: Distribution::count(),
            recovery_truncations: 0,
            authentications: 0,
            cleaner_runs: 0,
            cleaner_bytes_removed: 0,
            reply_writes: 0,
            remote: Default::default(),
            open_segments: 0,
            isr_changes: (0, 0),
            follower_lags: Vec::new(),
        }
    }

    fn api(&mut self, wire: &'static str, api: &'static str) -> &mut ApiStats {
        let at = match self
            .apis
            .iter()
            .position(|a| a.wire == wire && a.api == api)
        {
            Some(at) => at,
            None => {
                self.apis.push(ApiStats::new(wire, api));
                self.apis.len() - 1
            }
        };
        &mut self.apis[at]
    }
}

thread_local! {
    static SHARD: RefCell<ShardMetrics> = RefCell::new(ShardMetrics::new());
    static LABELS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// More API names than both protocols have (Kafka's ~70, the native ~40).
const MAX_API_LABELS: usize = 256;

/// A `'static` label for an API name, interned once per thread. Only names of APIs that
/// decoded get here (a few dozen at most), so the interned set stays small.
pub fn api_label(name: impl std::fmt::Debug) -> &'static str {
    // Formatted on the stack (a longer name spills): no allocation once interned.
    let mut spelled = smallvec::SmallVec::<[u8; 64]>::new();
    std::io::Write::write_fmt(&mut spelled, format_args!("{name:?}")).expect("into memory");
    intern(std::str::from_utf8(&spelled).expect("formatted text is UTF-8"))
}

fn intern(name: &str) -> &'static str {
    LABELS.with(|l| {
        let mut l = l.borrow_mut();
        match l.iter().find(|x| **x == name) {
            Some(x) => x,
            None => {
                // Leaked once per name: the names are API names, a bounded set, never
                // anything a client chose (an unbounded set would leak without end).
                assert!(
                    l.len() < MAX_API_LABELS,
                    "API label {name:?} past the bound"
                );
                let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
                l.push(leaked);
                leaked
            }
        }
    })
}

/// Records how long `stage` took.
pub fn record(stage: Stage, took: Duration) {
    SHARD.with(|m| m.borrow_mut().stages[stage as usize].record_duration(took));
}

/// Records `stage` as taking from `since` until now.
pub fn record_since(stage: Stage, since: Instant) {
    record(stage, since.elapsed());
}

/// Times a future as `stage`.
pub async fn timed<T>(stage: Stage, f: impl std::future::Future<Output = T>) -> T {
    let t0 = Instant::now();
    let out = f.await;
    record_since(stage, t0);
    out
}

/// One request answered: its API, whether it succeeded, its bytes and its time in the
/// server (frame read to reply written).
pub struct RequestDone {
    pub wire: &'static str,
    pub api: &'static str,
    pub ok: bool,
    pub bytes_in: usize,
    pub bytes_out: usize,
    pub took: Duration,
}

pub fn record_request(r: RequestDone) {
    SHARD.with(|m| {
        let mut m = m.borrow_mut();
        let a = m.api(r.wire, r.api);
        a.requests += 1;
        a.errors += u64::from(!r.ok);
        a.bytes_in += r.bytes_in as u64;
        a.bytes_out += r.bytes_out as u64;
        a.latency.record_duration(r.took);
        assert!(a.errors <= a.requests, "more failed requests than requests");
    });
}

/// A partition task ran `commands` commands as one group.
pub fn record_group_commit(commands: usize) {
    SHARD.with(|m| m.borrow_mut().group_commit.record(commands as u64));
}

/// Recovery truncated a segment's torn or corrupt tail.
pub fn record_recovery_truncation() {
    SHARD.with(|m| m.borrow_mut().recovery_truncations += 1);
}

/// A connection's SASL login succeeded (either protocol, first login or re-authentication).
pub fn record_authentication() {
    SHARD.with(|m| m.borrow_mut().authentications += 1);
}

/// A compaction run committed, removing `bytes`.
pub fn record_cleaning(bytes: u64) {
    SHARD.with(|m| {
        let mut m = m.borrow_mut();
        m.cleaner_runs += 1;
        m.cleaner_bytes_removed += bytes;
    });
}

/// A connection wrote its ready replies in one write.
pub fn record_reply_write() {
    SHARD.with(|m| m.borrow_mut().reply_writes += 1);
}

/// Tiered storage: what happened on this shard (segments copied, failed passes, reads).
pub fn record_remote(f: impl FnOnce(&mut snapshot::RemoteCounters)) {
    SHARD.with(|m| f(&mut m.borrow_mut().remote));
}

/// A leader on this shard wrote an ISR change (a shrink, or an expansion).
pub fn record_isr_change(shrink: bool) {
    SHARD.with(|m| {
        let changes = &mut m.borrow_mut().isr_changes;
        match shrink {
            true => changes.0 += 1,
            false => changes.1 += 1,
        }
    });
}

/// How far behind the followers of this shard's leaderships are now (replacing the last
/// tick's: a partition no longer led here leaves the list).
pub fn set_follower_lags(lags: Vec<FollowerLag>) {
    SHARD.with(|m| m.borrow_mut().follower_lags = lags);
}

/// The ISR changes this shard's leaderships wrote: (shrinks, expands).
pub fn isr_changes() -> (u64, u64) {
    SHARD.with(|m| m.borrow().isr_changes)
}

/// Held by every open segment: the shard's open-segment gauge counts them.
#[derive(Debug)]
pub struct OpenSegment(());

impl OpenSegment {
    pub fn new() -> Self {
        SHARD.with(|m| m.borrow_mut().open_segments += 1);
        OpenSegment(())
    }
}

impl Default for OpenSegment {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for OpenSegment {
    fn drop(&mut self) {
        // A thread being torn down may have dropped its metrics already.
        let _ = SHARD.try_with(|m| {
            let mut m = m.borrow_mut();
            m.open_segments = m.open_segments.saturating_sub(1);
        });
    }
}

/// This thread's metrics now, with the gauges the caller knows.
pub fn snapshot(shard: usize, gauges: Gauges) -> MetricsSnapshot {
    SHARD.with(|m| {
        let m = m.borrow();
        MetricsSnapshot {
            shards: 1,
            shard,
            stages: Stage::ALL
                .iter()
                .map(|s| NamedDistribution {
                    name: s.name().to_string(),
                    dist: m.stages[*s as usize].clone(),
                })
                .collect(),
            apis: m.apis.clone(),
            group_commit: m.group_commit.clone(),
            recovery_truncations: m.recovery_truncations,
            authentications: m.authentications,
            cleaner_runs: m.cleaner_runs,
            cleaner_bytes_removed: m.cleaner_bytes_removed,
            reply_writes: m.reply_writes,
            remote: m.remote,
            open_segments: m.open_segments,
            follower_lags: m.follower_lags.clone(),
            gauges,
        }
    })
}
