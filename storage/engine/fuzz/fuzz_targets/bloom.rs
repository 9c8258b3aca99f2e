//! Fuzzes `strata_engine::fuzzing::bloom`: it must not panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_engine::fuzzing::bloom(data));
