//! Rebuilding a lost manifest from the segment objects in the bucket (`topics
//! rebuild-manifest` on the writer, `topics restore` on a fresh node). Each candidate copy's `.log` is read through and every batch checked
//! by its CRC-32C, so the rebuilt manifest names only whole, sound segments: per base offset
//! the copy with the most files, in offset order, never overlapping. What cannot be known
//! again (a DeleteRecords log start above the first segment) and what is missing (a gap
//! between segments or before the local log) is said in the notes, never papered over.

use std::collections::BTreeMap;

use super::error::RemoteError;
use super::keys;
use super::manifest::{PartitionManifest, RemoteFile, RemoteSegment};
use super::partition::RemoteLog;
use super::store::RemoteStore;
use crate::format::batch::{check_framing_and_crc, HEADER_SIZE};
use crate::format::cursor::Window;
use crate::format::error::BatchError;
use crate::log::LOG_SUFFIX;

/// Bytes of a `.log` read per ranged GET while it is checked.
const SCAN_BYTES: u64 = 8 << 20;

pub use crate::partition_ops::Rebuilt;

/// One upload attempt's objects: (suffix, key, size) each.
type Copy = Vec<(String, String, u64)>;

/// Rebuilds the partition's manifest if, and only if, the bucket has none.
pub async fn rebuild(log: &RemoteLog) -> Result<Rebuilt, RemoteError> {
    log.refuse_rebuild_if_present().await?;
    let (manifest, notes) = rebuilt_manifest(
        &log.store,
        log.writer(),
        &log.topic,
        log.partition,
        log.local_start.get(),
    )
    .await?;
    log.install_rebuilt(manifest.clone()).await?;
    Ok(Rebuilt {
        segments: manifest.segments.len(),
        log_start_offset: manifest.log_start_offset,
        next_offset: manifest.next_offset().unwrap_or(-1),
        notes,
    })
}

/// The manifest the partition's segment objects make, naming `writer`, with the notes
/// about what was left out or is missing; `local_start` is where the local log starts
/// (0 when there is none, as in a restore). Writes nothing.
pub async fn rebuilt_manifest(
    store: &RemoteStore,
    writer: &str,
    topic: &str,
    partition: u32,
    local_start: i64,
) -> Result<(PartitionManifest, Vec<String>), RemoteError> {
    let listed = store
        .list_objects(&keys::partition_dir(topic, partition), usize::MAX)
        .await?;
    let mut notes = Vec::new();
    let mut segments: Vec<RemoteSegment> = Vec::new();
    for (base, copies) in copies_by_base(&listed) {
        match best_copy(store, base, copies, &mut notes).await? {
            Some(seg)
                if segments
                    .last()
                    .is_some_and(|s| s.last_offset >= seg.base_offset) =>
            {
                notes.push(format!(
                    "segment {}..={} overlaps the one before; left out",
                    seg.base_offset, seg.last_offset
                ))
            }
            Some(seg) => segments.push(seg),
            None => {}
        }
    }
    note_gaps(&segments, local_start, &mut notes);
    let log_start = segments.first().map_or(local_start, |s| s.base_offset);
    let mut manifest = PartitionManifest::new(writer, topic, partition, log_start);
    manifest.segments = segments;
    Ok((manifest, notes))
}

/// The partition's segment objects grouped by base offset, then by upload attempt.
fn copies_by_base(listed: &[(String, u64)]) -> BTreeMap<i64, BTreeMap<String, Copy>> {
    let mut by_base: BTreeMap<i64, BTreeMap<String, Copy>> = BTreeMap::new();
    for (key, size) in listed {
        if let Some((base, upload, suffix)) = keys::parse_segment_file(key) {
            let copy = by_base
                .entry(base)
                .or_default()
                .entry(upload.into())
                .or_default();
            copy.push((suffix.to_string(), key.clone(), *size));
        }
    }
    by_base
}

