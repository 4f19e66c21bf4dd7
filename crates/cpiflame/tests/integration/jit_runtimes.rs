//! JIT runtimes recorded for real, with perf as the oracle (issue 36): CPython 3.13 with
//! `-X perf_jit` (a JIT dump with unwind tables) and `-X perf` (a perf map only), node with
//! `--perf-prof` (a JIT dump) and `--perf-basic-prof` (a perf map), and OpenJDK with a perf
//! map and frame pointers. Each runs a two-function workload of `fixtures/jit/` (`work()`
//! calls a recursive `fib()` a fixed number of times, about 0.6 s of CPU on the reference
//! machine; a busy machine takes longer and gives as many samples) sampled with `cpu-clock`
//! at 999 Hz.
//!
//! What is measured is the "whole stack": of the samples with a `fib` frame, the share
//! whose stack goes down to `_start` with `work` the nearest of the runtime's functions under
//! the first (outermost) `fib`. perf's stacks come from `perf record -k mono --call-graph
//! dwarf,32768` and `perf script`, after `perf inject --jit` where the runtime writes a dump
//! (perf reads perf maps itself); cpiflame reads perf's recording as it is (no inject) and
//! its own recording.
//!
//! Where perf and cpiflame legitimately differ, and the only normalising done:
//! * GCC's split-off copies (`foo.constprop.0`, `foo.part.0`, `foo.cold`) are named `foo` by
//!   cpiflame ([unwinding.md](../../../../docs/unwinding.md)); both are compared as `foo`.
//! * V8's embedded builtins lie in node's own text. perf inject overlays them with
//!   `jitted-PID-N.so` images named from the dump (`Builtin:JSEntry`); cpiflame names them from
//!   node's symbol table (`Builtins_JSEntry`); compared as the same name.
//! * Inlined frames: both print them (perf script's default `--inline`, cpiflame's own), so
//!   they are compared like the others; the folded output's `_[i]`, `_[j]`, `_[k]` are dropped.
//! * perf names a JIT function of an injected recording by its `jitted-PID-N.so` image's
//!   symbol, cpiflame by the dump's record: the same text (`py::fib:/path/fib.py`).
//!
//! The workloads write `/tmp/jit-PID.dump` (CPython) or `/tmp/perf-PID.map`, and perf inject
//! writes `jitted-PID-N.so` beside the dump; each test removes those of its processes
//! ([`RuntimeFiles`]; the workloads print their pid). perf inject's build-id cache goes to the
//! test's scratch directory (`perf --buildid-dir`), not `~/.debug`.

use crate::support;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cpiflame_testkit::unavailable;
use support::{ok, perf_script_samples, perf_works, repo_root, s, Dir, ScriptSample};

/// The sampling rate of every recording here.
const HZ: &str = "999";

/// How many times each workload's `work()` calls `fib()`.
const PY_ROUNDS: &str = "1300";
const NODE_ROUNDS: &str = "3500";
const JAVA_ROUNDS: &str = "12000";

/// `fib.py`'s `fib(N)`: the deepest recursion is N frames of `fib`.
const PY_FIB_N: u32 = 18;

/// A workload in `fixtures/jit/`.
fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures/jit").join(name)
}

// ---------------------------------------------------------------------------------------
// Finding the runtimes.

