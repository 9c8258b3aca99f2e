//! libFuzzer entry of the `block` target (`just fuzz target=block`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::engine::block(data));
