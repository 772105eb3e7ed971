//! Topics: name rules, validated configs, partition ownership, and the on-disk metadata
//! file each topic has (`<data-dir>/__shardlog_meta/topics/<name>.properties`, FORMAT.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::broker_error::BrokerError;
use crate::catalog::error::{CatalogError, MetadataError};
use crate::config::{canonical_keys, LogConfig};
use crate::io::storage::Storage;
use crate::protocol::ErrorCode;

pub const META_DIR: &str = "__shardlog_meta";
const TOPICS_DIR: &str = "topics";
const META_HEADER: &str = "# shardlog topic metadata v2";
/// Longest file name the file systems we run on accept (ext4, xfs, btrfs).
pub const MAX_FILE_NAME_BYTES: usize = 255;

/// Version 1 files listed every key; version 2 lists only the overrides.
const META_HEADER_V1: &str = "# shardlog topic metadata v1";

/// Error with a wire code, for admin operations.
pub type AdminError = BrokerError;

/// Suffix of a topic's metadata file while its deletion is being carried out.
const DELETING_SUFFIX: &str = "deleting";
/// Highest partition index any topic can have (`max.partitions.per.topic` <= 100000).
const MAX_PARTITION_INDEX: u32 = 99_999;

/// Every file name the engine derives from a topic name, at its longest: the metadata file
/// while it is written and while the topic is deleted, and the partition directory with the
/// largest partition index.
fn derived_file_names(name: &str) -> [String; 3] {
    [
        format!("{name}.properties.tmp"),
        format!("{name}.{DELETING_SUFFIX}"),
        format!("{name}-{MAX_PARTITION_INDEX}"),
    ]
}

/// Longest topic name: every derived file name must fit in one file name (255 bytes).
pub const MAX_TOPIC_NAME_BYTES: usize = 240;

/// Kafka's characters `[a-zA-Z0-9._-]`, not `.` or `..`, and at most
/// [`MAX_TOPIC_NAME_BYTES`] bytes so every file name derived from it fits (Kafka allows 249;
/// shardlog's `<name>.properties.tmp` is longer than Kafka's longest). Nothing else can name
/// a directory, so no topic path can escape the data directory.
pub fn validate_topic_name(name: &str) -> Result<(), AdminError> {
    let bad = |why: &str| {
        Err(BrokerError::new(
            ErrorCode::InvalidTopicName,
            format!("topic name {name:?} {why}"),
        ))
    };
    if name.is_empty() || name.len() > MAX_TOPIC_NAME_BYTES {
        return bad(&format!(
            "must be 1 to {MAX_TOPIC_NAME_BYTES} characters long (got {})",
            name.len()
        ));
    }
    debug_assert!(derived_file_names(name)
        .iter()
        .all(|n| n.len() <= MAX_FILE_NAME_BYTES));
    if name == "." || name == ".." {
        return bad("cannot be '.' or '..'");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return bad(&format!("contains {c:?}; allowed: a-z A-Z 0-9 . _ -"));
    }
    if name.starts_with("__shardlog") {
        return bad("is reserved (names starting with __shardlog are shardlog's own)");
    }
    Ok(())
}

/// A topic's configuration: the effective log config and the keys set explicitly
/// (overrides, which `topics describe` shows apart from defaults, as kafka-configs does).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicConfig {
    pub log: LogConfig,
    /// Explicitly set keys, sorted by key, one value each.
    pub overrides: BTreeMap<String, String>,
}

fn invalid_config(e: crate::Error) -> AdminError {
    AdminError::new(ErrorCode::InvalidConfig, e.to_string())
}

impl TopicConfig {
    /// Parses `key=value` overrides on top of `base` (Kafka's defaults with the dynamic
    /// broker defaults applied) and validates the result.
    pub fn from_pairs(base: &LogConfig, pairs: &[(String, String)]) -> Result<Self, AdminError> {
        Self::default().altered(base, pairs, &[])
    }

    /// The same overrides on another base (the broker defaults changed).
    pub fn rebased(&self, base: &LogConfig) -> Result<Self, AdminError> {
        self.altered(base, &[], &[])
    }

