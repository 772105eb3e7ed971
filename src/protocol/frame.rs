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
        let prefix = self.0.copy_range(0, 4.min(self.len()));
        let prefix: [u8; 4] = prefix.try_into().ok()?;
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

/// Builds a frame: fields go through a `WireWriter`, records are appended as they are.
#[derive(Default)]
pub struct FrameBuilder {
    pub w: WireWriter,
    body: ByteChain,
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
        self.body.push(Bytes::from(buf));
    }

    /// The frame: a 4-byte size prefix, then everything written.
    pub fn finish(mut self) -> Frame {
        self.flush();
        let size = i32::try_from(self.body.len()).expect("a frame's size fits an int32");
        let mut frame = ByteChain::from(size.to_be_bytes().to_vec());
        for p in self.body.parts() {
            frame.push(p.clone());
        }
        let frame = Frame(frame);
        assert_eq!(frame.declared_size(), Some(frame.len() - 4));
        frame
    }
}
