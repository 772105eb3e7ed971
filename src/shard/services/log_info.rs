//! What each partition's log holds (offsets, size, segments, owner shard, the cleaner's
//! view), gathered from the owner shards: the native DescribeLogs and Kafka's
//! DescribeLogDirs both answer from it.

use std::rc::Rc;

use crate::broker_error::BrokerError;
use crate::catalog::error::UnknownTopic;
use crate::partition_ops::{OpOk, PartitionOp};
use crate::protocol::{ErrorCode, PartitionLogInfo, TopicLogInfo};
use crate::shard::runtime::Shard;

/// Every partition of `topics` (None: every topic), in partition order; an unknown topic
/// answers with UnknownTopic and no partitions.
pub async fn describe_logs(
    shard: &Rc<Shard>,
    topics: Option<&[String]>,
) -> Result<Vec<TopicLogInfo>, BrokerError> {
    let mut out = Vec::new();
    for t in shard.topics_snapshot(topics) {
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
                other => {
                    return Err(BrokerError::new(
                        ErrorCode::Internal,
                        format!("DescribeLogs got {other:?}"),
                    ))
                }
            };
            partitions.push(PartitionLogInfo {
                partition: p as i32,
                owner_shard: owner as i32,
                log_start_offset: s.log_start_offset,
                log_end_offset: s.log_end_offset,
                size_bytes: s.size_bytes as i64,
                segments: s.segments as i32,
                cleaner: s.cleaner,
                remote: s.remote,
            });
        }
        out.push(TopicLogInfo {
            name: meta.name.clone(),
            error_code: ErrorCode::None,
            overrides: meta.config.overrides.keys().cloned().collect(),
            partitions,
        });
    }
    Ok(out)
}

/// The data directory as DescribeLogs and DescribeLogDirs name it: absolute (a relative
/// `data.dir` says nothing to a tool run elsewhere).
pub fn log_dir_name(dir: &std::path::Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}
