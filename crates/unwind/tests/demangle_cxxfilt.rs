//! C++ names as `c++filt` gives them: every mangled (`_Z`) symbol of real C++ binaries (a
//! `g++ -O2` build of the project's C++ fixture and the system's libstdc++, plus any files
//! named in `CPIFLAME_DEMANGLE_EXTRA`, colon-separated) is demangled by cpiflame and by
//! `c++filt` (one run over all of them), and the two must agree once `c++filt`'s parameter
//! list and return type are cut off as cpiflame cuts them ([`strip_signature`]).
//!
//! `c++filt -i`: without it c++filt prints libstdc++'s abbreviations in full
//! (`std::basic_string<char, std::char_traits<char>, std::allocator<char> >` for
//! `std::string`), which neither perf nor `__cxa_demangle` do. The cut itself is checked
//! against libiberty's own (`c++filt -i -p`) wherever that cuts (it leaves special names,
//! `transaction clone for f(int)`, whole).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cpiflame_unwind::{demangle, strip_signature};
use object::{Object, ObjectSymbol};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `g++ -O2 -g` of fixtures/workloads/mangled.cpp into a scratch directory.
fn build_fixture(dir: &Path) -> Result<PathBuf, String> {
    let out = dir.join("mangled");
    let status = Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&out)
        .arg(repo_root().join("fixtures/workloads/mangled.cpp"))
        .status()
        .map_err(|e| format!("g++: {e}"))?;
    status
        .success()
        .then_some(out)
        .ok_or_else(|| format!("g++ failed: {status}"))
}

/// The libstdc++ that g++ links against.
fn libstdcxx() -> Result<PathBuf, String> {
    let out = Command::new("g++")
        .arg("-print-file-name=libstdc++.so.6")
        .output()
        .map_err(|e| format!("g++: {e}"))?;
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    path.canonicalize()
        .map_err(|e| format!("libstdc++.so.6 ({}): {e}", path.display()))
}

/// Every `_Z` name of the symbol tables (static and dynamic) of `path`.
fn mangled_symbols(path: &Path, into: &mut BTreeSet<String>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = object::File::parse(&*bytes).unwrap();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        if let Ok(name) = sym.name() {
            // `@GLIBCXX_3.4` version suffixes of dynamic symbols are not part of the name.
            let name = name.split('@').next().unwrap_or(name);
            if name.starts_with("_Z") {
                into.insert(name.to_string());
            }
        }
    }
}

/// `c++filt`'s output for each of `names`, in order (one run, names on standard input).
fn cxxfilt(names: &[&String], args: &[&str]) -> Result<Vec<String>, String> {
    let mut child = Command::new("c++filt")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("c++filt: {e}"))?;
    let mut stdin = child.stdin.take().unwrap();
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    writer.join().unwrap().map_err(|e| e.to_string())?;
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    if lines.len() != names.len() {
        return Err(format!(
            "c++filt gave {} lines for {} names",
            lines.len(),
            names.len()
        ));
    }
    Ok(lines)
}

#[test]
fn every_cpp_symbol_matches_cxxfilt() {
    let dir = std::env::temp_dir().join(format!("cpiflame-demangle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let binaries = match build_fixture(&dir).and_then(|f| Ok(vec![f, libstdcxx()?])) {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            cpiflame_testkit::unavailable(format!("C++ binaries to read: {e}"));
            return;
        }
    };
    let extra = std::env::var("CPIFLAME_DEMANGLE_EXTRA").unwrap_or_default();
    let mut names = BTreeSet::new();
    for path in binaries.iter().cloned().chain(
        extra
            .split(':')
            .filter(|s| !s.is_empty())
            .map(PathBuf::from),
    ) {
        let before = names.len();
        mangled_symbols(&path, &mut names);
        eprintln!(
            "{}: {} new _Z symbols",
            path.display(),
            names.len() - before
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<&String> = names.iter().collect();
    let filtered = match cxxfilt(&names, &["-i"]) {
        Ok(f) => f,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("c++filt: {e}"));
            return;
        }
    };
    let mismatches: Vec<String> = names
        .iter()
        .zip(&filtered)
        .filter_map(|(name, full)| {
            let ours = demangle(name);
            let theirs = strip_signature(full);
            (ours != theirs).then(|| format!("{name}\n  ours:     {ours}\n  c++filt:  {theirs}"))
        })
        .collect();
    eprintln!(
        "{} symbols compared with c++filt, {} mismatches",
        names.len(),
        mismatches.len()
    );
    // libiberty's own cut (`c++filt -p`), for how far [`strip_signature`] agrees with it.
    let no_params = cxxfilt(&names, &["-i", "-p"]).unwrap();
    let differ: Vec<String> = names
        .iter()
        .zip(&filtered)
        .zip(&no_params)
        .filter(|((_, full), p)| full != p && strip_signature(full) != **p)
        .map(|((n, full), p)| format!("{n}\n  {full}\n  {p}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} names are cut unlike c++filt -p, e.g.:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
    assert!(names.len() > 1000, "too few symbols read: {}", names.len());
    assert!(
        mismatches.is_empty(),
        "{} of {} names differ from c++filt's, e.g.:\n{}",
        mismatches.len(),
        names.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}
