//! Kafka Fetch replies without copying their records: the kafka-protocol encoder takes each
//! partition's records as one buffer, so a large records field is encoded as a 16-byte
//! placeholder (a per-response random prefix and the records' index), and the encoded
//! response is then cut at each placeholder and chained with the records' own slices (the
//! page cache's pages). The reply goes out as one vectored write of header parts and
//! cached pages, as the native protocol's does.
//!
//! A records field is `NULLABLE_BYTES` (int32 length) before Fetch v12 and
//! `COMPACT_NULLABLE_BYTES` (unsigned varint length + 1) from v12: the placeholder's length
//! field is replaced along with it.

use bytes::Bytes;

use super::wire_error::KafkaWireError;
use crate::io::chain::ByteChain;
use crate::protocol::frame::Frame;

/// Records smaller than this are copied into the response (a copy that small is cheaper
/// than the search and the extra slices).
pub const MIN_SPLICED: usize = 16 << 10;
const PREFIX: usize = 12;
const PLACEHOLDER: usize = PREFIX + 4;

/// The records of one response waiting to be spliced in, by placeholder index.
pub struct Splices {
    prefix: [u8; PREFIX],
    records: Vec<ByteChain>,
}

impl Default for Splices {
    fn default() -> Self {
        let mut prefix = [0u8; PREFIX];
        prefix.iter_mut().for_each(|b| *b = fastrand::u8(..));
        Splices {
            prefix,
            records: Vec::new(),
        }
    }
}

impl Splices {
    /// What to encode as `records`: the records themselves when small, else a placeholder
    /// that `frame` replaces with them.
    pub fn records_field(&mut self, records: ByteChain) -> Bytes {
        if records.len() < MIN_SPLICED {
            return records.to_bytes();
        }
        let mut placeholder = Vec::with_capacity(PLACEHOLDER);
        placeholder.extend_from_slice(&self.prefix);
        placeholder.extend_from_slice(&(self.records.len() as u32).to_be_bytes());
        self.records.push(records);
        Bytes::from(placeholder)
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The reply frame: `encoded` (size prefix included) with each placeholder and its
    /// length field replaced by the records' length field and slices.
    pub fn frame(self, mut encoded: Vec<u8>, flexible: bool) -> Result<Frame, KafkaWireError> {
        let cuts = self.find(&encoded, flexible)?;
        let old_field = length_field(PLACEHOLDER, flexible).len();
        let grown: usize = (self.records.iter())
            .map(|r| length_field(r.len(), flexible).len() + r.len())
            .sum();
        let size = encoded.len() - 4 - cuts.len() * (old_field + PLACEHOLDER) + grown;
        let size = i32::try_from(size).map_err(|_| KafkaWireError::TooLarge(size))?;
        encoded[..4].copy_from_slice(&size.to_be_bytes());
        let encoded = Bytes::from(encoded);
        let mut out = ByteChain::default();
        let mut at = 0;
        assert_eq!(
            cuts.len(),
            self.records.len(),
            "one placeholder per records field"
        );
        for (cut, records) in cuts.into_iter().zip(self.records) {
            out.push(encoded.slice(at..cut - old_field));
            out.push(Bytes::from(length_field(records.len(), flexible)));
            records.parts().iter().for_each(|p| out.push(p.clone()));
            at = cut + PLACEHOLDER;
        }
        out.push(encoded.slice(at..));
        assert_eq!(
            out.len(),
            size as usize + 4,
            "the size prefix counts the rest"
        );
        Ok(Frame::from(out))
    }

    /// Where each placeholder starts, in order, each checked: its index and the length
    /// field before it.
    fn find(&self, encoded: &[u8], flexible: bool) -> Result<Vec<usize>, KafkaWireError> {
        let finder = memchr::memmem::Finder::new(&self.prefix);
        let field = length_field(PLACEHOLDER, flexible);
        let mut cuts = Vec::with_capacity(self.records.len());
        let mut from = 0;
        for i in 0..self.records.len() {
            let at = from
                + finder
                    .find(&encoded[from..])
                    .ok_or(KafkaWireError::Placeholder {
                        index: i,
                        why: "not in the encoded response",
                    })?;
            let index = &encoded[at + PREFIX..at + PLACEHOLDER];
            let before = &encoded[at.saturating_sub(field.len())..at];
            if index != (i as u32).to_be_bytes() || before != field.as_slice() {
                return Err(KafkaWireError::Placeholder {
                    index: i,
                    why: "encoded unexpectedly",
                });
            }
            cuts.push(at);
            from = at + PLACEHOLDER;
        }
        Ok(cuts)
    }
}

/// A records field's length as encoded before its bytes.
fn length_field(len: usize, flexible: bool) -> Vec<u8> {
    if !flexible {
        return (len as i32).to_be_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(5);
    crate::format::varint::put_unsigned(&mut out, len as u64 + 1);
    out
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseKind, TopicName};
    use kafka_protocol::protocol::StrBytes;

    use super::*;

    fn chain(len: usize, seed: u8, parts: usize) -> ByteChain {
        let all: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect();
        let mut out = ByteChain::default();
        for piece in all.chunks(len.div_ceil(parts).max(1)) {
            out.push(Bytes::copy_from_slice(piece));
        }
        out
    }

    fn response(records: Vec<Bytes>) -> ResponseKind {
        let partitions = (records.into_iter().enumerate())
            .map(|(i, r)| {
                PartitionData::default()
                    .with_partition_index(i as i32)
                    .with_high_watermark(1000 + i as i64)
                    .with_records(Some(r))
            })
            .collect();
        let topic = FetchableTopicResponse::default()
            .with_topic(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(partitions);
        ResponseKind::Fetch(FetchResponse::default().with_responses(vec![topic]))
    }

    /// Spliced or copied, the bytes on the wire are the same, for every Fetch version we
    /// serve, with records small (copied) and large (spliced, up to a 3-byte varint).
    #[test]
    fn a_spliced_reply_is_byte_for_byte_the_copied_one() {
        let sizes = [100, MIN_SPLICED, 70_000, 3 << 20];
        for version in 4..=12 {
            let chains: Vec<ByteChain> = (sizes.iter().enumerate())
                .map(|(i, &n)| chain(n, i as u8, 1 + i * 3))
                .collect();
            let copied = response(chains.iter().map(ByteChain::to_bytes).collect());
            let copied = crate::kafka::codec::encode(ApiKey::Fetch, version, 9, &copied).unwrap();
            let mut splices = Splices::default();
            let fields = chains
                .into_iter()
                .map(|c| splices.records_field(c))
                .collect();
            let encoded =
                crate::kafka::codec::encode(ApiKey::Fetch, version, 9, &response(fields)).unwrap();
            let flexible = ApiKey::Fetch.response_header_version(version) >= 1;
            let frame = splices.frame(encoded, flexible).unwrap();
            assert!(
                frame.parts().len() > 4,
                "v{version}: the records are slices of their own"
            );
            assert_eq!(frame.to_vec(), copied, "Fetch v{version}");
        }
    }

    #[test]
    fn a_placeholder_missing_from_the_encoding_is_an_error_not_a_wrong_frame() {
        let mut splices = Splices::default();
        let _ = splices.records_field(chain(MIN_SPLICED, 1, 2));
        let encoded =
            crate::kafka::codec::encode(ApiKey::Fetch, 11, 1, &response(vec![Bytes::new()]))
                .unwrap();
        assert!(splices.frame(encoded, false).is_err());
    }
}
