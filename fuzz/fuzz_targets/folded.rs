#![no_main]
// See cpiflame_hostile::folded for what this feeds and checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| cpiflame_hostile::folded(data));
