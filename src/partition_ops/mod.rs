//! What one partition is asked and what it answers, by whoever reaches it: the shard
//! that owns it (its task runs them), another shard over the mesh, and the remote tier
//! that serves a tiered partition's reads below its local log (`remote/tiered_ops.rs`).
//! Everything here is `Send`: it crosses cores by value; nothing is shared.

pub mod replica;

use bytes::Bytes;

use crate::broker_error::BrokerError;
use crate::config::LogConfig;
use crate::io::chain::ByteChain;

/// An operation on one partition, executed by its owner shard.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PartitionOp {
    Produce {
        acks: i16,
        records: Bytes,
        /// A producer's transactional batches, verified by its transaction coordinator.
        transactional: bool,
    },
    /// The producers the partition remembers.
    DescribeProducers,
    /// A batch of a producer's transaction written by a coordinator (offsets sent inside a
    /// transaction), made durable before the reply.
    CoordinatorAppend {
        records: Bytes,
    },
    /// The marker ending a producer's transaction (the transaction coordinator's), made
    /// durable before the reply.
    WriteMarker {
        producer_id: i64,
        epoch: i16,
        marker: crate::format::control::EndTxnMarker,
    },
    Fetch {
        offset: i64,
        max_bytes: usize,
        /// Return the first batch even when larger than `max_bytes` (Kafka's rule for the
        /// first partition of a fetch); otherwise `max_bytes` is strict.
        at_least_one: bool,
        isolation: Isolation,
    },
    ListOffsets {
        timestamp: i64,
        isolation: Isolation,
    },
    /// ListOffsets, then a Fetch at the offset found, in one turn of the partition's task.
    FetchAtTime {
        timestamp: i64,
        max_bytes: usize,
    },
    DropOsCaches,
    /// DeleteRecords: move the log start offset to `offset` (-1: the log end).
    DeleteRecords {
        offset: i64,
    },
    /// Roll the active segment if it holds anything.
    Roll,
    /// Offsets, size and segments of the partition.
    Describe,
    /// Apply an altered topic config without a restart.
    SetConfig(LogConfig),
    /// Run retention and a forced cleaning pass now.
    Maintain,
    /// Rebuild the partition's lost remote manifest from its segment objects.
    RebuildManifest,
    /// Replication's part (cluster mode): leader and follower steps on the partition's task.
    Replica(replica::ReplicaOp),
}

impl PartitionOp {
    /// Whether the op is on the data path (produce, fetch, lookup): only those are timed
    /// in the stage metrics, so admin and observability traffic does not blur them.
    pub fn is_data_path(&self) -> bool {
        matches!(
            self,
            PartitionOp::Produce { .. }
                | PartitionOp::Fetch { .. }
                | PartitionOp::ListOffsets { .. }
                | PartitionOp::FetchAtTime { .. }
        )
    }
}

impl PartitionOp {
    /// A client's produce (never transactional: those come through their coordinator's
    /// check).
    pub fn produce(acks: i16, records: Bytes) -> PartitionOp {
        PartitionOp::Produce {
            acks,
            records,
            transactional: false,
        }
    }
}

/// What a fetch may read (Kafka's isolation_level): up to the high watermark, or up to the
/// last stable offset with the aborted transactions the records overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
    /// A coordinator loading its internal partition: to the acknowledged log end, past the
    /// high watermark (Kafka's FetchLogEnd), and of a replicated partition only on its
    /// leader, whose log holds every acknowledged record.
    LogEnd,
}

impl Isolation {
    /// Kafka's isolation_level (Fetch v4+, ListOffsets v2+): 1 is read_committed.
    pub fn from_kafka(level: i8) -> Isolation {
        match level {
            1 => Isolation::ReadCommitted,
            _ => Isolation::ReadUncommitted,
        }
    }
}

