//! Unwinding and symbolization against perf: fixture workloads (C, C++, Rust legacy and v0
//! mangling; threads, recursion, inlined functions) are recorded with
//! `perf record -e cpu-clock,task-clock --call-graph dwarf`, and every sample's stack as
//! cpiflame resolves it is compared with the stack `perf script` prints for the same sample
//! (same thread, time and event). For the frames of the workload's own binary, at least 99% of
//! samples must agree exactly. Stacks sampled in a thread's first moments (glibc's `__clone3`
//! and `__clone` after the syscall, which no unwind info covers) are compared on both sides of
//! the syscall, from a recording by perf and one by `cpiflame record`.

use crate::support;

use std::collections::HashMap;
use std::path::Path;

use cpiflame_perf_data::PerfData;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::{event_names, walk_samples};
use cpiflame_unwind::{FrameKind, Resolver};

use support::{perf_record_with, perf_script_samples, perf_works, shared_fixtures, Dir};

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
    let mut resolver = Resolver::new(&file.meta, Environment::read().resolve_options());
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
    let dir = Dir::new(&format!(
        "oracle-{}",
        binary.file_name().unwrap().to_string_lossy()
    ));
    let data = dir.path("perf.data");
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
    drop(dir);
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
    if !perf_works() {
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

/// The names glibc's clone wrappers go by (perf prints the symbol `clone3`/`clone`, DWARF
/// names `__clone3`/`__clone`).
fn is_clone(name: &str) -> bool {
    matches!(name, "clone" | "__clone" | "clone3" | "__clone3")
}

/// A sample's thread and the names of its user frames, leaf first.
struct UserStack {
    tid: u32,
    names: Names,
}

/// perf's user frames of every sample, with perf's own made-up outer frames cut: outside a
/// clone wrapper perf sometimes goes on to one more frame, the word at the stack pointer,
/// which it prints as `[unknown]` (in anonymous memory, or nowhere).
fn perf_user_stacks(data: &Path) -> (HashMap<Key, UserStack>, u32) {
    let samples = perf_script_samples(data).expect("perf script");
    // The first sample of the workload is its main thread's: no other task exists yet.
    let main = samples
        .iter()
        .find(|s| s.comm == "churn")
        .map(|s| s.tid)
        .expect("no sample of churn");
    let mut out = HashMap::new();
    for s in samples {
        let mut names: Names = s.user_frames().map(|f| normalize(&f.symbol)).collect();
        while names.len() >= 2
            && names.last().is_some_and(|n| n == "[unknown]")
            && is_clone(&names[names.len() - 2])
        {
            names.pop();
        }
        let stack = UserStack { tid: s.tid, names };
        out.insert((s.tid, s.time_ns, s.event.clone()), stack);
    }
    (out, main)
}

/// cpiflame's user frames of every sample.
fn our_user_stacks(data: &Path) -> HashMap<Key, UserStack> {
    let file = PerfData::open(data).expect("open");
    let names = event_names(&file);
    let mut resolver = Resolver::new(&file.meta, Environment::read().resolve_options());
    resolver.finish_names();
    let mut out = HashMap::new();
    walk_samples(&file, &mut resolver, |sample, entries, resolver| {
        let stack: Names = entries
            .iter()
            .map(|e| resolver.frame(e.frame))
            .filter(|f| f.kind != FrameKind::Kernel)
            .map(|f| normalize(&f.name))
            .collect();
        let tid = sample.tid.unwrap_or(-1) as u32;
        let key = (tid, sample.time.unwrap_or(0), names[sample.attr].clone());
        out.insert(key, UserStack { tid, names: stack });
    })
    .expect("walk");
    out
}

/// Which part of a thread's life a stack through a clone wrapper shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ClonePath {
    /// The thread that called pthread_create or clone(): before the syscall (with its
    /// callers), in it or just after it (the wrapper alone).
    Parent(&'static str),
    /// A new task at its first user instruction, the one after the syscall.
    FirstMoments(&'static str),
    /// A new task in the function the wrapper called.
    Running(&'static str),
}

fn clone_path(stack: &UserStack, main: u32) -> Option<ClonePath> {
    let wrapper = match stack.names.iter().find(|n| is_clone(n))?.as_str() {
        "clone" | "__clone" => "__clone",
        _ => "__clone3",
    };
    Some(if stack.tid == main {
        ClonePath::Parent(wrapper)
    } else if stack.names.len() == 1 {
        ClonePath::FirstMoments(wrapper)
    } else {
        ClonePath::Running(wrapper)
    })
}

/// Stacks sampled in and around the clone wrappers (glibc's unwind info for `__clone3` and
/// `__clone` ends before the syscall) end there, as perf ends them, on both sides of the
/// syscall: a recording of `churn` (short-lived threads by pthread_create and tasks by
/// clone()), by perf and by cpiflame, each read by both.
fn check_clone_stacks(data: &Path) {
    let (theirs, main) = perf_user_stacks(data);
    let ours = our_user_stacks(data);

    // (a) No unnamed frame in a stack through a clone wrapper: none made up from the word at
    // the new stack's top (`churn+0x...`, `libc.so.6+0x...`, `[unknown]`). And a new task's
    // stack ends at the wrapper: nothing called it.
    for (key, stack) in &ours {
        let Some(i) = stack.names.iter().position(|n| is_clone(n)) else {
            continue;
        };
        assert!(
            !stack
                .names
                .iter()
                .any(|n| n.contains("+0x") || n == "[unknown]"),
            "{key:?}: an unnamed frame in {:?}",
            stack.names
        );
        assert!(
            stack.tid == main || i + 1 == stack.names.len(),
            "{key:?}: frames outside {} in a new task: {:?}",
            stack.names[i],
            stack.names
        );
    }

    // (b) Frame by frame against perf, for every stack either side ends at a clone wrapper.
    let mut compared: HashMap<ClonePath, (u32, u32)> = HashMap::new();
    let mut perf_empty = 0;
    let mut mismatches = Vec::new();
    for (key, perf) in &theirs {
        let our = ours.get(key);
        let path = clone_path(perf, main).or_else(|| our.and_then(|o| clone_path(o, main)));
        let Some(path) = path else { continue };
        let Some(our) = our else {
            mismatches.push(format!("{key:?}: perf {:?}, no sample of ours", perf.names));
            continue;
        };
        if perf.names.is_empty() {
            // A new thread's copied stack is often empty (its stack pointer is the top of
            // the new stack) and perf then prints no user frame; cpiflame shows the sampled
            // instruction, in the wrapper, and nothing outside it.
            assert!(
                our.names.len() == 1 && is_clone(&our.names[0]),
                "{key:?}: perf printed no user frame, ours {:?}",
                our.names
            );
            perf_empty += 1;
            continue;
        }
        let count = compared.entry(path).or_default();
        count.0 += 1;
        if perf.names == our.names {
            count.1 += 1;
        } else if mismatches.len() < 10 {
            mismatches.push(format!(
                "{key:?} {path:?}\n  perf: {:?}\n  ours: {:?}",
                perf.names, our.names
            ));
        }
    }
    let mut paths: Vec<_> = compared.iter().collect();
    paths.sort();
    for (path, (n, agreed)) in &paths {
        eprintln!(
            "{}: {path:?}: {agreed} of {n} samples agree with perf script",
            data.display()
        );
    }
    eprintln!(
        "{}: {perf_empty} samples of a new thread without user frames in perf script",
        data.display()
    );
    // Both sides of both wrappers, and the threads past their first moments.
    for wrapper in ["__clone3", "__clone"] {
        for path in [
            ClonePath::Parent(wrapper),
            ClonePath::FirstMoments(wrapper),
            ClonePath::Running(wrapper),
        ] {
            let n = compared.get(&path).map_or(0, |c| c.0);
            assert!(n >= 5, "{}: only {n} samples of {path:?}", data.display());
        }
    }
    let total: u32 = compared.values().map(|c| c.0).sum();
    let agreed: u32 = compared.values().map(|c| c.1).sum();
    let share = f64::from(agreed) / f64::from(total);
    assert!(
        share >= 0.99,
        "{}: {agreed} of {total} stacks through clone agree with perf script ({:.2}%); first differences:\n{}",
        data.display(),
        share * 100.0,
        mismatches.join("\n")
    );
}

#[test]
fn clone_stacks_end_where_perf_ends_them() {
    let Some(f) = fixtures_or_skip() else { return };
    let dir = Dir::new("oracle-churn");
    let churn = f.churn.to_str().unwrap();
    // cpu-clock every 50 us, kernel frames included: most of the run is the kernel creating
    // and reaping tasks, and a sample there has the user registers at the instruction after
    // the syscall.
    let by_perf = dir.path("perf.data");
    perf_record_with(
        &by_perf,
        "cpu-clock",
        &["-q", "-N", "-c", "50000", "--call-graph", "dwarf"],
        &[churn, "1000", "8", "20000"],
    )
    .expect("perf record");
    check_clone_stacks(&by_perf);
    std::fs::remove_file(&by_perf).unwrap();

    // The same from cpiflame's recorder, which keeps of each stack copy the bytes its unwind
    // reads (the whole copy where the unwind ends at an uncovered address).
    let by_cpiflame = dir.path("cpiflame.data");
    let out = support::cpiflame(&[
        "record",
        "-N",
        "-e",
        "cpu-clock",
        "-c",
        "50000",
        "-o",
        by_cpiflame.to_str().unwrap(),
        "--",
        churn,
        "1000",
        "8",
        "20000",
    ]);
    support::ok(&out);
    check_clone_stacks(&by_cpiflame);
    drop(dir);
}