/// pyenv's CPython 3.13 (`$(pyenv root)/versions/3.13.*/bin/python3.13`, the newest), else
/// `python3.13` on PATH (pyenv's shim resolved to the interpreter it runs), checked to be
/// 3.13 with the perf trampolines; `Err` says why there is none.
fn python313() -> Result<PathBuf, String> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    let root = Command::new("pyenv")
        .arg("root")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(versions) = root.map(|r| r.join("versions")) {
        let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(&versions)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let patch = name.strip_prefix("3.13.")?.parse::<u32>().ok()?;
                let bin = e.path().join("bin/python3.13");
                bin.is_file().then_some((vec![patch], bin))
            })
            .collect();
        found.sort();
        candidates.extend(found.into_iter().rev().map(|(_, bin)| bin));
    }
    candidates.push(PathBuf::from("python3.13"));
    // `-X perf_jit` itself is left to the tests: it would write a dump for the probe.
    let probe = "import sys; assert sys.version_info[:2] == (3, 13); \
                 assert hasattr(sys, 'is_stack_trampoline_active'); print(sys.executable)";
    for python in &candidates {
        let Ok(out) = Command::new(python).args(["-c", probe]).output() else {
            continue;
        };
        if out.status.success() {
            let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if exe.is_file() {
                return Ok(exe);
            }
        }
    }
    Err(format!(
        "no CPython 3.13 with -X perf_jit (tried {}; scripts/test.sh installs one with pyenv)",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Whether `program --version` runs.
fn runs(program: &str, version_flag: &str) -> bool {
    Command::new(program)
        .arg(version_flag)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Everything a test needs to run, or the reason it cannot ([`unavailable`]).
fn ready(needs: &[(&str, &str)]) -> bool {
    if !perf_works() {
        unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return false;
    }
    for (program, flag) in needs {
        if !runs(program, flag) {
            unavailable(format!(
                "{program} is not installed (scripts/test.sh installs it)"
            ));
            return false;
        }
    }
    true
}

// ---------------------------------------------------------------------------------------
// Recording.

/// The files a runtime wrote outside the test's directory, removed when dropped: CPython's
/// `/tmp/jit-PID.dump`, perf maps `/tmp/perf-PID.map`, and the `jitted-PID-N.so` images perf
/// inject wrote beside a dump in /tmp.
#[derive(Default)]
struct RuntimeFiles(Vec<u32>);

impl Drop for RuntimeFiles {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let _ = std::fs::remove_file(format!("/tmp/jit-{pid}.dump"));
            let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
            let prefix = format!("jitted-{pid}-");
            for entry in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(&prefix) && name.ends_with(".so") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
}

/// Runs `command` in `cwd` (node writes its dump there); it must succeed, and the workload's
/// first word of output is its pid, noted in `files`.
fn run_workload(mut command: Command, cwd: &Path, files: &mut RuntimeFiles) -> Output {
    command.current_dir(cwd).stdin(Stdio::null());
    let shown = format!("{command:?}");
    let out = command.output().unwrap();
    // The pid first, so that a failure still cleans up what was written.
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(pid) = stdout
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
    {
        files.0.push(pid);
    }
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!files.0.is_empty(), "{shown}: no pid printed: {stdout}");
    out
}

/// `cpiflame record -F 999 -o DATA -- CMD...` in `cwd`.
fn cpiflame_record<S: AsRef<OsStr>>(cwd: &Path, data: &Path, cmd: &[S], files: &mut RuntimeFiles) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cpiflame"));
    command
        .args(["record", "-F", HZ, "-o"])
        .arg(data)
        .arg("--")
        .args(cmd);
    run_workload(command, cwd, files);
}

/// `perf record -k mono --call-graph dwarf,32768 -e cpu-clock -F 999 -o DATA -- CMD...` in
/// `cwd` (`-N`: nothing copied into the build-id cache).
fn perf_record<S: AsRef<OsStr>>(cwd: &Path, data: &Path, cmd: &[S], files: &mut RuntimeFiles) {
    perf_record_with(cwd, data, "dwarf,32768", cmd, files);
}

/// [`perf_record`] with another `--call-graph` mode.
fn perf_record_with<S: AsRef<OsStr>>(
    cwd: &Path,
    data: &Path,
    call_graph: &str,
    cmd: &[S],
    files: &mut RuntimeFiles,
) {
    let mut command = Command::new("perf");
    command
        .args([
            "record",
            "-q",
            "-N",
            "-k",
            "mono",
            "--call-graph",
            call_graph,
        ])
        .args(["-e", "cpu-clock", "-F", HZ, "-o"])
        .arg(data)
        .arg("--")
        .args(cmd);
    run_workload(command, cwd, files);
}

/// `perf inject --jit -i DATA -o OUT`, its build-id cache in `dir`.
fn perf_inject_jit(dir: &Dir, data: &Path, out: &Path) {
    let result = Command::new("perf")
        .arg("--buildid-dir")
        .arg(dir.path("buildid"))
        .args(["inject", "--jit", "-i"])
        .arg(data)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "perf inject --jit -i {}: {}",
        data.display(),
        String::from_utf8_lossy(&result.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// Stacks, as both tools print them.

/// One sample's stack: frame names, root first.
#[derive(Clone, Debug)]
struct Stack {
    tid: u32,
    time_ns: u64,
    frames: Vec<String>,
}

/// A name as both tools are compared on (see the module documentation): GCC's clone
/// suffixes dropped, V8's builtins by one name.
fn normalize(name: &str) -> String {
    let mut s = name.to_string();
    for suffix in [".constprop", ".isra", ".part", ".cold", ".lto_priv"] {
        if let Some(i) = s.find(suffix) {
            s.truncate(i);
        }
    }
    match s.strip_prefix("Builtins_") {
        Some(builtin) => format!("Builtin:{builtin}"),
        None => s,
    }
}

/// `perf script`'s stacks.
fn perf_stacks(data: &Path) -> Vec<Stack> {
    stacks_of(perf_script_samples(data).expect("perf script"))
}

/// `perf script`'s stacks of node's JIT code. Some runs' DEBUG_INFO records carry stray
/// bytes as file names, and perf's `--inline` then prints those in place of the frame's
/// function (`??:0`, `\u{FFFD}m` entries and no line for the function: in one run every `fib`
/// frame at one return address). The chain is taken in runs of one address, with and
/// without `--inline`: a run printed as such entries only is the frames `perf script
/// --no-inline` prints at that address.
fn perf_stacks_of_jit(data: &Path) -> Vec<Stack> {
    let options = support::ScriptOptions {
        inline: false,
        ..Default::default()
    };
    let plain = support::perf_script_samples_with(data, &options).expect("perf script");
    let mut samples = perf_script_samples(data).expect("perf script");
    assert_eq!(
        samples.len(),
        plain.len(),
        "perf script with and without --inline"
    );
    let junk = |f: &support::ScriptFrame| {
        f.inlined && (f.symbol == "??:0" || f.symbol.contains('\u{FFFD}'))
    };
    // Consecutive frames at one address.
    fn runs(frames: &[support::ScriptFrame]) -> Vec<&[support::ScriptFrame]> {
        frames.chunk_by(|a, b| a.addr == b.addr).collect()
    }
    for (sample, plain) in samples.iter_mut().zip(&plain) {
        let (printed, named) = (runs(&sample.frames), runs(&plain.frames));
        if printed.len() != named.len() {
            continue;
        }
        let mut frames = Vec::with_capacity(sample.frames.len());
        for (printed, named) in printed.into_iter().zip(named) {
            if printed.iter().all(junk) {
                frames.extend_from_slice(named);
            } else {
                frames.extend_from_slice(printed);
            }
        }
        sample.frames = frames;
    }
    stacks_of(samples)
}

fn stacks_of(samples: Vec<ScriptSample>) -> Vec<Stack> {
    samples
        .into_iter()
        .map(|s| Stack {
            tid: s.tid,
            time_ns: s.time_ns,
            // perf's `--inline` prints the stray-byte file names some node 20 DEBUG_INFO
            // records carry as frames of their own (`??:0`, bytes shown as U+FFFD): not
            // functions, left out of perf's stacks.
            frames: s
                .frames
                .iter()
                .rev()
                .filter(|f| f.symbol != "??:0" && !f.symbol.contains('\u{FFFD}'))
                .map(|f| normalize(&f.symbol))
                .collect(),
        })
        .collect()
}

/// `cpiflame script`'s stacks: a header `COMM TID SECONDS.NANOS: EVENT:`, then a line
/// `\tADDRESS NAME (MODULE)` per frame, leaf first.
fn our_stacks(data: &Path) -> Vec<Stack> {
    let text = ok(&support::cpiflame(&["script", s(data)]));
    let mut stacks: Vec<Stack> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(frame) = line.strip_prefix('\t') {
            let (_, rest) = frame.trim_start().split_once(' ').expect(line);
            let (name, _) = rest.rsplit_once(" (").expect(line);
            stacks.last_mut().expect(line).frames.push(normalize(name));
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words
            .iter()
            .position(|w| {
                w.strip_suffix(':')
                    .and_then(|t| t.split_once('.'))
                    .is_some_and(|(sec, ns)| {
                        !sec.is_empty()
                            && ns.len() == 9
                            && sec.bytes().chain(ns.bytes()).all(|b| b.is_ascii_digit())
                    })
            })
            .unwrap_or_else(|| panic!("not a sample header: {line:?}"));
        let time = words[at].trim_end_matches(':').replace('.', "");
        stacks.push(Stack {
            tid: words[at - 1].parse().expect(line),
            time_ns: time.parse().expect(line),
            frames: Vec::new(),
        });
    }
    for stack in &mut stacks {
        stack.frames.reverse();
    }
    stacks
}

/// `cpiflame fold DATA`'s stacks, root first without the process frame and without the
/// `_[k]`, `_[i]`, `_[j]` annotations, each with its count.
fn folded_stacks(data: &Path) -> Vec<(Vec<String>, u64)> {
    folded_stacks_with(data, &[])
}

/// [`folded_stacks`] with more `fold` flags (`--no-kernel`).
fn folded_stacks_with(data: &Path, flags: &[&str]) -> Vec<(Vec<String>, u64)> {
    let args = [&["fold"], flags, &[s(data)]].concat();
    let text = ok(&support::cpiflame(&args));
    text.lines()
        .map(|line| {
            let (stack, count) = line.rsplit_once(' ').expect(line);
            let frames = stack
                .split(';')
                .skip(1)
                .map(|f| {
                    let f = ["_[k]", "_[i]", "_[j]"]
                        .iter()
                        .find_map(|a| f.strip_suffix(a))
                        .unwrap_or(f);
                    normalize(f)
                })
                .collect();
            (frames, count.parse().expect(line))
        })
        .collect()
}

/// Which runtime's names a stack holds.
#[derive(Clone, Copy, Debug)]
enum Runtime {
    /// `py::fib:/path/fib.py` (CPython's perf map and dump).
    Python,
    /// `JS:*fib /path/fib.js:5:13`, the mark giving the tier (`~` interpreted, `^` baseline,
    /// `+` Maglev, `*` optimized).
    Node,
    /// `int Fib.fib(int)` (HotSpot's perf map).
    Java,
}

impl Runtime {
    /// The function of the runtime a frame is, by the name the runtime gave it.
    fn function(self, frame: &str) -> Option<&str> {
        match self {
            Runtime::Python => frame.strip_prefix("py::")?.split(':').next(),
            Runtime::Node => {
                let rest = frame.strip_prefix("JS:")?;
                let rest = rest.trim_start_matches(['*', '~', '^', '+']);
                rest.split(' ').next()
            }
            Runtime::Java => {
                let (head, _) = frame.split_once('(')?;
                let (_, qualified) = head.rsplit_once(' ')?;
                qualified.rsplit('.').next()
            }
        }
    }
}

/// Of the samples with a `fib` frame, how many are whole.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Share {
    with_fib: u64,
    whole: u64,
}

impl Share {
    fn percent(self) -> f64 {
        if self.with_fib == 0 {
            0.0
        } else {
            100.0 * self.whole as f64 / self.with_fib as f64
        }
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} ({:.1}%)",
            self.whole,
            self.with_fib,
            self.percent()
        )
    }
}

