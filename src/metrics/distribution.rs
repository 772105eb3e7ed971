//! A distribution of values: an HdrHistogram (2 significant digits) and the exact sum,
//! which the histogram alone cannot give (Prometheus wants `_sum`).

use std::time::Duration;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// Latencies are recorded in nanoseconds, up to a minute (longer ones count as a minute).
const MAX_LATENCY_NS: u64 = 60_000_000_000;
/// Plain counts (commands per group commit) up to a billion.
const MAX_COUNT: u64 = 1_000_000_000;

/// Why a peer's encoded histogram is refused (before the crate allocates by it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistogramError {
    #[error("a histogram of {len} bytes (limit {MAX_ENCODED})")]
    TooLarge { len: usize },
    #[error("a histogram of {len} bytes is shorter than its header")]
    ShortHeader { len: usize },
    #[error("not an uncompressed V2 histogram (cookie {cookie:#x})")]
    NotV2 { cookie: u32 },
    #[error("histogram payload of {declared} bytes, {present} present")]
    ShortPayload { declared: u32, present: usize },
    #[error("histogram bounds out of range: {digits} digits, {lowest}..{highest}")]
    Bounds {
        digits: u32,
        lowest: u64,
        highest: u64,
    },
    /// The crate's decoder refused it (its error, as it prints).
    #[error("bad histogram: {0}")]
    Undecodable(String),
}

#[derive(Debug, Clone)]
pub struct Distribution {
    pub hist: Histogram<u64>,
    /// Sum of the recorded values (nanoseconds for latencies).
    pub sum: u64,
}

impl Distribution {
    fn with_max(max: u64) -> Self {
        Distribution {
            hist: Histogram::new_with_bounds(1, max, 2).expect("valid histogram bounds"),
            sum: 0,
        }
    }

    /// A latency distribution, in nanoseconds.
    pub fn latency() -> Self {
        Self::with_max(MAX_LATENCY_NS)
    }

    /// A distribution of counts.
    pub fn count() -> Self {
        Self::with_max(MAX_COUNT)
    }

    pub fn record(&mut self, v: u64) {
        self.hist.saturating_record(v.max(1));
        self.sum = self.sum.saturating_add(v);
    }

    pub fn record_duration(&mut self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn count_recorded(&self) -> u64 {
        self.hist.len()
    }

    /// Adds another distribution of the same kind (merging shards).
    pub fn add(&mut self, other: &Distribution) {
        // Same bounds on both sides (both made here): `add` cannot fail on range.
        let before = self.count_recorded();
        let _ = self.hist.add(&other.hist);
        self.sum = self.sum.saturating_add(other.sum);
        assert!(
            self.count_recorded() >= before,
            "adding never loses a value"
        );
    }

    /// What was recorded since `earlier` (a snapshot of the same distribution).
    pub fn since(&self, earlier: &Distribution) -> Distribution {
        let mut d = self.clone();
        if d.hist.subtract(&earlier.hist).is_err() {
            // Not an earlier snapshot of this one (the server restarted): all of it is new.
            return self.clone();
        }
        d.sum = self.sum.saturating_sub(earlier.sum);
        assert!(d.count_recorded() <= self.count_recorded());
        d
    }

    /// The value at quantile `q` (0..=1).
    pub fn quantile(&self, q: f64) -> u64 {
        assert!((0.0..=1.0).contains(&q), "a quantile is within 0..=1");
        self.hist.value_at_quantile(q)
    }

    /// HdrHistogram's V2 encoding (compact: runs of empty buckets are one varint).
    pub fn encode_histogram(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail; a histogram V2 cannot encode is a bug.
        V2Serializer::new()
            .serialize(&self.hist, &mut out)
            .expect("V2 serialisation into memory");
        // What a server sends, its clients accept (`decode` refuses more).
        assert!(out.len() <= MAX_ENCODED, "a {}-byte histogram", out.len());
        out
    }

    /// Decodes [`encode_histogram`]'s bytes, bounded like every other wire input.
    pub fn decode(hist: &[u8], sum: u64) -> Result<Distribution, HistogramError> {
        if hist.len() > MAX_ENCODED {
            return Err(HistogramError::TooLarge { len: hist.len() });
        }
        check_header(hist)?;
        let hist: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &hist[..])
            .map_err(|e| HistogramError::Undecodable(format!("{e:?}")))?;
        Ok(Distribution { hist, sum })
    }
}

