//! The task that owns one partition's log on its shard. Commands arrive on a local channel
//! and run one at a time, so the log needs no lock. Group commit: the actor takes every
//! command already queued, runs them, then does one flush (acks=1) or one fdatasync (if any
//! acks=all) for all the produces among them, and only then replies to those.

use std::rc::Rc;
use std::time::Instant;

use crate::broker_error::BrokerError;
use crate::io::chain::ByteChain;
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};

use crate::io::SharedSync;
use crate::log::cleaner::CleanedLog;
use crate::log::PartitionLog;
use crate::log::{CleanStats, CleaningPlan, RetentionOutcome};
use crate::metrics::{self, Stage};
use crate::partition_ops::{Isolation, OpOk, OpResult, PartitionOp, PartitionSummary};
use crate::protocol::{ErrorCode, ACKS_ALL, ACKS_NONE};
use crate::remote::host::TieringView;
use crate::shard::partition::append_watch::AppendWatch;
use crate::shard::partition::idle::IdleWork;
use crate::shard::partition::replica::Replicated;

#[non_exhaustive]
pub enum Command {
    Op {
        op: PartitionOp,
        reply: LocalSender<OpResult>,
        /// When it was queued (the queue wait is a stage of its own).
        sent: Instant,
    },
    Close {
        reply: LocalSender<Result<(), BrokerError>>,
        /// The partition is being deleted: close without sealing or syncing anything.
        discard: bool,
    },
    /// Background work of the shard (retention, cleaning), with engine results.
    Job(Job),
}

/// Retention and cleaning steps that must run on the partition's task.
#[non_exhaustive]
pub enum Job {
    Retention {
        now_ms: i64,
        reply: LocalSender<crate::Result<RetentionOutcome>>,
    },
    /// Removes `.deleted` files whose delay passed; replies with how many.
    RemoveDueFiles {
        now_ms: i64,
        reply: LocalSender<usize>,
    },
    PlanCleaning {
        now_ms: i64,
        force: bool,
        reply: LocalSender<crate::Result<Option<CleaningPlan>>>,
    },
    CommitCleaning {
        cleaned: Box<CleanedLog>,
        reply: LocalSender<crate::Result<CleanStats>>,
    },
    /// (producer id, first offset) of the local log's aborted transactions a read of
    /// `[from, upper)` overlaps (a read_committed read served by the remote tier).
    AbortedTxns {
        from: i64,
        upper: i64,
        reply: LocalSender<Vec<(i64, i64)>>,
    },
    /// Tiered logs: records the remote tier's copied end (if known) and lists the sealed
    /// segments to copy from `from_offset` on (at most `copy_limit`).
    Tiering {
        from_offset: i64,
        copied_end: Option<i64>,
        copy_limit: usize,
        reply: LocalSender<crate::Result<TieringView>>,
    },
}

/// Handle used by the shard to reach the actor.
#[derive(Clone)]
pub struct PartitionHandle {
    tx: std::rc::Rc<LocalSender<Command>>,
    appends: std::rc::Rc<AppendWatch>,
    /// The acknowledged log end, past the high watermark: what followers' long polls wait on.
    replica_appends: std::rc::Rc<AppendWatch>,
}

/// Most commands one group takes, so a flood of produces still gets replies regularly.
const MAX_GROUP: usize = 256;

impl PartitionHandle {
    /// Starts the partition's task; idle, it makes what it wrote durable through the
    /// shard's `shared_sync`.
    pub fn spawn(log: PartitionLog, shared_sync: Rc<SharedSync>) -> Self {
        let (tx, rx) = local_channel::new_unbounded();
        let appends = AppendWatch::new(log.visible_end_offset());
        let replica_appends = AppendWatch::new(log.replica_end_offset());
        let watches = (appends.clone(), replica_appends.clone());
        // The log and the task's state on the heap, once each: an idle partition's task
        // is its receive loop (about 1 KiB), not a copy of every state it can be in.
        let idle = IdleWork::new(shared_sync);
        crate::tasks::spawn(Box::pin(run(Box::new(log), rx, watches, idle))).detach();
        PartitionHandle {
            tx: std::rc::Rc::new(tx),
            appends,
            replica_appends,
        }
    }

    /// The partition's log end as consumers see it and the long polls waiting for it to
    /// move.
    pub fn append_watch(&self) -> std::rc::Rc<AppendWatch> {
        self.appends.clone()
    }

