//! What the bucket says about a tiered topic, for restoring it on a fresh node and for
//! read replicas: its description (partitions and configs), each partition's manifest, and
//! taking over as the writer of a restored topic.

use super::chunks::whole_file;
use super::error::RemoteError;
use super::keys;
use super::manifest::{PartitionManifest, TopicManifest};
use super::rebuild::rebuilt_manifest;
use super::store::RemoteStore;
use crate::log::file_names::SNAPSHOT_SUFFIX;

/// The tiered topics the bucket holds (names below `topics/`).
pub async fn list_topics(store: &RemoteStore) -> Result<Vec<String>, RemoteError> {
    store.list_dirs(keys::topic_dir()).await
}

/// A topic's description; `NotFound` when the bucket has no such tiered topic.
pub async fn read_topic(store: &RemoteStore, topic: &str) -> Result<TopicManifest, RemoteError> {
    let key = keys::topic_manifest(topic);
    let (bytes, _) = store.get(store.key(&key)).await?;
    let m = TopicManifest::parse(&key, &bytes)?;
    if m.topic != topic || m.partitions == 0 {
        return Err(RemoteError::corrupt(
            key,
            format!("describes {:?} with {} partitions", m.topic, m.partitions),
        ));
    }
    Ok(m)
}

/// Writes a topic's description (at the first upload, and when its configs change).
pub async fn write_topic(store: &RemoteStore, m: &TopicManifest) -> Result<(), RemoteError> {
    store
        .put_overwrite(store.key(&keys::topic_manifest(&m.topic)), m.to_bytes())
        .await
}

/// What a restored partition starts from.
pub struct RestoredPartition {
    /// The offset after the last remote record: the restored local log starts there.
    pub next_offset: i64,
    /// The producers' snapshot at `next_offset`, when the last remote segment has one.
    pub producer_snapshot: Option<Vec<u8>>,
}

/// Takes over a partition's manifest for `writer` (a conditional write, so a concurrent
/// writer's change is not lost silently) and says where the restored log starts. Restoring
/// is safe only when the node that wrote the bucket is gone, as with Redpanda's topic
/// recovery.
pub async fn take_over(
    store: &RemoteStore,
    writer: &str,
    topic: &str,
    partition: u32,
) -> Result<RestoredPartition, RemoteError> {
    let key = keys::partition_manifest(topic, partition);
    let (mut m, version) = match store.get(store.key(&key)).await {
        Ok((bytes, version)) => (PartitionManifest::parse(&key, &bytes)?, Some(version)),
        // Segment objects without a manifest are a lost history, not an empty one: it is
        // rebuilt from them (an empty partition's is empty).
        Err(RemoteError::NotFound(_)) => {
            let (m, notes) = rebuilt_manifest(store, writer, topic, partition, 0).await?;
            if !m.segments.is_empty() || !notes.is_empty() {
                tracing::warn!(topic, partition, segments = m.segments.len(), ?notes, "restore: the partition's manifest was missing; rebuilt from the segment objects in the bucket");
            }
            (m, None)
        }
        Err(e) => return Err(e),
    };
    // The new writer starts its own history: a cluster's leader epochs do not carry over.
    if m.writer != writer || m.leader_epoch.is_some() || version.is_none() {
        m.writer = writer.to_string();
        m.leader_epoch = None;
        store.put_if(store.key(&key), m.to_bytes(), version).await?;
    }
    let next_offset = m.next_offset().unwrap_or(m.log_start_offset);
    let producer_snapshot = match m.segments.last().and_then(|s| s.file(SNAPSHOT_SUFFIX)) {
        Some(file) => Some(whole_file(store, file).await?.to_vec()),
        None => None,
    };
    Ok(RestoredPartition {
        next_offset,
        producer_snapshot,
    })
}

/// Whether the bucket holds anything of `topic` (a deleted incarnation not yet removed, or
/// a topic another node writes): a new tiered topic of that name must not adopt it.
pub async fn topic_in_bucket(store: &RemoteStore, topic: &str) -> Result<bool, RemoteError> {
    Ok(!store
        .list_keys(&format!("{}/{topic}", keys::topic_dir()), 1)
        .await?
        .is_empty())
}

/// Removes a deleted topic's remote tier: manifests and description first (nothing
/// serves or restores it from then on), then the data objects. Returns the objects
/// removed; a failure leaves the rest for a later deletion (objects no manifest names are
/// never read).
pub async fn delete_topic(store: &RemoteStore, topic: &str) -> Result<usize, RemoteError> {
    let keys = store
        .list_keys(&format!("{}/{topic}", keys::topic_dir()), usize::MAX)
        .await?;
    let (meta, data): (Vec<String>, Vec<String>) =
        keys.into_iter().partition(|k| k.ends_with(".json"));
    let n = meta.len() + data.len();
    for key in meta.into_iter().chain(data) {
        store.delete(store.key(&key)).await?;
    }
    Ok(n)
}
