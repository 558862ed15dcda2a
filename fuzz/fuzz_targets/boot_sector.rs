#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| diskalign_fuzz::entries::boot_sector(data));
