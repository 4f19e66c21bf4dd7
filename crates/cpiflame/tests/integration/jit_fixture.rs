//! JIT code named and unwound from a jitdump, on `fixtures/workloads/jitdump.c`: a tiny JIT
//! that writes its own `jit-PID.dump` (JIT_CODE_LOAD, MOVE, DEBUG_INFO, UNWINDING_INFO,
//! CLOSE) for functions whose stacks it knows, and prints the addresses of its loads and
//! moves and the CLOCK_MONOTONIC times of its three phases:
//!
//! ```text
//! phase A  c_leaf_spin <- jit_middle <- jit_outer (first address)  <- run <- main <- ... _start
//! phase B  c_leaf_spin <- jit_middle <- jit_outer (moved)          <- run <- main <- ... _start
//! phase C  c_leaf_spin <- jit_middle <- jit_reuse (jit_outer's first address reused) <- run ...
//!          jit_reuse (its own loop) <- run <- main <- ... _start
//! ```
//!
//! jit_outer keeps no frame pointer and zeroes %rbp: only its .eh_frame (UNWINDING_INFO)
//! unwinds it. jit_middle and jit_reuse keep frame pointers and have no CFI (their unwinding
//! info is V8's "no FDE: use the frame pointer" header, or nothing at all with the fixture's
//! `--bare-fp`). jit_outer and jit_reuse have source lines (DEBUG_INFO, `jitted.js`).
//!
//! The oracle: `perf record -k mono --call-graph dwarf`, `perf inject --jit`, `perf script`
//! (perf 6.1). What it shows, frame by frame, is in `fixtures/README.md`; the oracle tests
//! check it against the fixture's account, which proves the dump. Where perf 6.1 stops (the
//! moved jit_outer; frame-pointer JIT code without unwinding info) the fixture's known
//! stacks are the oracle.
//!
//! The tests of cpiflame reading the same recordings directly (no inject), and of `cpiflame
//! record -k mono`, wait for the jitdump reader and the record side of issue 36 and are
//! ignored until they land.

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use support::{cpiflame, ok, s, Dir};

/// Fewest samples a phase must have for its shares to mean anything (at 1000 Hz a 500 ms
/// phase has up to 500; a loaded machine gives fewer).
const MIN_SAMPLES: usize = 20;

/// Samples of a phase that may lack the expected stack: one, and 1% of the rest. A sample
/// taken in a frame-pointer JIT function's prologue or epilogue (three instructions of each
/// call of ~10^6 cycles) is unwound wrong by the frame-pointer rule, as any frame-pointer
/// code is there.
fn allowed_misses(samples: usize) -> usize {
    1 + samples / 100
}

// ---- the fixture's own account (its stdout) ----

