//! A replicated partition's part on its own task (cluster mode): the replica state machine
//! (`replication::Replica`) next to the log it decides for, so the log end, the high
//! watermark and the epochs change in one place, one command at a time. As leader it
//! stamps its epoch, answers followers' fetches, moves the high watermark (which bounds
//! what consumers read) and holds acks=all produces until the in-sync replicas have them;
//! as follower it builds its next fetch, appends what the leader sent, and truncates where
//! its log diverged. ISR changes come back to the caller, which writes them to etcd; they
//! count once they return in the partition's state.

use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::channels::local_channel::LocalSender;

use crate::broker_error::BrokerError;
use crate::format::cursor::BatchCursor;
use crate::io::chain::ByteChain;
use crate::log::PartitionLog;
pub use crate::partition_ops::replica::{LeaderAnswer, ReplicaOp, ReplicaReply};
use crate::partition_ops::{OpOk, OpResult};
use crate::protocol::ErrorCode;
use crate::replication::replica::Received;
use crate::replication::{
    EpochEntry, FetchAnswer, FetchRequest, NodeId, PartitionState, Replica, Role,
};

/// A replicated partition's state on its task.
pub struct Replicated {
    replica: Replica,
    min_insync: usize,
    ack_timeout: Duration,
    /// acks=all produces waiting for the high watermark to pass their last offset.
    waiting: Vec<Waiting>,
    /// The high watermark last written to `replication-offset-checkpoint`, and when.
    checkpointed: (i64, Instant),
}

/// A moved high watermark is checkpointed at most this often (Kafka's
/// replica.high.watermark.checkpoint.interval.ms); a clean close writes it too.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5);

struct Waiting {
    last_offset: i64,
    deadline: Instant,
    reply: LocalSender<OpResult>,
    result: OpResult,
}

fn millis(now: Instant) -> i64 {
    // Only differences are used: a monotonic clock never jumps.
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(Instant::now);
    now.saturating_duration_since(start).as_millis() as i64
}

/// Runs one replication op on the partition's task.
pub async fn run(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    op: ReplicaOp,
) -> OpResult {
    if let ReplicaOp::Apply {
        state,
        me,
        broker_epoch,
        ack_timeout,
    } = op
    {
        return apply(log, replicated, (*state, me, broker_epoch), ack_timeout).await;
    }
    if let ReplicaOp::Stop { state } = op {
        return stop(log, replicated.as_mut(), &state).await;
    }
    let Some(r) = replicated.as_mut() else {
        let why =
            "the partition has no replication state yet (its state from etcd has not reached it)";
        return Err(BrokerError::new(ErrorCode::NotLeader, why));
    };
    let reply = match op {
        ReplicaOp::Fetch {
            request,
            max_bytes,
            eligible,
        } => r.answer_fetch(log, request, max_bytes, eligible).await?,
        ReplicaOp::NextFetch => {
            ReplicaReply::NextFetch(r.replica.fetch_request(log.replica_end_offset()))
        }
        ReplicaOp::Received { answered, answer } => r.take_answer(log, &answered, answer).await?,
        ReplicaOp::Tick { max_lag } => {
            r.expire_waiting(Instant::now());
            r.checkpoint_if_due(log).await?;
            let now = millis(Instant::now());
            // A change etcd has not taken yet is proposed again (it may have been lost).
            let change = r.replica.check_isr(now, max_lag.as_millis() as i64);
            let lags = r.replica.follower_lags(log.replica_end_offset(), now);
            ReplicaReply::Ticked {
                isr_change: change.or_else(|| r.replica.pending_isr_change()),
                lags,
            }
        }
        ReplicaOp::IsrRefused { change } => {
            r.replica
                .abandon_isr_change(&change, log.replica_end_offset());
            r.publish_high_watermark(log);
            ReplicaReply::Applied
        }
        ReplicaOp::Stop { .. } => unreachable!("handled above"),
        ReplicaOp::Apply { .. } => unreachable!("handled above"),
    };
    Ok(OpOk::Replica(reply))
}

/// Takes in the partition's state: the replica's role, the epoch the log stamps, the
/// high watermark readers stop at; a leadership lost answers the acks=all produces
/// waiting on it.
async fn apply(
    log: &mut PartitionLog,
    replicated: &mut Option<Replicated>,
    (state, me, broker_epoch): (PartitionState, NodeId, i64),
    ack_timeout: Duration,
) -> OpResult {
    if replicated.is_none() {
        let high_watermark = log.checkpointed_high_watermark().await;
        *replicated = Some(Replicated {
            replica: Replica::new(me, log.leader_epochs().clone(), high_watermark),
            min_insync: 1,
            ack_timeout,
            waiting: Vec::new(),
            checkpointed: (high_watermark, Instant::now()),
        });
    }
    let r = replicated.as_mut().expect("created above");
    r.min_insync = log.config().min_insync_replicas.max(1) as usize;
    r.ack_timeout = ack_timeout;
    let was_leading = matches!(r.replica.role(), Role::Leader(_));
    let end = log.replica_end_offset();
    r.replica
        .apply(&state, broker_epoch, end, millis(Instant::now()));
    if let Role::Leader(l) = r.replica.role() {
        log.set_leader_epoch(l.epoch)
            .await
            .map_err(BrokerError::from)?;
        // A leader whose ISR is itself alone has everything it holds committed.
        r.replica.appended(end);
    } else if was_leading {
        r.fail_waiting(
            ErrorCode::NotLeader,
            "leadership moved before the in-sync replicas had the batch",
        );
    }
    r.publish_high_watermark(log);
    Ok(OpOk::Replica(ReplicaReply::Applied))
}

