//! File descriptors, bounded per shard. `PooledStorage` wraps any storage: every file it
//! opens is a handle whose descriptor lives in the shard's pool, an LRU of at most
//! `capacity` open files. When the pool is full the least recently used descriptor is
//! closed; its handle reopens the file on its next use (a created file reopens read-write).
//! So 10,000 sealed segments, or the active segments of 10,000 idle partitions, cost at
//! most `capacity` descriptors, and a client that forces a roll on every produce cannot
//! exhaust the process's descriptors.
//!
//! Closing a descriptor loses nothing: writes are direct (each completes on the device or
//! fails itself), and an fdatasync through any descriptor of a file syncs the file.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lru::LruCache;

use super::cache::next_file_id;
use super::storage::{forward_storage_to_inner, IoBuf, IoFuture, OpenMode, Storage, StorageFile};

/// Open read-only descriptors of one shard, least recently used first out.
struct FdPool {
    open: LruCache<u64, Rc<dyn StorageFile>>,
    capacity: usize,
    reopens: u64,
}

type SharedPool = Rc<RefCell<FdPool>>;

impl FdPool {
    /// Keeps `file` open as `id`, closing the least recently used beyond the capacity.
    fn insert(&mut self, id: u64, file: Rc<dyn StorageFile>) {
        self.open.put(id, file);
        while self.open.len() > self.capacity {
            let Some((_, evicted)) = self.open.pop_lru() else {
                break;
            };
            // A read in flight keeps its own reference; the descriptor closes after it.
            crate::tasks::spawn(async move {
                let _ = evicted.close().await;
            })
            .detach();
        }
        assert!(self.open.len() <= self.capacity);
    }
}

/// A storage whose read-only files share a bounded pool of descriptors.
pub struct PooledStorage {
    inner: Rc<dyn Storage>,
    pool: SharedPool,
}

impl PooledStorage {
    pub fn new(inner: Rc<dyn Storage>, capacity: usize) -> Rc<Self> {
        assert!(capacity > 0, "a pool needs room for one file");
        Rc::new(PooledStorage {
            inner,
            pool: Rc::new(RefCell::new(FdPool {
                open: LruCache::unbounded(),
                capacity,
                reopens: 0,
            })),
        })
    }

    /// Descriptors open now, and how often a closed one was reopened.
    pub fn open_files(&self) -> (usize, u64) {
        let p = self.pool.borrow();
        (p.open.len(), p.reopens)
    }
}

/// A file whose descriptor may be closed by the pool between uses.
struct PooledFile {
    id: u64,
    path: PathBuf,
    /// How a closed descriptor is reopened.
    reopen: OpenMode,
    inner: Rc<dyn Storage>,
    pool: SharedPool,
}

impl PooledFile {
    /// The open descriptor, reopening the file if the pool closed it.
    async fn handle(&self) -> std::io::Result<Rc<dyn StorageFile>> {
        if let Some(f) = self.pool.borrow_mut().open.get(&self.id) {
            return Ok(f.clone());
        }
        let f = self.inner.open(&self.path, self.reopen).await?;
        let mut pool = self.pool.borrow_mut();
        pool.reopens += 1;
        pool.insert(self.id, f.clone());
        Ok(f)
    }
}

impl StorageFile for PooledFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn alloc_buffer(&self, size: usize) -> IoBuf {
        // The open descriptor's kind of buffer (aligned memory for direct writes); a file
        // whose descriptor was closed writes plain memory, copied once when written.
        match self.pool.borrow().open.peek(&self.id) {
            Some(f) => f.alloc_buffer(size),
            None => IoBuf::Heap(vec![0; size]),
        }
    }

    fn write_at(&self, buf: IoBuf, pos: u64) -> IoFuture<'_, usize> {
        Box::pin(async move { self.handle().await?.write_at(buf, pos).await })
    }

    fn start_writes(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>> {
        // Writes in flight hold their descriptor; the pool's, if open, starts them.
        let open = self.pool.borrow().open.peek(&self.id).cloned();
        Box::pin(async move {
            if let Some(f) = open {
                f.start_writes().await;
            }
        })
    }

    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        Box::pin(async move { self.handle().await?.read_at(pos, len).await })
    }

    fn read_extents(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<bytes::Bytes>> {
        Box::pin(async move { self.handle().await?.read_extents(pos, len).await })
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(async move { self.handle().await?.fdatasync().await })
    }

    fn truncate(&self, size: u64) -> IoFuture<'_, ()> {
        Box::pin(async move { self.handle().await?.truncate(size).await })
    }

    fn allocate(&self, size: u64) -> IoFuture<'_, ()> {
        Box::pin(async move { self.handle().await?.allocate(size).await })
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(async move { self.handle().await?.size().await })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move {
            let open = self.pool.borrow_mut().open.pop(&self.id);
            match open {
                Some(f) => f.close().await,
                None => Ok(()),
            }
        })
    }
}

