//! Kafka's requests about logs rather than records: DeleteRecords v0-2
//! (`kafka-delete-records`: each partition's log start moves to the given offset, -1 the
//! high watermark, on its owner shard, as the native DeleteRecords does) and
//! DescribeLogDirs v1-4 (`kafka-log-dirs`: the data directory as the one log dir, each
//! partition's size, as the native DescribeLogs gathers it).

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    DeleteRecordsRequest, DeleteRecordsResponse, DescribeLogDirsRequest, DescribeLogDirsResponse,
};

use super::errors::{self, kafka_code};
use super::{join_all, str_bytes, topic_name, Context};
use crate::protocol::ErrorCode;
use crate::security::acl::Operation;

pub async fn delete_records(
    ctx: &Context<'_>,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let name = t.name.0.to_string();
        let asked = t.partitions.len();
        let authorized = ctx.on_topic(Operation::Delete, &name);
        let ops = t.partitions.into_iter().map(|p| {
            let (shard, name) = (ctx.shard.clone(), name.clone());
            async move {
                let r =
                    DeleteRecordsPartitionResult::default().with_partition_index(p.partition_index);
                if !authorized {
                    return r
                        .with_low_watermark(-1)
                        .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
                }
                let deleted = shard
                    .delete_records(&name, p.partition_index, p.offset)
                    .await;
                match deleted {
                    Ok(low) => r.with_low_watermark(low),
                    Err(e) => r
                        .with_low_watermark(-1)
                        .with_error_code(kafka_code(e.code(), true)),
                }
            }
        });
        let partitions = join_all(ops).await;
        assert_eq!(partitions.len(), asked, "one result per partition asked");
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}

pub async fn describe_log_dirs(
    ctx: &Context<'_>,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    if !ctx.on_cluster(Operation::Describe) {
        let response = DescribeLogDirsResponse::default();
        return match ctx.version >= 3 {
            true => response.with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED),
            false => response,
        };
    }
    // (topic, partitions asked; empty: all) or every topic.
    let asked: Option<Vec<(String, Vec<i32>)>> = request.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.topic.0.to_string(), t.partitions))
            .collect()
    });
    let names: Option<Vec<String>> = asked
        .as_ref()
        .map(|a| a.iter().map(|(n, _)| n.clone()).collect());
    let dir = ctx.shard.config().data_dir.clone();
    let result = DescribeLogDirsResult::default().with_log_dir(str_bytes(
        crate::shard::services::log_info::log_dir_name(&dir),
    ));
    let logs =
        match crate::shard::services::log_info::describe_logs(ctx.shard, names.as_deref()).await {
            Ok(logs) => logs,
            Err(e) => {
                let failed = result.with_error_code(kafka_code(e.code(), true));
                return DescribeLogDirsResponse::default().with_results(vec![failed]);
            }
        };
    let topics = logs
        .into_iter()
        .filter(|t| t.error_code == ErrorCode::None)
        .map(|t| {
            let wanted = asked
                .as_ref()
                .and_then(|a| a.iter().find(|(n, _)| *n == t.name))
                .map(|(_, ps)| ps.clone())
                .unwrap_or_default();
            let partitions = t
                .partitions
                .iter()
                .filter(|p| wanted.is_empty() || wanted.contains(&p.partition))
                .map(|p| {
                    DescribeLogDirsPartition::default()
                        .with_partition_index(p.partition)
                        .with_partition_size(p.size_bytes)
                        .with_offset_lag(0)
                })
                .collect();
            DescribeLogDirsTopic::default()
                .with_name(topic_name(t.name))
                .with_partitions(partitions)
        })
        .collect();
    let (total, usable) = crate::io::os::disk_space(&dir).unwrap_or((0, 0));
    let result = result
        .with_topics(topics)
        .with_total_bytes(total as i64)
        .with_usable_bytes(usable as i64);
    DescribeLogDirsResponse::default().with_results(vec![result])
}
