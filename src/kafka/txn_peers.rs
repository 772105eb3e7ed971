//! Transactions across the nodes of a cluster, over Kafka's own inter-broker requests: a
//! transaction coordinator sends the markers for partitions other nodes lead with
//! WriteTxnMarkers (as Kafka's coordinators do), and a leader checks a transactional
//! produce with the id's coordinator on another node with AddPartitionsToTxn v4
//! `verify_only` (KIP-890). Both go to the other node's PLAINTEXT listener, one
//! connection per call (TLS and SASL between nodes are issue 42's).

use crate::security::client::ClientSecurity;
use std::rc::Rc;
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::errors;
use super::peer_pool;
use super::{str_bytes, Context};
use crate::broker_error::BrokerError;
use crate::cluster::ClusterView;
use crate::format::control::EndTxnMarker;
use crate::groups::host::{HostFuture, HostResult};
use crate::protocol::ErrorCode;
use crate::security::acl::Operation;
use crate::shard::runtime::Shard;
use crate::txn::host::PeerCalls;
use crate::txn::ops::{TxnOp, TxnReply};
use crate::TopicPartition;

/// How long one call to another node may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// AddPartitionsToTxn's first version for brokers (batched, with `verify_only`).
pub const BROKER_VERSION: i16 = 4;

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Sends one request to node `to`: its answer, or why it could not be asked.
async fn call(
    view: &ClusterView,
    (to, security): (i32, &ClientSecurity),
    key: ApiKey,
    version: i16,
    request: RequestKind,
) -> Result<ResponseKind, BrokerError> {
    let unreachable = |why: String| {
        let why = format!("asking broker {to}: {why}");
        BrokerError::new(ErrorCode::NotReady, why)
    };
    let sent = (key, version, &request);
    let answer = peer_pool::call(Some(view), (to, security), "shardlog-txn", sent, TIMEOUT);
    let answer = answer.await;
    answer.map_err(|e| unreachable(e.to_string()))
}

/// The coordinator's calls to other nodes, installed on every shard in cluster mode, with
/// how this node connects to the others.
pub struct KafkaPeerCalls {
    security: ClientSecurity,
}

impl KafkaPeerCalls {
    pub fn install(shard: &Rc<Shard>) {
        let security = shard.config().inter_broker_client();
        shard.install_peer_calls(Rc::new(KafkaPeerCalls { security }));
    }
}

impl PeerCalls for KafkaPeerCalls {
    fn write_marker<'a>(
        &'a self,
        view: &'a ClusterView,
        leader: i32,
        tp: &'a TopicPartition,
        producer: (i64, i16),
        marker: EndTxnMarker,
    ) -> HostFuture<'a, HostResult<()>> {
        Box::pin(send_marker(
            view,
            (leader, &self.security),
            tp,
            producer,
            marker,
        ))
    }
}

/// WriteTxnMarkers v1 of one marker to `leader`: Ok once it wrote it durably.
async fn send_marker(
    view: &ClusterView,
    (leader, security): (i32, &ClientSecurity),
    tp: &TopicPartition,
    (producer_id, epoch): (i64, i16),
    marker: EndTxnMarker,
) -> Result<(), BrokerError> {
    let topic = WritableTxnMarkerTopic::default()
        .with_name(topic_name(&tp.topic))
        .with_partition_indexes(vec![tp.partition]);
    let one = WritableTxnMarker::default()
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_transaction_result(marker.commit)
        .with_coordinator_epoch(marker.coordinator_epoch)
        .with_topics(vec![topic]);
    let request =
        RequestKind::WriteTxnMarkers(WriteTxnMarkersRequest::default().with_markers(vec![one]));
    let to = (leader, security);
    let answer = call(view, to, ApiKey::WriteTxnMarkers, 1, request).await?;
    let code = match &answer {
        ResponseKind::WriteTxnMarkers(r) => (r.markers.first())
            .and_then(|m| m.topics.first())
            .and_then(|t| t.partitions.first())
            .map(|p| p.error_code),
        _ => None,
    };
    match code {
        Some(errors::NONE) => Ok(()),
        Some(code) => Err(BrokerError::new(
            ErrorCode::NotReady,
            format!(
                "broker {leader} did not write the marker into {tp}: {}",
                errors::describe(code)
            ),
        )),
        None => Err(BrokerError::new(
            ErrorCode::Internal,
            format!("broker {leader}'s WriteTxnMarkers answer names no partition"),
        )),
    }
}

