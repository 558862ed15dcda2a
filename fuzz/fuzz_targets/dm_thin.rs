#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| diskalign_fuzz::entries::dm_thin(data));
