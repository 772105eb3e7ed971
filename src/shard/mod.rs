//! The shard runtime: one per core, owning its partitions outright. It runs operations
//! (locally or on the owner shard over the channel mesh) and knows no wire protocol; the
//! services below it (catalog, groups) are called through narrow interfaces.

pub(crate) mod by_owner;
pub(crate) mod cluster;
mod controller;
pub(crate) mod coordinator_routing;
mod hosts;
mod lifecycle;
mod mesh;
pub(crate) mod messages;
mod outbox;
pub(crate) mod partition;
pub(crate) mod runtime;
pub(crate) mod services;

pub(crate) use lifecycle::ClosedPartitions;
pub(crate) use runtime::Shard;
pub(crate) use services::calls::registered as registered_services;
