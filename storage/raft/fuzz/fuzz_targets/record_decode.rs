#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_raft_fuzz::record_decode(data));
