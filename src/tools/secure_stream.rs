//! A tool's blocking connection to a listener under its security protocol: plain TCP, or
//! TLS (rustls, the server checked against `ssl.ca.location` and the name connected to,
//! a client certificate when one is configured). SASL runs on top (`BlockingClient`).

use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::client_config::ClientSecurity;

use crate::kafka::blocking_client::Transport;

/// Connects to `addr` within `timeout` (each later read and write too), under TLS when
/// the security protocol says so.
pub fn connect(
    addr: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<Box<dyn Transport>, String> {
    let timeout = timeout.max(Duration::from_millis(1));
    let target = addr
        .to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))?;
    let tcp = TcpStream::connect_timeout(&target, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let setup = |s: &TcpStream| {
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        s.set_nodelay(true)
    };
    setup(&tcp).map_err(|e| e.to_string())?;
    if !security.protocol.is_tls() {
        return Ok(Box::new(tcp));
    }
    let name = crate::security::client::server_name(addr).map_err(|e| e.0)?;
    let session = rustls::ClientConnection::new(security.tls_config().map_err(|e| e.0)?, name)
        .map_err(|e| e.to_string())?;
    let mut stream = rustls::StreamOwned::new(session, tcp);
    // The handshake now, so a certificate problem is reported as one.
    while stream.conn.is_handshaking() {
        stream
            .conn
            .complete_io(&mut stream.sock)
            .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
    }
    Ok(Box::new(stream))
}

/// A Kafka-protocol client for a tool, connected and authenticated as `security` says.
pub fn kafka_client(
    server: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<crate::kafka::blocking_client::BlockingClient, String> {
    let stream = connect(server, security, timeout)?;
    let mut client = crate::kafka::blocking_client::BlockingClient::over(stream, timeout);
    if let Some((mechanism, user, password)) = &security.sasl {
        client
            .authenticate(*mechanism, user, password)
            .map_err(|e| e.to_string())?;
    }
    Ok(client)
}
