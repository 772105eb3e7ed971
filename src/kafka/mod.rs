//! Kafka's wire protocol on a second listener, so unmodified Kafka clients (librdkafka,
//! kcat, kafka-python, aiokafka, Java) produce, consume and look up offsets by time.
//!
//! This is a codec and a translation, not a second engine: requests are decoded with the
//! `kafka-protocol` crate, each partition's work runs as the same shard operation the native
//! protocol uses (routed to the owner shard over the mesh), and record batches pass through
//! as raw bytes to shardlog's own validator. Connection handling (framing, pipelining,
//! budgets, timeouts) is `net/connection.rs`, shared with the native listener.

mod acls;
mod admin;
mod api_versions;
mod authorize;
pub mod blocking_client;
mod cluster;
mod cluster_admin;
mod codec;
mod configs;
mod elect_leaders;
mod reassignments;
pub use crate::kafka_codes as errors;
mod fetch;
mod follower_reads;
mod forward;
mod group_acls;
mod groups;
mod init_producer_id;
mod list_offsets;
mod log_admin;
mod metadata;
pub mod peer;
mod peer_pool;
mod produce;
mod refusal;
mod replica_fetch;
pub mod replica_fetcher;
mod replica_quota;
mod sasl;
mod sasl_client;
mod splice;
mod txn;
mod txn_admin;
pub mod txn_peers;
mod users;
pub mod wire_error;

pub use api_versions::ADVERTISED;
pub use codec::{client_id_of_request, decode_response, encode, handle_frame};
pub use wire_error::KafkaWireError;

/// A Kafka listener's front end: a frame that breaks the framing or a connection over
/// the limits is closed without a word, as a Kafka broker does. On a SASL listener every
/// connection authenticates first (`sasl.rs`).
pub struct Kafka {
    pub security: crate::net::listener_security::ListenerSecurity,
}

impl crate::net::FrontEnd for Kafka {
    fn label(&self) -> &'static str {
        "kafka"
    }

    fn handle(
        &self,
        shard: std::rc::Rc<Shard>,
        frame: bytes::Bytes,
        peer: Peer,
        budget: Budget,
        turn: crate::net::turn::Turn,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = crate::net::Reply>>> {
        Box::pin(handle_frame(shard, frame, peer, budget, turn))
    }

    fn bad_frame_reply(&self, _size: i32, _max_frame: usize, _cid: i32) -> Option<Vec<u8>> {
        None
    }

    fn answers_bad_frames(&self) -> bool {
        false
    }

    fn refusal(&self, _why: String) -> Option<Vec<u8>> {
        None
    }

    fn security(&self) -> Option<&crate::net::listener_security::ListenerSecurity> {
        Some(&self.security)
    }

    fn handshake(&self) -> Option<Box<dyn crate::net::Handshake>> {
        self.security.sasl_exchange(sasl::KafkaSasl::new)
    }

    fn starts_reauthentication(&self, frame: &[u8]) -> bool {
        const SASL_HANDSHAKE: i16 = 17;
        self.security.is_sasl_request(frame, SASL_HANDSHAKE)
    }
}

use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::admission::budget::{Budget, Reservation};
use crate::net::Peer;
use crate::shard::runtime::Shard;

/// What every request handler needs besides its request.
pub struct Context<'a> {
    pub shard: &'a std::rc::Rc<Shard>,
    /// The request's API version: responses carry only that version's fields.
    pub version: i16,
    pub peer: Peer,
    pub budget: &'a Budget,
    /// The request header's client id (consumer groups report it per member).
    pub client_id: String,
    /// Fetch records spliced into the encoded reply instead of copied into it.
    pub splices: std::cell::RefCell<splice::Splices>,
    /// The request's place in its connection's order (a Produce holds it until its
    /// batches are queued at their partitions).
    pub turn: &'a crate::net::turn::Turn,
}

