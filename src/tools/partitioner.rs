//! Kafka's default partitioner for keyed records: murmur2 of the key, made positive, modulo
//! the partition count, so the same key lands on the same partition number as with Kafka.

/// Kafka's murmur2 variant (seed 0x9747b28c, 4-byte little-endian blocks).
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ len as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= (tail[2] as u32) << 16;
    }
    if tail.len() >= 2 {
        h ^= (tail[1] as u32) << 8;
    }
    if !tail.is_empty() {
        h ^= tail[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Partition for a key, as Kafka's `BuiltInPartitioner.partitionForKey`.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    assert!(partitions > 0, "a topic has at least one partition");
    let p = ((murmur2(key) & 0x7fff_ffff) as u32) % partitions;
    assert!(p < partitions);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vectors from Kafka's UtilsTest.testMurmur2.
    #[test]
    fn murmur2_matches_kafka() {
        let cases: &[(&[u8], i32)] = &[
            (b"21", -973932308),
            (b"foobar", -790332482),
            (b"a-little-bit-long-string", -985981536),
            (b"a-little-bit-longer-string", -1486304829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58897971,
            ),
            (b"abc", 479470107),
        ];
        for &(data, expect) in cases {
            assert_eq!(murmur2(data), expect, "{:?}", String::from_utf8_lossy(data));
        }
    }
}
