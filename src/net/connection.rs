//! One client connection. A reader reads frames and starts a handler task per request; a
//! writer awaits those tasks in arrival order and writes the replies, so several requests
//! can be in flight (pipelining) while replies keep request order. The two halves use two
//! file descriptors of the same socket (dup), so they need no lock between them.
//!
//! Bounds: a frame over `max_frame_bytes` is refused before its body is read or allocated
//! (the connection is then closed, since the stream cannot be resynchronised); request and
//! reply bytes in flight count against the connection's and the shard's budgets
//! (`budget.rs`): when one is exhausted the reader stops reading, it never buffers more.
//! Before a connection has authenticated its frames are capped at 512 KiB and take nothing
//! from the budgets, and every step of authentication has the request timeout.
//! Timeouts: a new connection must start its first request within `request.timeout.ms` (a
//! socket that never speaks holds its slot no longer); after that, a connection with no
//! request for `connections.max.idle.ms` is closed; once a frame has started, its rest must
//! arrive within `request.timeout.ms`, and each reply must be taken by the client within it.

use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel;
use glommio::net::TcpStream;

use super::replies::Queued;
use super::stream::{ConnReader, ConnWriter};
use super::turn::Turns;
use super::{FrontEnd, Handshake, HandshakeStep, Peer};
use crate::admission::budget::{Budget, Reservation};
use crate::admission::slots::Presence;
use crate::io::deadline::within;
use crate::protocol::REQUEST_HEADER;
use crate::security::listeners::is_loopback;
use crate::shard::Shard;

/// Requests queued for the writer before the reader waits.
const MAX_QUEUED_REQUESTS: usize = 1024;

fn peer_of(stream: &TcpStream) -> Peer {
    let remote = stream.peer_addr().ok();
    Peer {
        principal: crate::security::ANONYMOUS.into(),
        is_loopback: remote.is_some_and(|a| is_loopback(a.ip())),
        local: stream.local_addr().ok(),
        host: Peer::acl_host(remote),
        remote,
    }
}

/// A second descriptor for the same socket, so replies are written while the next request
/// is read. Made in the accept loop: failing here (EMFILE) is descriptor exhaustion, and the
/// loop backs off instead of accepting and dropping every queued connection.
pub fn writer_half(stream: &TcpStream) -> std::io::Result<TcpStream> {
    // SAFETY: dup returns a new descriptor we own; the TcpStream takes ownership of it.
    let write_fd = unsafe { libc::dup(stream.as_raw_fd()) };
    if write_fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: write_fd is a valid descriptor (checked above) that nothing else owns.
    Ok(unsafe { TcpStream::from_raw_fd(write_fd) })
}

/// Serves one connection: `writer` is `stream`'s [`writer_half`].
pub async fn serve(
    shard: Rc<Shard>,
    stream: TcpStream,
    writer: TcpStream,
    front: Rc<dyn FrontEnd>,
    presence: Rc<Presence>,
) {
    let _ = stream.set_nodelay(true);
    let mut peer = peer_of(&stream);
    let request_timeout = Duration::from_millis(shard.config().request_timeout_ms);
    let budget = Budget::new(
        shard.config().max_inflight_bytes_per_connection,
        shard.config().max_inflight_large_requests_per_connection,
        shard.inflight().clone(),
    );
    let opened = match open(&shard, stream, writer, &*front).await {
        Ok(opened) => opened,
        Err(why) => {
            return tracing::info!(shard = shard.id(), remote = ?peer.remote, %why, "connection refused")
        }
    };
    if let Some(principal) = opened.principal {
        peer.principal = principal.into();
    }
    let (tx, rx) = local_channel::new_bounded(MAX_QUEUED_REQUESTS);
    let writer_task = crate::tasks::spawn(super::replies::write_replies(
        opened.writer,
        rx,
        request_timeout,
        front.label(),
        presence.clone(),
    ));
    // KIP-368: a SASL session ends; the client re-authenticates before it.
    let lifetime = front.session_lifetime().filter(|_| !opened.first);
    let conn = Served {
        shard: &shard,
        front: &*front,
        reader: opened.reader,
        budget,
        peer,
        tx,
        lifetime,
        session_ends: lifetime.map(|l| Instant::now() + l),
        turns: Turns::default(),
        presence,
    };
    conn.run(opened.first).await;
    writer_task.await;
}

