//! Per-partition log configuration (Kafka's topic-level names), validated in one place.
//! Every topic-level key is one row of [`TOPIC_KEYS`]: its name, how to read it from a
//! config and how to set it from text, so no key can be listed in one place and missed in
//! another.

use crate::error::{Error, Result};
use crate::format::compression::Codec;
use crate::format::TimestampType;

/// max.message.bytes when neither the topic nor the broker sets it: the largest frame a
/// client may send by default (`max.frame.bytes`), so batches any client could always send
/// stay accepted. Kafka's default is 1048588; set `message.max.bytes` for Kafka's limit.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 16 << 20;

/// compression.type: batches are stored as the producer compressed them, or recompressed
/// to one codec (Kafka's broker-side compression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TopicCompression {
    Producer,
    Codec(Codec),
}

impl TopicCompression {
    /// Kafka's names: producer, uncompressed, gzip, snappy, lz4, zstd.
    pub fn parse(v: &str) -> Option<Self> {
        match v {
            "producer" => Some(TopicCompression::Producer),
            "uncompressed" => Some(TopicCompression::Codec(Codec::None)),
            "none" => None,
            name => Codec::from_name(name).map(TopicCompression::Codec),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TopicCompression::Producer => "producer",
            TopicCompression::Codec(Codec::None) => "uncompressed",
            TopicCompression::Codec(c) => c.name(),
        }
    }
}

/// Kafka's smallest allowed segment.bytes (one empty batch header fits).
pub const MIN_SEGMENT_BYTES: u64 = 14;

/// cleanup.policy: what happens to old data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CleanupPolicy {
    Delete,
    Compact,
    CompactDelete,
}

impl CleanupPolicy {
    pub fn parse(v: &str) -> Option<Self> {
        let mut parts: Vec<&str> = v.split(',').map(str::trim).collect();
        parts.sort_unstable();
        parts.dedup();
        match parts.as_slice() {
            ["delete"] => Some(CleanupPolicy::Delete),
            ["compact"] => Some(CleanupPolicy::Compact),
            ["compact", "delete"] => Some(CleanupPolicy::CompactDelete),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }

    /// Retention by time and size applies.
    pub fn deletes(self) -> bool {
        self != CleanupPolicy::Compact
    }

    /// The cleaner keeps the latest record per key.
    pub fn compacts(self) -> bool {
        self != CleanupPolicy::Delete
    }
}

/// Topic-level settings that shape a partition's log. Defaults are Kafka's.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// segment.bytes: roll when the next batch would not fit.
    pub segment_bytes: u64,
    /// segment.ms: roll when the incoming batch is this much newer than the segment's first.
    pub segment_ms: i64,
    /// index.interval.bytes: bytes between sparse index entries (strictly more than this).
    pub index_interval_bytes: u64,
    /// segment.index.bytes: maximum size of each index file (sets the entry capacity).
    pub segment_index_bytes: u64,
    /// message.timestamp.type.
    pub timestamp_type: TimestampType,
    /// Wall-clock time a segment must have been active before segment.ms may roll it. Record
    /// timestamps are client-controlled: without this, timestamps leaping past segment.ms
    /// would roll (and fdatasync, and add files) on every produce. 0 (the engine default)
    /// is Kafka's rule exactly; the server sets `log.roll.min.interval.ms`. Not a topic key.
    pub min_time_roll_interval_ms: i64,
    /// retention.ms: delete segments whose newest record is older (-1: never).
    pub retention_ms: i64,
    /// retention.bytes: delete the oldest segments while the log is larger (-1: never).
    pub retention_bytes: i64,
    /// cleanup.policy.
    pub cleanup_policy: CleanupPolicy,
    /// delete.retention.ms: how long a tombstone survives after the cleaning that saw it.
    pub delete_retention_ms: i64,
    /// min.cleanable.dirty.ratio: clean when dirty / (clean + dirty) exceeds it.
    pub min_cleanable_dirty_ratio: f64,
    /// min.compaction.lag.ms: records younger than this are not cleaned.
    pub min_compaction_lag_ms: i64,
    /// max.compaction.lag.ms: a dirty record older than this makes the log cleanable
    /// whatever its dirty ratio.
    pub max_compaction_lag_ms: i64,
    /// file.delete.delay.ms: time between renaming a deleted segment to `.deleted` and
    /// removing its files.
    pub file_delete_delay_ms: i64,
    /// message.timestamp.before.max.ms: how far in the past (server clock) a CreateTime
    /// record's timestamp may be.
    pub timestamp_before_max_ms: i64,
    /// message.timestamp.after.max.ms: how far in the future a CreateTime timestamp may be.
    pub timestamp_after_max_ms: i64,
    /// remote.storage.enable: sealed segments are copied to the object store (tiered).
    pub remote_storage_enable: bool,
    /// local.retention.ms: how long a tiered log keeps a copied segment locally (-2: as
    /// retention.ms).
    pub local_retention_ms: i64,
    /// local.retention.bytes: local bytes a tiered log keeps (-2: as retention.bytes).
    pub local_retention_bytes: i64,
    /// max.message.bytes: the largest record batch a producer may append (after
    /// compression.type is applied); larger ones get MESSAGE_TOO_LARGE.
    pub max_message_bytes: u64,
    /// min.insync.replicas: an acks=all produce needs this many in-sync replicas; one node
    /// is one replica, so above 1 acks=all gets NOT_ENOUGH_REPLICAS, as Kafka with RF 1.
    pub min_insync_replicas: i64,
    /// compression.type.
    pub compression: TopicCompression,
    /// flush.messages: fdatasync once this many records were appended since the last one
    /// (besides every acks=all group commit and every roll).
    pub flush_messages: i64,
    /// flush.ms: fdatasync once the last one is this old when records are appended.
    pub flush_ms: i64,
    /// Kafka keys with no effect on one node, kept and described as set (docs/lifecycle.md lists
    /// them with the reason): preallocate, segment.jitter.ms,
    /// unclean.leader.election.enable, message.downconversion.enable,
    /// message.format.version.
    pub inert: Box<InertKeys>,
    /// leader/follower.replication.throttled.replicas: the replicas whose catching up is
    /// held to leader/follower.replication.throttled.rate (cluster mode).
    pub throttled: Box<ThrottledReplicas>,
}

