//! Off-CPU time (issue 23) against known-by-construction truth and perf.
//!
//! The `offcpu` fixture (`fixtures/workloads/offcpu.c`) runs threads whose wall time splits
//! in known ways (a thread computing, one sleeping, one waiting on a mutex, one on a pipe,
//! and two busy threads pinned to one CPU, each runnable about half the time), and each
//! measures its own on-CPU and wall time and prints them ([`support::offcpu::Truth`]).
//!
//! First the fixture itself is checked against perf, the oracle: `perf sched timehist`
//! (run, sleep and sch-delay time per thread) and switch records summed per thread from
//! `perf script --show-switch-events` must find the split the program measured, within 5%.
//! The 5% compare the recording with the program's own clocks, not a speed.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::offcpu::{parse_truth, switch_offcpu, timehist_split, Part, Seen, Split, Truth};
use support::{perf_works, Dir, Fixtures};

/// Every bound on a thread's split, as a fraction (of the thread's life, and of the part the
/// thread is about).
const TOLERANCE: f64 = 0.05;

/// The fixtures, when perf can record here (else the reason is given and `None`).
fn fixtures_for_perf() -> Option<&'static Fixtures> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return None;
    }
    Some(support::shared_fixtures().unwrap())
}

/// Runs `cmd` (a recorder with the fixture as its workload) to completion; its stdout is the
/// fixture's.
fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The fixture's truth from a recorder's output that must have succeeded.
fn truth_of(cmd: &mut Command) -> Vec<Truth> {
    let stdout = stdout_of(cmd);
    parse_truth(&stdout).unwrap()
}

/// Fails with every failure line, the truth and what was found, when there are failures.
fn assert_no_failures(failures: &[String], truth: &[Truth], found: &dyn std::fmt::Debug) {
    assert!(
        failures.is_empty(),
        "{}\ntruth: {truth:#?}\nfound: {found:#?}",
        failures.join("\n")
    );
}

#[test]
fn perf_sched_timehist_finds_the_split_the_fixture_measured() {
    let Some(fixtures) = fixtures_for_perf() else {
        return;
    };
    let dir = Dir::new("offcpu-sched");
    let data = dir.path("sched.data");
    let out = run(Command::new("perf")
        .args(["sched", "record", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&fixtures.offcpu));
    if !out.status.success() {
        // perf sched record traces every CPU: root, or kernel.perf_event_paranoid <= -1.
        cpiflame_testkit::unavailable(format!(
            "perf sched record cannot trace system-wide here: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return;
    }
    let truth = parse_truth(&String::from_utf8(out.stdout).unwrap()).unwrap();
    let text = stdout_of(
        Command::new("perf")
            .args(["sched", "timehist", "--state", "-i"])
            .arg(&data),
    );
    let splits = timehist_split(&text).unwrap();
    // timehist sees the new thread's first wait (sched_wakeup_new) but not the linger.
    let seen = Seen {
        start: true,
        linger: false,
    };
    let mut failures = Vec::new();
    for t in &truth {
        match splits.get(&t.tid) {
            Some(got) => failures.extend(t.check(got, seen, &Part::ALL, TOLERANCE)),
            None => failures.push(format!(
                "{} (tid {}): not in perf sched timehist",
                t.role, t.tid
            )),
        }
    }
    let found: Vec<_> = truth
        .iter()
        .map(|t| (&t.role, splits.get(&t.tid)))
        .collect();
    assert_no_failures(&failures, &truth, &found);
}

#[test]
fn perf_switch_records_find_the_off_cpu_time_the_fixture_measured() {
    let Some(fixtures) = fixtures_for_perf() else {
        return;
    };
    let dir = Dir::new("offcpu-switch");
    let data = dir.path("switch.data");
    let truth = truth_of(
        Command::new("perf")
            .args([
                "record",
                "-q",
                "--switch-events",
                "-e",
                "cpu-clock",
                "-g",
                "-o",
            ])
            .arg(&data)
            .arg("--")
            .arg(&fixtures.offcpu),
    );
    let sums = switch_offcpu(&switch_script(&data)).unwrap();
    // Switch records start at the thread's first switch-in, and see the linger; a waiter's
    // wake-up delay is in its blocked intervals, as the truth counts it.
    let seen = Seen {
        start: false,
        linger: true,
    };
    let mut failures = Vec::new();
    for t in &truth {
        let sum = sums.get(&t.tid).copied().unwrap_or_default();
        let got = Split {
            on_cpu: f64::NAN,
            runnable: sum.preempted_ns as f64,
            blocked: sum.blocked_ns as f64,
        };
        failures.extend(t.check(&got, seen, &[Part::Runnable, Part::Blocked], TOLERANCE));
    }
    let found: Vec<_> = truth.iter().map(|t| (&t.role, sums.get(&t.tid))).collect();
    assert_no_failures(&failures, &truth, &found);
}

/// `perf script --show-switch-events` of `data`, the fields [`switch_offcpu`] reads.
fn switch_script(data: &Path) -> String {
    stdout_of(Command::new("perf").args(["script", "-i"]).arg(data).args([
        "--show-switch-events",
        "-F",
        "comm,pid,tid,time",
        "--ns",
    ]))
}
