//! Issue 37, item 5: every thread's wall time checked against perf on the same file.
//!
//! The `offcpu` fixture (`fixtures/workloads/offcpu.c`, its threads' roles known by
//! construction) is recorded by perf in the test, and cpiflame's per-thread on-CPU, runnable
//! and blocked nanoseconds (`fold --tid --event COLUMN`, summed per thread id) are compared
//! with what perf itself reads from the same file:
//!
//! - **switch records**, `perf record --switch-events -e cpu-clock` without `-g` (no stack
//!   anywhere) and `perf record -a --switch-events -e cpu-clock` (PERF_RECORD_SWITCH_CPU_WIDE):
//!   perf's records as `perf script --show-switch-events --show-task-events --ns` prints
//!   them, summed per thread by [`switch_split`] (on-CPU: switch-in to switch-out or exit;
//!   runnable: a `preempt` switch-out to the next switch-in, and the fork to the first
//!   switch-in; blocked: any other switch-out to the next switch-in, wake-up delays included,
//!   as no wakeups are recorded). Each part within 5% of perf's (or 20 µs for parts smaller
//!   than that), and each thread's width (the three summed) within 5% of its life in perf's
//!   records, fork to exit.
//! - **`perf sched timehist --state`**, of `perf record -a -g -e
//!   sched:sched_switch,sched:sched_wakeup,sched:sched_wakeup_new` read by cpiflame as the
//!   `perf script --show-task-events --ns` text users convert it to: per thread, timehist's
//!   run time is on-CPU, a line's wait time after an `R` switch-out and every sch delay
//!   (wakeup, or `sched_wakeup_new`, to switch-in) runnable, the rest of a wait blocked
//!   (`support::offcpu::timehist_split`). timehist lists the switch that takes an exiting
//!   thread off its CPU under `:-1`, so the thread's last wait and its last run are not the
//!   thread's there: both are put back from perf's text of the same file (`exit_segments`:
//!   the wait from the thread's switch-out before its last switch-in, blocked to its
//!   `sched_wakeup` and runnable from then, and the run from that switch-in to its EXIT
//!   record). A new thread's first sch delay is its fork wait, which perf counts from
//!   `sched_wakeup_new` and cpiflame from the FORK record just before it; the bound on
//!   runnable widens by the wait the fixture measured (`start_ns`, an upper bound on it).
//!   Each part within 5% of timehist's (20 µs floor). timehist's run time is the time since
//!   the CPU's previous `sched_switch`: the kernel here emits no `sched_switch` for some
//!   switches (most of them an idle CPU's to a thread a timer woke), and a thread whose
//!   switch-in is missing is then given the idle CPU's time by timehist (80 ms on a CPU for a
//!   sleeper that ran 50 µs). The recording is taken up to three times to find one without
//!   such gaps among the fixture's threads; in the one kept (the fewest), a thread in a gap
//!   is checked against the fixture's own clocks (`Truth::check`, every part within 5%), and
//!   a part where timehist contradicts those clocks and cpiflame does not is checked against
//!   them instead and listed (no more than a quarter of the parts may need it).
//! - the CPU-wide recording's `perf script` text gives the perf.data file's per-thread split
//!   exactly (`--ns`), with and without `--time`, and the same warnings.
//!
//! perf's own `offcpu-time` (`perf record --off-cpu`) is not recorded here: Debian's perf 6.1
//! is built without BPF skeletons (`perf version --build-options` has no `bpf_skeletons`, and
//! `--off-cpu` is ignored with a warning), so its `offcpu-time` samples are checked on
//! synthetic input only (`crates/pipeline/tests/wall_time.rs`, `wall_script.rs`).

use crate::support;
use crate::wall_truth::{fixtures_for_perf, run, stdout_of};

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
use support::offcpu::{parse_truth, timehist_split, Part, Seen, Split, Truth};
use support::{cpiflame, ok, s, Dir};

const TOLERANCE: f64 = 0.05;
/// Parts smaller than this are compared to it: 5% of a few microseconds is below the
/// records' own jitter (an exit's last instants).
const FLOOR_NS: f64 = 20_000.0;