/// This node is no longer a replica: it stops (answering any acks=all produce waiting on
/// it) and its copy is emptied, as Kafka deletes a removed replica's log.
async fn stop(
    log: &mut PartitionLog,
    replicated: Option<&mut Replicated>,
    state: &PartitionState,
) -> OpResult {
    if let Some(r) = replicated {
        if !r.replica.stop(state) {
            return Ok(OpOk::Replica(ReplicaReply::Applied));
        }
        r.fail_waiting(
            ErrorCode::NotLeader,
            "the partition was reassigned away from this node",
        );
    }
    if log.log_end_offset() > 0 || log.log_start_offset() > 0 {
        log.empty_and_start_at(0).await.map_err(BrokerError::from)?;
    }
    Ok(OpOk::Replica(ReplicaReply::Applied))
}

impl Replicated {
    /// Refuses a produce this replica may not take: not the leader, or (acks=all) fewer
    /// in-sync replicas than min.insync.replicas. Nothing is written then.
    pub fn check_produce(&self, acks: i16) -> Result<(), BrokerError> {
        let needed = match acks {
            crate::protocol::ACKS_ALL => self.min_insync,
            _ => 1,
        };
        self.replica
            .append(needed)
            .map(|_| ())
            .map_err(BrokerError::from)
    }

    /// After the group's appends are flushed: the high watermark moves over what the ISR
    /// holds; acks=all produces it passed are answered, the others wait.
    pub fn after_commit(
        &mut self,
        log: &mut PartitionLog,
        acked: Vec<(LocalSender<OpResult>, OpResult)>,
    ) {
        self.replica.appended(log.replica_end_offset());
        for (reply, result) in acked {
            match &result {
                Ok(OpOk::Produced { last_offset, .. }) => {
                    let last_offset = *last_offset;
                    self.hold(reply, result, last_offset);
                }
                _ => {
                    let _ = reply.try_send(result);
                }
            }
        }
        self.publish_high_watermark(log);
    }

    /// Keeps a durable write's answer until the high watermark passes `last_offset` (or its
    /// timeout, `expire_waiting`).
    fn hold(&mut self, reply: LocalSender<OpResult>, result: OpResult, last_offset: i64) {
        self.waiting.push(Waiting {
            last_offset,
            deadline: Instant::now() + self.ack_timeout,
            reply,
            result,
        });
    }

    /// Holds a coordinator's write (its last offset `last_offset`, already durable here)
    /// until the in-sync replicas have it, as an acks=all produce.
    pub fn wait_for_isr(
        &mut self,
        log: &mut PartitionLog,
        reply: LocalSender<OpResult>,
        result: OpResult,
        last_offset: i64,
    ) {
        assert!(
            last_offset < log.replica_end_offset(),
            "a held write is in the log"
        );
        self.replica.appended(log.replica_end_offset());
        self.hold(reply, result, last_offset);
        self.publish_high_watermark(log);
    }

    /// The replica's high watermark, to the log (what readers see) and to the waiting
    /// acks=all produces it passed.
    fn publish_high_watermark(&mut self, log: &mut PartitionLog) {
        let hw = self.replica.high_watermark().min(log.replica_end_offset());
        log.set_high_watermark(Some(hw));
        let isr = self.replica.leader_isr().map_or(0, <[NodeId]>::len);
        let short = isr < self.min_insync;
        let (done, left): (Vec<Waiting>, Vec<Waiting>) =
            self.waiting.drain(..).partition(|w| w.last_offset < hw);
        self.waiting = left;
        for w in done {
            let result = match short {
                true => Err(BrokerError::new(
                    ErrorCode::NotEnoughReplicasAfterAppend,
                    format!(
                        "written, but only {isr} replicas are in sync (min.insync.replicas is {})",
                        self.min_insync
                    ),
                )),
                false => w.result,
            };
            let _ = w.reply.try_send(result);
        }
    }

    /// Writes the high watermark to its checkpoint when it moved and the last write is
    /// `CHECKPOINT_INTERVAL` old.
    async fn checkpoint_if_due(&mut self, log: &PartitionLog) -> Result<(), BrokerError> {
        let hw = log.visible_end_offset();
        let (written, at) = self.checkpointed;
        if hw == written || at.elapsed() < CHECKPOINT_INTERVAL {
            return Ok(());
        }
        log.checkpoint_high_watermark()
            .await
            .map_err(BrokerError::from)?;
        self.checkpointed = (hw, Instant::now());
        Ok(())
    }

