//! The numbers of wall time (issue 23): `report`, `diff` and its gate, `fold --event` and
//! `convert --to pprof` on a profile with the wall-time columns (`on-cpu-time`,
//! `runnable-time`, `blocked-time`, nanoseconds). The input is `perf script` text written
//! here with known nanoseconds per stack, so every total and inclusive sum is known by
//! construction; `go tool pprof` (Debian's golang-go) is the second oracle for the pprof
//! conversion: it must read the columns as time and its inclusive (`cum`) sums per function
//! must be `report`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::pprof::{fold_stacks, go_available, go_pprof, trace_stacks};
use crate::support::{cpiflame, ok, s, Dir};

/// A stack (leaf first, under process `app`), its cpu-clock samples (1 ms each), and its
/// on-CPU, runnable and blocked nanoseconds.
type Stack = (&'static [&'static str], u64, [u64; 3]);

/// 19 ms of wall time: 4 on CPU, 0.75 runnable, 14.25 blocked.
const BEFORE: &[Stack] = &[
    (&["compute", "main"], 3, [3_000_000, 0, 0]),
    (&["wait", "read", "main"], 0, [0, 500_000, 9_000_000]),
    (
        &["compute", "rec", "rec", "main"],
        1,
        [1_000_000, 250_000, 1_250_000],
    ),
    (&["lock", "main"], 0, [0, 0, 4_000_000]),
];

/// 25 ms: the read blocks twice as long, the lock is gone, `log` is new. The cpu-clock
/// samples are the same as before's, so the cycles shares do not change at all.
const AFTER: &[Stack] = &[
    (&["compute", "main"], 3, [3_000_000, 0, 0]),
    (&["wait", "read", "main"], 0, [0, 500_000, 18_000_000]),
    (
        &["compute", "rec", "rec", "main"],
        1,
        [1_000_000, 250_000, 1_250_000],
    ),
    (&["log", "main"], 0, [0, 0, 1_000_000]),
];

const WALL_EVENTS: [&str; 3] = ["on-cpu-time", "runnable-time", "blocked-time"];

/// `perf script` text of `stacks`: one cpu-clock sample a millisecond, one sample per
/// non-zero wall column with the nanoseconds as its period. `blocked` names the third wall
/// column (another name makes a profile without wall time).
fn script(stacks: &[Stack], blocked: &str) -> String {
    let names = [WALL_EVENTS[0], WALL_EVENTS[1], blocked];
    let mut out = String::new();
    let mut time = 1;
    let mut sample = |event: &str, period: u64, frames: &[&str]| {
        out.push_str(&format!(
            "app 100/100 [000] {time}.000000000: {period} {event}:\n"
        ));
        time += 1;
        for f in frames {
            let i = ["main", "compute", "read", "wait", "rec", "lock", "log"]
                .iter()
                .position(|n| n == f)
                .unwrap();
            out.push_str(&format!(
                "\t{:16x} {f}+0x0 (/usr/bin/app)\n",
                0x1000 + 0x100 * i
            ));
        }
        out.push('\n');
    };
    for &(frames, samples, ns) in stacks {
        for _ in 0..samples {
            sample("cpu-clock", 1_000_000, frames);
        }
        for (event, ns) in names.iter().zip(ns) {
            if ns > 0 {
                sample(event, ns, frames);
            }
        }
    }
    out
}

fn write(dir: &Dir, name: &str, stacks: &[Stack], blocked: &str) -> PathBuf {
    let path = dir.path(name);
    std::fs::write(&path, script(stacks, blocked)).unwrap();
    path
}

#[track_caller]
fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(name);
    cpiflame_testkit::assert_golden(path, actual);
}

