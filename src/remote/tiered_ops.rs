//! A tiered partition's operations: those that reach below the local log's start are
//! served from the remote tier, and on a read replica (`remote.read.replica=true`) every
//! operation answers from the manifest and the remote segments (Fetch, ListOffsets,
//! Describe; Produce and every other change are refused). The partition's own task is
//! reached through [`LocalPartition`], which the shard implements. Remote reads run in the
//! request's task, never the partition's: a slow object store holds up only the requests
//! that need it.

use std::rc::Rc;

use super::manifest::PartitionManifest;
use super::partition::WriterRole;
use super::RemoteLog;
use crate::broker_error::BrokerError;
use crate::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::partition_ops::{Isolation, OpOk, OpResult, PartitionOp, PartitionSummary};
use crate::protocol::ErrorCode;
use crate::topic_partition::TopicPartition;

pub type LocalFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

/// A tiered partition's local log, as its remote tier reaches it: the partition's task.
pub trait LocalPartition {
    /// Runs `op` on the partition's task (the local log only).
    fn call(&self, op: PartitionOp) -> LocalFuture<'_, OpResult>;
    /// The aborted transactions of the local log overlapping `from..upper` (none when the
    /// partition is closing).
    fn aborted_txns(&self, from: i64, upper: i64) -> LocalFuture<'_, Vec<(i64, i64)>>;
}

/// Runs `op` on a tiered partition: on its task, and from the remote tier when it
/// reaches below the local log's start. Log starts answered are the whole log's.
pub async fn tiered_op(
    handle: &dyn LocalPartition,
    remote: &RemoteLog,
    role: impl FnOnce() -> WriterRole,
    op: PartitionOp,
) -> OpResult {
    if remote.is_read_replica() {
        return replica_op(remote, op).await;
    }
    match &op {
        PartitionOp::Fetch {
            offset,
            max_bytes,
            at_least_one,
            isolation,
        } => {
            let read = (*offset, *max_bytes, *at_least_one, *isolation);
            match handle.call(op).await {
                Err(e) if e.code() == ErrorCode::OffsetOutOfRange => {
                    fetch_remote(handle, remote, read, e).await
                }
                other => Ok(overall_start(remote, other?)),
            }
        }
        PartitionOp::ListOffsets { timestamp, .. } => {
            let timestamp = *timestamp;
            if let Some(found) = find_remote(remote, timestamp).await? {
                return Ok(found);
            }
            Ok(match (timestamp, handle.call(op).await?) {
                (EARLIEST_TIMESTAMP, OpOk::Offset { offset, timestamp }) => OpOk::Offset {
                    offset: remote.log_start(offset),
                    timestamp,
                },
                (_, other) => other,
            })
        }
        PartitionOp::DeleteRecords { offset } => {
            remote.set_role(role());
            delete_records(handle, remote, *offset).await
        }
        PartitionOp::FetchAtTime {
            timestamp,
            max_bytes,
        } => {
            let max_bytes = *max_bytes;
            match find_remote(remote, *timestamp).await? {
                Some(OpOk::Offset { offset, timestamp }) => {
                    fetch_at_time_remote(handle, remote, (offset, timestamp), max_bytes).await
                }
                _ => Ok(overall_start(remote, handle.call(op).await?)),
            }
        }
        _ => Ok(overall_start(remote, handle.call(op).await?)),
    }
}

/// Rebuilds a tiered partition's lost manifest from its segment objects (an operator's
/// `topics rebuild-manifest`); the uploader then resumes at once.
pub async fn rebuild_manifest(remote: Option<Rc<RemoteLog>>, tp: &TopicPartition) -> OpResult {
    let remote = remote.ok_or_else(|| {
        BrokerError::new(
            ErrorCode::InvalidRequest,
            format!("{tp} is not tiered (remote.storage.enable is off): it has no manifest"),
        )
    })?;
    let rebuilt = super::rebuild::rebuild(&remote)
        .await
        .map_err(|e| e.to_broker())?;
    tracing::warn!(partition = %tp, segments = rebuilt.segments, log_start = rebuilt.log_start_offset, next_offset = rebuilt.next_offset, notes = ?rebuilt.notes, "remote manifest rebuilt from the segment objects in the bucket");
    Ok(OpOk::ManifestRebuilt(rebuilt))
}

/// DeleteRecords on both tiers: the local log first (it checks the offset against its
/// end), then the manifest's log start; answers the whole log's new start.
async fn delete_records(handle: &dyn LocalPartition, remote: &RemoteLog, offset: i64) -> OpResult {
    let local = handle.call(PartitionOp::DeleteRecords { offset }).await?;
    let OpOk::LowWatermark(local_low) = local else {
        return Ok(local);
    };
    let target = if offset == -1 { local_low } else { offset };
    remote
        .advance_log_start(target)
        .await
        .map_err(|e| e.to_broker())?;
    remote.local_start.set(local_low);
    Ok(OpOk::LowWatermark(remote.log_start(local_low).max(target)))
}

