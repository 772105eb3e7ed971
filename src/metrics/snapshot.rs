//! What a shard's metrics look like when read: [`MetricsSnapshot`] (one shard, structured:
//! the Prometheus endpoint labels it by shard) and [`MetricsReport`] (flat named values,
//! merged over shards: the native Metrics API, where a client subtracts two reports).

use super::Distribution;

/// Requests of one API on one wire protocol.
#[derive(Debug, Clone)]
pub struct ApiStats {
    pub wire: &'static str,
    pub api: &'static str,
    pub requests: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Frame read to reply written, in nanoseconds.
    pub latency: Distribution,
}

impl ApiStats {
    pub fn new(wire: &'static str, api: &'static str) -> Self {
        ApiStats {
            wire,
            api,
            requests: 0,
            errors: 0,
            bytes_in: 0,
            bytes_out: 0,
            latency: Distribution::latency(),
        }
    }
}

/// Values of a shard at the moment of the snapshot, known to the shard rather than recorded.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    pub open_partitions: u64,
    pub open_fds: u64,
    pub connections: u64,
    pub device_reads: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_bytes: u64,
    pub cache_budget_bytes: u64,
    /// Bytes read ahead of sequential readers into the page cache.
    pub read_ahead_bytes: u64,
    pub inflight_budget_used_bytes: u64,
    /// Tasks alive on the shard's thread.
    pub tasks: u64,
    /// Long polls registered on the shard's partitions.
    pub append_waiters: u64,
    /// The process's live heap (reported by shard 0 only, so sums stay right).
    pub heap_live_bytes: u64,
    pub heap_live_blocks: u64,
    /// Heap blocks the process allocated since it started (shard 0 only).
    pub heap_allocations: u64,
    /// Tiered storage: bytes of local segments not yet copied to the bucket.
    pub remote_upload_lag_bytes: u64,
    /// Tiered storage: the remote chunk cache's lookups and size.
    pub remote_cache_hits: u64,
    pub remote_cache_misses: u64,
    pub remote_cache_bytes: u64,
    /// Cluster mode: what operators alert on (`replication`).
    pub replication: ReplicationGauges,
}

/// Cluster mode's values, modelled on Kafka's JMX ones: the partitions this shard leads
/// with fewer in-sync replicas than replicas or than min.insync.replicas, and (shard 0
/// only, so sums stay right) the node's view of the controller and its elections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplicationGauges {
    pub under_replicated_partitions: u64,
    pub under_min_isr_partitions: u64,
    /// On the controller: partitions without a live leader.
    pub offline_partitions: u64,
    /// 1 on the controller.
    pub active_controller: u64,
    /// Times this node saw another controller (or another controller epoch).
    pub controller_changes: u64,
    /// Leaders this node elected as controller (a dead, leaving, preferred or asked-for
    /// one), and those of them outside the ISR (asked for: ElectLeaders UNCLEAN).
    pub leader_elections: u64,
    pub unclean_leader_elections: u64,
    /// ISR changes written by the leaderships of this shard.
    pub isr_shrinks: u64,
    pub isr_expands: u64,
    /// Partitions led here with a reassignment under way (Kafka's ReassigningPartitions).
    pub reassigning_partitions: u64,
}

#[derive(Debug, Clone)]
pub struct NamedDistribution {
    pub name: String,
    pub dist: Distribution,
}

/// One shard's metrics.
#[derive(Debug, Clone)]
pub struct MetricsSnapshot {
    pub shards: usize,
    pub shard: usize,
    pub stages: Vec<NamedDistribution>,
    pub apis: Vec<ApiStats>,
    pub group_commit: Distribution,
    pub recovery_truncations: u64,
    /// SASL logins that succeeded.
    pub authentications: u64,
    pub cleaner_runs: u64,
    pub cleaner_bytes_removed: u64,
    /// Writes of reply frames; requests answered over it is replies per write.
    pub reply_writes: u64,
    /// Tiered storage: bytes and segments copied to the bucket, failed passes, remote reads.
    pub remote: RemoteCounters,
    /// Segments open on the shard now.
    pub open_segments: u64,
    /// Cluster mode: the followers of this shard's leaderships, how far behind.
    pub follower_lags: Vec<FollowerLag>,
    pub gauges: Gauges,
}

