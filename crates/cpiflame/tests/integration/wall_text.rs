//! `perf script` text of an off-CPU recording gives the wall time its perf.data file gives
//! (issue 37, item 2): the `offcpu` fixture recorded three ways (`perf record -e
//! sched:sched_switch,sched:sched_wakeup -g`; `perf record --switch-events -e cpu-clock -g`;
//! `cpiflame record --off-cpu`), each converted by `perf script` as off-CPU users convert
//! it, and `report --json`'s per-thread (root frame) on-CPU, runnable and blocked
//! nanoseconds compared with the file's. Printed with `--ns` they are equal; with perf
//! script's default microseconds each interval's ends are cut to the microsecond, so a
//! thread's totals are within 1 µs per line of the text naming it.
//!
//! Exits come from `--show-task-events`: without them the text cannot say when a thread
//! ended, and its last off-CPU interval lasts to the end of the text (docs/cli.md).

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{cpiflame, ok, perf_works, s, shared_fixtures, Dir};

/// Per root frame (thread comm): on-CPU, runnable, blocked ns.
type Split = BTreeMap<String, [u64; 3]>;

fn report(input: &Path) -> Split {
    let out = cpiflame(&["report", "--json", s(input)]);
    let json: serde_json::Value = serde_json::from_str(&ok(&out)).expect("report JSON");
    let mut split = Split::new();
    for f in json["frames"].as_array().expect("frames") {
        if f["kind"] != "process" {
            continue;
        }
        let ns = |k: &str| {
            f[k].as_u64()
                .unwrap_or_else(|| panic!("{input:?}: {k} of {} is {}", f["name"], f[k]))
        };
        split.insert(
            f["name"].as_str().unwrap().to_string(),
            [ns("on_cpu_ns"), ns("runnable_ns"), ns("blocked_ns")],
        );
    }
    split
}

