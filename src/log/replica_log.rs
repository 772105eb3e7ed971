//! What replication needs of a partition's log: leader epochs (stamped into each batch a
//! leader appends, recorded in `leader-epoch-checkpoint` for every epoch whose records the
//! log holds, the leader's or copied from one), a high watermark that bounds what
//! consumers see, reads for followers up to the acknowledged log end, and truncation from
//! the end where a follower's log stops agreeing with its leader's (KIP-101/279/320).

use crate::error::{Error, Result};
use crate::format::header::BatchHeader;
use crate::io::chain::ByteChain;
use crate::io::OpenMode;
use crate::log::batch_stream::{BatchStream, Next, FULL_SPEED};
use crate::log::checkpoint::{HIGH_WATERMARK, LOG_START_OFFSET, RECOVERY_POINT};
use crate::log::file_names::{
    offset_of, segment_path, INDEX_SUFFIX, LOG_SUFFIX, SNAPSHOT_SUFFIX, TIME_INDEX_SUFFIX,
};
use crate::log::loader::{load, OpenOptions};
use crate::log::partition::PartitionLog;
use crate::log::txn_index::TXN_INDEX_SUFFIX;
use crate::replication::EpochCache;

impl PartitionLog {
    /// This node leads the partition in `epoch` from the log end on: the epoch is stamped
    /// on the batches appended from now on, and recorded as starting at the log end (as
    /// Kafka's leader does on election, so a follower asking where it ends gets an answer
    /// before the first batch of the epoch is written).
    pub async fn set_leader_epoch(&mut self, epoch: i32) -> Result<()> {
        assert!(epoch >= 0, "a leader epoch is never negative");
        assert!(
            self.epochs.latest().is_none_or(|l| l.epoch <= epoch),
            "leader epoch {epoch} is older than the log's {:?}",
            self.epochs.latest()
        );
        self.stamp_epoch = epoch;
        if self.epochs.latest().is_some_and(|l| l.epoch == epoch) {
            return Ok(());
        }
        self.epochs.assign(epoch, self.visible_end);
        let storage = self.io.storage.clone();
        super::leader_epochs::write(storage.as_ref(), &self.dir, &self.epochs).await
    }

    /// The leader epochs whose records the log holds, and where each starts.
    pub fn leader_epochs(&self) -> &EpochCache {
        &self.epochs
    }

    /// A replicated partition's high watermark (readers see only records below it); None
    /// lifts the bound (the partition is on one node).
    pub fn set_high_watermark(&mut self, high_watermark: Option<i64>) {
        self.high_watermark = high_watermark;
    }

    /// The high watermark the last run checkpointed (`replication-offset-checkpoint`),
    /// within the log: where a restarted replica's readers start.
    pub async fn checkpointed_high_watermark(&self) -> i64 {
        let storage = self.io.storage.clone();
        let hw = HIGH_WATERMARK.read(storage.as_ref(), &self.dir).await;
        hw.clamp(self.log_start_offset, self.visible_end)
    }

    /// Writes the high watermark to `replication-offset-checkpoint` (a replicated
    /// partition's; nothing otherwise).
    pub async fn checkpoint_high_watermark(&self) -> Result<()> {
        let Some(hw) = self.high_watermark else {
            return Ok(());
        };
        assert!(hw <= self.visible_end, "a high watermark within the log");
        let storage = self.io.storage.clone();
        HIGH_WATERMARK
            .write(storage.as_ref(), &self.dir, hw.max(0))
            .await
    }

    /// The acknowledged log end, past the high watermark: what a follower may copy.
    pub fn replica_end_offset(&self) -> i64 {
        self.visible_end
    }

    /// Whole batches from the one holding `offset` up to the acknowledged log end, for a
    /// follower (which copies past the high watermark; consumers never do).
    pub async fn read_for_replica(&mut self, offset: i64, max_bytes: usize) -> Result<ByteChain> {
        let end = self.visible_end;
        self.read_below(offset, max_bytes, true, end).await
    }

    /// Records the epoch of a batch about to be appended when it starts a new one (a
    /// leader's first batch in its epoch, or a follower's copy of one).
    pub(super) async fn note_epoch(&mut self, header: &BatchHeader) -> Result<()> {
        let epoch = header.partition_leader_epoch;
        if epoch < 0 || self.epochs.latest().is_some_and(|l| l.epoch >= epoch) {
            return Ok(());
        }
        self.epochs.assign(epoch, header.base_offset);
        let storage = self.io.storage.clone();
        super::leader_epochs::write(storage.as_ref(), &self.dir, &self.epochs).await
    }

