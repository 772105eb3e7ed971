//! Writing reply frames without copying their records: one non-blocking `sendmsg` of all
//! their slices (a vectored write; glommio's stream has none), and, for
//! whatever the socket could not take at once, the stream's own writes, which wait for room.

use std::os::fd::AsRawFd;

use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use smallvec::SmallVec;

use crate::protocol::frame::Frame;

/// Slices handed to one sendmsg (Linux's IOV_MAX is 1024).
const MAX_IOV: usize = 1024;

/// Slices kept on the stack: a reply of fields and a few record slices allocates nothing.
const INLINE_IOV: usize = 8;

pub async fn write_frames(stream: &mut TcpStream, frames: &[&Frame]) -> std::io::Result<()> {
    let slices: SmallVec<[&[u8]; INLINE_IOV]> = frames
        .iter()
        .flat_map(|f| f.parts().iter().map(|b| &b[..]))
        .collect();
    let total: usize = frames.iter().map(|f| f.len()).sum();
    debug_assert_eq!(slices.iter().map(|s| s.len()).sum::<usize>(), total);
    let mut sent = try_send_vectored(stream.as_raw_fd(), &slices)?;
    assert!(sent <= total, "the kernel took more than was given");
    for s in slices {
        if sent >= s.len() {
            sent -= s.len();
            continue;
        }
        stream.write_all(&s[sent..]).await?;
        sent = 0;
    }
    Ok(())
}

/// One `sendmsg(MSG_DONTWAIT)` of up to `MAX_IOV` slices: the bytes the kernel took (0
/// when the socket buffer is full).
fn try_send_vectored(fd: std::os::fd::RawFd, slices: &[&[u8]]) -> std::io::Result<usize> {
    let mut iov: SmallVec<[libc::iovec; INLINE_IOV]> = slices
        .iter()
        .take(MAX_IOV)
        .map(|s| libc::iovec {
            iov_base: s.as_ptr() as *mut libc::c_void,
            iov_len: s.len(),
        })
        .collect();
    // SAFETY: an all-zero msghdr is a valid empty message; the fields set below point at
    // `iov`, which outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = iov.len();
    // SAFETY: `fd` is the open socket of the stream we borrow; every iovec points into a
    // slice borrowed for this call, and sendmsg only reads them.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = std::io::Error::last_os_error();
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(0),
        _ => Err(e),
    }
}
