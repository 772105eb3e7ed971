//! TLS on a listener (SSL, SASL_SSL), in user space with rustls: the handshake runs before
//! anything else on the connection; then the reading half decrypts what the socket brings
//! and the writing half encrypts each reply. Both halves run on the connection's shard and
//! share the one rustls session through an `Rc<RefCell>`, borrowed only between awaits
//! (never across one), so there is no lock.
//!
//! Kernel TLS (the session's keys handed to the socket, so replies keep the zero-copy
//! vectored send) needs the kernel's `tls` module, which the machines shardlog is tested on
//! do not have; user space costs one copy per reply byte (the encryption's own output).

use std::cell::{Cell, RefCell};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use glommio::net::{Preallocated, TcpStream};
use rustls::pki_types::CertificateDer;
use rustls::ServerConnection;

use crate::security::listeners::ClientAuth;

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 16 * 1024;

/// Why a TLS listener cannot be set up.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {why}")]
pub struct TlsSetupError {
    pub what: String,
    pub why: String,
}

/// A TLS listener's files and whether it asks for client certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The certificate chain (leaf first) and its private key (KIP-651 PEM).
    pub keystore: PathBuf,
    /// The CAs that sign client certificates.
    pub truststore: Option<PathBuf>,
    pub client_auth: ClientAuth,
}

fn certificates(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    crate::security::pem::certificates(path).map_err(|e| TlsSetupError {
        what: format!("{key} {}", path.display()),
        why: e.to_string(),
    })
}

