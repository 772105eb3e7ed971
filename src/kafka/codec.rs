//! Frames in, frames out: the request header and body are decoded with the kafka-protocol
//! crate, the request runs, and the response is encoded for the version it came in.
//! Kafka's rules for what cannot be served: an ApiVersions of a newer version gets the v0
//! error reply; any other key or version we do not advertise, or a body that does not
//! decode, closes the connection (what a Kafka broker does; clients only send what the
//! ApiVersions table offers).

use crate::net::turn::{in_turn, Turn};
use std::rc::Rc;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::api_versions;
use super::wire_error::KafkaWireError;
use crate::admission::budget::{Budget, Reservation};
use crate::metrics::{self, Stage};
use crate::net::{Peer, Reply};
use crate::protocol::frame::Frame;
use crate::shard::runtime::Shard;

/// A decoded request, or why it cannot be served.
pub(super) enum Decoded {
    Request {
        key: ApiKey,
        version: i16,
        correlation_id: i32,
        client_id: String,
        request: Box<RequestKind>,
    },
    /// ApiVersions of a version above ours: answered in the v0 layout.
    NewerApiVersions {
        correlation_id: i32,
    },
    Unparseable(String),
}

/// Handles one Kafka request frame (size prefix removed).
pub async fn handle_frame(
    shard: Rc<Shard>,
    frame: Bytes,
    peer: Peer,
    budget: Budget,
    turn: Turn,
) -> Reply {
    let decode_start = std::time::Instant::now();
    let decoded = decode(frame);
    metrics::record_since(Stage::Decode, decode_start);
    let (key, version, correlation_id, client_id, request) = match decoded {
        Decoded::Request {
            key,
            version,
            correlation_id,
            client_id,
            request,
        } => (key, version, correlation_id, client_id, request),
        Decoded::NewerApiVersions { correlation_id } => {
            return Reply::frame(api_versions::unsupported_version_frame(correlation_id))
        }
        Decoded::Unparseable(why) => return close(why),
    };
    let mut reservation = Reservation::default();
    let ctx = super::Context {
        shard: &shard,
        version,
        peer,
        budget: &budget,
        client_id,
        splices: Default::default(),
        turn: &turn,
    };
    tracing::trace!(?key, version, correlation_id, client = %ctx.client_id, "kafka request");
    let dispatched = in_turn(&turn, super::dispatch(&ctx, *request, &mut reservation)).await;
    let Some(response) = dispatched else {
        // Produce with acks=0: no reply by design.
        return Reply {
            frame: None,
            reservation,
            close: false,
            api: metrics::api_label(key),
            ok: true,
            timed: true,
        };
    };
    tracing::trace!(?key, correlation_id, ?response, "kafka response");
    let encode_start = std::time::Instant::now();
    let encoded = encode(key, version, correlation_id, &response)
        .and_then(|frame| spliced(frame, &ctx, key, version));
    metrics::record_since(Stage::Encode, encode_start);
    match encoded {
        Ok(frame) => Reply {
            frame: Some(frame),
            reservation,
            close: false,
            api: metrics::api_label(key),
            ok: true,
            timed: true,
        },
        Err(e) => {
            tracing::error!(?key, version, error = %e, "encoding a Kafka response failed");
            close(format!("encoding {key:?} v{version}: {e}"))
        }
    }
}

/// The encoded reply as a frame, with any Fetch records spliced in (not copied).
fn spliced(
    encoded: Vec<u8>,
    ctx: &super::Context<'_>,
    key: ApiKey,
    version: i16,
) -> Result<Frame, KafkaWireError> {
    let splices = ctx.splices.take();
    if splices.is_empty() {
        return Ok(encoded.into());
    }
    let flexible = key.response_header_version(version) >= 1;
    splices.frame(encoded, flexible)
}

fn close(why: String) -> Reply {
    tracing::debug!(%why, "closing a Kafka connection");
    Reply::close_unanswered()
}

