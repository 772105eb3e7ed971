//! The shard runtime: one per core, owning its partitions outright. It runs operations
//! (locally or on the owner shard over the channel mesh) and knows no wire protocol; the
//! services below it (catalog, groups) are called through narrow interfaces.

mod append_watch;
pub(crate) mod by_owner;
mod cluster;
mod controller;
pub(crate) mod coordinator_routing;
mod dispatch;
mod hosts;
mod lifecycle;
pub(crate) mod log_info;
pub(crate) mod long_poll;
pub(crate) mod maintenance;
mod mesh;
pub(crate) mod messages;
mod outbox;
mod partition_actor;
mod partition_idle;
pub(crate) mod replica_actor;
pub(crate) mod replica_messages;
pub(crate) mod replication;
pub(crate) mod runtime;
mod stats;
pub(crate) mod tiering;

pub(crate) use lifecycle::ClosedPartitions;
pub(crate) use runtime::Shard;
