//! Reads below the local log's start, from the remote tier: the segment from the manifest,
//! the byte position from its offset (or time) index, fetched whole once and checked
//! against the manifest's CRC, then ranged reads of just the batches needed, each batch
//! checked (framing, CRC-32C, offsets within the segment) before it is served.

use bytes::Bytes;

use super::chunks::{self, read_range};
use super::error::RemoteError;
use super::manifest::{RemoteFile, RemoteSegment};
use super::partition::RemoteLog;
use crate::format::batch::{check_framing_and_crc, RecordsSection};
use crate::format::cursor::{BatchCursor, Window};
use crate::format::{BatchHeader, HEADER_SIZE};
use crate::log::offset_index::OffsetIndex;
use crate::log::time_index::TimeIndex;
use crate::log::txn_index::{AbortedTxns, TXN_INDEX_SUFFIX};
use crate::log::{INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};

/// Whole batches from the one holding `offset` (or the first after it), up to `max_bytes`
/// (at least one batch when `at_least_one`), from the remote tier. Empty when the remote
/// tier holds nothing at or after `offset`.
pub async fn read(
    log: &RemoteLog,
    offset: i64,
    max_bytes: usize,
    at_least_one: bool,
) -> Result<Bytes, RemoteError> {
    let manifest = log.manifest().await?;
    crate::metrics::record_remote(|m| m.reads += 1);
    let mut from = offset.max(manifest.log_start_offset);
    while let Some(seg) = manifest.segment_for(from) {
        let data = read_segment(log, seg, from, max_bytes, at_least_one).await?;
        if !data.is_empty() {
            return Ok(data);
        }
        from = seg.last_offset + 1;
    }
    Ok(Bytes::new())
}

fn log_file(seg: &RemoteSegment) -> Result<&RemoteFile, RemoteError> {
    seg.file(LOG_SUFFIX)
        .ok_or_else(|| RemoteError::corrupt(format!("segment {}", seg.base_offset), "no .log"))
}

/// The batches of one segment from the one holding `offset`.
async fn read_segment(
    log: &RemoteLog,
    seg: &RemoteSegment,
    offset: i64,
    max_bytes: usize,
    at_least_one: bool,
) -> Result<Bytes, RemoteError> {
    let file = log_file(seg)?;
    let mut pos = index_position(log, seg, offset).await?;
    // The batch holding the offset.
    let first = loop {
        let Some(h) = header_at(log, seg, file, pos).await? else {
            return Ok(Bytes::new());
        };
        if h.last_offset() >= offset {
            break h;
        }
        pos += h.size() as u64;
    };
    let mut end = pos + first.size() as u64;
    if !at_least_one && first.size() > max_bytes {
        return Ok(Bytes::new());
    }
    while let Some(h) = header_at(log, seg, file, end).await? {
        if (end - pos) as usize + h.size() > max_bytes {
            break;
        }
        end += h.size() as u64;
    }
    let data = read_range(&log.store, file, pos, end).await?;
    verify_batches(seg, file, pos, &data)?;
    Ok(data)
}

/// The header of the batch at `pos` by the batch cursor's framing rules, or `None` at the
/// segment's end. A header that does not parse, a batch cut off by the object's end or one
/// holding offsets outside the segment is corruption (and leaves the cache).
async fn header_at(
    log: &RemoteLog,
    seg: &RemoteSegment,
    file: &RemoteFile,
    pos: u64,
) -> Result<Option<BatchHeader>, RemoteError> {
    if pos >= file.size {
        return Ok(None);
    }
    let head = read_range(&log.store, file, pos, pos + HEADER_SIZE as u64).await?;
    let window = Window {
        start: pos as usize,
        bytes: &head,
        len: file.size as usize,
    };
    if !window.holds_header_at(pos as usize) {
        return Err(corrupt(file, pos, "short read of a batch header".into()));
    }
    match window.step_at(pos as usize) {
        None => Ok(None),
        Some(Ok((_, h))) => match outside_segment(seg, &h) {
            None => Ok(Some(h)),
            Some(what) => Err(corrupt(file, pos, what)),
        },
        Some(Err((_, e))) => Err(corrupt(file, pos, e.to_string())),
    }
}

/// Bad bytes at `pos` of a remote object: dropped from the chunk cache, reported.
fn corrupt(file: &RemoteFile, pos: u64, what: String) -> RemoteError {
    chunks::forget(&file.key);
    RemoteError::corrupt(&file.key, format!("at {pos}: {what}"))
}

/// What is wrong with a batch whose offsets leave its segment's (as the manifest records
/// them); `None` when they lie inside.
fn outside_segment(seg: &RemoteSegment, h: &BatchHeader) -> Option<String> {
    match h.base_offset >= seg.base_offset && h.last_offset() <= seg.last_offset {
        true => None,
        false => Some(format!(
            "batch {}..={} of {} bytes outside segment {}..={}",
            h.base_offset,
            h.last_offset(),
            h.size(),
            seg.base_offset,
            seg.last_offset
        )),
    }
}