    /// The acknowledged log end followers copy to, and their long polls.
    pub fn replica_append_watch(&self) -> std::rc::Rc<AppendWatch> {
        self.replica_appends.clone()
    }

    /// Runs an operation on the partition and waits for its result.
    pub async fn call(&self, op: PartitionOp) -> OpResult {
        let (reply, rx) = local_channel::new_bounded(1);
        let sent = Instant::now();
        if self.tx.try_send(Command::Op { op, reply, sent }).is_err() {
            return Err(BrokerError::new(
                ErrorCode::ShuttingDown,
                "partition is closing",
            ));
        }
        rx.recv().await.unwrap_or_else(|| {
            Err(BrokerError::new(
                ErrorCode::Internal,
                "partition task ended",
            ))
        })
    }

    /// Closes the log after every queued command has run. An error means the partition
    /// could not be closed cleanly and needs recovery at the next start.
    pub async fn close(&self) -> Result<(), BrokerError> {
        self.stop(false).await
    }

    /// Closes the log of a partition being deleted, after every queued command has run,
    /// without sealing or syncing: its files are about to go.
    pub async fn discard(&self) -> Result<(), BrokerError> {
        self.stop(true).await
    }

    /// Runs a background job on the partition's task; `None` when the task has ended.
    pub async fn job<T>(&self, make: impl FnOnce(LocalSender<T>) -> Job) -> Option<T> {
        let (reply, rx) = local_channel::new_bounded(1);
        if self.tx.try_send(Command::Job(make(reply))).is_err() {
            return None;
        }
        rx.recv().await
    }

    async fn stop(&self, discard: bool) -> Result<(), BrokerError> {
        let (reply, rx) = local_channel::new_bounded(1);
        let stopped = |why| Err(BrokerError::new(ErrorCode::ShuttingDown, why));
        if self.tx.try_send(Command::Close { reply, discard }).is_err() {
            return stopped("partition task already stopped");
        }
        rx.recv()
            .await
            .unwrap_or_else(|| stopped("partition task ended"))
    }
}

/// The next command; background jobs run as they come but are not activity (a partition
/// only the maintenance task talks to is idle), and idle steps are taken meanwhile.
async fn next_command(
    log: &mut PartitionLog,
    rx: &LocalReceiver<Command>,
    idle: &mut IdleWork,
) -> Option<Command> {
    idle.restart();
    loop {
        match idle.next_message(log, rx).await {
            Some(Command::Job(job)) => Box::pin(run_job(log, job)).await,
            other => return other,
        }
    }
}

async fn run_job(log: &mut PartitionLog, job: Job) {
    match job {
        Job::Retention { now_ms, reply } => {
            let _ = reply.try_send(log.apply_retention(now_ms).await);
        }
        Job::RemoveDueFiles { now_ms, reply } => {
            let _ = reply.try_send(log.remove_due_files(now_ms).await);
        }
        Job::PlanCleaning {
            now_ms,
            force,
            reply,
        } => {
            let _ = reply.try_send(log.cleaning_plan(now_ms, force).await);
        }
        Job::CommitCleaning { cleaned, reply } => {
            let _ = reply.try_send(log.commit_cleaning(*cleaned).await);
        }
        Job::AbortedTxns { from, upper, reply } => {
            let _ = reply.try_send(log.aborted_transactions(from, upper));
        }
        Job::Tiering {
            from_offset,
            copied_end,
            copy_limit,
            reply,
        } => {
            if let Some(end) = copied_end {
                log.set_remote_copied_end(end);
            }
            let _ = reply.try_send(tiering_view(log, from_offset, copied_end, copy_limit).await);
        }
    }
}

/// A coordinator's writes go to a replicated partition's leader only (a marker or a batch
/// on a follower's copy would make it diverge from its leader), and it loads its state
/// from the leader's copy only (a follower's may lack acknowledged records).
fn leader_only(replicated: Option<&Replicated>, op: &PartitionOp) -> Option<BrokerError> {
    let coordinators = matches!(
        op,
        PartitionOp::WriteMarker { .. }
            | PartitionOp::CoordinatorAppend { .. }
            | PartitionOp::Fetch {
                isolation: Isolation::LogEnd,
                ..
            }
    );
    let follower = replicated.is_some_and(|r| r.check_produce(ACKS_NONE).is_err());
    let why =
        "this node does not lead the partition: a coordinator reads and writes the leader's copy";
    (coordinators && follower).then(|| BrokerError::new(ErrorCode::NotLeader, why))
}

