//! Syncs batched into two file-system syncs, for work that replaces small files in
//! thousands of directories at once: a shard closing every partition it owns rewrites index
//! files, a checkpoint and a producer snapshot in each partition's directory, and one
//! fdatasync and one directory fsync per file (a journal commit each) made a
//! 10,000-partition shutdown take longer than its deadline.
//!
//! A create defers only under its new partitions' directories (`defer_under`), the rest of
//! the shard going on as before; a shutdown defers everything (`defer`).
//!
//! While deferring, `write_file_atomic` writes the new contents to `<path>.tmp` without a
//! sync and `sync_dir` only counts; under `defer` (a shutdown) the fdatasync of a file
//! opened for writing here only counts too. `sync_deferred` then makes it all durable in order: one
//! file-system sync (every temp file's contents), the renames, a second file-system sync
//! (the renames). A crash anywhere leaves each file whole, old or new, and leftover temp
//! files, which the next start removes: what an unclean start already recovers from.
//! A file written while deferring reads as its new contents through this storage (its temp
//! file) and as its old contents through any other, until `sync_deferred`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;

use super::storage::{
    forward_storage_to_inner, with_suffix, IoBuf, IoFuture, OpenMode, Storage, StorageFile,
};

/// A storage whose file replacements, file syncs and directory syncs can be deferred to
/// two file-system syncs.
pub struct DeferredSyncs {
    inner: Rc<dyn Storage>,
    /// What waits now, shared with the writable files this storage opened.
    deferral: Rc<Deferral>,
    /// Replaced files (target to temp file), renamed at `sync_deferred`.
    renames: RefCell<HashMap<PathBuf, PathBuf>>,
}

/// Which syncs wait for `sync_deferred` now, and how many were skipped.
#[derive(Default)]
struct Deferral {
    everything: Cell<bool>,
    /// Directories whose replacements and syncs wait for `sync_deferred` while the rest of
    /// the storage syncs as it goes (a create's new partitions, beside partitions serving).
    dirs: RefCell<Vec<PathBuf>>,
    /// Directory and file syncs skipped while deferring.
    skipped: Cell<u64>,
}

impl Deferral {
    /// Whether a file's fdatasync waits: only while everything does (a shutdown, when
    /// nothing is served), never under `defer_under`, whose neighbours acknowledge
    /// produces on their syncs.
    fn skips_file_sync(&self) -> bool {
        let skips = self.everything.get();
        if skips {
            self.skipped.set(self.skipped.get() + 1);
        }
        skips
    }

    /// Whether a replacement of, or a sync of, `path` waits for `sync_deferred`.
    fn defers(&self, path: &Path) -> bool {
        self.everything.get() || self.dirs.borrow().iter().any(|d| path.starts_with(d))
    }

    /// Skips a sync of `path` if it waits; whether it did.
    fn skips(&self, path: &Path) -> bool {
        let skips = self.defers(path);
        if skips {
            self.skipped.set(self.skipped.get() + 1);
        }
        skips
    }
}

impl DeferredSyncs {
    pub fn new(inner: Rc<dyn Storage>) -> Rc<Self> {
        Rc::new(DeferredSyncs {
            inner,
            deferral: Rc::new(Deferral::default()),
            renames: RefCell::new(HashMap::new()),
        })
    }

    /// From now on file replacements and syncs wait for `sync_deferred`.
    pub fn defer(&self) {
        self.deferral.everything.set(true);
    }

    /// From now on file replacements and directory syncs under `dirs` wait for
    /// `sync_deferred`; everything else (file syncs too) goes on as before.
    pub fn defer_under(&self, dirs: impl IntoIterator<Item = PathBuf>) {
        self.deferral.dirs.borrow_mut().extend(dirs);
    }

