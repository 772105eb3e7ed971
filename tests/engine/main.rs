//! Integration tests of the storage engine through its library API: no server process.
//! One binary (one link of the crate) for the group; each module was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod catalog_crash;
mod crash_model;
mod faults;
mod fuzz_corpora;
mod idempotence;
mod lifecycle;
mod lifecycle_crash;
mod log_file_model;
mod partition_log;
mod property;
mod recovery_disk;
mod remote_cache;
mod remote_segment;
mod replica_log;
mod replication_sim;
mod txn_partition;
mod wire_golden;
