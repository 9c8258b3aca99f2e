//! libFuzzer entry of the `record_decode` target (`just fuzz target=record_decode`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::raft::record_decode(data));