#[derive(Debug, Clone, PartialEq, Eq)]
struct Load {
    name: String,
    addr: u64,
    size: u64,
    index: u64,
    time: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Move {
    name: String,
    old: u64,
    new: u64,
    size: u64,
    index: u64,
    time: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Phase {
    name: String,
    start: u64,
    end: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Account {
    pid: u32,
    dump: PathBuf,
    /// The code area: (start, size).
    area: (u64, u64),
    loads: Vec<Load>,
    moves: Vec<Move>,
    phases: Vec<Phase>,
    /// (function, address, file, line) of every DEBUG_INFO entry.
    lines: Vec<(String, u64, String, u32)>,
}

fn fields(line: &str) -> HashMap<&str, &str> {
    line.split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

fn num(text: &str) -> u64 {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    }
    .unwrap_or_else(|e| panic!("not a number: {text:?}: {e}"))
}

fn parse_account(stdout: &str) -> Account {
    let mut account = Account {
        pid: 0,
        dump: PathBuf::new(),
        area: (0, 0),
        loads: Vec::new(),
        moves: Vec::new(),
        phases: Vec::new(),
        lines: Vec::new(),
    };
    for line in stdout.lines() {
        let f = fields(line);
        match line.split_whitespace().next() {
            Some("jitdump") => {
                account.pid = num(f["pid"]) as u32;
                account.dump = PathBuf::from(f["dump"]);
                account.area = (num(f["area"]), num(f["area_size"]));
            }
            Some("load") => account.loads.push(Load {
                name: f["name"].to_string(),
                addr: num(f["addr"]),
                size: num(f["size"]),
                index: num(f["index"]),
                time: num(f["time"]),
            }),
            Some("move") => account.moves.push(Move {
                name: f["name"].to_string(),
                old: num(f["old"]),
                new: num(f["new"]),
                size: num(f["size"]),
                index: num(f["index"]),
                time: num(f["time"]),
            }),
            Some("phase") => account.phases.push(Phase {
                name: f["name"].to_string(),
                start: num(f["start"]),
                end: num(f["end"]),
            }),
            Some("line") => account.lines.push((
                f["name"].to_string(),
                num(f["addr"]),
                f["file"].to_string(),
                num(f["line"]) as u32,
            )),
            _ => {}
        }
    }
    assert!(account.pid != 0, "no `jitdump pid=` line in:\n{stdout}");
    let phases: Vec<&str> = account.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(phases, ["A", "B", "C"], "phases in:\n{stdout}");
    account
}

impl Account {
    fn load(&self, name: &str) -> &Load {
        self.loads
            .iter()
            .find(|l| l.name == name)
            .unwrap_or_else(|| panic!("no load of {name}: {self:#?}"))
    }

    fn moved(&self) -> &Move {
        assert_eq!(self.moves.len(), 1, "{self:#?}");
        &self.moves[0]
    }

    fn phase_at(&self, time: u64) -> Option<&str> {
        self.phases
            .iter()
            .find(|p| p.start <= time && time <= p.end)
            .map(|p| p.name.as_str())
    }

    /// Where the function named `name` is during `phase`: (start, size).
    fn code_of(&self, name: &str, phase: &str) -> (u64, u64) {
        let load = self.load(name);
        match (name, phase) {
            ("jit_outer", "B" | "C") => (self.moved().new, self.moved().size),
            _ => (load.addr, load.size),
        }
    }
}

/// Each phase's longest stack, leaf first, down to main.
fn phase_stack(phase: &str) -> [&'static str; 5] {
    match phase {
        "A" | "B" => ["c_leaf_spin", "jit_middle", "jit_outer", "run", "main"],
        "C" => ["c_leaf_spin", "jit_middle", "jit_reuse", "run", "main"],
        _ => panic!("no phase {phase}"),
    }
}

/// How a script prints JIT frames' addresses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Addresses {
    /// In the process (cpiflame).
    Process,
    /// In the image perf inject wrote (perf): useless here, the name says which.
    Image,
}

/// The stack a sample of `phase` must have, leaf first, down to main: the phase's stack from
/// its leaf's function on (c_leaf_spin; now and then a JIT function, jit_reuse's own loop
/// often). The leaf's function is the one whose code holds its address at that time, or, for
/// perf, the one it names. None for a sample outside the JIT call (run's clock reads). A JIT
/// leaf that is no function of the phase expects the whole stack, which it cannot match.
fn expected(
    a: &Account,
    phase: &str,
    sample: &Sample,
    addresses: Addresses,
) -> Option<Vec<&'static str>> {
    let stack = phase_stack(phase);
    let leaf = sample.frames.first()?;
    let jit = &stack[1..3];
    let at = if leaf.name == "c_leaf_spin" {
        0
    } else if addresses == Addresses::Process {
        let (start, size) = a.area;
        if !(start..start + size).contains(&leaf.addr) {
            return None;
        }
        jit.iter()
            .position(|f| {
                let (start, size) = a.code_of(f, phase);
                (start..start + size).contains(&leaf.addr)
            })
            .map_or(0, |i| i + 1)
    } else if leaf.name.starts_with("jit_") {
        jit.iter()
            .position(|f| *f == leaf.name)
            .map_or(0, |i| i + 1)
    } else {
        return None;
    };
    Some(stack[at..].to_vec())
}

// ---- perf script and cpiflame script text ----

#[derive(Debug, Clone)]
struct Frame {
    addr: u64,
    name: String,
    /// The DSO as printed: perf a path, cpiflame a file name; `inlined` for inlined frames.
    module: String,
}

#[derive(Debug, Clone)]
struct Sample {
    tid: u32,
    time: u64,
    /// User frames only, leaf first.
    frames: Vec<Frame>,
}

impl Sample {
    /// The names from the leaf down to main (all of them when main is not there).
    fn to_main(&self) -> Vec<&str> {
        let mut names = Vec::new();
        for f in &self.frames {
            names.push(f.name.as_str());
            if f.name == "main" {
                break;
            }
        }
        names
    }

    /// The stack reaches the program's entry.
    fn whole(&self) -> bool {
        self.frames.last().is_some_and(|f| f.name == "_start")
    }
}

/// Parses `perf script -F comm,pid,tid,time,event,ip,sym,dso --ns` (header `COMM PID/TID
/// TIME: EVENT:`) and `cpiflame script` (header `COMM TID TIME: EVENT:`): frame lines are a
/// tab, the address, the symbol and the DSO in parentheses. Kernel frames are left out.
fn parse_script(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut current: Option<Sample> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            samples.extend(current.take());
        } else if let Some(frame) = line.strip_prefix('\t') {
            let frame = frame.trim();
            let (addr, rest) = frame.split_once(' ').expect("frame: address and symbol");
            let open = rest
                .rfind(" (")
                .unwrap_or_else(|| panic!("no (DSO): {line:?}"));
            let module = rest[open + 2..].trim_end_matches(')').to_string();
            if module.starts_with("[kernel.") || module.starts_with("[guest.kernel") {
                continue;
            }
            let name = rest[..open].trim().to_string();
            let addr = u64::from_str_radix(addr, 16).expect("frame address");
            current
                .as_mut()
                .expect("frame outside a sample")
                .frames
                .push(Frame { addr, name, module });
        } else {
            samples.extend(current.take());
            let tokens: Vec<&str> = line.split_whitespace().collect();
            let at = tokens
                .iter()
                .position(|t| {
                    t.strip_suffix(':').is_some_and(|t| {
                        t.split_once('.').is_some_and(|(a, b)| {
                            !a.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
                        })
                    })
                })
                .unwrap_or_else(|| panic!("no TIME: in header {line:?}"));
            let (secs, frac) = tokens[at].trim_end_matches(':').split_once('.').unwrap();
            let nanos: u64 = format!("{frac:0<9}").parse().unwrap();
            let time = secs.parse::<u64>().unwrap() * 1_000_000_000 + nanos;
            let ids = tokens[at - 1];
            let tid = ids.rsplit('/').next().unwrap().parse().expect("tid");
            current = Some(Sample {
                tid,
                time,
                frames: Vec::new(),
            });
        }
    }
    samples.extend(current);
    samples
}

