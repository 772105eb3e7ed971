//! Opening, altering and closing the partitions a shard owns: at start (a damaged one is left
//! offline), when a topic is created, grown, altered or deleted, and at shutdown.

use std::rc::Rc;

use futures_util::stream::{self, StreamExt};

use crate::broker_error::BrokerError;
use crate::catalog::broker_defaults::BrokerDefaults;
use crate::catalog::data_dir;
use crate::catalog::error::CatalogError;
use crate::catalog::topics::TopicMeta;
use crate::log::{partition_dir, partition_dir_name, OpenOptions, PartitionLog};
use crate::partition_ops::{OpOk, OpResult, PartitionOp};
use crate::protocol::ErrorCode;
use crate::shard::partition::actor::PartitionHandle;
use crate::shard::runtime::{Shard, CONTROLLER};
use crate::TopicPartition;

/// Partitions a shard opens, or closes, at once: enough to keep the device busy with the
/// small reads and syncs each one does, few enough to bound the memory and I/O in flight.
const OPEN_CONCURRENCY: usize = 32;
const CLOSE_CONCURRENCY: usize = 32;

/// A create of at least this many partitions on a shard gives the allocator's free pages
/// back afterwards (`os::release_free_heap`).
const BULK_CREATE: usize = 100;

/// A partition that takes longer than this to open is logged.
const SLOW_OPEN: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether a partition that cannot be opened fails the caller (a topic being created) or
/// is left offline while the rest of the node serves (the start).
#[derive(Clone, Copy)]
enum OnOpenFailure {
    Fail,
    Offline,
}

impl Shard {
    /// Opens the partitions this shard owns for every topic on disk.
    pub async fn load_topics(self: &Rc<Self>) -> Result<(), CatalogError> {
        let started = std::time::Instant::now();
        let data_dir = self.config.data_dir.clone();
        let defaults = BrokerDefaults::load(&*self.storage, &data_dir).await?;
        let base = self.topic_base_of(&defaults)?;
        *self.broker_defaults.borrow_mut() = defaults;
        let (topics, changed) =
            crate::catalog::topics::load_all(&*self.storage, &data_dir, self.n as u32, &base)
                .await?;
        for meta in topics {
            crate::catalog::internal_topics::check_on_disk(&meta, &self.config)?;
            if self.id == CONTROLLER && changed.contains(&meta.name) {
                tracing::warn!(topic = %meta.name, shards = self.n, "topic metadata rewritten: a new shard count (partitions reassigned) or a topic id given to a topic from before ids");
                meta.persist(&*self.storage, &data_dir, self.n as u32)
                    .await
                    .map_err(CatalogError::io("persisting topic metadata", &data_dir))?;
            }
            let opts = OpenOptions {
                clean_shutdown: self.previous_shutdown_clean,
                ..OpenOptions::default()
            };
            self.open_owned(&meta, 0, opts, OnOpenFailure::Offline)
                .await
                .map_err(|why| CatalogError::Open {
                    topic: meta.name.clone(),
                    why,
                })?;
            self.topics.borrow_mut().insert(meta.name.clone(), meta);
        }
        self.ready.set(true);
        tracing::info!(
            shard = self.id,
            partitions = self.partitions.borrow().len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "partitions open"
        );
        let (segments, bytes) = self.padding_dropped.take();
        if segments > 0 {
            tracing::info!(
                shard = self.id,
                segments,
                bytes,
                "recovery dropped the zero padding that direct writes and space allocated ahead leave after an unclean stop (no data)"
            );
        }
        Ok(())
    }

    /// Puts new broker defaults in force: every topic's config is rebased on them and
    /// applied to the partitions this shard owns.
    pub(super) async fn set_broker_defaults(&self, defaults: BrokerDefaults) -> OpResult {
        let base = defaults.base()?;
        *self.broker_defaults.borrow_mut() = defaults;
        let topics: Vec<TopicMeta> = self.topics.borrow().values().cloned().collect();
        for meta in topics {
            let config = meta.config.rebased(&base)?;
            if config != meta.config {
                self.alter_owned(TopicMeta { config, ..meta }).await?;
            }
        }
        Ok(OpOk::Done)
    }