/// Every operation but Produce (which takes part in the group commit).
async fn run_op(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    op: PartitionOp,
) -> OpResult {
    if let Some(refused) = leader_only(replicated.as_ref(), &op) {
        return Err(refused);
    }
    let r = match op {
        PartitionOp::Replica(op) => {
            return crate::shard::partition::replica::run(log, replicated, op).await;
        }
        PartitionOp::Produce { .. } => {
            return Err(BrokerError::new(
                ErrorCode::Internal,
                "produces take part in the group commit",
            ))
        }
        PartitionOp::Fetch {
            offset,
            max_bytes,
            at_least_one,
            isolation,
        } => fetch(log, offset, (max_bytes, at_least_one), isolation).await,
        PartitionOp::FetchAtTime {
            timestamp,
            max_bytes,
        } => fetch_at_time(log, timestamp, max_bytes).await,
        PartitionOp::DropOsCaches => log.drop_os_caches().await.map(|_| OpOk::Done),
        PartitionOp::ListOffsets {
            timestamp,
            isolation,
        } => list_offsets(log, timestamp, isolation).await,
        PartitionOp::DeleteRecords { offset } => {
            log.delete_records_before(offset).await.map(|low| {
                assert!(
                    low >= offset.min(log.visible_end_offset()) && low <= log.visible_end_offset(),
                    "the low watermark {low} moved to the asked {offset}, within the log"
                );
                OpOk::LowWatermark(low)
            })
        }
        PartitionOp::Roll => log.roll_now().await.map(|_| OpOk::Done),
        PartitionOp::WriteMarker {
            producer_id,
            epoch,
            marker,
        } => write_marker(log, producer_id, epoch, marker).await,
        PartitionOp::CoordinatorAppend { records } => coordinator_append(log, &records).await,
        PartitionOp::DescribeProducers => Ok(OpOk::Producers(log.producers())),
        PartitionOp::Describe => Ok(OpOk::Partition(summary(log))),
        PartitionOp::SetConfig(config) => log.set_config(config).map(|_| OpOk::Done),
        PartitionOp::Maintain | PartitionOp::RebuildManifest => {
            return Err(BrokerError::new(
                ErrorCode::Internal,
                "maintenance and manifest rebuilds run through the shard, not the partition task",
            ))
        }
    };
    r.map_err(BrokerError::from)
}

/// Whole batches from the one holding `offset`, with the log's bounds.
async fn fetch(
    log: &mut PartitionLog,
    offset: i64,
    (max_bytes, at_least_one): (usize, bool),
    isolation: Isolation,
) -> crate::Result<OpOk> {
    let (records, aborted) = match isolation {
        Isolation::ReadCommitted => log.read_committed(offset, max_bytes, at_least_one).await?,
        Isolation::LogEnd => (log.read_for_replica(offset, max_bytes).await?, Vec::new()),
        _ => (
            log.read_bounded(offset, max_bytes, at_least_one).await?,
            Vec::new(),
        ),
    };
    assert!(log.log_start_offset() <= log.last_stable_offset());
    assert!(log.last_stable_offset() <= log.visible_end_offset());
    Ok(OpOk::Fetched {
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.visible_end_offset(),
        last_stable_offset: log.last_stable_offset(),
        aborted,
        records,
    })
}

/// Appends a coordinator's batch of a producer's transaction and makes it durable.
async fn coordinator_append(log: &mut PartitionLog, records: &[u8]) -> crate::Result<OpOk> {
    let info = log.append_for_coordinator(records).await?;
    log.sync().await?;
    // Durable here; of a replicated partition, readable once the ISR has it.
    assert!(info.last_offset < log.replica_end_offset());
    Ok(OpOk::Done)
}

/// Appends a transaction's marker and makes it durable: the coordinator logs the
/// transaction complete only once every marker is on disk.
async fn write_marker(
    log: &mut PartitionLog,
    producer_id: i64,
    epoch: i16,
    marker: crate::format::control::EndTxnMarker,
) -> crate::Result<OpOk> {
    log.append_marker(producer_id, epoch, marker).await?;
    log.sync().await?;
    assert!(log.last_stable_offset() <= log.visible_end_offset());
    Ok(OpOk::Done)
}