// ---- running perf ----

/// `perf ARGS` with `HOME` at `home` (perf inject writes the images it makes, and perf
/// record without -N the binaries, into `$HOME/.debug`); its stdout.
fn perf(home: &Path, args: &[&str]) -> String {
    let out = Command::new("perf")
        .args(args)
        .env("HOME", home)
        .output()
        .expect("perf runs");
    assert!(
        out.status.success(),
        "perf {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A recording of the fixture by `perf record -k mono`, and perf inject's of it.
struct Recording {
    dir: PathBuf,
    home: PathBuf,
    /// perf record's file, as perf wrote it.
    data: PathBuf,
    /// `perf inject --jit` of it.
    injected: PathBuf,
    account: Account,
}

impl Recording {
    /// perf script of perf inject's file.
    fn perf_script(&self) -> Vec<Sample> {
        let text = perf(
            &self.home,
            &[
                "script",
                "-f",
                "-i",
                s(&self.injected),
                "-F",
                "comm,pid,tid,time,event,ip,sym,dso",
                "--ns",
            ],
        );
        parse_script(&text)
    }
}

/// The fixture built by `scripts/build-fixtures.sh`, where sampling works (else None, the
/// reason reported: a skip locally, a failure under CI=true).
fn fixture() -> Option<PathBuf> {
    let f = support::sampling_fixtures()?;
    let jitdump = f.dir.join("jitdump");
    assert!(jitdump.is_file(), "{} not built", jitdump.display());
    Some(jitdump)
}

/// Runs the fixture (its dump in `dir`, `args` its own) under `perf record -e cpu-clock -F
/// 1000 EXTRA --call-graph dwarf` into `dir/perf.data` and returns its account.
fn perf_record_fixture(jitdump: &Path, dir: &Path, extra: &[&str], args: &[&str]) -> Account {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let data = dir.join("perf.data");
    let mut all = vec!["record", "-q", "-e", "cpu-clock", "-F", "1000"];
    all.extend(extra);
    all.extend(["--call-graph", "dwarf", "-N", "-o", s(&data), "--"]);
    all.push(s(jitdump));
    all.extend(["--dir", s(dir)]);
    all.extend(args);
    parse_account(&perf(&home, &all))
}

fn record(name: &str, args: &[&str]) -> Option<Recording> {
    let jitdump = fixture()?;
    let dir = support::run_scratch(name);
    let account = perf_record_fixture(&jitdump, &dir, &["-k", "mono"], args);
    let home = dir.join("home");
    let data = dir.join("perf.data");
    let injected = dir.join("inj.data");
    perf(
        &home,
        &["inject", "--jit", "-i", s(&data), "-o", s(&injected)],
    );
    Some(Recording {
        dir,
        home,
        data,
        injected,
        account,
    })
}

/// The fixture as it comes: jit_middle's and jit_reuse's unwinding info say "frame pointer".
fn recording() -> Option<&'static Recording> {
    static REC: OnceLock<Option<Recording>> = OnceLock::new();
    REC.get_or_init(|| record("jit-fixture", &[])).as_ref()
}

/// `--bare-fp --elf-mach 0 --same-file-mark`: no unwinding info for the frame-pointer
/// functions, CPython 3.13.0's machine field, file names given once per function.
fn bare_recording() -> Option<&'static Recording> {
    static REC: OnceLock<Option<Recording>> = OnceLock::new();
    REC.get_or_init(|| {
        record(
            "jit-fixture-bare",
            &["--bare-fp", "--elf-mach", "0", "--same-file-mark"],
        )
    })
    .as_ref()
}

// ---- checks ----

