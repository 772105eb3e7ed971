//! A partition's manifest in the bucket: which segments the remote tier holds (offsets,
//! newest timestamp, size, and each file's key, size and CRC-32C) and the partition's log
//! start. Writing it is the commit point of every change to the remote tier: data objects
//! first, manifest last, by a conditional write (FORMAT.md has the JSON).

use serde::{Deserialize, Serialize};

use super::error::RemoteError;

/// The manifest format this build writes; a newer one is refused, never overwritten.
pub const FORMAT_VERSION: u32 = 1;

/// One file of a remote segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteFile {
    /// The local suffix it was copied from: `.log`, `.index`, `.timeindex`, `.txnindex`,
    /// `.snapshot`.
    pub suffix: String,
    /// Key below the store's prefix.
    pub key: String,
    pub size: u64,
    pub crc32c: u32,
}

/// A sealed segment copied to the remote tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSegment {
    pub base_offset: i64,
    pub last_offset: i64,
    /// Largest record timestamp in the segment (-1: none).
    pub max_timestamp_ms: i64,
    /// Size of its `.log`.
    pub size_bytes: u64,
    /// Wall-clock ms of the upload's commit.
    pub uploaded_ms: i64,
    pub files: Vec<RemoteFile>,
}

impl RemoteSegment {
    pub fn file(&self, suffix: &str) -> Option<&RemoteFile> {
        self.files.iter().find(|f| f.suffix == suffix)
    }
}

/// The remote tier of one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionManifest {
    pub format: u32,
    /// The node that writes this partition's remote tier (its writer id); any other
    /// node only reads it.
    pub writer: String,
    /// Cluster mode: the leader epoch of the node that last changed it. A node leading the
    /// partition in an older epoch changes it no more (a deposed leader is fenced). Absent
    /// on a single node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_epoch: Option<i32>,
    pub topic: String,
    pub partition: u32,
    /// The partition's log start (DeleteRecords, retention): nothing below it is served.
    pub log_start_offset: i64,
    /// In offset order, not overlapping.
    pub segments: Vec<RemoteSegment>,
}

impl PartitionManifest {
    pub fn new(writer: &str, topic: &str, partition: u32, log_start_offset: i64) -> Self {
        PartitionManifest {
            format: FORMAT_VERSION,
            writer: writer.to_string(),
            leader_epoch: None,
            topic: topic.to_string(),
            partition,
            log_start_offset,
            segments: Vec::new(),
        }
    }

    /// Reads a manifest, checking its format and its invariants.
    pub fn parse(key: &str, bytes: &[u8]) -> Result<Self, RemoteError> {
        let m: PartitionManifest = serde_json::from_slice(bytes)
            .map_err(|e| RemoteError::corrupt(key, format!("not a manifest: {e}")))?;
        if m.format > FORMAT_VERSION {
            return Err(RemoteError::Refused {
                key: key.to_string(),
                why: format!(
                    "format {} is newer than this build's {FORMAT_VERSION}",
                    m.format
                ),
            });
        }
        match m.problem() {
            Some(what) => Err(RemoteError::corrupt(key, what)),
            None => Ok(m),
        }
    }

    pub fn to_bytes(&self) -> bytes::Bytes {
        assert_eq!(
            self.problem(),
            None,
            "a manifest is written only when sound"
        );
        // Serialising plain structs of numbers and strings cannot fail.
        serde_json::to_vec_pretty(self).unwrap_or_default().into()
    }

    /// What breaks the invariants, if anything: segments in offset order, each non-empty
    /// and after the one before, each with a `.log`; a log start that is an offset.
    fn problem(&self) -> Option<String> {
        let mut after = -1i64;
        for s in &self.segments {
            if s.base_offset <= after || s.last_offset < s.base_offset {
                return Some(format!(
                    "segment {}..={} is out of order (previous ended at {after})",
                    s.base_offset, s.last_offset
                ));
            }
            if s.file(crate::log::LOG_SUFFIX).is_none() {
                return Some(format!("segment {} has no .log", s.base_offset));
            }
            after = s.last_offset;
        }
        (self.log_start_offset < 0).then(|| "negative log start".to_string())
    }

    /// The offset after the last remote segment: where the next upload starts.
    pub fn next_offset(&self) -> Option<i64> {
        let next = self.segments.last().map(|s| s.last_offset + 1);
        assert!(next.is_none_or(|n| n > 0), "a segment ends at an offset");
        next
    }

