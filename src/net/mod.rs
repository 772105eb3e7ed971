//! The network edge: listeners (accept loop, connection slots), connections (framing,
//! pipelining, budgets, timeouts), the reply path (one vectored sendmsg for the replies
//! ready together) and the
//! metrics endpoint. It names no protocol: each listener has a [`FrontEnd`] (`native/`,
//! `kafka/`) that turns a frame into a reply.

pub(crate) mod accept;
pub(crate) mod connection;
pub(crate) mod frame_buf;
pub mod listener_security;
pub(crate) mod metrics_http;
pub(crate) mod replies;
pub(crate) mod send;
pub(crate) mod stream;
pub mod tls;
pub(crate) mod turn;

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use bytes::Bytes;

use crate::admission::budget::{Budget, Reservation};
use crate::protocol::frame::Frame;
use crate::shard::Shard;

/// A protocol's side of a listener: how a request frame is answered, and what a client
/// that breaks the framing or the connection limits is told.
pub trait FrontEnd {
    /// The `wire` label of request metrics and logs.
    fn label(&self) -> &'static str;
    /// Handles one request frame body (size prefix removed) in its `turn`: its work
    /// reaches the engine after the connection's earlier requests' (`turn.rs`).
    fn handle(
        &self,
        shard: Rc<Shard>,
        frame: Bytes,
        peer: Peer,
        budget: Budget,
        turn: turn::Turn,
    ) -> Pin<Box<dyn Future<Output = Reply>>>;
    /// The reply to a frame whose size cannot be accepted, sent before the connection
    /// closes (`correlation_id` is -1 when the header could not be read); `None` closes
    /// at once without reading further, as a Kafka broker does.
    fn bad_frame_reply(&self, size: i32, max_frame: usize, correlation_id: i32) -> Option<Vec<u8>>;
    /// Whether [`bad_frame_reply`](Self::bad_frame_reply) answers (so the header is read).
    fn answers_bad_frames(&self) -> bool;
    /// What a connection over the listener's limits is told before it is closed.
    fn refusal(&self, why: String) -> Option<Vec<u8>>;
    /// The exchange a connection must complete before its requests are served (SASL
    /// authentication); `None`: requests are served at once.
    fn handshake(&self) -> Option<Box<dyn Handshake>> {
        None
    }
    /// The listener's security settings (None: PLAINTEXT, nothing to apply).
    fn security(&self) -> Option<&listener_security::ListenerSecurity> {
        None
    }
    /// The listener's TLS (SSL, SASL_SSL): run before anything else on the connection.
    fn tls(&self) -> Option<std::sync::Arc<rustls::ServerConfig>> {
        let source = self.security()?.tls.as_ref()?;
        Some(source.config())
    }
    /// KIP-368: how long an authenticated session lasts (None: for ever).
    fn session_lifetime(&self) -> Option<std::time::Duration> {
        let security = self.security()?;
        security
            .session_lifetime
            .filter(|_| security.protocol.needs_sasl())
    }
    /// Whether a request frame, after authentication, starts a re-authentication.
    fn starts_reauthentication(&self, _frame: &[u8]) -> bool {
        false
    }
    /// How a client certificate becomes a principal (`ssl.principal.mapping.rules`).
    fn principal_mapper(&self) -> Option<&crate::security::principal_mapping::PrincipalMapper> {
        Some(&self.security()?.mapper)
    }
}

/// A connection's authentication, one frame at a time, before any request is served
/// (and before requests are pipelined): each step's reply is written before the next frame
/// is read.
pub trait Handshake {
    fn step(&mut self, frame: Bytes) -> HandshakeStep;
    /// The reply that refuses the exchange's last step instead of its own (a
    /// re-authentication that ends as another principal).
    fn refusal(&mut self, _why: &str) -> Option<Vec<u8>> {
        None
    }
}

/// What a handshake frame leads to. Replies are whole frames (size prefix included).
#[non_exhaustive]
pub enum HandshakeStep {
    /// Send this and read the next frame.
    Continue(Vec<u8>),
    /// Authenticated as this principal; send the reply (if any), then serve requests.
    Authenticated(Option<Vec<u8>>, String),
    /// Refused: send the reply (if any), then close; the reason is logged.
    Fail(Option<Vec<u8>>, String),
}

/// Who a request comes from, as the connection saw it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Kafka's principal: `User:NAME` once SASL authenticated, else `User:ANONYMOUS`.
    pub principal: Rc<str>,
    pub is_loopback: bool,
    /// The address the client connected to (what Metadata advertises on a wildcard listen).
    pub local: Option<std::net::SocketAddr>,
    /// The client's address (consumer groups report members' hosts).
    pub remote: Option<std::net::SocketAddr>,
    /// The client's IP as ACLs name hosts, written once per connection.
    pub host: Rc<str>,
}

impl Peer {
    /// The client's IP as ACLs name hosts (an IPv4 client seen through an IPv6 socket
    /// is its IPv4 address); empty when unknown.
    pub fn acl_host(remote: Option<std::net::SocketAddr>) -> Rc<str> {
        let text = remote.map_or(String::new(), |a| match a.ip() {
            std::net::IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map_or(v6.to_string(), |v4| v4.to_string()),
            v4 => v4.to_string(),
        });
        text.into()
    }

    /// Who the authorizer checks.
    pub fn who(&self) -> crate::security::authorizer::Who<'_> {
        crate::security::authorizer::Who {
            principal: &self.principal,
            host: &self.host,
        }
    }
}

/// A reply frame (`None`: send nothing, acks=0 produce) and the budget its bytes hold until
/// it is written.
pub struct Reply {
    pub frame: Option<Frame>,
    pub reservation: Reservation,
    /// Close the connection after this reply (a Kafka request that cannot be parsed).
    pub close: bool,
    /// The API answered (the metrics label; "unknown" when the request did not decode).
    pub api: &'static str,
    /// Whether it succeeded (native: no error code; Kafka: a response was encoded).
    pub ok: bool,
    /// Whether its stages are timed (data-path requests: `ApiKey::is_data_path`, and
    /// every Kafka request).
    pub timed: bool,
}

impl Reply {
    /// No reply: the connection is closed (a request that cannot be trusted, a client on
    /// the wrong listener).
    pub fn close_unanswered() -> Self {
        Reply {
            frame: None,
            reservation: Reservation::default(),
            close: true,
            api: "unknown",
            ok: false,
            timed: false,
        }
    }

    pub fn frame(frame: Vec<u8>) -> Self {
        Reply {
            frame: Some(frame.into()),
            reservation: Reservation::default(),
            close: false,
            api: "unknown",
            ok: false,
            timed: false,
        }
    }
}