/// Checks every batch of bytes read from `pos` before they are served, walking them with the
/// batch cursor: whole, CRC-32C intact and inside the segment; anything else is corruption.
fn verify_batches(
    seg: &RemoteSegment,
    file: &RemoteFile,
    pos: u64,
    data: &[u8],
) -> Result<(), RemoteError> {
    let mut verified = 0;
    for step in BatchCursor::new(data) {
        let (at, h) = step.map_err(|(at, e)| corrupt(file, pos + at as u64, e.to_string()))?;
        let at_pos = pos + at as u64;
        check_framing_and_crc(&data[at..at + h.size()])
            .map_err(|e| corrupt(file, at_pos, e.to_string()))?;
        if let Some(what) = outside_segment(seg, &h) {
            return Err(corrupt(file, at_pos, what));
        }
        verified = at + h.size();
    }
    // A cursor that met no error walked every byte.
    assert_eq!(
        verified,
        data.len(),
        "every byte served is in a verified batch"
    );
    Ok(())
}

/// The byte position to start from for `offset`: the offset index's floor entry (0 when
/// the segment has no index).
async fn index_position(
    log: &RemoteLog,
    seg: &RemoteSegment,
    offset: i64,
) -> Result<u64, RemoteError> {
    let Some(file) = seg.file(INDEX_SUFFIX) else {
        return Ok(0);
    };
    let bytes = chunks::whole_file(&log.store, file).await?;
    let index = OffsetIndex::decode(seg.base_offset, &bytes, bytes.len() / 8 + 1)
        .map_err(|e| RemoteError::corrupt(&file.key, e.to_string()))?;
    Ok(index.lookup(offset).position as u64)
}

/// Kafka's offsetsForTimes over the remote tier: the first record at or after `start`
/// with a timestamp >= `target`, as (offset, timestamp).
pub async fn find_by_timestamp(
    log: &RemoteLog,
    target: i64,
    start: i64,
) -> Result<Option<(i64, i64)>, RemoteError> {
    let manifest = log.manifest().await?;
    crate::metrics::record_remote(|m| m.reads += 1);
    let start = start.max(manifest.log_start_offset);
    for seg in manifest
        .segments
        .iter()
        .filter(|s| s.last_offset >= start && s.max_timestamp_ms >= target)
    {
        if let Some(found) = find_in_segment(log, seg, target, start).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

async fn find_in_segment(
    log: &RemoteLog,
    seg: &RemoteSegment,
    target: i64,
    start: i64,
) -> Result<Option<(i64, i64)>, RemoteError> {
    // Entry (T, O): every record up to O has a timestamp <= T (as the local lookup).
    let from = match seg.file(TIME_INDEX_SUFFIX) {
        Some(file) => {
            let bytes = chunks::whole_file(&log.store, file).await?;
            let index = TimeIndex::decode(seg.base_offset, &bytes, bytes.len() / 12 + 1)
                .map_err(|e| RemoteError::corrupt(&file.key, e.to_string()))?;
            let e = index.lookup(target);
            if e.timestamp >= 0 && e.timestamp < target {
                e.offset + 1
            } else {
                e.offset
            }
        }
        None => seg.base_offset,
    }
    .max(start);
    let file = log_file(seg)?;
    let mut pos = index_position(log, seg, from).await?;
    while let Some(h) = header_at(log, seg, file, pos).await? {
        if h.last_offset() >= from && h.max_timestamp >= target {
            let batch = read_range(&log.store, file, pos, pos + h.size() as u64).await?;
            verify_batches(seg, file, pos, &batch)?;
            let corrupt =
                |e: crate::format::BatchError| RemoteError::corrupt(&file.key, e.to_string());
            let section = RecordsSection::of(&batch, &h).map_err(corrupt)?;
            let records = section.decode().map_err(corrupt)?;
            if let Some(r) = records
                .iter()
                .find(|r| r.timestamp >= target && r.offset >= from)
            {
                return Ok(Some((r.offset, r.timestamp)));
            }
        }
        pos += h.size() as u64;
    }
    Ok(None)
}

/// (producer id, first offset) of the aborted transactions a read_committed read of
/// `[from, upper)` overlaps, from the remote segments' `.txnindex` objects (Kafka's
/// `collectAbortedTransactions`): from the segment holding `from` on, until an entry's last
/// stable offset reaches `upper` (no transaction open there is left unaccounted). The
/// flag says whether that happened; if not, the local log's entries complete the answer.
pub async fn aborted_between(
    log: &RemoteLog,
    from: i64,
    upper: i64,
) -> Result<(Vec<(i64, i64)>, bool), RemoteError> {
    let manifest = log.manifest().await?;
    let mut found = Vec::new();
    for seg in manifest.segments.iter().filter(|s| s.last_offset >= from) {
        let Some(file) = seg.file(TXN_INDEX_SUFFIX) else {
            continue;
        };
        let bytes = chunks::whole_file(&log.store, file).await?;
        let entries = AbortedTxns::parse_file(&bytes)
            .map_err(|at| RemoteError::corrupt(&file.key, format!("txnindex entry at {at}")))?;
        for e in entries {
            if e.last_offset >= from && e.first_offset < upper {
                found.push((e.producer_id, e.first_offset));
            }
            if e.last_stable_offset >= upper {
                return Ok((found, true));
            }
        }
    }
    Ok((found, false))
}
