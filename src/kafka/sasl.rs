//! SASL authentication on a SASL_PLAINTEXT Kafka listener, as Kafka's
//! SaslServerAuthenticator runs it before any other request: ApiVersions (any number),
//! then SaslHandshake (v0: the tokens that follow are raw size-prefixed frames; v1: they
//! ride in SaslAuthenticate v0-2), then the mechanism's tokens: PLAIN in one, SCRAM in two
//! (client-first, client-final). Anything else before success closes the connection; a
//! failed login is answered with SASL_AUTHENTICATION_FAILED (58) and closed.

use bytes::Bytes;
use kafka_protocol::messages::{
    RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};

use super::codec::{decode, encode, Decoded};
use super::{api_versions, str_bytes};
use crate::net::{Handshake, HandshakeStep};
use crate::security::sasl_server::{Choice, SaslServer, TokenStep};
use crate::security::{user_principal, SaslMechanism};

use super::errors::{ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM};

pub struct KafkaSasl {
    server: SaslServer,
    /// SaslHandshake v0: the tokens come as raw frames.
    raw: bool,
    /// KIP-368's session lifetime told to v1+ clients (0: none).
    session_lifetime_ms: i64,
    /// (version, correlation id) of the last SaslAuthenticate, so its answer can be turned
    /// into a refusal.
    last_authenticate: Option<(i16, i32)>,
}

impl KafkaSasl {
    pub fn new(enabled: Vec<SaslMechanism>, session_lifetime_ms: i64) -> Self {
        KafkaSasl {
            server: SaslServer::new(enabled),
            raw: false,
            session_lifetime_ms,
            last_authenticate: None,
        }
    }

    fn mechanism_names(&self) -> Vec<kafka_protocol::protocol::StrBytes> {
        self.server
            .enabled()
            .iter()
            .map(|m| str_bytes(m.name()))
            .collect()
    }

    /// A token sent as a raw frame (after SaslHandshake v0): answered as a raw frame.
    fn raw_token(&mut self, token: &[u8]) -> HandshakeStep {
        match self.server.token(token) {
            Ok(TokenStep::Challenge(reply)) => HandshakeStep::Continue(raw_frame(&reply)),
            Ok(TokenStep::Success(reply, user)) => {
                HandshakeStep::Authenticated(Some(raw_frame(&reply)), user_principal(&user))
            }
            // v0 has no error response: the connection is closed.
            Err(why) => HandshakeStep::Fail(None, format!("SASL (v0 framing): {why}")),
        }
    }

    fn handshake(&mut self, version: i16, mechanism: &str) -> (SaslHandshakeResponse, bool) {
        let response = SaslHandshakeResponse::default().with_mechanisms(self.mechanism_names());
        match self.server.choose(mechanism) {
            Choice::Chosen => {
                self.raw = version == 0;
                (response, true)
            }
            Choice::IllegalState => (response.with_error_code(ILLEGAL_SASL_STATE), false),
            _ => (response.with_error_code(UNSUPPORTED_SASL_MECHANISM), false),
        }
    }

    fn authenticate(&mut self, token: &[u8]) -> (SaslAuthenticateResponse, Option<String>, bool) {
        if self.raw || !self.server.expects_token() {
            let r = SaslAuthenticateResponse::default()
                .with_error_code(ILLEGAL_SASL_STATE)
                .with_error_message(Some(str_bytes("SaslAuthenticate before SaslHandshake v1")));
            return (r, None, false);
        }
        match self.server.token(token) {
            Ok(TokenStep::Challenge(reply)) => (ok_token(reply), None, true),
            Ok(TokenStep::Success(reply, user)) => (ok_token(reply), Some(user), true),
            Err(why) => {
                tracing::debug!(%why, "SASL authentication failed");
                // One message whatever failed: whether a user exists does not leak.
                let r = SaslAuthenticateResponse::default()
                    .with_error_code(SASL_AUTHENTICATION_FAILED)
                    .with_error_message(Some(str_bytes(
                        "Authentication failed: invalid credentials",
                    )));
                (r, None, false)
            }
        }
    }
}

