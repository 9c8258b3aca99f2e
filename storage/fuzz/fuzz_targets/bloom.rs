//! libFuzzer entry of the `bloom` target (`just fuzz target=bloom`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::engine::bloom(data));
