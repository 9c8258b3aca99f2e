//! libFuzzer entry of the `footer` target (`just fuzz target=footer`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::engine::footer(data));
