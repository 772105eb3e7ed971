//! Background log maintenance on each shard (Kafka's log manager and log cleaner): retention
//! on every partition each `log.retention.check.interval.ms`, `.deleted` files removed once
//! their `file.delete.delay.ms` passed, and one log at a time cleaned when due (checked each
//! `log.cleaner.backoff.ms`). It runs in a low-priority task queue; the cleaner's reading
//! and writing runs outside the partition's task, which only plans and swaps, so produces
//! and fetches of the partition keep being served while its log is cleaned.
//!
//! Retention and file removal run apart from cleaning, and on every partition at once: each
//! step waits in its own partition's command queue only. (When one loop walked the
//! partitions in turn, a cleaning pass or a job queued behind a busy partition's produces
//! held up every other partition, and `.deleted` files due after 1 s stayed 15 s and more.)

use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::{Latency, Shares, TaskQueueHandle};

use crate::io::deadline::before;
use crate::log::CleanerLimits;
use crate::partition_ops::MaintenanceSummary;
use crate::shard::partition::actor::{Job, PartitionHandle};
use crate::shard::runtime::Shard;

/// CPU shares of the maintenance queue against the default queue's 1000: under contention
/// it gets about 5% of the shard.
const MAINTENANCE_SHARES: usize = 50;

thread_local! {
    /// This executor's maintenance task queue (one executor per thread: nothing shared).
    static QUEUE: std::cell::Cell<Option<TaskQueueHandle>> = const { std::cell::Cell::new(None) };
}

/// The low-priority task queue of this shard's maintenance, created on first use.
fn queue() -> TaskQueueHandle {
    QUEUE.with(|q| {
        *q.get().get_or_insert_with(|| {
            let tq = glommio::executor().create_task_queue(
                Shares::Static(MAINTENANCE_SHARES),
                Latency::NotImportant,
                "maintenance",
            );
            q.set(Some(tq));
            tq
        })
    })
}

/// Starts the shard's maintenance loop in its own low-priority task queue.
pub fn spawn(shard: Rc<Shard>) {
    match crate::tasks::spawn_into(run(shard), queue()) {
        Ok(task) => {
            task.detach();
        }
        Err(e) => tracing::error!(error = %e, "could not start log maintenance"),
    };
}

fn limits(shard: &Shard) -> CleanerLimits {
    CleanerLimits {
        dedupe_buffer_bytes: shard.config.log_cleaner_dedupe_buffer_size,
        io_bytes_per_second: shard.config.log_cleaner_io_max_bytes_per_second,
    }
}

async fn run(shard: Rc<Shard>) {
    match crate::tasks::spawn_into(cleaning_loop(shard.clone()), queue()) {
        Ok(task) => {
            task.detach();
        }
        Err(e) => tracing::error!(error = %e, "could not start the log cleaner"),
    }
    if shard.tiering.is_some() {
        let cache_share = shard.config.remote_cache_bytes / shard.n as u64;
        crate::remote::chunks::set_budget(cache_share);
        let dir = shard
            .config
            .data_dir
            .join(crate::catalog::topics::META_DIR)
            .join("remote-cache")
            .join(shard.id.to_string());
        if let Err(e) =
            crate::remote::disk_cache::open(shard.storage.clone(), dir, cache_share).await
        {
            tracing::warn!(error = %e, "the remote chunk cache on disk is off (memory only)");
        }
        match crate::tasks::spawn_into(
            crate::remote::uploader::upload_loop(Shard::tiering_host(&shard)),
            queue(),
        ) {
            Ok(task) => {
                task.detach();
            }
            Err(e) => tracing::error!(error = %e, "could not start the remote tier's uploader"),
        }
        let tiering = shard
            .tiering
            .clone()
            .filter(|_| shard.config.remote_read_replica);
        if let Some(tiering) = tiering.filter(|_| shard.id == crate::shard::runtime::CONTROLLER) {
            let host = Rc::new(shard.admin_host());
            let sync = crate::remote::read_replica::sync_topics_loop(
                host,
                tiering,
                shard.shutdown_listener(),
            );
            match crate::tasks::spawn_into(sync, queue()) {
                Ok(task) => {
                    task.detach();
                }
                Err(e) => {
                    tracing::error!(error = %e, "could not start the read replica's topic sync")
                }
            }
        }
    }
    retention_loop(shard).await
}

