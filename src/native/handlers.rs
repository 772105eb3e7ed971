//! Request dispatch: decode a frame, run it (locally or on the owner shard), encode the
//! reply. Every bad input becomes an error response with its own code; nothing panics.

use crate::catalog::admin_host::AdminRequest;
use crate::net::turn::{in_turn, Turn};
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;

use super::checks::{check_acks, fetch_bytes};
use crate::admission::budget::{Budget, Reservation};
use crate::broker_error::BrokerError;
use crate::metrics::{self, Stage};
use crate::net::{Peer, Reply};
use crate::partition_ops::{Isolation, OpOk, OpResult, PartitionOp};
use crate::protocol::frame::Frame;
use crate::protocol::{
    ApiKey, ErrorCode, Request, Response, ResponseBody, StatsResponse, WireReader, ACKS_NONE,
    REQUEST_HEADER,
};
use crate::shard::runtime::Shard;

fn error_frame(correlation_id: i32, code: ErrorCode, msg: impl Into<String>) -> Frame {
    assert_ne!(code, ErrorCode::None, "an error frame names an error");
    Response {
        correlation_id,
        result: Err((code, msg.into())),
    }
    .encode()
}

/// What the metrics learn about a request while it is handled.
struct Outcome {
    api: &'static str,
    ok: bool,
    timed: bool,
}

/// Handles one request frame body (size prefix removed).
pub async fn handle_frame(
    shard: Rc<Shard>,
    frame: Bytes,
    peer: Peer,
    budget: Budget,
    turn: Turn,
) -> Reply {
    if let Some(client_id) = super::misdirected::kafka_client_id(&frame) {
        let kafka = shard.config().kafka_listeners();
        let kafka: Vec<String> = kafka.iter().map(ToString::to_string).collect();
        tracing::info!(shard = shard.id(), remote = ?peer.remote, %client_id, kafka_listeners = %kafka.join(","), "a Kafka client reached the native listener; closing: Kafka clients connect to the Kafka listener");
        return Reply::close_unanswered();
    }
    let mut reservation = Reservation::default();
    let mut outcome = Outcome {
        api: "unknown",
        ok: false,
        timed: false,
    };
    // Native requests queue their work before their first await (a produce reaches its
    // partitions, or the mesh towards them, at once): the turn passes on from there.
    let run = decode_and_run(&shard, frame, peer, &budget, &mut reservation, &mut outcome);
    let frame = in_turn(&turn, run).await;
    Reply {
        frame,
        reservation,
        close: false,
        api: outcome.api,
        ok: outcome.ok,
        timed: outcome.timed,
    }
}

/// A request decoded.
pub(super) struct Decoded {
    pub cid: i32,
    pub key: ApiKey,
    pub request: Request,
}

/// The error frame answering a request that did not decode, and its API when the header
/// named a supported one (its metrics label). Boxed: refusals are rare, decoded requests
/// are not, and the result stays small.
type Undecoded = (Option<ApiKey>, Box<Frame>);

/// Checks the header (known key, supported version) and decodes the body.
pub(super) fn decode_request(frame: &Bytes) -> Result<Decoded, Undecoded> {
    if frame.len() < REQUEST_HEADER {
        let why = format!(
            "frame of {} bytes is shorter than the 8-byte request header",
            frame.len()
        );
        return Err((
            None,
            error_frame(-1, ErrorCode::MalformedRequest, why).into(),
        ));
    }
    let mut r = WireReader::from_bytes(frame);
    let header = Request::decode_header(&mut r).expect("length checked");
    let cid = header.correlation_id;
    let Some(key) = ApiKey::from_i16(header.api_key) else {
        let why = format!("unknown api key {}", header.api_key);
        return Err((
            None,
            error_frame(cid, ErrorCode::UnsupportedApiKey, why).into(),
        ));
    };
    let (min, max) = key.versions();
    if header.api_version < min || header.api_version > max {
        let why = format!(
            "{key:?} version {} is not supported (supported: {min}..={max})",
            header.api_version
        );
        return Err((
            None,
            error_frame(cid, ErrorCode::UnsupportedVersion, why).into(),
        ));
    }
    match Request::decode_body(key, &mut r) {
        Ok(request) => {
            assert_eq!(request.api_key(), key);
            Ok(Decoded { cid, key, request })
        }
        Err(e) => {
            let why = format!("{key:?} request: {e}");
            Err((
                Some(key),
                error_frame(cid, ErrorCode::MalformedRequest, why).into(),
            ))
        }
    }
}

