//! A Kafka connection from this node to another node of the cluster, on the shard's own
//! executor (glommio's TcpStream): what a follower's fetcher, a forwarded admin request
//! and the transaction coordinator's calls use. It goes to the other node's inter-broker
//! listener (`inter.broker.listener.name`) and secures itself as that listener asks: TLS
//! trusting the node's truststore (presenting its own certificate), SASL with the node's
//! own login, so the other node knows it by its principal. One request at a time, each
//! answer bounded in size and time.

use std::time::Duration;

use bytes::Bytes;
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use glommio::net::TcpStream;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::sasl_client;
use super::wire_error::KafkaWireError;
use crate::cluster::ClusterView;
use crate::io::deadline::before;
use crate::security::client::{server_name, ClientSecurity};
use crate::security::scram_client::ClientSasl;
use crate::security::{SaslMechanism, SecurityProtocol};

/// The largest answer a peer may send (a follower's fetch brings at most a few MiB).
const MAX_RESPONSE: usize = 64 << 20;

/// A byte stream both ways: the socket, or TLS over it.
trait Duplex: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Duplex for T {}

pub struct Peer {
    stream: Box<dyn Duplex>,
    correlation: i32,
    client_id: &'static str,
}

fn unexpected(what: String) -> KafkaWireError {
    KafkaWireError::Unexpected(what)
}

impl Peer {
    /// Connects to `addr` and secures the connection as `security` says (TLS, then SASL),
    /// each step within `timeout`.
    pub async fn connect(
        addr: &str,
        security: &ClientSecurity,
        timeout: Duration,
        client_id: &'static str,
    ) -> Result<Peer, KafkaWireError> {
        let connected = before(timeout, TcpStream::connect(addr)).await;
        let tcp = connected
            .ok_or_else(|| unexpected(format!("connecting to {addr} timed out")))?
            .map_err(|e| unexpected(format!("connecting to {addr}: {e}")))?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Duplex> = match security.protocol.is_tls() {
            true => Box::new(tls_over(tcp, addr, security, timeout).await?),
            false => Box::new(tcp),
        };
        let mut peer = Peer {
            stream,
            correlation: 0,
            client_id,
        };
        if let Some((mechanism, user, password)) = &security.sasl {
            let login = peer.authenticate(*mechanism, user, password, timeout);
            before(timeout * 2, login)
                .await
                .ok_or_else(|| unexpected(format!("authenticating to {addr} timed out")))??;
        }
        assert_eq!(
            security.sasl.is_some(),
            security.protocol.needs_sasl(),
            "a SASL listener is logged in to, no other"
        );
        Ok(peer)
    }

    /// SASL as Kafka's clients run it (`sasl_client`), as `user`.
    async fn authenticate(
        &mut self,
        mechanism: SaslMechanism,
        user: &str,
        password: &str,
        timeout: Duration,
    ) -> Result<(), KafkaWireError> {
        let (key, version) = sasl_client::HANDSHAKE;
        let request = sasl_client::handshake(mechanism);
        let answer = self.call(key, version, &request, timeout).await?;
        sasl_client::handshake_answer(mechanism, answer)?;
        let (mut exchange, mut next) = ClientSasl::start(mechanism, user, password);
        let (key, version) = sasl_client::AUTHENTICATE;
        loop {
            let request = sasl_client::token(next);
            let answer = self.call(key, version, &request, timeout).await?;
            match exchange.next(&sasl_client::token_answer(user, answer)?)? {
                Some(more) => next = more,
                None => return Ok(()),
            }
        }
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
        let exchanged = before(timeout, exchange(self.stream.as_mut(), &frame)).await;
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

/// Where node `broker` takes this node's requests: its listener of `protocol` (the
/// inter-broker listener), as it registered it.
pub fn peer_address(
    view: Option<&ClusterView>,
    broker: i32,
    protocol: SecurityProtocol,
) -> Result<String, KafkaWireError> {
    let registered = view.and_then(|v| v.broker(broker));
    let name = protocol.name();
    let listener = registered.and_then(|b| b.listeners.iter().find(|l| l.name == name));
    let listener = listener.ok_or_else(|| {
        unexpected(format!(
            "broker {broker} is not live or has no {name} listener (inter.broker.listener.name)"
        ))
    })?;
    assert_eq!(listener.name, name, "the listener asked for");
    Ok(format!("{}:{}", listener.host, listener.port))
}

/// TLS over `tcp` to the node at `addr`, its certificate checked against the truststore.
async fn tls_over(
    tcp: TcpStream,
    addr: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<futures_rustls::client::TlsStream<TcpStream>, KafkaWireError> {
    let setup =
        |e: crate::security::client::ClientSetupError| unexpected(format!("TLS to {addr}: {e}"));
    let config = security.tls_config().map_err(setup)?;
    let name = server_name(addr).map_err(setup)?;
    let handshake = futures_rustls::TlsConnector::from(config).connect(name, tcp);
    before(timeout, handshake)
        .await
        .ok_or_else(|| unexpected(format!("the TLS handshake with {addr} timed out")))?
        .map_err(|e| unexpected(format!("the TLS handshake with {addr}: {e}")))
}

/// Writes a request frame and reads its response frame.
async fn exchange(stream: &mut dyn Duplex, frame: &[u8]) -> Result<Bytes, KafkaWireError> {
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
