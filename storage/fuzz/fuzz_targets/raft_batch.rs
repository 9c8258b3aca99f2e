//! libFuzzer entry of the `raft_batch` target (`just fuzz target=raft_batch`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::server::raft_batch(data));
