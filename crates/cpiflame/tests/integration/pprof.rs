//! `convert --to pprof` against `go tool pprof` (Debian's golang-go) as the oracle: a real
//! recording of the threads fixture (threads, recursion, an inlined helper, kernel frames)
//! is converted, and pprof must list every event as sample types (`-raw`), give for each
//! event the same stacks and weights as `cpiflame fold --event` (`-traces`, compared as
//! multisets), and agree with `cpiflame report` on the functions' self samples (`-top`).
//! Folded input too (no addresses: one location per frame). Bad input: one line, exit 2.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use support::{cpiflame, ok, perf_record, perf_works, s, shared_fixtures, Dir};

/// `go tool pprof ARGS`, or None (with the reason reported) when go is not there.
pub(crate) fn go_pprof(args: &[&str], file: &Path) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof", "-symbolize=none"])
        .args(args)
        .arg(file)
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go tool pprof {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub(crate) fn go_available() -> bool {
    let ok = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        cpiflame_testkit::unavailable("go tool pprof: `go` (Debian golang-go) is not installed");
    }
    ok
}

/// A recording of the threads fixture with two events, and its pprof conversion.
struct Recording {
    data: std::path::PathBuf,
    pprof: std::path::PathBuf,
}

fn recording() -> Option<&'static Recording> {
    static REC: OnceLock<Option<Recording>> = OnceLock::new();
    REC.get_or_init(|| {
        if !perf_works() {
            cpiflame_testkit::unavailable(
                "sampling does not work here (`perf record -e cpu-clock` fails)",
            );
            return None;
        }
        if !go_available() {
            return None;
        }
        let f = shared_fixtures().expect("fixtures build");
        let dir = crate::support::run_scratch("pprof");
        let data = dir.join("threads.data");
        perf_record(&data, "cpu-clock,task-clock", &[], &[&f.threads]).expect("perf record");
        let pprof = dir.join("threads.pb.gz");
        ok(&cpiflame(&[
            "convert",
            s(&data),
            "--to",
            "pprof",
            "-o",
            s(&pprof),
        ]));
        Some(Recording { data, pprof })
    })
    .as_ref()
}

/// Stacks (`thread;root..;leaf`) with their summed weights.
pub(crate) type Stacks = BTreeMap<String, u64>;

/// `fold --event` output as pprof names frames: without `_[k]`/`_[i]` annotations.
pub(crate) fn fold_stacks(text: &str) -> Stacks {
    let mut out = Stacks::new();
    for line in text.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = stack
            .split(';')
            .map(|f| {
                f.strip_suffix("_[k]")
                    .or_else(|| f.strip_suffix("_[i]"))
                    .unwrap_or(f)
            })
            .collect();
        *out.entry(frames.join(";")).or_default() += count.parse::<u64>().unwrap();
    }
    out
}

/// `go tool pprof -traces` output as stacks: each trace's `thread` label, then its
/// frames root first; zero-weight traces left out, as fold leaves them out.
pub(crate) fn trace_stacks(text: &str) -> Stacks {
    let mut out = Stacks::new();
    let sep = "-----------+-";
    for block in text.split(sep).skip(1) {
        let mut thread = String::new();
        let mut weight = None;
        let mut frames: Vec<String> = Vec::new();
        for line in block.lines().skip(1) {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if let Some(v) = t.strip_prefix("thread:") {
                thread = v.trim().to_string();
                continue;
            }
            if t.starts_with("pid:") || t.starts_with("tid:") {
                continue;
            }
            let name = if weight.is_none() {
                let (w, name) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
                weight = Some(w.parse::<u64>().expect(t));
                name.trim()
            } else {
                t
            };
            let name = name.strip_suffix(" (inline)").unwrap_or(name);
            frames.push(name.replace(';', ":"));
        }
        let Some(weight) = weight.filter(|&w| w > 0) else {
            continue;
        };
        frames.push(thread);
        frames.reverse();
        *out.entry(frames.join(";")).or_default() += weight;
    }
    out
}

