//! Leader sampling (`perf record -e '{a,b}:S'`) read by cpiflame against perf's own reading:
//! per thread and event, the samples and summed periods of the profile equal those of
//! `perf script -F tid,period,event` (perf delivers each group member with its value's
//! delta since the previous sample of that counter). The `perf script` text of the same
//! recording, read back by cpiflame, gives the same columns. The member's share of the
//! leader gets the interval of the group's per-sample deltas (`paired_share_interval` over
//! perf's deltas).

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use cpiflame_pipeline::{load_any, LoadOptions, Loaded};
use support::{perf_record, perf_works, shared_fixtures, Dir};

/// (tid, event) → (samples, period).
type Totals = BTreeMap<(i64, String), (u64, u64)>;

/// perf's reading: one line per delivered (sample, member).
fn perf_totals(data: &Path) -> Totals {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,period,event", "-i"])
        .arg(data)
        .output()
        .expect("perf script");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut totals = Totals::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [tid, period, event] = words[..] else {
            panic!("unexpected perf script line {line:?}");
        };
        let key = (
            tid.parse().unwrap(),
            event.trim_end_matches(':').to_string(),
        );
        let t = totals.entry(key).or_default();
        t.0 += 1;
        t.1 += period.parse::<u64>().unwrap();
    }
    totals
}

/// cpiflame's reading: the profile's counts summed per root `comm-PID/TID`.
fn our_totals(l: &Loaded) -> Totals {
    let p = &l.profile;
    let mut totals = Totals::new();
    for s in &p.stacks {
        let root = &p.frame(s.frames[0]).name;
        let tid: i64 = root.rsplit('/').next().unwrap().parse().unwrap();
        for (e, c) in s.counts.iter().enumerate() {
            if c.samples == 0 {
                continue;
            }
            let t = totals.entry((tid, p.events[e].name.clone())).or_default();
            t.0 += c.samples;
            t.1 += c.period;
        }
    }
    totals
}

fn load(file: &Path) -> Loaded {
    let mut warnings = Vec::new();
    load_any(
        &LoadOptions {
            file: file.to_path_buf(),
            tid: true,
            kernel: true,
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn fixtures_or_skip() -> Option<&'static support::Fixtures> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return None;
    }
    Some(shared_fixtures().expect("fixtures build"))
}

fn check(name: &str, events: &str, workload: &Path, args: &[&str]) {
    let dir = Dir::new(&format!("leader-{name}"));
    let data = dir.path("group.data");
    let mut cmd = vec![workload.to_str().unwrap()];
    cmd.extend(args);
    if let Err(e) = perf_record(
        &data,
        events,
        &["-F", "499", "--call-graph", "dwarf,4096"],
        &cmd,
    ) {
        cpiflame_testkit::unavailable(format!("leader sampling does not record here: {e}"));
        return;
    }
    compare(name, &dir, &data);
}

/// The whole profile's interval of member / leader (periods), from perf's per-sample
/// deltas: `perf script` prints a group's values of one sample on lines with the same tid
/// and time (a member whose value did not move is left out: a zero delta).
fn perf_paired_interval(data: &Path, leader: &str, member: &str) -> Option<[f64; 2]> {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,time,period,event", "-i"])
        .arg(data)
        .output()
        .expect("perf script");
    assert!(out.status.success());
    let mut samples: BTreeMap<(i64, String), (u64, u64)> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [tid, time, period, event] = fields[..] else {
            continue;
        };
        let key = (tid.parse().unwrap(), time.to_string());
        let period: u64 = period.parse().unwrap();
        let pair = samples.entry(key).or_default();
        match event.trim_end_matches(':') {
            e if e == leader => pair.1 += period,
            e if e == member => pair.0 += period,
            _ => {}
        }
    }
    let mut moments = cpiflame_profile::interval::PairedMoments::default();
    for (a, b) in samples.into_values() {
        moments.push(a, b);
    }
    cpiflame_profile::interval::paired_share_interval(&moments, 0.95).map(|i| [i.lo, i.hi])
}

