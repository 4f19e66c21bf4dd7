#![no_main]
// See cpiflame_hostile::symbol_cache_entry for what this feeds and checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| cpiflame_hostile::symbol_cache_entry(data));