    /// Drops every record at or after `offset` (whole batches: the batch holding it goes
    /// too): a follower whose log diverged from its leader's. Everything kept is made
    /// durable first; the files past the cut are removed or cut short, and the tail is
    /// loaded again through recovery, which rebuilds its indexes and producer state.
    /// Returns the new log end.
    pub async fn truncate_to(&mut self, offset: i64) -> Result<i64> {
        self.check_healthy().await?;
        if offset >= self.log_end_offset() {
            return Ok(self.log_end_offset());
        }
        if offset < self.log_start_offset {
            return Err(Error::OffsetOutOfRange {
                offset,
                log_start: self.log_start_offset,
                log_end: self.log_end_offset(),
            });
        }
        let before = self.log_end_offset();
        self.sync().await?;
        self.changed_since_open = true;
        let cut = self.segments.partition_point(|s| s.base_offset() <= offset) - 1;
        let cut_base = self.segments[cut].base_offset();
        let position = self.position_of(cut, offset).await?;
        let segments = std::mem::take(&mut self.segments);
        let later: Vec<i64> = segments[cut + 1..]
            .iter()
            .map(|s| s.base_offset())
            .collect();
        for seg in segments {
            seg.abandon().await;
        }
        self.cut_files(cut_base, position, &later).await?;
        let end = self.reload().await?;
        assert!(end <= offset, "the log ends at or before the cut");
        tracing::info!(dir = %self.dir.display(), offset, log_end = end, removed = before - end, "log truncated (diverged from the leader)");
        Ok(end)
    }

    /// Empties the log to start at `offset` (Kafka's truncateFullyAndStartAt): a follower
    /// whose leader's log starts past this log's end, or a replica a reassignment removed
    /// (Kafka deletes its copy). The recovery point goes to 0 first, then every segment's
    /// files, newest first (a crash leaves a prefix, which the next fetch corrects), then
    /// one empty segment at `offset`, the log start checkpointed there and the epochs gone.
    pub async fn empty_and_start_at(&mut self, offset: i64) -> Result<()> {
        self.check_healthy().await?;
        assert!(offset >= 0, "a log starts at a real offset");
        let before = (self.log_start_offset, self.log_end_offset());
        self.sync().await?;
        self.changed_since_open = true;
        let storage = self.io.storage.clone();
        RECOVERY_POINT.write(storage.as_ref(), &self.dir, 0).await?;
        let segments = std::mem::take(&mut self.segments);
        let bases: Vec<i64> = segments.iter().map(|s| s.base_offset()).collect();
        for seg in segments {
            seg.abandon().await;
        }
        self.remove_files_of(&bases).await?;
        let empty =
            super::segment::Segment::create(self.io.clone(), &self.dir, offset, &self.config);
        empty.await?.abandon().await;
        LOG_START_OFFSET
            .write(storage.as_ref(), &self.dir, offset)
            .await?;
        self.log_start_offset = offset;
        self.epochs = EpochCache::default();
        self.high_watermark = self.high_watermark.map(|_| offset);
        RECOVERY_POINT
            .write(storage.as_ref(), &self.dir, offset)
            .await?;
        let end = self.reload().await?;
        assert_eq!(end, offset, "an emptied log ends where it starts");
        assert!(
            self.epochs.entries().is_empty(),
            "an emptied log holds no epoch"
        );
        tracing::info!(dir = %self.dir.display(), ?before, start = offset, "log emptied");
        Ok(())
    }

    /// Removes every file of the segments at `bases` (newest first) and every producer
    /// snapshot.
    async fn remove_files_of(&self, bases: &[i64]) -> Result<()> {
        let storage = self.io.storage.clone();
        let mut paths = Vec::new();
        for &base in bases.iter().rev() {
            for suffix in [
                LOG_SUFFIX,
                INDEX_SUFFIX,
                TIME_INDEX_SUFFIX,
                TXN_INDEX_SUFFIX,
            ] {
                paths.push(segment_path(&self.dir, base, suffix));
            }
        }
        let names = (storage.list(&self.dir)).map_err(|e| Error::io("list", &self.dir, e))?;
        let snapshots = names.iter().filter_map(|n| offset_of(n, SNAPSHOT_SUFFIX));
        paths.extend(snapshots.map(|at| segment_path(&self.dir, at, SNAPSHOT_SUFFIX)));
        for path in paths.into_iter().filter(|p| storage.exists(p)) {
            (storage.remove(&path).await).map_err(|e| Error::io("remove", &path, e))?;
        }
        self.sync_dir().await
    }