    /// The first offset the remote tier serves, if it holds any at or past the log start.
    pub fn start_offset(&self) -> Option<i64> {
        let start = self
            .segments
            .iter()
            .find(|s| s.last_offset >= self.log_start_offset)
            .map(|s| s.base_offset.max(self.log_start_offset));
        assert!(
            start.is_none_or(|s| s >= self.log_start_offset),
            "served from the log start on"
        );
        start
    }

    /// The segment holding `offset`, or the first after it (an offset in a gap).
    pub fn segment_for(&self, offset: i64) -> Option<&RemoteSegment> {
        self.segments.iter().find(|s| s.last_offset >= offset)
    }

    /// The first segment, at or past `start`, with a record at or after `timestamp`.
    pub fn segment_for_time(&self, timestamp: i64, start: i64) -> Option<&RemoteSegment> {
        self.segments
            .iter()
            .find(|s| s.last_offset >= start && s.max_timestamp_ms >= timestamp)
    }

    /// Bytes of `.log` the remote tier holds.
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.size_bytes).sum()
    }
}

/// A tiered topic's description in the bucket: what restore and read replicas recreate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicManifest {
    pub format: u32,
    pub writer: String,
    pub topic: String,
    pub partitions: u32,
    /// Every topic-level key with its value.
    pub configs: Vec<(String, String)>,
}

impl TopicManifest {
    /// The configs a node recreating the topic (restore, read replica) creates it with:
    /// the stored ones, tiered.
    pub fn create_configs(&self) -> Vec<(String, String)> {
        let mut configs: Vec<(String, String)> = self
            .configs
            .iter()
            .filter(|(k, _)| k != "remote.storage.enable")
            .cloned()
            .collect();
        configs.push(("remote.storage.enable".into(), "true".into()));
        configs
    }

    pub fn parse(key: &str, bytes: &[u8]) -> Result<Self, RemoteError> {
        let m: TopicManifest = serde_json::from_slice(bytes)
            .map_err(|e| RemoteError::corrupt(key, format!("not a topic manifest: {e}")))?;
        if m.format > FORMAT_VERSION {
            return Err(RemoteError::Refused {
                key: key.to_string(),
                why: format!("format {} is newer than {FORMAT_VERSION}", m.format),
            });
        }
        Ok(m)
    }

    pub fn to_bytes(&self) -> bytes::Bytes {
        serde_json::to_vec_pretty(self).unwrap_or_default().into()
    }
}

/// A remote segment of 100 bytes with only a `.log` (tests).
#[cfg(test)]
pub(crate) fn test_segment(base: i64, last: i64, ts: i64) -> RemoteSegment {
    RemoteSegment {
        base_offset: base,
        last_offset: last,
        max_timestamp_ms: ts,
        size_bytes: 100,
        uploaded_ms: 0,
        files: vec![RemoteFile {
            suffix: ".log".into(),
            key: format!("t/0/{base}.log"),
            size: 100,
            crc32c: 7,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, last: i64, ts: i64) -> RemoteSegment {
        test_segment(base, last, ts)
    }

    #[test]
    fn round_trips_and_finds_segments() {
        let mut m = PartitionManifest::new("w", "t", 0, 0);
        m.segments = vec![seg(0, 9, 100), seg(10, 19, 200)];
        let back = PartitionManifest::parse("k", &m.to_bytes()).unwrap();
        assert_eq!(back, m);
        assert_eq!(m.next_offset(), Some(20));
        assert_eq!(m.segment_for(12).unwrap().base_offset, 10);
        assert_eq!(m.segment_for_time(150, 0).unwrap().base_offset, 10);
        assert!(m.segment_for(20).is_none());
        m.log_start_offset = 12;
        assert_eq!(m.start_offset(), Some(12));
        assert!(m.segment_for_time(100, 12).unwrap().base_offset == 10);
    }

    #[test]
    fn refuses_newer_formats_and_unsound_manifests() {
        let mut m = PartitionManifest::new("w", "t", 0, 0);
        m.format = FORMAT_VERSION + 1;
        let text = serde_json::to_vec(&m).unwrap();
        assert!(matches!(
            PartitionManifest::parse("k", &text),
            Err(RemoteError::Refused { .. })
        ));
        let mut m = PartitionManifest::new("w", "t", 0, 0);
        m.segments = vec![seg(10, 19, 0), seg(5, 9, 0)];
        let text = serde_json::to_vec(&m).unwrap();
        assert!(matches!(
            PartitionManifest::parse("k", &text),
            Err(RemoteError::Corrupt { .. })
        ));
        assert!(PartitionManifest::parse("k", b"{ truncated").is_err());
    }
}