/// Of one base offset's copies, the sound one with the most files (a copy cut short
/// has fewer); `None` when no copy's `.log` holds only whole, CRC-checked batches.
async fn best_copy(
    store: &RemoteStore,
    base: i64,
    copies: BTreeMap<String, Copy>,
    notes: &mut Vec<String>,
) -> Result<Option<RemoteSegment>, RemoteError> {
    let mut ranked: Vec<Copy> = copies.into_values().collect();
    ranked.sort_by_key(|files| std::cmp::Reverse(files.len()));
    for files in ranked {
        let Some((_, log_key, log_size)) = files.iter().find(|(s, ..)| s == LOG_SUFFIX) else {
            continue;
        };
        match scan_log(store, log_key, *log_size).await? {
            Ok(scan) if scan.base_offset == base => return segment(store, scan, &files).await,
            Ok(scan) => notes.push(format!(
                "{log_key} starts at offset {}, not {base}; left out",
                scan.base_offset
            )),
            Err(why) => notes.push(format!("{log_key}: {why}; left out")),
        }
    }
    Ok(None)
}

/// What reading a `.log` through found.
struct LogScan {
    base_offset: i64,
    last_offset: i64,
    max_timestamp_ms: i64,
    size: u64,
    crc32c: u32,
}

/// Why a `.log` copy is not a sound run of batches (said in the rebuild's notes).
#[derive(Debug, thiserror::Error)]
enum Unsound {
    #[error("batch at +{at}: {error}")]
    Batch { at: usize, error: BatchError },
    #[error("batch at +{at} goes back to offset {offset}")]
    GoesBack { at: usize, offset: i64 },
    #[error("no batches")]
    Empty,
}

/// Reads a `.log` object through in ranged GETs, checking every batch's framing and
/// CRC-32C: `Ok(Err(why))` when it is not a sound run of batches.
async fn scan_log(
    store: &RemoteStore,
    key: &str,
    size: u64,
) -> Result<Result<LogScan, Unsound>, RemoteError> {
    let (len, mut pos) = (size as usize, 0usize);
    let (mut start, mut bytes) = (0usize, bytes::Bytes::new());
    let mut scan = LogScan {
        base_offset: -1,
        last_offset: -1,
        max_timestamp_ms: -1,
        size,
        crc32c: 0,
    };
    while pos < len {
        let window = Window {
            start,
            bytes: &bytes,
            len,
        };
        let step = match window.holds_header_at(pos) {
            true => window.step_at(pos),
            false => None,
        };
        let (at, h) = match step {
            Some(Ok((at, h))) if at + h.size() <= start + bytes.len() => (at, h),
            Some(Err((at, e))) => return Ok(Err(Unsound::Batch { at, error: e })),
            // The next header or batch is not all in the window: read from it on.
            _ => {
                let need = (HEADER_SIZE as u64).max(window_batch_size(&window, pos));
                let end = (pos as u64 + need.max(SCAN_BYTES)).min(size);
                bytes = store.get_range(store.key(key), pos as u64..end).await?;
                start = pos;
                continue;
            }
        };
        let batch = &bytes[at - start..at - start + h.size()];
        if let Err(error) = check_framing_and_crc(batch) {
            return Ok(Err(Unsound::Batch { at, error }));
        }
        if scan.base_offset < 0 {
            scan.base_offset = h.base_offset;
        }
        if h.base_offset <= scan.last_offset {
            return Ok(Err(Unsound::GoesBack {
                at,
                offset: h.base_offset,
            }));
        }
        scan.last_offset = h.last_offset();
        scan.max_timestamp_ms = scan.max_timestamp_ms.max(h.max_timestamp);
        scan.crc32c = crc32c::crc32c_append(scan.crc32c, batch);
        pos = at + h.size();
    }
    match scan.base_offset {
        -1 => Ok(Err(Unsound::Empty)),
        _ => Ok(Ok(scan)),
    }
}

