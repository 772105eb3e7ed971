//! One client connection. A reader reads frames and starts a handler task per request; a
//! writer awaits those tasks in arrival order and writes the replies, so several requests
//! can be in flight (pipelining) while replies keep request order. The two halves use two
//! file descriptors of the same socket (dup), so they need no lock between them.
//!
//! Bounds: a frame over `max_frame_bytes` is refused before its body is read or allocated
//! (the connection is then closed, since the stream cannot be resynchronised); request and
//! reply bytes in flight count against the connection's and the shard's budgets
//! (`budget.rs`): when one is exhausted the reader stops reading, it never buffers more.
//! Timeouts: a new connection must start its first request within `request.timeout.ms` (a
//! socket that never speaks holds its slot no longer); after that, a connection with no
//! request for `connections.max.idle.ms` is closed; once a frame has started, its rest must
//! arrive within `request.timeout.ms`, and each reply must be taken by the client within it.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel::{self, LocalReceiver};
use glommio::net::TcpStream;

use super::budget::{Budget, Reservation};
use super::handlers::{handle_frame, Peer, Reply};
use super::shard::Shard;
use crate::io::deadline::within;
use crate::metrics::{self, Stage};
use crate::protocol::{ErrorCode, Response, REQUEST_HEADER};

/// Requests queued for the writer before the reader waits.
const MAX_QUEUED_REQUESTS: usize = 1024;

/// A request being handled: its reply task, the budget its frame holds, and what the
/// metrics need (when its frame started arriving, its size).
struct Queued {
    task: glommio::Task<Reply>,
    request_budget: Reservation,
    started: Instant,
    /// How long the frame's body took to arrive (a stage, once the API is known).
    frame_read: Duration,
    bytes_in: usize,
}

/// Whether an address is loopback, counting IPv4 loopback seen through an IPv6 socket
/// (`::ffff:127.0.0.1`, what a `[::]` listener reports for an IPv4 peer).
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map_or(v6.is_loopback(), |v4| v4.is_loopback()),
    }
}

fn peer_of(stream: &TcpStream) -> Peer {
    let remote = stream.peer_addr().ok();
    Peer {
        is_loopback: remote.is_some_and(|a| is_loopback(a.ip())),
        local: stream.local_addr().ok(),
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

/// The protocol a listener speaks. Both share this file's framing (int32 size prefix, an
/// 8-byte minimum header), pipelining, budgets and timeouts; they differ in how a frame is
/// handled and in what a bad frame gets (the native protocol answers with an error frame,
/// Kafka closes the connection, as a Kafka broker does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Native,
    Kafka,
}

impl Wire {
    /// The `wire` label of request metrics.
    pub fn label(self) -> &'static str {
        match self {
            Wire::Native => "native",
            Wire::Kafka => "kafka",
        }
    }
}

/// Serves one connection: `writer` is `stream`'s [`writer_half`].
pub async fn serve(shard: Rc<Shard>, stream: TcpStream, writer: TcpStream, wire: Wire) {
    let _ = stream.set_nodelay(true);
    let peer = peer_of(&stream);
    let request_timeout = Duration::from_millis(shard.config.request_timeout_ms);
    let budget = Budget::new(
        shard.config.max_inflight_bytes_per_connection,
        shard.inflight.clone(),
    );
    let (tx, rx) = local_channel::new_bounded(MAX_QUEUED_REQUESTS);
    let writer_task = crate::tasks::spawn(write_replies(writer, rx, request_timeout, wire));
    // Buffered: a small request's size prefix and body usually arrive in one recv.
    let mut reader = stream.buffered();
    let shutdown = shard.shutdown_listener();
    let mut first = true;
    loop {
        let next = futures_lite::future::or(
            async { read_frame(&shard, &mut reader, &budget, wire, first).await },
            async {
                shutdown.recv().await;
                Next::Stop("shutting down".into())
            },
        )
        .await;
        first = false;
        match next {
            Next::Frame(body, reservation, started, frame_read) => {
                let bytes_in = body.len() + 4;
                let task = match wire {
                    Wire::Native => {
                        crate::tasks::spawn(handle_frame(shard.clone(), body, peer, budget.clone()))
                    }
                    Wire::Kafka => crate::tasks::spawn(crate::kafka::handle_frame(
                        shard.clone(),
                        body,
                        peer,
                        budget.clone(),
                    )),
                };
                let queued = Queued {
                    task,
                    request_budget: reservation,
                    started,
                    frame_read,
                    bytes_in,
                };
                if tx.send(queued).await.is_err() {
                    break;
                }
            }
            Next::Refuse(frame) => {
                let queued = Queued {
                    task: crate::tasks::spawn(async move { Reply::frame(frame) }),
                    request_budget: Reservation::default(),
                    started: Instant::now(),
                    frame_read: Duration::ZERO,
                    bytes_in: 0,
                };
                let _ = tx.send(queued).await;
                break;
            }
            Next::Stop(why) => {
                tracing::debug!(shard = shard.id, %why, "closing connection");
                break;
            }
        }
    }
    drop(tx);
    writer_task.await;
}