/// Kafka's throttled-replicas lists of a topic: empty, `*`, or `partition:broker` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThrottledReplicas {
    /// Throttled where these replicas lead (leader.replication.throttled.replicas).
    pub leader: String,
    /// Throttled where these replicas follow (follower.replication.throttled.replicas).
    pub follower: String,
}

/// Whether a throttled-replicas list names `partition` on `broker` (`*`: every replica).
pub fn names_replica(list: &str, partition: i32, broker: i32) -> bool {
    let list = list.trim();
    let pair = |p: &str| {
        let parsed = p.trim().split_once(':');
        parsed.is_some_and(|(a, b)| a.parse() == Ok(partition) && b.parse() == Ok(broker))
    };
    list == "*" || (!list.is_empty() && list.split(',').any(pair))
}

/// Topic keys Kafka documents that change nothing on one shardlog node, validated as Kafka
/// does and kept so clients that set them (and read them back) work.
#[derive(Debug, Clone, PartialEq)]
pub struct InertKeys {
    /// Segments are always allocated ahead of their writes.
    pub preallocate: bool,
    /// Rolls by time are not jittered.
    pub segment_jitter_ms: i64,
    /// One replica: no leader election.
    pub unclean_leader_election_enable: bool,
    /// Only the v2 format is served: nothing is ever down-converted.
    pub message_downconversion_enable: bool,
    /// Deprecated in Kafka 3.0; only v2 batches are written.
    pub message_format_version: String,
}

impl Default for InertKeys {
    fn default() -> Self {
        InertKeys {
            preallocate: false,
            segment_jitter_ms: 0,
            unclean_leader_election_enable: false,
            message_downconversion_enable: true,
            message_format_version: "3.0-IV1".into(),
        }
    }
}

