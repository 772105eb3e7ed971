//! Requests for a coordinator reach the shard that owns its key's partition of the internal
//! topic over the mesh: a group's offsets partition, a transactional id's state partition
//! (Kafka's rule: `abs(java hashCode(key)) % partitions`). Listing asks every shard. The
//! internal topics are created (compacted) on first use, as Kafka does. In cluster mode
//! they are the cluster's (created by the controller), a coordinator serves its keys only
//! while this node leads their partition, and it loads and forgets a partition's state as
//! the leadership comes and goes (`load`, `unload`, called from `shard/cluster/replication.rs`).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::Shard;
use crate::broker_error::BrokerError;
use crate::catalog::topics::TopicMeta;
use crate::cluster::{ClusterTopic, ClusterView, TopicSpec};
use crate::groups::ops::{GroupOp, GroupReply, ListedGroup};
use crate::groups::service::{GroupCall, GroupCoordinator};
use crate::groups::OFFSETS_TOPIC;
use crate::protocol::ErrorCode;
use crate::txn::meta::TxnMeta;
use crate::txn::ops::{TxnOp, TxnReply};
use crate::txn::service::{TxnCall, TxnCoordinator};
use crate::txn::TRANSACTION_STATE_TOPIC;
use crate::TopicPartition;

/// An internal topic (the offsets or the transaction state topic), created (compacted)
/// on first use as Kafka does: on this node, or in cluster mode by the controller (this
/// node then serves its own copy of it).
pub async fn internal_topic(shard: &Rc<Shard>, name: &str) -> Result<TopicMeta, BrokerError> {
    if let Some(view) = shard.cluster() {
        let topic = cluster_internal_topic(shard, &view, name)?;
        let copy = shard.topic(name).filter(|m| m.topic_id == topic.id);
        let why = format!("this node is still making its copy of {name}");
        return copy.ok_or(BrokerError::new(ErrorCode::NotReady, why));
    }
    if let Some(meta) = shard.topic(name) {
        return Ok(meta);
    }
    match shard.create_internal_topic(name.into()).await {
        Ok(_) => {}
        Err(e) if e.code() == ErrorCode::TopicAlreadyExists => {}
        Err(e) => return Err(e),
    }
    shard.topic(name).ok_or(BrokerError::new(
        ErrorCode::NotReady,
        format!("{name} is being created"),
    ))
}

/// How often a shard asks the controller again for an internal topic the cluster lacks.
const ASK_AGAIN: Duration = Duration::from_secs(1);

thread_local! {
    /// When this shard last asked the controller for an internal topic.
    static ASKED: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Cluster mode: the cluster's internal topic `name`; while the cluster has none, the
/// controller is asked for it (at most once a second per shard) and the caller gets
/// NotReady (COORDINATOR_NOT_AVAILABLE, which clients retry).
pub fn cluster_internal_topic<'v>(
    shard: &Rc<Shard>,
    view: &'v ClusterView,
    name: &str,
) -> Result<&'v ClusterTopic, BrokerError> {
    assert!(crate::catalog::internal_topics::is_internal(name));
    if let Some(topic) = view.topics.get(name) {
        return Ok(topic);
    }
    let due = ASKED.get().is_none_or(|at| at.elapsed() >= ASK_AGAIN);
    if let (true, Some(link)) = (due, shard.cluster_link()) {
        ASKED.set(Some(Instant::now()));
        let spec = internal_topic_spec(shard.config(), name);
        crate::tasks::spawn(async move {
            if let Err(e) = link.want_internal_topic(spec).await {
                tracing::warn!(error = %e, "asking the controller for an internal topic failed; asked again on the next request");
            }
        })
        .detach();
    }
    let why = format!("{name} is being created in the cluster");
    Err(BrokerError::new(ErrorCode::NotReady, why))
}

