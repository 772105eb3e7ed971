//! Primitive encoders and a bounds-checked decoder for the wire format (big-endian).
//! Strings: i16 length (-1 = null) + UTF-8. Bytes: i32 length (-1 = null) + bytes.
//! Arrays: i32 count (-1 = null) + elements. Every length is checked against what remains.

use bytes::Bytes;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {what} at byte {pos}")]
pub struct WireError {
    pub what: &'static str,
    pub pos: usize,
}

#[derive(Default)]
pub struct WireWriter {
    pub buf: Vec<u8>,
}

impl WireWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        WireWriter {
            buf: Vec::with_capacity(n),
        }
    }

    pub fn i8(&mut self, v: i8) -> &mut Self {
        self.buf.push(v as u8);
        self
    }
    pub fn i16(&mut self, v: i16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// An int16-length string; one longer than 32767 bytes is cut there, on a character
    /// boundary, so what the peer reads is still UTF-8.
    pub fn string(&mut self, s: &str) -> &mut Self {
        let mut len = s.len().min(i16::MAX as usize);
        while !s.is_char_boundary(len) {
            len -= 1;
        }
        assert!(len <= i16::MAX as usize);
        assert!(s.is_char_boundary(len));
        self.i16(len as i16);
        self.buf.extend_from_slice(&s.as_bytes()[..len]);
        self
    }
    pub fn nullable_string(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.string(s),
            None => self.i16(-1),
        }
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        // Frames are bounded by max.frame.bytes, far below 2 GiB: the length never wraps.
        assert!(b.len() <= i32::MAX as usize, "a {}-byte field", b.len());
        self.i32(b.len() as i32);
        self.buf.extend_from_slice(b);
        self
    }

    /// Wraps the written bytes into a frame: a 4-byte size prefix followed by the bytes.
    pub fn into_frame(self) -> Vec<u8> {
        assert!(
            self.buf.len() <= i32::MAX as usize,
            "a {}-byte frame",
            self.buf.len()
        );
        let mut out = Vec::with_capacity(4 + self.buf.len());
        out.extend_from_slice(&(self.buf.len() as i32).to_be_bytes());
        out.extend_from_slice(&self.buf);
        out
    }

    /// A writer for a whole frame: room for the size prefix first, so the payload is
    /// copied once (see `finish_frame`).
    pub fn frame(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(4 + capacity);
        buf.extend_from_slice(&[0; 4]);
        WireWriter { buf }
    }

    /// Fills in the size prefix of a writer made by `frame`.
    pub fn finish_frame(mut self) -> Vec<u8> {
        assert!(self.buf.len() >= 4, "a frame starts with its size prefix");
        let len = i32::try_from(self.buf.len() - 4).expect("a frame's size fits an int32");
        self.buf[..4].copy_from_slice(&len.to_be_bytes());
        self.buf
    }
}

/// A cursor over a received frame body.
pub struct WireReader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Set when the frame is held in a `Bytes`, so byte fields can be sliced without copying.
    shared: Option<&'a Bytes>,
}

impl<'a> WireReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        WireReader {
            buf,
            pos: 0,
            shared: None,
        }
    }

    pub fn from_bytes(b: &'a Bytes) -> Self {
        WireReader {
            buf: b,
            pos: 0,
            shared: Some(b),
        }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.remaining() < n {
            return Err(WireError {
                what,
                pos: self.pos,
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn i8(&mut self, what: &'static str) -> Result<i8, WireError> {
        Ok(self.take(1, what)?[0] as i8)
    }
    pub fn i16(&mut self, what: &'static str) -> Result<i16, WireError> {
        let bytes = self.take(2, what)?;
        Ok(i16::from_be_bytes(std::array::from_fn(|i| bytes[i])))
    }
    pub fn i32(&mut self, what: &'static str) -> Result<i32, WireError> {
        let bytes = self.take(4, what)?;
        Ok(i32::from_be_bytes(std::array::from_fn(|i| bytes[i])))
    }
    pub fn i64(&mut self, what: &'static str) -> Result<i64, WireError> {
        let bytes = self.take(8, what)?;
        Ok(i64::from_be_bytes(std::array::from_fn(|i| bytes[i])))
    }

    pub fn nullable_string(&mut self, what: &'static str) -> Result<Option<String>, WireError> {
        let pos = self.pos;
        let len = self.i16(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(WireError { what, pos });
        }
        let raw = self.take(len as usize, what)?;
        String::from_utf8(raw.to_vec())
            .map(Some)
            .map_err(|_| WireError { what, pos })
    }

    pub fn string(&mut self, what: &'static str) -> Result<String, WireError> {
        let pos = self.pos;
        self.nullable_string(what)?.ok_or(WireError { what, pos })
    }

    pub fn bytes(&mut self, what: &'static str) -> Result<Bytes, WireError> {
        let pos = self.pos;
        let len = self.i32(what)?;
        if len < 0 {
            return Err(WireError { what, pos });
        }
        let start = self.pos;
        let raw = self.take(len as usize, what)?;
        Ok(match self.shared {
            Some(b) => b.slice(start..start + len as usize),
            None => Bytes::copy_from_slice(raw),
        })
    }

    /// An array count, bounded by the bytes left (each element needs `min_elem` bytes), so a
    /// lying count can never make the reader allocate.
    pub fn count(
        &mut self,
        what: &'static str,
        min_elem: usize,
    ) -> Result<Option<usize>, WireError> {
        let pos = self.pos;
        let n = self.i32(what)?;
        if n == -1 {
            return Ok(None);
        }
        if n < 0 || (n as usize).saturating_mul(min_elem.max(1)) > self.remaining() {
            return Err(WireError { what, pos });
        }
        Ok(Some(n as usize))
    }

    pub fn finish(&self) -> Result<(), WireError> {
        if self.remaining() != 0 {
            return Err(WireError {
                what: "trailing bytes",
                pos: self.pos,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_past_the_int16_limit_is_cut_on_a_character_boundary() {
        // 16384 two-byte characters: 32768 bytes, one past the limit, mid-character.
        let long = "é".repeat(16_384);
        let mut w = WireWriter::new();
        w.string(&long);
        let frame = w.into_frame();
        let mut r = WireReader::new(&frame[4..]);
        let back = r.string("s").unwrap();
        assert_eq!(back.len(), 32_766);
        assert!(long.starts_with(&back));
        r.finish().unwrap();
    }
}