/// Checks client certificates against the truststore (`requested`: a client may send none).
fn client_verifier(
    settings: &TlsSettings,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsSetupError> {
    let path = settings
        .truststore
        .as_deref()
        .ok_or_else(|| TlsSetupError {
            what: "ssl.truststore.location".into(),
            why: "client certificates need the CAs that sign them".into(),
        })?;
    let fail = |why: String| TlsSetupError {
        what: format!("ssl.truststore.location {}", path.display()),
        why,
    };
    let mut roots = rustls::RootCertStore::empty();
    for ca in certificates(path, "ssl.truststore.location")? {
        roots.add(ca).map_err(|e| fail(e.to_string()))?;
    }
    let builder =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = match settings.client_auth {
        ClientAuth::Requested => builder.allow_unauthenticated(),
        _ => builder,
    };
    builder.build().map_err(|e| fail(e.to_string()))
}

/// The server side of TLS from a PEM keystore (KIP-651's `ssl.keystore.type=PEM`: the
/// certificate chain, leaf first, and its private key in one file), checking client
/// certificates against the truststore when `ssl.client.auth` asks for them. TLS 1.2 and
/// 1.3; no session tickets (nothing is resumed).
pub fn server_config(settings: &TlsSettings) -> Result<Arc<rustls::ServerConfig>, TlsSetupError> {
    let keystore = &settings.keystore;
    let fail = |why: String| TlsSetupError {
        what: format!("ssl.keystore.location {}", keystore.display()),
        why,
    };
    let chain = certificates(keystore, "ssl.keystore.location")?;
    let key = crate::security::pem::private_key(keystore).map_err(|e| fail(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| fail(e.to_string()))?;
    let builder = match settings.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        _ => builder.with_client_cert_verifier(client_verifier(settings, provider)?),
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| fail(e.to_string()))?;
    config.send_tls13_tickets = 0;
    Ok(Arc::new(config))
}

/// How often a TLS listener looks at its keystore file for a new certificate (and
/// whether SIGHUP asked for a reload).
pub const RELOAD_CHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Counts SIGHUPs: each shard's reloader reloads its TLS files when it changes. An atomic
/// counter is what a signal handler may touch; shards only read it, off the request path.
static RELOADS_ASKED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// SIGHUP reloads every TLS listener's keystore and truststore, as a file change does.
pub fn reload_on_sighup() -> std::io::Result<()> {
    let bump = || {
        RELOADS_ASKED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    // SAFETY: the handler only increments an atomic, which is async-signal-safe.
    unsafe { signal_hook::low_level::register(signal_hook::consts::SIGHUP, bump) }.map(|_| ())
}

fn reloads_asked() -> u64 {
    RELOADS_ASKED.load(std::sync::atomic::Ordering::Relaxed)
}

/// A TLS listener's certificate, reloaded when its keystore file changes (a rotated
/// certificate is in force for new connections within `RELOAD_CHECK`; open ones keep
/// theirs). One per listener per shard.
pub struct TlsSource {
    settings: TlsSettings,
    current: RefCell<Arc<rustls::ServerConfig>>,
    modified: Cell<Modified>,
    /// The SIGHUP count last acted on.
    reloads_seen: Cell<u64>,
}

/// When the keystore and the truststore were last changed.
type Modified = (Option<std::time::SystemTime>, Option<std::time::SystemTime>);

fn modified(settings: &TlsSettings) -> Modified {
    let of = |p: &Path| crate::io::os::modified(p).ok();
    (
        of(&settings.keystore),
        settings.truststore.as_deref().and_then(of),
    )
}

impl TlsSource {
    pub fn load(settings: TlsSettings) -> Result<Rc<TlsSource>, TlsSetupError> {
        Ok(Rc::new(TlsSource {
            current: RefCell::new(server_config(&settings)?),
            modified: Cell::new(modified(&settings)),
            reloads_seen: Cell::new(reloads_asked()),
            settings,
        }))
    }

    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        self.current.borrow().clone()
    }

    /// Reloads the keystore and truststore if a file changed or SIGHUP asked; files that
    /// do not load keep the certificate in force (tried again at the next change).
    pub fn refresh(&self) {
        let now = modified(&self.settings);
        let asked = reloads_asked();
        let signalled = self.reloads_seen.replace(asked) != asked;
        if (self.modified.get() == now && !signalled) || now.0.is_none() {
            return;
        }
        self.modified.set(now);
        match server_config(&self.settings) {
            Ok(config) => {
                *self.current.borrow_mut() = config;
                let keystore = self.settings.keystore.display();
                tracing::info!(%keystore, "TLS certificate and truststore reloaded");
            }
            Err(e) => tracing::error!(%e, "TLS certificate not reloaded; the old one stays"),
        }
    }
}

pub type Session = Rc<RefCell<ServerConnection>>;

/// Sends whatever TLS records the session has ready.
async fn flush(session: &Session, writer: &mut TcpStream) -> std::io::Result<()> {
    loop {
        let mut out = Vec::new();
        {
            let mut s = session.borrow_mut();
            while s.wants_write() {
                s.write_tls(&mut out)?;
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        writer.write_all(&out).await?;
    }
}

/// Feeds the session what it takes of `bytes` (it refuses more while 16 KiB of decrypted
/// data wait to be read) and processes it; returns how many bytes it took.
fn absorb(session: &Session, mut bytes: &[u8]) -> std::io::Result<usize> {
    let mut s = session.borrow_mut();
    let offered = bytes.len();
    s.read_tls(&mut bytes)?;
    s.process_new_packets()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok(offered - bytes.len())
}

/// Runs the TLS handshake (the alert of a failed one is sent before the error returns).
pub async fn accept(
    config: Arc<rustls::ServerConfig>,
    reader: &mut TcpStream<Preallocated>,
    writer: &mut TcpStream,
) -> std::io::Result<(Session, Pending)> {
    let mut conn = ServerConnection::new(config).map_err(std::io::Error::other)?;
    // A reply is encrypted whole and sent at once (its size is already budgeted).
    conn.set_buffer_limit(None);
    let session = Rc::new(RefCell::new(conn));
    let mut pending = Pending::default();
    while session.borrow().is_handshaking() {
        flush(&session, writer).await?;
        if pending.is_empty() {
            let n = reader.read(&mut pending.buf).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            pending.filled(n);
        }
        if let Err(e) = pending.feed(&session) {
            let _ = flush(&session, writer).await;
            return Err(e);
        }
    }
    flush(&session, writer).await?;
    assert!(!session.borrow().is_handshaking(), "the handshake is over");
    Ok((session, pending))
}

/// Bytes read from the socket and not yet taken by the session.
pub struct Pending {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for Pending {
    fn default() -> Self {
        Pending {
            buf: vec![0u8; READ_CHUNK],
            start: 0,
            end: 0,
        }
    }
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.start == self.end
    }

    fn filled(&mut self, n: usize) {
        assert!(self.is_empty());
        assert!(n <= self.buf.len());
        (self.start, self.end) = (0, n);
    }

    /// Gives the session what it takes now.
    fn feed(&mut self, session: &Session) -> std::io::Result<()> {
        let taken = absorb(session, &self.buf[self.start..self.end])?;
        self.start += taken;
        assert!(self.start <= self.end);
        Ok(())
    }
}

/// The reading half: plaintext out of what the socket brings.
pub struct TlsReader {
    pub socket: TcpStream<Preallocated>,
    pub session: Session,
    pending: Pending,
}

impl TlsReader {
    /// `pending`: what the handshake read beyond its own records.
    pub fn new(socket: TcpStream<Preallocated>, session: Session, pending: Pending) -> Self {
        TlsReader {
            socket,
            session,
            pending,
        }
    }
}

impl AsyncRead for TlsReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        loop {
            // Decrypted data first: the session takes no more while 16 KiB of it wait.
            match me.session.borrow_mut().reader().read(out) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            if me.pending.is_empty() {
                let n = match Pin::new(&mut me.socket).poll_read(cx, &mut me.pending.buf) {
                    Poll::Ready(Ok(n)) => n,
                    other => return other,
                };
                if n == 0 {
                    return Poll::Ready(Ok(0));
                }
                me.pending.filled(n);
            }
            if let Err(e) = me.pending.feed(&me.session) {
                return Poll::Ready(Err(e));
            }
        }
    }
}

/// Encrypts `parts` (one reply frame) and sends its records in one go.
pub async fn write_parts(
    session: &Session,
    writer: &mut TcpStream,
    parts: &[&[u8]],
) -> std::io::Result<()> {
    {
        let mut s = session.borrow_mut();
        for part in parts {
            s.writer().write_all(part)?;
        }
    }
    flush(session, writer).await
}

/// Sends TLS's close_notify (best effort; the connection is closing).
pub async fn close(session: &Session, writer: &mut TcpStream) {
    session.borrow_mut().send_close_notify();
    let _ = flush(session, writer).await;
}
