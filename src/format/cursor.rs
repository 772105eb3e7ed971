//! The one walk over record-batch framing: a cursor over any run of bytes (one buffer, a
//! chain of page slices, a window on a file) that yields each batch's position and header
//! and stops at the first bad or cut-off one. Splitting a produce request, serving a read
//! (its CRC-checked prefix and its visible prefix) and dump-log's index checks all walk
//! with it.

use super::header::{BatchHeader, HEADER_SIZE};
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

/// Part of a longer run, as an async walker holds it: `bytes` are the run's bytes from
/// `start`, and the whole run (a file) is `len` bytes. A cursor reads headers through it,
/// so the framing rules are the cursor's; the walker refills the window whenever
/// [`Window::holds_header_at`] says the next header is not inside.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    pub start: usize,
    pub bytes: &'a [u8],
    pub len: usize,
}

impl Window<'_> {
    /// Whether the window holds the header at `pos` (or every byte left, when fewer remain).
    pub fn holds_header_at(&self, pos: usize) -> bool {
        let need_end = (pos + HEADER_SIZE).min(self.len);
        pos >= self.start && need_end <= self.start + self.bytes.len()
    }

    /// Where a walk from `pos` goes next, by the cursor's rules: the whole batch at `pos`,
    /// the error there, or `None` at the end of the run.
    pub fn step_at(&self, pos: usize) -> Option<Step> {
        assert!(
            pos >= self.len || self.holds_header_at(pos),
            "the window holds the header it is asked about"
        );
        BatchCursor::at(self, pos).next()
    }
}

impl ByteRun for Window<'_> {
    fn run_len(&self) -> usize {
        self.len
    }

    /// The held part of `[start, end)`: walkers only ask for ranges they made sure are held.
    fn range(&self, start: usize, end: usize) -> std::borrow::Cow<'_, [u8]> {
        let end = end.min(self.len);
        let from = start.saturating_sub(self.start);
        self.bytes.range(from, end.saturating_sub(self.start))
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
        assert!(self.pos <= len);
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

    #[test]
    fn a_window_walks_by_the_same_rules_as_the_whole_run() {
        let (a, b) = (batch(), batch());
        let mut file = [a.clone(), b.clone()].concat();
        file.extend_from_slice(&[0u8; 100]);
        // The window holds the second batch's header only; the run is the whole file.
        let held = &file[a.len()..a.len() + HEADER_SIZE];
        let w = Window {
            start: a.len(),
            bytes: held,
            len: file.len(),
        };
        assert!(w.holds_header_at(a.len()));
        assert!(!w.holds_header_at(0));
        let (at, h) = w.step_at(a.len()).unwrap().unwrap();
        assert_eq!((at, h.size()), (a.len(), b.len()));
        // The zero padding after it: the same error the whole run gives.
        let end = a.len() + b.len();
        let padding = Window {
            start: end,
            bytes: &file[end..],
            len: file.len(),
        };
        let whole_run: Vec<Step> = BatchCursor::new(&file[..]).collect();
        assert_eq!(padding.step_at(end), whole_run.last().cloned());
        assert!(padding.step_at(file.len()).is_none());
    }
}
