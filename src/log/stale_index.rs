//! Why a segment's index files are rebuilt from its log at open instead of used: the
//! indexes are derived data (Kafka rebuilds them the same way), so any doubt means rebuild.

use std::path::PathBuf;

use super::sparse_index::IndexError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StaleIndex {
    #[error("index file missing")]
    Missing,
    #[error("{}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Corrupt { path: PathBuf, why: IndexError },
    #[error("offset index points at {position} past the log end {log_end}")]
    PastLogEnd { position: u64, log_end: u64 },
    #[error("index entries for an empty log")]
    EntriesForEmptyLog,
}

impl StaleIndex {
    pub fn unreadable(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| StaleIndex::Unreadable {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn corrupt(path: &std::path::Path) -> impl FnOnce(IndexError) -> Self + '_ {
        move |why| StaleIndex::Corrupt {
            path: path.to_path_buf(),
            why,
        }
    }
}
