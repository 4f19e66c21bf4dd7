//! Finding binaries: `--symfs`, and what happens when a recorded binary is gone or has been
//! replaced by another build. A missing or mismatched binary degrades its frames to
//! `module+0xOFFSET` with one warning line and a count; it never gives a wrong name and never
//! fails the run.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{perf_works, shared_fixtures};

fn cpiflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(args)
        .env("HOME", "/nonexistent") // no perf build-id cache to fall back on
        .output()
        .unwrap()
}

struct Setup {
    dir: PathBuf,
    binary: PathBuf,
    data: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Copies the threads fixture to a folder of its own and records it there.
fn record_copy(name: &str) -> Option<Setup> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return None;
    }
    let fixtures = shared_fixtures().expect("fixtures build");
    let dir = std::env::temp_dir().join(format!("cpiflame-symbols-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let binary = dir.join("bin").join("threads");
    std::fs::copy(&fixtures.threads, &binary).unwrap();
    let data = dir.join("perf.data");
    // -N: keep perf from caching the binary in ~/.debug, which would hide its removal.
    let status = Command::new("perf")
        .args([
            "record",
            "-q",
            "-N",
            "-e",
            "cpu-clock",
            "--call-graph",
            "dwarf",
            "-F",
            "500",
            "-o",
        ])
        .arg(&data)
        .arg(&binary)
        .arg("0.2")
        .status()
        .unwrap();
    assert!(status.success());
    Some(Setup { dir, binary, data })
}

fn fold(data: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["fold", data.to_str().unwrap(), "--no-kernel"];
    args.extend(extra);
    let out = cpiflame(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "cpiflame fold failed: {stderr}");
    (String::from_utf8(out.stdout).unwrap(), stderr)
}

/// The warning line about `binary`, which must be the only one naming it.
fn warning_for(stderr: &str, binary: &Path) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(binary.to_str().unwrap()))
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "one warning line for {}: {stderr}",
        binary.display()
    );
    lines[0].to_string()
}

#[test]
fn missing_binary_degrades_to_offsets_and_symfs_finds_it() {
    let Some(s) = record_copy("symfs") else {
        return;
    };
    let (named, _) = fold(&s.data, &[]);
    assert!(named.contains(";worker_heavy "), "{named}");

    // Move the binary under a symfs folder, at its recorded path.
    let symfs = s.dir.join("symfs");
    let moved = symfs.join(s.binary.strip_prefix("/").unwrap());
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&s.binary, &moved).unwrap();

    let (degraded, stderr) = fold(&s.data, &[]);
    let warning = warning_for(&stderr, &s.binary);
    assert!(
        warning.contains("not found") && warning.contains("frames"),
        "{warning}"
    );
    assert!(
        !degraded.contains("worker_heavy"),
        "no name without the binary"
    );
    assert!(degraded.contains(";threads+0x"), "{degraded}");
    // Same stacks, same counts: only the names of the binary's frames changed.
    let total = |folded: &str| -> u64 {
        folded
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(total(&degraded), total(&named));

    let (found, stderr) = fold(&s.data, &["--symfs", symfs.to_str().unwrap()]);
    assert_eq!(found, named, "--symfs gives back the names: {stderr}");
}

#[test]
fn replaced_binary_is_never_used_for_names() {
    let Some(s) = record_copy("buildid") else {
        return;
    };
    let fixtures = shared_fixtures().unwrap();
    // Another program at the recorded path: its build id differs from the recorded one.
    std::fs::copy(&fixtures.mangled, &s.binary).unwrap();
    let (folded, stderr) = fold(&s.data, &[]);
    let warning = warning_for(&stderr, &s.binary);
    assert!(warning.contains("build id does not match"), "{warning}");
    assert!(folded.contains(";threads+0x"), "{folded}");
    // Names only the wrong binary has. Frames are compared whole: libc's
    // `__libc_start_call_main` is a right name wherever the unwinder reaches it.
    let frames: Vec<&str> = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .flat_map(|(stack, _)| stack.split(';'))
        .collect();
    for frame in frames {
        assert!(
            !frame.contains("cpiflame::fixtures")
                && !frame.contains("worker_heavy")
                && frame != "main",
            "no name from the wrong binary ({frame}): {folded}"
        );
    }
}