/// Kafka's ListOffsets for one partition: (-1, -1) when no record qualifies. With
/// read_committed the answers stop at the last stable offset (Kafka's
/// `fetchOffsetForTimestamp`): "latest" is it, other answers must lie below it.
async fn list_offsets(
    log: &mut PartitionLog,
    timestamp: i64,
    isolation: Isolation,
) -> crate::Result<OpOk> {
    let mut found = log.find_offset_by_timestamp(timestamp).await?;
    if isolation == Isolation::ReadCommitted {
        let stable = log.last_stable_offset();
        found = match timestamp {
            crate::log::LATEST_TIMESTAMP => Some(crate::log::TimestampOffset {
                offset: stable,
                timestamp: -1,
            }),
            _ => found.filter(|t| t.offset < stable),
        };
    }
    let t = found.unwrap_or(crate::log::TimestampOffset {
        offset: -1,
        timestamp: -1,
    });
    // An answer names a readable offset (or the log end, for "latest").
    assert!(
        t.offset == -1 || (log.log_start_offset()..=log.visible_end_offset()).contains(&t.offset),
        "offset {} outside the log",
        t.offset
    );
    Ok(OpOk::Offset {
        offset: t.offset,
        timestamp: t.timestamp,
    })
}

/// The first record with a timestamp >= `timestamp` (Kafka's offsetsForTimes) and the
/// batches from it: what ListOffsets then Fetch give, in one turn of the task.
async fn fetch_at_time(
    log: &mut PartitionLog,
    timestamp: i64,
    max_bytes: usize,
) -> crate::Result<OpOk> {
    let found = log.find_offset_by_timestamp(timestamp).await?;
    let (offset, found_ts, records) = match found {
        Some(t) if t.offset >= 0 => (t.offset, t.timestamp, log.read(t.offset, max_bytes).await?),
        _ => (-1, -1, ByteChain::default()),
    };
    Ok(OpOk::FetchedAtTime {
        offset,
        timestamp: found_ts,
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.visible_end_offset(),
        records,
    })
}

type Watches = (std::rc::Rc<AppendWatch>, std::rc::Rc<AppendWatch>);

async fn run(
    mut log: Box<PartitionLog>,
    rx: LocalReceiver<Command>,
    (appends, replica_appends): Watches,
    mut idle: IdleWork,
) {
    // Cluster mode: created by the partition's first state from etcd.
    let mut replicated: Option<Replicated> = None;
    while let Some(first) = next_command(&mut log, &rx, &mut idle).await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match futures_lite::future::poll_once(rx.recv()).await {
                Some(Some(cmd)) => group.push(cmd),
                _ => break,
            }
        }
        metrics::record_group_commit(group.len());
        // Boxed: the group's futures live on the heap only while it runs, so an idle
        // partition's task holds its receive loop, not the largest state a group needs
        // (tens of KB each, times thousands of idle partitions).
        let done = Box::pin(run_and_commit(&mut log, &mut replicated, group)).await;
        appends.advanced_to(log.visible_end_offset());
        replica_appends.advanced_to(log.replica_end_offset());
        if done.wrote && done.need_sync {
            // After the replies: the index files are for tools, not on a produce's path.
            Box::pin(log.write_active_indexes(false)).await;
        }
        if let Some((reply, discard)) = done.close {
            let _ = reply.try_send(Box::pin(close_log(*log, discard)).await);
            return;
        }
    }
    // Channel closed without a Close command: still close the log cleanly.
    let _ = Box::pin(close_log(*log, false)).await;
}

async fn run_and_commit(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    group: Vec<Command>,
) -> GroupDone {
    let mut done = run_group(log, replicated, group).await;
    commit_group(log, replicated, &mut done).await;
    done
}

/// What a group of commands left to do once each has run.
#[derive(Default)]
struct GroupDone {
    /// Produces waiting for the group's flush or sync: (reply, result so far).
    waiting: Vec<(LocalSender<OpResult>, OpResult)>,
    /// Of a replicated partition: acks=all produces that wait, after the sync, for the
    /// in-sync replicas.
    replicated_acks: Vec<(LocalSender<OpResult>, OpResult)>,
    need_sync: bool,
    wrote: bool,
    /// Bytes the group's produces appended.
    bytes: usize,
    close: Option<(LocalSender<Result<(), BrokerError>>, bool)>,
}

