//! The shard runtime as the host of the services that run on it: the group coordinator
//! (`groups::host::GroupHost`), the transaction coordinator (`txn::host::TxnHost`), the
//! topic lifecycle (`catalog::admin_host::AdminHost`), the security changes
//! (`security::changes::SecurityHost`) and the remote tier's background work
//! (`remote::host::TieringHost`). They reach their partitions, the catalog and each other
//! only through these; the coordinators read and append their partitions the one way below.

use std::rc::Rc;

use bytes::Bytes;

use super::messages::ShardOp;
use super::Shard;
use crate::partition_ops::{Isolation, OpOk, PartitionOp};
use glommio::channels::local_channel::LocalReceiver;
use glommio::sync::Permit;

use super::partition::actor::Job;
use crate::catalog::admin_host::{AdminFuture, AdminHost, AdminResult, CatalogChange};
use crate::catalog::broker_defaults::BrokerDefaults;
use crate::catalog::topics::TopicMeta;
use crate::config::LogConfig;
use crate::format::control::EndTxnMarker;
use crate::groups::host::{CoordinatorHost, GroupHost, Host, HostFuture, HostResult};
use crate::groups::ops::GroupReply;
use crate::groups::service::{GroupCall, GroupCoordinator};
use crate::groups::OFFSETS_TOPIC;
use crate::io::Storage;
use crate::protocol::ACKS_ALL;
use crate::remote::host::{TieringFuture, TieringHost, TieringView};
use crate::remote::partition::WriterRole;
use crate::remote::{topic_lifecycle, RemoteError, RemoteLog};
use crate::security::changes::{
    ClusterCopy, SecurityFuture, SecurityHost, SecurityKind, SecurityState, Swap,
};
use crate::security::service::SecurityInstall;
use crate::service::Call;
use crate::settings::ServerConfig;
use crate::txn::host::{TxnHost, TxnHostRc};
use crate::txn::TRANSACTION_STATE_TOPIC;
use crate::TopicPartition;

/// The shard as the host of the services that run on it (one value, every host trait).
pub(crate) struct ShardHost(pub(crate) Rc<Shard>);

impl Shard {
    /// This shard as the host of its group coordinator.
    pub(crate) fn group_host(shard: &Rc<Shard>) -> Host {
        Rc::new(ShardHost(shard.clone()))
    }

    /// This shard as the host of its remote tier's uploader.
    pub(crate) fn tiering_host(shard: &Rc<Shard>) -> Rc<dyn TieringHost> {
        Rc::new(ShardHost(shard.clone()))
    }

    /// This shard as the host of its transaction coordinator.
    pub(crate) fn txn_host(shard: &Rc<Shard>) -> TxnHostRc {
        Rc::new(ShardHost(shard.clone()))
    }
}

fn unexpected<T>(got: OpOk) -> HostResult<T> {
    Err(super::by_owner::unexpected(got))
}

/// Reads, log starts and durable appends on a coordinator's internal partitions.
impl ShardHost {
    async fn read(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        max: usize,
    ) -> HostResult<Bytes> {
        let op = PartitionOp::Fetch {
            offset,
            max_bytes: max,
            at_least_one: true,
            isolation: Isolation::LogEnd,
        };
        match self.0.partition_op(topic, partition, op).await? {
            OpOk::Fetched { records, .. } => Ok(records.to_bytes()),
            other => unexpected(other),
        }
    }

    async fn log_start(&self, topic: &str, partition: i32) -> HostResult<i64> {
        match self
            .0
            .partition_op(topic, partition, PartitionOp::Describe)
            .await?
        {
            OpOk::Partition(s) => Ok(s.log_start_offset),
            other => unexpected(other),
        }
    }

    async fn append(&self, topic: &str, partition: i32, op: PartitionOp) -> HostResult<()> {
        self.0.partition_op(topic, partition, op).await?;
        Ok(())
    }
}

impl CoordinatorHost for ShardHost {
    fn shard_id(&self) -> usize {
        self.0.id
    }

    fn shutting_down(&self) -> bool {
        self.0.shutting_down.get()
    }

    fn settings(&self) -> &ServerConfig {
        &self.0.config
    }

    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.0.topic(name)
    }

    fn coordinates(&self, topic: &str, partition: i32) -> bool {
        let me = self.0.config.cluster.broker_id;
        (self.0.cluster()).is_none_or(|view| view.leads(me, topic, partition as u32))
    }
}

