//! libFuzzer entry of the `backup_read` target (`just fuzz target=backup_read`): the body
//! must not panic on any input.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_fuzz::backup::backup_read(data));
