//! Requests about topics' logs rather than their records: DeleteRecords, DescribeLogs,
//! RollSegments, RunLogMaintenance and RebuildRemoteManifest. Each goes to the partitions'
//! owner shards like any partition request.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::partition_ops::{MaintenanceSummary, OpOk, PartitionOp};
use crate::protocol::{ErrorCode, LogDirInfo, RebuiltManifest, Request, ResponseBody};
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
        } => shard
            .delete_records(&topic, partition, offset)
            .await
            .map(|low_watermark| ResponseBody::DeleteRecords { low_watermark }),
        Request::DescribeLogs { topics } => describe(shard, topics).await,
        Request::RollSegments { topic, partition } => roll(shard, &topic, partition).await,
        Request::RunLogMaintenance { topic } => maintain(shard, &topic).await,
        Request::RebuildRemoteManifest { topic, partition } => {
            rebuild(shard, &topic, partition).await
        }
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

/// Each partition's outcome on its own: one that needs no rebuild does not hide another
/// that does.
async fn rebuild(shard: &Rc<Shard>, topic: &str, partition: i32) -> Reply {
    let mut rebuilt = Vec::new();
    for p in partitions_of(shard, topic, partition)? {
        let outcome = shard
            .partition_op(topic, p, PartitionOp::RebuildManifest)
            .await;
        rebuilt.push(match outcome {
            Ok(OpOk::ManifestRebuilt(r)) => RebuiltManifest {
                partition: p,
                error_code: ErrorCode::None,
                error_message: String::new(),
                segments: r.segments as i32,
                log_start_offset: r.log_start_offset,
                next_offset: r.next_offset,
                notes: r.notes,
            },
            Ok(other) => return Err(unexpected("RebuildRemoteManifest", other)),
            Err(e) => RebuiltManifest {
                partition: p,
                error_code: e.code(),
                error_message: e.message(),
                segments: 0,
                log_start_offset: -1,
                next_offset: -1,
                notes: Vec::new(),
            },
        });
    }
    Ok(ResponseBody::RebuildRemoteManifest(rebuilt))
}

async fn describe(shard: &Rc<Shard>, topics: Option<Vec<String>>) -> Reply {
    let topics = crate::shard::services::log_info::describe_logs(shard, topics.as_deref()).await?;
    let dir = &shard.config().data_dir;
    let (total, usable) = crate::io::os::disk_space(dir).unwrap_or((0, 0));
    Ok(ResponseBody::DescribeLogs(LogDirInfo {
        log_dir: crate::shard::services::log_info::log_dir_name(dir),
        total_bytes: total as i64,
        usable_bytes: usable as i64,
        topics,
    }))
}
