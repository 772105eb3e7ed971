//! Production storage: glommio `DmaFile` (O_DIRECT through io_uring) for data and index
//! files; std::fs for directory operations (metadata, not data path).

use std::cell::Cell;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;

use bytes::Bytes;

use glommio::io::{DmaFile, OpenOptions};

use super::os::gerr;
use super::probe::ensure_iopoll_probe_workaround;
use super::storage::{IoBuf, IoFuture, OpenMode, Storage, StorageFile};
use super::MAX_IO;

/// Direct-I/O storage. `probe_dir` is where the IOPOLL work-around file lives (the data
/// directory); it is primed before the first open on each thread.
pub struct DmaStorage {
    probe_dir: PathBuf,
    reads: Rc<Cell<u64>>,
}

impl DmaStorage {
    pub fn new(probe_dir: impl Into<PathBuf>) -> Rc<Self> {
        Rc::new(DmaStorage {
            probe_dir: probe_dir.into(),
            reads: Rc::new(Cell::new(0)),
        })
    }
}

struct DmaStorageFile {
    path: PathBuf,
    file: DmaFile,
    reads: Rc<Cell<u64>>,
}

fn check_parent_exists(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("directory {} does not exist", dir.display()),
        )),
        _ => Ok(()),
    }
}

impl StorageFile for DmaStorageFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn alloc_buffer(&self, size: usize) -> IoBuf {
        IoBuf::Dma(self.file.alloc_dma_buffer(size))
    }

    fn write_at(&self, buf: IoBuf, pos: u64) -> IoFuture<'_, usize> {
        Box::pin(async move {
            match buf {
                IoBuf::Dma(b) => self.file.write_at(b, pos).await.map_err(gerr),
                IoBuf::Heap(v) => {
                    let mut b = self.file.alloc_dma_buffer(v.len());
                    b.as_bytes_mut().copy_from_slice(&v);
                    self.file.write_at(b, pos).await.map_err(gerr)
                }
            }
        })
    }

    /// glommio hands queued storage I/O to the kernel only between runs of its task
    /// queues, so a spawned write would wait until the caller (say, an appender copying
    /// the next 1 MiB chunk) and every other runnable task are done: the caller waits for
    /// the next turn of the executor loop, which submits the queue.
    fn start_writes(&self) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(super::awake::next_turn())
    }

    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(len);
            self.read_chunks(pos, len, |chunk| out.extend_from_slice(chunk))
                .await?;
            Ok(out)
        })
    }

    fn read_extents(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<Bytes>> {
        Box::pin(async move {
            let mut extents = Vec::with_capacity(len.div_ceil(MAX_IO));
            self.read_chunks(pos, len, |chunk| {
                if !chunk.is_empty() {
                    extents.push(Bytes::copy_from_slice(chunk));
                }
            })
            .await?;
            Ok(extents)
        })
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(async move { self.file.fdatasync().await.map_err(gerr) })
    }

    fn truncate(&self, size: u64) -> IoFuture<'_, ()> {
        Box::pin(async move { self.file.truncate(size).await.map_err(gerr) })
    }

    fn allocate(&self, size: u64) -> IoFuture<'_, ()> {
        Box::pin(async move { self.file.pre_allocate(size, false).await.map_err(gerr) })
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(async move { self.file.file_size().await.map_err(gerr) })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move {
            match Rc::try_unwrap(self) {
                Ok(f) => f.file.close().await.map_err(gerr),
                Err(_) => Ok(()), // another handle still uses it; dropped with the last one
            }
        })
    }
}

impl DmaStorageFile {
    /// Reads `[pos, pos + len)` in device reads of at most `MAX_IO`, all submitted at once
    /// (a large read takes what the device's queue allows, not one read after another),
    /// handing each DMA buffer to `take` in file order (fewer bytes at end of file). `pos`
    /// and `MAX_IO` keep every chunk page-aligned when `pos` is.
    async fn read_chunks(
        &self,
        pos: u64,
        len: usize,
        mut take: impl FnMut(&[u8]),
    ) -> std::io::Result<()> {
        let chunks: Vec<(u64, usize)> = (0..len)
            .step_by(MAX_IO)
            .map(|done| (pos + done as u64, (len - done).min(MAX_IO)))
            .collect();
        self.reads.set(self.reads.get() + chunks.len() as u64);
        let reads = chunks.iter().map(|&(at, want)| {
            crate::metrics::timed(
                crate::metrics::Stage::DeviceRead,
                self.file.read_at(at, want),
            )
        });
        let results = futures_util::future::join_all(reads).await;
        for (read, (_, want)) in results.into_iter().zip(chunks) {
            let chunk = read.map_err(gerr)?;
            take(&chunk);
            if chunk.len() < want {
                break; // end of file
            }
        }
        Ok(())
    }
}

