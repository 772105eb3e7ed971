//! A connection's two halves, plain or under TLS: the reader the framing reads from and
//! the writer replies go out through. Plain replies keep the vectored zero-copy send;
//! TLS ones are encrypted by the session (`tls.rs`).

use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWriteExt};
use glommio::net::{Preallocated, TcpStream};

use super::tls::{self, Session, TlsReader};
use crate::protocol::frame::Frame;

#[non_exhaustive]
pub enum ConnReader {
    Plain(TcpStream<Preallocated>),
    Tls(TlsReader),
}

impl AsyncRead for ConnReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            ConnReader::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ConnReader::Tls(t) => Pin::new(t).poll_read(cx, buf),
        }
    }
}

/// Frame bodies from this size on are read with the receive low-water mark set.
const LOW_WATER_FROM: usize = 64 << 10;

impl ConnReader {
    /// Reads exactly `buf.len()` bytes. On a plain socket a large body is read with the
    /// socket's receive low-water mark (SO_RCVLOWAT) at what is still missing, so the shard
    /// is woken once the rest has arrived (or the socket's buffer is full), not for every
    /// segment the network hands over. The mark never exceeds what the frame still lacks,
    /// so a client that sends nothing after the frame never leaves it waiting.
    pub async fn read_body(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        let fd = match self {
            ConnReader::Plain(s) if buf.len() >= LOW_WATER_FROM => s.as_raw_fd(),
            _ => return futures_lite::AsyncReadExt::read_exact(self, buf).await,
        };
        let mut filled = 0;
        let read = async {
            while filled < buf.len() {
                set_receive_low_water(fd, buf.len() - filled);
                match futures_lite::AsyncReadExt::read(self, &mut buf[filled..]).await? {
                    0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                    n => {
                        filled += n;
                        // The read was given only what the frame still lacks.
                        assert!(filled <= buf.len(), "read past the frame's body");
                    }
                }
            }
            Ok(())
        }
        .await;
        set_receive_low_water(fd, 1);
        read
    }
}

/// Best effort: a socket that refuses it is read as before, woken for every segment.
fn set_receive_low_water(fd: std::os::fd::RawFd, bytes: usize) {
    let value = bytes.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: a plain setsockopt on a descriptor this connection owns, with a c_int value.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "SO_RCVLOWAT refused");
    }
}

#[non_exhaustive]
pub enum ConnWriter {
    Plain(TcpStream),
    Tls(TcpStream, Session),
}

impl ConnWriter {
    /// Reply frames, in order, as one write.
    pub async fn write_frames(&mut self, frames: &[&Frame]) -> std::io::Result<()> {
        match self {
            ConnWriter::Plain(s) => super::send::write_frames(s, frames).await,
            ConnWriter::Tls(s, session) => {
                let parts: Vec<&[u8]> = frames
                    .iter()
                    .flat_map(|f| f.parts().iter().map(|b| &b[..]))
                    .collect();
                tls::write_parts(session, s, &parts).await
            }
        }
    }

    /// Bytes already framed (handshake replies).
    pub async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            ConnWriter::Plain(s) => s.write_all(bytes).await,
            ConnWriter::Tls(s, session) => tls::write_parts(session, s, &[bytes]).await,
        }
    }

    pub async fn shutdown(&mut self) {
        match self {
            ConnWriter::Plain(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both).await;
            }
            ConnWriter::Tls(s, session) => {
                tls::close(session, s).await;
                let _ = s.shutdown(std::net::Shutdown::Both).await;
            }
        }
    }
}
