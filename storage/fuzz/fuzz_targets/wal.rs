//! libFuzzer entry of the `wal` target (`just fuzz target=wal`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::engine::wal(data));