/// The size of the batch whose header the window holds at `pos` (0 when it holds none).
fn window_batch_size(window: &Window<'_>, pos: usize) -> u64 {
    match window.holds_header_at(pos) {
        true => window
            .step_at(pos)
            .and_then(Result::ok)
            .map_or(0, |(_, h)| h.size() as u64),
        false => 0,
    }
}

/// The manifest's entry for a sound copy: the other files read whole for their CRC-32C.
async fn segment(
    store: &RemoteStore,
    scan: LogScan,
    files: &Copy,
) -> Result<Option<RemoteSegment>, RemoteError> {
    let mut named = Vec::with_capacity(files.len());
    for (suffix, key, size) in files {
        let crc32c = match suffix.as_str() {
            LOG_SUFFIX => scan.crc32c,
            _ => crc32c::crc32c(&store.get(store.key(key)).await?.0),
        };
        named.push(RemoteFile {
            suffix: suffix.clone(),
            key: key.clone(),
            size: *size,
            crc32c,
        });
    }
    Ok(Some(RemoteSegment {
        base_offset: scan.base_offset,
        last_offset: scan.last_offset,
        max_timestamp_ms: scan.max_timestamp_ms,
        size_bytes: scan.size,
        uploaded_ms: crate::time::now_ms(),
        files: named,
    }))
}

/// Offsets neither tier holds: between two remote segments, and between the last one and
/// the local log's start.
fn note_gaps(segments: &[RemoteSegment], local_start: i64, notes: &mut Vec<String>) {
    for pair in segments.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if before.last_offset + 1 < after.base_offset {
            notes.push(format!(
                "offsets {}..{} are in no segment object (deleted from the bucket?)",
                before.last_offset + 1,
                after.base_offset
            ));
        }
    }
    if let Some(last) = segments.last() {
        if last.last_offset + 1 < local_start {
            notes.push(format!(
                "offsets {}..{} are in neither tier",
                last.last_offset + 1,
                local_start
            ));
        }
    }
    if let Some(first) = segments.first() {
        notes.push(format!(
            "log start set to the first segment's base offset {} (a DeleteRecords above it is not recorded in segment objects: repeat it if one was made)",
            first.base_offset
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(base: i64, last: i64) -> RemoteSegment {
        RemoteSegment {
            base_offset: base,
            last_offset: last,
            max_timestamp_ms: -1,
            size_bytes: 0,
            uploaded_ms: 0,
            files: Vec::new(),
        }
    }

    #[test]
    fn objects_group_by_base_then_upload_and_strangers_are_ignored() {
        let key = |base, upload, suffix| keys::segment_file("t", 0, base, upload, suffix);
        let listed = vec![
            (key(0, "aa", ".log"), 10),
            (key(0, "aa", ".index"), 1),
            (key(0, "bb", ".log"), 10),
            (key(7, "cc", ".log"), 5),
            ("topics/t/0/manifest.json".to_string(), 3),
            ("topics/t/0/notes.txt".to_string(), 3),
        ];
        let grouped = copies_by_base(&listed);
        assert_eq!(grouped.keys().copied().collect::<Vec<_>>(), vec![0, 7]);
        assert_eq!(grouped[&0]["aa"].len(), 2);
        assert_eq!(grouped[&0]["bb"].len(), 1);
    }

    #[test]
    fn gaps_between_segments_and_before_the_local_log_are_named() {
        let mut notes = Vec::new();
        note_gaps(&[seg(0, 9), seg(20, 29)], 40, &mut notes);
        assert!(notes
            .iter()
            .any(|n| n.contains("offsets 10..20 are in no segment")));
        assert!(notes
            .iter()
            .any(|n| n.contains("offsets 30..40 are in neither tier")));
        let mut notes = Vec::new();
        note_gaps(&[seg(0, 9), seg(10, 19)], 20, &mut notes);
        assert_eq!(notes.len(), 1, "only the log start note: {notes:?}");
    }
}
