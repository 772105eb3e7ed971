//! A Kafka connection from this node to another node of the cluster, on the shard's own
//! executor (glommio's TcpStream): what a follower's fetcher and a forwarded admin request
//! use. One request at a time, each answer bounded in size and time. Nodes reach each other
//! at their PLAINTEXT listener (TLS and SASL between nodes are to come).

use std::time::Duration;

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::wire_error::KafkaWireError;
use crate::cluster::ClusterView;
use crate::io::deadline::before;

/// The largest answer a peer may send (a follower's fetch brings at most a few MiB).
const MAX_RESPONSE: usize = 64 << 20;

pub struct Peer {
    stream: TcpStream,
    correlation: i32,
    client_id: &'static str,
}

impl Peer {
    /// Connects to `addr` within `timeout`.
    pub async fn connect(
        addr: &str,
        timeout: Duration,
        client_id: &'static str,
    ) -> Result<Peer, KafkaWireError> {
        let connected = before(timeout, TcpStream::connect(addr)).await;
        let stream = connected
            .ok_or_else(|| KafkaWireError::Unexpected(format!("connecting to {addr} timed out")))?
            .map_err(|e| KafkaWireError::Unexpected(format!("connecting to {addr}: {e}")))?;
        let _ = stream.set_nodelay(true);
        Ok(Peer {
            stream,
            correlation: 0,
            client_id,
        })
    }

    /// Sends `request` at `version` and decodes its answer, within `timeout`.
    pub async fn call(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &RequestKind,
        timeout: Duration,
    ) -> Result<ResponseKind, KafkaWireError> {
        self.correlation = self.correlation.wrapping_add(1);
        let cid = self.correlation;
        let frame = super::codec::encode_request(key, version, cid, self.client_id, |buf| {
            request.encode(buf, version).map_err(KafkaWireError::codec)
        })?;
        let exchanged = before(timeout, exchange(&mut self.stream, &frame)).await;
        let response = exchanged.ok_or(KafkaWireError::Timeout {
            key: format!("{key:?}"),
            ms: timeout.as_millis(),
        })??;
        let (got, body) = super::codec::decode_response(key, version, response)?;
        if got != cid {
            return Err(KafkaWireError::Correlation { got, expected: cid });
        }
        Ok(body)
    }
}

/// Where another node takes Kafka requests: its PLAINTEXT listener, as it registered it.
pub fn plaintext_address(
    view: Option<&ClusterView>,
    broker: i32,
) -> Result<String, KafkaWireError> {
    let registered = view.and_then(|v| v.broker(broker));
    let listener = registered.and_then(|b| b.listeners.iter().find(|l| l.name == "PLAINTEXT"));
    let listener = listener.ok_or_else(|| {
        KafkaWireError::Unexpected(format!("broker {broker} is not live or has no PLAINTEXT listener (nodes speak PLAINTEXT to each other for now)"))
    })?;
    Ok(format!("{}:{}", listener.host, listener.port))
}

/// One request to node `to` over a connection of its own (its PLAINTEXT listener in
/// `view`), within `timeout` for the connect and again for the answer.
pub async fn call_once(
    view: Option<&ClusterView>,
    to: i32,
    client_id: &'static str,
    (key, version, request): (ApiKey, i16, &RequestKind),
    timeout: Duration,
) -> Result<ResponseKind, KafkaWireError> {
    let addr = plaintext_address(view, to)?;
    let mut peer = Peer::connect(&addr, timeout, client_id).await?;
    peer.call(key, version, request, timeout).await
}

/// Writes a request frame and reads its response frame.
async fn exchange(stream: &mut TcpStream, frame: &[u8]) -> Result<Bytes, KafkaWireError> {
    let io = |e: std::io::Error| KafkaWireError::Io {
        context: "a request to another node".into(),
        source: e,
    };
    stream.write_all(frame).await.map_err(io)?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await.map_err(io)?;
    let len = i32::from_be_bytes(size);
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_RESPONSE)
        .ok_or(KafkaWireError::FrameSize {
            declared: len,
            actual: 0,
        })?;
    let mut buf = vec![0u8; 4 + len];
    buf[..4].copy_from_slice(&size);
    stream.read_exact(&mut buf[4..]).await.map_err(io)?;
    Ok(Bytes::from(buf))
}
