//! The shard's on-disk cache of remote chunks (`__shardlog_meta/remote-cache/<shard>/`),
//! within its share of `remote.cache.bytes`, least recently used first out. Behind the
//! memory cache (`chunks.rs`): a chunk fetched from the store is kept in both; one the
//! memory cache dropped is read back from here instead of from the store. Files are written
//! in the background (a read never waits for the cache) and never synced: after a crash the
//! directory is emptied at start, and every batch is CRC-checked when served anyway.

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use bytes::Bytes;
use lru::LruCache;

use crate::io::{OpenMode, Storage};

struct DiskCache {
    dir: PathBuf,
    storage: Rc<dyn Storage>,
    /// (object key, chunk) -> (file id, length).
    files: LruCache<(Rc<str>, u64), (u64, u64)>,
    bytes: u64,
    budget: u64,
    next_id: u64,
}

thread_local! {
    static DISK: RefCell<Option<DiskCache>> = const { RefCell::new(None) };
}

impl DiskCache {
    fn path(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id:016x}.chunk"))
    }
}

/// Starts this shard's disk cache in `dir`, empty (leftovers of an earlier run removed).
pub async fn open(storage: Rc<dyn Storage>, dir: PathBuf, budget: u64) -> std::io::Result<()> {
    storage.create_dir_all(&dir)?;
    for name in storage.list(&dir)? {
        storage.remove(&dir.join(name)).await?;
    }
    DISK.with(|d| {
        *d.borrow_mut() = Some(DiskCache {
            dir,
            storage,
            files: LruCache::unbounded(),
            bytes: 0,
            budget,
            next_id: 0,
        })
    });
    Ok(())
}

/// A cached chunk, read from its file; `None` when not cached (or unreadable: then it is
/// forgotten and fetched again).
pub async fn get(key: &Rc<str>, chunk: u64) -> Option<Bytes> {
    let (storage, path, len) = DISK.with(|d| {
        let mut d = d.borrow_mut();
        let d = d.as_mut()?;
        let (id, len) = *d.files.get(&(key.clone(), chunk))?;
        Some((d.storage.clone(), d.path(id), len))
    })?;
    let read = async {
        let file = storage.open(&path, OpenMode::ReadOnly).await?;
        let data = file.read_at(0, len as usize).await;
        let _ = file.close().await;
        data
    };
    match read.await {
        Ok(data) if data.len() as u64 == len => Some(Bytes::from(data)),
        _ => {
            forget(key, chunk);
            None
        }
    }
}

fn forget(key: &Rc<str>, chunk: u64) {
    DISK.with(|d| {
        if let Some(d) = d.borrow_mut().as_mut() {
            if let Some((_, len)) = d.files.pop(&(key.clone(), chunk)) {
                d.bytes -= len;
            }
        }
    })
}

/// Keeps a chunk on disk, in the background; the least recently used go beyond the budget.
pub fn put(key: Rc<str>, chunk: u64, data: Bytes) {
    let Some((storage, path, id)) = DISK.with(|d| {
        let mut d = d.borrow_mut();
        let d = d.as_mut().filter(|d| (data.len() as u64) <= d.budget)?;
        let id = d.next_id;
        d.next_id += 1;
        Some((d.storage.clone(), d.path(id), id))
    }) else {
        return;
    };
    crate::tasks::spawn(async move {
        if crate::io::storage::write_new_file(storage.as_ref(), &path, &data)
            .await
            .is_err()
        {
            let _ = storage.remove(&path).await;
            return;
        }
        let evicted = DISK.with(|d| {
            let mut d = d.borrow_mut();
            let Some(d) = d.as_mut() else {
                return Vec::new();
            };
            d.bytes += data.len() as u64;
            let mut gone = Vec::new();
            if let Some((old, len)) = d.files.put((key, chunk), (id, data.len() as u64)) {
                d.bytes -= len;
                gone.push(d.path(old));
            }
            while d.bytes > d.budget {
                let Some((_, (old, len))) = d.files.pop_lru() else {
                    break;
                };
                d.bytes -= len;
                gone.push(d.path(old));
            }
            assert!(
                d.bytes <= d.budget,
                "the disk cache stays within its budget"
            );
            gone
        });
        for path in evicted {
            let _ = storage.remove(&path).await;
        }
    })
    .detach();
}

/// Empties the disk cache (DropCaches); the files go in the background.
pub fn clear() {
    drop_where(|_| true);
}

/// Drops every cached chunk of an object (its bytes failed a check).
pub fn forget_object(key: &str) {
    drop_where(|k| k == key);
}

/// Forgets the chunks of the objects `matches` names; their files go in the background.
fn drop_where(matches: impl Fn(&str) -> bool) {
    let Some((storage, paths)) = DISK.with(|d| {
        let mut d = d.borrow_mut();
        let d = d.as_mut()?;
        let keys: Vec<(Rc<str>, u64)> = d
            .files
            .iter()
            .filter(|((k, _), _)| matches(k))
            .map(|(k, _)| k.clone())
            .collect();
        let mut paths = Vec::new();
        for k in keys {
            if let Some((id, len)) = d.files.pop(&k) {
                d.bytes -= len;
                paths.push(d.path(id));
            }
        }
        Some((d.storage.clone(), paths))
    }) else {
        return;
    };
    crate::tasks::spawn(async move {
        for p in paths {
            let _ = storage.remove(&p).await;
        }
    })
    .detach();
}

/// Bytes the disk cache holds.
pub fn bytes() -> u64 {
    DISK.with(|d| d.borrow().as_ref().map_or(0, |d| d.bytes))
}
