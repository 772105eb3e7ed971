//! The process's dealings with the OS outside the data files (which go through `Storage`):
//! small text files (config files, the kernel's `/proc` tables), the data directory's lock
//! file, markers written at shutdown, background removal of trash, and the host's memory.
//! Every `std::fs` call outside `io/` and the offline tools lives here (`tests/tidy/`).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Reads a small text file whole.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

/// An exclusive advisory lock (flock) on a file that records the holder's pid.
pub struct PidLock {
    _file: File,
}

/// Why a [`PidLock`] was not taken.
#[non_exhaustive]
pub enum LockRefused {
    /// Another process holds it; its pid as it wrote it (empty when unknown).
    Held(String),
    Failed(std::io::Error),
}

/// Takes the lock on `path` (creating the file and its directory), writing our pid into it.
pub fn lock_with_pid(path: &Path) -> Result<PidLock, LockRefused> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(LockRefused::Failed)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(LockRefused::Failed)?;
    // SAFETY: a valid descriptor; flock has no memory-safety preconditions.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(LockRefused::Failed(e));
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        return Err(LockRefused::Held(holder.trim().to_string()));
    }
    let pid = std::process::id().to_string();
    file.set_len(0)
        .and_then(|_| file.rewind())
        .and_then(|_| file.write_all(pid.as_bytes()))
        .map_err(LockRefused::Failed)?;
    Ok(PidLock { _file: file })
}

/// Creates an empty marker file in `dir`, durably (the file and the directory entry).
pub fn write_marker(dir: &Path, name: &str) -> std::io::Result<()> {
    let file = File::create(dir.join(name))?;
    file.sync_all()?;
    File::open(dir)?.sync_all()
}

/// When `path` was last modified.
pub fn modified(path: &Path) -> std::io::Result<std::time::SystemTime> {
    std::fs::metadata(path)?.modified()
}

/// Replaces `path` with `data` atomically and durably: a temporary file written and
/// fsync'd, renamed over `path`, then the directory fsync'd (whole or absent after a crash).
pub fn write_file_durably(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp)?;
    file.write_all(data)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()
}

/// The pid of a live process holding socket `inode`, if any (scans `/proc/*/fd`).
pub fn socket_holder(inode: u64) -> Option<u32> {
    let target = format!("socket:[{inode}]");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|proc_entry| {
            let pid: u32 = proc_entry.file_name().to_str()?.parse().ok()?;
            let fds = std::fs::read_dir(proc_entry.path().join("fd")).ok()?;
            fds.flatten()
                .any(|fd| {
                    std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == target.as_str())
                })
                .then_some(pid)
        })
}

/// Removes directories in a background thread (never blocks a shard). Failures are logged;
/// `what` says what they were.
pub fn remove_dirs_in_background(dirs: Vec<PathBuf>, what: &'static str) {
    if dirs.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("shardlog-trash".into())
        .spawn(move || {
            for dir in dirs {
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    if e.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(dir = %dir.display(), error = %e, what, "background removal failed; retried at the next start");
                    }
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, what, "could not start the background removal thread; retried at the next start");
    }
}

/// Gives the allocator's free pages back to the OS (glibc's `malloc_trim`; elsewhere
/// nothing). Creating thousands of partitions frees its temporaries between the blocks the
/// new partitions keep, in several arenas (one per thread that allocated: shards and
/// glommio's blocking threads), and glibc keeps those pages resident: about 1 KB per
/// partition created. It walks every arena under its lock, so it runs after bulk work only.
pub fn release_free_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim has no preconditions; it only returns free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Resident set size of this process, from /proc/self/statm (-1 if unreadable).
pub fn rss_bytes() -> i64 {
    let pages = read_text(Path::new("/proc/self/statm"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<i64>().ok())
        .unwrap_or(-1);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages < 0 {
        -1
    } else {
        pages * page
    }
}

/// CPU time (user + system) of every thread of this process so far, in milliseconds: the
/// shards, the io_uring workers and the helper threads.
pub fn process_cpu_ms() -> u64 {
    // SAFETY: rusage is plain integers, for which all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own and pass by a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
    ms(usage.ru_utime) + ms(usage.ru_stime)
}

/// As root, drops the host's kernel page cache (`sync; echo 1 > /proc/sys/vm/drop_caches`);
/// otherwise leaves it alone.
pub fn drop_kernel_page_cache_as_root() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        tracing::debug!("not root: kernel page cache left alone");
        return;
    }
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    if let Err(e) = std::fs::write("/proc/sys/vm/drop_caches", b"1") {
        tracing::warn!(error = %e, "could not drop the kernel page cache");
    }
}

/// (total, usable) bytes of the file system holding `path` (Kafka's DescribeLogDirs v4
/// reports both; usable is what an unprivileged writer may still use).
pub fn disk_space(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: an all-zero statvfs (plain integers) is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is a NUL-terminated string and `st` a writable statvfs, both
    // outliving the call.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let block = st.f_frsize as u64;
    Ok((st.f_blocks as u64 * block, st.f_bavail as u64 * block))
}

/// Creates a directory and its parents (the local object store of tiered storage).
/// Sets a file's or directory's permission bits (`chmod`).
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// A file's permission bits.
pub fn mode_of(path: &Path) -> std::io::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
}

pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// glommio's own conversion keeps only the error kind and a message: keep the OS error
/// code, which is how ENOSPC, EMFILE and friends are told apart from real I/O failures.
pub(crate) fn gerr(e: glommio::GlommioError<()>) -> std::io::Error {
    match e {
        glommio::GlommioError::EnhancedIoError { source, .. } => match source.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => source,
        },
        other => other.into(),
    }
}

/// The random id stored in `path`, created (durably) at the first call: what names a data
/// directory to the world (the remote tier's writer, a cluster node's incarnation).
pub fn read_or_create_id(path: &Path) -> std::io::Result<String> {
    match read_text(path) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_string()),
        Ok(_) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is empty", path.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
            write_file_durably(path, id.as_bytes())?;
            Ok(id)
        }
        Err(e) => Err(e),
    }
}