/// Reports the whole log's start in a local answer, and notes the local start it names.
fn overall_start(remote: &RemoteLog, mut ok: OpOk) -> OpOk {
    let start = match &mut ok {
        OpOk::Fetched {
            log_start_offset, ..
        }
        | OpOk::FetchedAtTime {
            log_start_offset, ..
        }
        | OpOk::Produced {
            log_start_offset, ..
        } => log_start_offset,
        OpOk::Partition(summary) => {
            summary.remote = remote.info(remote.upload_lag_bytes.get(), summary.log_start_offset);
            &mut summary.log_start_offset
        }
        _ => return ok,
    };
    remote.local_start.set(*start);
    *start = remote.log_start(*start);
    ok
}

/// A fetch below the local log's start: from the remote tier if it holds the offset, else
/// the local answer (out of range).
async fn fetch_remote(
    handle: &dyn LocalPartition,
    remote: &RemoteLog,
    (offset, max_bytes, at_least_one, isolation): (i64, usize, bool, Isolation),
    out_of_range: BrokerError,
) -> OpResult {
    let OpOk::Partition(summary) = handle.call(PartitionOp::Describe).await? else {
        return Err(out_of_range);
    };
    remote.local_start.set(summary.log_start_offset);
    let manifest = remote.manifest().await.map_err(|e| e.to_broker())?;
    let remote_start = manifest.start_offset();
    if !remote_start.is_some_and(|start| offset >= start && offset < summary.log_start_offset) {
        return Err(out_of_range);
    }
    let records = super::read::read(remote, offset, max_bytes, at_least_one)
        .await
        .map_err(|e| e.to_broker())?;
    let aborted = match isolation {
        Isolation::ReadCommitted => aborted_txns(handle, remote, offset, &records).await?,
        _ => Vec::new(),
    };
    Ok(OpOk::Fetched {
        log_start_offset: remote.log_start(summary.log_start_offset),
        log_end_offset: summary.log_end_offset,
        last_stable_offset: summary.last_stable_offset,
        aborted,
        records: records.into(),
    })
}

/// The aborted transactions a read_committed client needs for remote `records` read from
/// `from`: the remote segments' `.txnindex` entries, then the local log's when a
/// transaction's marker may lie there (it spans the tiers).
async fn aborted_txns(
    handle: &dyn LocalPartition,
    remote: &RemoteLog,
    from: i64,
    records: &[u8],
) -> Result<Vec<(i64, i64)>, BrokerError> {
    let upper = crate::format::cursor::BatchCursor::new(records)
        .filter_map(|step| step.ok())
        .last()
        .map(|(_, h)| h.last_offset() + 1);
    let Some(upper) = upper else {
        return Ok(Vec::new());
    };
    let (mut found, complete) = super::read::aborted_between(remote, from, upper)
        .await
        .map_err(|e| e.to_broker())?;
    if !complete {
        let local = handle.aborted_txns(from, upper).await;
        found.extend(local);
        found.sort_unstable();
        found.dedup();
    }
    Ok(found)
}

/// FetchAtTime whose record lies in the remote tier: the batches from it, with the log's
/// bounds.
async fn fetch_at_time_remote(
    handle: &dyn LocalPartition,
    remote: &RemoteLog,
    (offset, timestamp): (i64, i64),
    max_bytes: usize,
) -> OpResult {
    let records = super::read::read(remote, offset, max_bytes, true)
        .await
        .map_err(|e| e.to_broker())?;
    let OpOk::Partition(summary) = handle.call(PartitionOp::Describe).await? else {
        return Err(BrokerError::new(
            ErrorCode::Internal,
            "Describe answered something else",
        ));
    };
    Ok(OpOk::FetchedAtTime {
        offset,
        timestamp,
        log_start_offset: remote.log_start(summary.log_start_offset),
        log_end_offset: summary.log_end_offset,
        records: records.into(),
    })
}