pub(super) fn decode(mut frame: Bytes) -> Decoded {
    // The connection guarantees the 8 bytes of api key, version and correlation id.
    assert!(
        frame.len() >= 8,
        "a Kafka request frame shorter than its fixed header"
    );
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let Ok(key) = ApiKey::try_from(raw_key) else {
        return Decoded::Unparseable(format!("unknown api key {raw_key}"));
    };
    if key == ApiKey::ApiVersions && version > max_version(key) {
        return Decoded::NewerApiVersions { correlation_id };
    }
    if !api_versions::is_advertised(key, version) {
        return Decoded::Unparseable(format!("{key:?} v{version} is not served"));
    }
    let header_version = key.request_header_version(version);
    let header = match RequestHeader::decode(&mut frame, header_version) {
        Ok(h) => h,
        Err(e) => return Decoded::Unparseable(format!("{key:?} v{version} header: {e}")),
    };
    match RequestKind::decode(key, &mut frame, version) {
        Ok(request) => Decoded::Request {
            key,
            version,
            correlation_id,
            client_id: header.client_id.map(|c| c.to_string()).unwrap_or_default(),
            request: Box::new(request),
        },
        Err(e) => Decoded::Unparseable(format!("{key:?} v{version} body: {e}")),
    }
}

fn max_version(key: ApiKey) -> i16 {
    api_versions::ADVERTISED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or(-1, |&(_, _, max)| max)
}

/// Size prefix, response header (v0 for ApiVersions whatever its version), body.
pub fn encode(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    response: &ResponseKind,
) -> Result<Vec<u8>, KafkaWireError> {
    let mut buf = BytesMut::with_capacity(256);
    buf.extend_from_slice(&[0; 4]);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, key.response_header_version(version))
        .map_err(KafkaWireError::codec)?;
    response
        .encode(&mut buf, version)
        .map_err(KafkaWireError::codec)?;
    let size = i32::try_from(buf.len() - 4).map_err(|_| KafkaWireError::TooLarge(buf.len()))?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    assert_eq!(
        i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize + 4,
        buf.len(),
        "the size prefix counts the bytes after it"
    );
    Ok(Vec::from(buf))
}

/// Decodes a response frame (size prefix included): for tests and tools that speak Kafka.
/// The client id of `frame` if it is a whole Kafka request this listener serves (a Kafka
/// client that reached another listener is recognised by it).
pub fn client_id_of_request(frame: Bytes) -> Option<String> {
    match decode(frame) {
        Decoded::Request { client_id, .. } => Some(client_id),
        Decoded::NewerApiVersions { .. } => Some(String::new()),
        Decoded::Unparseable(_) => None,
    }
}

/// A request as a client sends it: the size prefix, the request header (with `client_id`)
/// and the body `encoded` wrote.
pub fn encode_request(
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &'static str,
    encoded: impl FnOnce(&mut bytes::BytesMut) -> Result<(), KafkaWireError>,
) -> Result<Bytes, KafkaWireError> {
    use kafka_protocol::protocol::Encodable;
    let mut buf = bytes::BytesMut::from(&[0u8; 4][..]);
    kafka_protocol::messages::RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(kafka_protocol::protocol::StrBytes::from_static_str(
            client_id,
        )))
        .encode(&mut buf, key.request_header_version(version))
        .map_err(KafkaWireError::codec)?;
    encoded(&mut buf)?;
    let size = i32::try_from(buf.len() - 4).map_err(|_| KafkaWireError::FrameSize {
        declared: -1,
        actual: buf.len(),
    })?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

pub fn decode_response(
    key: ApiKey,
    version: i16,
    mut frame: Bytes,
) -> Result<(i32, ResponseKind), KafkaWireError> {
    if frame.len() < 4 {
        return Err(KafkaWireError::FrameSize {
            declared: -1,
            actual: frame.len(),
        });
    }
    let declared = frame.get_i32();
    if declared < 0 || declared as usize != frame.len() {
        let actual = frame.len();
        return Err(KafkaWireError::FrameSize { declared, actual });
    }
    let header = ResponseHeader::decode(&mut frame, key.response_header_version(version))
        .map_err(KafkaWireError::codec)?;
    let body = ResponseKind::decode(key, &mut frame, version).map_err(KafkaWireError::codec)?;
    if frame.has_remaining() {
        return Err(KafkaWireError::Trailing(frame.len()));
    }
    Ok((header.correlation_id, body))
}
