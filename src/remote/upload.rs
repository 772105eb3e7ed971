//! Copying a sealed segment to the remote tier (Kafka's RLMCopyTask, one segment): each
//! file to a fresh key with its CRC-32C computed on the way, then the manifest names the
//! segment: data first, manifest last, so a reader never sees a segment whose objects are
//! not all there. A copy cut short (a failure, kill -9) leaves objects no manifest names,
//! which are removed when the failure is seen; the next pass copies the segment again under
//! new keys.

use std::rc::Rc;

use bytes::Bytes;

use super::error::RemoteError;
use super::keys;
use super::manifest::{RemoteFile, RemoteSegment};
use super::partition::RemoteLog;
use crate::io::{OpenMode, Storage};
use crate::log::SealedSegment;

/// Files up to this size go in one PUT; larger ones in parts of this size (S3's parts are
/// at least 5 MiB). Bounds the memory one copy holds.
pub const PART_BYTES: u64 = 8 << 20;

/// Copies `seg` and commits it to the manifest; returns the bytes copied. A segment the
/// manifest already covers (a copy committed by an earlier attempt) is not copied again.
pub async fn copy_segment(
    log: &RemoteLog,
    storage: &Rc<dyn Storage>,
    seg: &SealedSegment,
) -> Result<u64, RemoteError> {
    let upload = keys::upload_id();
    let mut files = Vec::with_capacity(seg.files.len());
    let mut bytes = 0;
    for (suffix, path) in &seg.files {
        let key = keys::segment_file(&log.topic, log.partition, seg.base_offset, &upload, suffix);
        match copy_file(log, storage, path, &key).await {
            Ok((size, crc32c)) => {
                bytes += size;
                files.push(RemoteFile {
                    suffix: suffix.to_string(),
                    key,
                    size,
                    crc32c,
                });
            }
            Err(e) => {
                remove_objects(log, &files).await;
                return Err(e);
            }
        }
    }
    let segment = RemoteSegment {
        base_offset: seg.base_offset,
        last_offset: seg.last_offset,
        max_timestamp_ms: seg.max_timestamp_ms,
        size_bytes: seg.size_bytes,
        uploaded_ms: crate::time::now_ms(),
        files: files.clone(),
    };
    let mut added = false;
    let committed = log
        .commit(|m| {
            if m.next_offset()
                .is_none_or(|next| next <= segment.base_offset)
            {
                m.segments.push(segment);
                added = true;
            }
        })
        .await;
    if committed.is_err() || !added {
        remove_objects(log, &files).await;
    }
    committed?;
    Ok(if added { bytes } else { 0 })
}

/// Copies one local file to `key`: one PUT, or a multipart upload in `PART_BYTES` parts.
/// Returns its size and CRC-32C.
async fn copy_file(
    log: &RemoteLog,
    storage: &Rc<dyn Storage>,
    path: &std::path::Path,
    key: &str,
) -> Result<(u64, u32), RemoteError> {
    let local = |e: std::io::Error| RemoteError::Local(format!("{}: {e}", path.display()));
    let file = storage
        .open(path, OpenMode::ReadOnly)
        .await
        .map_err(local)?;
    let size = file.size().await.map_err(local)?;
    let object = log.store.key(key);
    let mut crc = 0u32;
    let read_part = |pos: u64| {
        let file = file.clone();
        async move {
            let len = PART_BYTES.min(size - pos) as usize;
            let data = file.read_at(pos, len).await.map_err(local)?;
            if data.len() != len {
                return Err(RemoteError::Local(format!(
                    "{}: short read at {pos}",
                    path.display()
                )));
            }
            Ok::<Bytes, RemoteError>(Bytes::from(data))
        }
    };
    if size <= PART_BYTES {
        let data = read_part(0).await?;
        crc = crc32c::crc32c(&data);
        log.store.put_new(object, data).await?;
    } else {
        let writer = log.store.multipart(object)?;
        let mut pos = 0;
        while pos < size {
            let data = read_part(pos).await?;
            crc = crc32c::crc32c_append(crc, &data);
            pos += data.len() as u64;
            writer.part(data).await?;
        }
        writer.complete().await?;
    }
    file.close().await.map_err(local)?;
    Ok((size, crc))
}

/// Removes objects of a copy that was not committed (best effort: a leftover is only
/// wasted space, never read).
pub async fn remove_objects(log: &RemoteLog, files: &[RemoteFile]) {
    for f in files {
        if let Err(e) = log.store.delete(log.store.key(&f.key)).await {
            tracing::warn!(key = %f.key, error = %e, "could not remove a remote object");
        }
    }
}

/// Removes the partition's data objects no manifest names: copies cut short by a crash
/// (their keys were unique, so nothing else refers to them). Only the partition's writer
/// runs it, between its copies, so no copy of its own is in flight. Returns how many went.
pub async fn sweep_orphans(log: &RemoteLog) -> Result<usize, RemoteError> {
    let manifest = log.manifest().await?;
    let named: std::collections::HashSet<&str> = manifest
        .segments
        .iter()
        .flat_map(|s| s.files.iter().map(|f| f.key.as_str()))
        .collect();
    let dir = format!("{}/{}/{}", keys::topic_dir(), log.topic, log.partition);
    let listed = log.store.list_keys(&dir, usize::MAX).await?;
    let orphans: Vec<&String> = listed
        .iter()
        .filter(|k| !k.ends_with(".json") && !named.contains(k.as_str()))
        .collect();
    for key in &orphans {
        log.store.delete(log.store.key(key)).await?;
    }
    if !orphans.is_empty() {
        tracing::info!(topic = %log.topic, partition = log.partition, objects = orphans.len(), "removed remote objects no manifest names");
    }
    Ok(orphans.len())
}
