//! `LogFile`: a segment's `.log` file with a direct-I/O appender.
//!
//! The file is written only in whole 4 KiB blocks at block-aligned positions (never
//! O_APPEND). Appended bytes are staged in an aligned 1 MiB buffer, taken at the first append
//! (a file created or opened holds at most its partial tail block); each time it fills, that
//! chunk is written in the background, so several writes are in flight while the caller keeps
//! appending. `flush` writes the partial tail block padded with zeros and waits for every
//! write; the tail block stays in memory (`head`) and is rewritten, on its own, when appends
//! fill it or by the next flush. A block is never the target of two writes in flight: full
//! chunks never overlap, and the only rewritten block (the head) is written after the flush
//! that wrote it before has waited for that write.
//!
//! Why the head is written on its own: the file is allocated ahead of its writes, as
//! unwritten extents, and ext4 cannot complete a direct write that covers a written block
//! and unwritten ones without blocking, so io_uring hands it to an io-wq worker, which shares
//! the shard's core (it was the first write of every acks=1 group). Chunks start on the
//! block after the head, so every write covers only written or only unwritten blocks.
//!
//! Watermarks: `size` (bytes appended) >= `written` (on the device) >= `durable`
//! (covered by an fdatasync). A failed write or fdatasync poisons the file: later appends and
//! flushes fail instead of pretending the data is there.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use glommio::Task;

use bytes::Bytes;

use super::awake::awake_until;
use super::cache::{next_file_id, read_through, SharedPageCache};
use super::chain::ByteChain;
use super::read_ahead::{ReadAhead, Source};
use super::storage::{IoBuf, OpenMode, Storage, StorageFile};
use super::{align_down, align_up, BLOCK};
use crate::error::{Error, Result};

/// Size of the staging buffer and of each background write.
const CHUNK: usize = 1 << 20;
/// Staging buffer (and write size) when the shard's staging budget is spent.
const MIN_CHUNK: usize = 64 << 10;
/// Staged bytes from which `flush` writes the staging buffer itself instead of a copy.
const IN_PLACE_FLUSH: usize = 64 << 10;
/// Background chunk writes allowed in flight before `append` waits for the oldest.
const MAX_IN_FLIGHT: usize = 4;
/// The most a file is allocated ahead of its writes. A direct write that extends a file
/// is handed by io_uring to a worker thread (ext4 cannot complete it without blocking),
/// which shares the shard's core; a write below the allocated size completes inline. So
/// the file is grown with `allocate` ahead of the writes, by as much as it already holds,
/// from `CHUNK` up to this: an idle partition's active segment holds little it does not
/// use, a busy one allocates every 16 MiB. Sealing trims the file to its last byte.
pub const MAX_ALLOCATE_AHEAD: u64 = 16 << 20;

// Chunks are whole blocks and each is one I/O; the page cache stores written chunks page by
// page, so pages tile blocks.
const _: () = assert!(CHUNK.is_multiple_of(BLOCK as usize));
const _: () = assert!(MIN_CHUNK.is_multiple_of(BLOCK as usize));
const _: () = assert!(CHUNK <= super::MAX_IO);
const _: () = assert!(MIN_CHUNK <= CHUNK);
const _: () = assert!(BLOCK.is_multiple_of(super::cache::PAGE));

struct InFlight {
    end: u64,
    task: Task<std::io::Result<usize>>,
    expected: usize,
}

/// An open `.log` file: appendable while it is the active segment, read-only once sealed.
pub struct LogFile {
    path: PathBuf,
    file: Rc<dyn StorageFile>,
    /// Key of this handle's pages in the shard's page cache.
    id: u64,
    cache: Option<SharedPageCache>,
    /// Logical size: bytes appended.
    size: u64,
    /// File position of `staging[0]`; always block-aligned.
    staging_pos: u64,
    /// Bytes `[staging_pos, size)`, not yet covered by a full-chunk write. `None` once sealed,
    /// or while parked.
    staging: Option<IoBuf>,
    /// An idle, writable file that holds no buffer at all: everything is written, the end
    /// is on a block (so no partial block needs keeping). The next append takes a buffer.
    parked: bool,
    /// The block before `staging_pos`, already on the device partly filled, while appends
    /// fill it: holds `[staging_pos - BLOCK, size)` (then `size < staging_pos`, staging is
    /// empty). Written on its own once full.
    head: Option<IoBuf>,
    /// Staging bytes granted from the shard's budget (the page cache's) for `staging`.
    granted: usize,
    in_flight: VecDeque<InFlight>,
    /// Background writes allowed in flight (`MAX_IN_FLIGHT`; 1 for background work).
    max_in_flight: usize,
    written: u64,
    durable: u64,
    poisoned: Option<String>,
    /// The file's size as grown by `allocate` (0: not grown); writes below it overwrite.
    allocated: u64,
    /// How long the file may be on disk: its size when opened, grown by padded writes and
    /// allocation. Above `size`, a seal trims it.
    file_len: u64,
    /// Whether to allocate ahead (off once an allocation failed: writes then extend).
    allocate_ahead: bool,
    /// Chunks read ahead of a sequential reader (consumers catching up).
    read_ahead: ReadAhead,
}

