//! Where each `ShardOp` runs once it reaches its shard: the shard's own partition and
//! topic operations, and the calls of the services it runs (`calls.rs`).

use std::rc::Rc;

use crate::partition_ops::{OpOk, OpResult, PartitionOp};
use crate::protocol::ErrorCode;
use crate::shard::messages::ShardOp;
use crate::shard::runtime::{err, Shard};
use crate::TopicPartition;

impl Shard {
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
            ShardOp::Catalog(change) => self.apply_catalog_change(change).await,
            ShardOp::Service(call) => Ok(OpOk::Service(self.run_service(call).await?)),
            ShardOp::DropCaches => self.drop_local_caches().await,
            ShardOp::Stats => Ok(OpOk::Stats(self.local_stats())),
            ShardOp::Metrics => Ok(OpOk::Metrics(Box::new(self.local_metrics()))),
            ShardOp::Drained => {
                self.drained_peers.set(self.drained_peers.get() + 1);
                Ok(OpOk::Done)
            }
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
                crate::remote::tiered_ops::rebuild_manifest(self.remote_log(tp), tp).await
            }
            Some(h) => match self.remote_log(tp) {
                Some(remote) => {
                    let role = || self.remote_writer_role(&remote.topic, remote.partition);
                    crate::remote::tiered_ops::tiered_op(&h, &remote, role, op).await
                }
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
