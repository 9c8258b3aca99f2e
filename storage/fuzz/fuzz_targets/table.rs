//! libFuzzer entry of the `table` target (`just fuzz target=table`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::engine::table(data));
