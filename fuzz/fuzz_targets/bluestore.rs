#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| diskalign_fuzz::entries::bluestore_read(data));
