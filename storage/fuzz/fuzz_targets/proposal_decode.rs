//! libFuzzer entry of the `proposal_decode` target (`just fuzz target=proposal_decode`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::raft::proposal_decode(data));