/// The samples of the fixture's process in its phases, with their user leaf in the JIT call
/// (c_leaf_spin, or JIT code): (phase, sample, the stack it must have).
fn phase_samples<'a>(
    account: &Account,
    samples: &'a [Sample],
    addresses: Addresses,
) -> Vec<(String, &'a Sample, Vec<&'static str>)> {
    samples
        .iter()
        .filter(|s| s.tid == account.pid)
        .filter_map(|s| {
            let phase = account.phase_at(s.time)?;
            let want = expected(account, phase, s, addresses)?;
            Some((phase.to_string(), s, want))
        })
        .collect()
}

/// Counts per phase, failing when a phase has too few samples or too many disagree.
struct Tally {
    what: String,
    seen: HashMap<String, (usize, usize)>,
    bad: Vec<String>,
}

impl Tally {
    fn new(what: impl Into<String>) -> Tally {
        Tally {
            what: what.into(),
            seen: HashMap::new(),
            bad: Vec::new(),
        }
    }

    fn count(&mut self, phase: &str, good: bool, why: impl FnOnce() -> String) {
        let entry = self.seen.entry(phase.to_string()).or_default();
        entry.0 += 1;
        if good {
            entry.1 += 1;
        } else if self.bad.len() < 20 {
            self.bad.push(format!("phase {phase}: {}", why()));
        }
    }

    fn check(&self) {
        for phase in ["A", "B", "C"] {
            let (total, good) = self.seen.get(phase).copied().unwrap_or_default();
            assert!(
                total >= MIN_SAMPLES,
                "{}: phase {phase} has {total} samples (fewer than {MIN_SAMPLES}: a machine \
                 too busy to sample it?)",
                self.what
            );
            assert!(
                total - good <= allowed_misses(total),
                "{}: phase {phase}: {good} of {total} samples as expected; first differences:\n{}",
                self.what,
                self.bad.join("\n")
            );
        }
    }
}

/// perf's stack of a sample of `phase` is the expected one down to main and whole, or, where
/// perf 6.1 stops (`stops_after`: the frames it cannot unwind), the expected stack down to
/// that frame and no further.
fn perf_stack_ok(want: &[&str], sample: &Sample, stops_after: &[&str]) -> bool {
    let got = sample.to_main();
    if got == want && sample.whole() {
        return true;
    }
    match want.iter().position(|f| stops_after.contains(f)) {
        Some(stop) => got == want[..=stop] && sample.frames.len() == stop + 1,
        None => false,
    }
}

/// perf's JIT frames come from the images perf inject wrote for their loads:
/// `DIR/jitted-PID-INDEX.so`, INDEX the load's code_index (the move's is the load's).
fn check_perf_modules(rec: &Recording, sample: &Sample) -> Result<(), String> {
    for f in &sample.frames {
        if !f.name.starts_with("jit_") {
            continue;
        }
        let load = rec.account.load(&f.name);
        let want = rec
            .dir
            .join(format!("jitted-{}-{}.so", rec.account.pid, load.index));
        if Path::new(&f.module) != want {
            return Err(format!(
                "{} in {}, not {}",
                f.name,
                f.module,
                want.display()
            ));
        }
    }
    Ok(())
}

/// The PERF_RECORD_MMAP2 records perf inject wrote for the jitted images: (address, file
/// name, time).
fn injected_mmaps(rec: &Recording) -> Vec<(u64, String, u64)> {
    let text = perf(
        &rec.home,
        &[
            "script",
            "-f",
            "-i",
            s(&rec.injected),
            "--show-mmap-events",
            "--ns",
            "-F",
            "comm,pid,tid,time,event,ip,sym,dso",
        ],
    );
    let mut out = Vec::new();
    for line in text.lines() {
        if !line.contains("PERF_RECORD_MMAP2") || !line.contains("/jitted-") {
            continue;
        }
        // jitdump 16987 10430.708211123: PERF_RECORD_MMAP2 16987/16987: [0x7f6b3ac57100(0x12)
        // @ 0x80 fe:00 10101040 1]: --xs /DIR/jitted-16987-1.so
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let at = tokens
            .iter()
            .position(|t| *t == "PERF_RECORD_MMAP2")
            .unwrap();
        let (secs, frac) = tokens[at - 1]
            .trim_end_matches(':')
            .split_once('.')
            .unwrap();
        let time = secs.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap();
        let addr = line.split_once("[0x").unwrap().1.split('(').next().unwrap();
        let file = Path::new(tokens.last().unwrap()).file_name().unwrap();
        out.push((
            u64::from_str_radix(addr, 16).unwrap(),
            file.to_string_lossy().into_owned(),
            time,
        ));
    }
    out
}