impl GroupHost for ShardHost {
    fn is_ready(&self) -> bool {
        self.0.is_ready()
    }

    fn read_offsets(&self, p: i32, offset: i64, max: usize) -> HostFuture<'_, HostResult<Bytes>> {
        Box::pin(self.read(OFFSETS_TOPIC, p, offset, max))
    }

    fn offsets_log_start(&self, partition: i32) -> HostFuture<'_, HostResult<i64>> {
        Box::pin(self.log_start(OFFSETS_TOPIC, partition))
    }

    fn append_txn_offsets(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>> {
        let op = PartitionOp::CoordinatorAppend { records: batch };
        Box::pin(self.append(OFFSETS_TOPIC, partition, op))
    }

    fn append_offsets(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>> {
        let op = PartitionOp::produce(ACKS_ALL, batch);
        Box::pin(self.append(OFFSETS_TOPIC, partition, op))
    }
}

impl TxnHost for ShardHost {
    fn state_log_start(&self, partition: i32) -> HostFuture<'_, HostResult<i64>> {
        Box::pin(self.log_start(TRANSACTION_STATE_TOPIC, partition))
    }

    fn read_state(&self, p: i32, offset: i64, max: usize) -> HostFuture<'_, HostResult<Bytes>> {
        Box::pin(self.read(TRANSACTION_STATE_TOPIC, p, offset, max))
    }

    fn append_state(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>> {
        let op = PartitionOp::produce(ACKS_ALL, batch);
        Box::pin(self.append(TRANSACTION_STATE_TOPIC, partition, op))
    }

    fn allocate_producer_id(&self) -> HostFuture<'_, HostResult<i64>> {
        Box::pin(self.0.allocate_producer_id())
    }

    fn write_marker<'a>(
        &'a self,
        tp: &'a TopicPartition,
        (producer_id, epoch): (i64, i16),
        marker: EndTxnMarker,
    ) -> HostFuture<'a, HostResult<()>> {
        let op = PartitionOp::WriteMarker {
            producer_id,
            epoch,
            marker,
        };
        Box::pin(self.append(&tp.topic, tp.partition, op))
    }

    fn marker_elsewhere<'a>(
        &'a self,
        tp: &'a TopicPartition,
        producer: (i64, i16),
        marker: EndTxnMarker,
    ) -> Option<HostFuture<'a, HostResult<()>>> {
        self.0.marker_elsewhere(tp, producer, marker)
    }

    fn complete_txn_offsets(&self, p: i32, producer_id: i64, commit: bool) -> HostFuture<'_, bool> {
        Box::pin(async move {
            let Some(meta) = self.0.topic(OFFSETS_TOPIC) else {
                return true;
            };
            let call = GroupCall::CompleteTxnOffsets {
                partition: p,
                producer_id,
                commit,
            };
            let owner = meta.owners[p as usize] as usize;
            let reply = self.0.call::<GroupCoordinator>(owner, call).await;
            matches!(reply, Ok(GroupReply::Code(code)) if code.is_ok())
        })
    }
}

impl AdminHost for ShardHost {
    fn settings(&self) -> &ServerConfig {
        &self.0.config
    }

    fn storage(&self) -> &dyn Storage {
        &*self.0.storage
    }

    fn shards(&self) -> u32 {
        self.0.n as u32
    }

    fn in_cluster(&self) -> bool {
        self.0.cluster_link().is_some()
    }

    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.0.topic(name)
    }

    fn topics(&self) -> Vec<TopicMeta> {
        self.0.topics.borrow().values().cloned().collect()
    }

    fn broker_defaults(&self) -> BrokerDefaults {
        self.0.broker_defaults()
    }

    fn topic_base(&self) -> LogConfig {
        self.0.topic_base()
    }

    fn admin_turn(&self) -> AdminFuture<'_, AdminResult<Permit<'_>>> {
        Box::pin(self.0.admin_turn())
    }

    fn on_every_shard(&self, change: CatalogChange) -> AdminFuture<'_, AdminResult<()>> {
        Box::pin(async move {
            self.0.on_every_shard(ShardOp::Catalog(change)).await?;
            Ok(())
        })
    }

    fn restore_topic(&self, name: String) -> AdminFuture<'_, AdminResult<()>> {
        Box::pin(topic_lifecycle::restore_topic(
            self,
            self.0.tiering.as_ref(),
            name,
        ))
    }

    fn ensure_bucket_free<'a>(&'a self, name: &'a str) -> AdminFuture<'a, AdminResult<()>> {
        Box::pin(topic_lifecycle::ensure_bucket_free(
            self.0.tiering.as_ref(),
            name,
        ))
    }

    fn delete_remote_in_background(&self, name: &str) {
        topic_lifecycle::delete_in_background(self.0.tiering.as_ref(), name)
    }
}