async fn decode_and_run(
    shard: &Rc<Shard>,
    frame: Bytes,
    peer: Peer,
    budget: &Budget,
    reservation: &mut Reservation,
    outcome: &mut Outcome,
) -> Option<Frame> {
    let decode_start = Instant::now();
    let decoded = decode_request(&frame);
    if let Some(key) = decoded.as_ref().map_or_else(|e| e.0, |d| Some(d.key)) {
        outcome.api = metrics::api_label(key);
        outcome.timed = key.is_data_path();
    }
    let Decoded { cid, request, .. } = match decoded {
        Ok(decoded) => decoded,
        Err((_, refusal)) => return Some(*refusal),
    };
    let silent = matches!(
        request,
        Request::Produce {
            acks: ACKS_NONE,
            ..
        } | Request::MultiProduce {
            acks: ACKS_NONE,
            ..
        }
    );
    if outcome.timed {
        metrics::record_since(Stage::Decode, decode_start);
    }
    let result = dispatch(shard, request, peer, budget, reservation).await;
    outcome.ok = result.is_ok();
    if silent {
        if let Err(why) = &result {
            let code = why.code();
            tracing::debug!(%code, %why, "acks=0 produce failed (no reply by design)");
        }
        return None;
    }
    let encode_start = Instant::now();
    let frame = Response {
        correlation_id: cid,
        result: result.map_err(BrokerError::into_wire),
    }
    .encode();
    if outcome.timed {
        metrics::record_since(Stage::Encode, encode_start);
    }
    Some(frame)
}

fn to_body(key: ApiKey, r: OpResult) -> Result<ResponseBody, BrokerError> {
    Ok(match (key, r?) {
        (
            ApiKey::Produce,
            OpOk::Produced {
                base_offset,
                last_offset,
                log_append_time,
                ..
            },
        ) => {
            assert!(0 <= base_offset);
            assert!(base_offset <= last_offset);
            ResponseBody::Produce {
                base_offset,
                last_offset,
                log_append_time,
            }
        }
        (ApiKey::Fetch | ApiKey::FetchCommitted, fetched @ OpOk::Fetched { .. }) => {
            fetched_body(key, fetched)
        }
        (ApiKey::ListOffsets, OpOk::Offset { offset, timestamp }) => {
            ResponseBody::ListOffsets { offset, timestamp }
        }
        (
            ApiKey::FetchAtTime,
            OpOk::FetchedAtTime {
                offset,
                timestamp,
                log_start_offset,
                log_end_offset,
                records,
            },
        ) => {
            // Records come only with an offset found below the log end (which never moves
            // back). Not "at or above the log start": a remote read awaits the bucket, and
            // remote retention may raise the start meanwhile, so that is no invariant.
            assert!(records.is_empty() || (0..log_end_offset).contains(&offset));
            ResponseBody::FetchAtTime {
                offset,
                timestamp,
                log_start_offset,
                log_end_offset,
                records,
            }
        }
        (key, other) => {
            return Err(BrokerError::new(
                ErrorCode::Internal,
                format!("{key:?} got an unexpected result {other:?}"),
            ))
        }
    })
}

/// A Fetch's (read_uncommitted) or FetchCommitted's reply from what the partition read.
fn fetched_body(key: ApiKey, fetched: OpOk) -> ResponseBody {
    let OpOk::Fetched {
        log_start_offset,
        log_end_offset,
        last_stable_offset,
        aborted,
        records,
    } = fetched
    else {
        unreachable!("called with a fetch's result");
    };
    if key == ApiKey::FetchCommitted {
        assert!(log_start_offset <= last_stable_offset);
        return ResponseBody::FetchCommitted {
            log_start_offset,
            last_stable_offset,
            aborted,
            records,
        };
    }
    assert!(log_start_offset <= log_end_offset);
    ResponseBody::Fetch {
        log_start_offset,
        log_end_offset,
        records,
    }
}

