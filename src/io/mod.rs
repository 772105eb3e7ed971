//! The storage layer: the only code that calls glommio's file APIs (`dma_storage.rs`), the
//! storage traits the engine is written against (`storage.rs`), the direct-I/O appender
//! (`appender.rs`), and a simulated disk for fault-injection tests (`sim/`, built for tests only).
//!
//! Direct I/O rules on this hardware (see ARCHITECTURE.md): 4 KiB units, no single I/O
//! larger than 1 MiB, never O_APPEND.

mod appender;
pub(crate) mod awake;
pub mod cache;
pub mod chain;
mod checked_ranges;
pub mod deadline;
pub mod deferred_syncs;
pub(crate) mod dma_storage;
mod extents;
pub mod fd_pool;
mod intervals;
pub mod limits;
pub mod os;
mod probe;
pub(crate) mod read_ahead;
pub mod shared_sync;
#[cfg(any(test, feature = "test-support"))]
pub mod sim;
pub mod storage;

pub use appender::{LogFile, MAX_ALLOCATE_AHEAD};
pub use cache::{PageCache, SharedPageCache};
pub use deferred_syncs::DeferredSyncs;
pub use dma_storage::DmaStorage;
pub use fd_pool::PooledStorage;
pub use probe::ensure_iopoll_probe_workaround;
pub use shared_sync::SharedSync;
pub use storage::{with_suffix, IoBuf, OpenMode, Storage, StorageFile};

/// Unit of every direct write: the ext4 and physical block size here (the logical 512-byte
/// alignment glommio reports is legal but ~30% slower for extending writes).
pub const BLOCK: u64 = 4096;
/// Largest single read or write submitted to the kernel.
pub const MAX_IO: usize = 1 << 20;

pub(crate) fn align_down(v: u64) -> u64 {
    v & !(BLOCK - 1)
}

pub(crate) fn align_up(v: u64) -> u64 {
    (v + BLOCK - 1) & !(BLOCK - 1)
}
