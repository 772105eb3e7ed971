//! A shard in cluster mode: it keeps a copy of the cluster view the etcd session
//! publishes and hands each replicated partition it owns its state
//! (`replication.rs`), and the controller shard (shard 0) keeps this node's copies of the cluster's
//! topics in step with etcd: a topic created in the cluster is created here with the
//! cluster's topic id, one deleted there is deleted here, and a local topic of the same
//! name with another id (the topic was deleted and created again while this node was
//! away) is replaced, as Kafka does with topic ids (KIP-516).

pub(crate) mod replication;

use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use crate::broker_error::BrokerError;
use crate::catalog::admin_host::AdminRequest;
use crate::cluster::{ClusterLink, ClusterTopic, ClusterView};
use crate::format::control::EndTxnMarker;
use crate::groups::host::{HostFuture, HostResult};
use crate::protocol::ErrorCode;
use crate::shard::runtime::{Shard, CONTROLLER};
use crate::txn::host::PeerCalls;
use crate::TopicPartition;
use replication::ReplicaStates;

/// How soon a copy that could not be made (the shard still loading, a failed create) is
/// tried again when no new view comes first.
const RETRY: Duration = Duration::from_secs(1);

impl Shard {
    /// Installs what this shard asks of other nodes (cluster mode, at start).
    pub fn install_peer_calls(&self, calls: Rc<dyn PeerCalls>) {
        *self.peer_calls.borrow_mut() = Some(calls);
    }

    /// Where the marker for `tp` goes when another node leads it (cluster mode): that
    /// node's write, or why it cannot be made now. `None`: this node writes it.
    pub(crate) fn marker_elsewhere<'a>(
        &'a self,
        tp: &'a TopicPartition,
        producer: (i64, i16),
        marker: EndTxnMarker,
    ) -> Option<HostFuture<'a, HostResult<()>>> {
        let view = self.cluster()?;
        let me = self.config().cluster.broker_id;
        if view.leads(me, &tp.topic, tp.partition as u32) {
            return None;
        }
        let calls = self.peer_calls.borrow().clone();
        Some(Box::pin(async move {
            let state = (view.topics.get(&tp.topic))
                .and_then(|t| t.partitions.get(usize::try_from(tp.partition).ok()?));
            let leader = state.and_then(|p| p.state.leader);
            let leader = leader.filter(|&l| view.leads(l, &tp.topic, tp.partition as u32));
            let (Some(leader), Some(calls)) = (leader, calls) else {
                let why = format!("{tp} has no live leader now; the marker is written once it has");
                return Err(BrokerError::new(ErrorCode::NotLeader, why));
            };
            assert_ne!(leader, me, "a marker goes to another node");
            calls
                .write_marker(&view, leader, tp, producer, marker)
                .await
        }))
    }

    /// Enforces the cluster's SCRAM credentials and ACLs from the latest view, where they
    /// are newer than this shard's.
    fn install_cluster_security(&self) {
        let Some(view) = self.cluster() else { return };
        for (name, stored) in &view.security {
            crate::security::state::install_stored(name, &stored.value, stored.revision);
        }
    }

    /// The cluster as this shard last heard of it; `None` outside cluster mode.
    pub fn cluster(&self) -> Option<Arc<ClusterView>> {
        self.cluster.borrow().clone()
    }

    /// The cluster thread's link (cluster mode only).
    pub fn cluster_link(&self) -> Option<ClusterLink> {
        self.cluster_commands.borrow().clone()
    }

    /// Keeps this shard's copy of the cluster view current (one `Arc` swap per view; the
    /// session's thread is never waited on), and on the controller shard this node's
    /// topics in step with the cluster's.
    pub fn follow_cluster(self: &Rc<Self>, link: ClusterLink) {
        let mut views = link.views.clone();
        *self.cluster.borrow_mut() = Some(views.borrow_and_update().clone());
        self.install_cluster_security();
        *self.cluster_commands.borrow_mut() = Some(link);
        let shard = self.clone();
        self.tick_led_partitions();
        crate::tasks::spawn(async move {
            let mut copies = (shard.id == CONTROLLER).then(TopicCopies::default);
            let mut replicas = ReplicaStates::default();
            loop {
                let mut settled = match copies.as_mut() {
                    Some(copies) => {
                        copies.reconcile(&shard).await & follow_broker_defaults(&shard).await
                    }
                    None => true,
                };
                if let Some(view) = shard.cluster().filter(|_| shard.is_ready()) {
                    settled &= replicas.apply(&shard, &view).await;
                }
                let changed = async { views.changed().await.is_ok() };
                let retry = async {
                    glommio::timer::sleep(RETRY).await;
                    true
                };
                let go_on = match settled {
                    true => changed.await,
                    false => futures_lite::future::or(changed, retry).await,
                };
                if !go_on {
                    break;
                }
                *shard.cluster.borrow_mut() = Some(views.borrow_and_update().clone());
                shard.install_cluster_security();
            }
        })
        .detach();
    }
}

