//! The compression codecs of RecordBatch v2 (attributes bits 0-2): the records section
//! after the 61-byte header is compressed as a whole, exactly as Kafka writes it. Batches
//! are stored as sent; decompression happens to validate a produced batch, to search a
//! batch by timestamp, and to compact one (which recompresses with the same codec).
//!
//! Formats, as Kafka's clients write them: gzip (one member), snappy (xerial/snappy-java
//! framing, or a raw snappy block as librdkafka writes it), lz4 (the LZ4 frame format),
//! zstd (a zstd frame). Decompressed output is bounded: a small batch cannot expand into
//! unbounded memory.

use std::io::{Read, Write};

use super::BatchError;

/// Largest records section a compressed batch may expand to.
pub const MAX_DECOMPRESSED_BYTES: usize = 256 << 20;

/// snappy-java's stream header: magic, version 1, compatible version 1.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER: usize = 16;
/// snappy-java's block size.
const XERIAL_BLOCK: usize = 32 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Codec {
    None = 0,
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
    Zstd = 4,
}

impl Codec {
    pub const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];

    /// The codec of attributes bits 0-2; `None` for the reserved values 5-7.
    pub fn from_attributes(attributes: i16) -> Option<Codec> {
        Codec::ALL
            .into_iter()
            .find(|c| *c as i16 == attributes & 0x07)
    }

    /// Kafka's name (compression.type, dump-log's `compresscodec`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Decompresses a records section, refusing more than `MAX_DECOMPRESSED_BYTES`.
    pub fn decompress(self, data: &[u8]) -> Result<Vec<u8>, BatchError> {
        self.decompress_within(data, MAX_DECOMPRESSED_BYTES)
    }

    /// Decompresses a records section, refusing more than `limit` bytes.
    pub fn decompress_within(self, data: &[u8], limit: usize) -> Result<Vec<u8>, BatchError> {
        let fail = |e: std::io::Error| BatchError::Decompression {
            codec: self.name(),
            reason: e.to_string(),
        };
        match self {
            Codec::None => Ok(data.to_vec()),
            Codec::Gzip => bounded(flate2::read::GzDecoder::new(data), self, limit),
            Codec::Snappy => snappy_decompress(data, limit).map_err(fail),
            Codec::Lz4 => bounded(lz4_flex::frame::FrameDecoder::new(data), self, limit),
            Codec::Zstd => bounded(
                zstd::stream::read::Decoder::new(data).map_err(fail)?,
                self,
                limit,
            ),
        }
    }

    /// Compresses a records section the way Kafka's Java client does.
    pub fn compress(self, data: &[u8]) -> Vec<u8> {
        let written: std::io::Result<Vec<u8>> = match self {
            Codec::None => Ok(data.to_vec()),
            Codec::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).and_then(|_| e.finish())
            }
            Codec::Snappy => Ok(snappy_compress(data)),
            Codec::Lz4 => {
                let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
                e.write_all(data)
                    .and_then(|_| e.finish().map_err(std::io::Error::other))
            }
            Codec::Zstd => zstd::stream::encode_all(data, 3),
        };
        // Writing into memory fails only when memory does.
        written.expect("compressing into a Vec")
    }
}

fn bounded(reader: impl Read, codec: Codec, limit: usize) -> Result<Vec<u8>, BatchError> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| BatchError::Decompression {
            codec: codec.name(),
            reason: e.to_string(),
        })?;
    if out.len() > limit {
        return Err(BatchError::Decompression {
            codec: codec.name(),
            reason: format!("expands past {limit} bytes"),
        });
    }
    Ok(out)
}

fn snappy_decompress(data: &[u8], limit: usize) -> std::io::Result<Vec<u8>> {
    let mut decoder = snap::raw::Decoder::new();
    if !data.starts_with(&XERIAL_MAGIC) {
        check_snappy_len(data, limit)?;
        return decoder.decompress_vec(data).map_err(std::io::Error::other);
    }
    let mut out = Vec::new();
    let mut rest = data
        .get(XERIAL_HEADER..)
        .ok_or_else(|| invalid("short xerial header"))?;
    while !rest.is_empty() {
        let len = rest
            .get(..4)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
            .ok_or_else(|| invalid("truncated xerial block length"))?;
        let block = rest
            .get(4..4 + len)
            .ok_or_else(|| invalid("truncated xerial block"))?;
        if out.len() + check_snappy_len(block, limit)? > limit {
            return Err(invalid("expands past the decompression limit"));
        }
        out.extend(
            decoder
                .decompress_vec(block)
                .map_err(std::io::Error::other)?,
        );
        rest = &rest[4 + len..];
    }
    Ok(out)
}

/// The block's decompressed length, from its preamble, if within `limit`.
fn check_snappy_len(block: &[u8], limit: usize) -> std::io::Result<usize> {
    let len = snap::raw::decompress_len(block).map_err(std::io::Error::other)?;
    if len > limit {
        return Err(invalid("expands past the decompression limit"));
    }
    Ok(len)
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// snappy-java's framing: the header, then blocks of up to 32 KiB, each length-prefixed.
fn snappy_compress(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(XERIAL_HEADER + data.len() / 2 + 64);
    out.extend_from_slice(&XERIAL_MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    for chunk in data.chunks(XERIAL_BLOCK) {
        let block = encoder
            .compress_vec(chunk)
            .expect("snappy of a 32 KiB chunk");
        out.extend_from_slice(&(block.len() as u32).to_be_bytes());
        out.extend_from_slice(&block);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in Codec::ALL {
            let packed = codec.compress(&data);
            assert_eq!(codec.decompress(&packed).unwrap(), data, "{codec:?}");
            if codec != Codec::None {
                assert!(packed.len() < data.len() / 2, "{codec:?}: {}", packed.len());
            }
        }
    }

    #[test]
    fn raw_snappy_as_librdkafka_writes_it_is_read_too() {
        let data = b"hello hello hello hello".repeat(100);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(Codec::Snappy.decompress(&raw).unwrap(), data);
    }

    #[test]
    fn garbage_and_bombs_are_errors_not_panics_or_allocations() {
        for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
            assert!(
                codec.decompress(b"definitely not compressed").is_err(),
                "{codec:?}"
            );
            let bomb = codec.compress(&vec![0u8; (1 << 20) + 1]);
            let e = codec.decompress_within(&bomb, 1 << 20).unwrap_err();
            assert!(e.to_string().contains(codec.name()), "{e}");
        }
    }

    #[test]
    fn reserved_codec_values_are_not_codecs() {
        assert_eq!(Codec::from_attributes(0x04 | 0x08), Some(Codec::Zstd));
        assert_eq!(Codec::from_attributes(5), None);
        assert_eq!(Codec::from_name("lz4"), Some(Codec::Lz4));
    }
}
