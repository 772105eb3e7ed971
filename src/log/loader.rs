//! Opening a partition directory (Kafka's `LogLoader`): resolve leftovers of interrupted
//! deletions, cleanings and swaps; drop index files without a `.log`; open every segment;
//! after an unclean shutdown, rescan every segment from the recovery point to the end,
//! truncate at the first invalid batch and remove every later segment.

use std::path::Path;
use std::rc::Rc;

use super::checkpoint::RECOVERY_POINT;
use super::file_names::{offset_of, segment_file_name, segment_path};
use super::segment::{Segment, Truncation};
use super::txn_index::TXN_INDEX_SUFFIX;
use super::LogIo;
use super::{
    CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX, SWAP_SUFFIX, TIME_INDEX_SUFFIX,
};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::io::{SharedPageCache, Storage};

/// How to open a partition.
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// The previous run shut down cleanly (the server's `.clean-shutdown` marker was
    /// present): skip the recovery scan. The default, false, always recovers from the
    /// checkpointed recovery point, which is safe.
    pub clean_shutdown: bool,
    /// The shard's page cache for reads of `.log` and index files (none: uncached).
    pub cache: Option<SharedPageCache>,
    /// Reads and lookups see only records acknowledged as written (after a successful
    /// flush or sync), never those of an append still in progress or failed. The server
    /// sets it; with it off (the default) an append is readable at once.
    pub acknowledged_reads: bool,
}

pub struct Loaded {
    pub segments: Vec<Segment>,
    pub truncations: Vec<Truncation>,
    /// Recovery point the partition may now claim (its log end, everything being durable).
    pub recovery_point: i64,
    /// Whether the files on disk are as the last clean close (or the creation) left them:
    /// a clean start, a new partition, or an empty one. Nothing was recovered or rewritten.
    pub as_left: bool,
}

async fn remove_logged(storage: &dyn Storage, path: &Path, why: &str) -> Result<()> {
    tracing::warn!(file = %path.display(), "{why}");
    storage
        .remove(path)
        .await
        .map_err(|e| Error::io("remove", path, e))
}

/// Finishes or rolls back what a crash interrupted, before anything else reads the directory.
async fn resolve_leftovers(storage: &dyn Storage, dir: &Path) -> Result<bool> {
    let mut changed = false;
    let names = storage.list(dir).map_err(|e| Error::io("list", dir, e))?;
    for name in &names {
        let path = dir.join(name);
        if name.ends_with(".tmp") {
            remove_logged(storage, &path, "removing an incomplete temporary file").await?;
            changed = true;
        } else if name.ends_with(DELETED_SUFFIX) {
            // Routine: retention's deleted segments wait file.delete.delay.ms to go, and a
            // restart meanwhile finishes them here.
            tracing::info!(file = %path.display(), "removing a deleted segment's file");
            storage
                .remove(&path)
                .await
                .map_err(|e| Error::io("remove", &path, e))?;
            changed = true;
        } else if name.ends_with(CLEANED_SUFFIX) {
            remove_logged(
                storage,
                &path,
                "discarding the output of an interrupted cleaning",
            )
            .await?;
            changed = true;
        }
    }
    // A `.swap` file is a complete replacement (it is renamed to .swap only once written):
    // finish the swap. Index files of a swapped .log are dropped so they are rebuilt.
    for name in &names {
        let Some(target) = name.strip_suffix(SWAP_SUFFIX) else {
            continue;
        };
        let from = dir.join(name);
        let to = dir.join(target);
        tracing::warn!(file = %from.display(), "completing an interrupted swap");
        if storage.exists(&to) {
            storage
                .remove(&to)
                .await
                .map_err(|e| Error::io("remove", &to, e))?;
        }
        storage
            .rename(&from, &to)
            .await
            .map_err(|e| Error::io("rename", &from, e))?;
        if let Some(base) = offset_of(target, LOG_SUFFIX) {
            for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                let idx = segment_path(dir, base, suffix);
                let swapped_too =
                    names.contains(&format!("{}{SWAP_SUFFIX}", segment_file_name(base, suffix)));
                if storage.exists(&idx) && !swapped_too {
                    storage
                        .remove(&idx)
                        .await
                        .map_err(|e| Error::io("remove", &idx, e))?;
                }
            }
        }
        changed = true;
    }
    Ok(changed)
}

/// Segment base offsets present, after removing index files that have no `.log`.
async fn list_segments(storage: &dyn Storage, dir: &Path) -> Result<(Vec<i64>, bool)> {
    let names = storage.list(dir).map_err(|e| Error::io("list", dir, e))?;
    let mut bases: Vec<i64> = names
        .iter()
        .filter_map(|n| offset_of(n, LOG_SUFFIX))
        .collect();
    bases.sort_unstable();
    let mut changed = false;
    for name in &names {
        let base = offset_of(name, INDEX_SUFFIX)
            .or_else(|| offset_of(name, TIME_INDEX_SUFFIX))
            .or_else(|| offset_of(name, TXN_INDEX_SUFFIX));
        if let Some(b) = base {
            if bases.binary_search(&b).is_err() {
                remove_logged(
                    storage,
                    &dir.join(name),
                    "removing an index file without a .log",
                )
                .await?;
                changed = true;
            }
        }
    }
    Ok((bases, changed))
}

