//! Golden files of the text outputs: `report` (table and `--json`), `diff --summary` (text
//! and `--json`), `script`, `fold` and `c2c` on fixed synthetic recordings, compared byte
//! for byte with `tests/data/golden/` (`cpiflame_testkit::assert_golden`). After an intended
//! change of an output, rewrite the files with
//! `CPIFLAME_BLESS=1 cargo test -p cpiflame --test integration golden::` and review the diff.
//!
//! The recordings are written with the project's writer (`cpiflame_perf_data::synth`) with fixed
//! features (host, kernel, cpus), and their code is named by a perf map, so nothing in the
//! output depends on this machine. The one thing that does vary, the pid (a free one is
//! taken per run so the perf map is this test's alone), is written as `PID` before the
//! comparison.

use std::path::{Path, PathBuf};

use cpiflame_perf_data::abi::{misc, sample};
use cpiflame_perf_data::synth::{user_chain, write_perf_map, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, Features, Mmap2, SampleFields};

use crate::support::{cpiflame, ok, s, synthetic_pid, Dir};

const CODE: u64 = 0x7f00_0000_0000;
const PERIOD: u64 = 2_000_003;
const FUNCTIONS: [&str; 6] = ["main", "parse", "compute", "stall_here", "busy", "helper"];

fn addr_of(name: &str) -> u64 {
    let i = FUNCTIONS.iter().position(|f| *f == name).unwrap() as u64;
    CODE + i * 0x100
}

/// A stack (root first) with its stall and cycles samples.
pub(crate) type Stack = (&'static [&'static str], u64, u64);

/// The BEFORE run: a stalled path, a busy path that never stalls, a little of both.
pub(crate) const BEFORE: &[Stack] = &[
    (&["main", "compute", "stall_here"], 30, 40),
    (&["main", "busy"], 0, 60),
    (&["main", "compute", "helper"], 4, 10),
    (&["main"], 1, 5),
];

/// The AFTER run: the stalled path grew, `busy` shrank, `helper` is gone, `parse` is new.
pub(crate) const AFTER: &[Stack] = &[
    (&["main", "compute", "stall_here"], 50, 70),
    (&["main", "busy"], 0, 30),
    (&["main", "parse"], 2, 20),
    (&["main"], 1, 5),
];

/// The features of a file recorded on this host (its hostname and kernel release, so the
/// reader looks for the perf map here) with every other field fixed, so that no header field
/// the outputs might print comes from this machine.
fn features() -> Features {
    let host = Features::from_host(vec!["cpiflame-test".into()]);
    Features {
        hostname: host.hostname,
        os_release: host.os_release,
        perf_version: Some("6.1.golden".into()),
        arch: Some("x86_64".into()),
        nr_cpus: Some((2, 2)),
        cpu_desc: Some("Golden CPU".into()),
        total_mem_kb: Some(8 << 20),
        cmdline: vec!["cpiflame-test".into()],
        ..Features::default()
    }
}

/// Writes `stacks` as process `cpiapp` (pid `pid`) with Intel's stall and cycles events;
/// the perf map naming [`FUNCTIONS`] is written too.
pub(crate) fn write(dir: &Path, name: &str, pid: i32, stacks: &[Stack]) -> PathBuf {
    let events = [
        (0x1a2, "resource_stalls_any"),
        (0x3c, "cpu_clk_unhalted_thread_p"),
    ];
    let attrs: Vec<EventAttr> = events
        .iter()
        .enumerate()
        .map(|(i, &(config, name))| EventAttr {
            type_: 4,
            config,
            sample_period_or_freq: PERIOD,
            sample_type: sample::IDENTIFIER
                | sample::IP
                | sample::TID
                | sample::TIME
                | sample::ID
                | sample::CPU
                | sample::PERIOD
                | sample::CALLCHAIN,
            flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::MMAP,
            name: Some(name.to_string()),
            ids: vec![100 + i as u64],
            ..EventAttr::default()
        })
        .collect();
    let mut rec = Recording::create(dir.join(name), attrs);
    rec.comm(pid, pid, "cpiapp", 1).mmap(
        &Mmap2 {
            pid,
            tid: pid,
            addr: CODE,
            len: 0x1000,
            prot: 5,
            flags: 2,
            filename: "//anon".into(),
            misc: misc::USER,
            ..Mmap2::default()
        },
        2,
    );
    let mut time = 10;
    for &(stack, stalls, cycles) in stacks {
        let addrs: Vec<u64> = stack.iter().map(|f| addr_of(f)).collect();
        let chain = user_chain(&addrs, 0x10, 0x20);
        for (event, n) in [(0, stalls), (1, cycles)] {
            for _ in 0..n {
                time += 1;
                rec.sample(
                    event,
                    &SampleFields {
                        ip: chain[1],
                        pid,
                        tid: pid,
                        time,
                        id: 100 + event as u64,
                        period: PERIOD,
                        callchain: chain.clone(),
                        misc: misc::USER,
                        ..SampleFields::default()
                    },
                );
            }
        }
    }
    let functions: Vec<(u64, u64, &str)> =
        FUNCTIONS.iter().map(|f| (addr_of(f), 0x100, *f)).collect();
    write_perf_map(pid, &functions);
    rec.finish(&features())
}