/// One follower of one partition led here, as of the leader's last tick (every second).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerLag {
    pub topic: String,
    pub partition: i32,
    pub follower: i32,
    /// Records behind the leader's log end.
    pub records: i64,
    /// Milliseconds since it was last caught up.
    pub ms: i64,
    /// The follower is a replica a reassignment adds (its lag is the move's progress).
    pub adding: bool,
}

/// Tiered storage's counters on one shard.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoteCounters {
    pub uploaded_bytes: u64,
    pub uploaded_segments: u64,
    pub failed_passes: u64,
    pub reads: u64,
    /// Remote segments opened for reads (their indexes read and checked); reads that found
    /// one open already do not count.
    pub segment_opens: u64,
    /// Passes that found a partition's manifest gone while its segments are in the bucket.
    pub manifest_missing: u64,
}

/// Metrics as flat named values, summed over shards: `stage.<stage>`,
/// `api.<wire>.<api>` (latency) and `group_commit.commands` distributions; counters and
/// gauges by name.
#[derive(Debug, Clone, Default)]
pub struct MetricsReport {
    pub shards: usize,
    pub distributions: Vec<NamedDistribution>,
    pub values: Vec<(String, u64)>,
}

impl MetricsSnapshot {
    pub fn to_report(&self) -> MetricsReport {
        let mut distributions: Vec<NamedDistribution> = self
            .stages
            .iter()
            .map(|s| NamedDistribution {
                name: format!("stage.{}", s.name),
                dist: s.dist.clone(),
            })
            .collect();
        let mut values = Vec::new();
        for a in &self.apis {
            let key = format!("api.{}.{}", a.wire, a.api);
            distributions.push(NamedDistribution {
                name: key.clone(),
                dist: a.latency.clone(),
            });
            values.push((format!("{key}.requests"), a.requests));
            values.push((format!("{key}.errors"), a.errors));
            values.push((format!("{key}.bytes_in"), a.bytes_in));
            values.push((format!("{key}.bytes_out"), a.bytes_out));
        }
        distributions.push(NamedDistribution {
            name: "group_commit.commands".into(),
            dist: self.group_commit.clone(),
        });
        values.extend(
            SHARD_VALUES
                .iter()
                .map(|v| (v.name.to_string(), (v.get)(self))),
        );
        assert_eq!(
            values.len(),
            self.apis.len() * 4 + SHARD_VALUES.len(),
            "one value per API counter and per shard value"
        );
        MetricsReport {
            shards: self.shards,
            distributions,
            values,
        }
    }
}

/// The Metrics API's one process-wide value: CPU milliseconds of every thread of the
/// server since it started (a counter, added once after the shards are merged).
pub const PROCESS_CPU_MS: &str = "process_cpu_ms";

/// Whether a value counts since start or is a level now.
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    Counter,
    Gauge,
}

/// A per-shard value: its name (in the Metrics API; `shardlog_<name>` in Prometheus), kind,
/// how to read it from a snapshot, and help text.
pub struct ShardValue {
    pub name: &'static str,
    pub kind: Kind,
    pub get: fn(&MetricsSnapshot) -> u64,
    pub help: &'static str,
}

