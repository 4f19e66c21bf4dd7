//! Every input a fuzz target ever failed on (`fuzz/regressions/TARGET/`, one file each,
//! named after what it found) goes through the same entry point again, on stable Rust,
//! with the allocator watched: the findings so far were requests for more memory than the
//! input could hold, which libFuzzer's `-malloc_limit_mb` caught and a plain run would not.

mod watch;

use std::path::{Path, PathBuf};

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != ".gitkeep"))
        .collect();
    files.sort();
    files
}

fn replay(target: &str, entry: fn(&[u8])) -> usize {
    let files = regressions(target);
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let usage = watch::measure(|| entry(&bytes));
        eprintln!("{target}: {}: {usage:?}", file.display());
        let budget = watch::budget(bytes.len());
        assert!(
            usage.largest <= budget && usage.peak <= budget,
            "{}: {usage:?} for {} bytes of input (budget {budget})",
            file.display(),
            bytes.len()
        );
    }
    files.len()
}

#[test]
fn perf_data_regressions() {
    let n = replay("perf_data", cpiflame_hostile::perf_data);
    assert!(n >= 1, "the EVENT_DESC finding is kept");
}

#[test]
fn sample_record_regressions() {
    replay("sample_record", cpiflame_hostile::sample_record);
}

#[test]
fn event_specs_regressions() {
    replay("event_specs", cpiflame_hostile::event_specs);
}

#[test]
fn folded_regressions() {
    replay("folded", cpiflame_hostile::folded);
}

#[test]
fn elf_image_regressions() {
    let n = replay("elf_image", cpiflame_hostile::elf_image);
    assert!(n >= 1, "the compressed-section finding is kept");
}
