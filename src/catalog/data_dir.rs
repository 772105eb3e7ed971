//! The data directory as one server owns it: the exclusive lock taken before anything is
//! read, and the start-up pass that finishes interrupted topic deletions and quarantines
//! partition directories no topic owns, so nothing unowned is ever served.
//!
//! Admin path only (start-up, create, delete), never on a produce or fetch. Every file step
//! goes through `Storage`, so the simulated disk's faults reach it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::catalog::broker_defaults::{BrokerDefaults, LoadError};
use crate::catalog::error::CatalogError;
use crate::catalog::topics::{self, TopicMeta, META_DIR};
use crate::io::storage::Storage;
use crate::log::partition_dir_name;

/// Lock file in the data directory: flock'd by the running server, holds its pid.
pub const LOCK_FILE: &str = ".lock";
/// Suffix of a partition directory whose topic was deleted and that awaits removal.
pub const TRASH_SUFFIX: &str = "-delete";
/// Where directories no topic owns are moved at start-up (inside the metadata directory).
pub const QUARANTINE_DIR: &str = "quarantine";
pub use crate::catalog::topics::MAX_FILE_NAME_BYTES;

/// The held lock: the data directory is this process's until it is dropped.
pub type DataDirLock = crate::io::os::PidLock;

/// Takes the exclusive advisory lock on `data_dir` (creating the directory). A second
/// server on the same directory fails at once, naming the holder's pid.
pub fn lock(data_dir: &Path) -> Result<DataDirLock, CatalogError> {
    use crate::io::os::LockRefused;
    let path = data_dir.join(LOCK_FILE);
    crate::io::os::lock_with_pid(&path).map_err(|refused| match refused {
        LockRefused::Held(holder) => CatalogError::DataDirInUse {
            dir: data_dir.to_path_buf(),
            holder: Some(holder).filter(|h| !h.is_empty()),
        },
        LockRefused::Failed(source) => CatalogError::Lock { path, source },
    })
}

