//! The remote tier on the shard: which partitions it owns are tiered (a `RemoteLog` beside
//! each one's task, decided when the partition opens or its topic's config changes), and
//! this node's part in each. Serving their operations across both tiers is
//! `remote/tiered_ops.rs`'s, which reaches the partition's task through `LocalPartition`
//! (implemented below); the uploader, restore and the read replica's topic sync are
//! `remote/`'s too.

use crate::partition_ops::{OpResult, PartitionOp};
use crate::remote::partition::WriterRole;
use crate::remote::tiered_ops::{LocalFuture, LocalPartition};
use crate::remote::RemoteLog;
use crate::shard::partition::actor::{Job, PartitionHandle};
use crate::shard::runtime::Shard;
use crate::topic_partition::TopicPartition;
use std::rc::Rc;

impl Shard {
    /// The remote tier of a partition this shard owns, if its topic is tiered.
    pub fn remote_log(&self, tp: &TopicPartition) -> Option<Rc<RemoteLog>> {
        self.remote_logs.borrow().get(tp).cloned()
    }

    /// Gives an owned partition of a tiered topic its remote tier (on open, or when
    /// remote.storage.enable is turned on).
    pub(crate) fn attach_remote(
        &self,
        topic: &str,
        partition: u32,
        tiered: bool,
        local_start: i64,
    ) {
        let tp = TopicPartition::new(topic, partition as i32);
        let Some(tiering) = self.tiering.as_ref().filter(|_| tiered) else {
            self.remote_logs.borrow_mut().remove(&tp);
            return;
        };
        let remote = self
            .remote_logs
            .borrow_mut()
            .entry(tp)
            .or_insert_with(|| {
                RemoteLog::new(
                    tiering.store.clone(),
                    tiering.writer.as_str().into(),
                    topic,
                    partition,
                    self.config.remote_read_replica,
                )
            })
            .clone();
        if local_start >= 0 {
            remote.local_start.set(local_start);
        }
    }

    /// Forgets the remote tiers of a topic's partitions (the topic is gone from this shard).
    pub(crate) fn detach_remote(&self, topic: &str) {
        self.remote_logs
            .borrow_mut()
            .retain(|tp, _| tp.topic != topic);
    }

    /// This node's part in a partition's remote tier: the only node, its leader (in which
    /// epoch), or a follower.
    pub(crate) fn remote_writer_role(&self, topic: &str, partition: u32) -> WriterRole {
        let Some(view) = self.cluster() else {
            return WriterRole::Sole;
        };
        let me = self.config().cluster.broker_id;
        match view.leader_epoch_of(me, topic, partition) {
            Some(epoch) => WriterRole::Leader(epoch),
            None => WriterRole::Follower,
        }
    }
}

impl LocalPartition for PartitionHandle {
    fn call(&self, op: PartitionOp) -> LocalFuture<'_, OpResult> {
        Box::pin(PartitionHandle::call(self, op))
    }

    fn aborted_txns(&self, from: i64, upper: i64) -> LocalFuture<'_, Vec<(i64, i64)>> {
        Box::pin(async move {
            let job = |reply| Job::AbortedTxns { from, upper, reply };
            self.job(job).await.unwrap_or_default()
        })
    }
}
