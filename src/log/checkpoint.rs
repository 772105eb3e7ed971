//! The recovery-point checkpoint of a partition (`recovery-point-offset-checkpoint` in the
//! partition directory): the offset below which every byte is known durable. It only moves
//! forward after an fdatasync, and is written atomically (temp file, fsync, rename, fsync of
//! the directory). After an unclean shutdown, segments from the one holding this offset to
//! the end are rescanned; segments below it are trusted.
//!
//! Format (text, as Kafka's checkpoint files): a version line `0`, then the offset.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::io::Storage;

pub const CHECKPOINT_FILE: &str = "recovery-point-offset-checkpoint";
const VERSION: &str = "0";

pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join(CHECKPOINT_FILE)
}

/// Reads the checkpoint; a missing or unreadable one means "recover everything" (0).
pub async fn read_recovery_point(storage: &dyn Storage, dir: &Path) -> i64 {
    let path = checkpoint_path(dir);
    if !storage.exists(&path) {
        return 0;
    }
    let parsed = storage.read_file(&path).await.ok().and_then(|bytes| {
        let text = String::from_utf8(bytes).ok()?;
        let mut lines = text.lines();
        (lines.next()? == VERSION).then_some(())?;
        lines.next()?.trim().parse::<i64>().ok().filter(|o| *o >= 0)
    });
    if parsed.is_none() {
        tracing::warn!(file = %path.display(), "unreadable recovery checkpoint; recovering the whole log");
    }
    parsed.unwrap_or(0)
}

pub async fn write_recovery_point(storage: &dyn Storage, dir: &Path, offset: i64) -> Result<()> {
    let path = checkpoint_path(dir);
    storage
        .write_file_atomic(&path, format!("{VERSION}\n{offset}\n").into_bytes())
        .await
        .map_err(|e| Error::io("write", &path, e))
}
