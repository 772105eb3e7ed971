//! The client's side of Kafka's SASL exchange, as its clients run it: SaslHandshake v1
//! naming the mechanism, then the mechanism's tokens (`security::scram_client`) each in a
//! SaslAuthenticate v1. The requests and the reading of their answers live here; the
//! blocking client (tools) and the peer connection (nodes) each drive the exchange.

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::wire_error::KafkaWireError;
use crate::security::SaslMechanism;

/// The versions sent (what Kafka's clients send once ApiVersions allows it).
pub const HANDSHAKE: (ApiKey, i16) = (ApiKey::SaslHandshake, 1);
pub const AUTHENTICATE: (ApiKey, i16) = (ApiKey::SaslAuthenticate, 1);

pub fn handshake(mechanism: SaslMechanism) -> RequestKind {
    let name = StrBytes::from_string(mechanism.name().to_string());
    RequestKind::SaslHandshake(SaslHandshakeRequest::default().with_mechanism(name))
}

/// The handshake's answer: accepted, or the mechanisms the listener offers instead.
pub fn handshake_answer(
    mechanism: SaslMechanism,
    answer: ResponseKind,
) -> Result<(), KafkaWireError> {
    match answer {
        ResponseKind::SaslHandshake(r) if r.error_code == 0 => Ok(()),
        ResponseKind::SaslHandshake(r) => {
            let offered: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
            Err(KafkaWireError::MechanismRefused {
                mechanism: mechanism.name(),
                offered,
            })
        }
        other => Err(KafkaWireError::Unexpected(format!(
            "to SaslHandshake: {other:?}"
        ))),
    }
}

/// One SASL token in a SaslAuthenticate.
pub fn token(token: Vec<u8>) -> RequestKind {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    RequestKind::SaslAuthenticate(request)
}

/// The server's token, or why `user` was refused.
pub fn token_answer(user: &str, answer: ResponseKind) -> Result<Vec<u8>, KafkaWireError> {
    match answer {
        ResponseKind::SaslAuthenticate(r) if r.error_code == 0 => Ok(r.auth_bytes.to_vec()),
        ResponseKind::SaslAuthenticate(r) => Err(KafkaWireError::AuthenticationFailed {
            user: user.to_string(),
            code: r.error_code,
            message: r.error_message.map(|m| m.to_string()).unwrap_or_default(),
        }),
        other => Err(KafkaWireError::Unexpected(format!(
            "to SaslAuthenticate: {other:?}"
        ))),
    }
}
