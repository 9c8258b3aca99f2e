//! libFuzzer entry of the `manifest_edit` target (`just fuzz target=manifest_edit`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::engine::manifest_edit(data));