fn compare(name: &str, dir: &Dir, data: &Path) {
    let perf = perf_totals(data);
    assert!(
        perf.keys()
            .map(|k| &k.1)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == 2,
        "{name}: perf shows both members: {perf:?}"
    );
    let ours = our_totals(&load(data));
    assert_eq!(ours, perf, "{name}: perf.data per-thread totals");

    // The interval of the member's share of the leader: from the per-sample deltas (the
    // group's moments), equal to the one computed from perf's deltas.
    let events: Vec<String> = perf.keys().map(|k| k.1.clone()).collect();
    let (leader, member) = leader_and_member(data, &events);
    let report = support::ok(&support::cpiflame(&[
        "report",
        data.to_str().unwrap(),
        "--json",
        "--cycles",
        &leader,
        "--stalls",
        &member,
    ]));
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    let theirs = perf_paired_interval(data, &leader, &member);
    let ours: Option<[f64; 2]> =
        serde_json::from_value(v["totals"]["stall_share_interval"].clone())
            .unwrap_or_else(|e| panic!("{name}: {e}: {v}"));
    // The same integer sums; JSON keeps all but the last bit of a double.
    let (Some(ours), Some(theirs)) = (ours, theirs) else {
        panic!("{name}: intervals {ours:?} and {theirs:?}");
    };
    for (a, b) in ours.iter().zip(theirs) {
        assert!(
            (a - b).abs() <= 1e-12 * b.abs().max(1e-6),
            "{name}: the group's interval from its per-sample deltas: {ours:?} against {theirs:?}"
        );
    }

    // The same recording as perf script text.
    let text = dir.path("group.perf");
    let out = Command::new("perf")
        .args([
            "script",
            "-F",
            "comm,tid,time,period,event,ip,sym,dso",
            "-i",
        ])
        .arg(data)
        .output()
        .expect("perf script");
    assert!(out.status.success());
    std::fs::write(&text, out.stdout).unwrap();
    let from_text = our_totals(&load(&text));
    assert_eq!(
        from_text, perf,
        "{name}: perf script text per-thread totals"
    );
}

/// The group's leader and its member, by the attrs' order in the file (`perf evlist`).
fn leader_and_member(data: &Path, events: &[String]) -> (String, String) {
    let out = Command::new("perf")
        .args(["evlist", "-i"])
        .arg(data)
        .output()
        .expect("perf evlist");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut order: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| events.iter().any(|e| e == l))
        .collect();
    order.dedup();
    assert_eq!(order.len(), 2, "two events in {text}");
    (order[0].to_string(), order[1].to_string())
}

#[test]
fn cpu_clock_and_task_clock_group_matches_perf() {
    let Some(f) = fixtures_or_skip() else { return };
    check("clocks", "{cpu-clock,task-clock}:S", &f.threads, &["0.3"]);
}

#[test]
fn task_clock_and_page_faults_group_matches_perf() {
    let Some(f) = fixtures_or_skip() else { return };
    check(
        "faults",
        "{task-clock,page-faults}:S",
        &f.faults,
        &["20000"],
    );
}

#[test]
fn group_attached_to_a_multithreaded_process_matches_perf() {
    // perf 6.1 opens `:S` groups without inherit, so a command's later threads go
    // unsampled; attached with -p, every thread has its own counters (own ids): four
    // threads' deltas, interleaved in one file.
    let Some(f) = fixtures_or_skip() else { return };
    let dir = Dir::new("leader-attached");
    let data = dir.path("group.data");
    let mut child = Command::new(&f.threads)
        .arg("3")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("threads fixture");
    // Let it start its threads before attaching.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = child.id().to_string();
    let recorded = perf_record(
        &data,
        "{cpu-clock,task-clock}:S",
        &["-F", "499", "--call-graph", "dwarf,4096", "-p", &pid],
        &["sleep", "0.5"],
    );
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = recorded {
        cpiflame_testkit::unavailable(format!("perf record -p does not work here: {e}"));
        return;
    }
    let threads: std::collections::BTreeSet<i64> = perf_totals(&data).keys().map(|k| k.0).collect();
    assert!(threads.len() > 1, "several threads sampled: {threads:?}");
    compare("attached", &dir, &data);
}
