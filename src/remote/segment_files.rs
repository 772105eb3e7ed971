//! A remote segment's objects seen as read-only files, so one reading code serves both
//! tiers: the local `Segment` opens them ([`OpenRemoteSegment`]) and its `read`, offset and time
//! lookups run unchanged over ranged reads through the chunk cache. Writes are refused.
//! A file's path is the local one (`<partition dir>/<base, 20 digits><suffix>`), mapped to
//! the object the manifest names for that suffix.

use bytes::Bytes;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::chunks;
use super::error::RemoteError;
use super::manifest::{RemoteFile, RemoteSegment};
use super::store::RemoteStore;
use crate::config::LogConfig;
use crate::format::cursor::BatchCursor;
use crate::io::storage::{IoBuf, IoFuture, OpenMode, Storage, StorageFile};
use crate::log::{segment_path, LogIo, Segment};

/// The files of one remote segment, as a read-only [`Storage`].
struct RemoteSegmentFiles {
    store: RemoteStore,
    dir: PathBuf,
    segment: RemoteSegment,
}

/// One remote object as a read-only file of the size the manifest records.
struct RemoteObject {
    path: PathBuf,
    store: RemoteStore,
    file: RemoteFile,
}

/// A remote segment opened with the local segment's code, its errors in the remote
/// tier's terms.
pub struct OpenRemoteSegment {
    segment: Segment,
    files: Rc<RemoteSegmentFiles>,
}

impl OpenRemoteSegment {
    /// Opens remote segment `seg` of the partition whose objects live under `dir` (its key
    /// prefix): indexes from the `.index`/`.timeindex` objects (rebuilt in memory from the
    /// `.log` when missing or stale), nothing written.
    pub async fn open(
        store: &RemoteStore,
        dir: &str,
        seg: &RemoteSegment,
    ) -> Result<Self, RemoteError> {
        let files = Rc::new(RemoteSegmentFiles {
            store: store.clone(),
            dir: PathBuf::from(dir),
            segment: seg.clone(),
        });
        let io = LogIo {
            storage: files.clone(),
            cache: None,
        };
        let config = index_capacity_for(seg);
        let opened = Segment::open_read_only(io, &files.dir, seg.base_offset, &config).await;
        let segment = opened.map_err(|e| files.remote_error(&e))?;
        // The manifest's bounds and the segment's own agree, or its objects are not this
        // segment's.
        let (base, next) = (segment.base_offset(), segment.next_offset());
        if base != seg.base_offset || next > seg.last_offset + 1 {
            let what = format!(
                "holds offsets {base}..{next}, the manifest says {}..={}",
                seg.base_offset, seg.last_offset
            );
            return Err(files.corrupt_log(what));
        }
        Ok(OpenRemoteSegment { segment, files })
    }

    /// Whether this is `seg` as the manifest names it now (the same objects).
    pub fn is(&self, seg: &RemoteSegment) -> bool {
        self.files.segment == *seg
    }

    /// `Segment::read`: whole, CRC-checked batches from the one holding `offset`, each
    /// inside the segment's offsets; empty when none reaches it.
    pub async fn read(
        &mut self,
        offset: i64,
        max_bytes: usize,
        at_least_one: bool,
    ) -> Result<Bytes, RemoteError> {
        let read = self.segment.read(offset, max_bytes, at_least_one).await;
        let Some(data) = read.map_err(|e| self.files.remote_error(&e))? else {
            return Ok(Bytes::new());
        };
        let seg = &self.files.segment;
        for step in BatchCursor::new(&data) {
            // `Segment::read` serves whole batches only: every step parses.
            let (at, h) =
                step.map_err(|(at, e)| self.files.corrupt_log(format!("at {at}: {e}")))?;
            if h.base_offset < seg.base_offset || h.last_offset() > seg.last_offset {
                let what = format!(
                    "batch {}..={} at {at} outside segment {}..={}",
                    h.base_offset,
                    h.last_offset(),
                    seg.base_offset,
                    seg.last_offset
                );
                return Err(self.files.corrupt_log(what));
            }
        }
        Ok(data.to_bytes())
    }

    /// `Segment::find_offset_by_timestamp`: the first record at or after `start` with a
    /// timestamp >= `target`, as (offset, timestamp).
    pub async fn find_by_timestamp(
        &mut self,
        target: i64,
        start: i64,
    ) -> Result<Option<(i64, i64)>, RemoteError> {
        let found = self.segment.find_offset_by_timestamp(target, start).await;
        let found = found.map_err(|e| self.files.remote_error(&e))?;
        if let Some((offset, timestamp)) = found {
            assert!(
                offset >= start && timestamp >= target,
                "the lookup's own bounds"
            );
            assert!(
                offset < self.segment.next_offset(),
                "an offset of this segment"
            );
        }
        Ok(found)
    }
}

/// A configuration whose index capacity holds every entry of `seg`'s index objects, which
/// its uploader may have sized larger than this node's `segment.index.bytes`.
fn index_capacity_for(seg: &RemoteSegment) -> LogConfig {
    let largest = seg.files.iter().map(|f| f.size).max().unwrap_or(0);
    let mut config = LogConfig::default();
    config.segment_index_bytes = config.segment_index_bytes.max(largest + 12);
    assert!(config.max_time_index_entries() as u64 * 12 >= largest);
    config
}

