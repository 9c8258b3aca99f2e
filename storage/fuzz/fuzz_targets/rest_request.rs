//! libFuzzer entry of the `rest_request` target (`just fuzz target=rest_request`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::server::rest_request(data));