/// Refuses to start when another process already listens on `addr`'s port. Our shards
/// share the port with SO_REUSEPORT, which would otherwise let a second server silently take
/// half the connections. The kernel's socket tables (`/proc/net/tcp{,6}`) are read rather
/// than probing the port (a probe could be taken for a client).
///
/// A listening socket no process holds is a killed predecessor's: io_uring tears a killed
/// process's rings down asynchronously, and until then its listeners still take (and then
/// reset) connections. Those are waited for, up to `ORPHAN_WAIT`, before binding.
pub fn check_port_free(addr: std::net::SocketAddr) -> Result<(), CatalogError> {
    let deadline = std::time::Instant::now() + ORPHAN_WAIT;
    loop {
        let inodes = listening_inodes(addr.port(), Some(addr.ip()));
        if inodes.is_empty() {
            return Ok(());
        }
        if let Some(pid) = inodes.iter().find_map(|&i| crate::io::os::socket_holder(i)) {
            return Err(CatalogError::PortInUse { addr, pid });
        }
        if std::time::Instant::now() >= deadline {
            tracing::warn!(%addr, "listening sockets of a killed process linger on the port; starting anyway");
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How long start-up waits for a killed predecessor's listening sockets to go away.
const ORPHAN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether any socket (of any process, or of none) listens on `port`, at any address.
pub fn port_has_listeners(port: u16) -> bool {
    !listening_inodes(port, None).is_empty()
}

/// Inodes of the sockets listening on `port` (IPv4 and IPv6 tables); with `at`, only those
/// whose address overlaps it (the same address, or either one the wildcard): a listener on
/// the same port at another address takes none of our connections.
fn listening_inodes(port: u16, at: Option<std::net::IpAddr>) -> Vec<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|t| crate::io::os::read_text(Path::new(t)).ok())
        .flat_map(|text| listening(&text, port, at))
        .collect()
}

/// Inodes of the sockets in LISTEN state on `port` (overlapping `at`, if given) in a
/// `/proc/net/tcp`-format table.
fn listening(table: &str, port: u16, at: Option<std::net::IpAddr>) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (ip, local_port) = proc_net_address(cols.get(1)?)?;
            let overlaps = at.is_none_or(|at| addresses_overlap(ip, at));
            (cols.get(3) == Some(&LISTEN) && local_port == port && overlaps)
                .then(|| cols.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// A `/proc/net/tcp{,6}` local address (`0100007F:1F90`): 32-bit words printed in host
/// byte order, then the port.
fn proc_net_address(field: &str) -> Option<(std::net::IpAddr, u16)> {
    let (hex, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<[u8; 4]> = (0..hex.len() / 8)
        .map(|i| u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok())
        .map(|w| w.map(u32::to_ne_bytes))
        .collect::<Option<_>>()?;
    let ip = match words.as_slice() {
        [w] => std::net::IpAddr::from(*w),
        [a, b, c, d] => {
            let mut octets = [0u8; 16];
            for (chunk, w) in octets.chunks_mut(4).zip([a, b, c, d]) {
                chunk.copy_from_slice(w);
            }
            std::net::IpAddr::from(octets)
        }
        _ => return None,
    };
    Some((ip, port))
}

/// Whether a listener at `a` and one at `b` on the same port would share connections.
fn addresses_overlap(a: std::net::IpAddr, b: std::net::IpAddr) -> bool {
    a.is_unspecified() || b.is_unspecified() || a.to_canonical() == b.to_canonical()
}

/// `name` cut to at most `max` bytes (names are ASCII, so any cut is a char boundary).
fn truncated(name: &str, max: usize) -> &str {
    &name[..name.len().min(max)]
}

/// The name a deleted partition directory is renamed to: Kafka's `<dir>.<uuid>-delete`,
/// with the directory part shortened so the whole fits in one file name.
pub fn trash_name(dir_name: &str) -> String {
    let unique = format!(
        ".{:016x}{:016x}{TRASH_SUFFIX}",
        crate::time::now_ms() as u64,
        fastrand::u64(..)
    );
    let room = MAX_FILE_NAME_BYTES - unique.len();
    format!("{}{unique}", truncated(dir_name, room))
}

/// Renames a partition directory to its trash name (not yet durable: callers fsync the
/// data directory once for all renames).
pub async fn move_to_trash(
    storage: &dyn Storage,
    data_dir: &Path,
    dir_name: &str,
) -> std::io::Result<PathBuf> {
    let to = data_dir.join(trash_name(dir_name));
    storage.rename(&data_dir.join(dir_name), &to).await?;
    Ok(to)
}

/// Moves a directory no topic owns out of the way (kept for an operator to inspect).
pub async fn quarantine(
    storage: &dyn Storage,
    data_dir: &Path,
    dir_name: &str,
) -> std::io::Result<PathBuf> {
    let qdir = data_dir.join(META_DIR).join(QUARANTINE_DIR);
    storage.create_dir_all(&qdir)?;
    let unique = format!(".{}", crate::time::now_ms());
    let to = qdir.join(format!(
        "{}{unique}",
        truncated(dir_name, MAX_FILE_NAME_BYTES - unique.len())
    ));
    storage.rename(&data_dir.join(dir_name), &to).await?;
    tracing::warn!(from = %data_dir.join(dir_name).display(), to = %to.display(),
        "quarantined a partition directory that no topic owns; it will not be served");
    Ok(to)
}

/// Removes trashed directories in a background thread (never blocks a shard).
pub fn remove_in_background(dirs: Vec<PathBuf>) {
    crate::io::os::remove_dirs_in_background(dirs, "deleted partitions");
}

/// Whether `name` is `<topic>-<p>` of a topic in `owned` (a set of such directory names).
fn partition_dirs(metas: &[TopicMeta]) -> HashSet<String> {
    metas
        .iter()
        .flat_map(|m| (0..m.partitions()).map(move |p| partition_dir_name(&m.name, p)))
        .collect()
}

/// Directory names in `data_dir` that look like partitions of `topic` (`<topic>-<digits>`).
fn dirs_of_topic(names: &[String], topic: &str) -> Vec<String> {
    names
        .iter()
        .filter(|n| {
            n.strip_prefix(topic)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .cloned()
        .collect()
}

/// What the start-up pass did.
#[derive(Debug, Default)]
pub struct Prepared {
    pub finished_deletions: Vec<String>,
    pub quarantined: Vec<PathBuf>,
    /// Trashed directories, for [`remove_in_background`].
    pub trash: Vec<PathBuf>,
}

/// Start-up, before any shard opens a partition: finish deletions a crash interrupted (their
/// marker is the commit point), remove trash, and quarantine partition directories that no
/// topic owns, so a later topic of the same name never serves them.
pub async fn prepare(
    storage: &dyn Storage,
    data_dir: &Path,
    shards: u32,
) -> Result<Prepared, CatalogError> {
    let ctx = |what: &'static str, e: std::io::Error| CatalogError::io(what, data_dir)(e);
    let mut done = Prepared::default();
    let deletions = topics::pending_deletions(storage, data_dir);
    for topic in deletions.map_err(|e| ctx("listing deletions", e))? {
        finish_deletion(storage, data_dir, &topic)
            .await
            .map_err(|e| ctx("finishing a deletion", e))?;
        tracing::warn!(topic = %topic, "finished a topic deletion interrupted by a crash");
        done.finished_deletions.push(topic);
    }
    // Every committed deletion is carried out before anything else is looked at.
    debug_assert!(topics::pending_deletions(storage, data_dir).is_ok_and(|p| p.is_empty()));
    let defaults = BrokerDefaults::load(storage, data_dir).await?;
    let base = defaults.base().map_err(|e| LoadError {
        path: data_dir.join(META_DIR),
        why: e.message(),
    })?;
    let (metas, _) = topics::load_all(storage, data_dir, shards, &base).await?;
    let owned = partition_dirs(&metas);
    let mut trash = Vec::new();
    for name in storage.list_dirs(data_dir).map_err(|e| ctx("listing", e))? {
        if name.ends_with(TRASH_SUFFIX) {
            trash.push(data_dir.join(&name));
        } else if name != META_DIR && !owned.contains(&name) {
            let moved = quarantine(storage, data_dir, &name)
                .await
                .map_err(|e| ctx("quarantining", e))?;
            done.quarantined.push(moved);
        }
    }
    if !done.quarantined.is_empty() {
        storage
            .sync_dir(data_dir)
            .await
            .map_err(|e| ctx("syncing", e))?;
    }
    // Read back: what remains is owned by a topic, trash, or the metadata directory.
    debug_assert!(storage.list_dirs(data_dir).is_ok_and(|names| names
        .iter()
        .all(|n| n.ends_with(TRASH_SUFFIX) || n == META_DIR || owned.contains(n))));
    done.trash = trash;
    Ok(done)
}

/// Carries out a committed deletion: every partition directory of `topic` goes to the
/// trash, durably, then its deletion marker goes.
async fn finish_deletion(
    storage: &dyn Storage,
    data_dir: &Path,
    topic: &str,
) -> std::io::Result<()> {
    for dir in dirs_of_topic(&storage.list_dirs(data_dir)?, topic) {
        move_to_trash(storage, data_dir, &dir).await?;
    }
    storage.sync_dir(data_dir).await?;
    topics::finish_deletion(storage, data_dir, topic).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_table_addresses_parse() {
        let v4 = proc_net_address("0100007F:1F90").unwrap();
        assert_eq!(v4, ("127.0.0.1".parse().unwrap(), 8080));
        let any6 = proc_net_address("00000000000000000000000000000000:1F90").unwrap();
        assert_eq!(any6.0, "::".parse::<std::net::IpAddr>().unwrap());
        let lo6 = proc_net_address("00000000000000000000000001000000:0050").unwrap();
        assert_eq!(lo6, ("::1".parse().unwrap(), 80));
        let mapped = proc_net_address("0000000000000000FFFF00000100007F:0050").unwrap();
        assert_eq!(
            mapped.0.to_canonical(),
            "127.0.0.1".parse::<std::net::IpAddr>().unwrap()
        );
        assert!(proc_net_address("zz:1").is_none());
    }

    #[test]
    fn listening_sockets_are_found_in_the_kernel_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1CF3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1\n\
   1: 0100007F:1F90 0100007F:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 4343 1\n";
        assert_eq!(listening(table, 0x1CF3, None), vec![4242]);
        assert!(
            listening(table, 0x1F90, None).is_empty(),
            "established, not listening"
        );
        assert!(listening(table, 80, None).is_empty());
        let at = |ip: &str| Some(ip.parse().unwrap());
        assert_eq!(listening(table, 0x1CF3, at("127.0.0.1")), vec![4242]);
        assert_eq!(listening(table, 0x1CF3, at("0.0.0.0")), vec![4242]);
        assert_eq!(listening(table, 0x1CF3, at("::")), vec![4242]);
        assert!(
            listening(table, 0x1CF3, at("127.0.0.2")).is_empty(),
            "another address on the same port takes none of our connections"
        );
        let real = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = real.local_addr().unwrap().port();
        let err = check_port_free(real.local_addr().unwrap()).unwrap_err();
        assert!(
            matches!(err, CatalogError::PortInUse { pid, .. } if pid == std::process::id()),
            "{err}"
        );
        assert!(err
            .to_string()
            .contains("already served by another process"));
        drop(real);
        assert!(check_port_free(format!("127.0.0.1:{port}").parse().unwrap()).is_ok());
        // Another process's listener at another address of the same port is no conflict.
        let other = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
        let port = other.local_addr().unwrap().port();
        assert!(check_port_free(format!("127.0.0.1:{port}").parse().unwrap()).is_ok());
        assert!(check_port_free(format!("0.0.0.0:{port}").parse().unwrap()).is_err());
    }

    #[test]
    fn trash_names_fit_one_file_name() {
        let long = format!("{}-99999", "t".repeat(249));
        let t = trash_name(&long);
        assert!(t.len() <= MAX_FILE_NAME_BYTES, "{}", t.len());
        assert!(t.ends_with(TRASH_SUFFIX));
        assert_ne!(trash_name("a-0"), trash_name("a-0"));
    }

    #[test]
    fn dirs_of_topic_matches_only_its_partitions() {
        let names: Vec<String> = ["a-0", "a-12", "a-b-0", "ab-1", "a-", "a-1x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(dirs_of_topic(&names, "a"), vec!["a-0", "a-12"]);
        assert_eq!(dirs_of_topic(&names, "a-b"), vec!["a-b-0"]);
    }

    #[test]
    fn a_second_lock_on_one_directory_is_refused_with_the_holders_pid() {
        let tmp = tempfile::tempdir().unwrap();
        let held = lock(tmp.path()).unwrap();
        let err = lock(tmp.path()).err().unwrap();
        let holder = std::process::id().to_string();
        assert!(
            matches!(&err, CatalogError::DataDirInUse { holder: Some(h), .. } if *h == holder),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("in use by another shardlog server"),
            "{err}"
        );
        drop(held);
        lock(tmp.path()).unwrap();
    }
}