fn ok_token(reply: Vec<u8>) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(reply))
}

fn raw_frame(token: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + token.len());
    out.extend_from_slice(&(token.len() as i32).to_be_bytes());
    out.extend_from_slice(token);
    out
}

impl Handshake for KafkaSasl {
    fn refusal(&mut self, why: &str) -> Option<Vec<u8>> {
        let (version, correlation_id) = self.last_authenticate?;
        let response = SaslAuthenticateResponse::default()
            .with_error_code(SASL_AUTHENTICATION_FAILED)
            .with_error_message(Some(str_bytes(why)));
        let key = kafka_protocol::messages::ApiKey::SaslAuthenticate;
        encode(
            key,
            version,
            correlation_id,
            &ResponseKind::SaslAuthenticate(response),
        )
        .ok()
    }

    fn step(&mut self, frame: Bytes) -> HandshakeStep {
        if self.raw && self.server.expects_token() {
            return self.raw_token(&frame);
        }
        let (key, version, correlation_id, request) = match decode(frame) {
            Decoded::Request {
                key,
                version,
                correlation_id,
                request,
                ..
            } => (key, version, correlation_id, request),
            Decoded::NewerApiVersions { correlation_id } => {
                let frame = api_versions::unsupported_version_frame(correlation_id);
                return HandshakeStep::Continue(frame);
            }
            Decoded::Unparseable(why) => return HandshakeStep::Fail(None, why),
        };
        let reply = |response: ResponseKind| encode(key, version, correlation_id, &response);
        let (response, outcome) = match *request {
            RequestKind::ApiVersions(_) => (
                ResponseKind::ApiVersions(api_versions::response()),
                Ok(None),
            ),
            RequestKind::SaslHandshake(r) => {
                let (response, ok) = self.handshake(version, r.mechanism.as_str());
                let outcome = match ok {
                    true => Ok(None),
                    false => Err(format!("SASL mechanism {:?} refused", r.mechanism.as_str())),
                };
                (ResponseKind::SaslHandshake(response), outcome)
            }
            RequestKind::SaslAuthenticate(r) => {
                self.last_authenticate = Some((version, correlation_id));
                let (mut response, user, ok) = self.authenticate(&r.auth_bytes);
                if user.is_some() && version >= 1 {
                    response.session_lifetime_ms = self.session_lifetime_ms;
                }
                let outcome = match (ok, user) {
                    (true, user) => Ok(user),
                    (false, _) => Err("SASL authentication failed".to_string()),
                };
                (ResponseKind::SaslAuthenticate(response), outcome)
            }
            _ => {
                let why = format!("{key:?} before SASL authentication");
                return HandshakeStep::Fail(None, why);
            }
        };
        let Ok(frame) = reply(response) else {
            return HandshakeStep::Fail(None, format!("encoding {key:?} v{version}"));
        };
        match outcome {
            Ok(None) => HandshakeStep::Continue(frame),
            Ok(Some(user)) => HandshakeStep::Authenticated(Some(frame), user_principal(&user)),
            Err(why) => HandshakeStep::Fail(Some(frame), why),
        }
    }
}

/// After authentication (or on a PLAINTEXT listener), SASL requests are out of turn.
pub fn out_of_turn(request: RequestKind) -> ResponseKind {
    match request {
        RequestKind::SaslHandshake(_) => ResponseKind::SaslHandshake(
            SaslHandshakeResponse::default().with_error_code(ILLEGAL_SASL_STATE),
        ),
        _ => ResponseKind::SaslAuthenticate(
            SaslAuthenticateResponse::default()
                .with_error_code(ILLEGAL_SASL_STATE)
                .with_error_message(Some(str_bytes("already authenticated"))),
        ),
    }
}
