//! An encoded response frame in two parts: the head (size prefix, header and every field
//! up to the records' length) in one buffer, and the records as the shared slices they
//! were read into (`ByteChain`), so a Fetch reply is written with one vectored write and
//! no copy of its records.

use crate::io::chain::ByteChain;

#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub head: Vec<u8>,
    pub tail: ByteChain,
}

impl Frame {
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole frame in one buffer (a copy of the tail).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.head);
        for p in self.tail.parts() {
            v.extend_from_slice(p);
        }
        v
    }
}

impl From<Vec<u8>> for Frame {
    fn from(head: Vec<u8>) -> Self {
        Frame {
            head,
            tail: ByteChain::default(),
        }
    }
}
