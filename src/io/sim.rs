//! `SimStorage`: an in-memory file system for fault-injection and crash tests.
//!
//! Each file keeps *volatile* bytes (what the running process sees) and *durable* bytes (what
//! survives power loss: the state at the last fdatasync). Tests can:
//! - crash at the N-th write or fdatasync (that I/O and everything after it fails with EIO
//!   until `crash` is called),
//! - fail the N-th write or fdatasync with any errno (ENOSPC, EIO) without changing bytes,
//! - make the disk full (every write fails with ENOSPC) and free it again,
//! - then `crash`: a process kill keeps volatile bytes; a power loss keeps only durable
//!   bytes, optionally with a torn tail (part of the lost writes plus garbage).
//!
//! Directory operations (create, rename, remove) are durable at once: the engine fsyncs the
//! directory after each one that matters, and modelling lost renames is left out. A crash
//! can be armed at the N-th rename or remove (the steps of deletions, cleanings and swaps).
//! Handles opened before a crash fail every later I/O, like a dead process's descriptors.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::storage::{IoBuf, IoFuture, OpenMode, Storage, StorageFile};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashKind {
    /// `kill -9`: completed writes stay.
    ProcessKill,
    /// Power cut: only fdatasync'd bytes stay.
    PowerLoss,
    /// Power cut during a write: the durable bytes, then a prefix of the lost bytes, then
    /// up to 512 bytes of garbage (a torn last block).
    TornPowerLoss { seed: u64 },
}

#[derive(Default, Clone)]
struct SimFile {
    volatile: Vec<u8>,
    durable: Vec<u8>,
}

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, SimFile>,
    dirs: BTreeSet<PathBuf>,
    generation: u64,
    writes: u64,
    syncs: u64,
    crash_at_write: Option<u64>,
    crash_at_sync: Option<u64>,
    /// Renames and removes so far, and the one that crashes.
    dir_ops: u64,
    crash_at_dir_op: Option<u64>,
    fail_write: Option<(u64, i32)>,
    fail_sync: Option<(u64, i32)>,
    disk_full: bool,
    crashed: bool,
}

impl State {
    /// Counts a write and applies the fault plan to it.
    fn begin_write(&mut self) -> std::io::Result<()> {
        self.writes += 1;
        let n = self.writes;
        if self.crash_at_write == Some(n) {
            self.crashed = true;
            return Err(crashed_err());
        }
        if let Some((at, errno)) = self.fail_write {
            if at == n {
                self.fail_write = None;
                return Err(os_err(errno));
            }
        }
        if self.disk_full {
            return Err(os_err(libc::ENOSPC));
        }
        Ok(())
    }

    /// Counts a rename or remove; fails it (and everything after) once crashed.
    fn begin_dir_op(&mut self) -> std::io::Result<()> {
        if self.crashed {
            return Err(crashed_err());
        }
        self.dir_ops += 1;
        if self.crash_at_dir_op == Some(self.dir_ops) {
            self.crashed = true;
            return Err(crashed_err());
        }
        Ok(())
    }

    /// Counts an fdatasync and applies the fault plan to it.
    fn begin_sync(&mut self) -> std::io::Result<()> {
        self.syncs += 1;
        let n = self.syncs;
        if self.crash_at_sync == Some(n) {
            self.crashed = true;
            return Err(crashed_err());
        }
        if let Some((at, errno)) = self.fail_sync {
            if at == n {
                self.fail_sync = None;
                return Err(os_err(errno));
            }
        }
        Ok(())
    }
}

/// Cheap to clone: all clones share one simulated disk.
#[derive(Clone, Default)]
pub struct SimStorage {
    state: Rc<RefCell<State>>,
}

fn os_err(errno: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(errno)
}

fn crashed_err() -> std::io::Error {
    std::io::Error::other("simulated crash: the process is gone")
}

