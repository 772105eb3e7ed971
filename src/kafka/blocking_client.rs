//! A minimal blocking Kafka client over std's TcpStream: one request at a time, encoded and
//! decoded with the kafka-protocol crate. For tests and benchmarks that speak to the Kafka
//! listener byte for byte; real applications use a Kafka client library.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::sasl_client;
use super::wire_error::KafkaWireError;
use crate::security::scram_client::ClientSasl;

/// A connection's bytes: plain TCP or a TLS stream over it.
pub trait Transport: Read + Write + Send {}
impl<T: Read + Write + Send> Transport for T {}

const CLIENT_ID: &str = "shardlog-blocking-client";

pub struct BlockingClient {
    stream: Box<dyn Transport>,
    next_correlation_id: i32,
    timeout: Duration,
}

impl BlockingClient {
    pub fn connect(addr: &str) -> std::io::Result<Self> {
        Self::connect_with_timeout(addr, Duration::from_secs(30))
    }

    /// Connects within `timeout`; each request's answer must then come within it too.
    pub fn connect_with_timeout(addr: &str, timeout: Duration) -> std::io::Result<Self> {
        let timeout = timeout.max(Duration::from_millis(1));
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(stream) => {
                    stream.set_read_timeout(Some(timeout))?;
                    stream.set_write_timeout(Some(timeout))?;
                    stream.set_nodelay(true)?;
                    return Ok(Self::over(Box::new(stream), timeout));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other(format!("{addr} resolves to nothing"))))
    }

    /// A client over a connected stream whose reads and writes time out after `timeout`.
    pub fn over(stream: Box<dyn Transport>, timeout: Duration) -> Self {
        BlockingClient {
            stream,
            next_correlation_id: 1,
            timeout,
        }
    }

    /// SASL authentication as Kafka's clients run it (`sasl_client`).
    pub fn authenticate(
        &mut self,
        mechanism: crate::security::SaslMechanism,
        user: &str,
        password: &str,
    ) -> Result<(), KafkaWireError> {
        let (key, version) = sasl_client::HANDSHAKE;
        let answer = self.call(key, version, &sasl_client::handshake(mechanism))?;
        sasl_client::handshake_answer(mechanism, answer)?;
        let (mut exchange, mut next) = ClientSasl::start(mechanism, user, password);
        let (key, version) = sasl_client::AUTHENTICATE;
        loop {
            let answer = self.call(key, version, &sasl_client::token(next))?;
            match exchange.next(&sasl_client::token_answer(user, answer)?)? {
                Some(more) => next = more,
                None => return Ok(()),
            }
        }
    }

    /// Sends a request with a raw body (which may be anything); returns its correlation id.
    pub fn send_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> std::io::Result<i32> {
        let cid = self.next_correlation_id;
        self.next_correlation_id += 1;
        let frame = super::codec::encode_request(key, version, cid, CLIENT_ID, |buf| {
            buf.extend_from_slice(body);
            Ok(())
        })
        .map_err(std::io::Error::other)?;
        self.stream.write_all(&frame)?;
        Ok(cid)
    }

    /// The next response frame, size prefix included; `None` once the server closed.
    pub fn read_frame(&mut self) -> Option<Bytes> {
        self.next_frame().ok()
    }

    /// The next response frame, or why there is none (closed, or no answer in time).
    fn next_frame(&mut self) -> std::io::Result<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let len = usize::try_from(i32::from_be_bytes(size))
            .map_err(|_| std::io::Error::other("negative response size"))?;
        let mut frame = vec![0u8; 4 + len];
        frame[..4].copy_from_slice(&size);
        self.stream.read_exact(&mut frame[4..])?;
        Ok(Bytes::from(frame))
    }

    /// Sends a request and decodes its response.
    pub fn call(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &RequestKind,
    ) -> Result<ResponseKind, KafkaWireError> {
        let mut body = BytesMut::new();
        request
            .encode(&mut body, version)
            .map_err(KafkaWireError::codec)?;
        let cid = self.send_raw(key, version, &body)?;
        let ms = self.timeout.as_millis();
        let frame = self.next_frame().map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                KafkaWireError::Timeout {
                    key: format!("{key:?}"),
                    ms,
                }
            }
            std::io::ErrorKind::UnexpectedEof => KafkaWireError::Closed {
                key: format!("{key:?} v{version}"),
            },
            _ => KafkaWireError::Io {
                context: format!("{key:?} v{version}"),
                source: e,
            },
        })?;
        let (got, response) = super::decode_response(key, version, frame)?;
        if got != cid {
            return Err(KafkaWireError::Correlation { got, expected: cid });
        }
        Ok(response)
    }
}