/// The recordings of one test, and their perf maps removed when it ends.
struct Runs {
    dir: Dir,
    pids: Vec<i32>,
}

impl Runs {
    fn new(name: &str) -> Runs {
        Runs {
            dir: Dir::new(name),
            pids: Vec::new(),
        }
    }

    fn write(&mut self, name: &str, salt: u32, stacks: &[Stack]) -> PathBuf {
        let pid = synthetic_pid(3, salt);
        self.pids.push(pid);
        write(&self.dir.0, name, pid, stacks)
    }

    /// `cpiflame ARGS` (which must succeed), its standard output with every pid written as
    /// `PID` (thread N of it as `PID+N`) and the scratch directory as `DIR`.
    fn run(&self, args: &[&str]) -> String {
        let mut out = ok(&cpiflame(args)).replace(s(&self.dir.0), "DIR");
        // Threads first (the c2c recording's are pid + 1..3): `PID+N`, then the pid itself.
        for pid in &self.pids {
            for n in 1..4 {
                out = out.replace(&(pid + n).to_string(), &format!("PID+{n}"));
            }
            out = out.replace(&pid.to_string(), "PID");
        }
        out
    }
}

impl Drop for Runs {
    fn drop(&mut self) {
        for pid in &self.pids {
            let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
        }
    }
}

#[track_caller]
fn check(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(name);
    cpiflame_testkit::assert_golden(path, actual);
}

#[test]
fn report_table_and_json_match_golden_files() {
    let mut runs = Runs::new("golden-report");
    let before = runs.write("before.data", 0, BEFORE);
    check("report.txt", &runs.run(&["report", s(&before)]));
    check("report.json", &runs.run(&["report", "--json", s(&before)]));
}

#[test]
fn diff_summary_text_and_json_match_golden_files() {
    let mut runs = Runs::new("golden-diff");
    let before = runs.write("before.data", 1, BEFORE);
    let after = runs.write("after.data", 2, AFTER);
    check(
        "diff-summary.txt",
        &runs.run(&["diff", "--summary", s(&before), s(&after)]),
    );
    check(
        "diff-summary.json",
        &runs.run(&["diff", "--summary", "--json", s(&before), s(&after)]),
    );
}

#[test]
fn script_matches_golden_file() {
    let mut runs = Runs::new("golden-script");
    let before = runs.write("before.data", 3, BEFORE);
    check("script.txt", &runs.run(&["script", s(&before)]));
}

#[test]
fn fold_matches_golden_file() {
    let mut runs = Runs::new("golden-fold");
    let before = runs.write("before.data", 4, BEFORE);
    check("fold.txt", &runs.run(&["fold", s(&before)]));
}

/// c2c on the memory recording of the c2c tests (loads and stores sharing and not sharing
/// cache lines, four cpus on two nodes), the text and the JSON report.
#[test]
fn c2c_text_and_json_match_golden_files() {
    let mut runs = Runs::new("golden-c2c");
    let pid = synthetic_pid(3, 5);
    runs.pids.push(pid);
    let data = crate::c2c::write_c2c_file(&runs.dir.0, pid, false);
    check("c2c.txt", &runs.run(&["c2c", s(&data)]));
    check("c2c.json", &runs.run(&["c2c", "--json", s(&data)]));
}
