//! Requests about topics' logs rather than their records: DeleteRecords, AlterConfigs,
//! DescribeLogs, RollSegments and RunLogMaintenance. Each goes to the partitions' owner
//! shards (or to the controller for AlterConfigs) like any partition request.

use crate::catalog::error::UnknownTopic;
use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::protocol::{ErrorCode, PartitionLogInfo, Request, ResponseBody, TopicLogInfo};
use crate::shard::messages::{MaintenanceSummary, OpOk, PartitionOp};
use crate::shard::runtime::Shard;

type Reply = Result<ResponseBody, BrokerError>;

fn unexpected(what: &str, got: OpOk) -> BrokerError {
    BrokerError::new(ErrorCode::Internal, format!("{what} got {got:?}"))
}

/// Runs one of the log requests; `None` when `request` is not one of them.
pub async fn dispatch(shard: &Rc<Shard>, request: Request) -> Option<Reply> {
    Some(match request {
        Request::DeleteRecords {
            topic,
            partition,
            offset,
        } => crate::shard::admin::delete_records(shard, &topic, partition, offset)
            .await
            .map(|low_watermark| ResponseBody::DeleteRecords { low_watermark }),
        Request::AlterConfigs { topic, set, delete } => shard
            .alter_configs(topic, set, delete)
            .await
            .map(|_| ResponseBody::Empty),
        Request::DescribeLogs { topics } => describe(shard, topics).await,
        Request::RollSegments { topic, partition } => roll(shard, &topic, partition).await,
        Request::RunLogMaintenance { topic } => maintain(shard, &topic).await,
        _ => return None,
    })
}

/// The partitions a request names: one, or every partition of the topic for -1.
fn partitions_of(shard: &Shard, topic: &str, partition: i32) -> Result<Vec<i32>, BrokerError> {
    let meta = shard.topic(topic).ok_or_else(|| {
        BrokerError::new(ErrorCode::UnknownTopic, format!("unknown topic {topic:?}"))
    })?;
    Ok(match partition {
        -1 => (0..meta.partitions() as i32).collect(),
        p => vec![p],
    })
}

async fn roll(shard: &Rc<Shard>, topic: &str, partition: i32) -> Reply {
    for p in partitions_of(shard, topic, partition)? {
        shard.partition_op(topic, p, PartitionOp::Roll).await?;
    }
    Ok(ResponseBody::Empty)
}

async fn maintain(shard: &Rc<Shard>, topic: &str) -> Reply {
    let mut total = MaintenanceSummary::default();
    for p in partitions_of(shard, topic, -1)? {
        match shard.partition_op(topic, p, PartitionOp::Maintain).await? {
            OpOk::Maintained(s) => total.add(&s),
            other => return Err(unexpected("RunLogMaintenance", other)),
        }
    }
    Ok(ResponseBody::LogMaintenance {
        segments_deleted: total.segments_deleted as i64,
        bytes_deleted: total.bytes_deleted as i64,
        records_removed: total.records_removed as i64,
    })
}

async fn describe(shard: &Rc<Shard>, topics: Option<Vec<String>>) -> Reply {
    let mut out = Vec::new();
    for t in shard.topics_snapshot(topics.as_deref()) {
        let meta = match t {
            Ok(meta) => meta,
            Err(UnknownTopic(name)) => {
                out.push(TopicLogInfo {
                    name,
                    error_code: ErrorCode::UnknownTopic,
                    overrides: Vec::new(),
                    partitions: Vec::new(),
                });
                continue;
            }
        };
        let mut partitions = Vec::with_capacity(meta.owners.len());
        for (p, &owner) in meta.owners.iter().enumerate() {
            let s = match shard
                .partition_op(&meta.name, p as i32, PartitionOp::Describe)
                .await?
            {
                OpOk::Partition(s) => s,
                other => return Err(unexpected("DescribeLogs", other)),
            };
            partitions.push(PartitionLogInfo {
                partition: p as i32,
                owner_shard: owner as i32,
                log_start_offset: s.log_start_offset,
                log_end_offset: s.log_end_offset,
                size_bytes: s.size_bytes as i64,
                segments: s.segments as i32,
            });
        }
        out.push(TopicLogInfo {
            name: meta.name.clone(),
            error_code: ErrorCode::None,
            overrides: meta.config.overrides.keys().cloned().collect(),
            partitions,
        });
    }
    Ok(ResponseBody::DescribeLogs(out))
}