impl Storage for PooledStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn StorageFile>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            // Opened now, so a missing file fails here, not at the first read.
            let file = self.inner.open(&path, mode).await?;
            let id = next_file_id();
            self.pool.borrow_mut().insert(id, file);
            let reopen = match mode {
                OpenMode::ReadOnly => OpenMode::ReadOnly,
                _ => OpenMode::ReadWrite,
            };
            Ok(Rc::new(PooledFile {
                id,
                path,
                reopen,
                inner: self.inner.clone(),
                pool: self.pool.clone(),
            }) as Rc<dyn StorageFile>)
        })
    }

    fn write_file_atomic(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        self.inner.write_file_atomic(path, data)
    }

    fn sync_dir(&self, dir: &Path) -> IoFuture<'_, ()> {
        self.inner.sync_dir(dir)
    }

    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>> {
        self.inner.read_file(path)
    }

    forward_storage_to_inner!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::sim::SimStorage;

    #[test]
    fn read_only_files_share_a_bounded_pool_and_reopen_on_use() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                for i in 0..10 {
                    let path = PathBuf::from(format!("/d/{i}"));
                    sim.write_file_atomic(&path, vec![i as u8; 8])
                        .await
                        .unwrap();
                }
                let pooled = PooledStorage::new(Rc::new(sim.clone()), 3);
                let mut files = Vec::new();
                for i in 0..10 {
                    let path = PathBuf::from(format!("/d/{i}"));
                    files.push(pooled.open(&path, OpenMode::ReadOnly).await.unwrap());
                    assert!(pooled.open_files().0 <= 3);
                }
                for (i, f) in files.iter().enumerate() {
                    assert_eq!(f.read_at(0, 8).await.unwrap(), vec![i as u8; 8]);
                    assert!(pooled.open_files().0 <= 3);
                }
                assert!(pooled.open_files().1 >= 7, "evicted files were reopened");
                assert!(pooled
                    .open("/d/none".as_ref(), OpenMode::ReadOnly)
                    .await
                    .is_err());
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn writable_files_share_the_pool_and_reopen_read_write() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let sim = SimStorage::new();
                sim.create_dir_all("/d".as_ref()).unwrap();
                let pooled = PooledStorage::new(Rc::new(sim.clone()), 3);
                let mut files = Vec::new();
                for i in 0..10 {
                    let path = PathBuf::from(format!("/d/{i}.log"));
                    files.push(pooled.open(&path, OpenMode::CreateNew).await.unwrap());
                }
                // Round robin over more files than the pool holds: every write reopens.
                for round in 0..3u64 {
                    for (i, f) in files.iter().enumerate() {
                        let mut buf = f.alloc_buffer(4096);
                        buf.as_bytes_mut().fill(i as u8);
                        assert_eq!(f.write_at(buf, round * 4096).await.unwrap(), 4096);
                        f.fdatasync().await.unwrap();
                        assert!(pooled.open_files().0 <= 3);
                    }
                }
                assert!(pooled.open_files().1 >= 20, "evicted files were reopened");
                // What was synced through reopened descriptors survives a power cut.
                sim.sync_dir("/d".as_ref()).await.unwrap();
                sim.crash(crate::io::sim::CrashKind::PowerLoss);
                for i in 0..10 {
                    let path = PathBuf::from(format!("/d/{i}.log"));
                    assert_eq!(sim.read_file(&path).await.unwrap(), vec![i as u8; 3 * 4096]);
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
