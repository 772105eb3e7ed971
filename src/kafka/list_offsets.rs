//! ListOffsets v1-7: earliest (-2), latest (-1), max timestamp (-3), and a timestamp
//! T >= 0 with offsetsForTimes semantics (the first offset in offset order whose record
//! timestamp is >= T, with that timestamp; none: offset -1). The same shard operation as
//! the native ListOffsets. With read_committed (v2+) "latest" is the last stable offset and
//! a lookup by time answers only offsets below it.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

use super::errors::{self, kafka_code};
use super::{join_all, Context};
use crate::partition_ops::{Isolation, OpOk, PartitionOp};
use crate::security::acl::Operation;

pub async fn handle(ctx: &Context<'_>, request: ListOffsetsRequest) -> ListOffsetsResponse {
    // v2+: read_committed answers below the last stable offset.
    let isolation = Isolation::from_kafka(request.isolation_level);
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let name = t.name.0.to_string();
        let asked = t.partitions.len();
        let authorized = ctx.on_topic(Operation::Describe, &name);
        let ops = t.partitions.into_iter().map(|p| {
            let shard = ctx.shard.clone();
            let name = name.clone();
            let not_leader = super::cluster::not_leader(ctx, &name, p.partition_index);
            async move {
                if !authorized {
                    return ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
                }
                let r =
                    ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
                if let Some(refused) = not_leader {
                    return r.with_error_code(refused.code);
                }
                let op = PartitionOp::ListOffsets {
                    timestamp: p.timestamp,
                    isolation,
                };
                match shard.partition_op(&name, p.partition_index, op).await {
                    Ok(OpOk::Offset { offset, timestamp }) => {
                        // offsetsForTimes: a found record is at or after the asked time.
                        debug_assert!(
                            p.timestamp < 0 || offset == -1 || timestamp >= p.timestamp,
                            "{offset}@{timestamp} for {}",
                            p.timestamp
                        );
                        r.with_offset(offset).with_timestamp(timestamp)
                    }
                    Ok(_) => r.with_error_code(errors::UNKNOWN_SERVER_ERROR),
                    Err(e) => r.with_error_code(kafka_code(e.code(), true)),
                }
            }
        });
        let answers = join_all(ops).await;
        assert_eq!(answers.len(), asked, "one answer per partition asked");
        topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(t.name)
                .with_partitions(answers),
        );
    }
    ListOffsetsResponse::default().with_topics(topics)
}
