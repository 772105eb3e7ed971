//! An encoded frame as a chain of slices: the fields are encoded into small buffers, and
//! record payloads (Fetch, FetchAtTime, MultiFetch) stay the shared slices they were read
//! into, so a reply is written with one vectored write and no copy of its records.

use bytes::Bytes;

use super::wire::WireWriter;
use crate::io::chain::ByteChain;

#[derive(Debug, Clone, Default)]
pub struct Frame(ByteChain);

impl Frame {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The slices to write, in order.
    pub fn parts(&self) -> &[Bytes] {
        self.0.parts()
    }

    /// The size its 4-byte prefix declares (`None` for a frame shorter than a prefix).
    pub fn declared_size(&self) -> Option<usize> {
        let mut prefix = [0u8; 4];
        if self.0.copy_to(0, &mut prefix) < 4 {
            return None;
        }
        usize::try_from(i32::from_be_bytes(prefix)).ok()
    }

    /// The whole frame in one buffer (a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        self.0.copy_range(0, self.0.len())
    }
}

impl From<ByteChain> for Frame {
    /// A frame already encoded as slices (size prefix included).
    fn from(chain: ByteChain) -> Self {
        Frame(chain)
    }
}

impl From<Vec<u8>> for Frame {
    /// A frame already encoded whole (size prefix included).
    fn from(v: Vec<u8>) -> Self {
        Frame(ByteChain::from(v))
    }
}

/// Room for a reply's fields before its buffer grows: a produce reply or an error fits.
const FIELDS_CAPACITY: usize = 256;

/// Builds a frame: fields go through a `WireWriter`, records are appended as they are.
/// The first buffer starts with the size prefix's room, filled in when the frame is
/// finished, so a reply without records is one buffer and one slice.
pub struct FrameBuilder {
    pub w: WireWriter,
    /// The buffer holding the prefix, kept writable until `finish` once records follow it.
    first: Option<Vec<u8>>,
    /// Records and the fields between them, after `first`.
    body: ByteChain,
}

impl Default for FrameBuilder {
    fn default() -> Self {
        FrameBuilder {
            w: WireWriter::frame(FIELDS_CAPACITY),
            first: None,
            body: ByteChain::default(),
        }
    }
}

impl FrameBuilder {
    /// A records field: its int32 length, then its slices (not copied).
    pub fn records(&mut self, records: &ByteChain) {
        assert!(
            records.len() <= i32::MAX as usize,
            "{} bytes of records",
            records.len()
        );
        self.w.i32(records.len() as i32);
        self.flush();
        for p in records.parts() {
            self.body.push(p.clone());
        }
    }

    fn flush(&mut self) {
        let buf = std::mem::take(&mut self.w.buf);
        match self.first {
            None => self.first = Some(buf),
            Some(_) => self.body.push(Bytes::from(buf)),
        }
    }

    /// The frame: a 4-byte size prefix, then everything written.
    pub fn finish(mut self) -> Frame {
        self.flush();
        let mut first = self
            .first
            .take()
            .expect("flushed: the prefix's buffer is set");
        assert!(
            first.len() >= 4,
            "the first buffer starts with the prefix's room"
        );
        let size = first.len() - 4 + self.body.len();
        let size = i32::try_from(size).expect("a frame's size fits an int32");
        first[..4].copy_from_slice(&size.to_be_bytes());
        let mut frame = ByteChain::from(first);
        for p in self.body.parts() {
            frame.push(p.clone());
        }
        let frame = Frame(frame);
        assert_eq!(frame.declared_size(), Some(frame.len() - 4));
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_counts_fields_records_and_what_follows_them() {
        let mut f = FrameBuilder::default();
        f.w.i32(7);
        let records = ByteChain::from(Bytes::from_static(b"records"));
        f.records(&records);
        f.w.i16(-1);
        let frame = f.finish();
        let mut want = (4 + 4 + 7 + 2i32).to_be_bytes().to_vec();
        want.extend_from_slice(&7i32.to_be_bytes());
        want.extend_from_slice(&7i32.to_be_bytes());
        want.extend_from_slice(b"records");
        want.extend_from_slice(&(-1i16).to_be_bytes());
        assert_eq!(frame.to_vec(), want);
        assert_eq!(frame.declared_size(), Some(17));

        let mut fields_only = FrameBuilder::default();
        fields_only.w.i64(1);
        let frame = fields_only.finish();
        assert_eq!(frame.parts().len(), 1, "one buffer, prefix included");
        assert_eq!(frame.declared_size(), Some(8));
        assert_eq!(Frame::from(vec![0u8, 0]).declared_size(), None);
    }
}
