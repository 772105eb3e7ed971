//! Work-around for glommio 0.9's IOPOLL probe bug, in one place.
//!
//! glommio probes a block device for IOPOLL support the first time an executor thread opens
//! a `DmaFile` on it, and caches the answer per thread and device. If that first file is new
//! and empty, the probe wrongly "succeeds", the device is marked pollable, and every later
//! read fails with EOPNOTSUPP (os error 95). So before any other DMA open on a device, each
//! thread opens a non-empty file on it. Every engine entry point that opens files calls this.

use std::cell::RefCell;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use glommio::io::DmaFile;

use crate::error::{Error, Result};

/// Name of the small file used to prime the probe, kept in the data directory.
pub const PROBE_FILE: &str = ".shardlog-iopoll-probe";

thread_local! {
    static PROBED_DEVICES: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

/// Makes sure this thread's glommio reactor has probed the device holding `dir` with a
/// non-empty file. Cheap after the first call per (thread, device).
pub async fn ensure_iopoll_probe_workaround(dir: &Path) -> Result<()> {
    let dev = std::fs::metadata(dir)
        .map_err(|e| Error::io("stat", dir, e))?
        .dev();
    if PROBED_DEVICES.with(|s| s.borrow().contains(&dev)) {
        return Ok(());
    }
    let path = dir.join(PROBE_FILE);
    let is_big_enough = std::fs::metadata(&path)
        .map(|m| m.len() >= super::BLOCK)
        .unwrap_or(false);
    if !is_big_enough {
        // Buffered write on purpose: this must not be the first DMA open. Written aside and
        // renamed over, never truncated in place: every shard probes at start, and a shard
        // opening the file while another rewrote it in place could see it empty, which is
        // the very bug this avoids (reads then failed with EOPNOTSUPP).
        let tmp = dir.join(format!(
            "{PROBE_FILE}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&tmp, vec![0u8; super::BLOCK as usize])
            .map_err(|e| Error::io("write", &tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io("rename", &tmp, e))?;
    }
    let f = DmaFile::open(&path)
        .await
        .map_err(|e| Error::io("open", &path, super::os::gerr(e)))?;
    f.close()
        .await
        .map_err(|e| Error::io("close", &path, super::os::gerr(e)))?;
    PROBED_DEVICES.with(|s| s.borrow_mut().insert(dev));
    Ok(())
}