fn short_write(expected: usize, got: usize) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::WriteZero,
        format!("short direct write: {got} of {expected} bytes"),
    )
}

impl LogFile {
    /// A handle on `file` holding `[0, size)`, with `staging` (None: sealed) holding
    /// `[staging_pos, size)`; everything below `size` is on the device.
    fn assemble(
        path: &Path,
        file: Rc<dyn StorageFile>,
        size: u64,
        staging_pos: u64,
        staging: Option<IoBuf>,
        cache: Option<SharedPageCache>,
    ) -> Self {
        LogFile {
            path: path.to_path_buf(),
            file,
            id: next_file_id(),
            cache,
            size,
            staging_pos,
            staging,
            parked: false,
            head: None,
            granted: 0,
            in_flight: VecDeque::new(),
            max_in_flight: MAX_IN_FLIGHT,
            written: size,
            durable: size,
            poisoned: None,
            allocated: 0,
            file_len: size,
            allocate_ahead: false,
            read_ahead: ReadAhead::default(),
        }
    }

    /// Creates a new, empty log file. Fails if the file already exists.
    pub async fn create(
        storage: &dyn Storage,
        path: &Path,
        cache: Option<SharedPageCache>,
    ) -> Result<Self> {
        let file = storage
            .open(path, OpenMode::CreateNew)
            .await
            .map_err(|e| Error::io("create", path, e))?;
        let mut log = Self::assemble(path, file, 0, 0, None, cache);
        // Parked: the first append takes the buffer. A partition created and never
        // written (thousands of them, created by one request) holds none.
        log.parked = true;
        log.allocate_ahead = true;
        log.assert_invariants();
        Ok(log)
    }

    /// Creates a new log file for background work (the cleaner): small chunks, one write in
    /// flight, so a foreground write or read on the same device never queues behind more
    /// than one 64 KiB write of it.
    pub async fn create_background(storage: &dyn Storage, path: &Path) -> Result<Self> {
        let mut log = Self::create(storage, path, None).await?;
        log.parked = false;
        log.staging = Some(log.file.alloc_buffer(MIN_CHUNK));
        log.max_in_flight = 1;
        Ok(log)
    }

    /// Opens an existing log file whose valid data is `[0, size)` for appending: the partial
    /// last block is read back into memory; anything after `size` will be overwritten.
    pub async fn open_for_append(
        storage: &dyn Storage,
        path: &Path,
        size: u64,
        cache: Option<SharedPageCache>,
    ) -> Result<Self> {
        let file = storage
            .open(path, OpenMode::ReadWrite)
            .await
            .map_err(|e| Error::io("open", path, e))?;
        let tail_pos = align_down(size);
        let tail_len = (size - tail_pos) as usize;
        let staging_pos = align_up(size);
        // The file may run past `size` (padding, space allocated ahead): a seal trims it.
        let file_len = file.size().await.map_err(|e| Error::io("stat", path, e))?;
        let mut log = Self::assemble(path, file.clone(), size, staging_pos, None, cache);
        log.file_len = file_len.max(size);
        if tail_len > 0 {
            let tail = file
                .read_at(tail_pos, BLOCK as usize)
                .await
                .map_err(|e| Error::io("read", path, e))?;
            if tail.len() < tail_len {
                return Err(Error::corruption(
                    path,
                    tail_pos,
                    format!("expected {tail_len} tail bytes, file has {}", tail.len()),
                ));
            }
            // As an idle file keeps it (`release_idle_memory`): the partial block is the
            // staging buffer; the first append takes a full one.
            log.staging_pos = tail_pos;
            log.staging = Some(block_holding(file.as_ref(), &tail[..tail_len]));
        } else {
            log.parked = true;
        }
        log.allocate_ahead = true;
        log.assert_invariants();
        Ok(log)
    }