impl RemoteSegmentFiles {
    fn file_at(&self, path: &Path) -> Option<&RemoteFile> {
        let base = self.segment.base_offset;
        (self.segment.files.iter()).find(|f| segment_path(&self.dir, base, &f.suffix) == path)
    }

    /// The remote tier's error for what the segment code reported: the store's own error
    /// when a read failed, corruption (named by object key, dropped from the caches) when
    /// bytes failed a check.
    fn remote_error(&self, e: &crate::Error) -> RemoteError {
        match e {
            crate::Error::Io { source, .. } => {
                match source
                    .get_ref()
                    .and_then(|s| s.downcast_ref::<RemoteError>())
                {
                    Some(remote) => remote.clone(),
                    None => RemoteError::Unavailable(e.to_string()),
                }
            }
            crate::Error::Corruption { file, pos, what } => {
                let key = self.file_at(file).map_or(file.display().to_string(), |f| {
                    chunks::forget(&f.key);
                    f.key.clone()
                });
                RemoteError::corrupt(key, format!("at {pos}: {what}"))
            }
            other => RemoteError::corrupt(self.log_key(), other.to_string()),
        }
    }

    fn log_key(&self) -> String {
        let log = self.segment.file(crate::log::LOG_SUFFIX);
        log.map_or_else(
            || format!("segment {}", self.segment.base_offset),
            |f| f.key.clone(),
        )
    }

    /// Bad bytes in the segment's `.log`: reported, dropped from the caches.
    fn corrupt_log(&self, what: String) -> RemoteError {
        let key = self.log_key();
        chunks::forget(&key);
        RemoteError::corrupt(key, what)
    }
}

/// Writing to the remote tier through a file is a bug: uploads go through the store.
fn read_only(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!("{} is a remote object: read-only", path.display()),
    )
}

fn not_found(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("the remote segment has no object for {}", path.display()),
    )
}

impl Storage for RemoteSegmentFiles {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn StorageFile>> {
        let found = match mode {
            OpenMode::ReadOnly => self.file_at(path).ok_or_else(|| not_found(path)),
            _ => Err(read_only(path)),
        };
        let opened = found.map(|file| {
            Rc::new(RemoteObject {
                path: path.to_path_buf(),
                store: self.store.clone(),
                file: file.clone(),
            }) as Rc<dyn StorageFile>
        });
        Box::pin(std::future::ready(opened))
    }

    /// A whole object, checked against the manifest's size and CRC-32C.
    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>> {
        let file = self.file_at(path).cloned();
        let path = path.to_path_buf();
        Box::pin(async move {
            let file = file.ok_or_else(|| not_found(&path))?;
            let bytes = chunks::whole_file(&self.store, &file).await;
            bytes.map(|b| b.to_vec()).map_err(std::io::Error::other)
        })
    }

    fn list(&self, _dir: &Path) -> std::io::Result<Vec<String>> {
        Ok(Vec::new())
    }

    fn list_dirs(&self, _dir: &Path) -> std::io::Result<Vec<String>> {
        Ok(Vec::new())
    }

    fn exists(&self, path: &Path) -> bool {
        self.file_at(path).is_some()
    }

    fn remove(&self, path: &Path) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(Err(read_only(path))))
    }

    fn rename(&self, from: &Path, _to: &Path) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(Err(read_only(from))))
    }

    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        Err(read_only(dir))
    }

    fn sync_dir(&self, dir: &Path) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(Err(read_only(dir))))
    }
}

impl StorageFile for RemoteObject {
    fn path(&self) -> &Path {
        &self.path
    }

    fn alloc_buffer(&self, size: usize) -> IoBuf {
        IoBuf::Heap(vec![0; size])
    }

    fn write_at(&self, _buf: IoBuf, _pos: u64) -> IoFuture<'_, usize> {
        Box::pin(std::future::ready(Err(read_only(&self.path))))
    }

    /// Ranged reads through the chunk cache (each batch read is CRC-checked by the caller).
    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        Box::pin(async move {
            let bytes = self.read_range(pos, len).await?;
            Ok(bytes.to_vec())
        })
    }

    fn read_extents(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<bytes::Bytes>> {
        Box::pin(async move {
            let bytes = self.read_range(pos, len).await?;
            Ok(if bytes.is_empty() {
                Vec::new()
            } else {
                vec![bytes]
            })
        })
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(Err(read_only(&self.path))))
    }

    fn truncate(&self, _size: u64) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(Err(read_only(&self.path))))
    }

    fn allocate(&self, _size: u64) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(Err(read_only(&self.path))))
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(std::future::ready(Ok(self.file.size)))
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(std::future::ready(Ok(())))
    }
}

impl RemoteObject {
    async fn read_range(&self, pos: u64, len: usize) -> std::io::Result<bytes::Bytes> {
        let end = pos.saturating_add(len as u64);
        let bytes = chunks::read_range(&self.store, &self.file, pos, end).await;
        let bytes = bytes.map_err(std::io::Error::other)?;
        // Up to `len`, short only at the object's end.
        assert!(bytes.len() <= len);
        assert!(bytes.len() == len || pos + bytes.len() as u64 == self.file.size.max(pos));
        Ok(bytes)
    }
}
