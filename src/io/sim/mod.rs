//! `SimStorage`: an in-memory file system for fault-injection and crash tests, as hostile
//! as a real disk is allowed to be (FORMAT.md, "Media assumptions").
//!
//! Each file keeps *volatile* bytes (what the running process sees), *durable* bytes (the
//! state at its last fdatasync) and the writes and truncates completed since then. Tests can:
//! - crash the "process" or fail with any errno at the n-th write, fdatasync, read or
//!   metadata operation (create, truncate, rename, remove, directory fsync; an atomic replace
//!   is made of those steps) — see [`FaultPoint`];
//! - make the disk full, or make reads of a byte range return flipped bits;
//! - run adversarially ([`SimStorage::adversarial`]): every write, fdatasync and read takes a
//!   seeded random time, so writes in flight complete out of order;
//! - then [`crash`](SimStorage::crash) in one of the ways [`CrashKind`] lists.
//!
//! Invariants of direct I/O are asserted (a violation panics the test): writes are
//! `BLOCK`-aligned, and no two writes in flight to one file overlap.
//!
//! Directory changes are journaled as ext4 does: an fdatasync or directory fsync commits
//! all of them; a power loss may undo the ones after the last commit (newest first).
//! Handles opened before a crash fail every later I/O, like a dead process's descriptors.

mod faults;
mod file;
mod power;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use faults::FaultPlan;
pub use faults::FaultPoint;
use file::{PendingWrite, SimFile, SimHandle};

use super::storage::{IoFuture, OpenMode, Storage, StorageFile};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashKind {
    /// `kill -9`: completed writes stay; each write still in flight lands or not.
    ProcessKill,
    /// Power cut, worst case without damage: only fdatasync'd bytes stay, and every
    /// directory change since the last commit is undone.
    PowerLoss,
    /// Power cut while writes were pending: each unsynced write lands whole, not at all, or
    /// torn (a random set of its 512-byte sectors); each unsynced truncate happens or not;
    /// a random suffix of uncommitted directory changes is undone. Sectors are atomic.
    TornPowerLoss { seed: u64 },
    /// As `TornPowerLoss`, but a sector being written when power fails may hold garbage,
    /// even where it rewrote durable bytes (media without power-loss protection). The engine
    /// must never serve such bytes; it may lose acknowledged records.
    DamagingPowerLoss { seed: u64 },
}

/// A directory change not yet committed by an fdatasync or directory fsync.
#[derive(Clone)]
enum DirChange {
    Created(PathBuf),
    Renamed {
        from: PathBuf,
        to: PathBuf,
        replaced: Option<SimFile>,
    },
    Removed(PathBuf, SimFile),
    /// A directory renamed with everything in it.
    DirRenamed {
        from: PathBuf,
        to: PathBuf,
    },
}

/// The names of those of `paths` directly inside `dir` (which must exist).
fn children<'a>(
    s: &State,
    dir: &Path,
    paths: impl Iterator<Item = &'a PathBuf>,
) -> std::io::Result<Vec<String>> {
    if !s.dirs.contains(dir) {
        return Err(not_found(dir));
    }
    Ok(paths
        .filter(|p| p.parent() == Some(dir))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect())
}

/// Moves a directory and everything under it (files and subdirectories) to a new name.
fn move_subtree(s: &mut State, from: &Path, to: &Path) {
    let moved = |p: &Path| to.join(p.strip_prefix(from).expect("under from"));
    let files: Vec<PathBuf> = s
        .files
        .keys()
        .filter(|p| p.starts_with(from))
        .cloned()
        .collect();
    for p in files {
        let f = s.files.remove(&p).expect("listed");
        s.files.insert(moved(&p), f);
    }
    let dirs: Vec<PathBuf> = s
        .dirs
        .iter()
        .filter(|p| p.starts_with(from))
        .cloned()
        .collect();
    for p in dirs {
        s.dirs.remove(&p);
        s.dirs.insert(moved(&p));
    }
}

/// Seeded delays: how many times an operation yields to other tasks before completing.
#[derive(Clone)]
struct Latency {
    rng: fastrand::Rng,
    max_yields: u32,
}

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, SimFile>,
    dirs: BTreeSet<PathBuf>,
    generation: u64,
    plan: FaultPlan,
    crashed: bool,
    dir_journal: Vec<DirChange>,
    /// Writes submitted and not yet completed, by id.
    in_flight: BTreeMap<u64, PendingWrite>,
    next_write_id: u64,
    /// Writes that covered both written and unwritten blocks of their file.
    mixed_writes: u64,
    latency: Option<Latency>,
    /// Reads covering these ranges return every byte in them with a bit flipped.
    bad_reads: Vec<(PathBuf, Range<u64>)>,
}