#[test]
fn report_of_wall_time_matches_golden_files_and_the_sums_by_construction() {
    let dir = Dir::new("wall-report");
    let before = write(&dir, "before.txt", BEFORE, "blocked-time");
    let text = ok(&cpiflame(&["report", s(&before)]));
    check_golden("report-wall.txt", &text);
    let json = ok(&cpiflame(&["report", "--json", s(&before)]));
    check_golden("report-wall.json", &json);

    let v: Value = serde_json::from_str(&json).unwrap();
    let t = &v["totals"];
    assert_eq!(
        [
            &t["on_cpu_ns"],
            &t["runnable_ns"],
            &t["blocked_ns"],
            &t["wall_ns"]
        ],
        [4_000_000, 750_000, 14_250_000, 19_000_000]
    );
    // Inclusive, each stack once: rec is twice in one stack; compute in two stacks.
    let frames: BTreeMap<&str, [u64; 4]> = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let n = |k: &str| f[k].as_u64().unwrap();
            (
                f["name"].as_str().unwrap(),
                [
                    n("on_cpu_ns"),
                    n("runnable_ns"),
                    n("blocked_ns"),
                    n("wall_ns"),
                ],
            )
        })
        .collect();
    let expected: BTreeMap<&str, [u64; 4]> = [
        ("app", [4_000_000, 750_000, 14_250_000, 19_000_000]),
        ("main", [4_000_000, 750_000, 14_250_000, 19_000_000]),
        ("read", [0, 500_000, 9_000_000, 9_500_000]),
        ("wait", [0, 500_000, 9_000_000, 9_500_000]),
        ("compute", [4_000_000, 250_000, 1_250_000, 5_500_000]),
        ("lock", [0, 0, 4_000_000, 4_000_000]),
        ("rec", [1_000_000, 250_000, 1_250_000, 2_500_000]),
    ]
    .into_iter()
    .collect();
    assert_eq!(frames, expected);
    // Ordered by wall time.
    let walls: Vec<u64> = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["wall_ns"].as_u64().unwrap())
        .collect();
    assert!(walls.windows(2).all(|w| w[0] >= w[1]), "{walls:?}");
}

#[test]
fn fold_selects_each_wall_column_by_name_as_nanoseconds() {
    let dir = Dir::new("wall-fold");
    let before = write(&dir, "before.txt", BEFORE, "blocked-time");
    for (i, event) in WALL_EVENTS.iter().enumerate() {
        let folded = ok(&cpiflame(&["fold", "--event", event, s(&before)]));
        let mut expected: Vec<String> = BEFORE
            .iter()
            .filter(|(_, _, ns)| ns[i] > 0)
            .map(|(frames, _, ns)| {
                let mut root_first: Vec<&str> = frames.iter().rev().copied().collect();
                root_first.insert(0, "app");
                format!("{} {}", root_first.join(";"), ns[i])
            })
            .collect();
        let mut got: Vec<String> = folded.lines().map(str::to_string).collect();
        expected.sort();
        got.sort();
        assert_eq!(got, expected, "{event}");
        // --to folded prints what fold prints.
        assert_eq!(
            ok(&cpiflame(&[
                "convert",
                s(&before),
                "--to",
                "folded",
                "--event",
                event
            ])),
            folded
        );
    }
    // Without --event: the wall time per stack, the three columns summed (the graph's
    // widths).
    let folded = ok(&cpiflame(&["fold", s(&before)]));
    let mut expected: Vec<String> = BEFORE
        .iter()
        .map(|(frames, _, ns)| {
            let mut root_first: Vec<&str> = frames.iter().rev().copied().collect();
            root_first.insert(0, "app");
            (root_first.join(";"), ns.iter().sum::<u64>())
        })
        .filter(|(_, wall)| *wall > 0)
        .map(|(stack, wall)| format!("{stack} {wall}"))
        .collect();
    let mut got: Vec<String> = folded.lines().map(str::to_string).collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected, "wall time");
    // cpu-clock is still counted in samples.
    let folded = ok(&cpiflame(&["fold", "--event", "cpu-clock", s(&before)]));
    let mut got: Vec<&str> = folded.lines().collect();
    got.sort();
    assert_eq!(got, ["app;main;compute 3", "app;main;rec;rec;compute 1"]);
}

