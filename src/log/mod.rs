//! The partition log: segments of `.log` + `.index` + `.timeindex`, as Kafka lays them out,
//! plus the recovery machinery for unclean shutdowns.

pub mod batch_stream;
pub mod checkpoint;
pub(crate) mod cleaner;
pub mod cleaner_view;
mod crc_memo;
pub mod durability;
pub mod file_names;
pub(crate) mod index_state;
mod invariants;
pub mod leader_epochs;
pub(crate) mod loader;
pub mod offset_index;
pub(crate) mod paged_index;
pub mod partition;
pub mod producer_state;
pub(crate) mod recovery;
mod replica_log;
pub(crate) mod retention;
pub(crate) mod scan;
pub(crate) mod segment;
pub mod segment_slice;
pub(crate) mod sparse_index;
pub(crate) mod stale_index;
pub mod tiering;
pub mod time_index;
mod transactions;
pub mod txn_index;

pub use cleaner::{CleanStats, CleanerLimits, CleaningPlan};
pub use cleaner_view::CleanerView;
pub use loader::OpenOptions;
pub use partition::{partition_dir, partition_dir_name, AppendInfo, PartitionLog, TimestampOffset};
pub use retention::RetentionOutcome;
pub use segment::{Segment, Truncation};
pub use tiering::SealedSegment;

/// Target of a timestamp lookup meaning "log start offset" (Kafka's EARLIEST_TIMESTAMP).
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// Target meaning "log end offset" (LATEST_TIMESTAMP).
pub const LATEST_TIMESTAMP: i64 = -1;
/// Target meaning "the first record carrying the largest timestamp" (MAX_TIMESTAMP).
pub const MAX_TIMESTAMP: i64 = -3;

pub use file_names::{
    segment_file_name, segment_path, CLEANED_SUFFIX, DELETED_SUFFIX, INDEX_SUFFIX, LOG_SUFFIX,
    SWAP_SUFFIX, TIME_INDEX_SUFFIX,
};

/// How the log layer reaches files: the storage, and the shard's page cache (if any).
#[derive(Clone)]
pub struct LogIo {
    pub storage: std::rc::Rc<dyn crate::io::Storage>,
    pub cache: Option<crate::io::SharedPageCache>,
}
