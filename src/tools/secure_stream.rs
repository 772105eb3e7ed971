//! A tool's blocking connection to a listener under its security protocol: plain TCP, or
//! TLS (rustls, the server checked against `ssl.ca.location` and the name connected to,
//! a client certificate when one is configured). SASL runs on top (`BlockingClient`).

use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::client_config::ClientSecurity;

use crate::kafka::blocking_client::Transport;

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let fail = |e: String| format!("{}: {e}", path.display());
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| fail(e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| fail(e.to_string()))?;
    match certs.is_empty() {
        true => Err(fail("no certificate in the file".into())),
        false => Ok(certs),
    }
}

fn tls_config(security: &ClientSecurity) -> Result<Arc<rustls::ClientConfig>, String> {
    let ca = security
        .ca_location
        .as_ref()
        .ok_or("TLS needs ssl.ca.location (the CA that signed the server's certificate)")?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(ca)? {
        roots.add(cert).map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let config = match &security.certificate {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => {
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(certificates(chain)?, key)
                .map_err(|e| format!("client certificate: {e}"))?
        }
    };
    Ok(Arc::new(config))
}

/// Connects to `addr` within `timeout` (each later read and write too), under TLS when
/// the security protocol says so.
pub fn connect(addr: &str, security: &ClientSecurity, timeout: Duration) -> Result<Box<dyn Transport>, String> {
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
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_matches(['[', ']']);
    let name = ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: {e}"))?;
    let session = rustls::ClientConnection::new(tls_config(security)?, name).map_err(|e| e.to_string())?;
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