/// Runs one decoded request; `None` for a Produce with acks=0 (no reply).
async fn dispatch(
    ctx: &Context<'_>,
    request: RequestKind,
    reservation: &mut Reservation,
) -> Option<ResponseKind> {
    Some(match request {
        RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions::response()),
        RequestKind::Metadata(r) => ResponseKind::Metadata(metadata::handle(ctx, r).await),
        RequestKind::Produce(r) => ResponseKind::Produce(produce::handle(ctx, r).await?),
        RequestKind::Fetch(r) => ResponseKind::Fetch(fetch::handle(ctx, r, reservation).await),
        RequestKind::ListOffsets(r) => {
            ResponseKind::ListOffsets(list_offsets::handle(ctx, r).await)
        }
        RequestKind::CreateTopics(r) => ResponseKind::CreateTopics(admin::create(ctx, r).await),
        RequestKind::DeleteTopics(r) => ResponseKind::DeleteTopics(admin::delete(ctx, r).await),
        RequestKind::CreatePartitions(r) => {
            ResponseKind::CreatePartitions(admin::create_partitions(ctx, r).await)
        }
        RequestKind::DeleteRecords(r) => {
            ResponseKind::DeleteRecords(log_admin::delete_records(ctx, r).await)
        }
        RequestKind::DescribeLogDirs(r) => {
            ResponseKind::DescribeLogDirs(log_admin::describe_log_dirs(ctx, r).await)
        }
        RequestKind::ElectLeaders(r) => {
            ResponseKind::ElectLeaders(elect_leaders::handle(ctx, r).await)
        }
        r @ (RequestKind::AlterPartitionReassignments(_)
        | RequestKind::ListPartitionReassignments(_)) => reassignments::dispatch(ctx, r).await,
        RequestKind::DescribeCluster(r) => {
            ResponseKind::DescribeCluster(cluster::describe_cluster(ctx, r))
        }
        RequestKind::DescribeConfigs(r) => ResponseKind::DescribeConfigs(configs::describe(ctx, r)),
        RequestKind::IncrementalAlterConfigs(r) => {
            ResponseKind::IncrementalAlterConfigs(configs::incremental_alter(ctx, r).await)
        }
        RequestKind::AlterConfigs(r) => ResponseKind::AlterConfigs(configs::alter(ctx, r).await),
        RequestKind::InitProducerId(r) => {
            ResponseKind::InitProducerId(init_producer_id::init_producer_id(ctx, r).await)
        }
        r @ (RequestKind::FindCoordinator(_)
        | RequestKind::JoinGroup(_)
        | RequestKind::SyncGroup(_)
        | RequestKind::Heartbeat(_)
        | RequestKind::LeaveGroup(_)
        | RequestKind::OffsetCommit(_)
        | RequestKind::OffsetFetch(_)
        | RequestKind::ListGroups(_)
        | RequestKind::DescribeGroups(_)
        | RequestKind::DeleteGroups(_)
        | RequestKind::OffsetDelete(_)) => groups::dispatch(ctx, r).await,
        r @ (RequestKind::DescribeUserScramCredentials(_)
        | RequestKind::AlterUserScramCredentials(_)
        | RequestKind::SaslHandshake(_)
        | RequestKind::SaslAuthenticate(_)) => users::dispatch(ctx, r).await,
        r @ (RequestKind::AddPartitionsToTxn(_)
        | RequestKind::EndTxn(_)
        | RequestKind::AddOffsetsToTxn(_)
        | RequestKind::TxnOffsetCommit(_)
        | RequestKind::DescribeTransactions(_)
        | RequestKind::ListTransactions(_)
        | RequestKind::DescribeProducers(_)
        | RequestKind::WriteTxnMarkers(_)) => txn::dispatch(ctx, r).await,
        r @ (RequestKind::CreateAcls(_)
        | RequestKind::DescribeAcls(_)
        | RequestKind::DeleteAcls(_)) => acls::dispatch(ctx, r).await,
        // The codec lets through only what api_versions::ADVERTISED lists.
        other => unreachable!("{other:?} is not advertised"),
    })
}

/// Runs `ops` concurrently (each partition of a request may live on another shard) and
/// returns their results in order.
async fn join_all<T: 'static>(
    ops: impl IntoIterator<Item = impl std::future::Future<Output = T> + 'static>,
) -> Vec<T> {
    let tasks: Vec<_> = ops.into_iter().map(crate::tasks::spawn).collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await);
    }
    out
}

fn str_bytes(s: impl Into<String>) -> kafka_protocol::protocol::StrBytes {
    kafka_protocol::protocol::StrBytes::from_string(s.into())
}

fn topic_name(s: impl Into<String>) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(str_bytes(s))
}
