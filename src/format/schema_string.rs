//! Strings as Kafka's internal-topic schemas store them (the offsets and transaction state
//! logs): an int16 length, then UTF-8 bytes.

use bytes::{Buf, BufMut};

/// Longest string the schema stores (an int16 length); callers refuse longer ones.
pub const MAX_STRING: usize = i16::MAX as usize;

pub fn put_str(out: &mut Vec<u8>, s: &str) {
    assert!(
        s.len() <= MAX_STRING,
        "a {}-byte string in the offsets schema",
        s.len()
    );
    out.put_i16(s.len() as i16);
    out.extend_from_slice(s.as_bytes());
}

pub fn get_str(buf: &mut &[u8]) -> Option<String> {
    if buf.remaining() < 2 {
        return None;
    }
    let len = usize::try_from(buf.get_i16()).ok()?;
    if buf.remaining() < len {
        return None;
    }
    let s = String::from_utf8(buf[..len].to_vec()).ok()?;
    buf.advance(len);
    Some(s)
}