/// A connection being served: its reader, and the queue of replies to its writer.
struct Served<'a> {
    shard: &'a Rc<Shard>,
    front: &'a dyn FrontEnd,
    reader: ConnReader,
    budget: Budget,
    peer: Peer,
    tx: local_channel::LocalSender<Queued>,
    lifetime: Option<Duration>,
    session_ends: Option<Instant>,
    /// Each request's place in the order its work reaches the engine.
    turns: Turns,
    /// The connection as its listener's slots see it (idle or not; told to close).
    presence: Rc<Presence>,
}

impl Served<'_> {
    /// Reads and dispatches requests until the connection ends (dropping the queue ends
    /// the writer once it has written what is queued).
    async fn run(mut self, mut first: bool) {
        let shutdown = self.shard.shutdown_listener();
        loop {
            let (shard, front, budget) = (self.shard, self.front, &self.budget);
            let reader = &mut self.reader;
            let reading = Reading::Request { budget, first };
            let presence = &self.presence;
            presence.idle();
            let next = futures_lite::future::or(
                async { read_frame(shard, reader, reading, front).await },
                async {
                    futures_lite::future::or(
                        async {
                            shutdown.recv().await;
                            Next::Stop("shutting down".into())
                        },
                        async {
                            presence.evicted().await;
                            Next::Stop(
                                "the longest idle on a full listener: closed for a new connection"
                                    .into(),
                            )
                        },
                    )
                    .await
                },
            )
            .await;
            self.presence.busy();
            first = false;
            if !self.take(next).await {
                break;
            }
        }
    }

    /// Acts on what was read; false once the connection is to close.
    async fn take(&mut self, next: Next) -> bool {
        let (shard, remote) = (self.shard, self.peer.remote);
        match next {
            Next::Frame(body, ..)
                if self.lifetime.is_some() && self.front.starts_reauthentication(&body) =>
            {
                let again = Reauthentication {
                    first: body,
                    principal: &self.peer.principal,
                };
                let (reader, budget) = (&mut self.reader, &self.budget);
                match reauthenticate(shard, reader, &self.tx, budget, self.front, again).await {
                    Ok(()) => self.session_ends = self.lifetime.map(|l| Instant::now() + l),
                    Err(why) => {
                        tracing::info!(shard = shard.id(), ?remote, %why, "re-authentication refused");
                        return false;
                    }
                }
                true
            }
            Next::Frame(..) if self.session_ends.is_some_and(|t| Instant::now() >= t) => {
                tracing::info!(shard = shard.id(), ?remote, "SASL session expired; closing");
                false
            }
            Next::Frame(body, reservation, started, frame_read) => {
                let bytes_in = body.len() + 4;
                self.presence.request_started();
                let task = crate::tasks::spawn(self.front.handle(
                    shard.clone(),
                    body,
                    self.peer.clone(),
                    self.budget.clone(),
                    self.turns.next(),
                ));
                let queued = Queued {
                    task,
                    request_budget: reservation,
                    started,
                    frame_read,
                    bytes_in,
                    counted: true,
                };
                self.tx.send(queued).await.is_ok()
            }
            Next::Refuse(frame) => {
                let _ = self.tx.send(Queued::ready(frame)).await;
                false
            }
            Next::Stop(why) => {
                tracing::debug!(shard = shard.id(), %why, "closing connection");
                false
            }
        }
    }
}

/// A connection ready for requests (see [`open`]).
struct Opened {
    reader: ConnReader,
    writer: ConnWriter,
    /// Whether the next frame is the connection's first (no handshake ran).
    first: bool,
    /// Who it authenticated as (SASL, or a client certificate); none: anonymous.
    principal: Option<String>,
}

