//! Record batches as a producer or a segment file gives them: splitting, validation, and
//! the records (decompressed for compressed batches).
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardlog::format::batch::{split_batches, validate, RecordsSection};

fuzz_target!(|data: &[u8]| {
    if let Ok(batches) = split_batches(data) {
        for (start, h) in batches {
            let bytes = &data[start..start + h.size()];
            if let Ok(section) = RecordsSection::of(bytes, &h) {
                let _ = section.decode();
            }
        }
    }
    if let Ok((h, summary)) = validate(data) {
        assert!(summary.max_offset_delta <= i32::MAX as i64);
        assert_eq!(h.size(), data.len());
    }
});
