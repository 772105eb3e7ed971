//! Bounding an async step in time: a race between the operation and a timer. One way for
//! every timeout (connection idle and request timeouts, reply writes, client connects and
//! requests). glommio's own timeouts (`set_read_timeout`, `TcpStream::connect_timeout`)
//! submit linked io_uring timeouts; with them, processes here died of SIGSEGV (a server at
//! start-up under connection probes, a test client in CI), and the crashes stopped when
//! they were replaced by this.

use std::future::Future;
use std::time::Duration;

/// Runs `op` for at most `limit`: its output, or `None` (and `op` dropped) if the time ran
/// out first.
pub async fn before<T>(limit: Duration, op: impl Future<Output = T>) -> Option<T> {
    futures_lite::future::or(async { Some(op.await) }, async {
        glommio::timer::sleep(limit).await;
        None
    })
    .await
}

/// [`before`] for I/O: running out of time is a `TimedOut` error.
pub async fn within<T>(
    limit: Duration,
    op: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    before(limit, op).await.unwrap_or_else(|| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no progress within {} ms", limit.as_millis()),
        ))
    })
}