impl DmaStorage {
    async fn probe(&self) -> std::io::Result<()> {
        ensure_iopoll_probe_workaround(&self.probe_dir)
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

impl Storage for DmaStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn StorageFile>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            self.probe().await?;
            // glommio's DmaFile::open_at unwraps a statfs of the path: an open in a directory
            // that was just removed would panic the shard instead of failing.
            check_parent_exists(&path)?;
            let mut o = OpenOptions::new();
            match mode {
                OpenMode::CreateNew => o.read(true).write(true).create_new(true),
                OpenMode::ReadWrite => o.read(true).write(true),
                OpenMode::ReadOnly => o.read(true),
            };
            let file = o.dma_open(&path).await.map_err(gerr)?;
            Ok(Rc::new(DmaStorageFile {
                path,
                file,
                reads: self.reads.clone(),
            }) as Rc<dyn StorageFile>)
        })
    }

    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let f = self.open(&path, OpenMode::ReadOnly).await?;
            let size = f.size().await?;
            let data = f.read_at(0, size as usize).await?;
            f.close().await?;
            Ok(data)
        })
    }

    /// A small file through the page cache (io_uring open, write and close): no block
    /// padding, so no truncate, which would wait on the blocking thread behind renames.
    fn create_file_with(&self, path: &Path, data: Vec<u8>, sync: bool) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        Box::pin(async move { write_buffered(&path, data, BufferedWrite::New { sync }).await })
    }

    /// Through the page cache like `create_file_with`; cut short only when the file was
    /// longer (a truncate waits on the blocking thread, and index files only grow).
    fn overwrite_file(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        Box::pin(async move { write_buffered(&path, data, BufferedWrite::Overwrite).await })
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn list_dirs(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(out)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn remove(&self, path: &Path) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        // On glommio's blocking thread: an unlink may wait for a journal commit.
        Box::pin(async move { glommio::io::remove(&path).await.map_err(Into::into) })
    }

    fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()> {
        let (from, to) = (from.to_path_buf(), to.to_path_buf());
        Box::pin(async move { glommio::io::rename(&from, &to).await.map_err(Into::into) })
    }

    /// All in one trip to glommio's blocking thread, not one trip per rename.
    fn rename_all(&self, renames: Vec<(PathBuf, PathBuf)>) -> IoFuture<'_, ()> {
        let rename = move || {
            renames
                .iter()
                .try_for_each(|(from, to)| std::fs::rename(from, to))
        };
        Box::pin(glommio::executor().spawn_blocking(rename))
    }

    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> IoFuture<'_, ()> {
        let dir = dir.to_path_buf();
        // Through io_uring: a blocking fsync of a directory waits for a journal commit and
        // would stall every request of the shard meanwhile.
        Box::pin(async move {
            // glommio opens relative to no directory (dirfd -1): the path must be absolute.
            let dir = std::path::absolute(&dir)?;
            let d = glommio::io::Directory::open(&dir).await.map_err(gerr)?;
            let synced = d.sync().await.map_err(gerr);
            d.close().await.map_err(gerr)?;
            synced
        })
    }

    fn sync_file_system(&self, dir: &Path) -> IoFuture<'_, ()> {
        let dir = dir.to_path_buf();
        // On glommio's blocking thread: syncfs waits for every dirty inode and the journal.
        Box::pin(async move {
            let syncfs = move || -> std::io::Result<()> {
                use std::os::fd::AsRawFd;
                let d = std::fs::File::open(&dir)?;
                // SAFETY: a valid descriptor, kept open for the call.
                match unsafe { libc::syncfs(d.as_raw_fd()) } {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            };
            glommio::executor().spawn_blocking(syncfs).await
        })
    }

    fn device_reads(&self) -> u64 {
        self.reads.get()
    }

    fn drop_os_cache(&self, path: &Path) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let f = std::fs::File::open(path)?;
        // SAFETY: a valid descriptor; DONTNEED only drops clean cached pages.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(())
    }
}

/// How `write_buffered` treats the file: a new one (fdatasync'd when `sync`), or an existing
/// one (created if missing) whose contents are replaced without a sync.
enum BufferedWrite {
    New { sync: bool },
    Overwrite,
}

/// `data` as the whole contents of `path`, through the page cache (io_uring open, write,
/// close); the file is closed whether or not the write worked.
async fn write_buffered(path: &Path, data: Vec<u8>, how: BufferedWrite) -> std::io::Result<()> {
    check_parent_exists(path)?;
    let mut options = glommio::io::OpenOptions::new();
    match how {
        BufferedWrite::New { .. } => options.write(true).create_new(true),
        BufferedWrite::Overwrite => options.write(true).create(true),
    };
    let f = options.buffered_open(path).await.map_err(gerr)?;
    let written = async {
        let len = data.len() as u64;
        let n = f.write_at(data, 0).await.map_err(gerr)? as u64;
        if n != len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WriteZero,
                format!("short write: {n} of {len} bytes"),
            ));
        }
        match how {
            BufferedWrite::New { sync: true } => f.fdatasync().await.map_err(gerr),
            BufferedWrite::New { sync: false } => Ok(()),
            BufferedWrite::Overwrite if f.file_size().await.map_err(gerr)? > len => {
                f.truncate(len).await.map_err(gerr)
            }
            BufferedWrite::Overwrite => Ok(()),
        }
    }
    .await;
    let closed = f.close().await.map_err(gerr);
    written.and(closed)
}
