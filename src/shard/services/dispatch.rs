//! Where each `ShardOp` runs once it reaches its shard: the shard's own partition and
//! topic operations, and the services (topic admin, groups, transactions, security,
//! producer ids) through their entry points.

use std::rc::Rc;

use crate::protocol::ErrorCode;
use crate::shard::messages::{OpOk, OpResult, PartitionOp, ShardOp};
use crate::shard::runtime::{err, Shard};
use crate::TopicPartition;

impl Shard {
    /// The group and transaction coordinators of this shard.
    pub(in crate::shard) async fn execute_coordinator(self: &Rc<Self>, op: ShardOp) -> OpResult {
        use crate::groups::{loading, ops::GroupReply};
        match op {
            ShardOp::Group { group, op } => Ok(OpOk::Group(
                crate::groups::requests::handle(&Shard::group_host(self), group, op).await,
            )),
            ShardOp::Txn { id, op } => Ok(OpOk::Txn(
                crate::txn::ops::handle(&Shard::txn_host(self), id, op).await,
            )),
            ShardOp::CompleteTxnOffsets {
                partition,
                producer_id,
                commit,
            } => {
                let host = Shard::group_host(self);
                let code = loading::complete_txn(&host, partition, producer_id, commit).await;
                Ok(OpOk::Group(GroupReply::Code(code)))
            }
            ShardOp::ListGroups => Ok(OpOk::Group(
                match loading::list(&Shard::group_host(self)).await {
                    Ok(groups) => GroupReply::Listed(groups),
                    Err(code) => GroupReply::Code(code),
                },
            )),
            other => unreachable!("{other:?} is not a coordinator operation"),
        }
    }

    pub(crate) async fn execute(self: &Rc<Self>, op: ShardOp) -> OpResult {
        match op {
            ShardOp::Partition { tp, op } => self.local_partition_op(&tp, op).await,
            ShardOp::Partitions(ops) => Ok(OpOk::Results(self.local_partition_ops(ops).await)),
            ShardOp::FetchInOrder {
                reads,
                max_bytes,
                first_at_least_one,
                isolation,
            } => Ok(OpOk::Results(
                self.fetch_in_order(reads, max_bytes, first_at_least_one, isolation)
                    .await,
            )),
            ShardOp::Admin(request) => Box::pin(self.run_admin_here(request)).await,
            ShardOp::Catalog(change) => self.apply_catalog_change(change).await,
            ShardOp::Security(change) => {
                let outcome = Box::pin(self.security_change_here(change)).await?;
                Ok(OpOk::Security(outcome))
            }
            ShardOp::InstallSecurity(state) => {
                crate::security::changes::install(state);
                Ok(OpOk::Done)
            }
            ShardOp::DropCaches => self.drop_local_caches().await,
            ShardOp::Stats => Ok(OpOk::Stats(self.local_stats())),
            ShardOp::Metrics => Ok(OpOk::Metrics(Box::new(self.local_metrics()))),
            ShardOp::Drained => {
                self.drained_peers.set(self.drained_peers.get() + 1);
                Ok(OpOk::Done)
            }
            ShardOp::AllocateProducerId => self.allocate_producer_id_here().await,
            op @ (ShardOp::Group { .. }
            | ShardOp::Txn { .. }
            | ShardOp::ListGroups
            | ShardOp::CompleteTxnOffsets { .. }) => Box::pin(self.execute_coordinator(op)).await,
            ShardOp::WaitForAppends {
                waits,
                timeout_ms,
                reader,
            } => {
                crate::shard::services::long_poll::wait_here(self, &waits, timeout_ms, reader)
                    .await;
                Ok(OpOk::Done)
            }
        }
    }

    pub(in crate::shard) async fn local_partition_op(
        &self,
        tp: &TopicPartition,
        op: PartitionOp,
    ) -> OpResult {
        let handle = self.partitions.borrow().get(tp).cloned();
        match handle {
            Some(h) if matches!(op, PartitionOp::Maintain) => Ok(OpOk::Maintained(
                crate::shard::services::maintenance::maintain_now(self, &h).await,
            )),
            Some(_) if matches!(op, PartitionOp::RebuildManifest) => {
                crate::shard::services::tiering::rebuild_manifest(self.remote_log(tp), tp).await
            }
            Some(h) => match self.remote_log(tp) {
                Some(remote) => self.tiered_op(&h, &remote, op).await,
                None => h.call(op).await,
            },
            None if self.offline.borrow().contains_key(tp) => {
                let why = self.offline.borrow().get(tp).cloned().unwrap_or_default();
                let why = format!("partition {tp} is offline: {why}");
                err(ErrorCode::StorageError, why)
            }
            None if !self.ready.get() => err(
                ErrorCode::NotReady,
                format!(
                    "shard {} is still opening its partitions; retry shortly",
                    self.id
                ),
            ),
            // Deleted while the request was forwarded here.
            None if !self.has_topic(&tp.topic) => {
                let topic = &tp.topic;
                err(ErrorCode::UnknownTopic, format!("unknown topic {topic:?}"))
            }
            None => err(
                ErrorCode::UnknownPartition,
                format!("partition {tp} is not open on shard {}", self.id),
            ),
        }
    }
}