impl State {
    fn begin(&mut self, point: FaultPoint) -> std::io::Result<()> {
        self.plan.begin(point, &mut self.crashed)
    }

    /// How many times the next operation yields (0 unless adversarial).
    fn delay(&mut self) -> u32 {
        self.latency
            .as_mut()
            .map_or(0, |l| l.rng.u32(0..=l.max_yields))
    }

    /// An fdatasync or directory fsync: ext4 commits its whole journal.
    fn commit_dir_journal(&mut self) {
        self.dir_journal.clear();
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

/// Yields to the executor `n` times: lets other tasks (other writes) run first.
async fn yield_times(n: u32) {
    for _ in 0..n {
        futures_lite::future::yield_now().await;
    }
}

impl SimStorage {
    /// A polite disk: every I/O completes at once and in order.
    pub fn new() -> Self {
        Self::default()
    }

    /// A disk whose writes, fdatasyncs and reads each take a seeded random time (up to 8
    /// yields), so concurrent writes complete out of order; crashes use the same seed.
    pub fn adversarial(seed: u64) -> Self {
        let sim = Self::default();
        sim.state.borrow_mut().latency = Some(Latency {
            rng: fastrand::Rng::with_seed(seed),
            max_yields: 8,
        });
        sim
    }

    /// As `Rc<dyn Storage>` for the engine.
    pub fn as_storage(&self) -> Rc<dyn Storage> {
        Rc::new(self.clone())
    }

    /// Operations of this kind attempted so far (all files).
    pub fn count(&self, point: FaultPoint) -> u64 {
        self.state.borrow().plan.count(point)
    }

    /// The n-th operation of this kind from now (1 = the next one) crashes the process:
    /// it and everything after it fail until [`crash`](Self::crash).
    pub fn crash_at(&self, point: FaultPoint, n: u64) {
        self.state.borrow_mut().plan.crash_at(point, n);
    }

    /// The n-th operation of this kind from now fails with `errno`, changing nothing.
    pub fn fail_at(&self, point: FaultPoint, n: u64, errno: i32) {
        self.state.borrow_mut().plan.fail_at(point, n, errno);
    }

    /// While set, every write fails with ENOSPC.
    pub fn set_disk_full(&self, full: bool) {
        self.state.borrow_mut().plan.disk_full = full;
    }

    /// Reads of `range` in `path` return its bytes with a bit flipped (a bad sector, or a
    /// flip on the bus), until [`clear_faults`](Self::clear_faults). Stored bytes are intact.
    pub fn corrupt_reads(&self, path: &Path, range: Range<u64>) {
        self.state
            .borrow_mut()
            .bad_reads
            .push((path.to_path_buf(), range));
    }

    /// Flips a bit in every stored byte of `range` (volatile and durable): damage at rest.
    pub fn damage(&self, path: &Path, range: Range<u64>) {
        let mut s = self.state.borrow_mut();
        if let Some(f) = s.files.get_mut(path) {
            f.flip(range);
        }
    }

    /// Disarms every pending fault and bad read (not a crash that already happened).
    pub fn clear_faults(&self) {
        let mut s = self.state.borrow_mut();
        s.plan.clear();
        s.bad_reads.clear();
    }

    /// Writes submitted and not yet completed (all files).
    pub fn writes_in_flight(&self) -> usize {
        self.state.borrow().in_flight.len()
    }

    /// Writes so far that covered both blocks an earlier write filled and blocks none did
    /// (say, allocated ahead): on ext4 each of them leaves the shard for a worker thread.
    pub fn mixed_writes(&self) -> u64 {
        self.state.borrow().mixed_writes
    }

    pub fn has_crashed(&self) -> bool {
        self.state.borrow().crashed
    }

    /// The volatile bytes of a file, as the running process would read them.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        self.state
            .borrow()
            .files
            .get(path)
            .map(|f| f.volatile.clone())
    }

    /// An independent copy of the disk as it is now (no fault plans, no writes in flight),
    /// to run one history per crash point from the same start.
    pub fn fork(&self) -> SimStorage {
        let s = self.state.borrow();
        let mut plan = s.plan.clone();
        plan.clear();
        let copy = State {
            files: s.files.clone(),
            dirs: s.dirs.clone(),
            generation: s.generation,
            plan,
            dir_journal: s.dir_journal.clone(),
            latency: s.latency.clone(),
            ..State::default()
        };
        SimStorage {
            state: Rc::new(RefCell::new(copy)),
        }
    }

    /// Ends the "process": applies the crash to every file, clears all fault plans and
    /// invalidates open handles. The disk is then ready for a recovery.
    pub fn crash(&self, kind: CrashKind) {
        let mut s = self.state.borrow_mut();
        power::apply(&mut s, kind);
        s.generation += 1;
        s.crashed = false;
        s.plan.clear();
        s.bad_reads.clear();
    }

    fn handle(&self, s: &State, path: PathBuf, writable: bool) -> Rc<dyn StorageFile> {
        Rc::new(SimHandle {
            sim: self.clone(),
            path,
            generation: s.generation,
            writable,
        })
    }
}

/// The metadata steps, done at once (the simulated disk has no journal to wait on).
impl SimStorage {
    fn remove_now(&self, path: &Path) -> std::io::Result<()> {
        let mut s = self.state.borrow_mut();
        s.begin(FaultPoint::Meta)?;
        let f = s.files.remove(path).ok_or_else(|| not_found(path))?;
        s.dir_journal
            .push(DirChange::Removed(path.to_path_buf(), f));
        Ok(())
    }

