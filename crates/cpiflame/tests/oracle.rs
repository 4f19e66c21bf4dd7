//! Unwinding and symbolization against perf: fixture workloads (C, C++, Rust legacy and v0
//! mangling; threads, recursion, inlined functions) are recorded with
//! `perf record -e cpu-clock,task-clock --call-graph dwarf`, and every sample's stack as
//! cpiflame resolves it is compared with the stack `perf script` prints for the same sample
//! (same thread, time and event). For the frames of the workload's own binary, at least 99% of
//! samples must agree exactly.

mod support;

use std::collections::HashMap;
use std::path::Path;

use cpiflame_perf_data::PerfData;
use cpiflame_pipeline::{event_names, walk_samples};
use cpiflame_unwind::{FrameKind, Options, Resolver};

use support::{perf_available, perf_record_with, perf_script_samples, shared_fixtures};

/// A sample's identity in both outputs.
type Key = (u32, u64, String);

/// Function names of the frames that belong to `module`, leaf first.
type Names = Vec<String>;

/// GCC names split-off copies of a function `foo.constprop.0`, `foo.cold`, `foo.isra.0`;
/// perf shows the symbol, cpiflame the DWARF name of the function (`foo`).
fn normalize(name: &str) -> String {
    let mut s = name.to_string();
    for suffix in [".constprop", ".isra", ".part", ".cold", ".lto_priv"] {
        if let Some(i) = s.find(suffix) {
            s.truncate(i);
        }
    }
    s
}

/// Which frames to compare.
#[derive(Clone, Copy)]
enum Scope<'a> {
    /// Frames of the workload's own binary.
    Binary(&'a Path),
    /// Every frame: the binary, its libraries, the dynamic loader, the kernel.
    WholeStack,
}

/// perf's stacks, restricted to the frames in `scope`.
fn perf_stacks(data: &Path, scope: Scope<'_>) -> HashMap<Key, Names> {
    let samples = perf_script_samples(data).expect("perf script");
    let mut out = HashMap::new();
    for s in samples {
        // perf prints inlined frames without a DSO: they belong to the non-inlined frame at
        // the same address, or (perf prints some outer frames only as "inlined") to the frame
        // before them.
        let mut dsos: Vec<&str> = Vec::with_capacity(s.frames.len());
        for (i, f) in s.frames.iter().enumerate() {
            let dso = if f.inlined {
                s.frames
                    .iter()
                    .find(|g| g.addr == f.addr && !g.inlined)
                    .map(|g| g.dso.as_str())
                    .or_else(|| i.checked_sub(1).map(|j| dsos[j]))
                    .unwrap_or("")
            } else {
                f.dso.as_str()
            };
            dsos.push(dso);
        }
        let names: Names = s
            .frames
            .iter()
            .zip(&dsos)
            .filter(|(_, dso)| match scope {
                Scope::Binary(path) => **dso == path.to_string_lossy(),
                Scope::WholeStack => true,
            })
            .map(|(f, _)| normalize(&f.symbol))
            .collect();
        out.insert((s.tid, s.time_ns, s.event.clone()), names);
    }
    out
}

/// cpiflame's stacks, restricted to the frames in `scope`.
fn our_stacks(data: &Path, scope: Scope<'_>) -> HashMap<Key, Names> {
    let file = PerfData::open(data).expect("open");
    let names = event_names(&file);
    let mut resolver = Resolver::new(&file.meta, Options::from_env());
    resolver.finish_names();
    let mut out = HashMap::new();
    walk_samples(&file, &mut resolver, |sample, entries, resolver| {
        let stack: Names = entries
            .iter()
            .map(|e| resolver.frame(e.frame))
            .filter(|f| match scope {
                Scope::Binary(path) => {
                    f.kind != FrameKind::Kernel
                        && *f.module == *path.file_name().unwrap().to_string_lossy()
                }
                Scope::WholeStack => true,
            })
            .map(|f| normalize(&f.name))
            .collect();
        let key = (
            sample.tid.unwrap_or(-1) as u32,
            sample.time.unwrap_or(0),
            names[sample.attr].clone(),
        );
        out.insert(key, stack);
    })
    .expect("walk");
    out
}

/// Records `binary` and compares the two unwinders sample by sample, on the frames of the
/// binary and, with `whole_stack`, on every frame too.
fn compare(binary: &Path, args: &[&str], whole_stack: bool) {
    let dir = std::env::temp_dir().join(format!(
        "cpiflame-oracle-{}-{}",
        std::process::id(),
        binary.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("perf.data");
    let mut cmd: Vec<&str> = vec![binary.to_str().unwrap()];
    cmd.extend(args);
    perf_record_with(
        &data,
        "cpu-clock,task-clock",
        &["--call-graph", "dwarf", "-F", "1000"],
        &cmd,
    )
    .expect("perf record");
    check(&data, binary, Scope::Binary(binary));
    if whole_stack {
        check(&data, binary, Scope::WholeStack);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn check(data: &Path, binary: &Path, scope: Scope<'_>) {
    let theirs = perf_stacks(data, scope);
    let ours = our_stacks(data, scope);
    let mut compared = 0;
    let mut agreed = 0;
    let mut mismatches = Vec::new();
    for (key, names) in &theirs {
        if names.is_empty() {
            continue;
        }
        compared += 1;
        match ours.get(key) {
            Some(o) if o == names => agreed += 1,
            o => {
                if mismatches.len() < 5 {
                    mismatches.push(format!("{key:?}\n  perf: {names:?}\n  ours: {o:?}"));
                }
            }
        }
    }
    let name = match scope {
        Scope::Binary(_) => format!("{}", binary.display()),
        Scope::WholeStack => format!("{} (whole stacks)", binary.display()),
    };
    assert!(
        compared >= 200,
        "{name}: only {compared} samples in the workload"
    );
    let share = agreed as f64 / compared as f64;
    eprintln!(
        "{name}: {agreed} of {compared} samples agree with perf script ({:.2}%)",
        share * 100.0
    );
    assert!(
        share >= 0.99,
        "{name}: {agreed} of {compared} samples agree with perf script ({:.2}%); first differences:\n{}",
        share * 100.0,
        mismatches.join("\n")
    );
}

fn fixtures_or_skip() -> Option<&'static support::Fixtures> {
    if !perf_available() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return None;
    }
    Some(shared_fixtures().expect("fixtures build"))
}

#[test]
fn c_threads_recursion_and_inlining_match_perf() {
    if let Some(f) = fixtures_or_skip() {
        compare(&f.threads, &["0.5"], true);
    }
}

#[test]
fn cxx_demangled_names_match_perf() {
    if let Some(f) = fixtures_or_skip() {
        compare(&f.mangled, &["0.5"], false);
    }
}

#[test]
fn rust_legacy_mangling_matches_perf() {
    if let Some(f) = fixtures_or_skip() {
        compare(&f.rust_workload, &["0.5"], false);
    }
}

#[test]
fn rust_v0_mangling_matches_perf() {
    if let Some(f) = fixtures_or_skip() {
        compare(&f.rust_workload_v0, &["0.5"], false);
    }
}
