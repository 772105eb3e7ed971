//! The tools for hanging transactions (KIP-664, `kafka-transactions.sh`): DescribeProducers
//! v0 (each partition's producers, with the first offset of an open transaction) and
//! WriteTxnMarkers v1 (an operator writes the marker that ends a transaction no
//! coordinator will end). WriteTxnMarkers changes what readers see, so it needs
//! CLUSTER_ACTION on the cluster (authorizer on) or comes from loopback only unless
//! `allow.remote.admin` (CLUSTER_AUTHORIZATION_FAILED otherwise).

use kafka_protocol::messages::*;

use super::errors::{self, kafka_code};
use super::Context;
use crate::format::control::EndTxnMarker;
use crate::partition_ops::{OpOk, PartitionOp};
use crate::security::acl::Operation;
use crate::TopicPartition;

pub async fn describe_producers(
    ctx: &Context<'_>,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for t in request.topics {
        let mut partitions = Vec::with_capacity(t.partition_indexes.len());
        let authorized = ctx.on_topic(Operation::Read, &t.name.0);
        let asked = t.partition_indexes.len();
        for &p in &t.partition_indexes {
            let r =
                describe_producers_response::PartitionResponse::default().with_partition_index(p);
            if !authorized {
                partitions.push(r.with_error_code(errors::TOPIC_AUTHORIZATION_FAILED));
                continue;
            }
            let op = PartitionOp::DescribeProducers;
            partitions.push(match ctx.shard.partition_op(&t.name.0, p, op).await {
                Ok(OpOk::Producers(producers)) => r.with_active_producers(
                    producers
                        .into_iter()
                        .map(|a| {
                            describe_producers_response::ProducerState::default()
                                .with_producer_id(ProducerId(a.producer_id))
                                .with_producer_epoch(a.epoch as i32)
                                .with_last_sequence(a.last_sequence)
                                .with_last_timestamp(a.last_timestamp)
                                .with_coordinator_epoch(0)
                                .with_current_txn_start_offset(a.txn_first_offset)
                        })
                        .collect(),
                ),
                Ok(_) => r.with_error_code(errors::UNKNOWN_SERVER_ERROR),
                Err(e) => r
                    .with_error_code(kafka_code(e.code(), true))
                    .with_error_message(Some(super::str_bytes(e.message()))),
            });
        }
        assert_eq!(partitions.len(), asked, "one answer per partition asked");
        topics.push(
            describe_producers_response::TopicResponse::default()
                .with_name(t.name)
                .with_partitions(partitions),
        );
    }
    DescribeProducersResponse::default().with_topics(topics)
}

pub async fn write_txn_markers(
    ctx: &Context<'_>,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let allowed = ctx.admin_allowed(Operation::ClusterAction);
    let mut markers = Vec::with_capacity(request.markers.len());
    for m in request.markers {
        let marker = EndTxnMarker {
            commit: m.transaction_result,
            coordinator_epoch: m.coordinator_epoch,
        };
        let producer = (m.producer_id.0, m.producer_epoch);
        let mut topics = Vec::with_capacity(m.topics.len());
        for t in m.topics {
            let mut partitions = Vec::with_capacity(t.partition_indexes.len());
            for &p in &t.partition_indexes {
                let tp = TopicPartition::new(t.name.0.as_str(), p);
                let code = match allowed {
                    false => errors::CLUSTER_AUTHORIZATION_FAILED,
                    true => {
                        match crate::txn::completion::write_marker_here(
                            &crate::shard::Shard::txn_host(ctx.shard),
                            &tp,
                            producer,
                            marker,
                        )
                        .await
                        {
                            Ok(()) => errors::NONE,
                            Err(e) => kafka_code(e.code(), true),
                        }
                    }
                };
                partitions.push(
                    write_txn_markers_response::WritableTxnMarkerPartitionResult::default()
                        .with_partition_index(p)
                        .with_error_code(code),
                );
            }
            topics.push(
                write_txn_markers_response::WritableTxnMarkerTopicResult::default()
                    .with_name(t.name)
                    .with_partitions(partitions),
            );
        }
        markers.push(
            write_txn_markers_response::WritableTxnMarkerResult::default()
                .with_producer_id(m.producer_id)
                .with_topics(topics),
        );
    }
    WriteTxnMarkersResponse::default().with_markers(markers)
}
