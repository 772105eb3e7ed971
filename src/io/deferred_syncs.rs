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
//! sync and `sync_dir` only counts. `sync_deferred` then makes it all durable in order: one
//! file-system sync (every temp file's contents), the renames, a second file-system sync
//! (the renames). A crash anywhere leaves each file whole, old or new, and leftover temp
//! files, which the next start removes: what an unclean start already recovers from.
//! A file written while deferring reads as its new contents through this storage (its temp
//! file) and as its old contents through any other, until `sync_deferred`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::storage::{
    forward_storage_to_inner, with_suffix, IoFuture, OpenMode, Storage, StorageFile,
};

/// A storage whose file replacements and directory syncs can be deferred to two
/// file-system syncs.
pub struct DeferredSyncs {
    inner: Rc<dyn Storage>,
    deferring: Cell<bool>,
    /// Directories whose replacements and syncs wait for `sync_deferred` while the rest of
    /// the storage syncs as it goes (a create's new partitions, beside partitions serving).
    deferred_dirs: RefCell<Vec<PathBuf>>,
    /// Directory syncs skipped while deferring.
    skipped: Cell<u64>,
    /// Replaced files (target to temp file), renamed at `sync_deferred`.
    renames: RefCell<HashMap<PathBuf, PathBuf>>,
}

impl DeferredSyncs {
    pub fn new(inner: Rc<dyn Storage>) -> Rc<Self> {
        Rc::new(DeferredSyncs {
            inner,
            deferring: Cell::new(false),
            deferred_dirs: RefCell::new(Vec::new()),
            skipped: Cell::new(0),
            renames: RefCell::new(HashMap::new()),
        })
    }

    /// From now on file replacements and directory syncs wait for `sync_deferred`.
    pub fn defer(&self) {
        self.deferring.set(true);
    }

    /// From now on file replacements and directory syncs under `dirs` wait for
    /// `sync_deferred`; everything else goes on as before.
    pub fn defer_under(&self, dirs: impl IntoIterator<Item = PathBuf>) {
        self.deferred_dirs.borrow_mut().extend(dirs);
    }

    /// Whether a replacement of, or a sync of, `path` waits for `sync_deferred`.
    fn defers(&self, path: &Path) -> bool {
        self.deferring.get()
            || self
                .deferred_dirs
                .borrow()
                .iter()
                .any(|d| path.starts_with(d))
    }

    /// Makes everything deferred durable (the file system holding `dir` is synced twice:
    /// before and after the renames) and syncs as it goes again. Returns how many files it
    /// replaced. On an error the files not yet renamed keep their old contents.
    pub async fn sync_deferred(&self, dir: &Path) -> std::io::Result<usize> {
        self.deferring.set(false);
        self.deferred_dirs.borrow_mut().clear();
        let renames = std::mem::take(&mut *self.renames.borrow_mut());
        let skipped = self.skipped.replace(0);
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
        self.inner.open(path, mode)
    }

    fn write_file_atomic(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        if !self.defers(path) {
            return self.inner.write_file_atomic(path, data);
        }
        Box::pin(self.replace_later(path.to_path_buf(), data))
    }

    fn sync_dir(&self, dir: &Path) -> IoFuture<'_, ()> {
        if !self.defers(dir) {
            return self.inner.sync_dir(dir);
        }
        self.skipped.set(self.skipped.get() + 1);
        Box::pin(std::future::ready(Ok(())))
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
}