/// Successful outcomes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum OpOk {
    Produced {
        base_offset: i64,
        last_offset: i64,
        log_append_time: i64,
        log_start_offset: i64,
    },
    Fetched {
        log_start_offset: i64,
        log_end_offset: i64,
        last_stable_offset: i64,
        /// read_committed: (producer id, first offset) of the aborted transactions the
        /// records overlap; empty otherwise.
        aborted: Vec<(i64, i64)>,
        records: ByteChain,
    },
    Offset {
        offset: i64,
        timestamp: i64,
    },
    /// FetchAtTime: the record found (-1, -1: none) and the batches from it.
    FetchedAtTime {
        offset: i64,
        timestamp: i64,
        log_start_offset: i64,
        log_end_offset: i64,
        records: ByteChain,
    },
    Stats(ShardStats),
    /// One shard's metrics (boxed: histograms are large).
    Metrics(Box<crate::metrics::MetricsSnapshot>),
    /// The log start offset after DeleteRecords (Kafka's low watermark).
    LowWatermark(i64),
    Partition(PartitionSummary),
    Maintained(MaintenanceSummary),
    ManifestRebuilt(Rebuilt),
    Producers(Vec<crate::log::producer_state::ActiveProducer>),
    /// A service's answer to its `ShardOp::Service` call.
    Service(crate::service::Reply),
    /// One result per op of a request on several partitions (`ShardOp::Partitions`), in
    /// order.
    Results(Vec<OpResult>),
    /// What a replication step did.
    Replica(replica::ReplicaReply),
    Done,
}

impl OpOk {
    /// A produce's answer for the batches `append` wrote to a log that now starts at
    /// `log_start` and ends at `log_end`: its offsets are in order and below the end (a
    /// duplicate of an idempotent producer's batch answers its first offsets, lower down).
    pub fn produced(append: &crate::log::AppendInfo, log_start: i64, log_end: i64) -> OpOk {
        assert!(append.base_offset >= 0, "offset {}", append.base_offset);
        assert!(append.base_offset <= append.last_offset, "{append:?}");
        assert!(
            append.last_offset < log_end,
            "{append:?} past the end {log_end}"
        );
        OpOk::Produced {
            base_offset: append.base_offset,
            last_offset: append.last_offset,
            log_append_time: append.log_append_time.unwrap_or(-1),
            log_start_offset: log_start,
        }
    }
}

/// A partition as `topics describe` and `log-dirs` show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionSummary {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub size_bytes: u64,
    pub segments: u32,
    pub last_stable_offset: i64,
    pub cleaner: crate::protocol::CleanerInfo,
    pub remote: crate::protocol::RemoteLogInfo,
}

/// What retention and cleaning did (summed over partitions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintenanceSummary {
    pub segments_deleted: u64,
    pub bytes_deleted: u64,
    pub records_removed: u64,
}

impl MaintenanceSummary {
    pub fn add(&mut self, o: &MaintenanceSummary) {
        self.segments_deleted += o.segments_deleted;
        self.bytes_deleted += o.bytes_deleted;
        self.records_removed += o.records_removed;
    }
}

/// Counters of one shard (summed over shards in replies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardStats {
    pub device_reads: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_bytes: u64,
    pub cache_budget_bytes: u64,
}

impl ShardStats {
    pub fn add(&mut self, o: &ShardStats) {
        self.device_reads += o.device_reads;
        self.cache_hits += o.cache_hits;
        self.cache_misses += o.cache_misses;
        self.cache_bytes += o.cache_bytes;
        self.cache_budget_bytes += o.cache_budget_bytes;
    }
}

pub type OpResult = Result<OpOk, BrokerError>;

/// What rebuilding a lost remote manifest from the bucket's segment objects wrote, and what
/// the operator should know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    pub segments: usize,
    pub log_start_offset: i64,
    /// The offset after the last remote segment (-1 when none was sound).
    pub next_offset: i64,
    pub notes: Vec<String>,
}
