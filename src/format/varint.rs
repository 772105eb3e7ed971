//! Zigzag + LEB128 varints as Kafka's record format uses them (`ByteUtils.writeVarint`,
//! `writeVarlong`): at most 5 bytes for 32-bit values and 10 bytes for 64-bit ones.

use super::BatchError;

/// Appends the zigzag varint encoding of a 32-bit value.
pub fn put_varint(out: &mut Vec<u8>, value: i32) {
    let before = out.len();
    put_unsigned(out, ((value << 1) ^ (value >> 31)) as u32 as u64);
    assert_eq!(
        out.len() - before,
        varint_len(value),
        "varint_len measures what is written"
    );
}

/// Appends the zigzag varint encoding of a 64-bit value.
pub fn put_varlong(out: &mut Vec<u8>, value: i64) {
    let before = out.len();
    put_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
    assert_eq!(
        out.len() - before,
        varlong_len(value),
        "varlong_len measures what is written"
    );
}

/// Number of bytes `put_varint` writes for `value`.
pub fn varint_len(value: i32) -> usize {
    unsigned_len(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// Number of bytes `put_varlong` writes for `value`.
pub fn varlong_len(value: i64) -> usize {
    unsigned_len(((value << 1) ^ (value >> 63)) as u64)
}

/// Appends the plain (unsigned, not zigzag) varint encoding of `v`: Kafka's
/// `UNSIGNED_VARINT`, as in the compact lengths of flexible message versions.
pub fn put_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn unsigned_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a zigzag varint (32-bit) from `buf` at `*pos`, advancing `*pos`.
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Result<i32, BatchError> {
    let start = *pos;
    let raw = get_unsigned(buf, pos, 5)?;
    if raw > u32::MAX as u64 {
        return Err(BatchError::BadVarint { pos: start });
    }
    let raw = raw as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads a zigzag varlong (64-bit) from `buf` at `*pos`, advancing `*pos`.
pub fn get_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, BatchError> {
    let raw = get_unsigned(buf, pos, 10)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

fn get_unsigned(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Result<u64, BatchError> {
    let start = *pos;
    let mut value: u64 = 0;
    for i in 0..max_bytes {
        let Some(&b) = buf.get(start + i) else {
            return Err(BatchError::BadVarint { pos: start });
        };
        let shift = 7 * i as u32;
        if shift == 63 && b > 1 {
            return Err(BatchError::BadVarint { pos: start });
        }
        value |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            *pos = start + i + 1;
            assert!(*pos <= buf.len(), "a varint ends inside its buffer");
            return Ok(value);
        }
    }
    Err(BatchError::BadVarint { pos: start })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc32(v: i32) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn kafka_signed_varint_vectors() {
        let cases: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (63, &[0x7E]),
            (-64, &[0x7F]),
            (64, &[0x80, 0x01]),
            (-65, &[0x81, 0x01]),
            (8191, &[0xFE, 0x7F]),
            (8192, &[0x80, 0x80, 0x01]),
            (i32::MAX, &[0xFE, 0xFF, 0xFF, 0xFF, 0x0F]),
            (i32::MIN, &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
        ];
        for &(v, bytes) in cases {
            assert_eq!(enc32(v), bytes, "encoding {v}");
            assert_eq!(varint_len(v), bytes.len());
            let mut pos = 0;
            assert_eq!(get_varint(bytes, &mut pos).unwrap(), v, "decoding {v}");
            assert_eq!(pos, bytes.len());
            // The 64-bit codec agrees with the 32-bit one on these values.
            let mut long = Vec::new();
            put_varlong(&mut long, v as i64);
            assert_eq!(long, bytes);
        }
    }

    #[test]
    fn varlong_extremes_round_trip() {
        for v in [i64::MIN, i64::MAX, 0, -1, 1 << 40, -(1 << 40)] {
            let mut out = Vec::new();
            put_varlong(&mut out, v);
            assert_eq!(out.len(), varlong_len(v));
            assert!(out.len() <= 10);
            let mut pos = 0;
            assert_eq!(get_varlong(&out, &mut pos).unwrap(), v);
        }
    }

    #[test]
    fn malformed_varints_are_errors() {
        // Truncated: continuation bit set on the last byte.
        let mut pos = 0;
        assert!(get_varint(&[0x80, 0x80], &mut pos).is_err());
        // Too long for 32 bits.
        let mut pos = 0;
        assert!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], &mut pos).is_err());
        // 5th byte overflowing 32 bits.
        let mut pos = 0;
        assert!(get_varint(&[0xFF, 0xFF, 0xFF, 0xFF, 0x1F], &mut pos).is_err());
        let mut pos = 0;
        assert!(get_varlong(&[0xFF; 11], &mut pos).is_err());
    }
}
