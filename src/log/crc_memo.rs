//! What a read's batch check may skip: batches whose CRC-32C the page cache already
//! checked in the very bytes the read holds (a second consumer of cached data costs no CRC
//! pass), and where the read records the batches it just checked.

use crate::io::chain::ByteChain;
use crate::io::LogFile;

/// Batches by their offsets `[start, end)` in the bytes a read checks.
pub(super) trait CrcMemo {
    /// Whether the batch's CRC was checked in these same cached bytes.
    fn known(&self, start: usize, end: usize) -> bool;
    /// The batch just passed its CRC check.
    fn note(&self, start: usize, end: usize);
}

/// Nothing known, nothing recorded: bytes that are not the cache's own.
pub(super) struct NoCrcMemo;

impl CrcMemo for NoCrcMemo {
    fn known(&self, _: usize, _: usize) -> bool {
        false
    }

    fn note(&self, _: usize, _: usize) {}
}

/// The page cache's record for bytes `data` that `log.read_chain` returned from `position`.
pub(super) struct CachedCrcs<'a> {
    pub log: &'a LogFile,
    pub position: u64,
    pub data: &'a ByteChain,
}

impl CrcMemo for CachedCrcs<'_> {
    fn known(&self, start: usize, end: usize) -> bool {
        let batch = self.data.slice(start, end);
        self.log.crc_checked(self.position + start as u64, &batch)
    }

    fn note(&self, start: usize, end: usize) {
        let batch = self.data.slice(start, end);
        self.log
            .note_crc_checked(self.position + start as u64, &batch);
    }
}