/// `perf record ARGS -o DATA -- offcpu 0.2`: the fixture's truth, or None where perf cannot
/// record (a failure under CI).
fn perf_record(args: &[&str], data: &Path) -> Option<Vec<Truth>> {
    let fixtures = fixtures_for_perf()?;
    let out = run(Command::new("perf")
        .args(["record", "-q"])
        .args(args)
        .arg("-o")
        .arg(data)
        .arg("--")
        .arg(&fixtures.offcpu)
        .arg("0.2"));
    if !out.status.success() {
        cpiflame_testkit::unavailable(format!(
            "perf record {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return None;
    }
    Some(parse_truth(&String::from_utf8(out.stdout).unwrap()).unwrap())
}

/// Per thread id, cpiflame's split of `input` (`fold --tid --event COLUMN EXTRA`), and the
/// command's stderr.
fn cpiflame_split(input: &Path, extra: &[&str]) -> (HashMap<u32, Split>, String) {
    let mut splits: HashMap<u32, Split> = HashMap::new();
    let mut stderr = String::new();
    for (part, column) in [
        (Part::OnCpu, ON_CPU),
        (Part::Runnable, RUNNABLE),
        (Part::Blocked, BLOCKED),
    ] {
        let mut args = vec!["fold", "--tid", "--event", column];
        args.extend_from_slice(extra);
        args.push(s(input));
        let out = cpiflame(&args);
        let text = ok(&out);
        if part == Part::OnCpu {
            stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        }
        for line in text.lines() {
            let (stack, count) = line.rsplit_once(' ').unwrap();
            let root = stack.split(';').next().unwrap();
            let tid: i64 = root.rsplit_once('/').unwrap().1.parse().unwrap();
            let ns: f64 = count.parse().unwrap();
            let Ok(tid) = u32::try_from(tid) else {
                continue;
            };
            let split = splits.entry(tid).or_default();
            match part {
                Part::OnCpu => split.on_cpu += ns,
                Part::Runnable => split.runnable += ns,
                Part::Blocked => split.blocked += ns,
            }
        }
    }
    (splits, stderr)
}

/// One thread's life in perf's switch records.
#[derive(Clone, Copy, Debug, Default)]
struct Life {
    split: Split,
    fork: Option<u64>,
    exit: Option<u64>,
}

/// `SECONDS.NANOS` as nanoseconds.
fn ns_of(text: &str) -> Option<u64> {
    let (secs, nanos) = text.trim_end_matches(':').split_once('.')?;
    (nanos.len() == 9).then_some(())?;
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + nanos.parse::<u64>().ok()?)
}

/// Per thread id, perf's switch records summed (see the module docs), from `perf script
/// --show-switch-events --show-task-events -F comm,pid,tid,time --ns` text, in perf's time
/// order. Records of negative ids (an exiting thread's last switch, CPU-wide) are skipped.
fn switch_split(text: &str) -> HashMap<u32, Life> {
    let mut lives: HashMap<u32, Life> = HashMap::new();
    // Per thread: since when it is on (Some(true)), or off (runnable or not).
    let mut state: HashMap<u32, (u64, Option<bool>)> = HashMap::new();
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = tokens.iter().position(|t| t.starts_with("PERF_RECORD_")) else {
            continue;
        };
        let Some(time) = tokens.get(at.wrapping_sub(1)).and_then(|t| ns_of(t)) else {
            continue;
        };
        let record = tokens[at];
        let ids = |inner: &str| -> Option<u32> {
            let inner = inner.split_once('(')?.1.split_once(')')?.0;
            inner.split_once(':')?.1.parse().ok()
        };
        if record.starts_with("PERF_RECORD_FORK(") {
            if let Some(tid) = ids(record) {
                lives.entry(tid).or_default().fork = Some(time);
                // Runnable until its first switch-in.
                state.insert(tid, (time, Some(true)));
            }
            continue;
        }
        let header_tid = tokens[at - 2]
            .split_once('/')
            .and_then(|(_, t)| t.parse::<i64>().ok())
            .and_then(|t| u32::try_from(t).ok());
        if record.starts_with("PERF_RECORD_EXIT(") {
            if let Some(tid) = ids(record) {
                let life = lives.entry(tid).or_default();
                life.exit = Some(time);
                if let Some((since, None)) = state.remove(&tid) {
                    life.split.on_cpu += (time - since) as f64;
                }
            }
            continue;
        }
        if !record.starts_with("PERF_RECORD_SWITCH") {
            continue;
        }
        let Some(tid) = header_tid else {
            continue;
        };
        if lives.get(&tid).is_some_and(|l| l.exit.is_some()) {
            continue;
        }
        let life = lives.entry(tid).or_default();
        match tokens.get(at + 1) {
            Some(&"OUT") => {
                if let Some((since, None)) = state.get(&tid).copied() {
                    life.split.on_cpu += (time - since) as f64;
                }
                let preempt = tokens.get(at + 2) == Some(&"preempt");
                state.insert(tid, (time, Some(preempt)));
            }
            Some(&"IN") => {
                match state.get(&tid).copied() {
                    Some((since, Some(true))) => life.split.runnable += (time - since) as f64,
                    Some((since, Some(false))) => life.split.blocked += (time - since) as f64,
                    _ => {}
                }
                state.insert(tid, (time, None));
            }
            _ => {}
        }
    }
    lives
}

