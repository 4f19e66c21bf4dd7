//! Every input a fuzz target ever failed on (`fuzz/regressions/TARGET/`, one file each,
//! named after what it found) goes through the same entry point again, on stable Rust,
//! with the allocator watched: the findings so far were requests for more memory than the
//! input could hold, which libFuzzer's `-malloc_limit_mb` caught and a plain run would not.
//! Targets without findings keep valid hand-made inputs there, so that no replay passes on
//! an empty folder: each replay fails unless it replayed at least one file, and each file
//! must be named in its folder's README.md, which says what it is and how it was made.

mod watch;

use std::path::{Path, PathBuf};

/// Not inputs: the folder's provenance notes, and git's placeholder.
const NOT_INPUTS: [&str; 2] = ["README.md", ".gitkeep"];

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the regression inputs of fuzz target {target})",
                dir.display()
            )
        })
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| !NOT_INPUTS.iter().any(|x| n == *x))
        })
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "{}: no input to replay for fuzz target {target} (only {NOT_INPUTS:?} or nothing); \
         a replay of nothing would pass without testing anything",
        dir.display()
    );
    let readme = dir.join("README.md");
    let notes = std::fs::read_to_string(&readme).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (it says where each input came from)",
            readme.display()
        )
    });
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(
            notes.contains(&format!("`{name}`")),
            "{}: `{name}` is not described (what it is, how it was made)",
            readme.display()
        );
    }
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