/// `perf report --sort sym,srcline` rows of the JIT functions: (symbol, srcline, percent).
fn perf_srclines(rec: &Recording, children: bool) -> Vec<(String, String, f64)> {
    let mode = if children {
        "--children"
    } else {
        "--no-children"
    };
    let text = perf(
        &rec.home,
        &[
            "report",
            "-f",
            "-i",
            s(&rec.injected),
            "--stdio",
            mode,
            "--sort",
            "sym,srcline",
            "-g",
            "none",
        ],
    );
    let mut rows = Vec::new();
    for line in text.lines() {
        let Some((head, tail)) = line.split_once("[.] ") else {
            continue;
        };
        let mut parts = tail.split_whitespace();
        let (Some(sym), Some(srcline)) = (parts.next(), parts.next()) else {
            continue;
        };
        if !sym.starts_with("jit_") {
            continue;
        }
        // The first column: self with --no-children, children (self included) with
        // --children.
        let first = head.split_whitespace().next().unwrap_or("0%");
        let share: f64 = first.trim_end_matches('%').parse().unwrap_or(0.0);
        rows.push((sym.to_string(), srcline.to_string(), share));
    }
    rows
}

// ---- the oracle: perf inject ----

/// perf inject turns each LOAD and MOVE into an image at the fixture's addresses and times;
/// perf names the JIT frames from them, unwinds jit_outer by its .eh_frame and jit_middle
/// and jit_reuse by their frame pointers (their unwinding info has no FDE), whole down to
/// _start, picks jit_outer or jit_reuse at the reused address by time, and gives the
/// DEBUG_INFO lines. perf 6.1 stops at the moved jit_outer (its MOVE's image is mapped
/// without the unwind data: `fixtures/README.md`).
#[test]
fn perf_inject_names_and_unwinds_the_fixtures_jit_code_as_the_dump_says() {
    let Some(rec) = recording() else { return };
    let a = &rec.account;
    let pid = a.pid;

    let (middle, outer, reuse, moved) = (
        a.load("jit_middle"),
        a.load("jit_outer"),
        a.load("jit_reuse"),
        a.moved(),
    );
    assert_eq!(
        (reuse.addr, moved.old, moved.index),
        (outer.addr, outer.addr, outer.index),
        "jit_reuse reuses jit_outer's first address; the move names jit_outer's load"
    );
    assert_eq!(
        injected_mmaps(rec),
        vec![
            (middle.addr, format!("jitted-{pid}-1.so"), middle.time),
            (outer.addr, format!("jitted-{pid}-2.so"), outer.time),
            (moved.new, format!("jitted-{pid}-2.so"), moved.time),
            (reuse.addr, format!("jitted-{pid}-3.so"), reuse.time),
        ],
        "perf inject's images of the loads and the move"
    );

    let samples = rec.perf_script();
    let mut tally = Tally::new("perf script of perf inject's recording");
    for (phase, sample, want) in phase_samples(a, &samples, Addresses::Image) {
        let stops_after: &[&str] = if phase == "B" { &["jit_outer"] } else { &[] };
        let modules = check_perf_modules(rec, sample);
        tally.count(
            &phase,
            perf_stack_ok(&want, sample, stops_after) && modules.is_ok(),
            || {
                format!(
                    "{:?} whole={} {modules:?}",
                    sample.to_main(),
                    sample.whole()
                )
            },
        );
    }
    tally.check();

    // DEBUG_INFO: jit_reuse's samples of its own are on its loop's line; the callers' frames
    // on their calls' lines (jit_outer's at both of its addresses: the moved code keeps its
    // image, lines and all). jit_middle has no lines.
    let own = perf_srclines(rec, false);
    let hottest = own
        .iter()
        .filter(|(sym, ..)| sym == "jit_reuse")
        .max_by(|x, y| x.2.total_cmp(&y.2))
        .unwrap_or_else(|| panic!("no jit_reuse row in perf report: {own:?}"));
    assert_eq!(hottest.1, "jitted.js:32", "{own:?}");
    let children = perf_srclines(rec, true);
    for (sym, line) in [("jit_outer", "jitted.js:11"), ("jit_reuse", "jitted.js:33")] {
        assert!(
            children.iter().any(|(s, l, _)| s == sym && l == line),
            "{sym} at {line} in perf report --children: {children:?}"
        );
    }
}

/// Without any unwinding info for the frame-pointer functions (`--bare-fp`), perf's DWARF
/// unwinding stops at them: the stacks end at jit_middle (and at jit_reuse for its own
/// loop), as they end at CPython's and node's perf-map code (issue 36). The dump with
/// elf_mach 0 and the "\xff" file marks is read by perf inject all the same: the frames
/// it shows are named.
#[test]
fn perf_stops_at_jit_code_without_unwinding_info() {
    let Some(rec) = bare_recording() else { return };
    let samples = rec.perf_script();
    let mut tally = Tally::new("perf script of the --bare-fp recording");
    for (phase, sample, want) in phase_samples(&rec.account, &samples, Addresses::Image) {
        // The first frame-pointer JIT function ends the stack; a sample in jit_outer itself
        // (now and then) has none and is whole.
        let stack_ok = match want
            .iter()
            .position(|f| *f == "jit_middle" || *f == "jit_reuse")
        {
            Some(stop) => sample.to_main() == want[..=stop] && sample.frames.len() == stop + 1,
            None => sample.to_main() == want && sample.whole(),
        };
        let modules = check_perf_modules(rec, sample);
        tally.count(&phase, stack_ok && modules.is_ok(), || {
            format!("{:?} {modules:?}", sample.to_main())
        });
    }
    tally.check();
}