/// local.retention.*: the same as the total retention (Kafka's -2).
pub const SAME_AS_TOTAL: i64 = -2;

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 << 20,
            timestamp_type: TimestampType::CreateTime,
            min_time_roll_interval_ms: 0,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            cleanup_policy: CleanupPolicy::Delete,
            delete_retention_ms: 24 * 3600 * 1000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            remote_storage_enable: false,
            local_retention_ms: SAME_AS_TOTAL,
            local_retention_bytes: SAME_AS_TOTAL,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            min_insync_replicas: 1,
            compression: TopicCompression::Producer,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            inert: Box::default(),
            throttled: Box::default(),
        }
    }
}

/// One topic-level key: its Kafka name, how to print it, how to set it from text.
pub struct TopicKey {
    pub name: &'static str,
    pub get: fn(&LogConfig) -> String,
    /// Sets the key, or says why the text is not a value of it.
    pub set: fn(&mut LogConfig, &str) -> std::result::Result<(), &'static str>,
}

fn num<T: std::str::FromStr>(v: &str) -> std::result::Result<T, &'static str> {
    v.trim().parse().map_err(|_| "not a valid number")
}

fn boolean(v: &str) -> std::result::Result<bool, &'static str> {
    match v.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("use true or false"),
    }
}

/// Kafka's throttled-replicas list: empty, `*`, or `partition:broker` pairs.
fn replica_list(v: &str) -> std::result::Result<String, &'static str> {
    let v = v.trim();
    let pair = |p: &str| {
        p.trim()
            .split_once(':')
            .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
    };
    if v.is_empty() || v == "*" || v.split(',').all(pair) {
        Ok(v.to_string())
    } else {
        Err("use *, or partition:broker pairs separated by commas")
    }
}

macro_rules! inert_key {
    ($name:literal, $field:ident, $parse:expr) => {
        TopicKey {
            name: $name,
            get: |c| c.inert.$field.to_string(),
            set: |c, v| {
                c.inert.$field = $parse(v)?;
                Ok(())
            },
        }
    };
}

macro_rules! numeric_key {
    ($name:literal, $field:ident) => {
        TopicKey {
            name: $name,
            get: |c| c.$field.to_string(),
            set: |c, v| {
                c.$field = num(v)?;
                Ok(())
            },
        }
    };
}

