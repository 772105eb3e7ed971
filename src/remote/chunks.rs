//! Each shard's cache of remote bytes in memory: fixed-size chunks of remote objects (so a
//! ranged GET fetches at most a chunk more than asked, and neighbouring reads share it) and
//! whole index objects once their CRC matched the manifest's. Least recently used first
//! out, within an eighth of the shard's share of `remote.cache.bytes` (at least 8 MiB);
//! chunks and index objects are also kept on disk within the whole share (`disk_cache.rs`;
//! an index read back from disk is checked against its CRC again). A thread-local:
//! reached only by the shard's own tasks, never across an await.
//!
//! Read-ahead: an object read sequentially (each read starting in the chunk the last one
//! ended in, or the next; three in a row) gets its next `AHEAD` chunks fetched in the
//! background, at most `MAX_AHEAD` fetches in flight per shard, so a consumer catching up
//! from the bucket waits for one round trip to the store per `AHEAD` chunks, not per chunk.
//! A read of a chunk being fetched ahead waits for that fetch instead of issuing its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::rc::Rc;

use glommio::sync::Semaphore;

use bytes::{Bytes, BytesMut};
use lru::LruCache;

use super::error::RemoteError;
use super::manifest::RemoteFile;
use super::store::RemoteStore;

/// The unit of ranged GETs and of the cache.
pub const CHUNK_BYTES: u64 = 1 << 20;

/// Which part of an object an entry holds: a chunk number, or the whole verified object.
const WHOLE: u64 = u64::MAX;
/// Chunks fetched ahead of a sequential reader of an object.
pub const AHEAD: u64 = 4;
/// Read-ahead fetches in flight per shard.
const MAX_AHEAD: usize = 8;
/// Reads in a row, each continuing the last, that make a pattern sequential.
const SEQUENTIAL_AFTER: u32 = 3;
/// Objects whose read pattern is remembered (the least recently read are forgotten).
const PATTERNS: usize = 256;

/// An object's last read: the chunk it ended in, and how many reads in a row continued.
#[derive(Clone, Copy)]
struct Pattern {
    last_chunk: u64,
    streak: u32,
}

/// Chunks being fetched ahead, each with a semaphore closed when its fetch ends (which
/// wakes every read waiting for it).
type InFlight = HashMap<(Rc<str>, u64), Rc<Semaphore>>;

struct ChunkCache {
    entries: LruCache<(Rc<str>, u64), Bytes>,
    bytes: u64,
    budget: u64,
    hits: u64,
    misses: u64,
}

thread_local! {
    static READS: RefCell<LruCache<Rc<str>, Pattern>> =
        RefCell::new(LruCache::new(NonZeroUsize::new(PATTERNS).expect("non-zero")));
    static IN_FLIGHT: RefCell<InFlight> = RefCell::new(HashMap::new());
    static CACHE: RefCell<ChunkCache> = RefCell::new(ChunkCache {
        entries: LruCache::unbounded(),
        bytes: 0,
        budget: 0,
        hits: 0,
        misses: 0,
    });
}

/// Sets this shard's share of `remote.cache.bytes` (the memory tier takes an eighth).
pub fn set_budget(share: u64) {
    let memory = (share / 8).max(8 << 20).min(share);
    CACHE.with(|c| c.borrow_mut().budget = memory);
}

/// (hits, misses, bytes held in memory and on disk) of this shard's cache.
pub fn stats() -> (u64, u64, u64) {
    CACHE.with(|c| {
        let c = c.borrow();
        (c.hits, c.misses, c.bytes + super::disk_cache::bytes())
    })
}

fn lookup(key: &Rc<str>, part: u64) -> Option<Bytes> {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let hit = c.entries.get(&(key.clone(), part)).cloned();
        match hit {
            Some(_) => c.hits += 1,
            None => c.misses += 1,
        }
        hit
    })
}

fn insert(key: Rc<str>, part: u64, data: Bytes) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if data.len() as u64 > c.budget {
            return;
        }
        c.bytes += data.len() as u64;
        if let Some(old) = c.entries.put((key, part), data) {
            c.bytes -= old.len() as u64;
        }
        while c.bytes > c.budget {
            match c.entries.pop_lru() {
                Some((_, old)) => c.bytes -= old.len() as u64,
                None => break,
            }
        }
        assert!(c.bytes <= c.budget, "the cache stays within its budget");
    })
}

/// Empties this shard's cache, memory and disk (DropCaches: cold remote reads).
pub fn clear() {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.entries.clear();
        c.bytes = 0;
    });
    super::disk_cache::clear();
}

/// Drops every cached part of an object (its bytes failed a check).
pub fn forget(key: &str) {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let stale: Vec<(Rc<str>, u64)> = c
            .entries
            .iter()
            .filter(|((k, _), _)| &**k == key)
            .map(|(k, _)| k.clone())
            .collect();
        for k in stale {
            if let Some(old) = c.entries.pop(&k) {
                // `bytes` counts what the entries hold: it covers every entry taken out.
                assert!(old.len() as u64 <= c.bytes, "chunk cache accounting");
                c.bytes -= old.len() as u64;
            }
        }
    });
    super::disk_cache::forget_object(key);
}

