#![no_main]
// See cpiflame_hostile::sample_record for what this feeds and checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| cpiflame_hostile::sample_record(data));