/// Fails unless each part of `ours` is within 5% of `perf`'s (or [`FLOOR_NS`]), `slack`
/// added per part.
fn within(who: &str, ours: &Split, perf: &Split, slack: [f64; 3], failures: &mut Vec<String>) {
    for (i, part) in Part::ALL.into_iter().enumerate() {
        let (o, p) = (part.of(ours), part.of(perf));
        let bound = (TOLERANCE * p).max(FLOOR_NS) + slack[i];
        if (o - p).abs() > bound {
            failures.push(format!(
                "{who}: {} {:.3} ms, perf {:.3} ms (± {:.3} ms)",
                part.name(),
                o / 1e6,
                p / 1e6,
                bound / 1e6
            ));
        }
    }
}

/// `perf script --show-switch-events --show-task-events -F comm,pid,tid,time --ns` of
/// `data`.
fn switch_text(data: &Path) -> String {
    stdout_of(Command::new("perf").args(["script", "-i"]).arg(data).args([
        "--show-switch-events",
        "--show-task-events",
        "-F",
        "comm,pid,tid,time",
        "--ns",
    ]))
}

/// Every fixture thread's split in `data` against perf's switch records of it.
fn check_against_switch_records(data: &Path, truth: &[Truth]) {
    let (ours, stderr) = cpiflame_split(data, &[]);
    let perf = switch_split(&switch_text(data));
    let mut failures = Vec::new();
    let mut found = Vec::new();
    for t in truth {
        let who = format!("{} (tid {})", t.role, t.tid);
        let (Some(o), Some(p)) = (ours.get(&t.tid), perf.get(&t.tid)) else {
            failures.push(format!("{who}: not in cpiflame's fold or perf's records"));
            continue;
        };
        found.push((who.clone(), *o, *p));
        within(&who, o, &p.split, [0.0; 3], &mut failures);
        // The width is the thread's life, fork to exit, in perf's records.
        let (Some(fork), Some(exit)) = (p.fork, p.exit) else {
            failures.push(format!("{who}: no FORK or EXIT in perf's records"));
            continue;
        };
        let life = (exit - fork) as f64;
        let width = o.on_cpu + o.off_cpu();
        if (width - life).abs() > TOLERANCE * life {
            failures.push(format!(
                "{who}: width {:.3} ms, life {:.3} ms",
                width / 1e6,
                life / 1e6
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nfound (cpiflame, perf): {found:#?}\nstderr: {stderr}",
        failures.join("\n")
    );
    // The numbers, for `--nocapture`.
    eprintln!("{}: (cpiflame, perf) {found:#?}", data.display());
    // Nothing left out without being shown as such.
    for line in stderr.lines() {
        let left_out = (line.contains("without an on-CPU sample")
            && !line.contains("drawn as [on-CPU, not sampled]"))
            || (line.contains("no switch-out stack") && !line.contains("drawn as [runnable]"));
        assert!(!left_out, "time left out of the graph: {line}");
    }
}

/// Switch records and no stack anywhere: each thread's on-CPU time is `[on-CPU, not
/// sampled]` where it has no cpu-clock sample, its off-CPU time `[runnable]`/`[blocked]`.
#[test]
fn stackless_switch_records_give_each_thread_perfs_split() {
    let dir = Dir::new("wall-oracle-bare");
    let data = dir.path("perf.data");
    let Some(truth) = perf_record(&["--switch-events", "-e", "cpu-clock"], &data) else {
        return;
    };
    check_against_switch_records(&data, &truth);
}

/// CPU-wide switch records (PERF_RECORD_SWITCH_CPU_WIDE, `-a`): the perf.data file, and
/// its `perf script` text end to end.
#[test]
fn cpu_wide_switch_records_give_each_thread_perfs_split_in_file_and_text() {
    let dir = Dir::new("wall-oracle-cpu-wide");
    let data = dir.path("perf.data");
    let Some(truth) = perf_record(&["-a", "--switch-events", "-e", "cpu-clock", "-g"], &data)
    else {
        return;
    };
    check_against_switch_records(&data, &truth);
    // The text: the same split as the file, to the nanosecond, with and without --time,
    // and the same warnings.
    let text = dir.path("perf.txt");
    let out = stdout_of(
        Command::new("perf")
            .args(["script", "-i"])
            .arg(&data)
            .args(["--show-switch-events", "--show-task-events", "--ns"]),
    );
    std::fs::write(&text, &out).unwrap();
    let range = same_in_text(&data, &text, &truth);
    let compute = truth.iter().find(|t| t.role == "compute").unwrap();
    // A --time range gives the thread the time inside it: compute is on or runnable for
    // all of the 40 ms.
    let (inside, _) = cpiflame_split(&text, &["--time", &range]);
    let c = inside[&compute.tid];
    let width = c.on_cpu + c.off_cpu();
    assert!(
        (width - 40e6).abs() <= 40e6 * TOLERANCE,
        "compute in {range}: {c:?}"
    );
}

/// System-wide sched tracepoints, as `perf script` text, against `perf sched timehist` of
/// the same file; a thread the file lacks switches of, against the fixture's own clocks.
#[test]
fn sched_tracepoint_text_gives_each_thread_perf_sched_timehists_split() {
    let dir = Dir::new("wall-oracle-sched");
    let data = dir.path("perf.data");
    let events = "sched:sched_switch,sched:sched_wakeup,sched:sched_wakeup_new";
    // The kernel here does not emit every `sched_switch` (ftrace misses the same ones, most
    // of them an idle CPU's switch to a woken thread), so a recording is taken again, up to
    // three times, to find one where none of the fixture's threads is in a gap (see `gaps`);
    // the fewest-gaps recording is kept and its threads in a gap are checked against the
    // fixture's clocks instead of timehist (whose rule for a missing switch-in is known to
    // contradict them).
    let mut best: Option<(Vec<Truth>, String, Vec<u32>)> = None;
    for _ in 0..3 {
        let Some(truth) = perf_record(&["-a", "-g", "-e", events], &data) else {
            return;
        };
        let script = stdout_of(
            Command::new("perf")
                .args(["script", "-i"])
                .arg(&data)
                .args(["--show-task-events", "--ns"]),
        );
        let broken: Vec<u32> = gaps(&script)
            .into_iter()
            .filter(|tid| truth.iter().any(|t| t.tid == *tid))
            .collect();
        let better = best.as_ref().is_none_or(|(_, _, b)| broken.len() < b.len());
        if better {
            std::fs::copy(&data, dir.path("kept.data")).unwrap();
            best = Some((truth, script, broken));
        }
        if best.as_ref().is_some_and(|(_, _, b)| b.is_empty()) {
            break;
        }
    }
    let (truth, script, broken) = best.unwrap();
    let data = dir.path("kept.data");
    if !broken.is_empty() {
        eprintln!("perf's file lacks switches of threads {broken:?}: checked against the fixture's clocks");
    }
    let text = dir.path("perf.txt");
    std::fs::write(&text, &script).unwrap();
    same_in_text(&data, &text, &truth);
    let exits = exit_segments(&script);
    let (ours, stderr) = cpiflame_split(&text, &[]);
    let timehist = stdout_of(
        Command::new("perf")
            .args(["sched", "timehist", "--state", "--no-call-graph", "-i"])
            .arg(&data),
    );
    let perf = timehist_split(&timehist).unwrap();
    // What the fixture's clocks say, for the parts where timehist contradicts them.
    let seen = Seen {
        start: None,
        linger: true,
        wakeups: Some(true),
    };
    let mut failures = Vec::new();
    let mut found = Vec::new();
    let mut contradicted = Vec::new();
    for t in &truth {
        let who = format!("{} (tid {})", t.role, t.tid);
        let Some(o) = ours.get(&t.tid) else {
            failures.push(format!("{who}: not in cpiflame's fold"));
            continue;
        };
        if broken.contains(&t.tid) {
            failures.extend(t.check(o, seen, &Part::ALL, TOLERANCE));
            continue;
        }
        let Some(p) = perf.get(&t.tid) else {
            failures.push(format!("{who}: not in timehist"));
            continue;
        };
        // timehist lists an exiting thread's last switch under `:-1`: its last wait and
        // last run, as perf's text of the same file gives them, are the thread's.
        let mut p = *p;
        if let Some(exit) = exits.get(&t.tid) {
            p.on_cpu += exit.on_cpu;
            p.runnable += exit.runnable;
            p.blocked += exit.blocked;
        }
        found.push((who.clone(), *o, p));
        let slack = [0.0, t.start_ns as f64, 0.0];
        for (i, part) in Part::ALL.into_iter().enumerate() {
            let mut against_perf = Vec::new();
            let mut slack_one = [0.0; 3];
            slack_one[i] = slack[i];
            let only = |s: &Split| {
                let mut one = Split::default();
                match part {
                    Part::OnCpu => one.on_cpu = s.on_cpu,
                    Part::Runnable => one.runnable = s.runnable,
                    Part::Blocked => one.blocked = s.blocked,
                }
                one
            };
            within(&who, &only(o), &only(&p), slack_one, &mut against_perf);
            if against_perf.is_empty() {
                continue;
            }
            // timehist off the program's own clocks, and cpiflame on them: perf's file
            // lacks a switch.
            let perf_wrong = !t.check(&p, seen, &[part], TOLERANCE).is_empty();
            let ours_right = t.check(o, seen, &[part], TOLERANCE).is_empty();
            if perf_wrong && ours_right {
                contradicted.push(against_perf.join("; "));
            } else {
                failures.extend(against_perf);
            }
        }
    }
    let compared = truth.len() - broken.len();
    assert!(
        failures.is_empty() && contradicted.len() * 4 <= 3 * compared.max(1),
        "{}\ntimehist against the fixture's clocks: {contradicted:#?}\nfound (cpiflame, timehist + exit): {found:#?}\nstderr: {stderr}",
        failures.join("\n")
    );
    eprintln!("(cpiflame, timehist + exit) {found:#?}");
    if !contradicted.is_empty() {
        eprintln!(
            "timehist contradicted the fixture's clocks, cpiflame did not: {contradicted:#?}"
        );
    }
}

/// Per thread id, what `perf sched timehist` lists under `:-1` rather than the thread, from
/// `perf script --ns` text of system-wide `sched_switch`, `sched_wakeup` samples and task
/// events: the thread's last run, from the last `sched_switch` naming it `next_pid` to its
/// `PERF_RECORD_EXIT`, and the wait before it, from its switch-out before that switch-in:
/// runnable after an `R` switch-out, else blocked until its `sched_wakeup` and runnable
/// from then.
fn exit_segments(text: &str) -> HashMap<u32, Split> {
    #[derive(Default)]
    struct Track {
        out: Option<(u64, bool)>,
        woken: Option<u64>,
        last_in: Option<(u64, Split)>,
    }
    let mut threads: HashMap<u32, Track> = HashMap::new();
    let mut segments = HashMap::new();
    let field = |line: &str, key: &str| -> Option<String> {
        line.split(key)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_string)
    };
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some((i, time)) = tokens
            .iter()
            .enumerate()
            .find_map(|(i, t)| t.ends_with(':').then(|| ns_of(t)).flatten().map(|n| (i, n)))
        else {
            continue;
        };
        let pid = |key: &str| field(line, key).and_then(|v| v.parse::<u32>().ok());
        if line.contains("sched:sched_switch:") {
            if let Some(prev) = pid(" prev_pid=") {
                let preempted = field(line, " prev_state=").is_some_and(|s| s.starts_with('R'));
                let track = threads.entry(prev).or_default();
                track.out = Some((time, preempted));
                track.woken = None;
            }
            if let Some(next) = pid(" next_pid=") {
                let track = threads.entry(next).or_default();
                let mut wait = Split::default();
                if let Some((out, preempted)) = track.out {
                    let gap = time.saturating_sub(out) as f64;
                    match (preempted, track.woken) {
                        (true, _) => wait.runnable = gap,
                        (false, Some(woken)) => {
                            wait.blocked = woken.saturating_sub(out) as f64;
                            wait.runnable = time.saturating_sub(woken) as f64;
                        }
                        (false, None) => wait.blocked = gap,
                    }
                }
                track.last_in = Some((time, wait));
            }
        } else if line.contains("sched:sched_wakeup:") {
            if let Some(woken) = pid(" pid=") {
                let track = threads.entry(woken).or_default();
                track.woken.get_or_insert(time);
            }
        } else if let Some(exit) = tokens
            .get(i + 1)
            .filter(|r| r.starts_with("PERF_RECORD_EXIT("))
        {
            let tid = exit
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .and_then(|(ids, _)| ids.split_once(':'))
                .and_then(|(_, tid)| tid.parse::<u32>().ok());
            if let Some((tid, (since, wait))) =
                tid.and_then(|tid| Some((tid, threads.get(&tid)?.last_in?)))
            {
                let mut segment = wait;
                segment.on_cpu = time.saturating_sub(since) as f64;
                segments.insert(tid, segment);
            }
        }
    }
    segments
}

/// The threads on either side of a gap in `perf script` text of system-wide `sched_switch`
/// samples: a CPU's switch whose `prev_pid` is not the `next_pid` of that CPU's switch
/// before (the switches between are missing from the file).
fn gaps(text: &str) -> Vec<u32> {
    let mut last_next: HashMap<String, u32> = HashMap::new();
    let mut broken = Vec::new();
    for line in text.lines().filter(|l| l.contains("sched:sched_switch:")) {
        let field = |key: &str| {
            line.split(key)
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|v| v.parse::<u32>().ok())
        };
        let Some(cpu) = line
            .split_whitespace()
            .find(|t| t.starts_with('[') && t.ends_with(']'))
        else {
            continue;
        };
        let (Some(prev), Some(next)) = (field(" prev_pid="), field(" next_pid=")) else {
            continue;
        };
        if let Some(expected) = last_next.insert(cpu.to_string(), next) {
            if expected != prev {
                broken.extend([expected, prev]);
            }
        }
    }
    broken.sort_unstable();
    broken.dedup();
    broken
}

/// `text` (perf script `--ns` of `data`) gives each fixture thread the file's split, to the
/// nanosecond, without and with a `--time` range inside the fixture's first phase (returned),
/// and the wall plan's warnings are the same lines.
fn same_in_text(data: &Path, text: &Path, truth: &[Truth]) -> String {
    let perf = switch_split(&switch_text(data));
    let compute = truth.iter().find(|t| t.role == "compute").unwrap();
    let fork = perf[&compute.tid].fork.unwrap();
    // A range inside the fixture's first phase: 20 ms to 60 ms after compute's fork.
    let secs = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    let range = format!("{},{}", secs(fork + 20_000_000), secs(fork + 60_000_000));
    for extra in [vec![], vec!["--time", range.as_str()]] {
        let (from_file, file_err) = cpiflame_split(data, &extra);
        let (from_text, text_err) = cpiflame_split(text, &extra);
        for t in truth {
            assert_eq!(
                from_text.get(&t.tid),
                from_file.get(&t.tid),
                "{} (tid {}) {extra:?}: text, then perf.data",
                t.role,
                t.tid
            );
        }
        let lines = |stderr: &str, path: &Path| -> Vec<String> {
            stderr
                .lines()
                .filter(|l| !l.starts_with("note"))
                .map(|l| l.replace(s(path), "INPUT"))
                .filter(|l| l.contains("INPUT"))
                .collect()
        };
        let (file_lines, text_lines) = (lines(&file_err, data), lines(&text_err, text));
        // The wall plan's warnings are printed for text too (perf.data's reader may add
        // lines of its own, about naming).
        for line in &text_lines {
            assert!(
                file_lines.contains(line),
                "{extra:?}: text's warning {line:?} not perf.data's: {file_lines:?}"
            );
        }
        for line in file_lines
            .iter()
            .filter(|l| l.contains("off-CPU") || l.contains("on-CPU") || l.contains("wakeup"))
        {
            assert!(
                text_lines.contains(line),
                "{extra:?}: perf.data's warning {line:?} not text's: {text_lines:?}"
            );
        }
    }
    range
}