/// Writes replies in request order. A reply the client does not take within the write
/// timeout closes the connection (the reader then fails too), releasing its budget.
async fn write_replies(
    mut writer: TcpStream,
    rx: LocalReceiver<Queued>,
    limit: Duration,
    wire: Wire,
) {
    while let Some(queued) = rx.recv().await {
        let Reply {
            frame,
            reservation: reply_budget,
            close,
            api,
            ok,
            timed,
        } = queued.task.await;
        let bytes_out = frame.as_ref().map_or(0, |f| f.len());
        if timed {
            metrics::record(Stage::FrameRead, queued.frame_read);
        }
        if let Some(frame) = frame {
            let write_start = Instant::now();
            if let Err(e) = within(limit, super::send::write_frame(&mut writer, &frame)).await {
                tracing::debug!(error = %e, "writing a reply failed; closing the connection");
                let _ = writer.shutdown(std::net::Shutdown::Both).await;
                break;
            }
            if timed {
                metrics::record_since(Stage::SocketWrite, write_start);
            }
        }
        metrics::record_request(metrics::RequestDone {
            wire: wire.label(),
            api,
            ok,
            bytes_in: queued.bytes_in,
            bytes_out,
            took: queued.started.elapsed(),
        });
        if close {
            // The request could not be parsed: the stream cannot be trusted any further.
            let _ = writer.shutdown(std::net::Shutdown::Both).await;
            break;
        }
        // The bytes are on their way: release them.
        drop((queued.request_budget, reply_budget));
    }
}

enum Next {
    /// A frame, its budget, when its size prefix had arrived, and how long its body took.
    Frame(Bytes, Reservation, Instant, Duration),
    /// An error frame to send before closing (the stream cannot be resynchronised).
    Refuse(Vec<u8>),
    Stop(String),
}

/// Reads one request frame: the first byte may take up to the idle timeout (the request
/// timeout for a connection's first request), the rest of the frame must follow within the
/// request timeout. The body is read only once the budgets grant its size.
async fn read_frame(
    shard: &Shard,
    reader: &mut TcpStream<glommio::net::Preallocated>,
    budget: &Budget,
    wire: Wire,
    first: bool,
) -> Next {
    let cfg = &shard.config;
    let request = Duration::from_millis(cfg.request_timeout_ms);
    let idle = match first {
        true => request.min(Duration::from_millis(cfg.connections_max_idle_ms)),
        false => Duration::from_millis(cfg.connections_max_idle_ms),
    };
    let mut size_buf = [0u8; 4];
    if let Err(e) = within(idle, reader.read_exact(&mut size_buf[..1])).await {
        return Next::Stop(format!("waiting for a request: {e}"));
    }
    if let Err(e) = within(request, reader.read_exact(&mut size_buf[1..])).await {
        return Next::Stop(format!("reading a frame size: {e}"));
    }
    let size = i32::from_be_bytes(size_buf);
    if size < REQUEST_HEADER as i32 || size as usize > cfg.max_frame_bytes {
        if wire == Wire::Kafka {
            return Next::Stop(format!(
                "Kafka frame of {size} bytes (limit {})",
                cfg.max_frame_bytes
            ));
        }
        return Next::Refuse(refusal(reader, size, cfg.max_frame_bytes).await);
    }
    let size = size as usize;
    let started = Instant::now();
    // Waiting for budget is backpressure, not a stalled client: no timeout while waiting.
    let Some(reservation) = budget.reserve_request(size).await else {
        return Next::Stop("budget closed".into());
    };
    let mut body = vec![0u8; size];
    let body_start = Instant::now();
    if let Err(e) = within(request, reader.read_exact(&mut body)).await {
        return Next::Stop(format!("reading a {size}-byte frame: {e}"));
    }
    Next::Frame(
        Bytes::from(body),
        reservation,
        started,
        body_start.elapsed(),
    )
}