    /// Opens the partitions of a topic being created: each in a fresh directory (anything
    /// already there is quarantined, never served). On failure the controller removes what
    /// was opened, on every shard.
    pub(super) async fn open_new_partitions(
        &self,
        meta: &TopicMeta,
        from: u32,
        restored: bool,
    ) -> OpResult {
        let data_dir = &self.config.data_dir;
        for p in self.owned_partitions(meta, from).filter(|_| !restored) {
            let name = partition_dir_name(&meta.name, p);
            let dir = data_dir.join(&name);
            if self.storage.exists(&dir) {
                data_dir::quarantine(&*self.storage, data_dir, &name)
                    .await
                    .map_err(|e| {
                        BrokerError::new(
                            ErrorCode::StorageError,
                            format!("quarantining {name}: {e}"),
                        )
                    })?;
                // A created partition starts in a fresh directory, never in leftovers.
                debug_assert!(!self.storage.exists(&dir));
            }
        }
        // The new partitions' files are made durable together: written without a sync
        // each, then two file-system syncs before the create is answered (a few syncs per
        // partition made creating thousands take seconds). The shard's other partitions
        // sync as they go meanwhile.
        let new_dirs: Vec<_> = (self.owned_partitions(meta, from))
            .map(|p| partition_dir(data_dir, &meta.name, p))
            .collect();
        let created = new_dirs.len();
        self.dir_syncs.defer_under(new_dirs);
        let opened =
            (self.open_owned(meta, from, OpenOptions::default(), OnOpenFailure::Fail)).await;
        let synced = self.dir_syncs.sync_deferred(data_dir).await.map_err(|e| {
            let why = format!("syncing the new partitions of {}: {e}", meta.name);
            BrokerError::new(ErrorCode::StorageError, why)
        });
        if created >= BULK_CREATE {
            crate::io::os::release_free_heap();
        }
        synced.and(opened)
    }