fn not_found(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

impl SimStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// As `Rc<dyn Storage>` for the engine.
    pub fn as_storage(&self) -> Rc<dyn Storage> {
        Rc::new(self.clone())
    }

    /// Writes attempted so far (all files).
    pub fn writes(&self) -> u64 {
        self.state.borrow().writes
    }

    pub fn syncs(&self) -> u64 {
        self.state.borrow().syncs
    }

    /// The N-th write from now (1 = the next one) crashes the process.
    pub fn crash_at_write(&self, n: u64) {
        let mut s = self.state.borrow_mut();
        s.crash_at_write = Some(s.writes + n);
    }

    pub fn crash_at_sync(&self, n: u64) {
        let mut s = self.state.borrow_mut();
        s.crash_at_sync = Some(s.syncs + n);
    }

    /// The N-th rename or remove from now crashes the process before it happens.
    pub fn crash_at_dir_op(&self, n: u64) {
        let mut s = self.state.borrow_mut();
        s.crash_at_dir_op = Some(s.dir_ops + n);
    }

    /// An independent copy of the disk as it is now (fault plans included), to run one
    /// history per crash point from the same start.
    pub fn fork(&self) -> SimStorage {
        let s = self.state.borrow();
        let copy = State {
            files: s.files.clone(),
            dirs: s.dirs.clone(),
            generation: s.generation,
            writes: s.writes,
            syncs: s.syncs,
            dir_ops: s.dir_ops,
            ..State::default()
        };
        SimStorage {
            state: Rc::new(RefCell::new(copy)),
        }
    }

    /// The N-th write from now fails with `errno`, leaving every byte as it was.
    pub fn fail_write(&self, n: u64, errno: i32) {
        let mut s = self.state.borrow_mut();
        s.fail_write = Some((s.writes + n, errno));
    }

    pub fn fail_sync(&self, n: u64, errno: i32) {
        let mut s = self.state.borrow_mut();
        s.fail_sync = Some((s.syncs + n, errno));
    }

    /// While set, every write fails with ENOSPC.
    pub fn set_disk_full(&self, full: bool) {
        self.state.borrow_mut().disk_full = full;
    }

    /// Disarms every pending fault (not a crash that already happened).
    pub fn clear_faults(&self) {
        let mut s = self.state.borrow_mut();
        s.crash_at_write = None;
        s.crash_at_sync = None;
        s.crash_at_dir_op = None;
        s.fail_write = None;
        s.fail_sync = None;
        s.disk_full = false;
    }

    pub fn has_crashed(&self) -> bool {
        self.state.borrow().crashed
    }

    /// Ends the "process": applies the crash to every file, clears all fault plans and
    /// invalidates open handles. The disk is then ready for a recovery.
    pub fn crash(&self, kind: CrashKind) {
        let mut s = self.state.borrow_mut();
        let mut rng = match kind {
            CrashKind::TornPowerLoss { seed } => Some(fastrand::Rng::with_seed(seed)),
            _ => None,
        };
        for f in s.files.values_mut() {
            match kind {
                CrashKind::ProcessKill => f.durable = f.volatile.clone(),
                CrashKind::PowerLoss => f.volatile = f.durable.clone(),
                CrashKind::TornPowerLoss { .. } => {
                    let rng = rng.as_mut().unwrap();
                    let mut out = f.durable.clone();
                    let common = out
                        .iter()
                        .zip(&f.volatile)
                        .take_while(|(a, b)| a == b)
                        .count();
                    if f.volatile.len() > common {
                        let lost = &f.volatile[common..];
                        let keep = rng.usize(0..=lost.len());
                        out.truncate(common);
                        out.extend_from_slice(&lost[..keep]);
                        let garbage = rng.usize(0..=512);
                        out.extend((0..garbage).map(|_| rng.u8(..)));
                    }
                    f.durable = out.clone();
                    f.volatile = out;
                }
            }
        }
        s.generation += 1;
        s.crashed = false;
        s.crash_at_write = None;
        s.crash_at_sync = None;
        s.crash_at_dir_op = None;
        s.fail_write = None;
        s.fail_sync = None;
        s.disk_full = false;
    }
}

struct SimHandle {
    sim: SimStorage,
    path: PathBuf,
    generation: u64,
    writable: bool,
}

