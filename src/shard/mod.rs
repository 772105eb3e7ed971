//! The shard runtime: one per core, owning its partitions outright. It runs operations
//! (locally or on the owner shard over the channel mesh) and knows no wire protocol; the
//! services below it (catalog, groups) are called through narrow interfaces.

pub(crate) mod acls;
pub(crate) mod admin;
mod append_watch;
pub(crate) mod budget;
pub(crate) mod by_owner;
mod controller;
mod dispatch;
pub(crate) mod group_routing;
mod hosts;
mod lifecycle;
pub(crate) mod log_info;
pub(crate) mod long_poll;
pub(crate) mod maintenance;
mod mesh;
pub(crate) mod messages;
mod outbox;
mod partition_actor;
pub(crate) mod producer_ids;
pub(crate) mod read_replica;
pub(crate) mod restore;
pub(crate) mod runtime;
mod security_files;
pub(crate) mod slots;
mod stats;
pub(crate) mod tiering;
pub(crate) mod txn_routing;
pub(crate) mod users;

pub(crate) use runtime::Shard;
