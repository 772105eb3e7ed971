//! A partition's offset checkpoints, one small file each in the partition directory, as
//! Kafka keeps them (Kafka keeps one file per data directory; shardlog keeps one per
//! partition, so a partition's directory holds everything about it):
//! - `recovery-point-offset-checkpoint`: the offset below which every byte is known durable.
//!   It only moves forward after an fdatasync. After an unclean shutdown, segments from the
//!   one holding it to the end are rescanned; segments below it are trusted.
//! - `log-start-offset-checkpoint`: the log start offset when retention or DeleteRecords
//!   moved it past the first segment's base offset.
//! - `cleaner-offset-checkpoint`: the first offset the cleaner has not compacted yet.
//! - `replication-offset-checkpoint` (cluster mode): the partition's high watermark.
//!
//! Written atomically (temp file, fsync, rename, fsync of the directory). Format (text, as
//! Kafka's checkpoint files): a version line `0`, then the offset.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::Storage;

/// One kind of checkpoint file.
#[derive(Debug, Clone, Copy)]
pub struct Checkpoint {
    pub file: &'static str,
    /// What a missing or unreadable file means.
    pub missing: i64,
}

pub const RECOVERY_POINT: Checkpoint = Checkpoint {
    file: "recovery-point-offset-checkpoint",
    // Recover everything.
    missing: 0,
};
pub const LOG_START_OFFSET: Checkpoint = Checkpoint {
    file: "log-start-offset-checkpoint",
    // The first segment's base offset decides.
    missing: 0,
};
/// A replicated partition's high watermark (cluster mode), as Kafka's
/// `replication-offset-checkpoint` keeps it: where a restarted replica's readers start.
pub const HIGH_WATERMARK: Checkpoint = Checkpoint {
    file: "replication-offset-checkpoint",
    // Nothing known committed: the leader tells a follower, a sole leader its log end.
    missing: 0,
};
pub const CLEANER_OFFSET: Checkpoint = Checkpoint {
    file: "cleaner-offset-checkpoint",
    // Nothing cleaned yet.
    missing: 0,
};

const VERSION: &str = "0";

impl Checkpoint {
    /// Reads the checkpoint; a missing or unreadable one gives `self.missing`.
    pub async fn read(self, storage: &dyn Storage, dir: &Path) -> i64 {
        match self.read_strict(storage, dir).await {
            Ok(Some(v)) => v,
            Ok(None) => self.missing,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable checkpoint; using {}", self.missing);
                self.missing
            }
        }
    }

    /// Reads the checkpoint: `None` if there is none, an error if it exists but cannot be
    /// read (for values that must never fall back, such as the producer-id block).
    pub async fn read_strict(self, storage: &dyn Storage, dir: &Path) -> Result<Option<i64>> {
        let path = dir.join(self.file);
        if !storage.exists(&path) {
            return Ok(None);
        }
        let bytes = storage
            .read_file(&path)
            .await
            .map_err(|e| Error::io("read", &path, e))?;
        parse(&bytes).map(Some).ok_or_else(|| {
            Error::corruption(
                &path,
                0,
                "not a version-0 checkpoint of one non-negative value",
            )
        })
    }

    pub async fn write(self, storage: &dyn Storage, dir: &Path, offset: i64) -> Result<()> {
        assert!(offset >= 0, "{} would record offset {offset}", self.file);
        let path = dir.join(self.file);
        storage
            .write_file_atomic(&path, format!("{VERSION}\n{offset}\n").into_bytes())
            .await
            .map_err(|e| Error::io("write", &path, e))
    }
}

/// The value of a checkpoint file's bytes: version line, then one non-negative value.
pub fn parse(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    (lines.next()? == VERSION).then_some(())?;
    lines.next()?.trim().parse::<i64>().ok().filter(|o| *o >= 0)
}
