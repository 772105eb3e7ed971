//! Whole-file reads and writes through direct I/O, for index files (a few MiB at most).

use std::path::Path;

use glommio::io::{DmaFile, OpenOptions};

use super::{align_up, MAX_IO};
use crate::error::{Error, Result};

/// Reads a whole file (direct I/O, in reads of at most 1 MiB).
pub async fn read_whole_file(path: &Path) -> Result<Vec<u8>> {
    let file = DmaFile::open(path)
        .await
        .map_err(|e| Error::glommio("open", path, e))?;
    let size = file
        .file_size()
        .await
        .map_err(|e| Error::glommio("stat", path, e))?;
    let mut out = Vec::with_capacity(size as usize);
    while (out.len() as u64) < size {
        let want = ((size - out.len() as u64) as usize).min(MAX_IO);
        let chunk = file
            .read_at(out.len() as u64, want)
            .await
            .map_err(|e| Error::glommio("read", path, e))?;
        if chunk.is_empty() {
            break;
        }
        out.extend_from_slice(&chunk);
    }
    file.close()
        .await
        .map_err(|e| Error::glommio("close", path, e))?;
    Ok(out)
}

/// Replaces a file's contents with `data` and makes it durable: direct writes padded to
/// the block size, then truncate to the exact length and fdatasync.
pub async fn write_whole_file(path: &Path, data: &[u8]) -> Result<()> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .dma_open(path)
        .await
        .map_err(|e| Error::glommio("create", path, e))?;
    let mut pos = 0usize;
    while pos < data.len() {
        let n = (data.len() - pos).min(MAX_IO);
        let padded = align_up(n as u64) as usize;
        let mut buf = file.alloc_dma_buffer(padded);
        let bytes = buf.as_bytes_mut();
        bytes[..n].copy_from_slice(&data[pos..pos + n]);
        bytes[n..].fill(0);
        let written = file
            .write_at(buf, pos as u64)
            .await
            .map_err(|e| Error::glommio("write", path, e))?;
        if written < padded {
            return Err(Error::io(
                "write",
                path,
                std::io::Error::new(std::io::ErrorKind::WriteZero, "short write"),
            ));
        }
        pos += n;
    }
    file.truncate(data.len() as u64)
        .await
        .map_err(|e| Error::glommio("truncate", path, e))?;
    file.fdatasync()
        .await
        .map_err(|e| Error::glommio("fdatasync", path, e))?;
    file.close()
        .await
        .map_err(|e| Error::glommio("close", path, e))?;
    Ok(())
}
