//! The shard runtime as the group coordinator's host (`groups::host::GroupHost`): the
//! coordinator reaches its offsets partitions and the catalog only through this.

use std::rc::Rc;

use bytes::Bytes;

use super::messages::{Isolation, OpOk, PartitionOp};
use super::Shard;
use crate::catalog::topics::TopicMeta;
use crate::groups::host::{GroupHost, Host, HostFuture, HostResult};
use crate::groups::OFFSETS_TOPIC;
use crate::protocol::ACKS_ALL;
use crate::settings::ServerConfig;

struct ShardHost(Rc<Shard>);

impl Shard {
    /// This shard as the host of its group coordinator.
    pub(crate) fn group_host(shard: &Rc<Shard>) -> Host {
        Rc::new(ShardHost(shard.clone()))
    }
}

fn unexpected<T>(got: OpOk) -> HostResult<T> {
    Err(super::by_owner::unexpected(got))
}

impl GroupHost for ShardHost {
    fn shard_id(&self) -> usize {
        self.0.id
    }

    fn is_ready(&self) -> bool {
        self.0.is_ready()
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

    fn read_offsets(
        &self,
        partition: i32,
        offset: i64,
        max_bytes: usize,
    ) -> HostFuture<'_, HostResult<Bytes>> {
        Box::pin(async move {
            let op = PartitionOp::Fetch {
                offset,
                max_bytes,
                at_least_one: true,
                isolation: Isolation::ReadUncommitted,
            };
            match self.0.partition_op(OFFSETS_TOPIC, partition, op).await? {
                OpOk::Fetched { records, .. } => Ok(records.to_bytes()),
                other => unexpected(other),
            }
        })
    }

    fn offsets_log_start(&self, partition: i32) -> HostFuture<'_, HostResult<i64>> {
        Box::pin(async move {
            let op = PartitionOp::Describe;
            match self.0.partition_op(OFFSETS_TOPIC, partition, op).await? {
                OpOk::Partition(s) => Ok(s.log_start_offset),
                other => unexpected(other),
            }
        })
    }

    fn append_txn_offsets(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>> {
        Box::pin(async move {
            let op = PartitionOp::CoordinatorAppend { records: batch };
            self.0.partition_op(OFFSETS_TOPIC, partition, op).await?;
            Ok(())
        })
    }

    fn append_offsets(&self, partition: i32, batch: Bytes) -> HostFuture<'_, HostResult<()>> {
        Box::pin(async move {
            let op = PartitionOp::produce(ACKS_ALL, batch);
            self.0.partition_op(OFFSETS_TOPIC, partition, op).await?;
            Ok(())
        })
    }
}