    /// Opens a sealed log file read-only; `size` is its valid length.
    pub async fn open_sealed(
        storage: &dyn Storage,
        path: &Path,
        size: u64,
        cache: Option<SharedPageCache>,
    ) -> Result<Self> {
        let file = storage
            .open(path, OpenMode::ReadOnly)
            .await
            .map_err(|e| Error::io("open", path, e))?;
        Ok(Self::assemble(path, file, size, size, None, cache))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes appended so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn is_sealed(&self) -> bool {
        self.staging.is_none() && !self.parked
    }

    /// The invariants of the module doc, checked after every change of the watermarks:
    /// `size >= written >= durable`; staging starts on a block and holds `[staging_pos,
    /// size)`, or the head holds the partial block before it; writes in flight are whole
    /// blocks below `staging_pos`, in order, disjoint.
    fn assert_invariants(&self) {
        let path = self.path.display();
        assert!(
            self.size >= self.written && self.written >= self.durable,
            "{path}: watermarks broken: size {} written {} durable {}",
            self.size,
            self.written,
            self.durable
        );
        if self.parked {
            assert!(
                self.staging.is_none()
                    && self.head.is_none()
                    && self.in_flight.is_empty()
                    && self.staging_pos == self.size
                    && self.written == self.size
                    && self.size.is_multiple_of(BLOCK),
                "{path}: parked with bytes to keep (size {}, staging at {})",
                self.size,
                self.staging_pos
            );
        }
        if self.head.is_some() {
            assert!(
                self.staging.is_some()
                    && self.size < self.staging_pos
                    && self.size >= self.staging_pos - BLOCK,
                "{path}: head block before {} does not hold the end {}",
                self.staging_pos,
                self.size
            );
        }
        if let Some(staging) = &self.staging {
            assert!(
                self.staging_pos.is_multiple_of(BLOCK)
                    && (self.staging_pos <= self.size || self.head.is_some())
                    && self.staged() <= staging.len(),
                "{path}: staging [{}, {}) does not fit its {}-byte buffer on a block",
                self.staging_pos,
                self.size,
                staging.len()
            );
        }
        let mut prev_end = 0;
        for w in &self.in_flight {
            let start = w.end - w.expected as u64;
            assert!(
                start >= prev_end && start.is_multiple_of(BLOCK) && w.end <= self.staging_pos,
                "{path}: write in flight [{start}, {}) overlaps, is unaligned or passes staging at {}",
                w.end,
                self.staging_pos
            );
            prev_end = w.end;
        }
    }

    fn check_writable(&self) -> Result<()> {
        if let Some(cause) = &self.poisoned {
            return Err(Error::Poisoned {
                path: self.path.clone(),
                cause: cause.clone(),
            });
        }
        if self.is_sealed() {
            return Err(Error::io(
                "append",
                &self.path,
                std::io::Error::new(std::io::ErrorKind::PermissionDenied, "segment is sealed"),
            ));
        }
        Ok(())
    }

    fn poison(&mut self, op: &'static str, e: std::io::Error) -> Error {
        self.poisoned = Some(format!("{op} failed: {e}"));
        Error::io(op, &self.path, e)
    }

    /// Staging memory held now (a full chunk while appending, a block or two when idle).
    pub fn staging_bytes(&self) -> usize {
        let head = self.head.as_ref().map_or(0, IoBuf::len);
        head + self.staging.as_ref().map_or(0, IoBuf::len)
    }

    /// Bytes in the staging buffer (`[staging_pos, size)`).
    fn staged(&self) -> usize {
        self.size.saturating_sub(self.staging_pos) as usize
    }

    /// Where the bytes held in memory begin: the head block's start, or `staging_pos`.
    fn staged_start(&self) -> u64 {
        match self.head {
            Some(_) => self.staging_pos - BLOCK,
            None => self.staging_pos,
        }
    }

    /// Gives back the 1 MiB staging buffer of an idle, flushed file, keeping only the
    /// partial tail block (as a one-block staging buffer): idle partitions hold 4 KiB each,
    /// not 1 MiB, and one whose end is on a block (an empty one) holds nothing (parked).
    /// The next append takes a full buffer again.
    pub fn release_idle_memory(&mut self) {
        let Some(staging) = &self.staging else {
            return;
        };
        if self.written < self.size || self.staged() > 0 {
            return;
        }
        if self.head.is_none() && self.in_flight.is_empty() && self.staging_pos == self.size {
            self.staging = None;
            self.parked = true;
            self.release_grant();
            self.assert_invariants();
            return;
        }
        if staging.len() <= BLOCK as usize {
            return;
        }
        self.staging = match self.head.take() {
            Some(head) => {
                self.staging_pos -= BLOCK;
                Some(head)
            }
            None => Some(self.file.alloc_buffer(BLOCK as usize)),
        };
        self.release_grant();
    }

    /// A staging buffer as large as the shard's budget grants (a full chunk, or
    /// `MIN_CHUNK` when many partitions are writing); the grant is recorded.
    fn granted_buffer(&mut self) -> IoBuf {
        self.release_grant();
        let size = match &self.cache {
            Some(cache) => cache.borrow_mut().grant_staging(CHUNK, MIN_CHUNK),
            None => CHUNK,
        };
        self.granted = size;
        self.file.alloc_buffer(size)
    }

    fn release_grant(&mut self) {
        if let Some(cache) = &self.cache {
            cache.borrow_mut().release_staging(self.granted);
        }
        self.granted = 0;
    }

    /// Drops the staging buffer (sealed, closed or abandoned) and its grant.
    fn drop_staging(&mut self) {
        self.staging = None;
        self.parked = false;
        self.head = None;
        self.release_grant();
    }

    /// Before an append: a chunk-sized staging buffer again after `release_idle_memory`.
    fn ensure_chunk_staging(&mut self) {
        if std::mem::take(&mut self.parked) {
            assert!(self.staging.is_none(), "a parked file holds no buffer");
            self.staging = Some(self.granted_buffer());
            return;
        }
        let Some(staging) = &self.staging else {
            return;
        };
        if staging.len() >= MIN_CHUNK {
            return;
        }
        let staged = self.staged();
        let small = self.staging.take().expect("checked above");
        if staged > 0 && self.written > self.staging_pos {
            // An idle file's partial block, already written: it becomes the head.
            assert_eq!(small.len(), BLOCK as usize);
            self.head = Some(small);
            self.staging_pos += BLOCK;
            self.staging = Some(self.granted_buffer());
            return;
        }
        let mut chunk = self.granted_buffer();
        chunk.as_bytes_mut()[..staged].copy_from_slice(&small.as_bytes()[..staged]);
        self.staging = Some(chunk);
    }

    /// Appends to the head block what fits in it; a head filled is written on its own.
    fn fill_head(&mut self, data: &mut &[u8]) {
        let Some(head) = self.head.as_mut() else {
            return;
        };
        let head_pos = self.staging_pos - BLOCK;
        let at = (self.size - head_pos) as usize;
        let n = data.len().min(BLOCK as usize - at);
        head.as_bytes_mut()[at..at + n].copy_from_slice(&data[..n]);
        self.size += n as u64;
        *data = &data[n..];
        if self.size == self.staging_pos {
            let full = self.head.take().expect("checked above");
            if let Some(cache) = &self.cache {
                cache
                    .borrow_mut()
                    .insert_written(self.id, head_pos, full.as_bytes());
            }
            self.submit(full, head_pos);
        }
    }

    /// Appends bytes. Full 1 MiB chunks are written in the background; the rest stays in
    /// memory until the next chunk fills or `flush` is called.
    pub async fn append(&mut self, mut data: &[u8]) -> Result<()> {
        self.check_writable()?;
        self.ensure_chunk_staging();
        self.fill_head(&mut data);
        while !data.is_empty() {
            let staged = self.staged();
            let staging = self.staging.as_mut().expect("checked writable");
            let chunk = staging.len();
            let n = data.len().min(chunk - staged);
            staging.as_bytes_mut()[staged..staged + n].copy_from_slice(&data[..n]);
            self.size += n as u64;
            data = &data[n..];
            if staged + n == chunk {
                let fresh = self.file.alloc_buffer(chunk);
                let full = self.staging.replace(fresh).expect("checked writable");
                let pos = self.staging_pos;
                if let Some(cache) = &self.cache {
                    cache
                        .borrow_mut()
                        .insert_written(self.id, pos, full.as_bytes());
                }
                self.staging_pos += chunk as u64;
                self.allocate_for(pos + chunk as u64).await;
                self.submit(full, pos);
                // The chunk goes to the device while the next one is copied.
                self.file.start_writes().await;
                while self.in_flight.len() > self.max_in_flight {
                    self.complete_oldest().await?;
                }
            }
        }
        self.assert_invariants();
        Ok(())
    }

    /// Before a write ending at `end`: grows the file ahead of it if the write would
    /// extend it. A failed allocation (a file system without it, a full disk) turns
    /// allocating off for this file; the write then extends the file as it would anyway.
    async fn allocate_for(&mut self, end: u64) {
        if !self.allocate_ahead || end <= self.allocated {
            return;
        }
        let ahead = self.allocated.clamp(CHUNK as u64, MAX_ALLOCATE_AHEAD);
        let target = align_up(end) + ahead;
        match self.file.allocate(target).await {
            Ok(()) => {
                self.allocated = target;
                self.file_len = self.file_len.max(target);
            }
            Err(e) => {
                tracing::debug!(file = %self.path.display(), error = %e, "allocating ahead failed: writes extend the file");
                self.allocate_ahead = false;
            }
        }
    }

    fn submit(&mut self, buf: IoBuf, pos: u64) {
        let file = self.file.clone();
        let expected = buf.len();
        self.file_len = self.file_len.max(pos + expected as u64);
        let task = crate::tasks::spawn(async move { file.write_at(buf, pos).await });
        self.in_flight.push_back(InFlight {
            end: pos + expected as u64,
            task,
            expected,
        });
    }

    async fn complete_oldest(&mut self) -> Result<()> {
        let Some(w) = self.in_flight.pop_front() else {
            return Ok(());
        };
        match w.task.await {
            Ok(n) if n >= w.expected => {
                self.written = self.written.max(w.end.min(self.size));
                Ok(())
            }
            Ok(n) => Err(self.poison("write", short_write(w.expected, n))),
            Err(e) => Err(self.poison("write", e)),
        }
    }

    async fn drain(&mut self) -> Result<()> {
        let mut first_err = None;
        while !self.in_flight.is_empty() {
            if let Err(e) = self.complete_oldest().await {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Writes everything appended so far to the device (the partial tail block padded with
    /// zeros) and waits for all writes. After it returns, `written() == size()`. The tail
    /// goes to the device alongside the chunk writes still in flight (their blocks are all
    /// below it), so a flush takes as long as the slowest write, not their sum.
    pub async fn flush(&mut self) -> Result<()> {
        if self.staging.is_none() {
            return Ok(());
        }
        self.check_writable()?;
        let tail = if self.written < self.size {
            self.start_tail_write().await
        } else {
            None
        };
        let drained = self.drain().await;
        if let Some((write, padded)) = tail {
            match write.await {
                Ok(n) if n >= padded => {}
                Ok(n) => return Err(self.poison("write", short_write(padded, n))),
                Err(e) => return Err(self.poison("write", e)),
            }
        }
        drained?;
        self.written = self.size;
        self.assert_invariants();
        Ok(())
    }

    /// Starts writing what no write covers yet, padded with zeros to a block: the head
    /// block, or the staging buffer's blocks. Returns the write and its length.
    async fn start_tail_write(&mut self) -> Option<(Task<std::io::Result<usize>>, usize)> {
        let (pos, buf) = match &self.head {
            Some(head) => {
                // A copy: appends go on filling the head while this write is in flight.
                let pos = self.staging_pos - BLOCK;
                let filled = (self.size - pos) as usize;
                (
                    pos,
                    block_holding(self.file.as_ref(), &head.as_bytes()[..filled]),
                )
            }
            None => {
                let (pos, staged) = (self.staging_pos, self.staged());
                if staged == 0 {
                    return None;
                }
                let padded = align_up(staged as u64) as usize;
                self.allocate_for(pos + padded as u64).await;
                (pos, self.padded_staging(staged, padded))
            }
        };
        debug_assert!(
            self.in_flight.iter().all(|w| w.end <= pos),
            "disjoint writes"
        );
        let (file, padded) = (self.file.clone(), buf.len());
        self.file_len = self.file_len.max(pos + padded as u64);
        let write = crate::tasks::spawn(async move { file.write_at(buf, pos).await });
        Some((write, padded))
    }

    /// The staged bytes padded with zeros to `padded`, as a buffer to write. A partial last
    /// block stays behind as the head; staging starts, empty, on the block after it. A large
    /// staged part is written from the staging buffer itself, which a fresh buffer replaces
    /// (one copy per byte on the write path); a small one is copied into a small buffer.
    fn padded_staging(&mut self, staged: usize, padded: usize) -> IoBuf {
        let full = align_down(staged as u64) as usize;
        let mut staging = self.staging.take().expect("writable");
        staging.as_bytes_mut()[staged..padded].fill(0);
        if let Some(cache) = &self.cache {
            let pages = &staging.as_bytes()[..full];
            cache
                .borrow_mut()
                .insert_written(self.id, self.staging_pos, pages);
        }
        if staged > full {
            let partial = &staging.as_bytes()[full..staged];
            self.head = Some(block_holding(self.file.as_ref(), partial));
        }
        self.staging_pos += padded as u64;
        let (out, kept) = if staged >= IN_PLACE_FLUSH {
            let fresh = self.file.alloc_buffer(staging.len());
            staging.truncate(padded);
            (staging, fresh)
        } else {
            let mut out = self.file.alloc_buffer(padded);
            out.as_bytes_mut()
                .copy_from_slice(&staging.as_bytes()[..padded]);
            (out, staging)
        };
        self.staging = Some(kept);
        assert_eq!(out.len(), padded);
        out
    }

    /// Flushes and fdatasyncs: after it returns, `durable() == size()`.
    pub async fn sync(&mut self) -> Result<()> {
        self.flush().await?;
        if self.durable == self.size {
            return Ok(());
        }
        if let Err(e) = self.file.fdatasync().await {
            return Err(self.poison("fdatasync", e));
        }
        self.durable = self.size;
        self.assert_invariants();
        Ok(())
    }

    /// Makes the file read-only: flush, trim the zero padding so the file ends at its last
    /// byte, fdatasync, and release the staging buffer. A file untouched since it was opened
    /// (an idle partition's, at shutdown) needs neither trim nor sync.
    pub async fn seal(&mut self) -> Result<()> {
        if self.is_sealed() {
            return Ok(());
        }
        self.flush().await?;
        assert!(self.file_len >= self.size, "flushed bytes are in the file");
        let trim = self.file_len > self.size;
        if trim {
            if let Err(e) = self.file.truncate(self.size).await {
                return Err(self.poison("truncate", e));
            }
            self.file_len = self.size;
        }
        // One fdatasync covers the data and the new size (needed to read the data back).
        if trim || self.durable < self.size {
            if let Err(e) = self.file.fdatasync().await {
                return Err(self.poison("fdatasync", e));
            }
        }
        self.durable = self.size;
        self.drop_staging();
        self.staging_pos = self.size;
        self.assert_invariants();
        Ok(())
    }

    /// After sealing: trades the writable descriptor for a read-only one, which the storage
    /// may pool (close when idle, reopen on use). If that open fails (no descriptors left),
    /// the writable one is kept: nothing is lost but the saving.
    pub async fn reopen_read_only(&mut self, storage: &dyn Storage) {
        assert!(self.is_sealed(), "only a sealed file is reopened read-only");
        self.read_ahead.cancel();
        match storage.open(&self.path, OpenMode::ReadOnly).await {
            Ok(read_only) => {
                let writable = std::mem::replace(&mut self.file, read_only);
                if let Err(e) = writable.close().await {
                    tracing::warn!(file = %self.path.display(), error = %e, "closing the writable descriptor of a sealed segment");
                }
            }
            Err(e) => {
                tracing::warn!(file = %self.path.display(), error = %e, "keeping the writable descriptor of a sealed segment");
            }
        }
    }

    /// Seals (when writable and healthy) and closes the file.
    pub async fn close(mut self) -> Result<()> {
        self.read_ahead.cancel();
        let sealed = if self.poisoned.is_none() {
            self.seal().await
        } else {
            self.drain().await
        };
        self.drop_staging();
        let file = self.file.clone();
        let path = self.path.clone();
        drop(self);
        file.close()
            .await
            .map_err(|e| Error::io("close", path, e))?;
        sealed
    }

    /// Drops the file without flushing or sealing (after a failure, before recovery
    /// reopens it): waits for writes in flight, ignores their errors, closes the handle.
    pub async fn abandon(mut self) {
        self.read_ahead.cancel();
        let _ = self.drain().await;
        self.drop_staging();
        let _ = self.file.clone().close().await;
    }

    /// Forgets cached pages of `[pos, pos + len)` (found damaged): the next read of them
    /// goes to the device.
    pub fn forget_cached(&self, pos: u64, len: usize) {
        if let Some(cache) = &self.cache {
            cache.borrow_mut().forget(self.id, pos, len);
        }
    }

    /// Whether `batch` (bytes `read_chain` returned from `pos`) is cached bytes whose CRC
    /// was checked while cached.
    pub fn crc_checked(&self, pos: u64, batch: &ByteChain) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|c| c.borrow().crc_checked(self.id, pos, batch))
    }

    /// Records that `batch` (bytes `read_chain` returned from `pos`) passed its CRC check.
    pub fn note_crc_checked(&self, pos: u64, batch: &ByteChain) {
        if let Some(cache) = &self.cache {
            cache.borrow_mut().note_crc_checked(self.id, pos, batch);
        }
    }

    /// Reads `[pos, pos + want)`, all of it on the device, through the page cache when
    /// there is one, keeping read-ahead going for a sequential reader.
    async fn read_device(&mut self, pos: u64, want: usize) -> std::io::Result<ByteChain> {
        let Some(cache) = &self.cache else {
            let read = self.file.read_at(pos, want);
            return awake_until(read).await.map(ByteChain::from);
        };
        let end = pos + want as u64;
        self.read_ahead.before_read(pos, end).await;
        // A reader waits for this one (read-ahead's own reads, in the background, do not).
        let read = read_through(cache, self.file.as_ref(), self.id, pos, want);
        let chunk = awake_until(read).await?;
        // Read ahead only over bytes no write in flight or staged tail will change.
        let stable_end = self.written.min(self.staged_start());
        let source = Source {
            file: &self.file,
            file_id: self.id,
            cache,
            stable_end,
        };
        self.read_ahead.after_read(pos, end, source);
        Ok(chunk)
    }

    /// Reads up to `len` bytes at `pos` (fewer at the end of the data), as one buffer.
    pub async fn read_at(&mut self, pos: u64, len: usize) -> Result<Vec<u8>> {
        Ok(self.read_chain(pos, len).await?.copy_range(0, len))
    }

    /// Reads up to `len` bytes at `pos` (fewer at the end of the data), sharing the page
    /// cache's pages instead of copying them. Bytes still staged in memory are copied from
    /// the staging buffer; bytes of writes in flight are read after they land.
    pub async fn read_chain(&mut self, pos: u64, len: usize) -> Result<ByteChain> {
        let end = (pos + len as u64).min(self.size);
        let mut out = ByteChain::default();
        if pos >= end {
            return Ok(out);
        }
        let held_from = self.staged_start();
        let disk_end = end.min(held_from);
        if pos < disk_end {
            if self.in_flight.iter().any(|w| w.end > pos) {
                self.drain().await?;
            }
            let want = (disk_end - pos) as usize;
            let chunk = self
                .read_device(pos, want)
                .await
                .map_err(|e| Error::io("read", &self.path, e))?;
            if chunk.len() < want {
                return Err(Error::corruption(
                    &self.path,
                    pos + chunk.len() as u64,
                    format!("file ends early: wanted {want} bytes, read {}", chunk.len()),
                ));
            }
            out = chunk;
        }
        if end > held_from {
            let from = pos.max(held_from);
            let held = match &self.head {
                Some(head) => head,
                None => self
                    .staging
                    .as_ref()
                    .expect("bytes past staging_pos are staged"),
            };
            let a = (from - held_from) as usize;
            let b = (end - held_from) as usize;
            out.push(Bytes::copy_from_slice(&held.as_bytes()[a..b]));
        }
        Ok(out)
    }
}

impl Drop for LogFile {
    /// A file dropped without close (an error path) still gives its grant back.
    fn drop(&mut self) {
        self.release_grant();
    }
}

/// A one-block buffer holding `bytes` (a partial block) and zeros after them.
fn block_holding(file: &dyn StorageFile, bytes: &[u8]) -> IoBuf {
    let mut block = file.alloc_buffer(BLOCK as usize);
    block.as_bytes_mut()[..bytes.len()].copy_from_slice(bytes);
    block.as_bytes_mut()[bytes.len()..].fill(0);
    block
}
