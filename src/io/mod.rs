//! The only module that calls glommio's file APIs. Everything above it sees positional
//! reads, an appender, and whole-file helpers for the small index files.
//!
//! Direct I/O rules on this hardware (see ARCHITECTURE.md): 4 KiB units, no single I/O
//! larger than 1 MiB, never O_APPEND.

mod appender;
mod files;
mod probe;

pub use appender::LogFile;
pub use files::{read_whole_file, write_whole_file};
pub use probe::ensure_iopoll_probe_workaround;

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