    /// This config with `set` applied and the keys in `delete` back to their defaults (from
    /// `base`), validated as a whole; `self` is unchanged when anything is invalid.
    pub fn altered(
        &self,
        base: &LogConfig,
        set: &[(String, String)],
        delete: &[String],
    ) -> Result<Self, AdminError> {
        let mut overrides = self.overrides.clone();
        for k in delete {
            for k in canonical_keys(k) {
                LogConfig::key(k).map_err(invalid_config)?;
                overrides.remove(k);
            }
        }
        for (k, v) in set {
            for k in canonical_keys(k) {
                LogConfig::key(k).map_err(invalid_config)?;
                overrides.insert(k.to_string(), v.trim().to_string());
            }
        }
        let mut log = base.clone();
        for (k, v) in &overrides {
            log.set(k, v).map_err(invalid_config)?;
        }
        log.validate().map_err(invalid_config)?;
        Ok(TopicConfig { log, overrides })
    }

    /// Every config as (key, value), overrides and defaults alike.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        self.log.to_pairs()
    }

    /// Whether a key was set explicitly.
    pub fn is_override(&self, key: &str) -> bool {
        self.overrides.contains_key(key)
    }
}

/// A topic as every shard knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicMeta {
    pub name: String,
    pub config: TopicConfig,
    /// owners[p] = shard that owns partition p.
    pub owners: Vec<u32>,
    /// KIP-516: one random id per topic incarnation (a topic deleted and created again gets
    /// a new one), so clients notice the change; in each partition's `partition.metadata`.
    pub topic_id: uuid::Uuid,
}

/// A new random topic id (a v4 UUID, as Kafka's `Uuid.randomUuid`).
pub fn new_topic_id() -> uuid::Uuid {
    let bytes: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// A topic id as Kafka writes it: URL-safe base64 of its 16 bytes, unpadded.
pub fn topic_id_text(id: uuid::Uuid) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes());
    // 16 bytes are 22 characters unpadded, as Kafka prints them; `parse_topic_id` reads them.
    assert_eq!(text.len(), 22, "topic id text {text:?}");
    text
}

/// The id Kafka's text names (`topic_id_text`'s inverse).
pub fn parse_topic_id(text: &str) -> Option<uuid::Uuid> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim())
        .ok()?;
    Some(uuid::Uuid::from_bytes(bytes.try_into().ok()?))
}

/// FNV-1a: stable across runs, builds and machines (unlike std's randomized hasher).
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// The owner of (topic, p) among `shards`: partitions of a topic go round-robin over the
/// shards, starting at a shard chosen by the topic's name, so they spread evenly.
pub fn owner_of(topic: &str, partition: u32, shards: u32) -> u32 {
    assert!(
        shards > 0,
        "partitions are owned by one of at least one shard"
    );
    let owner =
        ((stable_hash(topic.as_bytes()) % shards as u64 + partition as u64) % shards as u64) as u32;
    assert!(owner < shards);
    owner
}

pub fn topics_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(META_DIR).join(TOPICS_DIR)
}

fn meta_path(data_dir: &Path, name: &str) -> PathBuf {
    topics_dir(data_dir).join(format!("{name}.properties"))
}

/// Kafka's per-partition record of its topic's id, in the partition's directory.
pub const PARTITION_METADATA: &str = "partition.metadata";

/// `partition.metadata` as Kafka writes it (`version: 0`, `topic_id: <base64>`).
fn partition_metadata_text(id: uuid::Uuid) -> String {
    format!("version: 0\ntopic_id: {}\n", topic_id_text(id))
}

/// The topic id a partition's `partition.metadata` records, if it is there and readable.
pub fn read_partition_metadata(text: &str) -> Option<uuid::Uuid> {
    let line = text.lines().find_map(|l| l.strip_prefix("topic_id:"))?;
    parse_topic_id(line)
}

