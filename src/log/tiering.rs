//! What a tiered log offers the remote tier: its sealed segments that may be copied (whole,
//! below the last stable offset, so no undecided transaction goes up), with the files of
//! each; and the copied end that local retention waits for.

use std::path::PathBuf;

use super::file_names::{segment_path, SNAPSHOT_SUFFIX};
use super::partition::PartitionLog;
use super::segment::Segment;
use super::segment_slice::RebasedIndexes;
use super::txn_index::TXN_INDEX_SUFFIX;
use super::{INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};

/// A sealed segment ready to be copied: sealed segments never change, so its files can be
/// read outside the partition's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSegment {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp_ms: i64,
    pub size_bytes: u64,
    /// (suffix, path) of each file that exists: `.log`, `.index`, `.timeindex`, and the
    /// `.txnindex` and producer snapshot (at the next segment's base) when there are some.
    /// A tail's indexes are `rebased` instead.
    pub files: Vec<(&'static str, PathBuf)>,
    /// Where the copy of the `.log` starts in the local file: 0, or the cut of a tail.
    pub log_position: u64,
    /// A tail's `.index` and `.timeindex` (`segment_slice.rs`).
    pub rebased: Option<RebasedIndexes>,
}

impl PartitionLog {
    /// Sealed, non-empty segments holding offsets from `from_offset` on whose successor
    /// starts at or below the last stable offset (Kafka's RLM candidate rule), oldest
    /// first, at most `limit`. A segment `from_offset` falls inside is cut at the batch
    /// holding it (its tail is copied: `segment_slice.rs`).
    pub async fn segments_to_copy(
        &mut self,
        from_offset: i64,
        limit: usize,
    ) -> crate::Result<Vec<SealedSegment>> {
        let stable = self.last_stable_offset();
        let picked: Vec<(usize, i64)> = (self.segments.windows(2).enumerate())
            .filter(|(_, pair)| pair[0].next_offset() > from_offset && !pair[0].is_empty())
            .take_while(|(_, pair)| pair[1].base_offset() <= stable)
            .take(limit)
            .map(|(i, pair)| (i, pair[1].base_offset()))
            .collect();
        let mut sealed = Vec::with_capacity(picked.len());
        for (i, next_base) in picked {
            let whole = self.sealed(&self.segments[i], next_base);
            sealed.push(match whole.base_offset < from_offset {
                true => self.tail_of(i, whole, from_offset).await?,
                false => whole,
            });
        }
        Ok(sealed)
    }

    /// Segment `i`'s tail from the batch holding `from_offset`.
    async fn tail_of(
        &mut self,
        i: usize,
        whole: SealedSegment,
        from_offset: i64,
    ) -> crate::Result<SealedSegment> {
        let seg = &mut self.segments[i];
        let found = seg.batch_holding(from_offset).await?;
        // `from_offset` lies below the segment's next offset, so a batch holds it.
        let found = found.ok_or_else(|| {
            let why = format!("no batch holds offset {from_offset}");
            crate::error::Error::corruption(seg.log_file().path(), 0, why)
        })?;
        let base = found.header.base_offset;
        assert!(base <= from_offset);
        assert!(base >= whole.base_offset);
        if base == whole.base_offset {
            return Ok(whole); // the first batch holds it: the tail is the whole
        }
        // Read only for a real cut (a paged segment's indexes come from disk).
        let (offsets, times) = seg.indexes(&self.config).await?;
        let rebased = super::segment_slice::rebase(&offsets, &times, base, found.position);
        let rebuilt = [INDEX_SUFFIX, TIME_INDEX_SUFFIX];
        Ok(SealedSegment {
            base_offset: base,
            size_bytes: whole.size_bytes - found.position,
            files: (whole.files.into_iter())
                .filter(|(suffix, _)| !rebuilt.contains(suffix))
                .collect(),
            log_position: found.position,
            rebased: Some(rebased),
            ..whole
        })
    }

    fn sealed(&self, seg: &Segment, next_base: i64) -> SealedSegment {
        assert!(seg.next_offset() <= next_base);
        let base = seg.base_offset();
        let mut files: Vec<(&'static str, PathBuf)> = [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ]
        .into_iter()
        .map(|suffix| (suffix, segment_path(&self.dir, base, suffix)))
        .filter(|(_, p)| self.io.storage.exists(p))
        .collect();
        let snapshot = segment_path(&self.dir, next_base, SNAPSHOT_SUFFIX);
        if self.io.storage.exists(&snapshot) {
            files.push((SNAPSHOT_SUFFIX, snapshot));
        }
        SealedSegment {
            base_offset: base,
            last_offset: seg.next_offset() - 1,
            max_timestamp_ms: seg.max_timestamp(),
            size_bytes: seg.size(),
            files,
            log_position: 0,
            rebased: None,
        }
    }

    /// The remote tier now holds every record below `end` (a committed upload).
    pub fn set_remote_copied_end(&mut self, end: i64) {
        assert!(
            self.remote_copied_end.is_none_or(|e| e <= end),
            "the copied end never moves back"
        );
        self.remote_copied_end = Some(end);
    }

    /// Whether local retention may delete `seg` as far as tiering goes: always for a log
    /// that is not tiered, else once the remote tier holds all of it.
    pub(super) fn copied_to_remote(&self, seg: &Segment) -> bool {
        !self.config.remote_storage_enable
            || self
                .remote_copied_end
                .is_some_and(|end| seg.next_offset() <= end)
    }
}

/// Lays out an empty partition directory whose log starts and ends at `offset` (a
/// partition restored from the remote tier: everything below it is remote): an empty
/// active segment at `offset`, both checkpoints at it, and the producers' snapshot at it
/// when there is one, so idempotent producers carry on. The loader opens it as any log.
pub async fn seed_restored(
    storage: &dyn crate::io::Storage,
    dir: &std::path::Path,
    offset: i64,
    producer_snapshot: Option<Vec<u8>>,
) -> crate::Result<()> {
    use super::checkpoint::{LOG_START_OFFSET, RECOVERY_POINT};
    use crate::error::Error;
    storage
        .create_dir_all(dir)
        .map_err(|e| Error::io("create directory", dir, e))?;
    let log = segment_path(dir, offset, LOG_SUFFIX);
    let file = storage
        .open(&log, crate::io::OpenMode::CreateNew)
        .await
        .map_err(|e| Error::io("create", &log, e))?;
    file.close()
        .await
        .map_err(|e| Error::io("close", &log, e))?;
    if let Some(bytes) = producer_snapshot {
        let path = segment_path(dir, offset, SNAPSHOT_SUFFIX);
        crate::io::storage::write_new_file_synced(storage, &path, &bytes)
            .await
            .map_err(|e| Error::io("write", &path, e))?;
    }
    LOG_START_OFFSET.write(storage, dir, offset).await?;
    RECOVERY_POINT.write(storage, dir, offset).await?;
    storage
        .sync_dir(dir)
        .await
        .map_err(|e| Error::io("fsync directory", dir, e))
}