/// Why a connection was closed before its first request was served.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// The connection's halves, ready for requests: under TLS after its handshake (TLS
/// listeners), authenticated (SASL listeners); whether the next frame is the first; and
/// the principal it authenticated as (none: anonymous).
async fn open(
    shard: &Shard,
    stream: TcpStream,
    writer: TcpStream,
    front: &dyn FrontEnd,
) -> Result<Opened, Refused> {
    // Buffered: a small request's size prefix and body usually arrive in one recv.
    let (mut reader, mut writer, certified) = match front.tls() {
        None => (
            ConnReader::Plain(stream.buffered()),
            ConnWriter::Plain(writer),
            None,
        ),
        Some(config) => start_tls(config, stream.buffered(), writer, front).await?,
    };
    let Some(handshake) = front.handshake() else {
        return Ok(Opened {
            reader,
            writer,
            first: true,
            principal: certified,
        });
    };
    let principal = authenticate(shard, &mut reader, &mut writer, front, handshake).await?;
    tracing::debug!(shard = shard.id(), %principal, "authenticated");
    Ok(Opened {
        reader,
        writer,
        first: false,
        principal: Some(principal),
    })
}

/// The TLS handshake, within the request timeout; then the connection's halves under it,
/// and the principal of the client's certificate if it sent one.
async fn start_tls(
    config: std::sync::Arc<rustls::ServerConfig>,
    mut reader: TcpStream<glommio::net::Preallocated>,
    mut writer: TcpStream,
    front: &dyn FrontEnd,
) -> Result<(ConnReader, ConnWriter, Option<String>), Refused> {
    // The same bound as a first request's (a silent client is dropped as soon).
    let limit = Duration::from_secs(30);
    let (session, pending) = within(limit, super::tls::accept(config, &mut reader, &mut writer))
        .await
        .map_err(|e| Refused(format!("TLS handshake: {e}")))?;
    let leaf = session
        .borrow()
        .peer_certificates()
        .and_then(|c| c.first().cloned());
    let principal = match (leaf, front.principal_mapper()) {
        (Some(leaf), Some(mapper)) => {
            let principal = mapper
                .principal(&leaf)
                .map_err(|e| Refused(e.to_string()))?;
            Some(principal)
        }
        _ => None,
    };
    let reader = ConnReader::Tls(super::tls::TlsReader::new(reader, session.clone(), pending));
    Ok((reader, ConnWriter::Tls(writer, session), principal))
}

/// Frames a handshake may take (SCRAM needs ApiVersions, SaslHandshake and two tokens).
const MAX_HANDSHAKE_FRAMES: usize = 8;
/// Kafka's connection.failed.authentication.delay.ms: a refused login waits this long before
/// the close, so password guessing is slowed.
const FAILED_AUTHENTICATION_DELAY: Duration = Duration::from_millis(100);

/// Runs the front end's handshake to its end, one frame at a time and within the request
/// timeout: the principal, or why the connection is closed.
async fn authenticate(
    shard: &Shard,
    reader: &mut ConnReader,
    writer: &mut ConnWriter,
    front: &dyn FrontEnd,
    mut handshake: Box<dyn Handshake>,
) -> Result<String, Refused> {
    let deadline = Instant::now() + Duration::from_millis(shard.config().request_timeout_ms);
    let refused = |why: String| Refused(format!("authentication: {why}"));
    for _ in 0..MAX_HANDSHAKE_FRAMES {
        // Every step, not only the first, ends within the request timeout.
        let left = deadline.saturating_duration_since(Instant::now());
        let read = within(left, async {
            Ok(read_frame(shard, reader, Reading::Handshake, front).await)
        });
        let body = match read.await {
            Ok(Next::Frame(body, ..)) => body,
            Ok(Next::Refuse(_)) => return Err(refused("a frame over the size limit".into())),
            Ok(Next::Stop(why)) => return Err(refused(why)),
            Err(_) => return Err(refused("longer than the request timeout".into())),
        };
        let (reply, outcome) = split_step(handshake.step(body));
        if let Some(reply) = reply {
            let left = deadline.saturating_duration_since(Instant::now());
            within(left, writer.write_all(&reply))
                .await
                .map_err(|e| refused(format!("writing a handshake reply: {e}")))?;
        }
        match outcome {
            None if Instant::now() < deadline => continue,
            None => return Err(refused("longer than the request timeout".into())),
            Some(Ending::Authenticated(principal)) => return Ok(principal),
            Some(Ending::Refused(why)) => {
                glommio::timer::sleep(FAILED_AUTHENTICATION_DELAY).await;
                return Err(refused(why));
            }
        }
    }
    Err(refused(format!("more than {MAX_HANDSHAKE_FRAMES} frames")))
}