/// Every per-shard value, one row each: the one list the Metrics API, `since` and the
/// Prometheus endpoint read.
pub const SHARD_VALUES: [ShardValue; 43] = [
    ShardValue {
        name: "device_reads",
        kind: Kind::Counter,
        get: |s| s.gauges.device_reads,
        help: "Reads submitted to the device (each at most 1 MiB).",
    },
    ShardValue {
        name: "cache_hits",
        kind: Kind::Counter,
        get: |s| s.gauges.cache_hits,
        help: "4 KiB pages that reads found in the page cache.",
    },
    ShardValue {
        name: "cache_misses",
        kind: Kind::Counter,
        get: |s| s.gauges.cache_misses,
        help: "4 KiB pages that reads had to fetch from the device.",
    },
    ShardValue {
        name: "cache_bytes",
        kind: Kind::Gauge,
        get: |s| s.gauges.cache_bytes,
        help: "Bytes held by the page cache.",
    },
    ShardValue {
        name: "cache_budget_bytes",
        kind: Kind::Gauge,
        get: |s| s.gauges.cache_budget_bytes,
        help: "The page cache's budget.",
    },
    ShardValue {
        name: "read_ahead_bytes",
        kind: Kind::Counter,
        get: |s| s.gauges.read_ahead_bytes,
        help: "Bytes read ahead of sequential consumers into the page cache.",
    },
    ShardValue {
        name: "open_partitions",
        kind: Kind::Gauge,
        get: |s| s.gauges.open_partitions,
        help: "Partitions this shard owns and has open.",
    },
    ShardValue {
        name: "open_segments",
        kind: Kind::Gauge,
        get: |s| s.open_segments,
        help: "Segments of the open partitions.",
    },
    ShardValue {
        name: "open_fds",
        kind: Kind::Gauge,
        get: |s| s.gauges.open_fds,
        help: "File descriptors the process has open (reported by shard 0).",
    },
    ShardValue {
        name: "connections",
        kind: Kind::Gauge,
        get: |s| s.gauges.connections,
        help: "Client connections served by this shard.",
    },
    ShardValue {
        name: "inflight_budget_used_bytes",
        kind: Kind::Gauge,
        get: |s| s.gauges.inflight_budget_used_bytes,
        help: "Request and reply bytes held against the shard's budget.",
    },
    ShardValue {
        name: "tasks",
        kind: Kind::Gauge,
        get: |s| s.gauges.tasks,
        help: "Tasks alive on the shard (requests, partition tasks, waits).",
    },
    ShardValue {
        name: "append_waiters",
        kind: Kind::Gauge,
        get: |s| s.gauges.append_waiters,
        help: "Long-poll fetches waiting for an append to one of the shard's partitions.",
    },
    ShardValue {
        name: "heap_live_bytes",
        kind: Kind::Gauge,
        get: |s| s.gauges.heap_live_bytes,
        help: "Heap bytes the process holds, counted by its allocator (reported by shard 0).",
    },
    ShardValue {
        name: "heap_live_blocks",
        kind: Kind::Gauge,
        get: |s| s.gauges.heap_live_blocks,
        help: "Heap blocks the process holds (reported by shard 0).",
    },
    ShardValue {
        name: "heap_allocations",
        kind: Kind::Counter,
        get: |s| s.gauges.heap_allocations,
        help: "Heap blocks the process allocated since it started (reported by shard 0).",
    },
    ShardValue {
        name: "recovery_truncations",
        kind: Kind::Counter,
        get: |s| s.recovery_truncations,
        help: "Segment tails truncated by crash recovery at start.",
    },
    ShardValue {
        name: "successful_authentications",
        kind: Kind::Counter,
        get: |s| s.authentications,
        help: "SASL logins that succeeded, first ones and re-authentications (Kafka's successful-authentication-total).",
    },
    ShardValue {
        name: "cleaner_runs",
        kind: Kind::Counter,
        get: |s| s.cleaner_runs,
        help: "Compaction runs committed.",
    },
    ShardValue {
        name: "cleaner_bytes_removed",
        kind: Kind::Counter,
        get: |s| s.cleaner_bytes_removed,
        help: "Bytes compaction removed.",
    },
    ShardValue {
        name: "reply_writes",
        kind: Kind::Counter,
        get: |s| s.reply_writes,
        help: "Socket writes of replies; replies ready together share one.",
    },
    ShardValue {
        name: "remote_uploaded_bytes",
        kind: Kind::Counter,
        get: |s| s.remote.uploaded_bytes,
        help: "Tiered storage: bytes of segment files copied to the object store.",
    },
    ShardValue {
        name: "remote_uploaded_segments",
        kind: Kind::Counter,
        get: |s| s.remote.uploaded_segments,
        help: "Tiered storage: segments committed to the remote tier.",
    },
    ShardValue {
        name: "remote_failed_passes",
        kind: Kind::Counter,
        get: |s| s.remote.failed_passes,
        help: "Tiered storage: upload or retention passes that failed (retried with backoff).",
    },
    ShardValue {
        name: "remote_manifest_missing",
        kind: Kind::Counter,
        get: |s| s.remote.manifest_missing,
        help: "Tiered storage: passes that found a partition's manifest missing or unreadable while its segment objects are in the bucket; its uploads and remote retention are stopped (alert on any increase).",
    },
    ShardValue {
        name: "remote_reads",
        kind: Kind::Counter,
        get: |s| s.remote.reads,
        help: "Tiered storage: fetches and lookups served from the remote tier.",
    },
    ShardValue {
        name: "remote_segment_opens",
        kind: Kind::Counter,
        get: |s| s.remote.segment_opens,
        help: "Tiered storage: remote segments opened for reads (indexes read and checked); a reader walking one segment opens it once.",
    },
    ShardValue {
        name: "remote_upload_lag_bytes",
        kind: Kind::Gauge,
        get: |s| s.gauges.remote_upload_lag_bytes,
        help: "Tiered storage: bytes of local segments not yet in the remote tier.",
    },
    ShardValue {
        name: "remote_cache_hits",
        kind: Kind::Counter,
        get: |s| s.gauges.remote_cache_hits,
        help: "Tiered storage: remote chunk and index lookups served from the cache.",
    },
    ShardValue {
        name: "remote_cache_misses",
        kind: Kind::Counter,
        get: |s| s.gauges.remote_cache_misses,
        help: "Tiered storage: remote chunk and index lookups that went to the store.",
    },
    ShardValue {
        name: "remote_cache_bytes",
        kind: Kind::Gauge,
        get: |s| s.gauges.remote_cache_bytes,
        help: "Tiered storage: bytes held by the remote chunk cache.",
    },
    ShardValue {
        name: "under_replicated_partitions",
        kind: Kind::Gauge,
        get: |s| s.gauges.replication.under_replicated_partitions,
        help: "Cluster mode: partitions led here with fewer in-sync replicas than replicas (Kafka's UnderReplicatedPartitions).",
    },
    ShardValue {
        name: "under_min_isr_partitions",
        kind: Kind::Gauge,
        get: |s| s.gauges.replication.under_min_isr_partitions,
        help: "Cluster mode: partitions led here with fewer in-sync replicas than min.insync.replicas (UnderMinIsrPartitionCount).",
    },
    ShardValue {
        name: "offline_partitions",
        kind: Kind::Gauge,
        get: |s| s.gauges.replication.offline_partitions,
        help: "Cluster mode, on the controller: partitions without a live leader (OfflinePartitionsCount).",
    },
    ShardValue {
        name: "active_controller",
        kind: Kind::Gauge,
        get: |s| s.gauges.replication.active_controller,
        help: "Cluster mode: 1 on the controller (ActiveControllerCount).",
    },
    ShardValue {
        name: "controller_changes",
        kind: Kind::Counter,
        get: |s| s.gauges.replication.controller_changes,
        help: "Cluster mode: times this node saw a new controller or controller epoch.",
    },
    ShardValue {
        name: "leader_elections",
        kind: Kind::Counter,
        get: |s| s.gauges.replication.leader_elections,
        help: "Cluster mode: leaders this node elected as controller (LeaderElectionRateAndTimeMs's count).",
    },
    ShardValue {
        name: "unclean_leader_elections",
        kind: Kind::Counter,
        get: |s| s.gauges.replication.unclean_leader_elections,
        help: "Cluster mode: leaders elected outside the ISR, only when asked (UncleanLeaderElectionsPerSec's count).",
    },
    ShardValue {
        name: "isr_shrinks",
        kind: Kind::Counter,
        get: |s| s.gauges.replication.isr_shrinks,
        help: "Cluster mode: ISR shrinks written by leaders on this shard (IsrShrinksPerSec's count).",
    },
    ShardValue {
        name: "replica_lag_records",
        kind: Kind::Gauge,
        get: |s| s.follower_lags.iter().map(|l| l.records.max(0) as u64).sum(),
        help: "Cluster mode: records the followers of this shard's leaderships are behind, summed (per partition: follower_lag_records).",
    },
    ShardValue {
        name: "reassigning_partitions",
        kind: Kind::Gauge,
        get: |s| s.gauges.replication.reassigning_partitions,
        help: "Cluster mode: partitions led here with a reassignment under way (Kafka's ReassigningPartitions).",
    },
    ShardValue {
        name: "reassignment_lag_records",
        kind: Kind::Gauge,
        get: |s| (s.follower_lags.iter().filter(|l| l.adding)).map(|l| l.records.max(0) as u64).sum(),
        help: "Cluster mode: records the replicas being added by reassignments of this shard's leaderships are behind, summed: a move's progress, 0 once they caught up.",
    },
    ShardValue {
        name: "isr_expands",
        kind: Kind::Counter,
        get: |s| s.gauges.replication.isr_expands,
        help: "Cluster mode: ISR expansions written by leaders on this shard (IsrExpandsPerSec's count).",
    },
];

