//! The client's side of a SCRAM exchange (RFC 5802), for shardlog's own tools
//! (`--command-config` with `sasl.mechanism=SCRAM-SHA-256`): client-first, the proof in
//! client-final, and the check of the server's signature (a server that does not know the
//! password cannot pass it).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use subtle::ConstantTimeEq;

use super::scram::{Mechanism, ScramError, MAX_ITERATIONS};

pub struct ClientExchange {
    mechanism: Mechanism,
    password: String,
    first_bare: String,
    nonce: String,
}

/// What client-final leaves to check: the server signature the server must send.
pub struct AwaitingServerFinal {
    expected_signature: Vec<u8>,
}

impl ClientExchange {
    /// Starts an exchange; returns it and client-first. User names escape `,` and `=`.
    pub fn start(mechanism: Mechanism, user: &str, password: &str) -> (ClientExchange, Vec<u8>) {
        let nonce: String = (0..24).map(|_| fastrand::alphanumeric()).collect();
        let name = user.replace('=', "=3D").replace(',', "=2C");
        // A comma left in the name would end its field early (RFC 5802's saslname).
        assert!(!name.contains(','), "a user name's commas are escaped");
        let first_bare = format!("n={name},r={nonce}");
        assert_eq!(
            first_bare.split(',').count(),
            2,
            "client-first-bare is two fields"
        );
        let first = format!("n,,{first_bare}").into_bytes();
        let exchange = ClientExchange {
            mechanism,
            password: password.to_string(),
            first_bare,
            nonce,
        };
        (exchange, first)
    }

    /// Answers server-first with client-final (the proof).
    pub fn respond(
        self,
        server_first: &[u8],
    ) -> Result<(AwaitingServerFinal, Vec<u8>), ScramError> {
        let text = std::str::from_utf8(server_first)
            .map_err(|_| ScramError("server-first is not UTF-8"))?;
        let field = |prefix: &str| {
            text.split(',')
                .find_map(|f| f.strip_prefix(prefix))
                .ok_or(ScramError("server-first misses a field"))
        };
        let nonce = field("r=")?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramError("the server's nonce does not extend ours"));
        }
        let salt = B64
            .decode(field("s=")?)
            .map_err(|_| ScramError("bad salt"))?;
        let iterations: u32 = field("i=")?
            .parse()
            .map_err(|_| ScramError("bad iterations"))?;
        if !(1..=MAX_ITERATIONS).contains(&iterations) {
            return Err(ScramError("iterations out of range"));
        }
        let m = self.mechanism;
        let salted = m.salted_password(self.password.as_bytes(), &salt, iterations);
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{},{text},{without_proof}", self.first_bare);
        let (proof, server_signature) = m.client_proof(&salted, auth.as_bytes());
        // Both are HMACs of the mechanism's hash over the same message.
        assert_eq!(
            proof.len(),
            server_signature.len(),
            "proof and signature sizes"
        );
        let last = format!("{without_proof},p={}", B64.encode(proof));
        let awaiting = AwaitingServerFinal {
            expected_signature: server_signature,
        };
        Ok((awaiting, last.into_bytes()))
    }
}

impl AwaitingServerFinal {
    /// Checks server-final (`v=` the server's signature).
    pub fn finish(self, server_final: &[u8]) -> Result<(), ScramError> {
        let text = std::str::from_utf8(server_final)
            .map_err(|_| ScramError("server-final is not UTF-8"))?;
        if let Some(e) = text.strip_prefix("e=") {
            tracing::debug!(error = e, "the server refused the SCRAM exchange");
            return Err(ScramError("the server refused the credentials"));
        }
        let v = text
            .strip_prefix("v=")
            .ok_or(ScramError("server-final has no signature"))?;
        let signature = B64
            .decode(v)
            .map_err(|_| ScramError("bad server signature"))?;
        match bool::from(signature.ct_eq(&self.expected_signature)) {
            true => Ok(()),
            false => Err(ScramError(
                "the server's signature is wrong (not the real server?)",
            )),
        }
    }
}

/// A client's side of a whole SASL exchange, whatever frames carry it: the first token,
/// then for each server token the next one to send, until it is done.
pub struct ClientSasl {
    state: ClientState,
}

enum ClientState {
    /// PLAIN: the one token is sent; the (empty) answer ends it.
    PlainSent,
    ScramFirst(ClientExchange),
    ScramFinal(AwaitingServerFinal),
    Done,
}

impl ClientSasl {
    /// The exchange and its first token.
    pub fn start(mechanism: super::SaslMechanism, user: &str, password: &str) -> (Self, Vec<u8>) {
        match mechanism {
            super::SaslMechanism::Scram(m) => {
                let (exchange, first) = ClientExchange::start(m, user, password);
                let state = ClientState::ScramFirst(exchange);
                (ClientSasl { state }, first)
            }
            _ => {
                let token = format!("\0{user}\0{password}").into_bytes();
                let state = ClientState::PlainSent;
                (ClientSasl { state }, token)
            }
        }
    }

    /// The token answering the server's; `None` once authenticated.
    pub fn next(&mut self, server_token: &[u8]) -> Result<Option<Vec<u8>>, ScramError> {
        match std::mem::replace(&mut self.state, ClientState::Done) {
            ClientState::PlainSent => Ok(None),
            ClientState::ScramFirst(exchange) => {
                let (awaiting, last) = exchange.respond(server_token)?;
                self.state = ClientState::ScramFinal(awaiting);
                Ok(Some(last))
            }
            ClientState::ScramFinal(awaiting) => awaiting.finish(server_token).map(|()| None),
            ClientState::Done => Err(ScramError("the exchange is over")),
        }
    }
}
