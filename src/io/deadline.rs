//! Bounding an async I/O step in time. glommio's own socket timeouts
//! (`set_read_timeout`) crashed the process here when a connection went away during
//! start-up, so every timeout is a race between the operation and a timer instead.

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