#[test]
fn raw_lists_every_event_as_two_sample_types() {
    let Some(r) = recording() else { return };
    let raw = go_pprof(&["-raw"], &r.pprof);
    assert!(
        raw.lines().any(|l| l.trim()
            == "cpu-clock_sample/count cpu-clock_event/count[dflt] task-clock_sample/count task-clock_event/count"),
        "{}",
        &raw[..raw.len().min(2000)]
    );
    // The recording's command line and host, and the kernel's mapping.
    assert!(raw.contains("perf-command:"), "{raw}");
    assert!(raw.contains("host:"), "{raw}");
    assert!(raw.contains("[kernel.kallsyms]"), "no kernel mapping");
    assert!(raw.contains(" inline_helper "), "no inlined frame");
}

#[test]
fn traces_per_event_match_fold() {
    let Some(r) = recording() else { return };
    for event in ["cpu-clock", "task-clock"] {
        let fold = fold_stacks(&ok(&cpiflame(&["fold", "--event", event, s(&r.data)])));
        let index = format!("-sample_index={event}_sample");
        let traces = trace_stacks(&go_pprof(&["-traces", &index], &r.pprof));
        assert!(!fold.is_empty());
        if fold != traces {
            let only_fold: Vec<_> = fold
                .iter()
                .filter(|(k, v)| traces.get(*k) != Some(v))
                .collect();
            let only_pprof: Vec<_> = traces
                .iter()
                .filter(|(k, v)| fold.get(*k) != Some(v))
                .collect();
            panic!("{event}: fold and pprof differ\nfold: {only_fold:#?}\npprof: {only_pprof:#?}");
        }
        // --to folded prints what fold prints.
        let converted = ok(&cpiflame(&[
            "convert",
            s(&r.data),
            "--to",
            "folded",
            "--event",
            event,
        ]));
        assert_eq!(
            converted,
            ok(&cpiflame(&["fold", "--event", event, s(&r.data)]))
        );
    }
}

#[test]
fn top_agrees_with_report() {
    let Some(r) = recording() else { return };
    let report: serde_json::Value = serde_json::from_str(&ok(&cpiflame(&[
        "report",
        "--json",
        "--limit",
        "1000",
        s(&r.data),
    ])))
    .unwrap();
    let mut self_samples: BTreeMap<String, u64> = BTreeMap::new();
    for f in report["frames"].as_array().unwrap() {
        let n = f["self_samples"].as_u64().unwrap();
        if n > 0 {
            *self_samples
                .entry(f["name"].as_str().unwrap().to_string())
                .or_default() += n;
        }
    }
    let top = go_pprof(
        &[
            "-top",
            "-nodecount=1000",
            "-nodefraction=0",
            "-sample_index=cpu-clock_sample",
        ],
        &r.pprof,
    );
    let mut flat: BTreeMap<String, u64> = BTreeMap::new();
    for line in top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
    {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let name = cols[5..].join(" ");
        let name = name.strip_suffix(" (inline)").unwrap_or(&name).to_string();
        let n: u64 = cols[0].parse().unwrap();
        if n > 0 {
            *flat.entry(name).or_default() += n;
        }
    }
    // The top functions by self samples, in both.
    let mut top_report: Vec<(&String, &u64)> = self_samples.iter().collect();
    top_report.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    assert!(top_report.len() >= 3, "{top_report:?}");
    for (name, n) in top_report.iter().take(10) {
        assert_eq!(
            flat.get(*name),
            Some(*n),
            "{name}: report {n}, pprof -top {:?}",
            flat.get(*name)
        );
    }
    assert_eq!(self_samples, flat);
}

#[test]
fn folded_input_converts_with_one_location_per_frame() {
    let Some(r) = recording() else { return };
    let dir = Dir::new("pprof-folded");
    let folded = dir.path("in.folded");
    std::fs::write(
        &folded,
        ok(&cpiflame(&["fold", "--event", "cpu-clock", s(&r.data)])),
    )
    .unwrap();
    let out = dir.path("f.pb.gz");
    ok(&cpiflame(&[
        "convert",
        s(&folded),
        "--to",
        "pprof",
        "-o",
        s(&out),
    ]));
    let raw = go_pprof(&["-raw"], &out);
    assert!(
        raw.contains("samples_sample/count samples_event/count"),
        "{raw}"
    );
    let traces = trace_stacks(&go_pprof(
        &["-traces", "-sample_index=samples_sample"],
        &out,
    ));
    assert_eq!(traces, fold_stacks(&ok(&cpiflame(&["fold", s(&folded)]))));
}

