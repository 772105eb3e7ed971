//! The remote tier on the shard: which partitions it owns are tiered (a `RemoteLog` beside
//! each one's task), partition operations that reach below the local log's start served
//! from the remote tier, and the uploader that copies sealed segments and applies remote
//! retention every `remote.upload.interval.ms`. Remote reads run in the request's task,
//! never the partition's: a slow object store holds up only the requests that need it.

use std::rc::Rc;
use std::time::Duration;

use crate::broker_error::BrokerError;
use crate::io::deadline::before;
use crate::log::{EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP};
use crate::remote::{self, RemoteError, RemoteLog};
use crate::shard::messages::{Isolation, OpOk, OpResult, PartitionOp};
use crate::shard::partition_actor::{Job, PartitionHandle, TieringView};
use crate::shard::runtime::Shard;
use crate::topic_partition::TopicPartition;

/// Longest pause between upload attempts of a partition whose uploads fail.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

impl Shard {
    /// The remote tier of a partition this shard owns, if its topic is tiered.
    pub fn remote_log(&self, tp: &TopicPartition) -> Option<Rc<RemoteLog>> {
        self.remote_logs.borrow().get(tp).cloned()
    }

    /// Gives an owned partition of a tiered topic its remote tier (on open, or when
    /// remote.storage.enable is turned on).
    pub(crate) fn attach_remote(
        &self,
        topic: &str,
        partition: u32,
        tiered: bool,
        local_start: i64,
    ) {
        let tp = TopicPartition::new(topic, partition as i32);
        let Some(tiering) = self.tiering.as_ref().filter(|_| tiered) else {
            self.remote_logs.borrow_mut().remove(&tp);
            return;
        };
        let remote = self
            .remote_logs
            .borrow_mut()
            .entry(tp)
            .or_insert_with(|| {
                RemoteLog::new(
                    tiering.store.clone(),
                    tiering.writer.as_str().into(),
                    topic,
                    partition,
                    self.config.remote_read_replica,
                )
            })
            .clone();
        if local_start >= 0 {
            remote.local_start.set(local_start);
        }
    }

    /// Forgets the remote tiers of a topic's partitions (the topic is gone from this shard).
    pub(crate) fn detach_remote(&self, topic: &str) {
        self.remote_logs
            .borrow_mut()
            .retain(|tp, _| tp.topic != topic);
    }