    /// The byte position in segment `index` of the first batch that holds `offset` or
    /// lies past it (the file's size when none does).
    async fn position_of(&self, index: usize, offset: i64) -> Result<u64> {
        let base = self.segments[index].base_offset();
        let path = segment_path(&self.dir, base, LOG_SUFFIX);
        let storage = self.io.storage.clone();
        let file = (storage.open(&path, OpenMode::ReadOnly).await)
            .map_err(|e| Error::io("open", &path, e))?;
        let size = self.segments[index].size();
        let mut stream = BatchStream::new(file, &path, size, FULL_SPEED);
        loop {
            match stream.next().await? {
                Next::Batch { position, bytes } => {
                    let header = BatchHeader::parse(bytes)
                        .map_err(|e| Error::corruption(&path, position, e.to_string()))?;
                    if header.last_offset() >= offset {
                        return Ok(position);
                    }
                }
                _ => return Ok(size),
            }
        }
    }

    /// On disk: the recovery point moved back to the cut segment's base first (so a crash
    /// part-way recovers from there), then the segments after the cut removed, newest
    /// first (a crash leaves a prefix of the log), the cut segment's `.log` cut at
    /// `position` and its indexes removed (recovery rebuilds them), and the producer
    /// snapshots past the cut segment's base removed.
    async fn cut_files(&self, cut_base: i64, position: u64, later: &[i64]) -> Result<()> {
        let storage = self.io.storage.clone();
        RECOVERY_POINT
            .write(storage.as_ref(), &self.dir, cut_base)
            .await?;
        let remove = |path: std::path::PathBuf| {
            let storage = storage.clone();
            async move {
                if storage.exists(&path) {
                    (storage.remove(&path).await).map_err(|e| Error::io("remove", &path, e))?;
                }
                Ok::<(), Error>(())
            }
        };
        let suffixes = [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ];
        for &base in later.iter().rev() {
            for suffix in suffixes {
                remove(segment_path(&self.dir, base, suffix)).await?;
            }
        }
        let log_path = segment_path(&self.dir, cut_base, LOG_SUFFIX);
        let file = (storage.open(&log_path, OpenMode::ReadWrite).await)
            .map_err(|e| Error::io("open", &log_path, e))?;
        file.truncate(position)
            .await
            .map_err(|e| Error::io("truncate", &log_path, e))?;
        file.fdatasync()
            .await
            .map_err(|e| Error::io("fdatasync", &log_path, e))?;
        for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX] {
            remove(segment_path(&self.dir, cut_base, suffix)).await?;
        }
        let names = storage
            .list(&self.dir)
            .map_err(|e| Error::io("list", &self.dir, e))?;
        let stale = names.iter().filter_map(|n| offset_of(n, SNAPSHOT_SUFFIX));
        for at in stale.filter(|&at| at > cut_base).collect::<Vec<_>>() {
            remove(segment_path(&self.dir, at, SNAPSHOT_SUFFIX)).await?;
        }
        storage
            .sync_dir(&self.dir)
            .await
            .map_err(|e| Error::io("fsync directory", &self.dir, e))
    }

    /// Loads the segments again from disk (recovering from the recovery point), with the
    /// producer state and aborted transactions rebuilt: the log end it found.
    async fn reload(&mut self) -> Result<i64> {
        let storage = self.io.storage.clone();
        let options = OpenOptions {
            clean_shutdown: false,
            cache: self.io.cache.clone(),
            ..OpenOptions::default()
        };
        let loaded = load(storage.clone(), &self.dir, &self.config, options).await?;
        let end = loaded.segments.last().map_or(0, |s| s.next_offset());
        let (mut producers, mut aborted) =
            super::producer_state::rebuild(storage.as_ref(), &self.dir, &loaded.segments, end)
                .await?;
        producers.count_on_shard();
        aborted.drop_below(self.log_start_offset);
        self.segments = loaded.segments;
        self.recovery_point = loaded.recovery_point;
        self.reloads += 1;
        (self.producers, self.aborted) = (producers, aborted);
        self.visible_end = end;
        self.high_watermark = self.high_watermark.map(|hw| hw.min(end));
        self.epochs.truncate_from_end(end);
        super::leader_epochs::write(storage.as_ref(), &self.dir, &self.epochs).await?;
        self.assert_invariants();
        Ok(end)
    }
}