/// The error reply for a frame size that cannot be accepted; only the header is read (to
/// echo the correlation id), never the body.
async fn refusal(
    reader: &mut TcpStream<glommio::net::Preallocated>,
    size: i32,
    max_frame: usize,
) -> Vec<u8> {
    let mut header = [0u8; REQUEST_HEADER];
    let read_header = within(Duration::from_secs(1), reader.read_exact(&mut header));
    let cid = if size >= REQUEST_HEADER as i32 && read_header.await.is_ok() {
        i32::from_be_bytes(header[4..8].try_into().expect("4 bytes"))
    } else {
        -1
    };
    let (code, msg) = if size < REQUEST_HEADER as i32 {
        (
            ErrorCode::MalformedRequest,
            format!("frame size {size} is below the 8-byte request header"),
        )
    } else {
        (
            ErrorCode::FrameTooLarge,
            format!("frame of {size} bytes exceeds the limit of {max_frame} bytes"),
        )
    };
    Response {
        correlation_id: cid,
        result: Err((code, msg)),
    }
    .encode_frame()
}

/// Refuses a connection over the listener's limits: a native client is told why (an error
/// frame, not a bare reset); a Kafka client is closed, as a Kafka broker does.
pub async fn refuse_connection(mut stream: TcpStream, wire: Wire, why: String) {
    if wire == Wire::Native {
        let frame = Response {
            correlation_id: -1,
            result: Err((ErrorCode::TooManyConnections, why)),
        }
        .encode_frame();
        let _ = within(Duration::from_secs(1), stream.write_all(&frame)).await;
    }
    let _ = stream.close().await;
}

/// The host to advertise to a client: the configured one, else the address it reached us on.
pub fn advertised_host(configured: &str, listen: SocketAddr, local: Option<SocketAddr>) -> String {
    if !configured.is_empty() {
        return configured.to_string();
    }
    match local {
        Some(a) if listen.ip().is_unspecified() => a.ip().to_canonical().to_string(),
        _ => listen.ip().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_loopback_through_an_ipv6_socket_is_loopback() {
        for (ip, want) in [
            ("127.0.0.1", true),
            ("::1", true),
            ("::ffff:127.0.0.1", true),
            ("::ffff:10.0.0.1", false),
            ("10.0.0.1", false),
        ] {
            assert_eq!(is_loopback(ip.parse().unwrap()), want, "{ip}");
        }
    }

    #[test]
    fn wildcard_listens_advertise_the_reached_address() {
        let wildcard: SocketAddr = "0.0.0.0:7411".parse().unwrap();
        let reached = Some("192.168.1.5:7411".parse().unwrap());
        assert_eq!(advertised_host("", wildcard, reached), "192.168.1.5");
        assert_eq!(
            advertised_host("kafka.example", wildcard, reached),
            "kafka.example"
        );
        let fixed: SocketAddr = "127.0.0.1:7411".parse().unwrap();
        assert_eq!(advertised_host("", fixed, reached), "127.0.0.1");
    }
}