/// Each tick, on every partition at once: retention when due, else removal of the
/// `.deleted` files whose delay passed.
async fn retention_loop(shard: Rc<Shard>) {
    let retention_every = Duration::from_millis(shard.config.log_retention_check_interval_ms);
    let tick = retention_every.min(Duration::from_secs(1));
    let shutdown = shard.shutdown_listener();
    let mut last_retention = Instant::now();
    while before(tick, shutdown.recv()).await.is_none() {
        let retention_due = last_retention.elapsed() >= retention_every;
        let now = crate::time::now_ms();
        let steps = shard
            .partition_handles()
            .into_iter()
            .map(|handle| async move {
                if retention_due {
                    retention(&handle, now).await;
                } else {
                    handle
                        .job(|reply| Job::RemoveDueFiles { now_ms: now, reply })
                        .await;
                }
            });
        let tasks: Vec<_> = steps
            .filter_map(|step| crate::tasks::spawn_into(step, queue()).ok())
            .collect();
        for t in tasks {
            t.await;
        }
        if retention_due {
            last_retention = Instant::now();
        }
    }
}

/// Each `log.cleaner.backoff.ms`: one partition after another, each cleaned if due (one
/// log at a time, as Kafka's cleaner thread).
async fn cleaning_loop(shard: Rc<Shard>) {
    let clean_every = Duration::from_millis(shard.config.log_cleaner_backoff_ms);
    let shutdown = shard.shutdown_listener();
    while before(clean_every, shutdown.recv()).await.is_none() {
        for handle in shard.partition_handles() {
            if shard.shutting_down.get() {
                return;
            }
            clean(limits(&shard), &handle, crate::time::now_ms(), false).await;
        }
    }
}

async fn retention(handle: &PartitionHandle, now_ms: i64) -> MaintenanceSummary {
    match handle.job(|reply| Job::Retention { now_ms, reply }).await {
        Some(Ok(out)) => MaintenanceSummary {
            segments_deleted: out.segments_deleted as u64,
            bytes_deleted: out.bytes_deleted,
            records_removed: 0,
        },
        Some(Err(e)) => {
            tracing::warn!(error = %e, "retention failed; retrying at the next check");
            MaintenanceSummary::default()
        }
        None => MaintenanceSummary::default(),
    }
}

/// One cleaning of a partition if it is due (or `force`d): plan on its task, map and
/// rewrite here, swap on its task. Returns the records removed.
async fn clean(limits: CleanerLimits, handle: &PartitionHandle, now_ms: i64, force: bool) -> u64 {
    let plan = match handle
        .job(|reply| Job::PlanCleaning {
            now_ms,
            force,
            reply,
        })
        .await
    {
        Some(Ok(Some(plan))) => plan,
        Some(Ok(None)) | None => return 0,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "planning a cleaning failed");
            return 0;
        }
    };
    let cleaned = match plan.run(limits).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cleaning failed; the log is unchanged");
            return 0;
        }
    };
    match handle
        .job(|reply| Job::CommitCleaning {
            cleaned: Box::new(cleaned),
            reply,
        })
        .await
    {
        Some(Ok(stats)) => {
            crate::metrics::record_cleaning(stats.bytes_read.saturating_sub(stats.bytes_written));
            stats.records_removed
        }
        Some(Err(e)) => {
            tracing::warn!(error = %e, "swapping cleaned segments failed");
            0
        }
        None => 0,
    }
}

/// Retention and a forced cleaning pass on one partition now (RunLogMaintenance), in the
/// maintenance task queue like the background work.
pub async fn maintain_now(shard: &Shard, handle: &PartitionHandle) -> MaintenanceSummary {
    let limits = limits(shard);
    let handle = handle.clone();
    let work = async move {
        let now = crate::time::now_ms();
        let mut summary = retention(&handle, now).await;
        summary.records_removed = clean(limits, &handle, now, true).await;
        summary
    };
    match crate::tasks::spawn_into(work, queue()) {
        Ok(task) => task.await,
        Err(e) => {
            tracing::error!(error = %e, "could not run log maintenance");
            MaintenanceSummary::default()
        }
    }
}
