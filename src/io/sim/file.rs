//! One simulated file: its bytes as the process sees them and as they are durable, the
//! changes in between, and the handle the engine does I/O through.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{crashed_err, not_found, os_err, yield_times, FaultPoint, SimStorage, State};
use crate::io::storage::{IoBuf, IoFuture, StorageFile};
use crate::io::BLOCK;

/// A change completed since the file's last fdatasync: what a power loss may keep, tear or
/// drop.
#[derive(Clone)]
pub(super) enum Unsynced {
    Write { pos: u64, data: Vec<u8> },
    Truncate(u64),
}

#[derive(Default, Clone)]
pub(super) struct SimFile {
    pub(super) volatile: Vec<u8>,
    pub(super) durable: Vec<u8>,
    pub(super) unsynced: Vec<Unsynced>,
    /// Blocks some completed write covered (not those only grown or allocated): as a file
    /// system tells written extents from unwritten ones.
    written_blocks: Vec<bool>,
}

impl SimFile {
    /// Whether `range` covers both written blocks and blocks no write covered yet: ext4
    /// cannot complete such a direct write without blocking, so io_uring hands it to a
    /// worker thread.
    fn mixes_written_and_unwritten(&self, range: Range<u64>) -> bool {
        let written = |b: u64| {
            self.written_blocks
                .get(b as usize)
                .copied()
                .unwrap_or(false)
        };
        let blocks = range.start / BLOCK..range.end.div_ceil(BLOCK);
        let first = written(blocks.start);
        blocks.into_iter().any(|b| written(b) != first)
    }

    fn mark_written(&mut self, range: Range<u64>) {
        let end = range.end.div_ceil(BLOCK) as usize;
        if self.written_blocks.len() < end {
            self.written_blocks.resize(end, false);
        }
        self.written_blocks[(range.start / BLOCK) as usize..end].fill(true);
    }

    /// After a truncate, a crash or a rename: blocks past `len` bytes read as never written.
    pub(super) fn forget_written_past(&mut self, len: u64) {
        self.written_blocks.truncate(len.div_ceil(BLOCK) as usize);
    }

    pub(super) fn flip(&mut self, range: Range<u64>) {
        for bytes in [&mut self.volatile, &mut self.durable] {
            let end = (range.end as usize).min(bytes.len());
            let start = (range.start as usize).min(end);
            bytes[start..end].iter_mut().for_each(|b| *b ^= 0x10);
        }
    }
}

/// Writes `data` at `pos` into `bytes`, growing it with zeros as needed.
pub(super) fn write_into(bytes: &mut Vec<u8>, pos: u64, data: &[u8]) {
    let (start, end) = (pos as usize, pos as usize + data.len());
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[start..end].copy_from_slice(data);
}

/// A write submitted and not completed: the kernel may still land it after a kill.
pub(super) struct PendingWrite {
    pub(super) path: PathBuf,
    pub(super) pos: u64,
    pub(super) data: Vec<u8>,
}

impl PendingWrite {
    fn range(&self) -> Range<u64> {
        self.pos..self.pos + self.data.len() as u64
    }
}

pub(super) struct SimHandle {
    pub(super) sim: SimStorage,
    pub(super) path: PathBuf,
    pub(super) generation: u64,
    pub(super) writable: bool,
}

/// Forgets a pending write whose future was dropped before it completed.
struct PendingGuard<'a> {
    sim: &'a SimStorage,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.sim.state.borrow_mut().in_flight.remove(&self.id);
    }
}

