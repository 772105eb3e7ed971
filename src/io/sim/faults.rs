//! The fault plan of the simulated disk: which I/O crashes the "process" or fails with an
//! errno, counted per kind of operation.

use super::{crashed_err, os_err};

/// The kinds of operation a fault can be armed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultPoint {
    /// A positional write (`write_at`, including the temp file of an atomic replace).
    Write,
    /// An fdatasync of a file.
    Sync,
    /// A metadata operation: creating a file, truncate, rename, remove, directory fsync.
    Meta,
    /// A positional read.
    Read,
}

const KINDS: usize = 4;

impl FaultPoint {
    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Default, Clone)]
pub(super) struct FaultPlan {
    done: [u64; KINDS],
    crash_at: [Option<u64>; KINDS],
    fail_at: [Option<(u64, i32)>; KINDS],
    pub(super) disk_full: bool,
}

impl FaultPlan {
    pub(super) fn count(&self, point: FaultPoint) -> u64 {
        self.done[point.index()]
    }

    /// Arms a crash at the n-th operation of that kind from now (1 = the next one).
    pub(super) fn crash_at(&mut self, point: FaultPoint, n: u64) {
        let i = point.index();
        self.crash_at[i] = Some(self.done[i] + n);
    }

    /// Arms a one-shot failure with `errno` at the n-th operation of that kind from now.
    pub(super) fn fail_at(&mut self, point: FaultPoint, n: u64, errno: i32) {
        let i = point.index();
        self.fail_at[i] = Some((self.done[i] + n, errno));
    }

    /// Disarms every fault, keeping the counts.
    pub(super) fn clear(&mut self) {
        *self = FaultPlan {
            done: self.done,
            ..FaultPlan::default()
        };
    }

    /// Counts one operation and applies the plan to it; sets `crashed` when it crashes.
    pub(super) fn begin(&mut self, point: FaultPoint, crashed: &mut bool) -> std::io::Result<()> {
        if *crashed {
            return Err(crashed_err());
        }
        let i = point.index();
        self.done[i] += 1;
        let n = self.done[i];
        if self.crash_at[i] == Some(n) {
            *crashed = true;
            return Err(crashed_err());
        }
        if let Some((at, errno)) = self.fail_at[i] {
            if at == n {
                self.fail_at[i] = None;
                return Err(os_err(errno));
            }
        }
        if point == FaultPoint::Write && self.disk_full {
            return Err(os_err(libc::ENOSPC));
        }
        Ok(())
    }
}
