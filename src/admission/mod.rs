//! What a client may hold of a shard, bounded before it is taken: connection slots per
//! listener and per peer (`slots.rs`), and the memory of requests and replies in flight
//! (`budget.rs`). Both are per shard and single-threaded; the listeners and protocol
//! handlers draw on them, the shard only owns its pool.

pub mod budget;
pub mod slots;