async fn remove_segment_files(storage: &dyn Storage, dir: &Path, base: i64) -> Result<()> {
    for suffix in [
        LOG_SUFFIX,
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        TXN_INDEX_SUFFIX,
    ] {
        let p = segment_path(dir, base, suffix);
        if storage.exists(&p) {
            remove_logged(storage, &p, "removing a segment after the truncation point").await?;
        }
    }
    Ok(())
}

pub async fn load(
    storage: Rc<dyn Storage>,
    dir: &Path,
    config: &LogConfig,
    opts: OpenOptions,
) -> Result<Loaded> {
    let io = LogIo {
        storage: storage.clone(),
        cache: opts.cache.clone(),
    };
    storage
        .create_dir_all(dir)
        .map_err(|e| Error::io("create directory", dir, e))?;
    let mut dir_changed = resolve_leftovers(storage.as_ref(), dir).await?;
    let (bases, removed) = list_segments(storage.as_ref(), dir).await?;
    dir_changed |= removed;

    let recovery_point = if opts.clean_shutdown {
        i64::MAX
    } else {
        RECOVERY_POINT.read(storage.as_ref(), dir).await
    };
    let opened = open_segments(&io, dir, &bases, config, &opts, recovery_point).await?;
    let OpenedSegments {
        mut segments,
        truncations,
        removed_later,
    } = opened;
    dir_changed |= removed_later;
    let created = segments.is_empty();
    if created {
        segments.push(Segment::create(io.clone(), dir, 0, config).await?);
        dir_changed = true;
    }
    if dir_changed {
        storage
            .sync_dir(dir)
            .await
            .map_err(|e| Error::io("fsync directory", dir, e))?;
    }
    let log_end = segments.last().map_or(0, |s| s.next_offset());
    // Every segment is durable now (trusted, or recovered and fdatasync'd). A checkpoint
    // that already says so (an idle partition's) is not written again: an unclean restart
    // of many idle partitions costs no file replacement each.
    if !opts.clean_shutdown && recovery_point != log_end {
        RECOVERY_POINT.write(storage.as_ref(), dir, log_end).await?;
    }
    // An empty log (one empty segment at 0) holds nothing a close would write either.
    let empty = log_end == 0 && segments.len() == 1;
    let as_left = (opts.clean_shutdown || created || empty) && truncations.is_empty();
    Ok(Loaded {
        segments,
        truncations,
        recovery_point: log_end,
        as_left,
    })
}

#[derive(Default)]
struct OpenedSegments {
    segments: Vec<Segment>,
    truncations: Vec<Truncation>,
    /// Segments after a truncation were removed.
    removed_later: bool,
}

/// Opens the segments in order: those wholly below the recovery point (all of them after
/// a clean shutdown) as they are, the others recovered. A truncation ends the log there:
/// nothing after an invalid batch can be trusted, so later segments go.
async fn open_segments(
    io: &LogIo,
    dir: &Path,
    bases: &[i64],
    config: &LogConfig,
    opts: &OpenOptions,
    recovery_point: i64,
) -> Result<OpenedSegments> {
    let mut out = OpenedSegments {
        segments: Vec::with_capacity(bases.len().max(1)),
        ..OpenedSegments::default()
    };
    for (i, &base) in bases.iter().enumerate() {
        let last = i + 1 == bases.len();
        let trusted =
            opts.clean_shutdown || bases.get(i + 1).is_some_and(|&next| next <= recovery_point);
        if trusted {
            if let Some(seg) = open_trusted(io, dir, base, config, last).await? {
                out.segments.push(seg);
                continue;
            }
        }
        let min_next = out.segments.last().map_or(base, |s| s.next_offset());
        let (seg, truncation) =
            Segment::recover(io.clone(), dir, base, config, min_next, last).await?;
        let Some(t) = truncation else {
            out.segments.push(seg);
            continue;
        };
        out.truncations.push(t);
        for &later in &bases[i + 1..] {
            remove_segment_files(io.storage.as_ref(), dir, later).await?;
            out.removed_later = true;
        }
        let seg = if last {
            seg
        } else {
            // It becomes the active segment: reopen it for appending.
            seg.abandon().await;
            Segment::recover(io.clone(), dir, base, config, min_next, true)
                .await?
                .0
        };
        out.segments.push(seg);
        break;
    }
    Ok(out)
}

/// A segment below the recovery point, opened as it is; `None` when the active segment
/// turns out not to be clean (an untrimmed tail, garbage), so it is recovered instead.
async fn open_trusted(
    io: &LogIo,
    dir: &Path,
    base: i64,
    config: &LogConfig,
    last: bool,
) -> Result<Option<Segment>> {
    match Segment::open(io.clone(), dir, base, config, last).await {
        Ok(seg) => Ok(Some(seg)),
        Err(e @ Error::Corruption { .. }) if last => {
            tracing::warn!(dir = %dir.display(), error = %e, "active segment is not clean; recovering it");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
