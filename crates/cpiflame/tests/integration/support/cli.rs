//! Running the cpiflame binary under test.

use std::path::Path;
use std::process::{Command, Output};

/// `cpiflame ARGS...`, run to completion.
pub fn cpiflame(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(args)
        .output()
        .unwrap()
}

/// `cpiflame ARGS...` with `HOME` at `home` (perf's build-id cache is `$HOME/.debug`).
pub fn cpiflame_at_home(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap()
}

/// Standard output of a run that must have succeeded (its stderr in the failure message).
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "cpiflame failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `cpiflame record -o DATA ARGS...` is refused in one line (exit status 2) that contains
/// `says`, and writes no file.
pub fn refused_in_one_line(data: &Path, args: &[&str], says: &str) {
    let mut all = vec!["record", "-o", s(data)];
    all.extend(args);
    let out = cpiflame(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
    assert!(!data.exists());
}
