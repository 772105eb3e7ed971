//! A read replica's partition operations (`remote.read.replica=true`; the topics come from
//! `remote/read_replica.rs`): Fetch, ListOffsets (earliest, latest, by time, max timestamp)
//! and Describe answer from the manifest and the remote segments; Produce and every other
//! change are refused.

use crate::broker_error::BrokerError;
use crate::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::protocol::ErrorCode;
use crate::remote::manifest::PartitionManifest;
use crate::remote::{self, RemoteLog};
use crate::shard::messages::{OpOk, OpResult, PartitionOp, PartitionSummary};

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
pub(crate) async fn replica_op(remote: &RemoteLog, op: PartitionOp) -> OpResult {
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
            let records = remote::read::read(remote, offset, max_bytes, at_least_one)
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
            let found = remote::read::find_by_timestamp(remote, timestamp, start)
                .await
                .map_err(|e| e.to_broker())?;
            let (offset, found_ts, records) = match found {
                Some((o, ts)) => (
                    o,
                    ts,
                    remote::read::read(remote, o, max_bytes, true)
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
    match remote::read::find_by_timestamp(remote, target, start)
        .await
        .map_err(|e| e.to_broker())?
    {
        Some((o, ts)) => offset(o, ts),
        None => offset(-1, -1),
    }
}