/// Whether a root-first stack with a `fib` frame is whole: its root is `_start`, and the
/// nearest of the runtime's functions under its first `fib` is `work`.
fn whole(frames: &[String], runtime: Runtime) -> bool {
    let Some(first) = frames
        .iter()
        .position(|f| runtime.function(f) == Some("fib"))
    else {
        return false;
    };
    frames.first().is_some_and(|f| f == "_start")
        && frames[..first]
            .iter()
            .rev()
            .find_map(|f| runtime.function(f))
            == Some("work")
}

fn share<'a>(stacks: impl IntoIterator<Item = (&'a [String], u64)>, runtime: Runtime) -> Share {
    let mut share = Share::default();
    for (frames, count) in stacks {
        if frames.iter().any(|f| runtime.function(f) == Some("fib")) {
            share.with_fib += count;
            if whole(frames, runtime) {
                share.whole += count;
            }
        }
    }
    share
}

fn share_of_folded(stacks: &[(Vec<String>, u64)], runtime: Runtime) -> Share {
    share(stacks.iter().map(|(f, n)| (f.as_slice(), *n)), runtime)
}

fn share_of_samples(stacks: &[Stack], runtime: Runtime) -> Share {
    share(stacks.iter().map(|s| (s.frames.as_slice(), 1)), runtime)
}