/// cpiflame reading perf inject's file (its jitted images, their .eh_frame) gives perf's
/// stacks, and the moved jit_outer's (where perf stops) whole.
#[test]
fn cpiflame_reads_perf_injects_images_as_perf_names_them() {
    let Some(rec) = recording() else { return };
    let ours = parse_script(&ok(&cpiflame(&["script", s(&rec.injected)])));
    compare_with_perf(rec, &ours, "cpiflame script of perf inject's recording");
}

/// Every phase sample of `ours` (cpiflame's script of a recording of the same run) has the
/// expected stack, whole, with the JIT frames at the phase's addresses; the same as perf
/// inject's by name, frame by frame, where perf's is whole (where perf stops, perf's frames
/// are the first of ours).
fn compare_with_perf(rec: &Recording, ours: &[Sample], what: &str) {
    let a = &rec.account;
    let theirs: HashMap<(u32, u64), Sample> = rec
        .perf_script()
        .into_iter()
        .map(|s| ((s.tid, s.time), s))
        .collect();
    let mut tally = Tally::new(what);
    let mut compared = 0;
    for (phase, sample, want) in phase_samples(a, ours, Addresses::Process) {
        let got = sample.to_main();
        let perf = theirs.get(&(sample.tid, sample.time));
        let as_perf = perf.is_none_or(|p| {
            let p_names = p.to_main();
            if p.whole() {
                p_names == got
            } else {
                got.starts_with(&p_names)
            }
        });
        compared += usize::from(perf.is_some());
        let placed = check_addresses(a, &phase, sample);
        tally.count(
            &phase,
            got == want && sample.whole() && as_perf && placed.is_ok(),
            || {
                format!(
                    "ours {got:?} whole={} {placed:?}; perf's {:?}",
                    sample.whole(),
                    perf.map(Sample::to_main)
                )
            },
        );
    }
    tally.check();
    assert!(
        compared > 0,
        "{what}: no sample matched perf's by thread and time"
    );
}

/// The JIT frames of a sample of `phase` are inside their code where it was then.
fn check_addresses(a: &Account, phase: &str, sample: &Sample) -> Result<(), String> {
    for f in sample.frames.iter().filter(|f| f.name.starts_with("jit_")) {
        let (start, size) = a.code_of(&f.name, phase);
        if !(start..start + size).contains(&f.addr) {
            return Err(format!(
                "{} at {:#x}, outside {start:#x}..{:#x}",
                f.name,
                f.addr,
                start + size
            ));
        }
    }
    Ok(())
}

// ---- cpiflame reading the dump itself ----

/// perf's own `-k mono` recording, read directly (no perf inject): the dump, found by the
/// recording's mapping of it, names every JIT frame by the load in force at the sample's
/// time (the moved code keeps its name, the reused address has the newer one after its
/// load), its .eh_frame unwinds jit_outer at both addresses, the frame pointer the others;
/// the stacks are perf inject's, frame by frame, and whole where perf's stop.
#[test]
fn cpiflame_reads_perfs_mono_recording_as_perf_inject_names_it() {
    let Some(rec) = recording() else { return };
    let out = cpiflame(&["script", s(&rec.data)]);
    let ours = parse_script(&ok(&out));
    compare_with_perf(rec, &ours, "cpiflame script of perf's own recording");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("anon"), "{stderr}");

    // Folded: JIT frames are `_[j]`, and no address is left unnamed.
    let folded = ok(&cpiflame(&["fold", s(&rec.data)]));
    assert!(!folded.contains("anon+"), "{folded}");
    for stack in [
        "run;jit_outer_[j];jit_middle_[j];c_leaf_spin ",
        "run;jit_reuse_[j];jit_middle_[j];c_leaf_spin ",
        "run;jit_reuse_[j] ",
    ] {
        assert!(folded.contains(stack), "{stack:?} not in:\n{folded}");
    }
}

/// The `--bare-fp` recording read directly: frame-pointer JIT code without any unwinding
/// info is unwound by its frame pointers (where perf stops), the dump's elf_mach 0 (CPython
/// 3.13.0's) is accepted, and "\xff" names the file of the entry before.
#[test]
fn cpiflame_unwinds_frame_pointer_jit_code_without_unwinding_info() {
    let Some(rec) = bare_recording() else { return };
    let ours = parse_script(&ok(&cpiflame(&["script", s(&rec.data)])));
    compare_with_perf(rec, &ours, "cpiflame script of the --bare-fp recording");
    let (file, line) = hottest_self_line(&rec.data, "jit_reuse");
    assert_eq!((file.as_str(), line), ("jitted.js", 32));
}