/// An internal topic as this node's settings make it (replication factor 0: min(3, live
/// brokers) when the controller creates it).
fn internal_topic_spec(config: &crate::settings::ServerConfig, name: &str) -> TopicSpec {
    let (partitions, configs) = crate::catalog::internal_topics::settings(name, config);
    let replication_factor = match name {
        TRANSACTION_STATE_TOPIC => config.cluster.transaction_state_log_replication_factor,
        _ => config.cluster.offsets_topic_replication_factor,
    };
    assert!(partitions > 0, "an internal topic has partitions");
    TopicSpec {
        name: name.to_string(),
        partitions: partitions as u32,
        replication_factor: replication_factor as usize,
        configs,
    }
}

/// In cluster mode: this node now leads internal partition `tp`, so its coordinator
/// reads the partition's state.
pub(crate) fn load(shard: &Rc<Shard>, tp: &TopicPartition) {
    match tp.topic.as_str() {
        OFFSETS_TOPIC => crate::groups::loading::load_now(&Shard::group_host(shard), tp.partition),
        TRANSACTION_STATE_TOPIC => {
            crate::txn::load::load_now(&Shard::txn_host(shard), tp.partition)
        }
        _ => {}
    }
}

/// In cluster mode: another node leads internal partition `tp` now (or this node leads
/// it in a new epoch), so what its coordinator held of it is forgotten.
pub(crate) fn unload(shard: &Rc<Shard>, tp: &TopicPartition) {
    match tp.topic.as_str() {
        OFFSETS_TOPIC => crate::groups::loading::unload(&*Shard::group_host(shard), tp.partition),
        TRANSACTION_STATE_TOPIC => {
            crate::txn::coordinator::unload(&*Shard::txn_host(shard), tp.partition)
        }
        _ => {}
    }
}

/// Runs a group operation on the group's coordinator shard.
pub async fn route_group(
    shard: &Rc<Shard>,
    group: String,
    op: GroupOp,
) -> Result<GroupReply, BrokerError> {
    let meta = internal_topic(shard, OFFSETS_TOPIC).await?;
    let owner = meta.owners[crate::groups::partition_for(&group, meta.owners.len())] as usize;
    assert!(owner < shard.n, "a coordinator among this run's shards");
    let call = GroupCall::Request { group, op };
    shard.call::<GroupCoordinator>(owner, call).await
}

/// Every group of every shard.
pub async fn list_groups(shard: &Rc<Shard>) -> Result<Vec<ListedGroup>, BrokerError> {
    let loading = |code: crate::groups::code::GroupCode| {
        let msg = "a coordinator is still loading its offsets partitions; retry shortly";
        BrokerError::new(code.native(), msg)
    };
    let mut all = Vec::new();
    for peer in 0..shard.n {
        match shard
            .call::<GroupCoordinator>(peer, GroupCall::List)
            .await?
        {
            GroupReply::Listed(groups) => all.extend(groups),
            GroupReply::Code(code) => return Err(loading(code)),
            other => return Err(unexpected_reply(other)),
        }
    }
    all.sort();
    Ok(all)
}

/// Runs a transaction operation on the id's coordinator shard.
pub async fn route_txn(shard: &Rc<Shard>, id: String, op: TxnOp) -> Result<TxnReply, BrokerError> {
    let meta = internal_topic(shard, TRANSACTION_STATE_TOPIC).await?;
    let owner = meta.owners[crate::txn::partition_for(&id, meta.owners.len())] as usize;
    assert!(owner < shard.n, "a coordinator among this run's shards");
    shard
        .call::<TxnCoordinator>(owner, TxnCall { id, op })
        .await
}

/// Every transactional id of every shard that has loaded state (ids of never-loaded
/// partitions have had no request since the start).
pub async fn list_txns(shard: &Rc<Shard>) -> Result<Vec<(String, TxnMeta)>, BrokerError> {
    let mut all = Vec::new();
    for peer in 0..shard.n {
        let list = TxnCall {
            id: String::new(),
            op: TxnOp::List,
        };
        let reply = shard.call::<TxnCoordinator>(peer, list).await?;
        if let TxnReply::Listed(ids) = reply {
            all.extend(ids);
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(all)
}

fn unexpected_reply(reply: impl std::fmt::Debug) -> BrokerError {
    BrokerError::new(ErrorCode::Internal, format!("unexpected reply {reply:?}"))
}