/// Runs each command of a group in order; produces that wait for the group's flush or sync
/// are held back, every other reply is sent at once.
async fn run_group(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    group: Vec<Command>,
) -> GroupDone {
    let mut done = GroupDone::default();
    for cmd in group {
        match cmd {
            Command::Close { reply, discard } => done.close = Some((reply, discard)),
            Command::Job(job) => run_job(log, job).await,
            Command::Op {
                op:
                    PartitionOp::Produce {
                        acks,
                        records,
                        transactional,
                    },
                reply,
                sent,
            } => {
                metrics::record_since(Stage::QueueWait, sent);
                let produce = Produce {
                    acks,
                    records,
                    transactional,
                };
                produce_one(log, replicated.as_ref(), produce, reply, &mut done).await;
            }
            Command::Op { op, reply, .. } if is_coordinator_write(&op) && replicated.is_some() => {
                coordinator_write_acks_all(log, replicated, op, reply).await;
            }
            Command::Op { op, reply, sent } if op.is_data_path() => {
                metrics::record_since(Stage::QueueWait, sent);
                let r = metrics::timed(Stage::PartitionOp, run_op(log, replicated, op)).await;
                let _ = reply.try_send(r);
            }
            Command::Op { op, reply, .. } => {
                let _ = reply.try_send(run_op(log, replicated, op).await);
            }
        }
    }
    done
}

fn is_coordinator_write(op: &PartitionOp) -> bool {
    matches!(
        op,
        PartitionOp::WriteMarker { .. } | PartitionOp::CoordinatorAppend { .. }
    )
}

/// A coordinator's marker or batch on a replicated partition is answered as acks=all (as
/// Kafka's coordinators append with acks=-1): once the in-sync replicas have it, so a
/// completed transaction or a transactional offset commit survives the leader's loss.
async fn coordinator_write_acks_all(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    op: PartitionOp,
    reply: LocalSender<OpResult>,
) {
    let result = run_op(log, replicated, op).await;
    let last_offset = log.replica_end_offset() - 1;
    match (result, replicated.as_mut()) {
        (Ok(ok), Some(r)) => r.wait_for_isr(log, reply, Ok(ok), last_offset),
        (other, _) => {
            let _ = reply.try_send(other);
        }
    }
}

/// A produce's part of a group.
struct Produce {
    acks: i16,
    records: bytes::Bytes,
    transactional: bool,
}

/// Appends one produce of a group: refused at once (not the leader, too few in sync), or
/// appended and answered at once (acks=0, errors) or after the group's flush or sync
/// (and, replicated with acks=all, once the in-sync replicas have it).
async fn produce_one(
    log: &mut PartitionLog,
    replicated: Option<&Replicated>,
    produce: Produce,
    reply: LocalSender<OpResult>,
    done: &mut GroupDone,
) {
    let Produce {
        acks,
        records,
        transactional,
    } = produce;
    let admitted = match replicated {
        Some(r) => r.check_produce(acks),
        None => check_min_insync(log, acks),
    };
    if let Err(refused) = admitted {
        let _ = reply.try_send(Err(refused));
        return;
    }
    let end_before = log.log_end_offset();
    let append = async {
        match transactional {
            true => log.append_transactional(&records).await,
            false => log.append(&records).await,
        }
    };
    let r = metrics::timed(Stage::PartitionOp, append).await;
    done.wrote |= r.is_ok();
    done.bytes += r.as_ref().map_or(0, |info| info.bytes);
    // The offsets answered are below the log end, which never moves back (a duplicate of
    // an idempotent producer's batch answers its first offsets).
    assert!(log.log_end_offset() >= end_before);
    let (start, end) = (log.log_start_offset(), log.log_end_offset());
    let result = r
        .map(|info| OpOk::produced(&info, start, end))
        .map_err(BrokerError::from);
    if result.is_ok() && acks == ACKS_ALL && replicated.is_some() {
        done.need_sync = true;
        done.replicated_acks.push((reply, result));
    } else if result.is_ok() && acks != ACKS_NONE {
        done.need_sync |= acks == ACKS_ALL;
        done.waiting.push((reply, result));
    } else {
        let _ = reply.try_send(result);
    }
}

/// Kafka's min.insync.replicas: an acks=all produce needs that many replicas in sync, and
/// a partition on one node has one (Kafka answers NOT_ENOUGH_REPLICAS before appending).
fn check_min_insync(log: &PartitionLog, acks: i16) -> Result<(), BrokerError> {
    let needed = log.config().min_insync_replicas;
    if acks != ACKS_ALL || needed <= 1 {
        return Ok(());
    }
    Err(BrokerError::new(
        ErrorCode::NotEnoughReplicas,
        format!("min.insync.replicas is {needed} but this partition has 1 replica in sync (one node); nothing was written"),
    ))
}

