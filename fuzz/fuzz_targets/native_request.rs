//! A native request frame body: header, then the body of its API (PROTOCOL.md).
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardlog::protocol::{ApiKey, Request, WireReader};

fuzz_target!(|data: &[u8]| {
    let frame = bytes::Bytes::copy_from_slice(data);
    let mut r = WireReader::from_bytes(&frame);
    let Ok(header) = Request::decode_header(&mut r) else {
        return;
    };
    if let Some(key) = ApiKey::from_i16(header.api_key) {
        if let Ok(request) = Request::decode_body(key, &mut r) {
            // What decodes re-encodes to a frame that decodes to the same request.
            let again = request.encode_frame(header.correlation_id);
            let body = bytes::Bytes::copy_from_slice(&again[4..]);
            let mut r = WireReader::from_bytes(&body);
            Request::decode_header(&mut r).unwrap();
            assert_eq!(Request::decode_body(key, &mut r).unwrap(), request);
        }
    }
});