impl MetricsReport {
    /// Adds another shard's report: same names are summed, new names appended.
    pub fn merge(&mut self, other: &MetricsReport) {
        self.shards += other.shards;
        for d in &other.distributions {
            match self.distributions.iter_mut().find(|x| x.name == d.name) {
                Some(x) => x.dist.add(&d.dist),
                None => self.distributions.push(d.clone()),
            }
        }
        for (k, v) in &other.values {
            match self.values.iter_mut().find(|x| &x.0 == k) {
                Some(x) => x.1 += v,
                None => self.values.push((k.clone(), *v)),
            }
        }
    }

    /// What happened between `earlier` and this report (counters and distributions; gauges
    /// are taken as they are now).
    pub fn since(&self, earlier: &MetricsReport) -> MetricsReport {
        let distributions = self
            .distributions
            .iter()
            .map(|d| NamedDistribution {
                name: d.name.clone(),
                dist: match earlier.distribution(&d.name) {
                    Some(e) => d.dist.since(e),
                    None => d.dist.clone(),
                },
            })
            .collect();
        let values = self
            .values
            .iter()
            .map(|(k, v)| match is_gauge(k) {
                true => (k.clone(), *v),
                false => (k.clone(), v.saturating_sub(earlier.value(k).unwrap_or(0))),
            })
            .collect();
        MetricsReport {
            shards: self.shards,
            distributions,
            values,
        }
    }

    pub fn distribution(&self, name: &str) -> Option<&Distribution> {
        self.distributions
            .iter()
            .find(|d| d.name == name)
            .map(|d| &d.dist)
    }

    pub fn value(&self, name: &str) -> Option<u64> {
        self.values.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// Whether `name` is a level now (kept as it is by `since`), not a count since start.
fn is_gauge(name: &str) -> bool {
    SHARD_VALUES
        .iter()
        .any(|v| v.name == name && v.kind == Kind::Gauge)
}