/// Kafka's offsetsForTimes when the answer lies in the remote tier (below the local log's
/// start); `None` sends the lookup to the local log.
async fn find_remote(remote: &RemoteLog, timestamp: i64) -> Result<Option<OpOk>, BrokerError> {
    if matches!(timestamp, LATEST_TIMESTAMP | MAX_TIMESTAMP) || timestamp < EARLIEST_TIMESTAMP {
        return Ok(None);
    }
    let manifest = remote.manifest().await.map_err(|e| e.to_broker())?;
    let Some(start) = manifest.start_offset() else {
        return Ok(None);
    };
    let local_start = remote.local_start.get();
    if timestamp == EARLIEST_TIMESTAMP {
        // The remote tier's start, when it lies below the local one: every remote record
        // is below the last stable offset, so read_committed gets the same answer.
        return Ok((start < local_start).then_some(OpOk::Offset {
            offset: start,
            timestamp: -1,
        }));
    }
    if manifest
        .segment_for_time(timestamp, start)
        .is_none_or(|s| s.base_offset >= local_start)
    {
        return Ok(None);
    }
    let found = super::read::find_by_timestamp(remote, timestamp, start)
        .await
        .map_err(|e| e.to_broker())?;
    // An answer the local log also holds is the local log's to give.
    Ok(found
        .filter(|&(offset, _)| offset < local_start)
        .map(|(offset, timestamp)| OpOk::Offset { offset, timestamp }))
}

fn read_only(topic: &str) -> BrokerError {
    BrokerError::new(
        ErrorCode::InvalidRequest,
        format!("this server is a read replica of the bucket: topic {topic:?} is read-only here; write to the node that uploads it"),
    )
}

/// (log start, log end) of the remote tier.
fn bounds(m: &PartitionManifest) -> (i64, i64) {
    let end = m.next_offset().unwrap_or(m.log_start_offset);
    (m.start_offset().unwrap_or(end), end)
}

/// Runs a partition operation on a read replica, from the remote tier only.
async fn replica_op(remote: &RemoteLog, op: PartitionOp) -> OpResult {
    let m = remote.manifest().await.map_err(|e| e.to_broker())?;
    let (start, end) = bounds(&m);
    match op {
        PartitionOp::Fetch {
            offset,
            max_bytes,
            at_least_one,
            ..
        } => {
            if offset < start || offset > end {
                return Err(BrokerError::new(
                    ErrorCode::OffsetOutOfRange,
                    format!("offset {offset} is outside {start}..{end} (read replica)"),
                ));
            }
            let records = super::read::read(remote, offset, max_bytes, at_least_one)
                .await
                .map_err(|e| e.to_broker())?;
            Ok(OpOk::Fetched {
                log_start_offset: start,
                log_end_offset: end,
                last_stable_offset: end,
                aborted: Vec::new(),
                records: records.into(),
            })
        }
        PartitionOp::ListOffsets { timestamp, .. } => list_offsets(remote, &m, timestamp).await,
        PartitionOp::FetchAtTime {
            timestamp,
            max_bytes,
        } => {
            let found = super::read::find_by_timestamp(remote, timestamp, start)
                .await
                .map_err(|e| e.to_broker())?;
            let (offset, found_ts, records) = match found {
                Some((o, ts)) => (
                    o,
                    ts,
                    super::read::read(remote, o, max_bytes, true)
                        .await
                        .map_err(|e| e.to_broker())?,
                ),
                None => (-1, -1, Default::default()),
            };
            Ok(OpOk::FetchedAtTime {
                offset,
                timestamp: found_ts,
                log_start_offset: start,
                log_end_offset: end,
                records: records.into(),
            })
        }
        PartitionOp::Describe => Ok(OpOk::Partition(PartitionSummary {
            log_start_offset: start,
            log_end_offset: end,
            size_bytes: m.size_bytes(),
            segments: m.segments.len() as u32,
            last_stable_offset: end,
            cleaner: crate::protocol::CleanerInfo::NOT_COMPACTED,
            remote: remote.info(0, start),
        })),
        PartitionOp::DropOsCaches | PartitionOp::SetConfig(_) => Ok(OpOk::Done),
        _ => Err(read_only(&remote.topic)),
    }
}

/// ListOffsets over the remote tier: earliest, latest, max timestamp, or by time.
async fn list_offsets(remote: &RemoteLog, m: &PartitionManifest, timestamp: i64) -> OpResult {
    let (start, end) = bounds(m);
    let offset = |offset, timestamp| Ok(OpOk::Offset { offset, timestamp });
    let target = match timestamp {
        EARLIEST_TIMESTAMP => return offset(start, -1),
        LATEST_TIMESTAMP => return offset(end, -1),
        MAX_TIMESTAMP => match m.segments.iter().map(|s| s.max_timestamp_ms).max() {
            Some(max) if max >= 0 => max,
            _ => return offset(-1, -1),
        },
        t if t < 0 => {
            return Err(BrokerError::new(
                ErrorCode::InvalidTimestamp,
                format!("timestamp {t}"),
            ))
        }
        t => t,
    };
    match super::read::find_by_timestamp(remote, target, start)
        .await
        .map_err(|e| e.to_broker())?
    {
        Some((o, ts)) => offset(o, ts),
        None => offset(-1, -1),
    }
}
