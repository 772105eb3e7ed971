//! The server-owned security files in `__shardlog_meta` (SCRAM credentials, ACLs): text,
//! a header line naming the format, replaced atomically (write, fsync, rename), so a change
//! is whole or absent after a kill -9. Read and written here by the offline tools and at
//! start (blocking); the running server replaces them through its storage (`shard/`).
//! They hold secrets (SCRAM keys) and the access policy: only their owner may read them
//! (0600, in a 0700 directory); a file readable by others is refused, not served.

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
    if let Some(why) = readable_by_others(&path) {
        return Err(fail(why));
    }
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
    let fail = |e: std::io::Error| StoreError {
        path: path.clone(),
        why: e.to_string(),
    };
    make_private_dir(meta_dir).map_err(fail)?;
    crate::io::os::write_file_durably(&path, text.as_bytes()).map_err(fail)?;
    make_private(&path).map_err(fail)
}

/// Only the owner may enter the directory of the security files (a file being replaced is
/// briefly a new file before its mode is set).
pub fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    crate::io::os::create_dir_all(dir)?;
    crate::io::os::set_mode(dir, 0o700)
}

/// Only the owner may read or write the file.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    crate::io::os::set_mode(path, 0o600)
}

/// Why a security file may not be used: others may read or change it (no file: none).
fn readable_by_others(path: &Path) -> Option<String> {
    let mode = crate::io::os::mode_of(path).ok()? & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "mode {mode:04o} lets other users read or change it; it holds secrets and the access policy: run `chmod 600 {}`",
            path.display()
        )
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
