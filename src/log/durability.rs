//! Durability without a sync of the partition's own: a mark names a log end whose records
//! were all written to the device when it was taken, and once a file-system sync that
//! started after that has completed, everything below the mark is durable (an idle
//! partition joins its shard's shared sync this way, `io::shared_sync`).

use super::partition::PartitionLog;
use crate::error::{Error, Result};

/// A log end whose records had all reached the device when the mark was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurableMark {
    end: i64,
    /// The log's reload count then: a reload since means the mark may name records that
    /// are gone (a follower's truncation), whose offsets now hold others.
    reloads: u64,
}

impl DurableMark {
    pub fn end(&self) -> i64 {
        self.end
    }
}

impl PartitionLog {
    /// Writes everything appended to the device and marks the log end, for a file-system
    /// sync to make durable. `None` when everything is durable already, or when the log
    /// cannot vouch for what it holds (poisoned, or waiting to reload its tail).
    pub async fn durability_mark(&mut self) -> Result<Option<DurableMark>> {
        let unhealthy = self.is_poisoned() || self.needs_reopen.is_some();
        if unhealthy || self.recovery_point >= self.log_end_offset() {
            return Ok(None);
        }
        self.flush().await?;
        Ok(Some(DurableMark {
            end: self.log_end_offset(),
            reloads: self.reloads,
        }))
    }

    /// A file-system sync that started after `mark` was taken has completed: everything
    /// below the mark is durable, unless the tail was reloaded since.
    pub fn note_durable(&mut self, mark: DurableMark) {
        if mark.reloads != self.reloads || self.poisoned.is_some() {
            return;
        }
        assert!(
            mark.end <= self.log_end_offset(),
            "only a reload moves the log end back"
        );
        self.recovery_point = self.recovery_point.max(mark.end);
        self.assert_invariants();
    }

    /// The file-system sync failed: like a failed fdatasync, what was written may not be on
    /// the device, so the log is poisoned (or, out of space, reloads its tail).
    pub fn note_durability_failed(&mut self, e: std::io::Error) {
        let failed = Err::<(), _>(Error::io("sync the file system of", &self.dir, e));
        let _ = self.note_failure(failed);
    }
}
