//! What a shard runs beyond one partition's operations: the services it runs for others
//! (`calls`), where each `ShardOp` goes (`dispatch`), long polls, background log maintenance, the logs' descriptions, counters
//! and metrics, and the remote tier's reads.

pub(crate) mod calls;
pub(crate) mod dispatch;
pub(crate) mod log_info;
pub(crate) mod long_poll;
pub(crate) mod maintenance;
pub(crate) mod stats;
pub(crate) mod tiering;
