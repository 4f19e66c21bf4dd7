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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    regressions_in(&root, target)
}

/// The inputs in `root/target`, checked: there is at least one, and each is described.
fn regressions_in(root: &Path, target: &str) -> Vec<PathBuf> {
    let dir = root.join(target);
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
    let alone = watch::alone();
    let files = regressions(target);
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let usage = watch::measure(&alone, || entry(&bytes));
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
fn tracing_data_regressions() {
    let n = replay("tracing_data", cpiflame_hostile::tracing_data);
    assert!(n >= 1, "real tracing data is kept");
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
fn perf_script_regressions() {
    let n = replay("perf_script", cpiflame_hostile::perf_script);
    assert!(n >= 1, "real perf script output is kept");
}

#[test]
fn elf_image_regressions() {
    let n = replay("elf_image", cpiflame_hostile::elf_image);
    assert!(n >= 1, "the compressed-section finding is kept");
}

#[test]
fn symbol_cache_regressions() {
    let n = replay("symbol_cache", cpiflame_hostile::symbol_cache_entry);
    assert!(n >= 1, "the seed entries are kept");
}

#[test]
fn jitdump_regressions() {
    let n = replay("jitdump", cpiflame_hostile::jitdump);
    assert!(n >= 1, "real dumps are kept");
}

#[test]
fn marker_file_regressions() {
    let n = replay("marker_file", cpiflame_hostile::marker_file);
    assert!(n >= 1, "a real marker file is kept");
}

/// A scratch regressions root holding `target` with these files.
fn scratch_root(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("cpiflame-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("target")).unwrap();
    for (file, text) in files {
        std::fs::write(root.join("target").join(file), text).unwrap();
    }
    root
}

#[test]
#[should_panic(expected = "no input to replay")]
fn a_replay_of_an_empty_folder_fails() {
    let root = scratch_root("empty", &[("README.md", "nothing yet"), (".gitkeep", "")]);
    regressions_in(&root, "target");
}

#[test]
#[should_panic(expected = "the regression inputs of fuzz target")]
fn a_replay_of_a_missing_folder_fails() {
    let root = scratch_root("missing", &[]);
    regressions_in(&root, "no-such-target");
}

#[test]
#[should_panic(expected = "is not described")]
fn a_replay_of_an_undescribed_input_fails() {
    let root = scratch_root(
        "undescribed",
        &[
            ("README.md", "- `known`: a file"),
            ("known", "x"),
            ("stray", "y"),
        ],
    );
    regressions_in(&root, "target");
}

#[test]
fn a_described_input_is_replayed() {
    let root = scratch_root(
        "described",
        &[("README.md", "- `known`: a file"), ("known", "x")],
    );
    assert_eq!(regressions_in(&root, "target").len(), 1);
}