async fn dispatch(
    shard: &Rc<Shard>,
    request: Request,
    peer: Peer,
    budget: &Budget,
    reservation: &mut Reservation,
) -> Result<ResponseBody, BrokerError> {
    if shard.is_shutting_down() {
        return Err(BrokerError::new(
            ErrorCode::ShuttingDown,
            "server is shutting down",
        ));
    }
    crate::native::authorize::check(&shard.config().authorizer, &request, &peer)?;
    let key = request.api_key();
    if key.is_data_path() {
        return data_path(shard, request, budget, reservation).await;
    }
    let request = match as_admin(request) {
        Ok(admin) => return admin_reply(key, shard.admin(admin).await),
        Err(other) => other,
    };
    let no_handler = || {
        Err(BrokerError::new(
            ErrorCode::Internal,
            format!("{key:?} has no handler"),
        ))
    };
    match request {
        Request::ApiVersions => Ok(api_versions_body()),
        Request::SaslHandshake { .. } | Request::SaslAuthenticate { .. } => Err(BrokerError::new(
            ErrorCode::IllegalSaslState,
            "SASL requests come before any other, on a SASL listener (or to re-authenticate)",
        )),
        Request::Metadata { topics } => Ok(ResponseBody::Metadata(super::metadata::metadata(
            shard, topics, peer,
        ))),
        Request::ClusterMetadata { topics } => Ok(ResponseBody::ClusterMetadata(
            super::metadata::cluster_metadata(shard, topics, peer),
        )),
        Request::DescribeListeners => Ok(ResponseBody::DescribeListeners(
            super::metadata::listeners(shard.config(), peer),
        )),
        Request::DropCaches { .. } | Request::Stats | Request::Metrics => {
            server_state(shard, request, peer).await
        }
        Request::OffsetFetch { .. } => crate::native::group_admin::dispatch(shard, request)
            .await
            .unwrap_or_else(no_handler)
            .map(|body| {
                crate::native::authorize::visible_offsets(&shard.config().authorizer, &peer, body)
            }),
        Request::OffsetCommit { .. }
        | Request::ListGroups
        | Request::DescribeGroup { .. }
        | Request::DeleteGroup { .. }
        | Request::OffsetDelete { .. } => crate::native::group_admin::dispatch(shard, request)
            .await
            .unwrap_or_else(no_handler),
        other => crate::native::log_admin::dispatch(shard, other)
            .await
            .unwrap_or_else(no_handler),
    }
}

/// The topic and config changes a native request asks of the controller.
fn as_admin(request: Request) -> Result<AdminRequest, Request> {
    Ok(match request {
        Request::CreateTopic {
            name,
            partitions,
            configs,
        } => AdminRequest::CreateTopic {
            name,
            partitions,
            configs,
        },
        Request::DeleteTopic { name } => AdminRequest::DeleteTopic { name },
        Request::CreatePartitions { topic, count } => {
            AdminRequest::CreatePartitions { name: topic, count }
        }
        Request::AlterConfigs { topic, set, delete } => AdminRequest::AlterConfigs {
            name: topic,
            set,
            delete,
        },
        other => return Err(other),
    })
}

fn admin_reply(key: ApiKey, r: OpResult) -> Result<ResponseBody, BrokerError> {
    r?;
    Ok(match key {
        ApiKey::CreateTopic => ResponseBody::CreateTopic,
        ApiKey::DeleteTopic => ResponseBody::DeleteTopic,
        _ => ResponseBody::Empty,
    })
}

/// Every API and its versions.
pub(super) fn api_versions_body() -> ResponseBody {
    let versions = ApiKey::ALL
        .iter()
        .map(|k| (*k as i16, k.versions().0, k.versions().1));
    ResponseBody::ApiVersions(versions.collect())
}

/// Produce, Fetch and the lookups: each partition's work on its owner shard.
async fn data_path(
    shard: &Rc<Shard>,
    request: Request,
    budget: &Budget,
    reservation: &mut Reservation,
) -> Result<ResponseBody, BrokerError> {
    let key = request.api_key();
    let request = match request {
        Request::MultiProduce { acks, partitions } => {
            return crate::native::multi::produce(shard, acks, partitions).await
        }
        Request::MultiFetch {
            max_bytes,
            partitions,
        } => {
            return crate::native::multi::fetch(shard, max_bytes, partitions, budget, reservation)
                .await
        }
        one => one,
    };
    let (topic, partition, op) = one_partition_op(shard, request, budget, reservation).await?;
    to_body(key, shard.partition_op(&topic, partition, op).await)
}

