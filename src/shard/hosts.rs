//! The shard runtime as the host of the coordinators that run on it: the group coordinator
//! (`groups::host::GroupHost`) and the transaction coordinator (`txn::host::TxnHost`). They
//! reach their internal partitions, the catalog and each other only through these; both
//! read and append their partitions the one way below.

use std::rc::Rc;

use bytes::Bytes;

use super::messages::{Isolation, OpOk, PartitionOp, ShardOp};
use super::Shard;
use crate::catalog::topics::TopicMeta;
use crate::format::control::EndTxnMarker;
use crate::groups::host::{CoordinatorHost, GroupHost, Host, HostFuture, HostResult};
use crate::groups::ops::GroupReply;
use crate::groups::OFFSETS_TOPIC;
use crate::protocol::ACKS_ALL;
use crate::settings::ServerConfig;
use crate::txn::host::{TxnHost, TxnHostRc};
use crate::txn::TRANSACTION_STATE_TOPIC;
use crate::TopicPartition;

struct ShardHost(Rc<Shard>);

impl Shard {
    /// This shard as the host of its group coordinator.
    pub(crate) fn group_host(shard: &Rc<Shard>) -> Host {
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
            isolation: Isolation::ReadUncommitted,
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
        Box::pin(async move {
            match self.0.allocate_producer_id().await? {
                OpOk::ProducerId(id) => Ok(id),
                other => unexpected(other),
            }
        })
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

    fn complete_txn_offsets(&self, p: i32, producer_id: i64, commit: bool) -> HostFuture<'_, bool> {
        Box::pin(async move {
            let Some(meta) = self.0.topic(OFFSETS_TOPIC) else {
                return true;
            };
            let op = ShardOp::CompleteTxnOffsets {
                partition: p,
                producer_id,
                commit,
            };
            let owner = meta.owners[p as usize] as usize;
            let reply = self.0.run_on(owner, op).await;
            matches!(reply, Ok(OpOk::Group(GroupReply::Code(code))) if code.is_ok())
        })
    }
}