/// `cpiflame record -k mono` of the fixture: the same stacks, names and addresses by phase.
#[test]
fn cpiflame_record_mono_of_the_fixture_has_whole_named_jit_stacks() {
    let Some(jitdump) = fixture() else { return };
    let dir = Dir::new("jit-fixture-record");
    let data = dir.path("out.data");
    let out = cpiflame(&[
        "record",
        "-k",
        "mono",
        "-e",
        "cpu-clock",
        "-F",
        "1000",
        "-N",
        "-o",
        s(&data),
        "--",
        s(&jitdump),
        "--dir",
        s(dir.root()),
    ]);
    let account = parse_account(&ok(&out));
    let ours = parse_script(&ok(&cpiflame(&["script", s(&data)])));
    let mut tally = Tally::new("cpiflame script of cpiflame record -k mono");
    for (phase, sample, want) in phase_samples(&account, &ours, Addresses::Process) {
        let placed = check_addresses(&account, &phase, sample);
        tally.count(
            &phase,
            sample.to_main() == want && sample.whole() && placed.is_ok(),
            || format!("{:?} whole={} {placed:?}", sample.to_main(), sample.whole()),
        );
    }
    tally.check();
    let (file, line) = hottest_self_line(&data, "jit_reuse");
    assert_eq!((file.as_str(), line), ("jitted.js", 32));
}

/// `report --lines --json`: FUNCTION's hottest self line, (file name, line).
fn hottest_self_line(data: &Path, function: &str) -> (String, u64) {
    let json: Value =
        serde_json::from_str(&ok(&cpiflame(&["report", s(data), "--lines", "--json"])))
            .expect("report --json");
    let frame = json["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == function)
        .unwrap_or_else(|| panic!("no {function} frame: {json}"));
    let line = &frame["hottest_line"];
    let file = line["file"]
        .as_str()
        .unwrap_or_else(|| panic!("{function}: no hottest line: {frame}"));
    let name = Path::new(file).file_name().unwrap().to_string_lossy();
    (name.into_owned(), line["line"].as_u64().unwrap())
}

/// `hottest lines:` rows of a tooltip: (`file:line`, whole percent).
fn tooltip_lines(title: &str) -> Vec<(String, f64)> {
    let Some((_, rows)) = title.split_once("\nhottest lines:\n") else {
        return Vec::new();
    };
    rows.lines()
        .filter_map(|row| {
            let mut parts = row.split_whitespace();
            let line = parts.next()?.to_string();
            let share = parts.next()?.trim_end_matches('%').parse().ok()?;
            Some((line, share))
        })
        .collect()
}

/// DEBUG_INFO read from the dump: `report --lines` gives jit_reuse's loop line as its
/// hottest self line (perf report's srcline); the graph's tooltips give the callers' call
/// lines (jit_outer's line 11, at both of its addresses; jit_reuse's loop and call lines),
/// perf report --children's; annotate disassembles jit_reuse from the code the load carried.
#[test]
fn jit_source_lines_and_code_come_from_the_dump() {
    let Some(rec) = recording() else { return };
    let (file, line) = hottest_self_line(&rec.data, "jit_reuse");
    assert_eq!((file.as_str(), line), ("jitted.js", 32));

    let svg = rec.dir.join("jit.svg");
    ok(&cpiflame(&["render", s(&rec.data), "-o", s(&svg)]));
    let svg = std::fs::read_to_string(&svg).unwrap();
    for (function, want) in [
        ("jit_outer", &["jitted.js:11"][..]),
        ("jit_reuse", &["jitted.js:32", "jitted.js:33"][..]),
    ] {
        let titles = crate::hot_lines::titles(&svg, function);
        assert!(!titles.is_empty(), "no {function} frame in the graph");
        for title in &titles {
            let lines = tooltip_lines(title);
            for line in want {
                assert!(
                    lines.iter().any(|(l, _)| l == line),
                    "{function}: {line} not among the hottest lines: {title}"
                );
            }
        }
    }

    let text = ok(&cpiflame(&["annotate", s(&rec.data), "jit_reuse"]));
    for instruction in ["decq -0x10(%rbp)", "jne"] {
        assert!(text.contains(instruction), "{instruction} in:\n{text}");
    }
}

/// A recording with perf's default clock (no `-k mono`): its sample times do not order with
/// the dump's, so the dump is read by address, the latest load winning (jit_outer's first
/// address is jit_reuse throughout, the moved copy jit_outer), with one warning naming the
/// dump, and no JIT frame is left unnamed.
#[test]
fn a_recording_without_the_monotonic_clock_is_named_by_address() {
    let Some(jitdump) = fixture() else { return };
    let dir = Dir::new("jit-fixture-perf-clock");
    let account = perf_record_fixture(&jitdump, dir.root(), &[], &[]);
    let data = dir.path("perf.data");
    let out = cpiflame(&["script", s(&data)]);
    let samples = parse_script(&ok(&out));
    let dump = account.dump.file_name().unwrap().to_string_lossy();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().filter(|l| l.contains(dump.as_ref())).count(),
        1,
        "one warning naming {dump}: {stderr}"
    );
    let outer = account.load("jit_outer");
    let moved = account.moved();
    let mut named = 0;
    for f in samples
        .iter()
        .filter(|s| s.tid == account.pid)
        .flat_map(|s| &s.frames)
    {
        assert!(!f.name.starts_with("anon+"), "{f:?}");
        if (outer.addr..outer.addr + outer.size).contains(&f.addr) {
            assert_eq!(f.name, "jit_reuse", "{f:?}");
            named += 1;
        }
        if (moved.new..moved.new + moved.size).contains(&f.addr) {
            assert_eq!(f.name, "jit_outer", "{f:?}");
        }
    }
    assert!(named > 0, "no frame at jit_outer's first address");
}

