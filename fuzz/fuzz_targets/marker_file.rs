#![no_main]
// See cpiflame_hostile::marker_file for what this feeds and checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| cpiflame_hostile::marker_file(data));
