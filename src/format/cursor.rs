//! The one walk over record-batch framing: a cursor over any run of bytes (one buffer, a
//! chain of page slices, a window on a file) that yields each batch's position and header
//! and stops at the first bad or cut-off one. Splitting a produce request, serving a read
//! (its CRC-checked prefix and its visible prefix) and dump-log's index checks all walk
//! with it.

use super::batch::{BatchHeader, HEADER_SIZE};
use super::BatchError;

/// Bytes a batch walker reads, in one buffer or in pieces: their length, a small range
/// (a header; borrowed from a buffer, copied from pieces), and the CRC-32C of a range.
pub trait ByteRun {
    fn run_len(&self) -> usize;
    fn range(&self, start: usize, end: usize) -> std::borrow::Cow<'_, [u8]>;
    fn crc32c_of(&self, start: usize, end: usize) -> u32;
}

impl ByteRun for [u8] {
    fn run_len(&self) -> usize {
        self.len()
    }

    fn range(&self, start: usize, end: usize) -> std::borrow::Cow<'_, [u8]> {
        let end = end.min(self.len());
        std::borrow::Cow::Borrowed(&self[start.min(end)..end])
    }

    fn crc32c_of(&self, start: usize, end: usize) -> u32 {
        crc32c::crc32c(&self.range(start, end))
    }
}

/// A step of a walk: a whole batch at its position, or why the walk ends there.
pub type Step = Result<(usize, BatchHeader), (usize, BatchError)>;

/// Walks batches from a position: each item is the next whole batch, or the error at the
/// first header that does not parse or batch that runs past the end (then the walk ends).
pub struct BatchCursor<'a, R: ?Sized> {
    bytes: &'a R,
    pos: usize,
    stopped: bool,
}

impl<'a, R: ByteRun + ?Sized> BatchCursor<'a, R> {
    pub fn new(bytes: &'a R) -> Self {
        Self::at(bytes, 0)
    }

    pub fn at(bytes: &'a R, pos: usize) -> Self {
        BatchCursor {
            bytes,
            pos,
            stopped: false,
        }
    }

    /// The end of the whole batches walked so far (where a stopped walk stopped).
    pub fn position(&self) -> usize {
        self.pos
    }

    fn step(&self, len: usize) -> Step {
        let at = self.pos;
        let header = self.bytes.range(at, at + HEADER_SIZE);
        let h = BatchHeader::parse(&header).map_err(|e| (at, e))?;
        let available = len - at;
        if h.size() > available {
            let e = BatchError::SizeMismatch {
                declared: h.batch_length,
                total: h.size() as u64,
                available,
            };
            return Err((at, e));
        }
        Ok((at, h))
    }
}

impl<R: ByteRun + ?Sized> Iterator for BatchCursor<'_, R> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let len = self.bytes.run_len();
        if self.stopped || self.pos >= len {
            return None;
        }
        let step = self.step(len);
        match &step {
            Ok((at, h)) => self.pos = at + h.size(),
            Err(_) => self.stopped = true,
        }
        debug_assert!(self.pos <= len);
        Some(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BatchBuilder, RecordSpec};

    fn batch() -> Vec<u8> {
        let mut b = BatchBuilder::new(256);
        b.push(RecordSpec::new(None, Some(b"v")).timestamp(1));
        b.build()
    }

    #[test]
    fn the_walk_yields_whole_batches_and_stops_at_the_first_bad_one() {
        let (a, b) = (batch(), batch());
        let mut bytes = [a.clone(), b.clone()].concat();
        let whole = bytes.len();
        bytes.extend_from_slice(&batch()[..HEADER_SIZE + 1]);
        let mut cursor = BatchCursor::new(&bytes[..]);
        assert_eq!(cursor.next().unwrap().unwrap().0, 0);
        assert_eq!(cursor.next().unwrap().unwrap().0, a.len());
        let (at, e) = cursor.next().unwrap().unwrap_err();
        assert_eq!(at, whole);
        assert!(matches!(e, BatchError::SizeMismatch { .. }), "{e:?}");
        assert!(cursor.next().is_none());
        assert_eq!(cursor.position(), whole);
        // From a position inside the run.
        let from_second: Vec<Step> = BatchCursor::at(&bytes[..whole], a.len()).collect();
        assert_eq!(from_second.len(), 1);
    }
}
