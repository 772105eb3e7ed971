//! Files and records shardlog reads back from disk: offsets-log records, producer
//! snapshots, topic metadata and checkpoints' text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardlog::groups::records::OffsetRecord;
use shardlog::log::producer_state::ProducerState;

fuzz_target!(|data: &[u8]| {
    let split = data.first().copied().unwrap_or(0) as usize;
    let rest = data.get(1..).unwrap_or_default();
    let (key, value) = rest.split_at(split.min(rest.len()));
    if let Some(r) = OffsetRecord::decode(key, (!value.is_empty()).then_some(value)) {
        assert_eq!(
            OffsetRecord::decode(&r.key(), r.value().as_deref()),
            Some(r)
        );
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ProducerState::decode(text);
        let _ = shardlog::server::topics::TopicMeta::decode_file(text, 2);
    }
});
