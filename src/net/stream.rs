//! A connection's two halves, plain or under TLS: the reader the framing reads from and
//! the writer replies go out through. Plain replies keep the vectored zero-copy send;
//! TLS ones are encrypted by the session (`tls.rs`).

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

#[non_exhaustive]
pub enum ConnWriter {
    Plain(TcpStream),
    Tls(TcpStream, Session),
}

impl ConnWriter {
    /// One reply frame.
    pub async fn write_frame(&mut self, frame: &Frame) -> std::io::Result<()> {
        match self {
            ConnWriter::Plain(s) => super::send::write_frame(s, frame).await,
            ConnWriter::Tls(s, session) => {
                let parts: Vec<&[u8]> = frame.parts().iter().map(|b| &b[..]).collect();
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