/// Makes partition directory `dir` record topic id `id` (written only when it does not).
pub async fn ensure_partition_metadata(
    storage: &dyn Storage,
    dir: &Path,
    id: uuid::Uuid,
) -> std::io::Result<()> {
    let path = dir.join(PARTITION_METADATA);
    let recorded = match storage.read_file(&path).await {
        Ok(bytes) => read_partition_metadata(&String::from_utf8_lossy(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if recorded == Some(id) {
        return Ok(());
    }
    let text = partition_metadata_text(id);
    storage.write_file_atomic(&path, text.into_bytes()).await?;
    // What was written reads back as the id.
    let back = storage.read_file(&path).await?;
    assert_eq!(
        read_partition_metadata(&String::from_utf8_lossy(&back)),
        Some(id)
    );
    Ok(())
}

/// The id of a topic whose file predates ids: two stable hashes of the file's text.
fn derived_topic_id(text: &str) -> uuid::Uuid {
    let high = stable_hash(text.as_bytes());
    let low = stable_hash(format!("{text}\n{high}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&high.to_be_bytes());
    bytes[8..].copy_from_slice(&low.to_be_bytes());
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

impl TopicMeta {
    pub fn new(name: String, partitions: u32, config: TopicConfig, shards: u32) -> Self {
        let owners: Vec<u32> = (0..partitions)
            .map(|p| owner_of(&name, p, shards))
            .collect();
        assert!(owners.iter().all(|&o| o < shards.max(1)));
        TopicMeta {
            name,
            config,
            owners,
            topic_id: new_topic_id(),
        }
    }

    pub fn partitions(&self) -> u32 {
        self.owners.len() as u32
    }

    /// This topic with `count` partitions: the existing ones stay where they are, the new
    /// ones are placed as a create places them.
    pub fn grown(&self, count: u32, shards: u32) -> TopicMeta {
        assert!(count >= self.partitions(), "a topic only grows");
        let mut owners = self.owners.clone();
        owners.extend((self.partitions()..count).map(|p| owner_of(&self.name, p, shards)));
        assert!(owners[..self.owners.len()] == self.owners[..]);
        TopicMeta {
            owners,
            ..self.clone()
        }
    }

    fn encode(&self, shards: u32) -> String {
        let mut s = format!(
            "{META_HEADER}\nname={}\npartitions={}\nshards={shards}\ntopic.id={}\n",
            self.name,
            self.owners.len(),
            topic_id_text(self.topic_id)
        );
        for (p, o) in self.owners.iter().enumerate() {
            s.push_str(&format!("owner.{p}={o}\n"));
        }
        for (k, v) in &self.config.overrides {
            s.push_str(&format!("config.{k}={v}\n"));
        }
        s
    }

    /// Parses a metadata file's text (for tools and the fuzzers; `decode` is what start-up
    /// uses).
    pub fn decode_file(text: &str, shards: u32, base: &LogConfig) -> Result<Self, MetadataError> {
        Self::decode(text, shards, base).map(|(meta, _)| meta)
    }

    /// Parses a metadata file. With a different shard count than recorded, owners are
    /// recomputed (same N: every partition stays where it was).
    fn decode(text: &str, shards: u32, base: &LogConfig) -> Result<(Self, bool), MetadataError> {
        let kv: BTreeMap<String, String> = crate::config::parse_properties(text)?
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let name = kv
            .get("name")
            .ok_or(MetadataError::MissingOrBad("name"))?
            .clone();
        validate_topic_name(&name).map_err(MetadataError::Refused)?;
        let partitions: u32 = kv
            .get("partitions")
            .and_then(|v| v.parse().ok())
            .ok_or(MetadataError::MissingOrBad("partitions"))?;
        // The file is trusted for nothing it could make us allocate: a corrupt count must not
        // ask for gigabytes at start-up.
        if partitions == 0 || partitions > MAX_PARTITION_INDEX + 1 {
            return Err(MetadataError::PartitionCount {
                count: partitions,
                max: MAX_PARTITION_INDEX + 1,
            });
        }
        let recorded: u32 = kv
            .get("shards")
            .and_then(|v| v.parse().ok())
            .ok_or(MetadataError::MissingOrBad("shards"))?;
        let v1 = text.starts_with(META_HEADER_V1);
        let defaults = LogConfig::default().to_pairs();
        let configs: Vec<(String, String)> = kv
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("config.")
                    .map(|k| (k.to_string(), v.clone()))
            })
            // A v1 file listed every key: only values that differ were overrides.
            .filter(|pair| !(v1 && defaults.contains(pair)))
            .collect();
        let config = TopicConfig::from_pairs(base, &configs).map_err(MetadataError::Refused)?;
        let mut owners = Vec::with_capacity(partitions as usize);
        let same_layout = recorded == shards;
        for p in 0..partitions {
            let recorded_owner: Option<u32> =
                kv.get(&format!("owner.{p}")).and_then(|v| v.parse().ok());
            owners.push(match recorded_owner {
                Some(o) if same_layout && o < shards => o,
                _ => owner_of(&name, p, shards),
            });
        }
        // A file from before topic ids gets one derived from its text, the same on every
        // shard; the controller then writes it down (a changed topic is persisted).
        let recorded_id = kv.get("topic.id").and_then(|t| parse_topic_id(t));
        let topic_id = recorded_id.unwrap_or_else(|| derived_topic_id(text));
        let changed = !same_layout || recorded_id.is_none();
        // Every partition has an owner among this run's shards, whatever the file said.
        assert_eq!(owners.len(), partitions as usize);
        assert!(owners.iter().all(|&o| o < shards));
        Ok((
            TopicMeta {
                name,
                config,
                owners,
                topic_id,
            },
            changed,
        ))
    }

    /// Writes the metadata file atomically through the storage seam (temp file, fdatasync,
    /// rename, directory fsync: each step a fault point of the simulated disk). Admin path
    /// only (create/alter/restart), never on a produce or fetch.
    pub async fn persist(
        &self,
        storage: &dyn Storage,
        data_dir: &Path,
        shards: u32,
    ) -> std::io::Result<()> {
        storage.create_dir_all(&topics_dir(data_dir))?;
        let text = self.encode(shards);
        // Read back on its own config as the base, the file gives this very topic.
        assert!(Self::decode(&text, shards, &self.config.log).is_ok_and(|(back, _)| &back == self));
        let path = meta_path(data_dir, &self.name);
        storage.write_file_atomic(&path, text.into_bytes()).await
    }

    /// Removes the metadata file (rolling back a create that failed half-way).
    pub async fn remove_persisted(
        storage: &dyn Storage,
        data_dir: &Path,
        name: &str,
    ) -> std::io::Result<()> {
        remove_synced(storage, data_dir, &meta_path(data_dir, name)).await
    }

    /// The commit point of a deletion: the metadata file becomes `<name>.deleting`, durably.
    /// From here a crash finishes the deletion at the next start instead of reviving it.
    pub async fn mark_deleting(
        storage: &dyn Storage,
        data_dir: &Path,
        name: &str,
    ) -> std::io::Result<()> {
        storage
            .rename(&meta_path(data_dir, name), &deleting_path(data_dir, name))
            .await?;
        storage.sync_dir(&topics_dir(data_dir)).await
    }
}

fn deleting_path(data_dir: &Path, name: &str) -> PathBuf {
    topics_dir(data_dir).join(format!("{name}.{DELETING_SUFFIX}"))
}

async fn remove_synced(storage: &dyn Storage, data_dir: &Path, path: &Path) -> std::io::Result<()> {
    match storage.remove(path).await {
        Ok(()) => storage.sync_dir(&topics_dir(data_dir)).await,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether a deletion of `name` is committed but not finished (its partition directories
/// may still be in place): a create of the same name must wait for it.
pub fn deletion_pending(storage: &dyn Storage, data_dir: &Path, name: &str) -> bool {
    storage.exists(&deleting_path(data_dir, name))
}

/// Ends a deletion once every partition directory of the topic is in the trash.
pub async fn finish_deletion(
    storage: &dyn Storage,
    data_dir: &Path,
    name: &str,
) -> std::io::Result<()> {
    remove_synced(storage, data_dir, &deleting_path(data_dir, name)).await
}

/// The names in the topics directory (none before the first topic).
fn topic_files(storage: &dyn Storage, data_dir: &Path) -> std::io::Result<Vec<String>> {
    match storage.list(&topics_dir(data_dir)) {
        Ok(names) => Ok(names),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Topics whose deletion was committed but not finished (a crash came in between).
pub fn pending_deletions(storage: &dyn Storage, data_dir: &Path) -> std::io::Result<Vec<String>> {
    let suffix = format!(".{DELETING_SUFFIX}");
    Ok(topic_files(storage, data_dir)?
        .into_iter()
        .filter_map(|name| name.strip_suffix(&suffix).map(str::to_string))
        .collect())
}

/// Loads every topic's metadata. The second value lists topics whose owners were recomputed
/// (shard count changed) and should be persisted again.
pub async fn load_all(
    storage: &dyn Storage,
    data_dir: &Path,
    shards: u32,
    base: &LogConfig,
) -> Result<(Vec<TopicMeta>, Vec<String>), CatalogError> {
    let mut topics = Vec::new();
    let mut changed = Vec::new();
    let dir = topics_dir(data_dir);
    for name in topic_files(storage, data_dir).map_err(CatalogError::io("listing topics", &dir))? {
        let path = topics_dir(data_dir).join(&name);
        if path.extension().and_then(|e| e.to_str()) != Some("properties") {
            continue;
        }
        let bytes = storage
            .read_file(&path)
            .await
            .map_err(CatalogError::io("reading topic metadata", &dir))?;
        let decoded = String::from_utf8(bytes)
            .map_err(|_| MetadataError::NotUtf8)
            .and_then(|text| TopicMeta::decode(&text, shards, base))
            .and_then(
                |(meta, changed)| match name == format!("{}.properties", meta.name) {
                    true => Ok((meta, changed)),
                    false => Err(MetadataError::NameMismatch {
                        recorded: meta.name,
                    }),
                },
            );
        match decoded {
            Ok((meta, was_changed)) => {
                if was_changed {
                    changed.push(meta.name.clone());
                }
                topics.push(meta);
            }
            Err(why) => return Err(CatalogError::Metadata { path, why }),
        }
    }
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    // One metadata file per topic, named after it (checked above): names are unique.
    assert!(topics.windows(2).all(|w| w[0].name < w[1].name));
    Ok((topics, changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka_rules() {
        for ok in ["orders", "a", "A.b_c-9", &"x".repeat(MAX_TOPIC_NAME_BYTES)] {
            assert!(validate_topic_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../etc",
            "a b",
            "ü",
            &"x".repeat(MAX_TOPIC_NAME_BYTES + 1),
            &"x".repeat(249),
            "__shardlog_meta",
            "__shardlog_anything",
            "a\0",
        ] {
            assert_eq!(
                validate_topic_name(bad).unwrap_err().code(),
                ErrorCode::InvalidTopicName,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn configs_validate_and_round_trip() {
        let pairs = vec![
            ("segment.bytes".to_string(), "2048".to_string()),
            (
                "message.timestamp.type".to_string(),
                "LogAppendTime".to_string(),
            ),
            ("cleanup.policy".to_string(), "delete,compact".to_string()),
        ];
        let c = TopicConfig::from_pairs(&LogConfig::default(), &pairs).unwrap();
        assert_eq!(c.log.segment_bytes, 2048);
        assert_eq!(
            c.log.cleanup_policy,
            crate::config::CleanupPolicy::CompactDelete
        );
        assert!(c.is_override("segment.bytes") && !c.is_override("segment.ms"));
        assert_eq!(
            TopicConfig::from_pairs(&LogConfig::default(), &c.to_pairs())
                .unwrap()
                .log,
            c.log
        );
        for (k, v) in [
            ("segment.bytes", "1"),
            ("segment.bytes", "abc"),
            ("segment.ms", "0"),
            ("message.timestamp.type", "Now"),
            ("cleanup.policy", "shred"),
            ("retention.ms", "-5"),
            ("no.such.key", "1"),
        ] {
            let e = TopicConfig::from_pairs(&LogConfig::default(), &[(k.into(), v.into())])
                .unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidConfig, "{k}={v}");
        }
    }

    #[test]
    fn a_corrupt_partition_count_is_refused_not_allocated() {
        let meta = TopicMeta::new("orders".into(), 2, TopicConfig::default(), 2);
        let text = meta
            .encode(2)
            .replace("partitions=2", "partitions=4294967295");
        let e = TopicMeta::decode(&text, 2, &LogConfig::default()).unwrap_err();
        assert_eq!(
            e,
            MetadataError::PartitionCount {
                count: u32::MAX,
                max: 100_000
            }
        );
        assert!(e.to_string().contains("outside 1..=100000"), "{e}");
        let zero = meta.encode(2).replace("partitions=2", "partitions=0");
        assert!(TopicMeta::decode(&zero, 2, &LogConfig::default()).is_err());
    }

    #[test]
    fn ownership_is_stable_and_even() {
        let counts = (0..8).fold([0; 2], |mut c, p| {
            c[owner_of("orders", p, 2) as usize] += 1;
            c
        });
        assert_eq!(counts, [4, 4]);
        assert_eq!(owner_of("orders", 3, 2), owner_of("orders", 3, 2));
        let meta = TopicMeta::new("orders".into(), 8, TopicConfig::default(), 2);
        let (back, changed) = TopicMeta::decode(&meta.encode(2), 2, &LogConfig::default()).unwrap();
        assert_eq!(back, meta);
        assert!(!changed);
        let (moved, changed) =
            TopicMeta::decode(&meta.encode(2), 3, &LogConfig::default()).unwrap();
        assert!(changed);
        assert!(moved.owners.iter().all(|&o| o < 3));
    }
}