    /// Makes everything deferred durable (the file system holding `dir` is synced twice:
    /// before and after the renames) and syncs as it goes again. Returns how many files it
    /// replaced. On an error the files not yet renamed keep their old contents.
    pub async fn sync_deferred(&self, dir: &Path) -> std::io::Result<usize> {
        self.deferral.everything.set(false);
        self.deferral.dirs.borrow_mut().clear();
        let renames = std::mem::take(&mut *self.renames.borrow_mut());
        let skipped = self.deferral.skipped.replace(0);
        if renames.is_empty() && skipped == 0 {
            return Ok(0);
        }
        self.inner.sync_file_system(dir).await?;
        let replaced = renames.len();
        let renames = renames.into_iter().map(|(path, tmp)| (tmp, path)).collect();
        self.inner.rename_all(renames).await?;
        self.inner.sync_file_system(dir).await?;
        assert!(
            self.renames.borrow().is_empty(),
            "nothing deferred after the sync"
        );
        Ok(replaced)
    }

    /// Writes `data` to `path`'s temp file, to be renamed over `path` at `sync_deferred`.
    async fn replace_later(&self, path: PathBuf, data: Vec<u8>) -> std::io::Result<()> {
        let tmp = with_suffix(&path, ".tmp");
        if self.inner.exists(&tmp) {
            self.inner.remove(&tmp).await?;
        }
        self.inner.create_file_with(&tmp, data, false).await?;
        self.renames.borrow_mut().insert(path, tmp);
        Ok(())
    }
}

impl Storage for DeferredSyncs {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn StorageFile>> {
        if mode == OpenMode::ReadOnly {
            return self.inner.open(path, mode);
        }
        let opened = self.inner.open(path, mode);
        Box::pin(async move {
            let inner = opened.await?;
            let deferral = self.deferral.clone();
            Ok(Rc::new(DeferredFile { inner, deferral }) as Rc<dyn StorageFile>)
        })
    }

    fn write_file_atomic(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        if !self.deferral.defers(path) {
            return self.inner.write_file_atomic(path, data);
        }
        Box::pin(self.replace_later(path.to_path_buf(), data))
    }

    fn sync_dir(&self, dir: &Path) -> IoFuture<'_, ()> {
        if self.deferral.skips(dir) {
            return Box::pin(std::future::ready(Ok(())));
        }
        self.inner.sync_dir(dir)
    }

    /// A file replaced while deferring reads as its new contents to whoever replaced it
    /// through this storage (its temp file); the disk keeps the old until the sync.
    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>> {
        match self.renames.borrow().get(path) {
            Some(tmp) => self.inner.read_file(tmp),
            None => self.inner.read_file(path),
        }
    }

    forward_storage_to_inner!();
}

/// A file opened for writing through `DeferredSyncs`: while everything is deferred its
/// fdatasync waits for `sync_deferred` too, whose first file-system sync writes its data
/// (a shutdown trims and syncs every written partition's active segment: one journal
/// commit each otherwise).
struct DeferredFile {
    inner: Rc<dyn StorageFile>,
    deferral: Rc<Deferral>,
}