impl SimHandle {
    fn check(&self) -> std::io::Result<()> {
        let s = self.sim.state.borrow();
        if s.crashed || s.generation != self.generation {
            return Err(crashed_err());
        }
        Ok(())
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
            self.check()?;
            if !self.writable {
                return Err(os_err(libc::EBADF));
            }
            let mut s = self.sim.state.borrow_mut();
            s.begin_write()?;
            let f = s
                .files
                .get_mut(&self.path)
                .ok_or_else(|| not_found(&self.path))?;
            let bytes = buf.as_bytes();
            let end = pos as usize + bytes.len();
            if f.volatile.len() < end {
                f.volatile.resize(end, 0);
            }
            f.volatile[pos as usize..end].copy_from_slice(bytes);
            Ok(bytes.len())
        })
    }

    fn read_at(&self, pos: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        Box::pin(async move {
            self.check()?;
            let s = self.sim.state.borrow();
            let f = s
                .files
                .get(&self.path)
                .ok_or_else(|| not_found(&self.path))?;
            let start = (pos as usize).min(f.volatile.len());
            let end = (pos as usize + len).min(f.volatile.len());
            Ok(f.volatile[start..end].to_vec())
        })
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(async move {
            self.check()?;
            let mut s = self.sim.state.borrow_mut();
            s.begin_sync()?;
            let f = s
                .files
                .get_mut(&self.path)
                .ok_or_else(|| not_found(&self.path))?;
            f.durable = f.volatile.clone();
            Ok(())
        })
    }

    fn truncate(&self, size: u64) -> IoFuture<'_, ()> {
        Box::pin(async move {
            self.check()?;
            let mut s = self.sim.state.borrow_mut();
            let f = s
                .files
                .get_mut(&self.path)
                .ok_or_else(|| not_found(&self.path))?;
            f.volatile.resize(size as usize, 0);
            Ok(())
        })
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(async move {
            self.check()?;
            let s = self.sim.state.borrow();
            let f = s
                .files
                .get(&self.path)
                .ok_or_else(|| not_found(&self.path))?;
            Ok(f.volatile.len() as u64)
        })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move { Ok(()) })
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn StorageFile>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let mut s = self.state.borrow_mut();
            if s.crashed {
                return Err(crashed_err());
            }
            let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
            if !s.dirs.contains(&parent) {
                return Err(not_found(&parent));
            }
            match mode {
                OpenMode::CreateNew => {
                    if s.files.contains_key(&path) {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::AlreadyExists,
                            format!("{} exists", path.display()),
                        ));
                    }
                    s.files.insert(path.clone(), SimFile::default());
                }
                OpenMode::ReadWrite | OpenMode::ReadOnly => {
                    if !s.files.contains_key(&path) {
                        return Err(not_found(&path));
                    }
                }
            }
            Ok(Rc::new(SimHandle {
                sim: self.clone(),
                path,
                generation: s.generation,
                writable: mode != OpenMode::ReadOnly,
            }) as Rc<dyn StorageFile>)
        })
    }

    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let s = self.state.borrow();
            if s.crashed {
                return Err(crashed_err());
            }
            s.files
                .get(&path)
                .map(|f| f.volatile.clone())
                .ok_or_else(|| not_found(&path))
        })
    }

    fn write_file_atomic(&self, path: &Path, data: Vec<u8>) -> IoFuture<'_, ()> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let mut s = self.state.borrow_mut();
            if s.crashed {
                return Err(crashed_err());
            }
            // Counts as one write and one sync, so plans can target it.
            s.begin_write()?;
            s.begin_sync()?;
            s.files.insert(
                path,
                SimFile {
                    volatile: data.clone(),
                    durable: data,
                },
            );
            Ok(())
        })
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let s = self.state.borrow();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(s.files
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn exists(&self, path: &Path) -> bool {
        let s = self.state.borrow();
        s.files.contains_key(path) || s.dirs.contains(path)
    }

    fn remove(&self, path: &Path) -> std::io::Result<()> {
        let mut s = self.state.borrow_mut();
        s.begin_dir_op()?;
        s.files
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let mut s = self.state.borrow_mut();
        s.begin_dir_op()?;
        let f = s.files.remove(from).ok_or_else(|| not_found(from))?;
        s.files.insert(to.to_path_buf(), f);
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        let mut s = self.state.borrow_mut();
        let mut d = Some(dir);
        while let Some(p) = d {
            s.dirs.insert(p.to_path_buf());
            d = p.parent();
        }
        Ok(())
    }

    fn sync_dir(&self, _dir: &Path) -> IoFuture<'_, ()> {
        Box::pin(async move { Ok(()) })
    }
}
