//! Golden files: a test's deterministic output compared byte for byte with a file kept in the
//! repository, with a switch to rewrite ("bless") the file after an intended change.
//!
//! `CPIFLAME_BLESS=1` makes [`assert_golden`] write `actual` to the file and pass; any other
//! value, or none, compares. A failure names the file, the first line that differs (both
//! versions of it) and the command that blesses. Blessing is never automatic: the rewritten
//! files are reviewed as a diff like any other change.

use std::path::Path;

/// The environment variable that rewrites golden files instead of comparing with them.
pub const BLESS_VAR: &str = "CPIFLAME_BLESS";

/// Whether a value of [`BLESS_VAR`] asks for blessing: exactly `1`.
pub fn is_bless(value: Option<&str>) -> bool {
    value == Some("1")
}

/// Compares `actual` with the golden file at `path` (or, under `CPIFLAME_BLESS=1`, writes it
/// there, creating missing directories). Panics with a message saying how to bless.
#[track_caller]
pub fn assert_golden(path: impl AsRef<Path>, actual: &str) {
    let path = path.as_ref();
    let bless = std::env::var(BLESS_VAR).ok();
    if is_bless(bless.as_deref()) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        }
        std::fs::write(path, actual)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let how = bless_command();
    let expected = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => panic!(
            "cannot read golden file {}: {e}\nto create it, run `{how}` and review the new file",
            path.display()
        ),
    };
    if let Some(difference) = compare(&expected, actual) {
        panic!(
            "{} differs from the output, {difference}\n\
             If the change is intended, rewrite the golden file with\n`{how}`\nand review the diff.",
            path.display()
        );
    }
}

/// Where `actual` first differs from `expected` (None when equal), said in one or a few
/// lines: the line number and both versions of that line.
pub fn compare(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let mut e = expected.split_inclusive('\n');
    let mut a = actual.split_inclusive('\n');
    let mut line = 1;
    loop {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => line += 1,
            (Some(x), Some(y)) => {
                return Some(format!(
                    "first at line {line}:\n  expected: {x:?}\n  actual:   {y:?}"
                ))
            }
            (Some(x), None) => {
                return Some(format!(
                    "the output ends before line {line}:\n  expected: {x:?}"
                ))
            }
            (None, Some(y)) => {
                return Some(format!(
                    "the output goes on after the file's end, at line {line}:\n  actual:   {y:?}"
                ))
            }
            (None, None) => unreachable!("equal strings returned above"),
        }
    }
}

/// The command that blesses the running test: its package (`CARGO_PKG_NAME`, which cargo
/// sets when it runs tests), its test target (the executable's name less cargo's hash) and
/// its name (libtest names each test's thread after the test).
fn bless_command() -> String {
    let mut how = format!("{BLESS_VAR}=1 cargo test");
    let pkg = std::env::var("CARGO_PKG_NAME").ok();
    if let Some(pkg) = &pkg {
        how.push_str(&format!(" -p {pkg}"));
    }
    let exe = std::env::current_exe().ok();
    let target = exe
        .as_deref()
        .and_then(|p| p.file_name()?.to_str())
        .and_then(|name| name.rsplit_once('-'))
        .map(|(stem, _hash)| stem.to_string());
    match (target, &pkg) {
        (Some(t), Some(pkg)) if t == pkg.replace('-', "_") => how.push_str(" --lib"),
        (Some(t), _) => how.push_str(&format!(" --test {t}")),
        (None, _) => {}
    }
    if let Some(name) = std::thread::current().name().filter(|n| *n != "main") {
        how.push_str(&format!(" -- --exact {name}"));
    }
    how
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_do_not_differ() {
        assert_eq!(compare("a\nb\n", "a\nb\n"), None);
    }

    #[test]
    fn the_first_different_line_is_named_with_both_versions() {
        assert_eq!(
            compare("a\nb\nc\n", "a\nB\nc\n").unwrap(),
            "first at line 2:\n  expected: \"b\\n\"\n  actual:   \"B\\n\""
        );
    }

    #[test]
    fn a_missing_final_newline_is_a_difference() {
        assert_eq!(
            compare("a\n", "a").unwrap(),
            "first at line 1:\n  expected: \"a\\n\"\n  actual:   \"a\""
        );
    }

    #[test]
    fn shorter_and_longer_outputs_are_named() {
        assert!(compare("a\nb\n", "a\n")
            .unwrap()
            .starts_with("the output ends before line 2"));
        assert!(compare("a\n", "a\nb\n")
            .unwrap()
            .starts_with("the output goes on after the file's end, at line 2"));
    }

    #[test]
    fn only_1_blesses() {
        assert!(is_bless(Some("1")));
        for v in [None, Some(""), Some("0"), Some("true"), Some("yes")] {
            assert!(!is_bless(v), "{v:?}");
        }
    }

    #[test]
    fn a_failure_says_how_to_bless() {
        if is_bless(std::env::var(BLESS_VAR).ok().as_deref()) {
            return; // blessing would write the file instead of failing
        }
        let dir = crate::Dir::new("golden-selftest");
        let path = dir.path("expected.txt");
        std::fs::write(&path, "one\ntwo\n").unwrap();
        assert_golden(&path, "one\ntwo\n");
        let p = path.clone();
        let err = std::panic::catch_unwind(move || assert_golden(&p, "one\n2\n")).unwrap_err();
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("first at line 2"), "{msg}");
        assert!(msg.contains("CPIFLAME_BLESS=1 cargo test"), "{msg}");
        assert!(msg.contains(" --lib "), "{msg}");
        assert!(msg.contains("a_failure_says_how_to_bless"), "{msg}");
    }
}
