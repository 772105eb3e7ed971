//! The native front end: decodes shardlog's own protocol (PROTOCOL.md) into shard
//! operations and encodes their results.

mod authorize;
mod checks;
mod group_admin;
pub(crate) mod handlers;
mod log_admin;
mod metadata;
mod misdirected;
mod multi;
mod sasl;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use bytes::Bytes;

use crate::admission::budget::Budget;
use crate::net::{FrontEnd, Peer, Reply};
use crate::protocol::{ErrorCode, Response, REQUEST_HEADER};
use crate::shard::Shard;

/// The native protocol's listeners, under their security protocol
/// (`native.security.protocol`, with the same TLS and SASL settings as Kafka's listeners).
pub struct Native {
    pub security: crate::net::listener_security::ListenerSecurity,
}

impl FrontEnd for Native {
    fn label(&self) -> &'static str {
        "native"
    }

    fn handle(
        &self,
        shard: Rc<Shard>,
        frame: Bytes,
        peer: Peer,
        budget: Budget,
        turn: crate::net::turn::Turn,
    ) -> Pin<Box<dyn Future<Output = Reply>>> {
        Box::pin(handlers::handle_frame(shard, frame, peer, budget, turn))
    }

    /// A native client is told why (the stream cannot be resynchronised, so it closes next).
    fn bad_frame_reply(&self, size: i32, max_frame: usize, correlation_id: i32) -> Option<Vec<u8>> {
        let (code, msg) = if size < REQUEST_HEADER as i32 {
            (
                ErrorCode::MalformedRequest,
                format!("frame size {size} is below the 8-byte request header"),
            )
        } else {
            (
                ErrorCode::FrameTooLarge,
                format!("frame of {size} bytes exceeds the limit of {max_frame} bytes"),
            )
        };
        Some(error_frame(correlation_id, code, msg))
    }

    fn answers_bad_frames(&self) -> bool {
        true
    }

    fn refusal(&self, why: String) -> Option<Vec<u8>> {
        Some(error_frame(-1, ErrorCode::TooManyConnections, why))
    }

    fn security(&self) -> Option<&crate::net::listener_security::ListenerSecurity> {
        Some(&self.security)
    }

    fn handshake(&self) -> Option<Box<dyn crate::net::Handshake>> {
        self.security.sasl_exchange(sasl::NativeSasl::new)
    }

    fn starts_reauthentication(&self, frame: &[u8]) -> bool {
        let key = crate::protocol::ApiKey::SaslHandshake as i16;
        self.security.is_sasl_request(frame, key)
    }
}

fn error_frame(correlation_id: i32, code: ErrorCode, msg: String) -> Vec<u8> {
    Response {
        correlation_id,
        result: Err((code, msg)),
    }
    .encode_frame()
}
