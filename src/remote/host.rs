//! What the remote tier's background work needs of the shard that runs it, as one narrow
//! interface: the settings, its storage, whether it is stopping, the tiered partitions it
//! owns and each one's view of what to copy. The shard runtime implements it; nothing in
//! `remote/` names the runtime (the `groups/host.rs` pattern).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use glommio::channels::local_channel::LocalReceiver;

use crate::catalog::topics::TopicMeta;
use crate::io::Storage;
use crate::log::SealedSegment;
use crate::remote::partition::WriterRole;
use crate::remote::{RemoteError, RemoteLog};
use crate::settings::ServerConfig;
use crate::TopicPartition;

pub type TieringFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A tiered log as its uploader sees it.
#[derive(Debug, Clone, Default)]
pub struct TieringView {
    pub to_copy: Vec<SealedSegment>,
    pub local_start: i64,
    /// Bytes of the local segments not (wholly) copied yet: what remote retention.bytes
    /// counts besides the remote tier.
    pub local_only_bytes: u64,
}

pub trait TieringHost {
    fn settings(&self) -> &ServerConfig;
    fn storage(&self) -> &Rc<dyn Storage>;
    fn shutting_down(&self) -> bool;
    /// Ends (its `recv()` returns) when the shard starts shutting down.
    fn shutdown_listener(&self) -> LocalReceiver<()>;
    fn topic(&self, name: &str) -> Option<TopicMeta>;
    /// This node's part in `tp`'s remote tier now: the only node, its leader (in which
    /// epoch), or a follower.
    fn writer_role(&self, tp: &TopicPartition) -> WriterRole;
    /// The tiered partitions this shard owns, with their remote tiers (a snapshot).
    fn tiered_partitions(&self) -> Vec<(TopicPartition, Rc<RemoteLog>)>;
    /// Tells partition `tp` that the remote tier holds everything below `copied` (local
    /// retention may delete there) and returns what it has to copy from `copied` on (at
    /// most `copy_limit` segments); `None` when the partition is gone or closing.
    fn tiering_view(
        &self,
        tp: &TopicPartition,
        copied: i64,
        copy_limit: usize,
    ) -> TieringFuture<'_, Option<Result<TieringView, RemoteError>>>;
}