    fn rename_now(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let mut s = self.state.borrow_mut();
        s.begin(FaultPoint::Meta)?;
        if s.dirs.contains(from) {
            if s.dirs.contains(to) || s.files.contains_key(to) {
                return Err(os_err(libc::EEXIST));
            }
            move_subtree(&mut s, from, to);
            let (from, to) = (from.to_path_buf(), to.to_path_buf());
            s.dir_journal.push(DirChange::DirRenamed { from, to });
            return Ok(());
        }
        let f = s.files.remove(from).ok_or_else(|| not_found(from))?;
        let replaced = s.files.insert(to.to_path_buf(), f);
        s.dir_journal.push(DirChange::Renamed {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            replaced,
        });
        Ok(())
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
            let exists = s.files.contains_key(&path);
            match mode {
                OpenMode::CreateNew if exists => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AlreadyExists,
                        format!("{} exists", path.display()),
                    ));
                }
                OpenMode::CreateNew => {
                    s.begin(FaultPoint::Meta)?;
                    s.files.insert(path.clone(), SimFile::default());
                    s.dir_journal.push(DirChange::Created(path.clone()));
                }
                OpenMode::ReadWrite | OpenMode::ReadOnly if !exists => {
                    return Err(not_found(&path));
                }
                OpenMode::ReadWrite | OpenMode::ReadOnly => {}
            }
            Ok(self.handle(&s, path, mode != OpenMode::ReadOnly))
        })
    }

    fn read_file(&self, path: &Path) -> IoFuture<'_, Vec<u8>> {
        let path = path.to_path_buf();
        Box::pin(async move {
            let file = self.open(&path, OpenMode::ReadOnly).await?;
            let size = file.size().await?;
            file.read_at(0, size as usize).await
        })
    }

    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let s = self.state.borrow();
        children(&s, dir, s.files.keys())
    }

    fn list_dirs(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let s = self.state.borrow();
        children(&s, dir, s.dirs.iter())
    }

    fn exists(&self, path: &Path) -> bool {
        let s = self.state.borrow();
        s.files.contains_key(path) || s.dirs.contains(path)
    }

    fn remove(&self, path: &Path) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(self.remove_now(path)))
    }

    fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()> {
        Box::pin(std::future::ready(self.rename_now(from, to)))
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

    /// syncfs: every completed write of every file, and every directory change.
    fn sync_file_system(&self, _dir: &Path) -> IoFuture<'_, ()> {
        Box::pin(async move {
            let mut s = self.state.borrow_mut();
            s.begin(FaultPoint::Sync)?;
            for f in s.files.values_mut() {
                f.durable = f.volatile.clone();
                f.unsynced.clear();
            }
            s.commit_dir_journal();
            Ok(())
        })
    }

    fn sync_dir(&self, _dir: &Path) -> IoFuture<'_, ()> {
        Box::pin(async move {
            let mut s = self.state.borrow_mut();
            s.begin(FaultPoint::Meta)?;
            s.commit_dir_journal();
            Ok(())
        })
    }
}
