//! A Kafka request frame body for every API and version the Kafka listener advertises: the
//! header and body decoders it runs (the kafka-protocol crate's).
#![no_main]
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;
use libfuzzer_sys::fuzz_target;
use shardlog::kafka::ADVERTISED;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let versions: Vec<(ApiKey, i16)> = ADVERTISED
        .iter()
        .flat_map(|&(k, min, max)| (min..=max).map(move |v| (k, v)))
        .collect();
    let (key, version) = versions[selector as usize % versions.len()];
    let mut buf = bytes::Bytes::copy_from_slice(rest);
    if RequestHeader::decode(&mut buf, key.request_header_version(version)).is_ok() {
        let _ = RequestKind::decode(key, &mut buf, version);
    }
});
