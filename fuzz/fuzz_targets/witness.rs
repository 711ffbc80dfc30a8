#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hearth_core::fuzzing::witness(data));