/// Bytes `start..end` of a remote file, through the cache.
pub async fn read_range(
    store: &RemoteStore,
    file: &RemoteFile,
    start: u64,
    end: u64,
) -> Result<Bytes, RemoteError> {
    let end = end.min(file.size);
    if start >= end {
        return Ok(Bytes::new());
    }
    let key: Rc<str> = file.key.as_str().into();
    let (first, last) = (start / CHUNK_BYTES, (end - 1) / CHUNK_BYTES);
    if is_sequential(&key, first, last) {
        read_ahead(store, file, &key, last);
    }
    let mut out = BytesMut::new();
    for n in first..=last {
        let chunk = chunk(store, file, &key, n).await?;
        let from = start.saturating_sub(n * CHUNK_BYTES) as usize;
        let to = ((end - n * CHUNK_BYTES) as usize).min(chunk.len());
        if first == last {
            return Ok(chunk.slice(from..to));
        }
        out.extend_from_slice(&chunk[from..to]);
    }
    assert_eq!(out.len() as u64, end - start);
    Ok(out.freeze())
}

async fn chunk(
    store: &RemoteStore,
    file: &RemoteFile,
    key: &Rc<str>,
    n: u64,
) -> Result<Bytes, RemoteError> {
    // A chunk being fetched ahead is waited for first, so the lookup counts once.
    let ahead = IN_FLIGHT.with(|f| f.borrow().get(&(key.clone(), n)).cloned());
    if let Some(done) = ahead {
        // Closed when the fetch ends: the acquire fails then, by design.
        let _ = done.acquire(1).await;
    }
    if let Some(hit) = lookup(key, n) {
        return Ok(hit);
    }
    fill(store, file, key, n).await
}

/// Chunk `n` from the disk cache or the store, cached in memory (and on disk).
async fn fill(
    store: &RemoteStore,
    file: &RemoteFile,
    key: &Rc<str>,
    n: u64,
) -> Result<Bytes, RemoteError> {
    let range = n * CHUNK_BYTES..((n + 1) * CHUNK_BYTES).min(file.size);
    let want = range.end - range.start;
    if let Some(hit) = super::disk_cache::get(key, n)
        .await
        .filter(|d| d.len() as u64 == want)
    {
        insert(key.clone(), n, hit.clone());
        return Ok(hit);
    }
    let data = store.get_range(store.key(&file.key), range).await?;
    if data.len() as u64 != want {
        return Err(RemoteError::corrupt(
            &file.key,
            format!("chunk {n} has {} bytes, not {want}", data.len()),
        ));
    }
    insert(key.clone(), n, data.clone());
    super::disk_cache::put(key.clone(), n, data.clone());
    Ok(data)
}

/// Counts the read `[first, last]` (chunks) of `key`; true once it continues a sequential
/// pattern.
fn is_sequential(key: &Rc<str>, first: u64, last: u64) -> bool {
    READS.with(|r| {
        let mut reads = r.borrow_mut();
        let streak = match reads.get(key) {
            Some(p) if (p.last_chunk..=p.last_chunk + 1).contains(&first) => p.streak + 1,
            _ => 1,
        };
        reads.put(
            key.clone(),
            Pattern {
                last_chunk: last,
                streak,
            },
        );
        streak >= SEQUENTIAL_AFTER
    })
}

/// Fetches the `AHEAD` chunks after `last` that are neither cached nor in flight, within
/// the shard's bound, each in a task of its own.
fn read_ahead(store: &RemoteStore, file: &RemoteFile, key: &Rc<str>, last: u64) {
    let chunks = file.size.div_ceil(CHUNK_BYTES);
    for n in (last + 1..=last + AHEAD).take_while(|&n| n < chunks) {
        let cached = CACHE.with(|c| c.borrow().entries.contains(&(key.clone(), n)));
        let started = IN_FLIGHT.with(|f| {
            let mut f = f.borrow_mut();
            if cached || f.len() >= MAX_AHEAD || f.contains_key(&(key.clone(), n)) {
                return false;
            }
            f.insert((key.clone(), n), Rc::new(Semaphore::new(0)));
            true
        });
        if !started {
            continue;
        }
        let (store, file, key) = (store.clone(), file.clone(), key.clone());
        crate::tasks::spawn(async move {
            let _done = AheadDone((key.clone(), n));
            // A failed fetch is left to the reader, which fetches and reports it itself.
            let _ = fill(&store, &file, &key, n).await;
        })
        .detach();
    }
}

/// Ends a read-ahead fetch (done or cancelled): out of the in-flight map, waiters woken.
struct AheadDone((Rc<str>, u64));

impl Drop for AheadDone {
    fn drop(&mut self) {
        let done = IN_FLIGHT.try_with(|f| f.borrow_mut().remove(&self.0));
        if let Ok(Some(done)) = done {
            done.close();
        }
    }
}

/// A whole remote file whose size and CRC-32C match the manifest (indexes, snapshots).
pub async fn whole_file(store: &RemoteStore, file: &RemoteFile) -> Result<Bytes, RemoteError> {
    let key: Rc<str> = file.key.as_str().into();
    if let Some(hit) = lookup(&key, WHOLE) {
        return Ok(hit);
    }
    // Indexes are read by every lookup in their segment: kept on disk too, so the chunks
    // passing through memory do not send each lookup back to the store for its index.
    let on_disk = super::disk_cache::get(&key, WHOLE)
        .await
        .filter(|d| d.len() as u64 == file.size && crc32c::crc32c(d) == file.crc32c);
    if let Some(hit) = on_disk {
        insert(key, WHOLE, hit.clone());
        return Ok(hit);
    }
    let (data, _) = store.get(store.key(&file.key)).await?;
    let crc = crc32c::crc32c(&data);
    if data.len() as u64 != file.size || crc != file.crc32c {
        return Err(RemoteError::corrupt(
            &file.key,
            format!(
                "{} bytes with CRC {crc:#x}; the manifest says {} bytes, CRC {:#x}",
                data.len(),
                file.size,
                file.crc32c
            ),
        ));
    }
    insert(key.clone(), WHOLE, data.clone());
    super::disk_cache::put(key, WHOLE, data.clone());
    Ok(data)
}