/// Installs the cluster-wide dynamic broker configs etcd holds where this node's differ
/// (on the controller shard, which makes them every shard's): whether nothing is left to do.
async fn follow_broker_defaults(shard: &Rc<Shard>) -> bool {
    let view = shard.cluster().filter(|_| shard.is_ready());
    let Some(stored) = view.as_ref().and_then(|v| v.broker_defaults.as_ref()) else {
        return true;
    };
    let text = String::from_utf8_lossy(&stored.value);
    let parsed = crate::catalog::broker_defaults::BrokerDefaults::parse_cluster_text(&text);
    let cluster = match parsed {
        Ok(cluster) => cluster,
        Err(e) => {
            tracing::warn!(error = %e, "the cluster's broker configs in etcd cannot be read; this node keeps its own");
            return true;
        }
    };
    if shard.broker_defaults().cluster == cluster {
        return true;
    }
    let install = crate::catalog::admin_host::AdminRequest::InstallClusterDefaults(cluster.clone());
    match shard.admin(install).await {
        Ok(_) => {
            let installed = shard.broker_defaults().cluster;
            assert_eq!(installed, cluster, "installed on every shard, this one too");
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "the cluster's broker configs were not installed here yet");
            false
        }
    }
}

/// The controller shard's memory of which cluster topics it has seen, so that a topic
/// gone from etcd is deleted here, while a local topic the cluster never had (a stray) is
/// only reported.
#[derive(Default)]
struct TopicCopies {
    seen: Option<BTreeSet<String>>,
}

impl TopicCopies {
    /// Brings this node's topics in step with the latest view: whether all of it was done.
    async fn reconcile(&mut self, shard: &Rc<Shard>) -> bool {
        let Some(view) = shard.cluster() else {
            return true;
        };
        if !shard.is_ready() || shard.is_shutting_down() {
            return false;
        }
        let mut settled = true;
        for topic in view.topics.values() {
            settled &= copy_topic(shard, topic).await;
        }
        let mut seen: BTreeSet<String> = view.topics.keys().cloned().collect();
        match self.seen.take() {
            Some(before) => {
                for name in before.difference(&seen.clone()) {
                    if !drop_copy(shard, name).await {
                        seen.insert(name.clone());
                        settled = false;
                    }
                }
            }
            None => report_strays(shard, &view),
        }
        self.seen = Some(seen);
        settled
    }
}

