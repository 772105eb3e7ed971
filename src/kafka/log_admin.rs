//! DeleteRecords v0-2 (`kafka-delete-records`): each partition's log start moves to the
//! given offset (-1: the high watermark) on its owner shard, as the native DeleteRecords
//! does; the reply carries each partition's new low watermark.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

use super::errors::kafka_code;
use super::{join_all, Context};

pub async fn delete_records(
    ctx: &Context<'_>,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let name = t.name.0.to_string();
        let asked = t.partitions.len();
        let ops = t.partitions.into_iter().map(|p| {
            let (shard, name) = (ctx.shard.clone(), name.clone());
            async move {
                let r =
                    DeleteRecordsPartitionResult::default().with_partition_index(p.partition_index);
                let deleted =
                    crate::shard::admin::delete_records(&shard, &name, p.partition_index, p.offset)
                        .await;
                match deleted {
                    Ok(low) => r.with_low_watermark(low),
                    Err(e) => r
                        .with_low_watermark(-1)
                        .with_error_code(kafka_code(e.code, true)),
                }
            }
        });
        let partitions = join_all(ops).await;
        debug_assert_eq!(partitions.len(), asked, "one result per partition asked");
        topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    DeleteRecordsResponse::default().with_topics(topics)
}
