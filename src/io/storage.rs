//! The storage seam: everything the engine does to files goes through these two traits.
//! Production uses [`DmaStorage`](super::DmaStorage) (glommio direct I/O); tests use
//! [`SimStorage`](super::sim::SimStorage), which keeps volatile and durable bytes apart and
//! can crash, tear writes and inject EIO/ENOSPC on demand.
//!
//! Futures are boxed so the traits are object-safe (`Rc<dyn Storage>`); one allocation per
//! I/O is noise next to the I/O itself.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;

use glommio::io::DmaBuffer;

pub type IoFuture<'a, T> = Pin<Box<dyn Future<Output = std::io::Result<T>> + 'a>>;

/// A write buffer: aligned DMA memory for real files, plain memory for simulated ones.
#[non_exhaustive]
pub enum IoBuf {
    Dma(DmaBuffer),
    Heap(Vec<u8>),
}

impl IoBuf {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            IoBuf::Dma(b) => b.as_bytes(),
            IoBuf::Heap(v) => v,
        }
    }

    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        match self {
            IoBuf::Dma(b) => b.as_bytes_mut(),
            IoBuf::Heap(v) => v,
        }
    }

    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shortens the buffer to its first `len` bytes (a write then writes only those).
    pub fn truncate(&mut self, len: usize) {
        assert!(len <= self.len());
        match self {
            IoBuf::Dma(b) => b.trim_to_size(len),
            IoBuf::Heap(v) => v.truncate(len),
        }
    }
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenMode {
    /// Create a new file; fail if it exists.
    CreateNew,
    /// Open an existing file for reading and writing.
    ReadWrite,
    /// Open an existing file read-only.
    ReadOnly,
}

/// One open file, addressed by position (never appended to by the OS).
pub trait StorageFile {
    fn path(&self) -> &Path;
    /// A zeroed-or-not buffer suitable for `write_at` (callers fill every byte they write).
    fn alloc_buffer(&self, size: usize) -> IoBuf;
    /// Writes the whole buffer at `pos`; returns bytes written.
    fn write_at(&self, buf: IoBuf, pos: u64) -> IoFuture<'_, usize>;
    /// Lets writes started so far (spawned `write_at`s) reach the device before the caller
    /// goes on with other work; storage whose writes start on their own does nothing.
    fn start_writes(&self) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(std::future::ready(()))
    }
    /// Reads up to `len` bytes at `pos` (fewer at end of file).
    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>>;
    /// Reads up to `len` bytes at page-aligned `pos` as one `Bytes` per device read, each
    /// whole 4 KiB pages but the last, shorter at end of file: the page cache's extents,
    /// each its own allocation so the cache's byte budget counts what it holds. Production
    /// copies each read straight out of its DMA buffer (the one copy between device and
    /// socket).
    fn read_extents(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<bytes::Bytes>> {
        Box::pin(async move {
            let data = self.read_at(pos, len).await?;
            Ok(match data.is_empty() {
                true => Vec::new(),
                false => vec![bytes::Bytes::from(data)],
            })
        })
    }
    fn fdatasync(&self) -> IoFuture<'_, ()>;
    fn truncate(&self, size: u64) -> IoFuture<'_, ()>;
    /// Grows the file to `size` bytes (never shrinks it) with blocks allocated now, which
    /// read as zeros (`fallocate` without KEEP_SIZE): a later direct write below `size`
    /// overwrites allocated blocks, which the file system completes in the submitting
    /// thread instead of handing it to an io_uring worker.
    fn allocate(&self, size: u64) -> IoFuture<'_, ()>;
    fn size(&self) -> IoFuture<'_, u64>;
    fn close(self: Rc<Self>) -> IoFuture<'static, ()>;
}

/// File-system operations the engine needs besides open files.
pub trait Storage {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn StorageFile>>;
    /// Reads a whole (small) file.
    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>>;
    /// Replaces a file's contents durably: write `<path>.tmp` and fdatasync it, rename it
    /// over the target, fsync the directory. Composed of the other operations, so every
    /// step is a fault point of the simulated disk.
    fn write_file_atomic(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let tmp = with_suffix(&path, ".tmp");
            if self.exists(&tmp) {
                self.remove(&tmp).await?;
            }
            self.create_file_with(&tmp, data, true).await?;
            self.rename(&tmp, &path).await?;
            match path.parent() {
                Some(dir) => self.sync_dir(dir).await,
                None => Ok(()),
            }
        })
    }
    /// Creates a small file (failing if it exists) holding `data`, fdatasync'd when `sync`.
    /// By default through `open` with block-padded direct writes and a truncate.
    fn create_file_with(&self, path: &Path, data: Vec<u8>, sync: bool) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        Box::pin(async move { write_new_file_direct(self, &path, &data, sync).await })
    }
    /// Writes `data` as a file's whole contents in place (creating it if missing), without
    /// a sync: a crash can leave it old or torn. Only for files that are rebuilt from
    /// others when they disagree (a live segment's index files), so that keeping them
    /// current costs neither a new inode nor a journal commit.
    fn overwrite_file(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        Box::pin(async move { overwrite_file_direct(self, &path, &data).await })
    }
    /// Names of the entries of a directory.
    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>>;
    /// Names of the subdirectories of a directory.
    fn list_dirs(&self, dir: &Path) -> std::io::Result<Vec<String>>;
    fn exists(&self, path: &Path) -> bool;
    /// Removes a file. Off the reactor thread: an unlink can wait on the journal.
    fn remove(&self, path: &Path) -> IoFuture<'_, ()>;
    /// Renames a file or a directory (with everything in it). Off the reactor thread.
    fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()>;
    /// Renames many files, in order, stopping at the first failure. By default one by one.
    fn rename_all(&self, renames: Vec<(PathBuf, PathBuf)>) -> IoFuture<'_, ()> {
        Box::pin(async move {
            for (from, to) in &renames {
                self.rename(from, to).await?;
            }
            Ok(())
        })
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()>;
    fn sync_dir(&self, dir: &Path) -> IoFuture<'_, ()>;
    /// Makes every change on the file system holding `dir` durable, file contents and
    /// directories (syncfs). The simulated disk's directory sync already commits every
    /// directory change, so by default this is `sync_dir`.
    fn sync_file_system(&self, dir: &Path) -> IoFuture<'_, ()> {
        self.sync_dir(dir)
    }
    /// Reads submitted to the device so far (each read of at most 1 MiB counts once).
    fn device_reads(&self) -> u64 {
        0
    }
    /// Asks the OS to drop its cached pages of a file (posix_fadvise DONTNEED).
    fn drop_os_cache(&self, _path: &Path) -> std::io::Result<()> {
        Ok(())
    }
}