#[test]
fn bad_input_and_bad_format_are_one_line_and_exit_2() {
    let dir = Dir::new("pprof-bad");
    let junk = dir.path("junk");
    std::fs::write(&junk, b"this is neither perf.data nor folded text\n").unwrap();
    let out_file = dir.path("o.pb.gz");
    for args in [
        vec!["convert", s(&junk), "--to", "pprof", "-o", s(&out_file)],
        vec![
            "convert",
            "/nonexistent/x.data",
            "--to",
            "pprof",
            "-o",
            s(&out_file),
        ],
    ] {
        let out = cpiflame(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("cpiflame: error: "), "{err}");
    }
    // An unknown format is refused by the flag's parser, before anything is read: one line
    // naming the command, the flag and the value.
    let out = cpiflame(&["convert", s(&junk), "--to", "svg"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("cpiflame convert: error: ")
            && err.contains("'svg'")
            && err.contains("--to"),
        "{err}"
    );
}

#[test]
fn leader_sampled_group_members_match_fold() {
    // Members of a `{a,b}:S` group are weighed by their counter deltas (collapse's shared
    // code): pprof's per-event stacks must still be fold's.
    if recording().is_none() {
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("pprof-group");
    let data = dir.path("group.data");
    perf_record(&data, "{cpu-clock,task-clock}:S", &[], &[&f.threads]).expect("perf record");
    let out = dir.path("group.pb.gz");
    ok(&cpiflame(&[
        "convert",
        s(&data),
        "--to",
        "pprof",
        "-o",
        s(&out),
    ]));
    for event in ["cpu-clock", "task-clock"] {
        let fold = fold_stacks(&ok(&cpiflame(&["fold", "--event", event, s(&data)])));
        let index = format!("-sample_index={event}_sample");
        let traces = trace_stacks(&go_pprof(&["-traces", &index], &out));
        assert!(!fold.is_empty(), "{event}: no samples");
        assert_eq!(fold, traces, "{event}");
    }
}

#[test]
fn every_wild_file_converts_with_fold_stacks_per_event() {
    // Files of real hardware (compressed, piped, an event group, hybrid core types merged
    // into one column as fold merges them, LBR): each event's pprof stacks are fold's.
    if !go_available() {
        return;
    }
    let wild = Path::new(env!("CARGO_MANIFEST_DIR")).join("../perf-data/tests/wild");
    let dir = Dir::new("pprof-wild");
    let mut files = 0;
    for entry in std::fs::read_dir(&wild).unwrap() {
        let input = entry.unwrap().path();
        if input.extension().is_none_or(|e| e != "xz") {
            continue;
        }
        files += 1;
        let out = dir.path("wild.pb.gz");
        ok(&cpiflame(&[
            "convert",
            s(&input),
            "--to",
            "pprof",
            "-o",
            s(&out),
        ]));
        let profile = cpiflame_pprof::decode(&std::fs::read(&out).unwrap()).unwrap();
        let events: Vec<String> = profile
            .sample_type
            .iter()
            .filter_map(|t| {
                let name = &profile.string_table[t.r#type as usize];
                name.strip_suffix("_sample").map(str::to_string)
            })
            .collect();
        assert!(!events.is_empty(), "{}", input.display());
        for event in events {
            // pprof's root is the `thread` label, the comm: fold's comm roots (a
            // system-wide file's default is `comm [pid]`).
            let fold = fold_stacks(&ok(&cpiflame(&[
                "fold",
                "--group-by",
                "comm",
                "--event",
                &event,
                s(&input),
            ])));
            let index = format!("-sample_index={event}_sample");
            let traces = trace_stacks(&go_pprof(&["-traces", &index], &out));
            assert_eq!(fold, traces, "{}: {event}", input.display());
        }
    }
    assert_eq!(files, 6, "the wild files");
}

#[test]
fn time_nanos_is_the_first_samples_wall_clock_time_from_clock_data() {
    // `perf record -k CLOCK_MONOTONIC` writes CLOCK_DATA; perf script's `tod` field is the
    // oracle for a sample's wall-clock time (microseconds, truncated).
    if recording().is_none() {
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("pprof-clock");
    let data = dir.path("clock.data");
    perf_record(
        &data,
        "cpu-clock",
        &["-k", "CLOCK_MONOTONIC"],
        &[&f.threads],
    )
    .expect("perf record");
    let out = dir.path("clock.pb.gz");
    ok(&cpiflame(&[
        "convert",
        s(&data),
        "--to",
        "pprof",
        "-o",
        s(&out),
    ]));
    let profile = cpiflame_pprof::decode(&std::fs::read(&out).unwrap()).unwrap();
    let script = Command::new("perf")
        .args(["script", "-F", "tod", "-i"])
        .arg(&data)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(script.status.success());
    let first = String::from_utf8(script.stdout).unwrap();
    let tod = first.lines().next().expect("a sample").trim().to_string();
    // `2026-11-23 03:32:15.329483` (UTC) to microseconds since the epoch.
    let date = Command::new("date")
        .args(["-u", "-d", &tod, "+%s%6N"])
        .output()
        .unwrap();
    assert!(date.status.success(), "date -d {tod}");
    let perf_us: i64 = String::from_utf8(date.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(profile.time_nanos / 1000, perf_us, "perf's tod {tod}");
}

/// perf report's per-event totals (`--no-group`: a group's members apart): the event count
/// (the summed periods; for a leader-sampled group's members, counter deltas) and the
/// samples when perf prints them whole (it writes `10K` from ten thousand on).
fn perf_event_totals(data: &Path) -> BTreeMap<String, (Option<u64>, u64)> {
    let out = Command::new("perf")
        .args(["report", "--stdio", "--no-group", "-i"])
        .arg(data)
        .output()
        .expect("perf runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut totals = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("# Samples: ") else {
            continue;
        };
        let samples: Option<u64> = rest.split_whitespace().next().unwrap().parse().ok();
        let event = rest.split('\'').nth(1).unwrap().to_string();
        let count: u64 = lines
            .next()
            .and_then(|l| l.strip_prefix("# Event count (approx.): "))
            .unwrap_or_else(|| panic!("no event count after {line}"))
            .trim()
            .parse()
            .unwrap();
        totals.insert(event, (samples, count));
    }
    totals
}

/// The profile's totals per event: (sum of EVENT_sample, sum of EVENT_event).
pub(crate) fn pprof_event_totals(file: &Path) -> BTreeMap<String, (u64, u64)> {
    let profile = cpiflame_pprof::decode(&std::fs::read(file).unwrap()).unwrap();
    let mut totals: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (i, t) in profile.sample_type.iter().enumerate() {
        let name = &profile.string_table[t.r#type as usize];
        let sum: i64 = profile.sample.iter().map(|s| s.value[i]).sum();
        let sum = u64::try_from(sum).unwrap();
        if let Some(event) = name.strip_suffix("_sample") {
            totals.entry(event.to_string()).or_default().0 = sum;
        } else if let Some(event) = name.strip_suffix("_event") {
            totals.entry(event.to_string()).or_default().1 = sum;
        }
    }
    totals
}

#[test]
fn event_values_sum_to_perf_reports_event_counts() {
    // The period-weighted values are what a backend divides (stalls per cycle): each event's
    // sum equals perf report's event count, for plain events and for a leader-sampled
    // group's members (counter deltas).
    let Some(r) = recording() else { return };
    let same = |pprof: &Path, data: &Path| {
        let ours = pprof_event_totals(pprof);
        let perf = perf_event_totals(data);
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            perf.keys().collect::<Vec<_>>()
        );
        for (event, &(samples, count)) in &perf {
            assert_eq!(ours[event].1, count, "{event}: event count");
            if let Some(samples) = samples {
                assert_eq!(ours[event].0, samples, "{event}: samples");
            }
        }
    };
    same(&r.pprof, &r.data);
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("pprof-counts");
    let data = dir.path("group.data");
    perf_record(&data, "{cpu-clock,task-clock}:S", &[], &[&f.threads]).expect("perf record");
    let out = dir.path("group.pb.gz");
    ok(&cpiflame(&[
        "convert",
        s(&data),
        "--to",
        "pprof",
        "-o",
        s(&out),
    ]));
    same(&out, &data);
}
