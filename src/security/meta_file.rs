//! The server-owned security files in `__shardlog_meta` (SCRAM credentials, ACLs): text,
//! a header line naming the format, replaced atomically (write, fsync, rename), so a change
//! is whole or absent after a kill -9. Read and written here by the offline tools and at
//! start (blocking); the running server replaces them through its storage (`shard/`).

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct StoreError {
    pub path: PathBuf,
    pub why: String,
}

/// Reads and decodes `meta_dir/file`; no file: `T::default()` (nothing stored yet).
pub fn read<T: Default, E: std::fmt::Display>(
    meta_dir: &Path,
    file: &str,
    decode: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, StoreError> {
    let path = meta_dir.join(file);
    let fail = |why: String| StoreError {
        path: path.clone(),
        why,
    };
    match crate::io::os::read_text(&path) {
        Ok(text) => decode(&text).map_err(|e| fail(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(fail(e.to_string())),
    }
}

/// Replaces `meta_dir/file` with `text` atomically (the offline tools hold the data
/// directory's lock while they do).
pub fn write(meta_dir: &Path, file: &str, text: &str) -> Result<(), StoreError> {
    let path = meta_dir.join(file);
    crate::io::os::write_file_durably(&path, text.as_bytes()).map_err(|e| StoreError {
        path: path.clone(),
        why: e.to_string(),
    })
}

/// A stored file's numbered data lines (1-based, counting the header); `None` when the
/// header is not `header` (not this kind of file, or a newer format).
pub fn data_lines<'a>(
    text: &'a str,
    header: &str,
) -> Option<impl Iterator<Item = (usize, &'a str)>> {
    let mut lines = text.lines();
    if lines.next() != Some(header) {
        return None;
    }
    Some(
        lines
            .enumerate()
            .map(|(n, l)| (n + 2, l))
            .filter(|(_, l)| !l.is_empty()),
    )
}
