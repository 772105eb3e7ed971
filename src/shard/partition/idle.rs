//! What a partition's task does between commands. Once no command came for `IDLE_RELEASE`
//! it gives back its staging memory and, if it holds records not yet durable, joins the
//! shard's next shared file-system sync (`io::shared_sync`) instead of an fdatasync of its
//! own; once that sync completes, its recovery point moves up and its live index files
//! catch up (at most every `ACTIVE_INDEX_WRITE_INTERVAL`). Commands keep running while it
//! waits: the wait outlives them until its sync answers.

use std::rc::Rc;
use std::time::Instant;

use glommio::channels::local_channel::LocalReceiver;

use crate::io::shared_sync::SyncOutcome;
use crate::io::SharedSync;
use crate::log::durability::DurableMark;
use crate::log::PartitionLog;

/// A partition with no command for this long gives back its 1 MiB staging buffer and
/// makes what it wrote durable.
const IDLE_RELEASE: std::time::Duration = std::time::Duration::from_millis(500);

/// An idle partition's wait for the shared sync that makes its records up to `mark`
/// durable.
pub struct PendingDurability {
    mark: DurableMark,
    synced: LocalReceiver<SyncOutcome>,
}

/// The partition's idle steps: its current idle period, and its wait for the shared sync,
/// which outlives the period.
pub struct IdleWork {
    shared: Rc<SharedSync>,
    pending: Option<PendingDurability>,
    /// When the last command ran (background jobs do not count).
    idle_since: Instant,
    /// Whether this idle period's staging memory went back and its durability began.
    released: bool,
}

impl IdleWork {
    pub fn new(shared: Rc<SharedSync>) -> Self {
        IdleWork {
            shared,
            pending: None,
            idle_since: Instant::now(),
            released: false,
        }
    }

    /// A command just ran: a new idle period starts.
    pub fn restart(&mut self) {
        self.idle_since = Instant::now();
        self.released = false;
    }

    /// The next message on `rx`, taking the idle steps that fall due while waiting for it.
    pub async fn next_message<M>(
        &mut self,
        log: &mut PartitionLog,
        rx: &LocalReceiver<M>,
    ) -> Option<M> {
        loop {
            let step_at = match self.released {
                false => Some(self.idle_since + IDLE_RELEASE),
                true if self.pending.is_none() => log.active_indexes_due_at(),
                true => None,
            };
            match wake(rx, self.pending.as_ref(), step_at).await {
                Wake::Message(m) => return m,
                Wake::Synced(outcome) => {
                    self.finish(log, outcome);
                    if self.released {
                        Box::pin(self.begin(log)).await;
                    }
                }
                Wake::Due if !self.released => {
                    self.released = true;
                    log.release_idle_memory();
                    Box::pin(self.begin(log)).await;
                }
                Wake::Due => Box::pin(log.write_active_indexes(false)).await,
            }
        }
    }

    /// Marks what the log holds and joins the next shared sync, unless a wait is under way
    /// (its answer starts the next one) or everything is durable already.
    async fn begin(&mut self, log: &mut PartitionLog) {
        if self.pending.is_some() {
            return;
        }
        match log.durability_mark().await {
            Ok(Some(mark)) => {
                let synced = self.shared.join();
                self.pending = Some(PendingDurability { mark, synced });
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(dir = %log.dir().display(), error = %e, "writing out an idle partition failed")
            }
        }
    }

    /// Applies the shared sync's answer to the wait under way.
    fn finish(&mut self, log: &mut PartitionLog, outcome: Option<SyncOutcome>) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        match outcome {
            Some(Ok(())) => log.note_durable(pending.mark),
            Some(Err(e)) => log.note_durability_failed(e.to_io_error()),
            // The shard stopped syncing (it is shutting down): the close syncs instead.
            None => {}
        }
    }
}

/// What woke an idle partition.
enum Wake<M> {
    Message(Option<M>),
    Synced(Option<SyncOutcome>),
    /// Time for the next idle step.
    Due,
}

/// Waits for a message (first), the shared sync's answer, or `step_at`.
async fn wake<M>(
    rx: &LocalReceiver<M>,
    pending: Option<&PendingDurability>,
    step_at: Option<Instant>,
) -> Wake<M> {
    let message = async { Wake::Message(rx.recv().await) };
    let synced = async {
        match pending {
            Some(p) => Wake::Synced(p.synced.recv().await),
            None => std::future::pending().await,
        }
    };
    let due = async {
        match step_at {
            Some(at) => {
                glommio::timer::sleep(at.saturating_duration_since(Instant::now())).await;
                Wake::Due
            }
            None => std::future::pending().await,
        }
    };
    futures_lite::future::or(message, futures_lite::future::or(synced, due)).await
}