/// Up to `n` of the stacks with a `fib` frame that are not whole, for a failure message.
fn not_whole(stacks: &[(Vec<String>, u64)], runtime: Runtime, n: usize) -> String {
    stacks
        .iter()
        .filter(|(f, _)| f.iter().any(|x| runtime.function(x) == Some("fib")))
        .filter(|(f, _)| !whole(f, runtime))
        .take(n)
        .map(|(f, c)| format!("{c} {}", f.join(";")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The two tools' stacks of the same samples (same thread and time), compared name by
/// name.
#[derive(Debug, Default)]
struct Comparison {
    /// Samples in both outputs (with a `fib` frame in either).
    matched: usize,
    /// The same names in the same order.
    same: usize,
    /// perf's stack is the start of cpiflame's: perf stopped earlier.
    perf_shorter: usize,
    /// A few of the others: perf's stack, then cpiflame's, leaf first.
    differing: Vec<(Vec<String>, Vec<String>)>,
    /// How many others.
    others: usize,
}

fn compare(perf: &[Stack], ours: &[Stack], runtime: Runtime) -> Comparison {
    let ours: HashMap<(u32, u64), &Stack> = ours.iter().map(|s| ((s.tid, s.time_ns), s)).collect();
    let mut c = Comparison::default();
    for p in perf {
        let Some(o) = ours.get(&(p.tid, p.time_ns)) else {
            continue;
        };
        let has_fib = |s: &Stack| s.frames.iter().any(|f| runtime.function(f) == Some("fib"));
        if !has_fib(p) && !has_fib(o) {
            continue;
        }
        c.matched += 1;
        // Leaf first: where a walk stops, the rest is missing from the root side.
        let (pl, ol): (Vec<&String>, Vec<&String>) = (
            p.frames.iter().rev().collect(),
            o.frames.iter().rev().collect(),
        );
        if pl == ol {
            c.same += 1;
        } else if pl.len() < ol.len() && ol[..pl.len()] == pl[..] {
            c.perf_shorter += 1;
        } else {
            c.others += 1;
            if c.differing.len() < 3 {
                c.differing.push((
                    pl.into_iter().cloned().collect(),
                    ol.into_iter().cloned().collect(),
                ));
            }
        }
    }
    c
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} samples with a fib frame in both: {} the same frame by frame, {} where perf \
             stopped earlier, {} otherwise different",
            self.matched, self.same, self.perf_shorter, self.others
        )?;
        for (perf, ours) in &self.differing {
            write!(
                f,
                "\n  perf:     {}\n  cpiflame: {}",
                perf.join(";"),
                ours.join(";")
            )?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Python.

/// `cpiflame record` of `-X perf_jit`, then `fold`: of the samples with a `py::fib` frame,
/// at least 90% are whole down to `_start` with `py::work` under the first `py::fib` (the
/// issue's done-when).
#[test]
fn python_perf_jit_recorded_by_cpiflame_is_whole() {
    let python = match python313() {
        Ok(p) => p,
        Err(why) => return unavailable(why),
    };
    if !ready(&[]) {
        return;
    }
    let dir = Dir::new("jit-py-perf-jit");
    let mut files = RuntimeFiles::default();
    let data = dir.path("cpiflame.data");
    let cmd = [python.as_os_str(), "-X".as_ref(), "perf_jit".as_ref()];
    let script = fixture("fib.py");
    let cmd = [cmd.as_slice(), &[script.as_os_str(), PY_ROUNDS.as_ref()]].concat();
    cpiflame_record(dir.root(), &data, &cmd, &mut files);
    let stacks = folded_stacks(&data);
    let got = share_of_folded(&stacks, Runtime::Python);
    eprintln!("python -X perf_jit, cpiflame record: whole {got}");
    assert!(got.with_fib >= 100, "too few fib samples: {got}");
    assert!(
        got.percent() >= 90.0,
        "whole: {got}; some that are not:\n{}",
        not_whole(&stacks, Runtime::Python, 5)
    );
    // The JIT frames are named as CPython named them, with the file.
    let name = format!("py::fib:{}", script.display());
    assert!(
        stacks.iter().any(|(f, _)| f.contains(&name)),
        "no frame named {name}"
    );
}

/// perf's own `-k mono` recording of `-X perf_jit`, read by cpiflame as it is (no perf
/// inject): at least 90% whole, as above, and so is perf inject's output read by cpiflame;
/// and the same samples' stacks, frame by frame, as `perf script` prints them after
/// `perf inject --jit`.
#[test]
fn python_perf_jit_recorded_by_perf_matches_perf_inject() {
    let python = match python313() {
        Ok(p) => p,
        Err(why) => return unavailable(why),
    };
    if !ready(&[]) {
        return;
    }
    let dir = Dir::new("jit-py-perf-jit-oracle");
    let mut files = RuntimeFiles::default();
    let data = dir.path("perf.data");
    let script = fixture("fib.py");
    let cmd = [
        python.as_os_str(),
        "-X".as_ref(),
        "perf_jit".as_ref(),
        script.as_os_str(),
        PY_ROUNDS.as_ref(),
    ];
    perf_record(dir.root(), &data, &cmd, &mut files);
    let folded = folded_stacks(&data);
    let got = share_of_folded(&folded, Runtime::Python);
    eprintln!("python -X perf_jit, perf record read by cpiflame: whole {got}");
    assert!(got.with_fib >= 100, "too few fib samples: {got}");
    assert!(
        got.percent() >= 90.0,
        "whole: {got}; some that are not:\n{}",
        not_whole(&folded, Runtime::Python, 5)
    );

    let injected = dir.path("injected.data");
    perf_inject_jit(&dir, &data, &injected);
    // What perf inject leaves (its `jitted-PID-N.so` images) reads as whole too.
    let folded = folded_stacks(&injected);
    let read = share_of_folded(&folded, Runtime::Python);
    eprintln!("python -X perf_jit, perf record + inject read by cpiflame: whole {read}");
    assert!(
        read.percent() >= 90.0,
        "whole: {read}; some that are not:\n{}",
        not_whole(&folded, Runtime::Python, 5)
    );
    let perf = perf_stacks(&injected);
    let ours = our_stacks(&data);
    let perf_share = share_of_samples(&perf, Runtime::Python);
    eprintln!("python -X perf_jit, perf record + inject + script: whole {perf_share}");
    let c = compare(&perf, &ours, Runtime::Python);
    eprintln!("python -X perf_jit, frame by frame: {c}");
    assert!(c.matched as u64 >= perf_share.with_fib, "{c}");
    // perf's stacks after inject are cpiflame's, name for name: a stack where perf's walk
    // stopped earlier is no difference of naming, but nothing else may differ.
    assert!(c.same * 100 >= c.matched * 95, "{c}");
    assert!(c.others * 100 <= c.matched, "{c}");
}

/// `-X perf` writes a perf map and no unwind tables. cpiflame's recording: at least 80% of
/// the fib samples whole (the done-when). perf's DWARF mode stops at the first JIT
/// frame, which is asserted too, on perf's recording of the same (which cpiflame reads whole).
/// The call structure, from CPython's trampolines: every `py::` frame is called by
/// `py_trampoline_evaluator` and calls `_PyEval_EvalFrameDefault` (or is the leaf), and the
/// `py::fib` frames are as deep as `fib(18)` goes: at most 18, on average about as deep as
/// its calls are.
#[test]
fn python_perf_map_goes_on_where_perf_stops() {
    let python = match python313() {
        Ok(p) => p,
        Err(why) => return unavailable(why),
    };
    if !ready(&[]) {
        return;
    }
    let dir = Dir::new("jit-py-perf-map");
    let mut files = RuntimeFiles::default();
    let script = fixture("fib.py");
    let cmd = [
        python.as_os_str(),
        "-X".as_ref(),
        "perf".as_ref(),
        script.as_os_str(),
        PY_ROUNDS.as_ref(),
    ];
    let ours_data = dir.path("cpiflame.data");
    cpiflame_record(dir.root(), &ours_data, &cmd, &mut files);
    let ours = folded_stacks(&ours_data);
    let got = share_of_folded(&ours, Runtime::Python);
    eprintln!("python -X perf, cpiflame record: whole {got}");
    assert!(got.with_fib >= 100, "too few fib samples: {got}");
    assert!(
        got.percent() >= 80.0,
        "whole: {got}; some that are not:\n{}",
        not_whole(&ours, Runtime::Python, 5)
    );

    // The call structure, of the user stacks: a sample can fall in a trampoline's own code,
    // and its kernel frames (an interrupt's) then follow the `py::` frame.
    let expected = fib_depths(PY_FIB_N);
    let mut weighed = (0u64, 0u64, 0usize);
    for (frames, count) in &folded_stacks_with(&ours_data, &["--no-kernel"]) {
        for (i, f) in frames.iter().enumerate() {
            if !f.starts_with("py::") {
                continue;
            }
            let caller = i.checked_sub(1).map(|j| frames[j].as_str());
            let callee = frames.get(i + 1).map(String::as_str);
            assert!(
                caller == Some("py_trampoline_evaluator")
                    && callee.is_none_or(|c| c == "_PyEval_EvalFrameDefault"),
                "{f} between {caller:?} and {callee:?}: {}",
                frames.join(";")
            );
        }
        let depth = frames
            .iter()
            .filter(|f| Runtime::Python.function(f) == Some("fib"))
            .count();
        if depth > 0 && whole(frames, Runtime::Python) {
            weighed.0 += count;
            weighed.1 += count * depth as u64;
            weighed.2 = weighed.2.max(depth);
        }
    }
    let mean = weighed.1 as f64 / weighed.0 as f64;
    eprintln!(
        "python -X perf: py::fib depth at most {} (fib({PY_FIB_N}) goes to {}), mean {mean:.2} \
         (its calls' mean depth {:.2}, of those calling on {:.2})",
        weighed.2, expected.max, expected.mean, expected.mean_calling
    );
    assert!(
        weighed.2 <= expected.max as usize,
        "{} py::fib frames: deeper than fib({PY_FIB_N}) recurses",
        weighed.2
    );
    assert!(
        (expected.mean_calling - 1.0..=expected.mean + 1.0).contains(&mean),
        "mean depth {mean:.2}: fib({PY_FIB_N})'s calls average {:.2}, those calling on {:.2}",
        expected.mean,
        expected.mean_calling
    );

    // perf on the same: its DWARF walk stops at the first JIT frame, which has no unwind
    // table; cpiflame reads the same recording whole.
    let perf_data = dir.path("perf.data");
    perf_record(dir.root(), &perf_data, &cmd, &mut files);
    let perf = perf_stacks(&perf_data);
    let with_py: Vec<&Stack> = perf
        .iter()
        .filter(|s| s.frames.iter().any(|f| f.starts_with("py::")))
        .collect();
    let stopped = with_py
        .iter()
        .filter(|s| s.frames[0].starts_with("py::"))
        .count();
    eprintln!(
        "python -X perf, perf record + script: {stopped} of {} samples with a py:: frame end \
         at the first one",
        with_py.len()
    );
    assert!(with_py.len() >= 100, "perf: {} py:: samples", with_py.len());
    assert_eq!(stopped, with_py.len(), "perf went past a JIT frame");
    let theirs = folded_stacks(&perf_data);
    let read = share_of_folded(&theirs, Runtime::Python);
    eprintln!("python -X perf, perf record read by cpiflame: whole {read}");
    assert!(
        read.percent() >= 80.0,
        "whole: {read}; some that are not:\n{}",
        not_whole(&theirs, Runtime::Python, 5)
    );
}

/// How deep `fib(n)` recurses, in frames of `fib` (the first call at depth 1).
#[derive(Debug, PartialEq)]
struct FibDepths {
    /// The deepest call.
    max: u32,
    /// The mean depth of all its calls.
    mean: f64,
    /// The mean depth of the calls that call on (`n >= 2`). A sample is in a call that calls
    /// on more often than its share of calls, as those do more than return `n`: the mean
    /// depth sampled lies about between the two means.
    mean_calling: f64,
}

fn fib_depths(n: u32) -> FibDepths {
    /// Calls per depth, all and calling on.
    fn walk(n: u32, depth: usize, calls: &mut Vec<(u64, u64)>) {
        if calls.len() <= depth {
            calls.resize(depth + 1, (0, 0));
        }
        calls[depth].0 += 1;
        if n >= 2 {
            calls[depth].1 += 1;
            walk(n - 1, depth + 1, calls);
            walk(n - 2, depth + 1, calls);
        }
    }
    let mut calls = Vec::new();
    walk(n, 1, &mut calls);
    let mean = |pick: fn(&(u64, u64)) -> u64| {
        let total: u64 = calls.iter().map(pick).sum();
        let sum: u64 = calls
            .iter()
            .enumerate()
            .map(|(d, c)| d as u64 * pick(c))
            .sum();
        sum as f64 / total as f64
    };
    FibDepths {
        max: calls.len() as u32 - 1,
        mean: mean(|c| c.0),
        mean_calling: mean(|c| c.1),
    }
}

#[test]
fn fib_depths_are_those_of_the_recursion() {
    // fib(2) calls fib(1) and fib(0): three calls, at depths 1, 2, 2; the first calls on.
    assert_eq!(
        fib_depths(2),
        FibDepths {
            max: 2,
            mean: 5.0 / 3.0,
            mean_calling: 1.0
        }
    );
    // fib(3): fib(2) and fib(1) at depth 2, fib(1) and fib(0) at 3; fib(3), fib(2) call on.
    assert_eq!(
        fib_depths(3),
        FibDepths {
            max: 3,
            mean: 11.0 / 5.0,
            mean_calling: 1.5
        }
    );
    assert_eq!(fib_depths(PY_FIB_N).max, PY_FIB_N);
}

// ---------------------------------------------------------------------------------------
// Node.

/// The node options of a JIT dump with unwind tables, and the interpreter's frames as
/// functions of their own (without it every interpreted function is one
/// `Builtins_InterpreterEntryTrampoline`, `work` among them).
const NODE_PERF_PROF: [&str; 3] = [
    "--perf-prof",
    "--perf-prof-unwinding-info",
    "--interpreted-frames-native-stack",
];

/// node `--perf-prof`: JS functions are named as V8 names them, and cpiflame's stacks are at
/// least as whole as perf's after `perf inject --jit`: on perf's recording (read as it is)
/// and on cpiflame's own. The dump goes to node's current directory, the test's.
#[test]
fn node_perf_prof_names_js_and_is_as_whole_as_perf_inject() {
    if !ready(&[("node", "--version")]) {
        return;
    }
    let dir = Dir::new("jit-node-perf-prof");
    let mut files = RuntimeFiles::default();
    let script = fixture("fib.js");
    let mut cmd: Vec<&OsStr> = vec!["node".as_ref()];
    cmd.extend(NODE_PERF_PROF.iter().map(OsStr::new));
    cmd.extend([script.as_os_str(), NODE_ROUNDS.as_ref()]);

    let perf_data = dir.path("perf.data");
    perf_record(dir.root(), &perf_data, &cmd, &mut files);
    let injected = dir.path("injected.data");
    perf_inject_jit(&dir, &perf_data, &injected);
    let perf = perf_stacks_of_jit(&injected);
    let perf_share = share_of_samples(&perf, Runtime::Node);
    let theirs = our_stacks(&perf_data);
    let read = share_of_samples(&theirs, Runtime::Node);
    eprintln!(
        "node --perf-prof: perf record + inject + script whole {perf_share}; the same \
         recording read by cpiflame {read}"
    );
    // Frame by frame: the same as perf's after inject, or going on where perf stopped, but
    // for at most 1%. (Before V8's unwind tables were read, with their CIE's omitted LSDA
    // pointer, about 40% lacked a `fib` frame: a leaf in a prologue or epilogue walked by
    // frame pointers skips its caller.) The few left have their leaf in a builtin of node's
    // own text that no unwind table covers, `Builtins_BaselineOutOfLinePrologue`, called
    // first thing by a baseline function: cpiflame takes the word at the stack pointer as the
    // return address there (into the function being entered), perf's unwinder the frame
    // pointer (its caller's), so the two differ by the `fib` being entered (0 to 4 of about
    // 570 per run here).
    let frames = compare(&perf, &theirs, Runtime::Node);
    eprintln!("node --perf-prof, frame by frame: {frames}");
    assert!(frames.matched >= 100, "{frames}");
    assert!(
        frames.others * 100 <= frames.matched,
        "{frames}: {:#?}",
        frames.differing
    );
    assert!(
        perf_share.with_fib >= 100,
        "too few fib samples: {perf_share}"
    );
    assert!(
        read.percent() >= perf_share.percent(),
        "{read} < {perf_share}"
    );

    let ours_data = dir.path("cpiflame.data");
    cpiflame_record(dir.root(), &ours_data, &cmd, &mut files);
    let ours = folded_stacks(&ours_data);
    let own = share_of_folded(&ours, Runtime::Node);
    eprintln!("node --perf-prof: cpiflame record whole {own}");
    assert!(own.with_fib >= 100, "too few fib samples: {own}");
    assert!(
        own.percent() >= perf_share.percent(),
        "{own} < perf's {perf_share}; some that are not:\n{}",
        not_whole(&ours, Runtime::Node, 5)
    );
    assert_js_named(&ours, &script);
}

/// node `--perf-basic-prof`: a perf map (`/tmp/perf-PID.map`) and no unwind tables. perf's
/// DWARF walk stops at the first JS frame; cpiflame goes on by the frame pointers V8's frames
/// keep: at least perf's share and at least 80% (as for CPython's perf map), on perf's
/// recording and on cpiflame's own.
#[test]
fn node_perf_basic_prof_names_js_and_goes_on_where_perf_stops() {
    if !ready(&[("node", "--version")]) {
        return;
    }
    let dir = Dir::new("jit-node-perf-map");
    let mut files = RuntimeFiles::default();
    let script = fixture("fib.js");
    let cmd: [&OsStr; 5] = [
        "node".as_ref(),
        "--perf-basic-prof".as_ref(),
        "--interpreted-frames-native-stack".as_ref(),
        script.as_os_str(),
        NODE_ROUNDS.as_ref(),
    ];

    let perf_data = dir.path("perf.data");
    perf_record(dir.root(), &perf_data, &cmd, &mut files);
    let perf_share = share_of_samples(&perf_stacks(&perf_data), Runtime::Node);
    let theirs = folded_stacks(&perf_data);
    let read = share_of_folded(&theirs, Runtime::Node);
    eprintln!(
        "node --perf-basic-prof: perf record + script whole {perf_share}; the same recording \
         read by cpiflame {read}"
    );
    assert!(
        perf_share.with_fib >= 100,
        "too few fib samples: {perf_share}"
    );
    assert!(
        read.percent() >= perf_share.percent().max(80.0),
        "{read} (perf: {perf_share}); some that are not:\n{}",
        not_whole(&theirs, Runtime::Node, 5)
    );

    let ours_data = dir.path("cpiflame.data");
    cpiflame_record(dir.root(), &ours_data, &cmd, &mut files);
    let ours = folded_stacks(&ours_data);
    let own = share_of_folded(&ours, Runtime::Node);
    eprintln!("node --perf-basic-prof: cpiflame record whole {own}");
    assert!(own.with_fib >= 100, "too few fib samples: {own}");
    assert!(
        own.percent() >= perf_share.percent().max(80.0),
        "{own} (perf: {perf_share}); some that are not:\n{}",
        not_whole(&ours, Runtime::Node, 5)
    );
    assert_js_named(&ours, &script);
}

/// `fib` and `work` are named as V8 names them: `JS:` and the tier's mark, the function, the
/// script's path with line and column; and `fib` in its optimized code (`JS:*fib`).
fn assert_js_named(stacks: &[(Vec<String>, u64)], script: &Path) {
    for function in ["fib", "work"] {
        let suffix = format!("{function} {}:", script.display());
        assert!(
            stacks.iter().any(|(f, _)| f
                .iter()
                .any(|x| x.starts_with("JS:") && x.contains(&suffix))),
            "no JS frame named {suffix}..."
        );
    }
    let optimized = format!("JS:*fib {}:", script.display());
    assert!(
        stacks
            .iter()
            .any(|(f, _)| f.iter().any(|x| x.starts_with(&optimized))),
        "no frame named {optimized}..."
    );
}

// ---------------------------------------------------------------------------------------
// Java.

/// OpenJDK with `-XX:+PreserveFramePointer` and a perf map written at exit
/// (`-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit`, JDK 17 and later): Java frames
/// are named from the map, and the stacks continue through them by frame pointers to the
/// thread's start (`java`'s main thread runs `JavaMain` in a thread of its own: `clone3`,
/// `start_thread`) or `_start`. `work` stays interpreted (12,000 turns of its loop are below
/// HotSpot's threshold for compiling it), so the map names it `Interpreter`, like `main`.
///
/// The oracle is the kernel's own frame-pointer walk: `perf record --call-graph fp` of the
/// same. perf's DWARF mode stops at the first Java frame (it has no unwind table), so it is
/// no oracle here. The two recordings are compared by their distributions: the frames under
/// the first `fib` (the same sequence in at least 90% of the samples of each), and the mean
/// number of `fib` frames (C2 inlines `fib` into itself, so it is far below the recursion's
/// 22; the two means within 0.5 of each other).
#[test]
fn java_perf_map_and_frame_pointers_give_whole_named_stacks() {
    if !ready(&[("java", "-version"), ("javac", "-version")]) {
        return;
    }
    let dir = Dir::new("jit-java");
    let mut files = RuntimeFiles::default();
    let javac = Command::new("javac")
        .arg("-d")
        .arg(dir.root())
        .arg(fixture("Fib.java"))
        .output()
        .unwrap();
    assert!(
        javac.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&javac.stderr)
    );
    // A JDK without the flag would refuse to start; say so instead of failing on missing
    // names. (Asked of the flags' table: the flag itself would make the probe write a map.)
    let flags = Command::new("java")
        .args([
            "-XX:+UnlockDiagnosticVMOptions",
            "-XX:+PrintFlagsFinal",
            "-version",
        ])
        .output()
        .unwrap();
    if !String::from_utf8_lossy(&flags.stdout).contains("DumpPerfMapAtExit") {
        return unavailable(
            "this JDK cannot write a perf map at exit (no -XX:+DumpPerfMapAtExit: JDK 17 and \
             later have it)",
        );
    }
    let cmd: Vec<&OsStr> = [
        "java",
        "-XX:+PreserveFramePointer",
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:+DumpPerfMapAtExit",
        "-cp",
    ]
    .iter()
    .map(OsStr::new)
    .chain([dir.root().as_os_str(), "Fib".as_ref(), JAVA_ROUNDS.as_ref()])
    .collect();
    let data = dir.path("cpiflame.data");
    cpiflame_record(dir.root(), &data, &cmd, &mut files);
    let pid = files.0[0];
    assert!(
        Path::new(&format!("/tmp/perf-{pid}.map")).is_file(),
        "the JDK wrote no /tmp/perf-{pid}.map"
    );
    let ours = java_stacks(folded_stacks(&data));
    let perf_data = dir.path("perf.data");
    perf_record_with(dir.root(), &perf_data, "fp", &cmd, &mut files);
    let perf = java_stacks(
        perf_stacks(&perf_data)
            .into_iter()
            .map(|s| (s.frames, 1))
            .collect(),
    );
    eprintln!("java, cpiflame record: {ours}");
    eprintln!("java, perf record --call-graph fp: {perf}");
    assert!(ours.with_fib >= 100, "too few Fib.fib samples: {ours}");
    assert!(
        ours.whole * 10 >= ours.with_fib * 9,
        "{ours}; some that are not:\n{}",
        ours.not_whole.join("\n")
    );
    let (under, n) = perf.under_fib.iter().max_by_key(|(_, n)| **n).unwrap();
    assert!(*n * 10 >= perf.with_fib * 9, "perf: {perf}");
    let ours_under = ours.under_fib.get(under).copied().unwrap_or(0);
    assert!(
        ours_under * 10 >= ours.with_fib * 9,
        "{ours_under} of {} under {under:?} (perf's, {n} of {})",
        ours.with_fib,
        perf.with_fib
    );
    assert!(under.ends_with("Interpreter;Interpreter"), "{under}");
    assert!(
        (ours.mean_depth() - perf.mean_depth()).abs() <= 0.5,
        "Fib.fib frames: ours {:.2} on average, perf's {:.2}",
        ours.mean_depth(),
        perf.mean_depth()
    );
}

/// What the Java test measures of a recording's stacks (root first, with counts).
#[derive(Debug, Default)]
struct JavaStacks {
    /// Samples with a `Fib.fib` frame.
    with_fib: u64,
    /// Of those, the ones that start at the thread's start or `_start`.
    whole: u64,
    /// A few of the others.
    not_whole: Vec<String>,
    /// The four frames under the first `Fib.fib`, with how many samples have them.
    under_fib: HashMap<String, u64>,
    /// The `Fib.fib` frames of all those samples.
    fib_frames: u64,
}

impl JavaStacks {
    fn mean_depth(&self) -> f64 {
        self.fib_frames as f64 / self.with_fib.max(1) as f64
    }
}

impl std::fmt::Display for JavaStacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut under: Vec<_> = self.under_fib.iter().collect();
        under.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
        write!(
            f,
            "{} of {} samples with Fib.fib reach the thread's start; {:.2} Fib.fib frames on \
             average; under the first: {:?}",
            self.whole,
            self.with_fib,
            self.mean_depth(),
            &under[..under.len().min(3)]
        )
    }
}