/// `perf record ARGS -o DIR/NAME.data -- offcpu 0.2`, or None (skipped) where perf cannot.
fn perf_record(dir: &Dir, name: &str, args: &[&str]) -> Option<PathBuf> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return None;
    }
    let f = shared_fixtures().expect("fixtures build");
    let data = dir.path(&format!("{name}.data"));
    let out = Command::new("perf")
        .arg("record")
        .args(args)
        .args(["-o", s(&data), "--", s(&f.offcpu), "0.2"])
        .output()
        .expect("perf runs");
    if !out.status.success() {
        cpiflame_testkit::unavailable(format!(
            "perf record {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
        return None;
    }
    Some(data)
}

/// `perf script -i DATA ARGS > DIR/NAME.txt`.
fn perf_script(dir: &Dir, data: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = Command::new("perf")
        .args(["script", "-i", s(data)])
        .args(args)
        .output()
        .expect("perf script runs");
    assert!(
        out.status.success(),
        "perf script {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let txt = dir.path(&format!("{name}.txt"));
    std::fs::write(&txt, &out.stdout).unwrap();
    txt
}

/// The text's lines whose header starts with `comm` (an upper bound on its intervals).
fn lines_of(text: &str, comm: &str) -> u64 {
    text.lines()
        .filter(|l| l.split_whitespace().next() == Some(comm))
        .count() as u64
}

/// Each text variant of `data` (`extra`: the `--show-*` flags its kind needs) reports the
/// file's split: exactly with `--ns`, within 1 µs per line of the thread without.
/// `fields`: the `-F` list users give for this kind (perf refuses `ip` for tracepoints
/// sampled without it, as `record --off-cpu`'s sched_waking is).
fn same_as_text(dir: &Dir, data: &Path, name: &str, extra: &[&str], fields: &str) {
    let want = report(data);
    assert!(
        want.values().any(|v| v[1] + v[2] > 0) || want.values().any(|v| v[0] > 0),
        "{name}: no wall time in the perf.data file: {want:?}"
    );
    let variants: [(&str, Vec<&str>, bool); 4] = [
        ("default-ns", vec!["--ns"], true),
        ("fields-ns", vec!["--ns", "-F", fields], true),
        ("default-us", vec![], false),
        ("fields-us", vec!["-F", fields], false),
    ];
    for (variant, args, exact) in variants {
        let mut args = args;
        args.push("--show-task-events");
        args.extend_from_slice(extra);
        let txt = perf_script(dir, data, &format!("{name}-{variant}"), &args);
        let got = report(&txt);
        let text = std::fs::read_to_string(&txt).unwrap();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "{name} {variant}: threads"
        );
        for (comm, w) in &want {
            let g = got[comm];
            let slack = if exact {
                0
            } else {
                1000 * lines_of(&text, comm)
            };
            for k in 0..3 {
                assert!(
                    g[k].abs_diff(w[k]) <= slack,
                    "{name} {variant}: {comm}: text {g:?}, perf.data {w:?} (slack {slack} ns)"
                );
            }
        }
    }
}

#[test]
fn sched_tracepoint_text_gives_the_recordings_wall_time() {
    let dir = Dir::new("wall-text-sched");
    let Some(data) = perf_record(
        &dir,
        "sched",
        &["-e", "sched:sched_switch,sched:sched_wakeup", "-g"],
    ) else {
        return;
    };
    // Brendan Gregg's off-CPU flame graph fields.
    let fields = "comm,pid,tid,cpu,time,period,event,ip,sym,dso,trace";
    same_as_text(&dir, &data, "sched", &[], fields);
}

#[test]
fn switch_events_text_gives_the_recordings_wall_time() {
    let dir = Dir::new("wall-text-switch");
    let Some(data) = perf_record(
        &dir,
        "switch",
        &["--switch-events", "-e", "cpu-clock", "-g"],
    ) else {
        return;
    };
    let fields = "comm,tid,time,event,ip,sym,dso";
    same_as_text(&dir, &data, "switch", &["--show-switch-events"], fields);
}

#[test]
fn cpiflame_off_cpu_text_gives_the_recordings_wall_time() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return;
    }
    let dir = Dir::new("wall-text-cpiflame");
    let f = shared_fixtures().expect("fixtures build");
    let data = dir.path("cpiflame.data");
    ok(&cpiflame(&[
        "record",
        "--off-cpu",
        "-o",
        s(&data),
        "--",
        s(&f.offcpu),
        "0.2",
    ]));
    let fields = "comm,pid,tid,cpu,time,period,event,trace";
    same_as_text(&dir, &data, "cpiflame", &["--show-switch-events"], fields);
}

/// `--on-cpu-only` reads `perf script` text as it reads the perf.data file: no wall time in
/// `report`'s totals for either, where both have it without the flag.
#[test]
fn on_cpu_only_text_reports_no_wall_time_as_its_perf_data_file() {
    let dir = Dir::new("wall-text-on-cpu");
    let Some(data) = perf_record(
        &dir,
        "switch",
        &["--switch-events", "-e", "cpu-clock", "-g"],
    ) else {
        return;
    };
    let txt = perf_script(
        &dir,
        &data,
        "switch-ns",
        &["--ns", "--show-task-events", "--show-switch-events"],
    );
    let totals = |input: &Path, on_cpu_only: bool| -> serde_json::Value {
        let mut args = vec!["report", "--json"];
        if on_cpu_only {
            args.push("--on-cpu-only");
        }
        args.push(s(input));
        let json: serde_json::Value = serde_json::from_str(&ok(&cpiflame(&args))).unwrap();
        json["totals"].clone()
    };
    for input in [&data, &txt] {
        let all = totals(input, false);
        assert!(
            all["blocked_ns"].as_u64().is_some_and(|ns| ns > 0),
            "{input:?}: {all}"
        );
        let on_cpu = totals(input, true);
        for k in ["on_cpu_ns", "runnable_ns", "blocked_ns", "wall_ns"] {
            assert!(on_cpu[k].is_null(), "{input:?} --on-cpu-only: {k} {on_cpu}");
        }
        assert_eq!(on_cpu["cycles_event"], "cpu-clock", "{input:?}");
    }
}
