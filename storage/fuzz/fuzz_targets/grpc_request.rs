//! libFuzzer entry of the `grpc_request` target (`just fuzz target=grpc_request`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::server::grpc_request(data));