// ---- the parsers, on text as the fixture and the tools print it ----

#[test]
fn the_accounts_and_scripts_of_the_fixture_parse() {
    let account = parse_account(
        "jitdump pid=42 dump=/d/jit-42.dump elf_mach=62 area=0x1000 area_size=65536 \
         c_leaf_spin=0x5000\n\
         load name=jit_middle addr=0x1100 size=18 index=1 time=10\n\
         line name=jit_outer addr=0x1009 file=jitted.js line=11\n\
         load name=jit_outer addr=0x1000 size=33 index=2 time=11\n\
         unwind name=jit_outer addr=0x1028 unwind_size=88 eh_frame_hdr_size=20\n\
         phase name=A start=20 end=30\n\
         move name=jit_outer old=0x1000 new=0x1800 size=33 index=2 time=31\n\
         phase name=B start=40 end=50\n\
         load name=jit_reuse addr=0x1000 size=43 index=3 time=51\n\
         phase name=C start=60 end=70\n\
         close time=71\n",
    );
    assert_eq!(account.pid, 42);
    assert_eq!(account.dump, Path::new("/d/jit-42.dump"));
    assert_eq!(account.phase_at(45), Some("B"));
    assert_eq!(account.phase_at(35), None);
    assert_eq!(account.code_of("jit_outer", "A"), (0x1000, 33));
    assert_eq!(account.code_of("jit_outer", "B"), (0x1800, 33));
    assert_eq!(account.code_of("jit_reuse", "C"), (0x1000, 43));
    assert_eq!(
        account.lines,
        [("jit_outer".into(), 0x1009, "jitted.js".into(), 11)]
    );

    let perf = "jitdump 42/42 10537.429585893:     cpu-clock: \n\
                \tffffffff81000e06 asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])\n\
                \t            1c18 c_leaf_spin (/d/jitdump)\n\
                \t              8f jit_middle (/d/jitted-42-1.so)\n\
                \t           27249 __libc_start_main_impl (inlined)\n\
                \t            1b20 _start (/d/jitdump)\n\n";
    let ours = "jitdump 42 10537.429585893: cpu-clock:\n\
                \t    56064f97dbf8 c_leaf_spin (jitdump)\n\
                \t    7f46ea819110 anon+0x7f46ea819110 (anon)\n";
    let perf = parse_script(perf);
    let ours = parse_script(ours);
    assert_eq!((perf[0].tid, perf[0].time), (42, 10_537_429_585_893));
    assert_eq!((ours[0].tid, ours[0].time), (perf[0].tid, perf[0].time));
    assert_eq!(
        perf[0].to_main(),
        [
            "c_leaf_spin",
            "jit_middle",
            "__libc_start_main_impl",
            "_start"
        ]
    );
    assert!(perf[0].whole() && !ours[0].whole());
    assert_eq!(perf[0].frames[1].module, "/d/jitted-42-1.so");
    assert_eq!(ours[0].frames[1].name, "anon+0x7f46ea819110");

    // The stack a sample must have, from its leaf's function on: perf's by its name,
    // cpiflame's by its address, then (jit_outer's first address: jit_reuse's in phase C).
    let leaf = |name: &str, addr: u64| Sample {
        tid: 42,
        time: 65,
        frames: vec![Frame {
            addr,
            name: name.into(),
            module: String::new(),
        }],
    };
    let by_name = expected(&account, "C", &leaf("jit_reuse", 0x90), Addresses::Image);
    let by_address = expected(
        &account,
        "C",
        &leaf("jit_outer", 0x1010),
        Addresses::Process,
    );
    assert_eq!(by_name, Some(vec!["jit_reuse", "run", "main"]));
    assert_eq!(by_address, by_name);
    // A JIT leaf of no function of the phase expects the whole stack, which it cannot have.
    let stale = expected(&account, "C", &leaf("jit_outer", 0x90), Addresses::Image);
    assert_eq!(stale.unwrap().len(), 5);
    assert_eq!(
        expected(&account, "C", &leaf("run", 0x5555_0000), Addresses::Process),
        None
    );
}
