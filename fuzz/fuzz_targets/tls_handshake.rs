//! See `shardlog_fuzz::tls_handshake` (fuzz/src/lib.rs) for what this target checks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardlog_fuzz::tls_handshake(data));
