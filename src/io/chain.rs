//! A run of bytes held as a list of shared slices (`Bytes`), so a read served from the
//! page cache is the cache's own pages, not a copy of them, all the way to the socket
//! (a vectored write). Slicing never copies; `to_bytes` copies only when the run spans
//! more than one slice.

use bytes::{Bytes, BytesMut};
use smallvec::SmallVec;

pub use crate::format::cursor::ByteRun;

impl ByteRun for ByteChain {
    fn run_len(&self) -> usize {
        self.len
    }

    fn range(&self, start: usize, end: usize) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Owned(self.copy_range(start, end))
    }

    fn crc32c_of(&self, start: usize, end: usize) -> u32 {
        self.crc32c(start, end)
    }
}

/// Slices held inline before the list spills to the heap: a reply's fields, its records
/// and a trailer fit, so building one allocates no list.
const INLINE_PARTS: usize = 4;

#[derive(Debug, Clone, Default)]
pub struct ByteChain {
    parts: SmallVec<[Bytes; INLINE_PARTS]>,
    len: usize,
}

impl From<Bytes> for ByteChain {
    fn from(b: Bytes) -> Self {
        let mut c = ByteChain::default();
        c.push(b);
        c
    }
}

impl From<Vec<u8>> for ByteChain {
    fn from(v: Vec<u8>) -> Self {
        ByteChain::from(Bytes::from(v))
    }
}

impl PartialEq for ByteChain {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.to_bytes() == other.to_bytes()
    }
}

impl Eq for ByteChain {}

impl ByteChain {
    pub fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.len += b.len();
            self.parts.push(b);
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slices, in order (none empty).
    pub fn parts(&self) -> &[Bytes] {
        &self.parts
    }

    /// Bytes `[start, end)` (clamped to the chain), sharing the slices.
    pub fn slice(&self, start: usize, end: usize) -> ByteChain {
        let end = end.min(self.len);
        let mut out = ByteChain::default();
        let mut at = 0usize;
        for p in &self.parts {
            let (a, b) = (at, at + p.len());
            at = b;
            if b <= start || a >= end {
                continue;
            }
            out.push(p.slice(start.saturating_sub(a)..(end - a).min(p.len())));
        }
        out
    }

    /// Keeps the first `n` bytes.
    pub fn truncate(&mut self, n: usize) {
        if n < self.len {
            *self = self.slice(0, n);
        }
    }

    /// A copy of bytes `[start, end)` (clamped): for headers and other small reads.
    pub fn copy_range(&self, start: usize, end: usize) -> Vec<u8> {
        let mut v = vec![0; end.min(self.len).saturating_sub(start)];
        let copied = self.copy_to(start, &mut v);
        assert_eq!(copied, v.len(), "the clamped range is inside the chain");
        v
    }

    /// Copies the bytes from `start` into `out` (as many as both hold) without allocating;
    /// returns how many.
    pub fn copy_to(&self, start: usize, out: &mut [u8]) -> usize {
        let mut copied = 0usize;
        let mut at = 0usize;
        for p in &self.parts {
            let (a, b) = (at, at + p.len());
            at = b;
            let from = start + copied;
            if b <= from || copied == out.len() {
                continue;
            }
            let take = (b - from).min(out.len() - copied);
            out[copied..copied + take].copy_from_slice(&p[from - a..from - a + take]);
            copied += take;
        }
        copied
    }

    /// One contiguous `Bytes`: no copy when the chain is one slice.
    pub fn to_bytes(&self) -> Bytes {
        match self.parts.as_slice() {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => {
                let mut b = BytesMut::with_capacity(self.len);
                for p in many {
                    b.extend_from_slice(p);
                }
                b.freeze()
            }
        }
    }

    /// CRC-32C of bytes `[start, end)` (clamped), slice by slice.
    pub fn crc32c(&self, start: usize, end: usize) -> u32 {
        self.slice(start, end)
            .parts
            .iter()
            .fold(0, |crc, p| crc32c::crc32c_append(crc, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(parts: &[&[u8]]) -> ByteChain {
        let mut c = ByteChain::default();
        for p in parts {
            c.push(Bytes::copy_from_slice(p));
        }
        c
    }

    #[test]
    fn slices_copies_and_crcs_across_parts() {
        let c = chain(&[b"hello ", b"", b"wide ", b"world"]);
        assert_eq!(c.len(), 16);
        assert_eq!(c.parts().len(), 3);
        assert_eq!(c.copy_range(4, 13), b"o wide wo");
        assert_eq!(c.slice(6, 11).to_bytes(), Bytes::from_static(b"wide "));
        assert_eq!(c.slice(6, 11).parts().len(), 1);
        assert_eq!(c.slice(10, 100).len(), 6);
        assert!(c.slice(20, 30).is_empty());
        assert_eq!(c.crc32c(2, 15), crc32c::crc32c(b"llo wide worl"));
        let mut t = c.clone();
        t.truncate(7);
        assert_eq!(t.to_bytes(), Bytes::from_static(b"hello w"));
        assert_eq!(c, chain(&[b"hello wide world"]));
    }

    #[test]
    fn copies_into_a_buffer_across_parts_and_past_the_end() {
        let c = chain(&[b"hello ", b"wide ", b"world", b"!", b"?"]);
        assert!(c.parts().len() > super::INLINE_PARTS, "spilled to the heap");
        let mut out = [0u8; 8];
        assert_eq!(c.copy_to(3, &mut out), 8);
        assert_eq!(&out, b"lo wide ");
        assert_eq!(c.copy_to(14, &mut out), 4);
        assert_eq!(&out[..4], b"ld!?");
        assert_eq!(c.copy_to(18, &mut out), 0);
        assert_eq!(c.copy_range(16, 99), b"!?");
        assert!(c.copy_range(30, 40).is_empty());
    }

    #[test]
    fn one_part_converts_without_copying() {
        let b = Bytes::from(vec![7u8; 4096]);
        let c = ByteChain::from(b.clone());
        assert_eq!(c.to_bytes().as_ptr(), b.as_ptr());
    }
}
