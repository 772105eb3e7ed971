//! Integration tests of a real server process over the native protocol, and the tools.
//! One binary (one link of the crate) for the group; each module was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod cache_e2e;
mod damaged_partition_e2e;
mod dump_log;
mod fair_limits_e2e;
mod hostile_input_e2e;
mod integrity_e2e;
mod lifecycle_e2e;
mod limits_e2e;
mod maintenance_e2e;
mod metrics_e2e;
mod multi_partition_e2e;
mod pipelined_order_e2e;
mod server_e2e;
mod time_window_e2e;
mod tools_e2e;
mod tools_either_listener;
