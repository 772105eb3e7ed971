//! A blocking native-protocol connection, one request at a time, for the tools that run
//! without an executor (the protocol probe, consumer-groups on the native listener).
//! Frames are `Request::encode_frame`'s and `Response::decode`'s, as `client::Client` sends
//! and reads them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;

use crate::protocol::{ErrorCode, Request, Response, ResponseBody};

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
    stream: TcpStream,
    next_id: i32,
}

impl NativeBlocking {
    /// Connects with `timeout` for the connect and for each read and write.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Self, String> {
        use std::net::ToSocketAddrs;
        let target = addr
            .to_socket_addrs()
            .map_err(|e| format!("{addr}: {e}"))?
            .next()
            .ok_or_else(|| format!("{addr}: no address"))?;
        let timeout = timeout.max(Duration::from_millis(1));
        let stream = TcpStream::connect_timeout(&target, timeout)
            .map_err(|e| format!("cannot connect to a shardlog server at {addr}: {e}"))?;
        let set = |s: &TcpStream| {
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))
        };
        set(&stream).map_err(|e| e.to_string())?;
        Ok(NativeBlocking { stream, next_id: 1 })
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