/// `diff --summary --fail-above LIMIT` of before and after: exit code, stdout, stderr.
fn diff(before: &Path, after: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["diff", "--summary", s(before), s(after)];
    args.extend(extra);
    let out = cpiflame(&args);
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn diff_gate_compares_wall_time_when_both_runs_have_it() {
    let dir = Dir::new("wall-diff");
    let before = write(&dir, "before.txt", BEFORE, "blocked-time");
    let after = write(&dir, "after.txt", AFTER, "blocked-time");
    // read and wait: 9.5 of 19 ms (50%) → 18.5 of 25 ms (74%): +24 points of wall time,
    // while no cycles share moved. The gate's test counts the wall columns' samples: read
    // is in 2 of before's 7 and 2 of after's 7, far too few to tell +24 points from noise
    // at 95% (the interval reaches below 0), so only a lax gate trips.
    let (code, out, err) = diff(&before, &after, &["--fail-above", "20"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    let lax = ["--fail-above", "1", "--confidence", "0.5"];
    let (code, out, err) = diff(&before, &after, &lax);
    assert_eq!(code, Some(3), "{out}{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    for (line, name) in lines.iter().zip(["read", "wait"]) {
        let start = format!(
            "cpiflame: {name} grew by 24.00 points of wall time (50.00% → 74.00%, 50% interval ["
        );
        assert!(
            line.starts_with(&start) && line.ends_with("]), above --fail-above 1"),
            "{line}"
        );
    }
    assert!(
        out.contains("# shares are of each run's own wall time (on CPU + runnable + blocked)"),
        "{out}"
    );
    let (code, _, err) = diff(&before, &after, &["--fail-above", "24.5"]);
    assert_eq!((code, err.as_str()), (Some(0), ""));

    let (code, json, _) = diff(&before, &after, &["--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["measure"], "wall-time");
    assert_eq!(v["frames"][0]["name"], "read");
    assert_eq!(v["frames"][0]["before_wall_share"], 0.5);
    assert_eq!(v["frames"][0]["after_wall_share"], 0.74);
    assert_eq!(v["frames"][0]["wall_delta_points"], 24.0);
    assert_eq!(v["frames"][0]["delta_points"], 0.0);

    // After without wall time (its third column named otherwise): cycles, as before the
    // columns existed, and nothing moved.
    let plain = write(&dir, "plain.txt", AFTER, "sched:sched_switch");
    let (code, out, err) = diff(&before, &plain, &["--fail-above", "0.01"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert!(
        out.contains(
            "# shares are of each run's own total; change in percentage points\n\
             # (of cycles: only before has wall time, so wall time is not compared)\n"
        ),
        "{out}"
    );
    let (_, json, _) = diff(&before, &plain, &["--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["measure"], "cycles");

    // The first runs compare wall time: a further run without it is one error naming it.
    let (code, out, err) = diff(&before, &after, &["--after", s(&plain)]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{}: no wall-time columns", plain.display())),
        "{err}"
    );
}

/// `go tool pprof -traces -unit=ns` output with the `ns` of its weights dropped, so that
/// [`trace_stacks`] reads them as numbers.
fn without_ns(text: &str) -> String {
    text.lines()
        .map(|line| {
            let t = line.trim_start();
            let (first, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
            match first.strip_suffix("ns") {
                Some(n) if n.parse::<u64>().is_ok() => format!("{n} {rest}\n"),
                _ => format!("{line}\n"),
            }
        })
        .collect()
}

#[test]
fn pprof_has_the_wall_columns_in_nanoseconds() {
    if !go_available() {
        return;
    }
    let dir = Dir::new("wall-pprof");
    let before = write(&dir, "before.txt", BEFORE, "blocked-time");
    let out = dir.path("wall.pb.gz");
    ok(&cpiflame(&[
        "convert",
        s(&before),
        "--to",
        "pprof",
        "-o",
        s(&out),
    ]));
    let raw = go_pprof(&["-raw"], &out);
    assert!(
        raw.lines().any(|l| l.trim()
            == "cpu-clock_sample/count cpu-clock_event/count[dflt] \
                on-cpu-time_sample/count on-cpu-time/nanoseconds \
                runnable-time_sample/count runnable-time/nanoseconds \
                blocked-time_sample/count blocked-time/nanoseconds"),
        "{raw}"
    );
    let report: Value =
        serde_json::from_str(&ok(&cpiflame(&["report", "--json", s(&before)]))).unwrap();
    for (event, field) in WALL_EVENTS
        .iter()
        .zip(["on_cpu_ns", "runnable_ns", "blocked_ns"])
    {
        // The stacks and their nanoseconds are fold's.
        let index = format!("-sample_index={event}");
        let traces = trace_stacks(&without_ns(&go_pprof(
            &["-traces", "-unit=ns", &index],
            &out,
        )));
        let fold = fold_stacks(&ok(&cpiflame(&["fold", "--event", event, s(&before)])));
        assert_eq!(traces, fold, "{event}");
        // pprof's inclusive time per function (each function once per stack) is report's.
        let top = go_pprof(
            &[
                "-top",
                "-unit=ns",
                "-nodefraction=0",
                "-nodecount=100",
                &index,
            ],
            &out,
        );
        let mut cum: BTreeMap<String, u64> = BTreeMap::new();
        for line in top
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("flat"))
            .skip(1)
        {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let n = cols[3].trim_end_matches("ns").parse::<u64>().unwrap();
            cum.insert(cols[5..].join(" "), n);
        }
        let ours: BTreeMap<String, u64> = report["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] != "process" && f[field].as_u64().unwrap() > 0)
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f[field].as_u64().unwrap(),
                )
            })
            .collect();
        let cum: BTreeMap<String, u64> = cum.into_iter().filter(|(_, n)| *n > 0).collect();
        assert_eq!(cum, ours, "{event}");
    }
}
