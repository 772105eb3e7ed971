//! The Prometheus endpoint (`metrics.listen`, off by default): `GET /metrics` on shard 0
//! gathers every shard's snapshot over the mesh and answers with the text exposition
//! (`metrics::prometheus`). One request per connection, parsed with httparse; the request
//! head is bounded (8 KiB, 5 s) and anything else gets a plain 4xx, so a scraper or a
//! stray client can never hold the shard. Connections are accepted at once, never left in
//! the backlog behind stalled ones (slowloris): each gets its own 5 s deadline, and a peer
//! may hold at most `MAX_PER_PEER` of the `MAX_CONNECTIONS` slots (more are closed at
//! once), so a scraper from elsewhere is always served. With `metrics.security.protocol=SSL`
//! the endpoint is HTTPS (the same rustls settings as the listeners', within the same 5 s).

use std::rc::Rc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::io::deadline::within;
use crate::shard::runtime::Shard;

/// Largest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request head, and to take the answer.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once, and from one peer address; more are closed at once.
const MAX_CONNECTIONS: usize = 1024;
const MAX_PER_PEER: usize = 64;

/// Accepts scrapes until the shard shuts down; under TLS when `tls` is given.
pub async fn serve(
    shard: Rc<Shard>,
    listener: TcpListener,
    tls: Option<Rc<super::tls::TlsSource>>,
) {
    let stop = shard.shutdown_listener();
    let slots = crate::admission::slots::Slots::new(MAX_CONNECTIONS, MAX_PER_PEER);
    loop {
        match super::accept::accept_or_stop(&listener, &stop).await {
            None => break,
            Some(Ok(stream)) => {
                let Ok(slot) = slots.take(stream.peer_addr().ok().map(|a| a.ip())) else {
                    drop(stream);
                    continue;
                };
                let shard = shard.clone();
                let tls = tls.as_ref().map(|source| source.config());
                crate::tasks::spawn(async move {
                    match tls {
                        None => one_request(&shard, stream).await,
                        Some(config) => one_tls_request(&shard, stream, config).await,
                    }
                    drop(slot);
                })
                .detach();
            }
            Some(Err(e)) => {
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                glommio::timer::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The TLS handshake within the request's deadline, then the request over it.
async fn one_tls_request(
    shard: &Rc<Shard>,
    stream: TcpStream,
    config: std::sync::Arc<rustls::ServerConfig>,
) {
    let acceptor = futures_rustls::TlsAcceptor::from(config);
    match within(TIMEOUT, acceptor.accept(stream)).await {
        Ok(tls) => one_request(shard, tls).await,
        Err(e) => tracing::debug!(error = %e, "metrics endpoint: TLS handshake failed"),
    }
}

async fn one_request<S>(shard: &Rc<Shard>, mut stream: S)
where
    S: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin,
{
    let answer = match within(TIMEOUT, read_head(&mut stream)).await {
        Ok(head) => answer(shard, &head).await,
        Err(e) => {
            tracing::debug!(error = %e, "metrics endpoint: no request head");
            return;
        }
    };
    let sent = async {
        stream.write_all(&answer).await?;
        stream.flush().await
    };
    let _ = within(TIMEOUT, sent).await;
    let _ = stream.close().await;
}

/// Reads until the end of the request head (a blank line), at most `MAX_HEAD` bytes.
async fn read_head(
    stream: &mut (impl futures_lite::AsyncRead + Unpin),
) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return Ok(head); // parsed as incomplete: 431
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n.min(MAX_HEAD - head.len())]);
    }
    assert!(head.len() <= MAX_HEAD, "a {}-byte request head", head.len());
    Ok(head)
}

async fn answer(shard: &Rc<Shard>, head: &[u8]) -> Vec<u8> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return response(
                "431 Request Header Fields Too Large",
                "request head too large or cut short\n",
            )
        }
        Err(e) => return response("400 Bad Request", &format!("bad request: {e}\n")),
    }
    if req.method != Some("GET") {
        return response("405 Method Not Allowed", "only GET /metrics\n");
    }
    let path = req.path.unwrap_or("").split('?').next().unwrap_or("");
    if path != "/metrics" {
        return response("404 Not Found", "only GET /metrics\n");
    }
    match shard.cluster_metrics().await {
        Ok(snapshots) => response("200 OK", &crate::metrics::prometheus::render(snapshots)),
        Err(why) => response(
            "503 Service Unavailable",
            &format!("collecting metrics failed: {}: {why}\n", why.code()),
        ),
    }
}

fn response(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
