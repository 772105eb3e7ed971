//! A blocking native-protocol connection, one request at a time, for the tools that run
//! without an executor (the protocol probe, consumer-groups on the native listener).
//! Frames are `Request::encode_frame`'s and `Response::decode`'s, as `client::Client` sends
//! and reads them.

use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;

use crate::protocol::{ErrorCode, Request, Response, ResponseBody};
use crate::security::client::ClientSecurity;
use crate::security::scram_client::ClientSasl;
use crate::security::SaslMechanism;

/// Largest reply a tool accepts (a group's description or commits; never records).
const MAX_REPLY_BYTES: i32 = 64 << 20;

/// Why a native call failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallError {
    /// The connection failed, closed or timed out.
    Io(std::io::Error),
    /// Bytes came back that are not a native reply to the request.
    NotNative,
    /// The server answered with an error.
    Server(ErrorCode, String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Io(e) => write!(f, "{e}"),
            CallError::NotNative => write!(f, "the reply is not shardlog's native protocol"),
            CallError::Server(code, message) => write!(f, "{code:?}: {message}"),
        }
    }
}

pub struct NativeBlocking {
    stream: Box<dyn crate::kafka::blocking_client::Transport>,
    next_id: i32,
}

impl NativeBlocking {
    /// Connects with `timeout` for the connect and for each read and write.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self, String> {
        Self::connect_secure(addr, &ClientSecurity::plaintext(), timeout)
    }

    /// Connects under the listener's security protocol (TLS, then SASL as configured).
    pub fn connect_secure(
        addr: &str,
        security: &ClientSecurity,
        timeout: Duration,
    ) -> Result<Self, String> {
        let stream = super::secure_stream::connect(addr, security, timeout)
            .map_err(|e| format!("cannot connect to a shardlog server at {addr}: {e}"))?;
        let mut connection = NativeBlocking { stream, next_id: 1 };
        if let Some((mechanism, user, password)) = &security.sasl {
            connection.authenticate(*mechanism, user, password)?;
        }
        Ok(connection)
    }

    /// SASL as the native protocol frames it: SaslHandshake, then SaslAuthenticate per token.
    fn authenticate(
        &mut self,
        mechanism: SaslMechanism,
        user: &str,
        password: &str,
    ) -> Result<(), String> {
        let handshake = Request::SaslHandshake {
            mechanism: mechanism.name().to_string(),
        };
        self.call(&handshake).map_err(|e| e.to_string())?;
        let (mut exchange, mut next) = ClientSasl::start(mechanism, user, password);
        loop {
            let request = Request::SaslAuthenticate {
                auth_bytes: Bytes::from(next),
            };
            let answer = match self.call(&request).map_err(|e| e.to_string())? {
                ResponseBody::SaslAuthenticate { auth_bytes, .. } => auth_bytes,
                other => return Err(format!("unexpected answer to SaslAuthenticate: {other:?}")),
            };
            match exchange.next(&answer).map_err(|e| format!("SASL: {e}"))? {
                Some(more) => next = more,
                None => return Ok(()),
            }
        }
    }

    /// Sends `request` and reads its reply.
    pub fn call(&mut self, request: &Request) -> Result<ResponseBody, CallError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.stream
            .write_all(&request.encode_frame(id))
            .map_err(CallError::Io)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).map_err(CallError::Io)?;
        let len = i32::from_be_bytes(size);
        if !(0..=MAX_REPLY_BYTES).contains(&len) {
            return Err(CallError::NotNative);
        }
        let mut body = vec![0u8; len as usize];
        self.stream.read_exact(&mut body).map_err(CallError::Io)?;
        let reply = Response::decode(request.api_key(), &Bytes::from(body))
            .map_err(|_| CallError::NotNative)?;
        if reply.correlation_id != id {
            return Err(CallError::NotNative);
        }
        reply
            .result
            .map_err(|(code, message)| CallError::Server(code, message))
    }
}