impl TieringHost for ShardHost {
    fn settings(&self) -> &ServerConfig {
        &self.0.config
    }

    fn storage(&self) -> &Rc<dyn Storage> {
        &self.0.storage
    }

    fn shutting_down(&self) -> bool {
        self.0.shutting_down.get()
    }

    fn shutdown_listener(&self) -> LocalReceiver<()> {
        self.0.shutdown_listener()
    }

    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.0.topic(name)
    }

    fn writer_role(&self, tp: &TopicPartition) -> WriterRole {
        self.0.remote_writer_role(&tp.topic, tp.partition as u32)
    }

    fn tiered_partitions(&self) -> Vec<(TopicPartition, Rc<RemoteLog>)> {
        let logs = self.0.remote_logs.borrow();
        logs.iter().map(|(tp, r)| (tp.clone(), r.clone())).collect()
    }

    fn tiering_view(
        &self,
        tp: &TopicPartition,
        copied: i64,
        copy_limit: usize,
    ) -> TieringFuture<'_, Option<Result<TieringView, RemoteError>>> {
        let handle = self.0.partition_handle(tp);
        let tp = tp.clone();
        Box::pin(async move {
            let job = |reply| Job::Tiering {
                from_offset: copied,
                copied_end: Some(copied),
                copy_limit,
                reply,
            };
            let view = handle?.job(job).await?;
            Some(view.map_err(|e| RemoteError::Local(format!("{tp}: {e}"))))
        })
    }
}

impl SecurityHost for ShardHost {
    fn storage(&self) -> &dyn Storage {
        &*self.0.storage
    }

    fn meta_dir(&self) -> std::path::PathBuf {
        self.0
            .config
            .data_dir
            .join(crate::catalog::topics::META_DIR)
    }

    fn admin_turn(
        &self,
    ) -> SecurityFuture<'_, Result<Permit<'_>, crate::broker_error::BrokerError>> {
        Box::pin(self.0.admin_turn())
    }

    fn install_everywhere(
        &self,
        state: SecurityState,
    ) -> SecurityFuture<'_, Result<(), crate::broker_error::BrokerError>> {
        Box::pin(async move {
            let call = Call::new::<SecurityInstall>(state);
            self.0.on_every_shard(ShardOp::Service(call)).await?;
            Ok(())
        })
    }

    fn cluster_copy(&self) -> Option<&dyn ClusterCopy> {
        self.0.cluster_link().map(|_| self as &dyn ClusterCopy)
    }
}

impl ClusterCopy for ShardHost {
    fn last_seen(&self, kind: SecurityKind) -> Option<(Vec<u8>, i64)> {
        let view = self.0.cluster()?;
        let stored = view.security.get(kind.name())?;
        Some((stored.value.clone(), stored.revision))
    }

    fn swap(
        &self,
        kind: SecurityKind,
        expected: i64,
        text: String,
    ) -> SecurityFuture<'_, Result<Swap, crate::broker_error::BrokerError>> {
        use crate::cluster::security::Swapped;
        Box::pin(async move {
            let link = self.0.cluster_link().expect("cluster mode has a link");
            let of = crate::cluster::SharedValue::Security(kind.name().to_string());
            let swapped = link.swap_value(of, expected, text.into_bytes()).await;
            let unreachable = |e: crate::cluster::TopicRefused| {
                let code = crate::protocol::ErrorCode::RequestTimedOut;
                crate::broker_error::BrokerError::new(code, e.to_string())
            };
            match swapped.map_err(unreachable)? {
                Swapped::Done { revision } => Ok(Swap::Done(revision)),
                Swapped::Raced { now } => Ok(Swap::Raced(now.map(|v| (v.value, v.revision)))),
            }
        })
    }
}

impl crate::catalog::producer_ids::BlockClaims for ShardHost {
    fn claim_block(&self, next: Option<i64>) -> AdminFuture<'_, AdminResult<(i64, i64)>> {
        Box::pin(self.0.claim_producer_id_block(next))
    }
}
