//! The aborted-transaction index, as Kafka keeps it (`.txnindex`, `TransactionIndex`): one
//! 34-byte big-endian entry per aborted transaction that wrote to the partition, in the file
//! of the segment holding its abort marker: `version i16 (0), producerId i64, firstOffset
//! i64, lastOffset i64 (the marker), lastStableOffset i64 (the partition's LSO once the
//! marker was written)`. A read_committed fetch takes from it the aborted transactions its
//! records overlap, so the client can drop their records.
//!
//! A partition keeps its entries in memory, ordered by marker offset. A segment's file is
//! written (synced) when the segment is sealed and at a clean close, before the producer
//! snapshot that follows; at open, the files give the entries below the snapshot the
//! producer state is rebuilt from, and the replay after it gives the rest.

use std::path::Path;

use super::file_names::segment_path;
use crate::error::{Error, Result};
use crate::io::Storage;

pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
pub const ENTRY_SIZE: usize = 34;
const VERSION: i16 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// The entry for an aborted transaction, with `first_unstable` the partition's first
    /// unstable offset once its marker is written (none: the offset after the marker).
    pub fn of(done: &CompletedTxn, first_unstable: Option<i64>) -> Option<AbortedTxn> {
        done.aborted.then(|| AbortedTxn {
            producer_id: done.producer_id,
            first_offset: done.first_offset,
            last_offset: done.last_offset,
            last_stable_offset: first_unstable.unwrap_or(done.last_offset + 1),
        })
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&VERSION.to_be_bytes());
        for v in [
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
    }

    fn decode(e: &[u8]) -> Option<AbortedTxn> {
        let at = |i: usize| i64::from_be_bytes(e[i..i + 8].try_into().expect("8 bytes"));
        let entry = AbortedTxn {
            producer_id: at(2),
            first_offset: at(10),
            last_offset: at(18),
            last_stable_offset: at(26),
        };
        let version = i16::from_be_bytes([e[0], e[1]]);
        (version == VERSION && entry.first_offset <= entry.last_offset).then_some(entry)
    }
}

/// A transaction a marker ended on this partition (Kafka's CompletedTxn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub aborted: bool,
}

/// A partition's aborted transactions, ordered by marker offset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AbortedTxns {
    entries: Vec<AbortedTxn>,
}

impl AbortedTxns {
    pub fn push(&mut self, entry: AbortedTxn) {
        // Markers are appended in offset order.
        assert!(self
            .entries
            .last()
            .is_none_or(|l| l.last_offset < entry.last_offset));
        self.entries.push(entry);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops the entries whose marker is at or after `offset` (a truncated tail).
    pub fn truncate_from(&mut self, offset: i64) {
        self.entries.retain(|e| e.last_offset < offset);
    }

    /// Drops the entries whose marker is below `log_start`: no fetch at or above the log
    /// start overlaps them.
    pub fn drop_below(&mut self, log_start: i64) {
        self.entries.retain(|e| e.last_offset >= log_start);
    }

    /// (producer id, first offset) of every aborted transaction a read of `[from, upper)`
    /// overlaps (Kafka's `collectAbortedTxns`).
    pub fn overlapping(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        let start = self.entries.partition_point(|e| e.last_offset < from);
        self.entries[start..]
            .iter()
            .filter(|e| e.first_offset < upper)
            .map(|e| (e.producer_id, e.first_offset))
            .collect()
    }

    /// The entries whose marker is at or after `from` (transactions whose records may lie
    /// at or after it).
    pub fn overlapping_entries(&self, from: i64) -> Vec<AbortedTxn> {
        let start = self.entries.partition_point(|e| e.last_offset < from);
        self.entries[start..].to_vec()
    }

    /// The entries whose marker lies in `[base, next)` (one segment's).
    pub fn in_range(&self, base: i64, next: i64) -> &[AbortedTxn] {
        let from = self.entries.partition_point(|e| e.last_offset < base);
        let to = self.entries.partition_point(|e| e.last_offset < next);
        &self.entries[from..to]
    }

    /// Writes the file of the segment `[base, next)` (synced), or removes a stale one when
    /// it has no entries.
    pub async fn write_segment(
        &self,
        storage: &dyn Storage,
        dir: &Path,
        base: i64,
        next: i64,
    ) -> Result<()> {
        let path = segment_path(dir, base, TXN_INDEX_SUFFIX);
        let entries = self.in_range(base, next);
        if entries.is_empty() {
            if storage.exists(&path) {
                storage
                    .remove(&path)
                    .await
                    .map_err(|e| Error::io("remove", &path, e))?;
            }
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(entries.len() * ENTRY_SIZE);
        entries.iter().for_each(|e| e.encode(&mut bytes));
        storage
            .write_file_atomic(&path, bytes)
            .await
            .map_err(|e| Error::io("write", &path, e))
    }

    /// Reads the file of the segment at `base` (none: no entries). Entries that do not
    /// parse or are out of order end the file there, with a warning: the index is rebuilt
    /// only from the replay after the snapshot.
    pub async fn read_segment(&mut self, storage: &dyn Storage, dir: &Path, base: i64) {
        let path = segment_path(dir, base, TXN_INDEX_SUFFIX);
        if !storage.exists(&path) {
            return;
        }
        let bytes = match storage.read_file(&path).await {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "unreadable transaction index");
                return;
            }
        };
        for chunk in bytes.chunks(ENTRY_SIZE) {
            let entry = (chunk.len() == ENTRY_SIZE)
                .then(|| AbortedTxn::decode(chunk))
                .flatten()
                .filter(|e| {
                    self.entries
                        .last()
                        .is_none_or(|l| l.last_offset < e.last_offset)
                });
            match entry {
                Some(e) => self.entries.push(e),
                None => {
                    tracing::warn!(file = %path.display(), "bad transaction index entry; ignoring the rest");
                    return;
                }
            }
        }
    }

    /// Parses a whole `.txnindex` file (dump-log): the entries, or the byte offset of the
    /// first one that does not parse.
    pub fn parse_file(bytes: &[u8]) -> std::result::Result<Vec<AbortedTxn>, usize> {
        bytes
            .chunks(ENTRY_SIZE)
            .enumerate()
            .map(|(i, c)| {
                (c.len() == ENTRY_SIZE)
                    .then(|| AbortedTxn::decode(c))
                    .flatten()
                    .ok_or(i * ENTRY_SIZE)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64, first: i64, last: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        }
    }

    #[test]
    fn entries_are_kafkas_34_bytes_and_reads_find_the_overlapping_ones() {
        let mut bytes = Vec::new();
        entry(7, 10, 20).encode(&mut bytes);
        assert_eq!(bytes.len(), ENTRY_SIZE);
        assert_eq!(&bytes[..2], &[0, 0]);
        assert_eq!(
            AbortedTxns::parse_file(&bytes).unwrap(),
            vec![entry(7, 10, 20)]
        );
        assert_eq!(AbortedTxns::parse_file(&bytes[..33]), Err(0));
        let mut txns = AbortedTxns::default();
        for e in [entry(1, 0, 5), entry(2, 3, 9), entry(3, 12, 15)] {
            txns.push(e);
        }
        assert_eq!(txns.overlapping(6, 10), vec![(2, 3)]);
        assert_eq!(txns.overlapping(0, 4), vec![(1, 0), (2, 3)]);
        assert_eq!(txns.overlapping(10, 12), vec![]);
        assert_eq!(txns.in_range(6, 16).len(), 2);
        txns.truncate_from(9);
        assert_eq!(txns.len(), 1);
        txns.drop_below(6);
        assert!(txns.is_empty());
    }
}
