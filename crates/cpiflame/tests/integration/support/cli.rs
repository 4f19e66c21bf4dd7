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