impl StorageFile for DeferredFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }

    fn alloc_buffer(&self, size: usize) -> IoBuf {
        self.inner.alloc_buffer(size)
    }

    fn write_at(&self, buf: IoBuf, pos: u64) -> IoFuture<'_, usize> {
        self.inner.write_at(buf, pos)
    }

    fn start_writes(&self) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        self.inner.start_writes()
    }

    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        self.inner.read_at(pos, len)
    }

    fn read_extents(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<bytes::Bytes>> {
        self.inner.read_extents(pos, len)
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        if self.deferral.skips_file_sync() {
            return Box::pin(std::future::ready(Ok(())));
        }
        self.inner.fdatasync()
    }

    fn truncate(&self, size: u64) -> IoFuture<'_, ()> {
        self.inner.truncate(size)
    }

    fn allocate(&self, size: u64) -> IoFuture<'_, ()> {
        self.inner.allocate(size)
    }

    fn size(&self) -> IoFuture<'_, u64> {
        self.inner.size()
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        match Rc::try_unwrap(self) {
            Ok(file) => file.inner.close(),
            // Another handle still uses it; closed with the last one.
            Err(_) => Box::pin(std::future::ready(Ok(()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::sim::{CrashKind, SimStorage};
    use std::path::PathBuf;

    #[test]
    fn only_replacements_under_the_deferred_directories_wait() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                for d in ["/d/new-1", "/d/new-10"] {
                    sim.create_dir_all(d.as_ref()).unwrap();
                }
                let storage = DeferredSyncs::new(Rc::new(sim.clone()));
                storage.defer_under([PathBuf::from("/d/new-1")]);
                let (waits, goes_on) = ("/d/new-1/f".as_ref(), "/d/new-10/f".as_ref());
                storage
                    .write_file_atomic(waits, b"a".to_vec())
                    .await
                    .unwrap();
                storage
                    .write_file_atomic(goes_on, b"b".to_vec())
                    .await
                    .unwrap();
                assert_eq!(storage.read_file(waits).await.unwrap(), b"a");
                let cut = sim.fork();
                cut.crash(CrashKind::PowerLoss);
                assert!(!cut.exists(waits), "deferred until the sync");
                assert_eq!(cut.read_file(goes_on).await.unwrap(), b"b");
                assert_eq!(storage.sync_deferred("/d".as_ref()).await.unwrap(), 1);
                sim.crash(CrashKind::PowerLoss);
                assert_eq!(sim.read_file(waits).await.unwrap(), b"a");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn deferred_replacements_are_whole_old_or_new_across_a_power_cut() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                let files: Vec<PathBuf> = (0..5).map(|i| format!("/d/{i}").into()).collect();
                for f in &files[..3] {
                    sim.write_file_atomic(f, b"old".to_vec()).await.unwrap();
                }
                let storage = DeferredSyncs::new(Rc::new(sim.clone()));
                storage.defer();
                for f in &files {
                    storage.write_file_atomic(f, b"new".to_vec()).await.unwrap();
                }
                // The same file twice: the last contents win, renamed once.
                storage
                    .write_file_atomic(&files[0], b"newer".to_vec())
                    .await
                    .unwrap();
                // Until the sync, other readers and a power cut see the old files; this
                // storage reads its own replacements.
                assert_eq!(sim.read_file(&files[1]).await.unwrap(), b"old");
                assert_eq!(storage.read_file(&files[1]).await.unwrap(), b"new");
                assert_eq!(storage.read_file(&files[0]).await.unwrap(), b"newer");
                let cut = sim.fork();
                cut.crash(CrashKind::PowerLoss);
                for f in &files[..3] {
                    assert_eq!(cut.read_file(f).await.unwrap(), b"old");
                }
                assert!(!cut.exists(&files[4]));
                assert_eq!(storage.sync_deferred("/d".as_ref()).await.unwrap(), 5);
                sim.crash(CrashKind::PowerLoss);
                assert_eq!(sim.read_file(&files[0]).await.unwrap(), b"newer");
                for f in &files[1..] {
                    assert_eq!(sim.read_file(f).await.unwrap(), b"new");
                    assert!(!sim.exists(&with_suffix(f, ".tmp")));
                }
                // Replacements are immediate again.
                storage
                    .write_file_atomic(&files[0], b"x".to_vec())
                    .await
                    .unwrap();
                sim.crash(CrashKind::PowerLoss);
                assert_eq!(sim.read_file(&files[0]).await.unwrap(), b"x");
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_file_sync_while_deferring_is_made_durable_by_the_deferred_sync() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                let storage = DeferredSyncs::new(Rc::new(sim.clone()));
                let path: &Path = "/d/00.log".as_ref();
                let file = storage.open(path, OpenMode::CreateNew).await.unwrap();
                let mut buf = file.alloc_buffer(4096);
                buf.as_bytes_mut().fill(7);
                file.write_at(buf, 0).await.unwrap();
                storage.defer();
                file.fdatasync().await.unwrap();
                let cut = sim.fork();
                cut.crash(CrashKind::PowerLoss);
                assert!(
                    cut.read_file(path).await.unwrap_or_default().is_empty(),
                    "the sync waits for sync_deferred"
                );
                storage.sync_deferred("/d".as_ref()).await.unwrap();
                let cut = sim.fork();
                cut.crash(CrashKind::PowerLoss);
                assert_eq!(cut.read_file(path).await.unwrap(), vec![7; 4096]);
                // Syncs go to the device again.
                let mut buf = file.alloc_buffer(4096);
                buf.as_bytes_mut().fill(8);
                file.write_at(buf, 4096).await.unwrap();
                file.fdatasync().await.unwrap();
                sim.crash(CrashKind::PowerLoss);
                assert_eq!(sim.read_file(path).await.unwrap().len(), 8192);
                file.close().await.unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
