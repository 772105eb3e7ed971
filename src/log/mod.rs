//! The partition log: segments of `.log` + `.index` + `.timeindex`, as Kafka lays them out,
//! plus the recovery machinery for unclean shutdowns.

pub mod batch_stream;
pub mod checkpoint;
pub mod cleaner;
pub mod index_state;
mod invariants;
pub mod loader;
pub mod offset_index;
pub mod paged_index;
pub mod partition;
pub mod producer_state;
pub mod recovery;
pub mod retention;
pub mod scan;
pub mod segment;
pub mod time_index;

pub use cleaner::{CleanStats, CleanerLimits, CleaningPlan};
pub use loader::OpenOptions;
pub use partition::{partition_dir, partition_dir_name, AppendInfo, PartitionLog, TimestampOffset};
pub use retention::RetentionOutcome;
pub use segment::{Segment, Truncation};

/// Target of a timestamp lookup meaning "log start offset" (Kafka's EARLIEST_TIMESTAMP).
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// Target meaning "log end offset" (LATEST_TIMESTAMP).
pub const LATEST_TIMESTAMP: i64 = -1;
/// Target meaning "the first record carrying the largest timestamp" (MAX_TIMESTAMP).
pub const MAX_TIMESTAMP: i64 = -3;

/// File name of a segment file: base offset padded to 20 digits plus the suffix.
pub fn segment_file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

pub const LOG_SUFFIX: &str = ".log";
pub const INDEX_SUFFIX: &str = ".index";
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
/// Suffixes Kafka appends to a whole file name during deletion and cleaning.
pub const DELETED_SUFFIX: &str = ".deleted";
pub const CLEANED_SUFFIX: &str = ".cleaned";
pub const SWAP_SUFFIX: &str = ".swap";

/// How the log layer reaches files: the storage, and the shard's page cache (if any).
#[derive(Clone)]
pub struct LogIo {
    pub storage: std::rc::Rc<dyn crate::io::Storage>,
    pub cache: Option<crate::io::SharedPageCache>,
}
