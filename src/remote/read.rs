//! Reads below the local log's start, from the remote tier: the segments the manifest
//! names, each opened with the local segment's own reading code over its objects
//! ([`OpenRemoteSegment`]): the byte position from its offset (or time) index, ranged
//! reads through the chunk cache, each batch checked (framing, CRC-32C, offsets within the
//! segment) before it is served.

use bytes::Bytes;

use super::chunks;
use super::error::RemoteError;
use super::keys;
use super::manifest::RemoteSegment;
use super::partition::RemoteLog;
use super::segment_files::OpenRemoteSegment;
use crate::log::txn_index::{AbortedTxns, TXN_INDEX_SUFFIX};

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
        let mut opened = open(log, seg).await?;
        let data = opened.read(from, max_bytes, at_least_one).await?;
        keep(log, opened);
        if !data.is_empty() {
            return Ok(data);
        }
        from = seg.last_offset + 1;
    }
    Ok(Bytes::new())
}

/// Open remote segments a partition keeps for its next reads (a reader catching up walks
/// one segment in many fetches; two serve a reader crossing into the next segment).
const KEPT_OPEN: usize = 2;

/// `seg` of `log`'s partition, opened for reading: one an earlier read left (taken out, so
/// concurrent readers never share one), or opened now.
async fn open(log: &RemoteLog, seg: &RemoteSegment) -> Result<OpenRemoteSegment, RemoteError> {
    let kept = {
        let mut opened = log.opened.borrow_mut();
        let at = opened.iter().position(|o| o.is(seg));
        at.map(|i| opened.swap_remove(i))
    };
    if let Some(kept) = kept {
        return Ok(kept);
    }
    let dir = keys::partition_dir(&log.topic, log.partition);
    crate::metrics::record_remote(|m| m.segment_opens += 1);
    OpenRemoteSegment::open(&log.store, &dir, seg).await
}

/// Keeps a segment that served a read for the next one (a failed read drops it instead).
fn keep(log: &RemoteLog, segment: OpenRemoteSegment) {
    let mut opened = log.opened.borrow_mut();
    if opened.len() == KEPT_OPEN {
        opened.remove(0);
    }
    opened.push(segment);
    assert!(
        opened.len() <= KEPT_OPEN,
        "the bound on open remote segments"
    );
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
        let mut opened = open(log, seg).await?;
        let found = opened.find_by_timestamp(target, start).await?;
        keep(log, opened);
        if found.is_some() {
            return Ok(found);
        }
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
