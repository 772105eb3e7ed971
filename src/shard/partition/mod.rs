//! A partition on its shard: the task that owns its log and runs its operations one at a
//! time, what that task does while idle, the waiters woken when its log grows, and its
//! part in replication (the leader's and the follower's side, cluster mode).

pub(crate) mod actor;
pub(crate) mod append_watch;
pub(crate) mod idle;
pub(crate) mod replica;