/// Every topic-level key shardlog accepts, in the order `topics describe` prints them.
pub const TOPIC_KEYS: &[TopicKey] = &[
    numeric_key!("segment.bytes", segment_bytes),
    numeric_key!("segment.ms", segment_ms),
    numeric_key!("segment.index.bytes", segment_index_bytes),
    numeric_key!("index.interval.bytes", index_interval_bytes),
    TopicKey {
        name: "message.timestamp.type",
        get: |c| c.timestamp_type.name().to_string(),
        set: |c, v| {
            c.timestamp_type = match v {
                "CreateTime" => TimestampType::CreateTime,
                "LogAppendTime" => TimestampType::LogAppendTime,
                _ => return Err("use CreateTime or LogAppendTime"),
            };
            Ok(())
        },
    },
    numeric_key!("retention.ms", retention_ms),
    numeric_key!("retention.bytes", retention_bytes),
    TopicKey {
        name: "cleanup.policy",
        get: |c| c.cleanup_policy.name().to_string(),
        set: |c, v| {
            c.cleanup_policy =
                CleanupPolicy::parse(v).ok_or("use delete, compact or compact,delete")?;
            Ok(())
        },
    },
    numeric_key!("delete.retention.ms", delete_retention_ms),
    numeric_key!("min.cleanable.dirty.ratio", min_cleanable_dirty_ratio),
    numeric_key!("min.compaction.lag.ms", min_compaction_lag_ms),
    numeric_key!("max.compaction.lag.ms", max_compaction_lag_ms),
    numeric_key!("file.delete.delay.ms", file_delete_delay_ms),
    numeric_key!("message.timestamp.before.max.ms", timestamp_before_max_ms),
    numeric_key!("message.timestamp.after.max.ms", timestamp_after_max_ms),
    TopicKey {
        name: "remote.storage.enable",
        get: |c| c.remote_storage_enable.to_string(),
        set: |c, v| {
            c.remote_storage_enable = match v {
                "true" => true,
                "false" => false,
                _ => return Err("use true or false"),
            };
            Ok(())
        },
    },
    numeric_key!("local.retention.ms", local_retention_ms),
    numeric_key!("local.retention.bytes", local_retention_bytes),
    numeric_key!("max.message.bytes", max_message_bytes),
    numeric_key!("min.insync.replicas", min_insync_replicas),
    TopicKey {
        name: "compression.type",
        get: |c| c.compression.name().to_string(),
        set: |c, v| {
            c.compression = TopicCompression::parse(v.trim())
                .ok_or("use producer, uncompressed, gzip, snappy, lz4 or zstd")?;
            Ok(())
        },
    },
    numeric_key!("flush.messages", flush_messages),
    numeric_key!("flush.ms", flush_ms),
    inert_key!("preallocate", preallocate, boolean),
    inert_key!("segment.jitter.ms", segment_jitter_ms, num),
    inert_key!(
        "unclean.leader.election.enable",
        unclean_leader_election_enable,
        boolean
    ),
    inert_key!(
        "message.downconversion.enable",
        message_downconversion_enable,
        boolean
    ),
    inert_key!(
        "message.format.version",
        message_format_version,
        |v: &str| { Ok::<_, &'static str>(v.trim().to_string()) }
    ),
    TopicKey {
        name: "leader.replication.throttled.replicas",
        get: |c| c.throttled.leader.clone(),
        set: |c, v| {
            c.throttled.leader = replica_list(v)?;
            Ok(())
        },
    },
    TopicKey {
        name: "follower.replication.throttled.replicas",
        get: |c| c.throttled.follower.clone(),
        set: |c, v| {
            c.throttled.follower = replica_list(v)?;
            Ok(())
        },
    },
];

/// Kafka's older name, before 3.6: one bound for both directions.
pub const TIMESTAMP_DIFFERENCE_ALIAS: &str = "message.timestamp.difference.max.ms";

/// The keys a topic-level name stands for: itself, or both bounds for the older alias.
pub fn canonical_keys(name: &str) -> Vec<&str> {
    if name == TIMESTAMP_DIFFERENCE_ALIAS {
        vec![
            "message.timestamp.before.max.ms",
            "message.timestamp.after.max.ms",
        ]
    } else {
        vec![name]
    }
}

fn invalid(key: &str, reason: impl Into<String>) -> Error {
    Error::InvalidConfig {
        key: key.to_string(),
        reason: reason.into(),
    }
}

impl LogConfig {
    /// The row of a topic-level key.
    pub fn key(name: &str) -> Result<&'static TopicKey> {
        TOPIC_KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
            let known: Vec<&str> = TOPIC_KEYS.iter().map(|k| k.name).collect();
            invalid(name, format!("unknown config; known: {}", known.join(", ")))
        })
    }

    /// Sets one topic-level key from text (not validated together with the others yet).
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let key = Self::key(name)?;
        (key.set)(self, value).map_err(|why| invalid(name, format!("{value:?}: {why}")))
    }

    /// Every topic-level key with its value, in [`TOPIC_KEYS`] order.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        TOPIC_KEYS
            .iter()
            .map(|k| (k.name.to_string(), (k.get)(self)))
            .collect()
    }

    /// Refuses a CreateTime batch whose records' timestamps (smallest and largest) lie
    /// outside [now - before.max, now + after.max], with Kafka's message.
    pub fn check_timestamps(&self, min_ts: i64, max_ts: i64, now: i64) -> Result<()> {
        if self.timestamp_type != TimestampType::CreateTime || max_ts < 0 {
            return Ok(());
        }
        let earliest = now.saturating_sub(self.timestamp_before_max_ms);
        let latest = now.saturating_add(self.timestamp_after_max_ms);
        for ts in [min_ts, max_ts] {
            if ts < earliest || ts > latest {
                return Err(Error::TimestampOutOfRange {
                    timestamp: ts,
                    earliest,
                    latest,
                });
            }
        }
        Ok(())
    }

    /// Checks every bound. Positions in the index are 32-bit, so a segment cannot exceed
    /// i32::MAX bytes; an index must hold at least two entries (time index reserves one).
    pub fn validate(&self) -> Result<()> {
        if self.segment_bytes < MIN_SEGMENT_BYTES || self.segment_bytes > i32::MAX as u64 {
            return Err(invalid(
                "segment.bytes",
                format!(
                    "{} is outside [{MIN_SEGMENT_BYTES}, {}]",
                    self.segment_bytes,
                    i32::MAX
                ),
            ));
        }
        if self.segment_ms < 1 {
            return Err(invalid("segment.ms", "must be at least 1"));
        }
        if self.index_interval_bytes > i32::MAX as u64 {
            return Err(invalid("index.interval.bytes", "must fit in 32 bits"));
        }
        if self.segment_index_bytes < 24 || self.segment_index_bytes > i32::MAX as u64 {
            return Err(invalid(
                "segment.index.bytes",
                format!("{} is outside [24, {}]", self.segment_index_bytes, i32::MAX),
            ));
        }
        for (key, v) in [
            ("retention.ms", self.retention_ms),
            ("retention.bytes", self.retention_bytes),
        ] {
            if v < -1 {
                return Err(invalid(key, "must be >= -1 (-1: unlimited)"));
            }
        }
        for (key, v) in [
            (
                "message.timestamp.before.max.ms",
                self.timestamp_before_max_ms,
            ),
            (
                "message.timestamp.after.max.ms",
                self.timestamp_after_max_ms,
            ),
            ("delete.retention.ms", self.delete_retention_ms),
            ("min.compaction.lag.ms", self.min_compaction_lag_ms),
            ("max.compaction.lag.ms", self.max_compaction_lag_ms),
            ("file.delete.delay.ms", self.file_delete_delay_ms),
        ] {
            if v < 0 {
                return Err(invalid(key, "must be >= 0"));
            }
        }
        if self.max_compaction_lag_ms < 1 {
            return Err(invalid("max.compaction.lag.ms", "must be at least 1"));
        }
        self.validate_producing()?;
        if !(0.0..=1.0).contains(&self.min_cleanable_dirty_ratio) {
            return Err(invalid("min.cleanable.dirty.ratio", "must be in [0, 1]"));
        }
        self.validate_tiering()
    }

    /// Kafka's bounds of the keys that shape appends (TopicConfig's validators).
    fn validate_producing(&self) -> Result<()> {
        if self.max_message_bytes > i32::MAX as u64 {
            return Err(invalid("max.message.bytes", "must fit in 31 bits"));
        }
        if self.min_insync_replicas < 1 {
            return Err(invalid("min.insync.replicas", "must be at least 1"));
        }
        if self.flush_messages < 1 {
            return Err(invalid("flush.messages", "must be at least 1"));
        }
        if self.flush_ms < 0 || self.inert.segment_jitter_ms < 0 {
            let key = if self.flush_ms < 0 {
                "flush.ms"
            } else {
                "segment.jitter.ms"
            };
            return Err(invalid(key, "must be >= 0"));
        }
        Ok(())
    }

    /// Whether appends since the last fdatasync call for one now (flush.messages, flush.ms).
    pub fn flush_due(&self, unsynced_records: u64, since_sync: std::time::Duration) -> bool {
        unsynced_records >= self.flush_messages as u64
            || since_sync.as_millis() >= self.flush_ms as u128
    }

    /// Kafka's rules for tiered topics (LogConfig.validateRemoteStorage*): no compaction,
    /// and the local retention within the total one.
    fn validate_tiering(&self) -> Result<()> {
        for (key, local, total) in [
            (
                "local.retention.ms",
                self.local_retention_ms,
                self.retention_ms,
            ),
            (
                "local.retention.bytes",
                self.local_retention_bytes,
                self.retention_bytes,
            ),
        ] {
            if local < SAME_AS_TOTAL {
                return Err(invalid(key, "must be >= -2 (-2: as the total retention)"));
            }
            if local == -1 && total != -1 {
                return Err(invalid(
                    key,
                    format!("cannot be unlimited while the total retention is {total}"),
                ));
            }
            if local >= 0 && total >= 0 && local > total {
                return Err(invalid(
                    key,
                    format!("{local} exceeds the total retention {total}"),
                ));
            }
        }
        if self.remote_storage_enable && self.cleanup_policy.compacts() {
            return Err(invalid(
                "remote.storage.enable",
                "compacted topics cannot be tiered (cleanup.policy contains compact), as in Kafka",
            ));
        }
        Ok(())
    }

    /// retention.ms of the local copy: local.retention.ms when tiered, else the total.
    pub fn local_retention_ms(&self) -> i64 {
        match self.local_retention_ms {
            SAME_AS_TOTAL => self.retention_ms,
            ms if self.remote_storage_enable => ms,
            _ => self.retention_ms,
        }
    }

    /// retention.bytes of the local copy: local.retention.bytes when tiered, else the total.
    pub fn local_retention_bytes(&self) -> i64 {
        match self.local_retention_bytes {
            SAME_AS_TOTAL => self.retention_bytes,
            b if self.remote_storage_enable => b,
            _ => self.retention_bytes,
        }
    }

    /// Entry capacity of the offset index (8-byte entries).
    pub fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes / 8) as usize
    }

    /// Entry capacity of the time index (12-byte entries).
    pub fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes / 12) as usize
    }
}

