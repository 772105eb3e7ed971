//! See `shardlog_fuzz::dump_log_files` (fuzz/src/lib.rs) for what this target checks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| shardlog_fuzz::dump_log_files(data));
