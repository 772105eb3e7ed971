//! One client connection. A reader reads frames and starts a handler task per request; a
//! writer awaits those tasks in arrival order and writes the replies, so several requests
//! can be in flight (pipelining) while replies keep request order. The two halves use two
//! file descriptors of the same socket (dup), so they need no lock between them.
//!
//! Bounds: a frame over `max_frame_bytes` is refused before its body is read or allocated
//! (the connection is then closed, since the stream cannot be resynchronised), and request
//! bytes in flight are limited per connection by a semaphore: when it is exhausted the
//! reader stops reading (TCP backpressure), it never buffers more.

use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::channels::local_channel;
use glommio::net::TcpStream;
use glommio::sync::Semaphore;

use super::handlers::handle_frame;
use super::shard::Shard;
use crate::protocol::{ErrorCode, Response, REQUEST_HEADER};

/// Requests queued for the writer before the reader waits.
const MAX_QUEUED_REQUESTS: usize = 1024;

enum Next {
    Frame,
    Stop,
}

pub async fn serve(shard: Rc<Shard>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let peer_is_loopback = stream
        .peer_addr()
        .map(|a| a.ip().is_loopback())
        .unwrap_or(false);
    // SAFETY: dup returns a new descriptor we own; the TcpStream takes ownership of it.
    let write_fd = unsafe { libc::dup(stream.as_raw_fd()) };
    if write_fd < 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "dup failed; dropping connection");
        return;
    }
    let mut writer = unsafe { TcpStream::from_raw_fd(write_fd) };
    // Buffered: a small request's size prefix and body usually arrive in one recv.
    let mut reader = stream.buffered();
    let limit = Rc::new(Semaphore::new(
        shard.config.max_inflight_bytes_per_connection as u64,
    ));
    let (tx, rx) = local_channel::new_bounded(MAX_QUEUED_REQUESTS);

    let writer_task = glommio::spawn_local(async move {
        while let Some((task, permit)) = rx.recv().await {
            let task: glommio::Task<Option<Vec<u8>>> = task;
            if let Some(frame) = task.await {
                if writer.write_all(&frame).await.is_err() {
                    break;
                }
            }
            drop::<Option<glommio::sync::StaticPermit>>(permit);
        }
    });

    let shutdown = shard.shutdown_listener();
    let max_frame = shard.config.max_frame_bytes;
    loop {
        let mut size_buf = [0u8; 4];
        let next = futures_lite::future::or(
            async {
                match reader.read_exact(&mut size_buf).await {
                    Ok(()) => Next::Frame,
                    Err(_) => Next::Stop,
                }
            },
            async {
                shutdown.recv().await;
                Next::Stop
            },
        )
        .await;
        if let Next::Stop = next {
            break;
        }
        let size = i32::from_be_bytes(size_buf);
        if size < REQUEST_HEADER as i32 || size as usize > max_frame {
            // Read only the header to echo its correlation id; never the body.
            let mut header = [0u8; REQUEST_HEADER];
            let cid =
                if size >= REQUEST_HEADER as i32 && reader.read_exact(&mut header).await.is_ok() {
                    i32::from_be_bytes(header[4..8].try_into().unwrap())
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
            tracing::debug!(%code, %msg, "closing connection");
            let frame = Response {
                correlation_id: cid,
                result: Err((code, msg)),
            }
            .encode_frame();
            let task = glommio::spawn_local(async move { Some(frame) });
            let _ = tx.send((task, None)).await;
            break;
        }
        let size = size as usize;
        let Ok(permit) = limit.acquire_static_permit(size as u64).await else {
            break;
        };
        let mut body = vec![0u8; size];
        if reader.read_exact(&mut body).await.is_err() {
            break;
        }
        let task = glommio::spawn_local(handle_frame(
            shard.clone(),
            Bytes::from(body),
            peer_is_loopback,
        ));
        if tx.send((task, Some(permit))).await.is_err() {
            break;
        }
    }
    drop(tx);
    writer_task.await;
}