/// The uncompressed V2 cookie (HdrHistogram's encoding; the compressed one is refused).
const V2_COOKIE: u32 = 0x1c84_9313;
/// Its header: cookie, payload length, normalizing offset, digits (4 bytes each), lowest
/// and highest trackable value (8 each), the integer-to-double ratio (8).
const V2_HEADER: usize = 40;
/// Largest bounds accepted (ours are 2 digits, at most 6e10): the counts array the crate
/// allocates from them stays under a megabyte.
const MAX_DIGITS: u32 = 3;
const MAX_HIGHEST: u64 = 1 << 40;

/// Checks a V2 header before the crate allocates by it: its payload length and bounds come
/// from the peer (the native_response fuzz target made it allocate gigabytes without this).
fn check_header(b: &[u8]) -> Result<(), HistogramError> {
    let field = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let wide = |at: usize| (u64::from(field(at)) << 32) | u64::from(field(at + 4));
    if b.len() < V2_HEADER {
        return Err(HistogramError::ShortHeader { len: b.len() });
    }
    if field(0) != V2_COOKIE {
        return Err(HistogramError::NotV2 { cookie: field(0) });
    }
    if field(4) as usize > b.len() - V2_HEADER {
        return Err(HistogramError::ShortPayload {
            declared: field(4),
            present: b.len() - V2_HEADER,
        });
    }
    let (digits, lowest, highest) = (field(12), wide(16), wide(24));
    if digits > MAX_DIGITS || lowest < 1 || highest > MAX_HIGHEST || lowest > highest {
        return Err(HistogramError::Bounds {
            digits,
            lowest,
            highest,
        });
    }
    Ok(())
}

/// Largest encoded histogram a client accepts (a full one is ~30 KiB).
const MAX_ENCODED: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_subtracts() {
        let mut a = Distribution::latency();
        for v in [1_000, 20_000, 300_000, 4_000_000] {
            a.record(v);
        }
        let before = a.clone();
        a.record(50_000);
        let back = Distribution::decode(&a.encode_histogram(), a.sum).unwrap();
        assert_eq!(back.count_recorded(), 5);
        assert_eq!(back.sum, a.sum);
        let new = back.since(&before);
        assert_eq!(new.count_recorded(), 1);
        assert_eq!(new.sum, 50_000);
        assert!(new.hist.equivalent(new.quantile(0.5), 50_000));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Distribution::decode(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 0).is_err());
        assert!(Distribution::decode(&[], 0).is_err());
    }

    #[test]
    fn hostile_headers_are_refused_before_anything_is_allocated() {
        let good = Distribution::latency().encode_histogram();
        let patched = |at: usize, bytes: &[u8]| {
            let mut b = good.clone();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            b
        };
        let bounds = |e: &HistogramError| matches!(e, HistogramError::Bounds { .. });
        for (what, b, expected) in [
            (
                "payload length",
                patched(4, &u32::MAX.to_be_bytes()),
                (|e| matches!(e, HistogramError::ShortPayload { .. }))
                    as fn(&HistogramError) -> bool,
            ),
            ("digits", patched(12, &5u32.to_be_bytes()), bounds),
            ("highest", patched(24, &u64::MAX.to_be_bytes()), bounds),
            ("lowest", patched(16, &0u64.to_be_bytes()), bounds),
            (
                "compressed",
                patched(0, &0x1c84_9314u32.to_be_bytes()),
                |e| {
                    matches!(
                        e,
                        HistogramError::NotV2 {
                            cookie: 0x1c84_9314
                        }
                    )
                },
            ),
        ] {
            let err = Distribution::decode(&b, 0).unwrap_err();
            assert!(expected(&err), "{what}: {err}");
        }
        assert!(Distribution::decode(&good, 0).is_ok());
    }
}