impl SimHandle {
    /// Sets the file's length (never shortening it when `grow_only`): a metadata change
    /// that a power loss may keep or drop.
    fn resize(&self, size: u64, grow_only: bool) -> IoFuture<'_, ()> {
        Box::pin(async move {
            let mut s = self.sim.state.borrow_mut();
            self.live(&mut s)?;
            s.begin(FaultPoint::Meta)?;
            let f = self.live(&mut s)?;
            if !grow_only || size as usize > f.volatile.len() {
                f.volatile.resize(size as usize, 0);
                f.forget_written_past(size);
                f.unsynced.push(Unsynced::Truncate(size));
            }
            Ok(())
        })
    }

    fn live<'a>(&self, s: &'a mut State) -> std::io::Result<&'a mut SimFile> {
        if s.crashed || s.generation != self.generation {
            return Err(crashed_err());
        }
        s.files
            .get_mut(&self.path)
            .ok_or_else(|| not_found(&self.path))
    }

    /// Counts and checks a write, asserts direct-I/O rules, and registers it in flight.
    fn submit_write(&self, data: &[u8], pos: u64) -> std::io::Result<(u64, u32)> {
        let mut s = self.sim.state.borrow_mut();
        self.live(&mut s)?;
        if !self.writable {
            return Err(os_err(libc::EBADF));
        }
        s.begin(FaultPoint::Write)?;
        let write = PendingWrite {
            path: self.path.clone(),
            pos,
            data: data.to_vec(),
        };
        assert!(
            pos.is_multiple_of(BLOCK) && (data.len() as u64).is_multiple_of(BLOCK),
            "direct write to {} not block-aligned: {} bytes at {pos}",
            self.path.display(),
            data.len()
        );
        let mine = write.range();
        if self.live(&mut s)?.mixes_written_and_unwritten(mine.clone()) {
            s.mixed_writes += 1;
        }
        for other in s.in_flight.values().filter(|w| w.path == self.path) {
            let theirs = other.range();
            assert!(
                mine.end <= theirs.start || theirs.end <= mine.start,
                "overlapping writes in flight to {}: {mine:?} and {theirs:?}",
                self.path.display()
            );
        }
        let id = s.next_write_id;
        s.next_write_id += 1;
        s.in_flight.insert(id, write);
        Ok((id, s.delay()))
    }

    /// The write lands, unless the process crashed meanwhile (then `crash` decided).
    fn complete_write(&self, id: u64) -> std::io::Result<usize> {
        let mut s = self.sim.state.borrow_mut();
        let write = s.in_flight.remove(&id).ok_or_else(crashed_err)?;
        let f = self.live(&mut s)?;
        write_into(&mut f.volatile, write.pos, &write.data);
        f.mark_written(write.range());
        let n = write.data.len();
        f.unsynced.push(Unsynced::Write {
            pos: write.pos,
            data: write.data,
        });
        Ok(n)
    }

    /// Bytes as a read returns them: the bad ranges armed by `corrupt_reads` come back
    /// with a bit flipped.
    fn read_now(&self, pos: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let mut s = self.sim.state.borrow_mut();
        let f = self.live(&mut s)?;
        let start = (pos as usize).min(f.volatile.len());
        let end = (pos as usize).saturating_add(len).min(f.volatile.len());
        let mut out = f.volatile[start..end].to_vec();
        for (path, bad) in &s.bad_reads {
            if path != &self.path {
                continue;
            }
            let from = bad.start.max(start as u64);
            let to = bad.end.min(end as u64);
            for at in from..to {
                out[(at - start as u64) as usize] ^= 0x10;
            }
        }
        Ok(out)
    }
}

impl StorageFile for SimHandle {
    fn path(&self) -> &Path {
        &self.path
    }

    fn alloc_buffer(&self, size: usize) -> IoBuf {
        IoBuf::Heap(vec![0; size])
    }

    fn write_at(&self, buf: IoBuf, pos: u64) -> IoFuture<'_, usize> {
        Box::pin(async move {
            let (id, delay) = self.submit_write(buf.as_bytes(), pos)?;
            let guard = PendingGuard { sim: &self.sim, id };
            yield_times(delay).await;
            std::mem::forget(guard);
            self.complete_write(id)
        })
    }

    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        Box::pin(async move {
            let delay = {
                let mut s = self.sim.state.borrow_mut();
                self.live(&mut s)?;
                s.begin(FaultPoint::Read)?;
                s.delay() / 4
            };
            yield_times(delay).await;
            self.read_now(pos, len)
        })
    }

    /// Covers what was completed when it was called (writes landing meanwhile are not).
    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(async move {
            let (snapshot, covered, delay) = {
                let mut s = self.sim.state.borrow_mut();
                self.live(&mut s)?;
                s.begin(FaultPoint::Sync)?;
                let f = self.live(&mut s)?;
                let snapshot = (f.volatile.clone(), f.unsynced.len());
                (snapshot.0, snapshot.1, s.delay())
            };
            yield_times(delay).await;
            let mut s = self.sim.state.borrow_mut();
            let f = self.live(&mut s)?;
            f.durable = snapshot;
            f.unsynced.drain(..covered);
            s.commit_dir_journal();
            Ok(())
        })
    }

    fn truncate(&self, size: u64) -> IoFuture<'_, ()> {
        self.resize(size, false)
    }

    /// Grows the file with zeros (a resize a power loss may keep or drop, as a truncate).
    fn allocate(&self, size: u64) -> IoFuture<'_, ()> {
        self.resize(size, true)
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(async move {
            let mut s = self.sim.state.borrow_mut();
            Ok(self.live(&mut s)?.volatile.len() as u64)
        })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move { Ok(()) })
    }
}