/// How a handshake ends: as a principal, or refused (why).
enum Ending {
    Authenticated(String),
    Refused(String),
}

/// A handshake step's reply (if any) and its ending (none yet: the exchange goes on).
fn split_step(step: HandshakeStep) -> (Option<Vec<u8>>, Option<Ending>) {
    match step {
        HandshakeStep::Continue(reply) => (Some(reply), None),
        HandshakeStep::Authenticated(reply, principal) => {
            (reply, Some(Ending::Authenticated(principal)))
        }
        HandshakeStep::Fail(reply, why) => (reply, Some(Ending::Refused(why))),
    }
}

/// A re-authentication's first frame and the principal it must prove again.
struct Reauthentication<'a> {
    first: Bytes,
    principal: &'a str,
}

/// KIP-368: a new SASL exchange on the live connection (its replies queued after the
/// replies of earlier requests), which must end as the same principal.
async fn reauthenticate(
    shard: &Shard,
    reader: &mut ConnReader,
    tx: &local_channel::LocalSender<Queued>,
    budget: &Budget,
    front: &dyn FrontEnd,
    again: Reauthentication<'_>,
) -> Result<(), Refused> {
    let mut handshake = front
        .handshake()
        .ok_or_else(|| Refused("no SASL here".into()))?;
    let mut body = again.first;
    for _ in 0..MAX_HANDSHAKE_FRAMES {
        let (mut reply, mut outcome) = split_step(handshake.step(body));
        if let Some(Ending::Authenticated(p)) = &outcome {
            if p != again.principal {
                let why = format!(
                    "Cannot change principals during re-authentication from {} to {p}",
                    again.principal
                );
                reply = handshake.refusal(&why);
                outcome = Some(Ending::Refused(why));
            }
        }
        if let Some(reply) = reply {
            tx.send(Queued::ready(reply))
                .await
                .map_err(|_| Refused("closing".into()))?;
        }
        match outcome {
            Some(Ending::Authenticated(_)) => return Ok(()),
            Some(Ending::Refused(why)) => {
                glommio::timer::sleep(FAILED_AUTHENTICATION_DELAY).await;
                return Err(Refused(why));
            }
            None => {}
        }
        let reading = Reading::Request {
            budget,
            first: false,
        };
        body = match read_frame(shard, reader, reading, front).await {
            Next::Frame(body, ..) => body,
            Next::Refuse(_) => return Err(Refused("a frame over the size limit".into())),
            Next::Stop(why) => return Err(Refused(why)),
        };
    }
    Err(Refused(format!(
        "re-authentication took more than {MAX_HANDSHAKE_FRAMES} frames"
    )))
}

enum Next {
    /// A frame, its budget, when its size prefix had arrived, and how long its body took.
    Frame(Bytes, Reservation, Instant, Duration),
    /// An error frame to send before closing (the stream cannot be resynchronised).
    Refuse(Vec<u8>),
    Stop(String),
}

/// Kafka's cap on a frame from a peer that has not authenticated yet
/// (`SaslServerAuthenticator`'s 512 KiB): a SASL token is far smaller.
pub const MAX_HANDSHAKE_FRAME_BYTES: usize = 512 << 10;

/// What a frame is read for: a request of an open connection (its budgets, and whether it
/// is the connection's first), or a step of authentication (capped at
/// [`MAX_HANDSHAKE_FRAME_BYTES`], and taking nothing from the shared budgets: a peer that
/// has not authenticated holds no resource other clients wait for).
#[derive(Clone, Copy)]
enum Reading<'a> {
    Request { budget: &'a Budget, first: bool },
    Handshake,
}

