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
use super::store::MultipartWriter;
use crate::io::{OpenMode, Storage};
use crate::log::{SealedSegment, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use futures_util::FutureExt;

/// Files up to this size go in one PUT; larger ones in parts of this size (S3's parts are
/// at least 5 MiB). Bounds the memory one copy holds.
pub const PART_BYTES: u64 = 8 << 20;
/// Parts of one file in flight to the store at once: a copy holds at most this many parts
/// (32 MiB) and waits for one round trip per this many parts, not per part.
pub const PARTS_IN_FLIGHT: usize = 4;

/// Copies `seg` and commits it to the manifest; returns the bytes copied. A segment the
/// manifest already covers (a copy committed by an earlier attempt) is not copied again.
pub async fn copy_segment(
    log: &RemoteLog,
    storage: &Rc<dyn Storage>,
    seg: &SealedSegment,
) -> Result<u64, RemoteError> {
    let files = copy_files(log, storage, seg).await?;
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let segment = RemoteSegment {
        base_offset: seg.base_offset,
        last_offset: seg.last_offset,
        max_timestamp_ms: seg.max_timestamp_ms,
        size_bytes: seg.size_bytes,
        uploaded_ms: crate::time::now_ms(),
        files: files.clone(),
    };
    let mut added = false;
    let last_offset = segment.last_offset;
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
    let committed = committed?;
    // A segment added ends the manifest this commit wrote.
    assert!(!added || committed.next_offset() == Some(last_offset + 1));
    Ok(if added { bytes } else { 0 })
}

/// Copies the segment's files under fresh keys (a tail's `.log` from its cut, its rebased
/// indexes from memory), all at once; on a failure removes those copied and says why.
async fn copy_files(
    log: &RemoteLog,
    storage: &Rc<dyn Storage>,
    seg: &SealedSegment,
) -> Result<Vec<RemoteFile>, RemoteError> {
    let upload = keys::upload_id();
    let key =
        |suffix| keys::segment_file(&log.topic, log.partition, seg.base_offset, &upload, suffix);
    let remote_file = |suffix: &str, key, (size, crc32c)| RemoteFile {
        suffix: suffix.to_string(),
        key,
        size,
        crc32c,
    };
    // The segment's files go together (the small ones cost a round trip each otherwise).
    let copies = seg.files.iter().map(|(suffix, path)| {
        let from = if *suffix == LOG_SUFFIX {
            seg.log_position
        } else {
            0
        };
        async move {
            let key = key(suffix);
            let copied = copy_file(log, storage, path, from, &key).await;
            copied.map(|done| remote_file(suffix, key, done))
        }
    });
    let copies = copies.map(FutureExt::boxed_local);
    let rebased = seg.rebased.iter().flat_map(|r| {
        [
            (INDEX_SUFFIX, &r.offset_index),
            (TIME_INDEX_SUFFIX, &r.time_index),
        ]
    });
    let puts = rebased.map(|(suffix, bytes)| {
        async move {
            let key = key(suffix);
            let data = Bytes::copy_from_slice(bytes);
            let crc = crc32c::crc32c(&data);
            log.store.put_new(log.store.key(&key), data).await?;
            Ok(remote_file(suffix, key, (bytes.len() as u64, crc)))
        }
        .boxed_local()
    });
    let mut files = Vec::with_capacity(seg.files.len() + 2);
    let mut failure = None;
    for copied in futures_util::future::join_all(copies.chain(puts)).await {
        match copied {
            Ok(file) => files.push(file),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    if let Some(e) = failure {
        remove_objects(log, &files).await;
        return Err(e);
    }
    assert_eq!(
        files.len(),
        seg.files.len() + 2 * usize::from(seg.rebased.is_some())
    );
    Ok(files)
}

/// Uploads `size` bytes in `PART_BYTES` parts read by `read_part`, at most
/// `PARTS_IN_FLIGHT` at once (the next part is read while earlier ones upload), then
/// completes the object. Returns the CRC-32C of the whole.
async fn copy_parts<F, Fut>(
    writer: MultipartWriter,
    size: u64,
    read_part: F,
) -> Result<u32, RemoteError>
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = Result<Bytes, RemoteError>>,
{
    let mut crc = 0u32;
    let mut pos = 0;
    let mut in_flight = std::collections::VecDeque::with_capacity(PARTS_IN_FLIGHT);
    while pos < size {
        let data = read_part(pos).await?;
        crc = crc32c::crc32c_append(crc, &data);
        pos += data.len() as u64;
        in_flight.push_back(writer.part(data));
        if in_flight.len() == PARTS_IN_FLIGHT {
            in_flight.pop_front().expect("a part in flight").await?;
        }
    }
    for part in in_flight {
        part.await?;
    }
    writer.complete().await?;
    Ok(crc)
}

/// Copies one local file from byte `from` on to `key`: one PUT, or a multipart upload in
/// `PART_BYTES` parts. Returns the size copied and its CRC-32C.
async fn copy_file(
    log: &RemoteLog,
    storage: &Rc<dyn Storage>,
    path: &std::path::Path,
    from: u64,
    key: &str,
) -> Result<(u64, u32), RemoteError> {
    let local = |e: std::io::Error| RemoteError::Local(format!("{}: {e}", path.display()));
    let file = storage
        .open(path, OpenMode::ReadOnly)
        .await
        .map_err(local)?;
    let size = file.size().await.map_err(local)?;
    let Some(size) = size.checked_sub(from) else {
        return Err(RemoteError::Local(format!(
            "{}: {size} bytes, shorter than the cut at {from}",
            path.display()
        )));
    };
    let object = log.store.key(key);
    let read_part = |pos: u64| {
        let file = file.clone();
        async move {
            let len = PART_BYTES.min(size - pos) as usize;
            let data = file.read_at(from + pos, len).await.map_err(local)?;
            if data.len() != len {
                return Err(RemoteError::Local(format!(
                    "{}: short read at {pos}",
                    path.display()
                )));
            }
            Ok::<Bytes, RemoteError>(Bytes::from(data))
        }
    };
    let crc = if size <= PART_BYTES {
        let data = read_part(0).await?;
        let crc = crc32c::crc32c(&data);
        log.store.put_new(object, data).await?;
        crc
    } else {
        copy_parts(log.store.multipart(object)?, size, read_part).await?
    };
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