/// A line of a properties text that is neither blank, a comment, nor `key=value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {text:?} is not key=value")]
pub struct NotKeyValue {
    /// 1-based.
    pub line: usize,
    pub text: String,
}

/// The `key=value` lines of a properties text (server config files, topic metadata): blank
/// lines and `#` comments skipped, both sides trimmed. The one parser of such texts.
pub fn parse_properties(text: &str) -> std::result::Result<Vec<(&str, &str)>, NotKeyValue> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| NotKeyValue {
            line: n + 1,
            text: line.to_string(),
        })?;
        out.push((k.trim(), v.trim()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_key_round_trips_through_text() {
        let mut c = LogConfig::default();
        for (k, v) in [
            ("segment.bytes", "2048"),
            ("min.cleanable.dirty.ratio", "0.25"),
            ("cleanup.policy", "delete,compact"),
            ("message.timestamp.type", "LogAppendTime"),
            ("file.delete.delay.ms", "5"),
            ("compression.type", "uncompressed"),
            ("preallocate", "true"),
            ("follower.replication.throttled.replicas", "0:0,1:0"),
        ] {
            c.set(k, v).unwrap();
        }
        c.validate().unwrap();
        let mut back = LogConfig::default();
        for (k, v) in c.to_pairs() {
            back.set(&k, &v).unwrap();
        }
        assert_eq!(back, c);
        assert_eq!(c.cleanup_policy, CleanupPolicy::CompactDelete);
        assert_eq!(c.to_pairs().len(), TOPIC_KEYS.len());
    }

    #[test]
    fn flush_keys_call_for_a_sync_when_due() {
        let mut c = LogConfig::default();
        let (no_time, long) = (Duration::ZERO, Duration::from_secs(3600));
        assert!(!c.flush_due(1 << 40, long), "never, by default");
        c.set("flush.messages", "3").unwrap();
        assert!(!c.flush_due(2, no_time) && c.flush_due(3, no_time));
        c.set("flush.ms", "1000").unwrap();
        assert!(c.flush_due(1, Duration::from_millis(1000)));
        c.set("flush.messages", "0").unwrap();
        assert!(c.validate().is_err(), "Kafka's bound: at least 1");
    }
}