fn java_stacks(stacks: Vec<(Vec<String>, u64)>) -> JavaStacks {
    let mut j = JavaStacks::default();
    for (frames, count) in stacks {
        let is_fib = |f: &String| Runtime::Java.function(f) == Some("fib");
        let Some(first) = frames.iter().position(is_fib) else {
            continue;
        };
        j.with_fib += count;
        j.fib_frames += count * frames.iter().filter(|f| is_fib(f)).count() as u64;
        *j.under_fib
            .entry(frames[first.saturating_sub(4)..first].join(";"))
            .or_default() += count;
        // perf's frame-pointer walk ends at start_thread (clone3 keeps no frame pointer).
        let root = frames.first().map(String::as_str);
        let started = root == Some("_start")
            || root == Some("start_thread")
            || (matches!(root, Some("clone3" | "clone"))
                && frames.get(1).is_some_and(|f| f == "start_thread"));
        if started {
            j.whole += count;
        } else if j.not_whole.len() < 5 {
            j.not_whole.push(format!("{count} {}", frames.join(";")));
        }
    }
    j
}

/// A recording reads alone from the JIT files `cpiflame record` kept beside it
/// (`OUTPUT.jit/`): with CPython's own dump and perf map in /tmp gone, its Python frames are
/// named as before; with the kept folder moved away, they are not (and for the dump, one
/// warning says where it was looked for); `--jit-dir` to the moved folder names them again.
#[test]
fn a_recording_reads_alone_from_the_jit_files_kept_beside_it() {
    let python = match python313() {
        Ok(p) => p,
        Err(why) => return unavailable(why),
    };
    if !ready(&[]) {
        return;
    }
    let dir = Dir::new("jit-kept-files");
    let script = fixture("fib.py");
    let fib_samples = |args: &[&str]| -> (u64, String) {
        let out = support::cpiflame(args);
        let text = ok(&out);
        let n = text
            .lines()
            .filter(|l| l.contains("py::fib:"))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
            .sum();
        (n, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for (mode, kept_prefix) in [("perf_jit", "jit-"), ("perf", "perf-")] {
        let data = dir.path(&format!("{mode}.data"));
        let mut files = RuntimeFiles::default();
        let cmd = [python.as_os_str(), "-X".as_ref(), mode.as_ref()];
        let cmd = [cmd.as_slice(), &[script.as_os_str(), "400".as_ref()]].concat();
        cpiflame_record(dir.root(), &data, &cmd, &mut files);
        // CPython's own files in /tmp are gone from here on.
        drop(files);
        let kept = PathBuf::from(format!("{}.jit", data.display()));
        let names: Vec<String> = std::fs::read_dir(&kept)
            .unwrap_or_else(|e| panic!("{}: {e}", kept.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n.starts_with(kept_prefix)),
            "-X {mode}: {names:?} in {}",
            kept.display()
        );
        let (named, _) = fib_samples(&["fold", s(&data)]);
        assert!(
            named >= 20,
            "-X {mode}: {named} py::fib samples from the kept files"
        );
        let away = dir.path(&format!("{mode}-moved.jit"));
        std::fs::rename(&kept, &away).unwrap();
        let (alone, stderr) = fib_samples(&["fold", s(&data)]);
        assert_eq!(alone, 0, "-X {mode}: named without the kept files");
        if mode == "perf_jit" {
            assert_eq!(
                stderr
                    .lines()
                    .filter(|l| l.contains("JIT dump not found"))
                    .count(),
                1,
                "{stderr}"
            );
        }
        let (again, _) = fib_samples(&["fold", "--jit-dir", s(&away), s(&data)]);
        assert_eq!(again, named, "-X {mode}: --jit-dir {}", away.display());
    }
}