/// The partition and operation of a data-path request on one partition.
async fn one_partition_op(
    shard: &Rc<Shard>,
    request: Request,
    budget: &Budget,
    reservation: &mut Reservation,
) -> Result<(String, i32, PartitionOp), BrokerError> {
    Ok(match request {
        Request::Produce {
            topic,
            partition,
            acks,
            records,
        } => {
            check_acks(acks)?;
            crate::catalog::internal_topics::refuse_client(&topic, "produce to")?;
            (topic, partition, PartitionOp::produce(acks, records))
        }
        Request::Fetch {
            topic,
            partition,
            offset,
            max_bytes,
        } => {
            let read = (offset, max_bytes, Isolation::ReadUncommitted);
            (
                topic,
                partition,
                fetch_op(shard, read, budget, reservation).await?,
            )
        }
        Request::FetchCommitted {
            topic,
            partition,
            offset,
            max_bytes,
        } => {
            let read = (offset, max_bytes, Isolation::ReadCommitted);
            (
                topic,
                partition,
                fetch_op(shard, read, budget, reservation).await?,
            )
        }
        Request::FetchAtTime {
            topic,
            partition,
            timestamp,
            max_bytes,
        } => {
            let max_bytes = fetch_bytes(shard, max_bytes, budget, reservation).await?;
            let op = PartitionOp::FetchAtTime {
                timestamp,
                max_bytes,
            };
            (topic, partition, op)
        }
        Request::ListOffsets {
            topic,
            partition,
            timestamp,
        } => (topic, partition, uncommitted_list_offsets(timestamp)),
        other => {
            let why = format!("{:?} is not on the data path", other.api_key());
            return Err(BrokerError::new(ErrorCode::Internal, why));
        }
    })
}

/// A Fetch of (offset, max_bytes, isolation), its reply reserved in the budgets first.
async fn fetch_op(
    shard: &Rc<Shard>,
    (offset, max_bytes, isolation): (i64, i32, Isolation),
    budget: &Budget,
    reservation: &mut Reservation,
) -> Result<PartitionOp, BrokerError> {
    let max_bytes = fetch_bytes(shard, max_bytes, budget, reservation).await?;
    Ok(PartitionOp::Fetch {
        offset,
        max_bytes,
        at_least_one: true,
        isolation,
    })
}

/// DropCaches, Stats and Metrics: the server's own state, gathered from every shard.
async fn server_state(
    shard: &Rc<Shard>,
    request: Request,
    peer: Peer,
) -> Result<ResponseBody, BrokerError> {
    Ok(match request {
        Request::DropCaches {
            drop_kernel_page_cache,
        } => {
            let stats = drop_caches(shard, peer, drop_kernel_page_cache).await?;
            ResponseBody::Stats(stats_body(shard, stats))
        }
        Request::Metrics => {
            let mut report = crate::metrics::MetricsReport::default();
            for s in shard.cluster_metrics().await? {
                report.merge(&s.to_report());
            }
            // The process as a whole, once (not per shard): what a run cost in CPU.
            report.values.push((
                metrics::PROCESS_CPU_MS.into(),
                crate::io::os::process_cpu_ms(),
            ));
            ResponseBody::Metrics(crate::protocol::metrics::MetricsResponse::of(&report))
        }
        _ => {
            let stats = shard.cluster_stats(false).await?;
            ResponseBody::Stats(stats_body(shard, stats))
        }
    })
}

/// DropCaches: loopback only unless allowed; the host's page cache only when allowed.
async fn drop_caches(
    shard: &Rc<Shard>,
    peer: Peer,
    drop_kernel_page_cache: bool,
) -> Result<crate::partition_ops::ShardStats, BrokerError> {
    // With the authorizer on, CLUSTER_ACTION was checked instead.
    let cfg = shard.config();
    if !cfg.authorizer.enabled && !peer.is_loopback && !cfg.allow_remote_admin {
        return Err(BrokerError::new(
            ErrorCode::AdminNotAllowed,
            "DropCaches is accepted from loopback only (set allow.remote.admin=true)",
        ));
    }
    if drop_kernel_page_cache && !shard.config().allow_drop_kernel_cache {
        return Err(BrokerError::new(
            ErrorCode::AdminNotAllowed,
            "dropping the host's kernel page cache affects every process on the machine; \
             the server must set allow.drop.kernel.cache=true (shardlog's own caches can \
             be dropped without it)",
        ));
    }
    let stats = shard.cluster_stats(true).await?;
    if drop_kernel_page_cache {
        crate::io::os::drop_kernel_page_cache_as_root();
    }
    Ok(stats)
}

fn stats_body(shard: &Shard, s: crate::partition_ops::ShardStats) -> StatsResponse {
    StatsResponse {
        shards: shard.shard_count() as i32,
        device_reads: s.device_reads as i64,
        cache_hits: s.cache_hits as i64,
        cache_misses: s.cache_misses as i64,
        cache_bytes: s.cache_bytes as i64,
        cache_budget_bytes: s.cache_budget_bytes as i64,
        rss_bytes: crate::io::os::rss_bytes(),
        clock_ms: crate::time::now_ms(),
    }
}

/// The native ListOffsets: every record up to the high watermark counts.
fn uncommitted_list_offsets(timestamp: i64) -> PartitionOp {
    PartitionOp::ListOffsets {
        timestamp,
        isolation: Isolation::ReadUncommitted,
    }
}
