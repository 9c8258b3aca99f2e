#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_server_fuzz::grpc_request(data));