    fn expire_waiting(&mut self, now: Instant) {
        let (late, left): (Vec<Waiting>, Vec<Waiting>) =
            self.waiting.drain(..).partition(|w| w.deadline <= now);
        self.waiting = left;
        for w in late {
            let why = "the in-sync replicas did not all have the batch in time; it is written and may still be committed";
            let _ = w
                .reply
                .try_send(Err(BrokerError::new(ErrorCode::RequestTimedOut, why)));
        }
    }

    fn fail_waiting(&mut self, code: ErrorCode, why: &str) {
        for w in self.waiting.drain(..) {
            let _ = w.reply.try_send(Err(BrokerError::new(code, why)));
        }
    }

    /// A follower's fetch on the leader: its progress noted, the high watermark moved,
    /// and the records from its offset (or where its log diverged).
    async fn answer_fetch(
        &mut self,
        log: &mut PartitionLog,
        request: FetchRequest,
        max_bytes: usize,
        eligible: bool,
    ) -> Result<ReplicaReply, BrokerError> {
        let end = log.replica_end_offset();
        let now = millis(Instant::now());
        let (answer, isr_change) = (self.replica)
            .on_fetch(request, end, now, |_| eligible)
            .map_err(BrokerError::from)?;
        let log_start = log.log_start_offset();
        if matches!(answer, FetchAnswer::Records { from, .. } if from < log_start) {
            return Ok(ReplicaReply::BelowLogStart {
                log_start_offset: log_start,
            });
        }
        let records = match answer {
            // No bytes asked for: a throttled follower's fetch, answered without records.
            FetchAnswer::Records { .. } if max_bytes == 0 => ByteChain::default(),
            FetchAnswer::Records { from, .. } => log
                .read_for_replica(from, max_bytes)
                .await
                .map_err(BrokerError::from)?,
            _ => ByteChain::default(),
        };
        self.publish_high_watermark(log);
        Ok(ReplicaReply::Fetched {
            answer,
            records,
            log_start_offset: log.log_start_offset(),
            log_end_offset: end,
            isr_change,
        })
    }

    /// A follower takes in its leader's answer: records appended (with the leader's
    /// offsets and epochs) or the log truncated where it diverged. A late or repeated
    /// answer changes nothing.
    async fn take_answer(
        &mut self,
        log: &mut PartitionLog,
        answered: &FetchRequest,
        answer: LeaderAnswer,
    ) -> Result<ReplicaReply, BrokerError> {
        let end = log.replica_end_offset();
        match answer {
            LeaderAnswer::Diverging { epoch, end_offset } => {
                if let Some(cut) = self
                    .replica
                    .on_diverging(answered, (epoch, end_offset), end)
                {
                    log.truncate_to(cut).await.map_err(BrokerError::from)?;
                }
            }
            LeaderAnswer::StartsAt { log_start } => {
                if self.replica.start_at(answered, log_start, end) {
                    log.empty_and_start_at(log_start)
                        .await
                        .map_err(BrokerError::from)?;
                }
            }
            LeaderAnswer::Records {
                records,
                high_watermark,
            } => {
                let (runs, new_end) = epoch_runs(&records, end)?;
                let received = Received {
                    correlation: answered.correlation,
                    leader_epoch: answered.current_leader_epoch,
                    fetch_offset: answered.fetch_offset,
                    high_watermark,
                    new_end,
                };
                if self.replica.on_records(received, &runs, end) && !records.is_empty() {
                    log.append_with_assigned_offsets(&records)
                        .await
                        .map_err(BrokerError::from)?;
                    log.flush().await.map_err(BrokerError::from)?;
                }
            }
        }
        self.publish_high_watermark(log);
        self.checkpoint_if_due(log).await?;
        Ok(ReplicaReply::Followed {
            log_end: log.replica_end_offset(),
        })
    }
}

/// The leader epochs that start in `records` (each with the offset of its first batch)
/// and the log end once they are appended.
fn epoch_runs(records: &Bytes, end: i64) -> Result<(Vec<EpochEntry>, i64), BrokerError> {
    let chain = ByteChain::from(records.clone());
    let mut runs: Vec<EpochEntry> = Vec::new();
    let mut new_end = end;
    for batch in BatchCursor::new(&chain) {
        let (_, h) = batch.map_err(|e| {
            BrokerError::new(
                ErrorCode::CorruptBatch,
                format!("a leader's records at byte {}: {}", e.0, e.1),
            )
        })?;
        let epoch = h.partition_leader_epoch;
        if epoch >= 0 && runs.last().is_none_or(|r| r.epoch < epoch) {
            runs.push(EpochEntry {
                epoch,
                start_offset: h.base_offset,
            });
        }
        new_end = h.last_offset() + 1;
    }
    Ok((runs, new_end))
}