/// The `Storage` methods a wrapper storage passes to its `inner` unchanged: everything but
/// `open`, `read_file`, `write_file_atomic` and `sync_dir`, which each wrapper writes itself
/// (so one that changes them cannot forget to).
macro_rules! forward_storage_to_inner {
    () => {
        fn create_file_with(&self, path: &Path, data: Vec<u8>, sync: bool) -> IoFuture<'_, ()> {
            self.inner.create_file_with(path, data, sync)
        }

        fn overwrite_file(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
            self.inner.overwrite_file(path, data)
        }

        fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
            self.inner.list(dir)
        }

        fn list_dirs(&self, dir: &Path) -> std::io::Result<Vec<String>> {
            self.inner.list_dirs(dir)
        }

        fn exists(&self, path: &Path) -> bool {
            self.inner.exists(path)
        }

        fn remove(&self, path: &Path) -> IoFuture<'_, ()> {
            self.inner.remove(path)
        }

        fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()> {
            self.inner.rename(from, to)
        }

        fn rename_all(&self, renames: Vec<(PathBuf, PathBuf)>) -> IoFuture<'_, ()> {
            self.inner.rename_all(renames)
        }

        fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
            self.inner.create_dir_all(dir)
        }

        fn sync_file_system(&self, dir: &Path) -> IoFuture<'_, ()> {
            self.inner.sync_file_system(dir)
        }

        fn device_reads(&self) -> u64 {
            self.inner.device_reads()
        }

        fn drop_os_cache(&self, path: &Path) -> std::io::Result<()> {
            self.inner.drop_os_cache(path)
        }
    };
}
pub(crate) use forward_storage_to_inner;

/// Writes a new file, not synced: for caches whose contents are checked when read.
pub async fn write_new_file<S: Storage + ?Sized>(
    storage: &S,
    path: &Path,
    data: &[u8],
) -> std::io::Result<()> {
    storage.create_file_with(path, data.to_vec(), false).await
}

/// Writes a new file and fdatasyncs it, without the temp file, rename and directory fsync
/// of `write_file_atomic`: for files that are themselves temporary names (a cleaner's
/// `.cleaned` output), made visible later by a rename the caller makes durable.
pub async fn write_new_file_synced<S: Storage + ?Sized>(
    storage: &S,
    path: &Path,
    data: &[u8],
) -> std::io::Result<()> {
    storage.create_file_with(path, data.to_vec(), true).await
}

/// `create_file_with` through `open`: direct writes of whole blocks, then a truncate to
/// the exact length.
async fn write_new_file_direct<S: Storage + ?Sized>(
    storage: &S,
    path: &Path,
    data: &[u8],
    sync: bool,
) -> std::io::Result<()> {
    let file = storage.open(path, OpenMode::CreateNew).await?;
    write_whole_file(file, data, sync).await
}

async fn overwrite_file_direct<S: Storage + ?Sized>(
    storage: &S,
    path: &Path,
    data: &[u8],
) -> std::io::Result<()> {
    let mode = match storage.exists(path) {
        true => OpenMode::ReadWrite,
        false => OpenMode::CreateNew,
    };
    let file = storage.open(path, mode).await?;
    write_whole_file(file, data, false).await
}

/// `data` from byte 0 in block-padded direct writes, the file cut to its length, then
/// closed (fdatasync'd first when `sync`).
async fn write_whole_file(
    file: Rc<dyn StorageFile>,
    data: &[u8],
    sync: bool,
) -> std::io::Result<()> {
    let written = async {
        for (i, piece) in data.chunks(super::MAX_IO).enumerate() {
            let padded = super::align_up(piece.len() as u64) as usize;
            let mut buf = file.alloc_buffer(padded);
            buf.as_bytes_mut()[..piece.len()].copy_from_slice(piece);
            buf.as_bytes_mut()[piece.len()..].fill(0);
            file.write_at(buf, (i * super::MAX_IO) as u64).await?;
        }
        file.truncate(data.len() as u64).await?;
        match sync {
            true => file.fdatasync().await,
            false => Ok(()),
        }
    }
    .await;
    let closed = file.close().await;
    written.and(closed)
}

/// `path` with `suffix` appended to its file name.
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}