/// Makes this node's copy of a cluster topic: whether it now has it.
async fn copy_topic(shard: &Rc<Shard>, topic: &ClusterTopic) -> bool {
    match shard.topic(&topic.name) {
        Some(local) if local.topic_id == topic.id => {
            let grown = grow_copy(shard, topic, &local).await;
            return grown && configure_copy(shard, topic, &local).await;
        }
        Some(local) => {
            tracing::warn!(topic = %topic.name, local_id = %local.topic_id, cluster_id = %topic.id, "this node's topic of that name is not the cluster's (it was deleted and created again while this node was away): replacing it");
            if !drop_copy(shard, &topic.name).await {
                return false;
            }
        }
        None => {}
    }
    let request = AdminRequest::CopyClusterTopic {
        name: topic.name.clone(),
        id: topic.id,
        partitions: topic.partitions.len() as i32,
        configs: topic.configs.clone(),
    };
    match shard.admin(request).await {
        Ok(_) => {
            tracing::info!(topic = %topic.name, partitions = topic.partitions.len(), "copied a cluster topic to this node");
            true
        }
        Err(e) if e.code() == ErrorCode::TopicAlreadyExists => false,
        Err(e) => {
            tracing::warn!(topic = %topic.name, error = %e, "copying a cluster topic to this node failed; retrying");
            false
        }
    }
}

/// Grows this node's copy of a topic the cluster grew: whether it has every partition.
async fn grow_copy(
    shard: &Rc<Shard>,
    topic: &ClusterTopic,
    local: &crate::catalog::topics::TopicMeta,
) -> bool {
    let count = topic.partitions.len() as i32;
    if local.partitions() as i32 >= count {
        return true;
    }
    let request = AdminRequest::GrowClusterCopy {
        name: topic.name.clone(),
        count,
    };
    carried_out(shard, &topic.name, request, "growing").await
}

/// Runs one step of keeping this node's copy in step: whether it was done (a failure is
/// logged, and the step tried again).
async fn carried_out(shard: &Rc<Shard>, name: &str, request: AdminRequest, doing: &str) -> bool {
    match shard.admin(request).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(topic = %name, error = %e, "{doing} this node's copy of a cluster topic failed; retrying");
            false
        }
    }
}

/// Gives this node's copy of a topic the cluster's config overrides: whether it has them.
async fn configure_copy(
    shard: &Rc<Shard>,
    topic: &ClusterTopic,
    local: &crate::catalog::topics::TopicMeta,
) -> bool {
    let wanted: std::collections::BTreeMap<String, String> =
        topic.configs.iter().cloned().collect();
    if local.config.overrides == wanted {
        return true;
    }
    let delete = (local.config.overrides.keys())
        .filter(|k| !wanted.contains_key(*k))
        .cloned()
        .collect();
    let request = AdminRequest::AlterClusterCopy {
        name: topic.name.clone(),
        set: topic.configs.clone(),
        delete,
    };
    carried_out(shard, &topic.name, request, "configuring").await
}

/// Deletes this node's copy of a topic the cluster no longer has: whether it is gone.
async fn drop_copy(shard: &Rc<Shard>, name: &str) -> bool {
    let request = AdminRequest::DeleteClusterCopy {
        name: name.to_string(),
    };
    match shard.admin(request).await {
        Ok(_) => true,
        Err(e) if e.code() == ErrorCode::UnknownTopic => true,
        Err(e) => {
            tracing::warn!(topic = %name, error = %e, "deleting this node's copy of a deleted cluster topic failed; retrying");
            false
        }
    }
}

/// Local topics the cluster does not have, found at the first view: left on disk (a
/// misnamed `cluster.name` must not wipe a node) and not served as cluster topics.
fn report_strays(shard: &Rc<Shard>, view: &ClusterView) {
    let strays: Vec<String> = shard
        .topics_snapshot(None)
        .into_iter()
        .filter_map(Result::ok)
        .map(|meta| meta.name)
        .filter(|name| !view.topics.contains_key(name))
        .filter(|name| !crate::catalog::internal_topics::is_internal(name))
        .collect();
    if !strays.is_empty() {
        tracing::warn!(?strays, "this node holds topics the cluster does not have; they stay on disk, unserved, until deleted with `shardlog topics delete`");
    }
}
