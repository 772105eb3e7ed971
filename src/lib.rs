//! shardlog: a thread-per-core log storage engine that stores partitions exactly as Apache
//! Kafka does (segments of `.log` + `.index` + `.timeindex`, RecordBatch v2, CRC-32C).
//!
//! Layers, bottom up (ARCHITECTURE.md is the map):
//! - [`format`]: pure codecs for record batches and varints;
//! - [`io`]: the only module that touches glommio's file APIs (direct-I/O appender, reads);
//! - [`log`]: segments, indexes and the partition log (append, roll, read, find by time);
//! - [`tools`]: offline tools such as `dump-log`.

// Every unsafe block says why it is sound; library code does not unwrap (tests may).
#![deny(clippy::undocumented_unsafe_blocks)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod admission;
pub mod alloc_guard;
pub mod broker_error;
pub mod catalog;
pub mod cluster;
pub mod config;
pub mod error;
pub mod format;
pub mod groups;
pub mod io;
pub mod kafka;
pub mod kafka_codes;
pub mod log;
pub mod metrics;
pub mod native;
pub mod net;
pub mod partition_ops;
pub mod service;
pub mod settings;
pub mod shard;
pub mod tasks;
pub mod time;
pub mod tools;
pub mod topic_partition;
pub mod txn;

pub use config::LogConfig;
pub use error::{Error, Result};
pub use topic_partition::TopicPartition;
pub mod client;
pub mod protocol;
pub mod remote;
pub mod replication;
pub mod security;
pub mod server;

#[global_allocator]
static ALLOCATOR: alloc_guard::ReservingAllocator = alloc_guard::ReservingAllocator;
