//! libFuzzer entry of the `message_decode` target (`just fuzz target=message_decode`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::raft::message_decode(data));
