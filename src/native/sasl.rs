//! SASL on a SASL_PLAINTEXT or SASL_SSL native listener: the same exchange as Kafka's
//! (`security::sasl_server`), framed as native requests (PROTOCOL.md): ApiVersions (any
//! number), SaslHandshake with the mechanism, then SaslAuthenticate per token. Anything else
//! before success, or a failed login, is answered with its error and the connection closes.

use bytes::Bytes;

use super::handlers::{api_versions_body, decode_request, Decoded};
use crate::net::{Handshake, HandshakeStep};
use crate::protocol::{ErrorCode, Request, Response, ResponseBody};
use crate::security::sasl_server::{Choice, SaslServer, TokenStep};
use crate::security::{user_principal, SaslMechanism};

pub struct NativeSasl {
    server: SaslServer,
    /// KIP-368's session lifetime told to the client (0: none).
    session_lifetime_ms: i64,
    /// The correlation id of the last request, so its answer can be turned into a refusal.
    last_correlation_id: i32,
}

fn reply(correlation_id: i32, result: Result<ResponseBody, (ErrorCode, String)>) -> Vec<u8> {
    Response {
        correlation_id,
        result,
    }
    .encode_frame()
}

impl NativeSasl {
    pub fn new(enabled: Vec<SaslMechanism>, session_lifetime_ms: i64) -> Self {
        NativeSasl {
            server: SaslServer::new(enabled),
            session_lifetime_ms,
            last_correlation_id: -1,
        }
    }

    fn choose(&mut self, cid: i32, mechanism: &str) -> HandshakeStep {
        let offered: Vec<String> = self
            .server
            .enabled()
            .iter()
            .map(|m| m.name().to_string())
            .collect();
        let refuse = |code: ErrorCode, why: String| {
            HandshakeStep::Fail(Some(reply(cid, Err((code, why.clone())))), why)
        };
        match self.server.choose(mechanism) {
            Choice::Chosen => {
                HandshakeStep::Continue(reply(cid, Ok(ResponseBody::SaslHandshake(offered))))
            }
            Choice::IllegalState => refuse(
                ErrorCode::IllegalSaslState,
                "a mechanism is already chosen".into(),
            ),
            _ => refuse(
                ErrorCode::UnsupportedSaslMechanism,
                format!(
                    "SASL mechanism {mechanism:?} is not offered here (offered: {})",
                    offered.join(", ")
                ),
            ),
        }
    }

    fn token(&mut self, cid: i32, token: &[u8]) -> HandshakeStep {
        if !self.server.expects_token() {
            let why = "SaslAuthenticate before SaslHandshake".to_string();
            return HandshakeStep::Fail(
                Some(reply(cid, Err((ErrorCode::IllegalSaslState, why.clone())))),
                why,
            );
        }
        let body = |auth: Vec<u8>, lifetime: i64| {
            Ok(ResponseBody::SaslAuthenticate {
                auth_bytes: Bytes::from(auth),
                session_lifetime_ms: lifetime,
            })
        };
        match self.server.token(token) {
            Ok(TokenStep::Challenge(next)) => HandshakeStep::Continue(reply(cid, body(next, 0))),
            Ok(TokenStep::Success(last, user)) => {
                let frame = reply(cid, body(last, self.session_lifetime_ms));
                HandshakeStep::Authenticated(Some(frame), user_principal(&user))
            }
            Err(why) => {
                // One message whatever failed: whether a user exists does not leak.
                let told = "Authentication failed: invalid credentials".to_string();
                let frame = reply(cid, Err((ErrorCode::SaslAuthenticationFailed, told)));
                HandshakeStep::Fail(Some(frame), format!("SASL authentication failed: {why}"))
            }
        }
    }
}

impl Handshake for NativeSasl {
    fn step(&mut self, frame: Bytes) -> HandshakeStep {
        let Decoded { cid, request, .. } = match decode_request(&frame) {
            Ok(decoded) => decoded,
            Err((_, refusal)) => {
                return HandshakeStep::Fail(Some(refusal.to_vec()), "a malformed request".into())
            }
        };
        self.last_correlation_id = cid;
        match request {
            Request::ApiVersions => HandshakeStep::Continue(reply(cid, Ok(api_versions_body()))),
            Request::SaslHandshake { mechanism } => self.choose(cid, &mechanism),
            Request::SaslAuthenticate { auth_bytes } => self.token(cid, &auth_bytes),
            other => {
                let why = format!(
                    "{:?} before SASL authentication (SaslHandshake, SaslAuthenticate first)",
                    other.api_key()
                );
                HandshakeStep::Fail(
                    Some(reply(cid, Err((ErrorCode::IllegalSaslState, why.clone())))),
                    why,
                )
            }
        }
    }

    fn refusal(&mut self, why: &str) -> Option<Vec<u8>> {
        let refused = Err((ErrorCode::SaslAuthenticationFailed, why.to_string()));
        Some(reply(self.last_correlation_id, refused))
    }
}
