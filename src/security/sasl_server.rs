//! The server's side of one SASL exchange, whatever protocol frames it (Kafka's
//! SaslHandshake/SaslAuthenticate, the native protocol's): a mechanism is chosen from the
//! enabled ones, then its tokens run: PLAIN in one, SCRAM in two (client-first,
//! client-final), checked against this shard's copy of the credentials.

use super::scram::{ScramError, ServerExchange};
use super::{credentials, plain, SaslMechanism};

enum State {
    /// No mechanism chosen yet.
    Start,
    Chosen(SaslMechanism),
    /// SCRAM's server-first is sent; the client-final comes next.
    Scram(ServerExchange),
    Done,
}

pub struct SaslServer {
    enabled: Vec<SaslMechanism>,
    state: State,
}

/// What asking for a mechanism led to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Choice {
    Chosen,
    /// Not one of the enabled mechanisms.
    Unsupported,
    /// A mechanism was already chosen.
    IllegalState,
}

/// What one token led to.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenStep {
    /// Send this and wait for the next token.
    Challenge(Vec<u8>),
    /// Authenticated as this user; send this last.
    Success(Vec<u8>, String),
}

impl SaslServer {
    pub fn new(enabled: Vec<SaslMechanism>) -> Self {
        assert!(!enabled.is_empty(), "a SASL listener offers a mechanism");
        SaslServer {
            enabled,
            state: State::Start,
        }
    }

    pub fn enabled(&self) -> &[SaslMechanism] {
        &self.enabled
    }

    pub fn choose(&mut self, name: &str) -> Choice {
        let offered = SaslMechanism::from_name(name).filter(|m| self.enabled.contains(m));
        match (offered, &self.state) {
            (Some(m), State::Start) => {
                self.state = State::Chosen(m);
                Choice::Chosen
            }
            (Some(_), _) => Choice::IllegalState,
            (None, _) => Choice::Unsupported,
        }
    }

    /// Whether tokens are expected (a mechanism is chosen and the exchange not over).
    pub fn expects_token(&self) -> bool {
        matches!(self.state, State::Chosen(_) | State::Scram(_))
    }

    /// Runs one token; every failure is one opaque error (a user's existence does not leak).
    pub fn token(&mut self, token: &[u8]) -> Result<TokenStep, ScramError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Chosen(SaslMechanism::Plain) => {
                let user = plain::authenticate(token)?;
                crate::metrics::record_authentication();
                Ok(TokenStep::Success(Vec::new(), user))
            }
            State::Chosen(SaslMechanism::Scram(m)) => {
                let lookup = |user: &str| credentials::lookup(user, m);
                let (exchange, server_first) = ServerExchange::start(m, token, lookup)?;
                self.state = State::Scram(exchange);
                Ok(TokenStep::Challenge(server_first))
            }
            State::Scram(exchange) => {
                let user = exchange.user().to_string();
                let server_final = exchange.finish(token)?;
                crate::metrics::record_authentication();
                Ok(TokenStep::Success(server_final, user))
            }
            State::Start | State::Done => Err(ScramError("no mechanism chosen")),
        }
    }
}
