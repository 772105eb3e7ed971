//! Request-frame memory, reused: a large frame body is read into a buffer an earlier frame
//! of this thread gave back, so the bytes about to be overwritten by the socket read are
//! not zeroed first (a fresh `vec![0; n]` memsets every byte of every produce). A buffer
//! comes back to its thread's pool when the last `Bytes` sharing the frame is dropped.
//!
//! Bounds: at most `KEPT` buffers per thread, none larger than `MAX_KEPT` bytes, so an idle
//! shard holds at most `KEPT * MAX_KEPT` bytes here; small frames are not pooled (zeroing
//! them costs nothing worth saving).

use std::cell::RefCell;

use bytes::Bytes;

/// Frames smaller than this are plain allocations.
const MIN_POOLED: usize = 64 << 10;
/// Buffers larger than this are freed, not kept.
const MAX_KEPT: usize = 2 << 20;
/// Buffers kept per thread.
const KEPT: usize = 8;

thread_local! {
    /// Buffers given back, each initialised over its whole `len`.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A frame body of `len` bytes, contents unspecified (the caller overwrites all of them).
pub struct FrameBuf {
    /// Initialised memory; `len <= buf.len()`.
    buf: Vec<u8>,
    len: usize,
}

impl FrameBuf {
    pub fn new(len: usize) -> Self {
        if !(MIN_POOLED..=MAX_KEPT).contains(&len) {
            return FrameBuf {
                buf: vec![0; len],
                len,
            };
        }
        let reused = POOL.with(|p| {
            let mut pool = p.borrow_mut();
            // The smallest kept buffer that fits, else the largest (only what it lacks is
            // zeroed): a small frame does not hold a large buffer.
            let fits = (0..pool.len())
                .filter(|&i| pool[i].len() >= len)
                .min_by_key(|&i| pool[i].len());
            let at = fits.or_else(|| (0..pool.len()).max_by_key(|&i| pool[i].len()))?;
            Some(pool.swap_remove(at))
        });
        let mut buf = reused.unwrap_or_default();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        assert!(buf.len() >= len);
        FrameBuf { buf, len }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// The frame as shared bytes; its memory returns to the pool of the thread that drops
    /// the last of them.
    pub fn freeze(mut self) -> Bytes {
        if !(MIN_POOLED..=MAX_KEPT).contains(&self.buf.len()) {
            let mut buf = std::mem::take(&mut self.buf);
            buf.truncate(self.len);
            return Bytes::from(buf);
        }
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for FrameBuf {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for FrameBuf {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        if !(MIN_POOLED..=MAX_KEPT).contains(&buf.len()) {
            return;
        }
        // A thread being torn down has no pool left: the buffer is simply freed.
        let _ = POOL.try_with(|p| {
            let mut pool = p.borrow_mut();
            if pool.len() < KEPT {
                pool.push(buf);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_frame_is_reused_and_keeps_its_bytes_until_overwritten() {
        let mut a = FrameBuf::new(100_000);
        a.as_mut_slice().fill(7);
        let bytes = a.freeze();
        assert_eq!(bytes.len(), 100_000);
        assert!(bytes.iter().all(|&b| b == 7));
        let copy = bytes.clone();
        drop(bytes);
        // Still shared: not back in the pool yet.
        let fresh = FrameBuf::new(90_000);
        assert!(fresh.as_ref().iter().all(|&b| b == 0));
        drop(copy);
        let mut reused = FrameBuf::new(90_000);
        assert_eq!(reused.as_mut_slice().len(), 90_000);
        assert!(
            reused.as_ref().iter().all(|&b| b == 7),
            "the same memory, not zeroed"
        );
        drop(fresh);
    }

    #[test]
    fn small_and_huge_frames_are_plain_and_the_pool_is_bounded() {
        assert_eq!(FrameBuf::new(10).freeze().len(), 10);
        assert_eq!(FrameBuf::new(MAX_KEPT + 1).freeze().len(), MAX_KEPT + 1);
        let frames: Vec<Bytes> = (0..KEPT * 2)
            .map(|_| FrameBuf::new(MIN_POOLED).freeze())
            .collect();
        drop(frames);
        assert_eq!(POOL.with(|p| p.borrow().len()), KEPT);
    }
}