    /// The partitions from `from` on that this shard owns.
    pub(super) fn owned_partitions<'a>(
        &self,
        meta: &'a TopicMeta,
        from: u32,
    ) -> impl Iterator<Item = u32> + 'a {
        let id = self.id as u32;
        (from..meta.partitions()).filter(move |&p| meta.owners[p as usize] == id)
    }

    /// Unpublishes a topic, closes the partitions this shard owns and moves their
    /// directories to the trash (durably: one fsync of the data directory), then removes
    /// the trash in the background.
    pub(super) async fn remove_owned(&self, meta: &TopicMeta) -> OpResult {
        self.topics.borrow_mut().remove(&meta.name);
        self.detach_remote(&meta.name);
        self.discard_partitions(meta, 0).await
    }

    /// Closes the partitions from `from` on that this shard owns, without sealing or
    /// syncing, and moves their directories to the trash (durably: one fsync of the data
    /// directory), then removes the trash in the background.
    pub(super) async fn discard_partitions(&self, meta: &TopicMeta, from: u32) -> OpResult {
        let data_dir = &self.config.data_dir;
        let mut trash = Vec::new();
        let mut first_err = None;
        // Discard them all at once: nothing is sealed or synced, the files are going.
        let closing: Vec<_> = self
            .owned_partitions(meta, from)
            .filter_map(|p| {
                let tp = TopicPartition::new(&*meta.name, p as i32);
                self.offline.borrow_mut().remove(&tp);
                let h = self.partitions.borrow_mut().remove(&tp)?;
                Some(crate::tasks::spawn(async move { (p, h.discard().await) }))
            })
            .collect();
        for task in closing {
            if let (p, Err(e)) = task.await {
                tracing::warn!(topic = %meta.name, partition = p, error = %e, "closing a removed partition");
            }
        }
        for p in self.owned_partitions(meta, from) {
            let name = partition_dir_name(&meta.name, p);
            if !self.storage.exists(&data_dir.join(&name)) {
                continue;
            }
            match data_dir::move_to_trash(&*self.storage, data_dir, &name).await {
                Ok(to) => trash.push(to),
                Err(e) => {
                    first_err.get_or_insert(BrokerError::new(
                        ErrorCode::StorageError,
                        format!("trashing {name}: {e}"),
                    ));
                }
            }
        }
        if let Err(e) = self.storage.sync_dir(data_dir).await {
            first_err.get_or_insert(BrokerError::new(
                ErrorCode::StorageError,
                format!("syncing {}: {e}", data_dir.display()),
            ));
        }
        data_dir::remove_in_background(trash);
        first_err.map_or(Ok(OpOk::Done), Err)
    }

    /// Takes a topic's altered config (persisted by the controller) into this shard's map
    /// and into the partitions it owns, without a restart.
    pub(super) async fn alter_owned(&self, meta: TopicMeta) -> OpResult {
        let mut log_config = meta.config.log.clone();
        log_config.min_time_roll_interval_ms = self.config.log_roll_min_interval_ms;
        let handles: Vec<PartitionHandle> = self
            .owned_partitions(&meta, 0)
            .filter_map(|p| {
                self.partitions
                    .borrow()
                    .get(&TopicPartition::new(&*meta.name, p as i32))
                    .cloned()
            })
            .collect();
        for p in self.owned_partitions(&meta, 0) {
            // The local start is learnt from the partition's first answer.
            self.attach_remote(&meta.name, p, log_config.remote_storage_enable, -1);
        }
        self.topics.borrow_mut().insert(meta.name.clone(), meta);
        for h in handles {
            h.call(PartitionOp::SetConfig(log_config.clone())).await?;
        }
        Ok(OpOk::Done)
    }

    /// What recovery cut from a log: real damage (a torn write, corrupt bytes) is a WARN
    /// each; zero padding, normal after an unclean stop, is counted and reported once.
    fn note_truncations(&self, truncations: &[crate::log::segment::Truncation]) {
        for t in truncations {
            if t.padding {
                let (segments, bytes) = self.padding_dropped.get();
                self.padding_dropped
                    .set((segments + 1, bytes + t.bytes_dropped));
            } else {
                tracing::warn!(file = %t.file.display(), position = t.position, bytes_dropped = t.bytes_dropped, reason = %t.reason, "recovery truncated a log");
            }
        }
    }

    /// Opens the partitions of `meta` this shard owns and starts their tasks, up to
    /// `OPEN_CONCURRENCY` at a time (each open is a few small reads, or a recovery scan).
    async fn open_owned(
        &self,
        meta: &TopicMeta,
        from: u32,
        mut opts: OpenOptions,
        on_failure: OnOpenFailure,
    ) -> OpResult {
        opts.cache = Some(self.cache.clone());
        opts.acknowledged_reads = true;
        let owned: Vec<u32> = self.owned_partitions(meta, from).collect();
        let opened: Vec<Result<(), BrokerError>> = stream::iter(owned.iter().copied())
            .map(|p| self.open_one(meta, p, &opts, on_failure))
            .buffer_unordered(OPEN_CONCURRENCY)
            .collect()
            .await;
        assert_eq!(opened.len(), owned.len(), "every owned partition was tried");
        // With `Fail`, the caller removes what did open (a topic being created).
        opened
            .into_iter()
            .find_map(Result::err)
            .map_or(Ok(OpOk::Done), Err)
    }

    /// Opens partition `p` of `meta` and starts its task; a partition that cannot be
    /// opened fails the caller or is left offline, as `on_failure` says.
    async fn open_one(
        &self,
        meta: &TopicMeta,
        p: u32,
        opts: &OpenOptions,
        on_failure: OnOpenFailure,
    ) -> Result<(), BrokerError> {
        let dir = partition_dir(&self.config.data_dir, &meta.name, p);
        let mut log_config = meta.config.log.clone();
        log_config.min_time_roll_interval_ms = self.config.log_roll_min_interval_ms;
        let started = std::time::Instant::now();
        let opened = PartitionLog::open_with(self.storage.clone(), &dir, log_config, opts.clone())
            .await
            .map_err(|e| {
                BrokerError::new(ErrorCode::of(&e), format!("opening {}: {e}", dir.display()))
            });
        let tp = TopicPartition::new(&*meta.name, p as i32);
        let log = match (opened, on_failure) {
            (Ok(log), _) => log,
            (Err(why), OnOpenFailure::Fail) => return Err(why),
            (Err(why), OnOpenFailure::Offline) => {
                tracing::error!(partition = %tp, %why, "partition left offline: it cannot be opened (its requests get KAFKA_STORAGE_ERROR); the rest of the node serves");
                self.offline.borrow_mut().insert(tp, why.message());
                return Ok(());
            }
        };
        // A slow start names its partitions (recovery scans and producer-state replays
        // are the expected costs; anything else is a finding).
        if started.elapsed() >= SLOW_OPEN {
            let elapsed_ms = started.elapsed().as_millis() as u64;
            let clean = opts.clean_shutdown;
            tracing::warn!(dir = %dir.display(), elapsed_ms, clean, segments = log.segments().len(), "slow partition open");
        }
        self.note_truncations(log.recovery_truncations());
        let id = meta.topic_id;
        let recorded =
            crate::catalog::topics::ensure_partition_metadata(&*self.storage, &dir, id).await;
        if let Err(e) = recorded {
            tracing::warn!(partition = %tp, error = %e, "writing partition.metadata failed; the topic id is still in the topic's metadata");
        }
        let local_start = log.log_start_offset();
        let earlier = self
            .partitions
            .borrow_mut()
            .insert(tp, PartitionHandle::spawn(log, self.shared_sync.clone()));
        assert!(
            earlier.is_none(),
            "partition {} of {} opened twice",
            p,
            meta.name
        );
        let tiered = meta.config.log.remote_storage_enable;
        self.attach_remote(&meta.name, p, tiered, local_start);
        Ok(())
    }

    /// Closes every partition this shard owns (clean shutdown), `CLOSE_CONCURRENCY` at a
    /// time, their file replacements made durable by two file-system syncs at the end. No
    /// close starts in the last fifth of the time to `deadline` (kept for those syncs);
    /// those started finish (none is cut off mid-I/O), and the rest are left to recovery at
    /// the next start.
    pub async fn close_partitions(&self, deadline: std::time::Instant) -> ClosedPartitions {
        let handles: Vec<_> = self.partitions.borrow_mut().drain().collect();
        let total = handles.len();
        let now = std::time::Instant::now();
        let last_start = now + deadline.saturating_duration_since(now) * 4 / 5;
        self.dir_syncs.defer();
        // Borrowed, not consumed: a partition left unclosed keeps its handle until the
        // sync below is done, or its task would close it meanwhile (dropped handle) and
        // replace files while the deferred renames run.
        let (closed, failed) = stream::iter(handles.iter())
            .take_while(|_| std::future::ready(std::time::Instant::now() < last_start))
            .map(|(tp, h)| async move {
                let closed = h.close().await;
                if let Err(e) = &closed {
                    tracing::error!(partition = %tp, error = %e, "partition did not close cleanly");
                }
                closed.is_ok()
            })
            .buffer_unordered(CLOSE_CONCURRENCY)
            .fold((0, 0), |(closed, failed), ok| async move {
                (closed + ok as usize, failed + !ok as usize)
            })
            .await;
        let closes_ms = now.elapsed().as_millis() as u64;
        let synced = self.dir_syncs.sync_deferred(&self.config.data_dir).await;
        tracing::info!(
            shard = self.id,
            closes_ms,
            sync_ms = now.elapsed().as_millis() as u64 - closes_ms,
            "partitions closed; their files made durable"
        );
        if let Err(e) = &synced {
            tracing::error!(shard = self.id, error = %e, "syncing the file system after closing partitions");
        }
        let done = ClosedPartitions {
            closed: if synced.is_ok() { closed } else { 0 },
            failed: if synced.is_ok() {
                failed
            } else {
                closed + failed
            },
            not_started: total - closed - failed,
        };
        assert_eq!(done.closed + done.failed + done.not_started, total);
        drop(handles);
        done
    }
}

/// What a shard's shutdown did with its partitions: only when every one closed is the
/// shutdown clean.
#[derive(Debug, Clone, Copy)]
pub struct ClosedPartitions {
    pub closed: usize,
    /// Closes that failed (or whose directory changes could not be made durable).
    pub failed: usize,
    /// Left unclosed: the deadline came first.
    pub not_started: usize,
}