/// One flush or fdatasync covers every produce of the group (group commit); then the
/// waiting produces hear how it went.
async fn commit_group(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    done: &mut GroupDone,
) {
    // Produces wait only for a group that wrote: nothing else holds their replies back.
    assert!(done.waiting.is_empty() || done.wrote);
    assert!(done.replicated_acks.is_empty() || done.wrote);
    if done.wrote {
        // flush.messages / flush.ms make an acks=1 group durable too when they are due.
        let durable = if done.need_sync || log.flush_due() {
            // An fdatasync takes milliseconds (a journal commit): waited for parked.
            metrics::timed(Stage::Fdatasync, log.sync()).await
        } else {
            metrics::timed(Stage::Flush, awake_if_small(done.bytes, log.flush())).await
        };
        if let Err(e) = durable {
            let err = BrokerError::from(e);
            let held = done.waiting.drain(..).chain(done.replicated_acks.drain(..));
            for (reply, _) in held {
                let _ = reply.try_send(Err(err.clone()));
            }
        }
    }
    for (reply, result) in done.waiting.drain(..) {
        let _ = reply.try_send(result);
    }
    if let Some(r) = replicated.as_mut() {
        // The leader's own appends count toward the high watermark once flushed.
        r.after_commit(log, std::mem::take(&mut done.replicated_acks));
    }
    assert!(done.waiting.is_empty(), "every waiting produce is answered");
}

/// acks=1 groups that appended at most this many bytes wait for their flush awake: a few
/// small produces wait for one short write, where a parked CPU's wake-up is a large share.
/// Larger ones (write streams) wait parked, so they cost no spinning CPU.
const AWAKE_COMMIT_BYTES: usize = 64 << 10;

async fn awake_if_small<T>(bytes: usize, commit: impl std::future::Future<Output = T>) -> T {
    if bytes <= AWAKE_COMMIT_BYTES {
        crate::io::awake::awake_until(commit).await
    } else {
        commit.await
    }
}

/// Closes the log (sealed and synced), or discards it when its partition is being deleted.
async fn close_log(log: PartitionLog, discard: bool) -> Result<(), BrokerError> {
    if discard {
        log.discard().await;
        return Ok(());
    }
    log.close().await.map_err(|e| {
        tracing::error!(error = %e, "closing partition failed");
        BrokerError::from(e)
    })
}

/// The partition as `topics describe` and DescribeLogs show it.
fn summary(log: &PartitionLog) -> PartitionSummary {
    PartitionSummary {
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.visible_end_offset(),
        size_bytes: log.size_bytes(),
        segments: log.segments().len() as u32,
        last_stable_offset: log.last_stable_offset(),
        cleaner: cleaner_info(log),
        remote: crate::protocol::RemoteLogInfo::NOT_TIERED,
    }
}

/// The cleaner's view of `log` now, as DescribeLogs carries it.
fn cleaner_info(log: &PartitionLog) -> crate::protocol::CleanerInfo {
    let Some(view) = log.cleaner_view(crate::time::now_ms()) else {
        return crate::protocol::CleanerInfo::NOT_COMPACTED;
    };
    crate::protocol::CleanerInfo {
        first_dirty_offset: view.first_dirty,
        dirty_bytes: view.dirty_bytes as i64,
        clean_bytes: view.clean_bytes as i64,
        uncleanable_bytes: view.uncleanable_bytes as i64,
        due: view.due(log.config().min_cleanable_dirty_ratio),
        last_cleaned_ms: view.last_cleaned_ms.unwrap_or(-1),
    }
}

/// What a tiered log shows its uploader: the segments to copy from `from_offset` on, its
/// start, and the bytes not wholly below the copied end.
async fn tiering_view(
    log: &mut PartitionLog,
    from_offset: i64,
    copied_end: Option<i64>,
    copy_limit: usize,
) -> crate::Result<TieringView> {
    let copied = copied_end.unwrap_or(i64::MIN);
    Ok(TieringView {
        to_copy: log.segments_to_copy(from_offset, copy_limit).await?,
        local_start: log.log_start_offset(),
        local_only_bytes: (log.segments().iter())
            .filter(|s| s.next_offset() > copied)
            .map(|s| s.size())
            .sum(),
    })
}