/// A leader's check of a transactional produce with the id's coordinator on node
/// `coordinator` (AddPartitionsToTxn v4, `verify_only`): NONE when `tp` is in the
/// producer's open transaction. A coordinator out of reach is NOT_ENOUGH_REPLICAS, which
/// producers retry (Kafka answers its own verification failures so to older clients).
pub async fn verify_remote(
    view: &ClusterView,
    (coordinator, security): (i32, &ClientSecurity),
    id: &str,
    (producer_id, epoch): (i64, i16),
    tp: &TopicPartition,
) -> i16 {
    let topic = AddPartitionsToTxnTopic::default()
        .with_name(topic_name(&tp.topic))
        .with_partitions(vec![tp.partition]);
    let transaction = AddPartitionsToTxnTransaction::default()
        .with_transactional_id(TransactionalId(StrBytes::from_string(id.to_string())))
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_verify_only(true)
        .with_topics(vec![topic]);
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![transaction]);
    let request = RequestKind::AddPartitionsToTxn(request);
    let key = ApiKey::AddPartitionsToTxn;
    let answer = call(view, (coordinator, security), key, BROKER_VERSION, request).await;
    let ResponseKind::AddPartitionsToTxn(r) = (match answer {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(id, coordinator, error = %e.message(), "verifying a transactional produce with its coordinator failed");
            return errors::NOT_ENOUGH_REPLICAS;
        }
    }) else {
        return errors::NOT_ENOUGH_REPLICAS;
    };
    let partition = (r.results_by_transaction.first())
        .and_then(|t| t.topic_results.first())
        .and_then(|t| t.results_by_partition.first());
    match (r.error_code, partition) {
        (errors::NONE, Some(p)) => p.partition_error_code,
        _ => errors::NOT_ENOUGH_REPLICAS,
    }
}

/// AddPartitionsToTxn v4+ from another node (brokers only: CLUSTER_ACTION): each
/// transaction's partitions verified (`verify_only`) or added, on this node's coordinator.
pub async fn add_partitions_for_brokers(
    ctx: &Context<'_>,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let response = AddPartitionsToTxnResponse::default();
    if !ctx.admin_allowed(Operation::ClusterAction) {
        return response.with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED);
    }
    let asked = request.transactions.len();
    let mut results = Vec::with_capacity(asked);
    for t in request.transactions {
        let id = t.transactional_id.0.to_string();
        let producer = (t.producer_id.0, t.producer_epoch);
        let mut codes = Vec::new();
        for topic in &t.topics {
            for &p in &topic.partitions {
                let tp = TopicPartition::new(topic.name.0.as_str(), p);
                let code = on_coordinator(ctx, &id, producer, tp.clone(), t.verify_only).await;
                codes.push((tp, code));
            }
        }
        results.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(t.transactional_id)
                .with_topic_results(by_topic(codes)),
        );
    }
    assert_eq!(results.len(), asked, "one result per transaction");
    response.with_results_by_transaction(results)
}

/// One partition of a broker's AddPartitionsToTxn, on this node's coordinator of `id`.
async fn on_coordinator(
    ctx: &Context<'_>,
    id: &str,
    (producer_id, epoch): (i64, i16),
    partition: TopicPartition,
    verify_only: bool,
) -> i16 {
    let op = match verify_only {
        true => TxnOp::Verify {
            producer_id,
            epoch,
            partition,
        },
        false => TxnOp::AddPartitions {
            producer_id,
            epoch,
            partitions: vec![partition],
        },
    };
    match crate::shard::coordinator_routing::route_txn(ctx.shard, id.to_string(), op).await {
        Ok(TxnReply::Code(code)) => code.kafka(true),
        Ok(_) => errors::UNKNOWN_SERVER_ERROR,
        Err(_) => errors::COORDINATOR_NOT_AVAILABLE,
    }
}

/// AddPartitionsToTxn's per-topic results (every version) from per-partition codes.
pub(super) fn by_topic(codes: Vec<(TopicPartition, i16)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for (tp, code) in codes {
        let result = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(tp.partition)
            .with_partition_error_code(code);
        match out.iter_mut().find(|t| t.name.0.as_str() == tp.topic) {
            Some(t) => t.results_by_partition.push(result),
            None => out.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(TopicName(str_bytes(tp.topic)))
                    .with_results_by_partition(vec![result]),
            ),
        }
    }
    out
}