impl Reading<'_> {
    fn max_frame(&self, cfg: &crate::settings::ServerConfig) -> usize {
        match self {
            Reading::Request { .. } => cfg.max_frame_bytes,
            Reading::Handshake => cfg.max_frame_bytes.min(MAX_HANDSHAKE_FRAME_BYTES),
        }
    }

    /// How long the frame's first byte may take.
    fn idle(&self, cfg: &crate::settings::ServerConfig) -> Duration {
        let request = Duration::from_millis(cfg.request_timeout_ms);
        match self {
            Reading::Request { first: false, .. } => {
                Duration::from_millis(cfg.connections_max_idle_ms)
            }
            _ => request.min(Duration::from_millis(cfg.connections_max_idle_ms)),
        }
    }
}

/// Reads one request frame: the first byte may take up to the idle timeout (the request
/// timeout for a connection's first request and for authentication), the rest of the frame
/// must follow within the request timeout. The body is read only once the budgets grant its
/// size.
async fn read_frame(
    shard: &Shard,
    reader: &mut ConnReader,
    reading: Reading<'_>,
    front: &dyn FrontEnd,
) -> Next {
    let cfg = shard.config();
    let request = Duration::from_millis(cfg.request_timeout_ms);
    let (idle, max_frame) = (reading.idle(cfg), reading.max_frame(cfg));
    let mut size_buf = [0u8; 4];
    if let Err(e) = within(idle, reader.read_exact(&mut size_buf[..1])).await {
        return Next::Stop(format!("waiting for a request: {e}"));
    }
    if let Err(e) = within(request, reader.read_exact(&mut size_buf[1..])).await {
        return Next::Stop(format!("reading a frame size: {e}"));
    }
    let size = i32::from_be_bytes(size_buf);
    if size < REQUEST_HEADER as i32 || size as usize > max_frame {
        let reply = match front.answers_bad_frames() {
            true => refusal(reader, size, max_frame, front).await,
            false => None,
        };
        return match reply {
            Some(frame) => Next::Refuse(frame),
            None => Next::Stop(format!(
                "{} frame of {size} bytes (limit {max_frame})",
                front.label(),
            )),
        };
    }
    let size = size as usize;
    // Checked above: what the client may make the server hold is bounded before any read.
    assert!((REQUEST_HEADER..=max_frame).contains(&size));
    let started = Instant::now();
    // Waiting for budget is backpressure, not a stalled client: no timeout while waiting.
    let reservation = match reading {
        Reading::Request { budget, .. } => match budget.reserve_request(size).await {
            Some(reservation) => reservation,
            None => return Next::Stop("budget closed".into()),
        },
        Reading::Handshake => Reservation::default(),
    };
    // Reused memory: the read overwrites every byte, so none is zeroed first.
    let mut body = super::frame_buf::FrameBuf::new(size);
    let body_start = Instant::now();
    if let Err(e) = within(request, reader.read_body(body.as_mut_slice())).await {
        return Next::Stop(format!("reading a {size}-byte frame: {e}"));
    }
    assert_eq!(body.as_ref().len(), size);
    Next::Frame(body.freeze(), reservation, started, body_start.elapsed())
}

/// The front end's reply to a frame size that cannot be accepted; only the header is read
/// (to echo the correlation id), never the body.
async fn refusal(
    reader: &mut ConnReader,
    size: i32,
    max_frame: usize,
    front: &dyn FrontEnd,
) -> Option<Vec<u8>> {
    let mut header = [0u8; REQUEST_HEADER];
    let read_header = within(Duration::from_secs(1), reader.read_exact(&mut header));
    let cid = if size >= REQUEST_HEADER as i32 && read_header.await.is_ok() {
        i32::from_be_bytes(header[4..8].try_into().expect("4 bytes"))
    } else {
        -1
    };
    front.bad_frame_reply(size, max_frame, cid)
}

/// Refuses a connection over the listener's limits: the front end says what the client is
/// told (a native client gets an error frame; a Kafka client is closed, as Kafka does).
pub async fn refuse_connection(mut stream: TcpStream, front: Rc<dyn FrontEnd>, why: String) {
    if let Some(frame) = front.refusal(why) {
        let _ = within(Duration::from_secs(1), stream.write_all(&frame)).await;
    }
    let _ = stream.close().await;
}
