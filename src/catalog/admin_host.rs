//! What topic administration needs of the node that runs it, as one narrow interface: the
//! settings and storage, the catalog as this shard sees it, the one-at-a-time turn, a
//! change applied on every shard, and the remote tier's part in create and delete. The
//! shard runtime implements it; nothing in `catalog/` names the runtime (the
//! `groups/host.rs` pattern), so a cluster's controller can host the same rules.

use std::future::Future;
use std::pin::Pin;

use glommio::sync::Permit;

use crate::broker_error::BrokerError;
use crate::catalog::broker_defaults::{BrokerDefaults, Scope};
use crate::catalog::topics::TopicMeta;
use crate::config::LogConfig;
use crate::io::Storage;
use crate::settings::ServerConfig;

pub type AdminFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
pub type AdminResult<T> = Result<T, BrokerError>;

/// A topic or config change a client asks for; it runs on the controller.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AdminRequest {
    CreateTopic {
        name: String,
        partitions: i32,
        configs: Vec<(String, String)>,
    },
    /// This node's copy of a topic created in the cluster (etcd), with the cluster's id.
    CopyClusterTopic {
        name: String,
        id: uuid::Uuid,
        partitions: i32,
        configs: Vec<(String, String)>,
    },
    /// An internal topic with the settings the server's config fixes for it.
    CreateInternalTopic {
        name: String,
    },
    DeleteTopic {
        name: String,
    },
    /// Sets this node's copy of a cluster topic to the cluster's config overrides.
    AlterClusterCopy {
        name: String,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    },
    /// Grows this node's copy of a cluster topic to the cluster's partition count.
    GrowClusterCopy {
        name: String,
        count: i32,
    },
    /// Removes this node's copy of a topic the cluster deleted (or replaced).
    DeleteClusterCopy {
        name: String,
    },
    /// Grow a topic to `count` partitions.
    CreatePartitions {
        name: String,
        count: i32,
    },
    /// Alter a topic's config.
    AlterConfigs {
        name: String,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    },
    /// Alter the dynamic broker configs.
    AlterBrokerConfigs {
        scope: Scope,
        set: Vec<(String, String)>,
        delete: Vec<String>,
    },
    /// Cluster mode: the cluster-wide dynamic broker configs etcd holds, this node's from
    /// now on.
    InstallClusterDefaults(std::collections::BTreeMap<String, String>),
}

/// One step of an admin change that every shard applies to its own copy of the catalog and
/// to the partitions it owns.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CatalogChange {
    /// Open the partitions from `from` on of a topic being created or grown that this shard
    /// owns (not yet visible), each in a fresh directory, or, for a topic being restored
    /// from the remote tier, in the directory the restore laid out.
    OpenPartitions {
        meta: TopicMeta,
        from: u32,
        restored: bool,
    },
    /// Make a created (or grown) topic visible on this shard.
    PublishTopic(TopicMeta),
    /// Unpublish a topic, close the partitions this shard owns and move their directories
    /// to the trash (deletion, or rollback of a failed create).
    RemoveTopic(TopicMeta),
    /// Close the partitions from `from` on that this shard owns and trash their directories
    /// (rollback of a failed CreatePartitions; the topic stays as it was).
    RemovePartitions { meta: TopicMeta, from: u32 },
    /// Apply a topic's altered config (already persisted by the controller).
    AlterTopic(TopicMeta),
    /// New dynamic broker configs: every topic's config is rebased on them.
    SetBrokerDefaults(BrokerDefaults),
}

pub trait AdminHost {
    fn settings(&self) -> &ServerConfig;
    fn storage(&self) -> &dyn Storage;
    /// How many shards own partitions (the placement of a new topic's partitions).
    fn shards(&self) -> u32;
    /// Whether the node runs in cluster mode: its topics are then the cluster's, changed
    /// in etcd by the controller, and copied here.
    fn in_cluster(&self) -> bool;
    fn topic(&self, name: &str) -> Option<TopicMeta>;
    /// Every topic this shard knows.
    fn topics(&self) -> Vec<TopicMeta>;
    fn broker_defaults(&self) -> BrokerDefaults;
    /// The config every topic's overrides apply to (broker defaults over the settings).
    fn topic_base(&self) -> LogConfig;
    /// The controller's turn: creations, deletions and alterations run one at a time.
    fn admin_turn(&self) -> AdminFuture<'_, AdminResult<Permit<'_>>>;
    /// Applies `change` on every shard, this one included.
    fn on_every_shard(&self, change: CatalogChange) -> AdminFuture<'_, AdminResult<()>>;
    /// Restores topic `name` from the bucket instead of creating it empty.
    fn restore_topic(&self, name: String) -> AdminFuture<'_, AdminResult<()>>;
    /// Refuses a topic whose name the bucket already holds (tiering it would mix two logs).
    fn ensure_bucket_free<'a>(&'a self, name: &'a str) -> AdminFuture<'a, AdminResult<()>>;
    /// Removes a deleted tiered topic's objects from the bucket, in the background.
    fn delete_remote_in_background(&self, name: &str);
}
