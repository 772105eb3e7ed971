//! A partition's leader-epoch history on disk, as Kafka keeps it: `leader-epoch-checkpoint`
//! in the partition directory, a text file of a version line `0`, a count, then one
//! `epoch start_offset` line per epoch whose records the log holds. Rewritten atomically
//! (temp file, fsync, rename) whenever an epoch starts or the log is truncated. A file
//! that claims more than the log holds after a crash is cut back to the log's end at open.

use std::path::Path;

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::replication::{EpochCache, EpochEntry};

pub const FILE: &str = "leader-epoch-checkpoint";

const VERSION: &str = "0";

/// The file's bytes.
pub fn encode(cache: &EpochCache) -> Vec<u8> {
    let mut out = format!("{VERSION}\n{}\n", cache.entries().len());
    for e in cache.entries() {
        out.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
    }
    out.into_bytes()
}

/// The history the bytes hold; None when they are not a version-0 file with increasing
/// epochs and start offsets.
pub fn parse(bytes: &[u8]) -> Option<EpochCache> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    (lines.next()? == VERSION).then_some(())?;
    let count: usize = lines.next()?.trim().parse().ok()?;
    let mut cache = EpochCache::default();
    for _ in 0..count {
        let (epoch, start) = lines.next()?.trim().split_once(' ')?;
        let entry = EpochEntry {
            epoch: epoch.parse().ok()?,
            start_offset: start.trim().parse().ok()?,
        };
        let ordered = cache
            .latest()
            .is_none_or(|l| l.epoch < entry.epoch && l.start_offset <= entry.start_offset);
        if !ordered || entry.epoch < 0 || entry.start_offset < 0 {
            return None;
        }
        cache.assign(entry.epoch, entry.start_offset);
    }
    Some(cache)
}

/// The history of the partition in `dir`: empty when there is no file (a log written
/// before leader epochs, or by a single node) or it cannot be read (logged).
pub async fn read(storage: &dyn Storage, dir: &Path) -> EpochCache {
    let path = dir.join(FILE);
    if !storage.exists(&path) {
        return EpochCache::default();
    }
    let parsed = match storage.read_file(&path).await {
        Ok(bytes) => parse(&bytes),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "reading the leader-epoch checkpoint");
            None
        }
    };
    parsed.unwrap_or_else(|| {
        tracing::warn!(path = %path.display(), "an unreadable leader-epoch checkpoint; the history starts again");
        EpochCache::default()
    })
}

pub async fn write(storage: &dyn Storage, dir: &Path, cache: &EpochCache) -> Result<()> {
    let path = dir.join(FILE);
    let bytes = encode(cache);
    assert_eq!(parse(&bytes).as_ref(), Some(cache), "the file reads back");
    storage
        .write_file_atomic(&path, bytes)
        .await
        .map_err(|e| Error::io("write", &path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_is_kafka_s_text_and_reads_back() {
        let mut cache = EpochCache::default();
        cache.assign(0, 0);
        cache.assign(3, 150);
        let bytes = encode(&cache);
        assert_eq!(bytes, b"0\n2\n0 0\n3 150\n");
        assert_eq!(parse(&bytes), Some(cache));
        assert_eq!(parse(b"0\n0\n"), Some(EpochCache::default()));
        for bad in [
            &b"1\n0\n"[..],
            b"0\n2\n0 0\n",
            b"0\n2\n3 10\n1 20\n",
            b"0\n1\nx 1\n",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