    /// Runs `op` on a tiered partition: on its task, and from the remote tier when it
    /// reaches below the local log's start. Log starts answered are the whole log's.
    pub(crate) async fn tiered_op(
        &self,
        handle: &PartitionHandle,
        remote: &RemoteLog,
        op: PartitionOp,
    ) -> OpResult {
        if self.config.remote_read_replica {
            return crate::shard::read_replica::replica_op(remote, op).await;
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
                    Err(e) if e.code == crate::protocol::ErrorCode::OffsetOutOfRange => {
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
            PartitionOp::DeleteRecords { offset } => delete_records(handle, remote, *offset).await,
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
}

/// Rebuilds a tiered partition's lost manifest from its segment objects (an operator's
/// `topics rebuild-manifest`); the uploader then resumes at once.
pub(crate) async fn rebuild_manifest(
    remote: Option<Rc<RemoteLog>>,
    tp: &TopicPartition,
) -> OpResult {
    let remote = remote.ok_or_else(|| {
        BrokerError::new(
            crate::protocol::ErrorCode::InvalidRequest,
            format!("{tp} is not tiered (remote.storage.enable is off): it has no manifest"),
        )
    })?;
    let rebuilt = remote::rebuild::rebuild(&remote)
        .await
        .map_err(|e| e.to_broker())?;
    tracing::warn!(partition = %tp, segments = rebuilt.segments, log_start = rebuilt.log_start_offset, next_offset = rebuilt.next_offset, notes = ?rebuilt.notes, "remote manifest rebuilt from the segment objects in the bucket");
    Ok(OpOk::ManifestRebuilt(rebuilt))
}

/// DeleteRecords on both tiers: the local log first (it checks the offset against its
/// end), then the manifest's log start; answers the whole log's new start.
async fn delete_records(handle: &PartitionHandle, remote: &RemoteLog, offset: i64) -> OpResult {
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
    handle: &PartitionHandle,
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
    let records = remote::read::read(remote, offset, max_bytes, at_least_one)
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
    handle: &PartitionHandle,
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
    let (mut found, complete) = remote::read::aborted_between(remote, from, upper)
        .await
        .map_err(|e| e.to_broker())?;
    if !complete {
        let local = handle
            .job(|reply| Job::AbortedTxns { from, upper, reply })
            .await
            .unwrap_or_default();
        found.extend(local);
        found.sort_unstable();
        found.dedup();
    }
    Ok(found)
}

/// FetchAtTime whose record lies in the remote tier: the batches from it, with the log's
/// bounds.
async fn fetch_at_time_remote(
    handle: &PartitionHandle,
    remote: &RemoteLog,
    (offset, timestamp): (i64, i64),
    max_bytes: usize,
) -> OpResult {
    let records = remote::read::read(remote, offset, max_bytes, true)
        .await
        .map_err(|e| e.to_broker())?;
    let OpOk::Partition(summary) = handle.call(PartitionOp::Describe).await? else {
        return Err(BrokerError::new(
            crate::protocol::ErrorCode::Internal,
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
    let found = remote::read::find_by_timestamp(remote, timestamp, start)
        .await
        .map_err(|e| e.to_broker())?;
    // An answer the local log also holds is the local log's to give.
    Ok(found
        .filter(|&(offset, _)| offset < local_start)
        .map(|(offset, timestamp)| OpOk::Offset { offset, timestamp }))
}

/// How long one partition's copies may hold a shard's uploader in one pass before the next
/// partition's turn (a backlog goes on in the next pass, which starts at once).
const PASS_SHARE: Duration = Duration::from_secs(10);

/// The uploader of one shard: every `remote.upload.interval.ms`, each tiered partition it
/// owns copies its newly sealed segments and applies remote retention; while a backlog is
/// left (the store was away, the writers outran it), the next pass starts at once. A
/// partition whose store fails backs off (doubling, at most a minute); the others go on.
pub async fn upload_loop(shard: Rc<Shard>) {
    let every = Duration::from_millis(shard.config.remote_upload_interval_ms);
    let shutdown = shard.shutdown_listener();
    let mut backoff: std::collections::HashMap<TopicPartition, (u32, std::time::Instant)> =
        Default::default();
    let mut wait = every;
    while before(wait, shutdown.recv()).await.is_none() {
        wait = every;
        let tiered: Vec<(TopicPartition, Rc<RemoteLog>)> = shard
            .remote_logs
            .borrow()
            .iter()
            .map(|(tp, r)| (tp.clone(), r.clone()))
            .collect();
        for (tp, remote) in tiered {
            if shard.shutting_down.get() {
                return;
            }
            if remote.take_rebuilt() {
                backoff.remove(&tp);
            }
            if backoff
                .get(&tp)
                .is_some_and(|(_, until)| std::time::Instant::now() < *until)
            {
                continue;
            }
            match upload_pass(&shard, &tp, &remote).await {
                Ok(backlog) => {
                    backoff.remove(&tp);
                    if backlog {
                        wait = Duration::ZERO;
                    }
                }
                Err(e) => {
                    let failures = backoff.get(&tp).map_or(0, |(n, _)| *n) + 1;
                    let pause = (every * 2u32.saturating_pow(failures.min(10))).min(MAX_BACKOFF);
                    let retry_in_ms = pause.as_millis() as u64;
                    if let RemoteError::ManifestMissing { .. } = e {
                        tracing::error!(partition = %tp, error = %e, retry_in_ms, "remote tier history lost: uploads and remote retention stopped");
                        crate::metrics::record_remote(|m| m.manifest_missing += 1);
                    } else {
                        tracing::warn!(partition = %tp, error = %e, retry_in_ms, "remote tier pass failed");
                    }
                    crate::metrics::record_remote(|m| m.failed_passes += 1);
                    backoff.insert(tp, (failures, std::time::Instant::now() + pause));
                }
            }
        }
    }
}

/// One partition's pass: copy what is sealed and not yet remote (for at most
/// `PASS_SHARE`), then remote retention. True when segments are left to copy.
async fn upload_pass(
    shard: &Rc<Shard>,
    tp: &TopicPartition,
    remote: &RemoteLog,
) -> Result<bool, RemoteError> {
    if shard.config.remote_read_replica {
        return remote.reload().await.map(|()| false);
    }
    let Some(handle) = shard.partition_handle(tp) else {
        return Ok(false);
    };
    let Some(meta) = shard.topic(&tp.topic) else {
        return Ok(false);
    };
    if tp.partition == 0 {
        describe_topic(remote, &meta).await?;
    }
    if !remote.swept.get() {
        remote::upload::sweep_orphans(remote).await?;
        remote.swept.set(true);
    }
    let started = std::time::Instant::now();
    let mut view = tiering_view(&handle, remote).await?;
    while !view.to_copy.is_empty() && started.elapsed() < PASS_SHARE {
        for seg in std::mem::take(&mut view.to_copy) {
            if shard.shutting_down.get() {
                return Ok(false);
            }
            let bytes = remote::upload::copy_segment(remote, &shard.storage, &seg).await?;
            crate::metrics::record_remote(|m| {
                m.uploaded_bytes += bytes;
                m.uploaded_segments += u64::from(bytes > 0);
            });
            // Tells the partition its new copied end (local retention may delete below it).
            view = tiering_view(&handle, remote).await?;
        }
    }
    remote::expire::expire(
        remote,
        &meta.config.log,
        crate::time::now_ms(),
        view.local_only_bytes,
    )
    .await?;
    Ok(!view.to_copy.is_empty())
}

/// Writes the topic's description (partitions, configs set on it) to the bucket when it
/// changed: what restore and read replicas recreate the topic from.
async fn describe_topic(
    remote: &RemoteLog,
    meta: &crate::catalog::topics::TopicMeta,
) -> Result<(), RemoteError> {
    let described = remote::manifest::TopicManifest {
        format: remote::manifest::FORMAT_VERSION,
        writer: remote.writer().to_string(),
        topic: meta.name.clone(),
        partitions: meta.partitions(),
        configs: meta
            .config
            .overrides
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    if remote.described.borrow().as_ref() == Some(&described) {
        return Ok(());
    }
    remote::restore::write_topic(&remote.store, &described).await?;
    *remote.described.borrow_mut() = Some(described);
    Ok(())
}

/// The partition's segments to copy, after telling it what the remote tier holds.
async fn tiering_view(
    handle: &PartitionHandle,
    remote: &RemoteLog,
) -> Result<TieringView, RemoteError> {
    let manifest = remote.manifest().await?;
    let copied = manifest.next_offset().unwrap_or(manifest.log_start_offset);
    let view = handle
        .job(|reply| Job::Tiering {
            from_offset: copied,
            copied_end: Some(copied),
            reply,
        })
        .await
        .ok_or_else(|| RemoteError::Unavailable("the partition is closing".into()))?;
    remote.local_start.set(view.local_start);
    remote.upload_lag_bytes.set(view.local_only_bytes);
    Ok(view)
}
