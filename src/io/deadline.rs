//! Bounding an async step in time: a race between the operation and a timer. One way for
//! every timeout (connection idle and request timeouts, reply writes, client connects and
//! requests). glommio's own timeouts (`set_read_timeout`, `TcpStream::connect_timeout`)
//! submit linked io_uring timeouts; with them, processes here died of SIGSEGV (a server at
//! start-up under connection probes, a test client in CI), and the crashes stopped when
//! they were replaced by this.

use std::future::Future;
use std::time::Duration;

/// Runs `op`; if it has not finished within `limit`, drops it and returns `TimedOut`.
pub async fn within<T>(
    limit: Duration,
    op: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    futures_lite::future::or(op, async {
        glommio::timer::sleep(limit).await;
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no progress within {} ms", limit.as_millis()),
        ))
    })
    .await
}
