//! `--time`: the samples every reading command keeps are those `perf script --time` prints,
//! sample for sample (their timestamps compared, not only their number), on perf's and
//! cpiflame's recordings of a fixture, for absolute, open-ended, several and percent ranges;
//! perf script text filtered by its printed times; bad input in one line.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_perf_data::abi::sample;
use cpiflame_perf_data::synth::{test_features, Recording};
use cpiflame_perf_data::write::{EventAttr, SampleFields};
use serde_json::Value;
use support::{cpiflame, ok, perf_record_with, s, sampling_fixtures, Dir};

/// The times (`SECONDS.NANOSECONDS`, as `perf script --ns` prints them) of the samples
/// `perf script --time RANGE` prints, sorted.
pub(crate) fn perf_times(data: &Path, range: Option<&str>) -> Vec<String> {
    let mut command = Command::new("perf");
    command.args(["script", "-F", "time", "--ns", "-i", s(data)]);
    if let Some(r) = range {
        command.args(["--time", r]);
    }
    let out = command.output().expect("perf script runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut times: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().trim_end_matches(':').to_string())
        .filter(|l| !l.is_empty())
        .collect();
    times.sort();
    times
}

/// The times of the samples `cpiflame script --time RANGE` prints, sorted.
fn our_times(data: &Path, range: &str) -> Vec<String> {
    let text = ok(&cpiflame(&["script", "--time", range, s(data)]));
    let mut times: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with([' ', '\t']))
        .filter_map(|header| {
            header.split_whitespace().find_map(|t| {
                let t = t.strip_suffix(':')?;
                let (sec, ns) = t.split_once('.')?;
                let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
                (digits(sec) && ns.len() == 9 && digits(ns)).then(|| t.to_string())
            })
        })
        .collect();
    times.sort();
    times
}

/// The samples `fold --event EVENT` counts.
fn folded_samples(args: &[&str]) -> usize {
    ok(&cpiflame(args))
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<usize>().unwrap())
        .sum()
}

/// The ranges tried on a recording whose sample times are `all`: bounds at samples' own
/// times (both ends kept), either end open, two ranges, a space after a comma, and perf's
/// percent forms.
fn ranges(all: &[String]) -> Vec<String> {
    let at = |fifth: usize| all[all.len() * fifth / 5].clone();
    let (a, b, c, d) = (at(1), at(2), at(3), at(4));
    vec![
        format!("{a},{b}"),
        format!(",{a}"),
        format!("{c},"),
        format!("{a},{b} {c},{d}"),
        format!("{a}, {b}"),
        "10%-20%".to_string(),
        "0%-10%,30%-40%".to_string(),
        "10%/2,10%/3".to_string(),
        "25%".to_string(),
    ]
}

/// Every range on `data`: `script`'s sample times are perf's; `fold`, `report`, perf script
/// text and (for two of them) `annotate` and `convert --to pprof` count the same samples.
fn check(data: &Path, dir: &Dir) {
    let all = perf_times(data, None);
    assert!(all.len() >= 50, "{} samples", all.len());
    let text = dir.path(&format!(
        "{}.txt",
        data.file_name().unwrap().to_string_lossy()
    ));
    let script = Command::new("perf")
        .args([
            "script",
            "--ns",
            "-F",
            "comm,tid,time,event,ip,sym",
            "-i",
            s(data),
        ])
        .output()
        .unwrap();
    std::fs::write(&text, &script.stdout).unwrap();
    for (i, range) in ranges(&all).iter().enumerate() {
        let expected = perf_times(data, Some(range));
        // Bounds at samples' times select some samples, not all; a percent slice may hold
        // none (the workload descheduled on a loaded machine).
        let absolute = !range.contains('%');
        assert!(
            !absolute || !expected.is_empty(),
            "{range}: perf keeps no sample"
        );
        assert!(
            !absolute || expected.len() < all.len(),
            "{range}: perf keeps all"
        );
        assert_eq!(our_times(data, range), expected, "{range}");
        let n = expected.len();
        if n == 0 {
            let out = cpiflame(&["fold", "--time", range, s(data)]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{range}: {err}");
            assert!(err.contains("no sample of"), "{range}: {err}");
            continue;
        }
        let fold = ["fold", "--event", "cpu-clock", "--time", range];
        assert_eq!(
            folded_samples(&[&fold[..], &[s(data)]].concat()),
            n,
            "fold {range}"
        );
        assert_eq!(
            folded_samples(&[&fold[..], &[s(&text)]].concat()),
            n,
            "text {range}"
        );
        let report: Value = serde_json::from_str(&ok(&cpiflame(&[
            "report",
            "--json",
            "--time",
            range,
            s(data),
        ])))
        .unwrap();
        assert_eq!(
            report["totals"]["cycles_samples"], n as u64,
            "report {range}"
        );
        if i % 4 != 0 {
            continue;
        }
        let annotate: Value = serde_json::from_str(&ok(&cpiflame(&[
            "annotate",
            "--json",
            "--limit",
            "100000",
            "--time",
            range,
            s(data),
        ])))
        .unwrap();
        let annotated: u64 = annotate
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["samples"].as_u64().unwrap())
            .sum();
        assert_eq!(annotated, n as u64, "annotate {range}");
        let pb = dir.path("x.pb.gz");
        ok(&cpiflame(&[
            "convert",
            "--to",
            "pprof",
            "--time",
            range,
            "-o",
            s(&pb),
            s(data),
        ]));
        let totals = crate::pprof::pprof_event_totals(&pb);
        assert_eq!(totals["cpu-clock"].0, n as u64, "pprof {range}");
    }
}

fn hotloop() -> Option<PathBuf> {
    Some(sampling_fixtures()?.dir.join("hotloop"))
}

#[test]
fn perfs_recording_keeps_the_samples_perf_script_time_prints() {
    let Some(binary) = hotloop() else { return };
    let dir = Dir::new("time-perf");
    let data = dir.path("perf.data");
    perf_record_with(
        &data,
        "cpu-clock",
        &["-q", "-c", "200000", "-g"],
        &[s(&binary), "0.3"],
    )
    .expect("perf record");
    check(&data, &dir);
}

#[test]
fn cpiflames_recording_keeps_the_samples_perf_script_time_prints() {
    let Some(binary) = hotloop() else { return };
    let dir = Dir::new("time-ours");
    let data = dir.path("ours.data");
    ok(&cpiflame(&["record", "-o", s(&data), s(&binary), "0.3"]));
    check(&data, &dir);
    // diff: `A:B` is A for the earlier run, B for the later; one range is for both.
    let all = perf_times(&data, None);
    let (a, b) = (&all[all.len() / 4], &all[all.len() / 2]);
    let first = perf_times(&data, Some(&format!(",{a}"))).len() as u64;
    let second = perf_times(&data, Some(&format!("{b},"))).len() as u64;
    let summary = |time: &str| -> Value {
        serde_json::from_str(&ok(&cpiflame(&[
            "diff",
            "--summary",
            "--json",
            "--time",
            time,
            s(&data),
            s(&data),
        ])))
        .unwrap()
    };
    let sides = summary(&format!(",{a}:{b},"));
    let samples = |v: &Value, side: &str| v[side]["cycles_samples"].as_u64();
    assert_eq!(
        (samples(&sides, "before"), samples(&sides, "after")),
        (Some(first), Some(second)),
        "{sides}"
    );
}

#[test]
fn bad_input_is_one_line_naming_the_flag() {
    let dir = Dir::new("time-bad");
    let folded = dir.path("x.folded");
    std::fs::write(&folded, "app;main 3\n").unwrap();
    let script = dir.path("x.perf");
    std::fs::write(
        &script,
        "app 1/1 [000] 10.500000: 1 cpu-clock:\n\t 10 f (/bin/app)\n",
    )
    .unwrap();
    // A perf.data file whose samples have no PERF_SAMPLE_TIME.
    let attr = EventAttr {
        type_: 1,
        config: 0,
        sample_period_or_freq: 1000,
        sample_type: sample::IDENTIFIER | sample::IP | sample::TID | sample::PERIOD,
        name: Some("cpu-clock".into()),
        ids: vec![1],
        ..EventAttr::default()
    };
    let mut rec = Recording::create(dir.path("untimed.data"), vec![attr]);
    let pid = 4242; // no perf map: the recording is refused before anything is named
    rec.sample(
        0,
        &SampleFields {
            id: 1,
            ip: 0x1000,
            pid,
            tid: pid,
            period: 1000,
            ..SampleFields::default()
        },
    );
    let untimed_data = rec.finish(&test_features());
    let untimed = dir.path("untimed.perf");
    std::fs::write(&untimed, "app 1/1 cpu-clock:\n\t 10 f (/bin/app)\n").unwrap();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["fold", "--time", "abc", s(&script)],
            "--time \"abc\": \"abc\" is not START,STOP".into(),
        ),
        (
            vec!["report", "--time", "2,1", s(&script)],
            "--time \"2,1\": \"2,1\" ends before it starts".into(),
        ),
        (
            vec!["render", "--time", "10%-120%", s(&script)],
            "--time \"10%-120%\": percentages must be between 0% and 100%".into(),
        ),
        (
            vec!["fold", "--time", "1,2", s(&folded)],
            format!("--time: {} has no timestamps (folded text)", s(&folded)),
        ),
        (
            vec!["fold", "--time", "1,2", s(&untimed)],
            format!(
                "--time: {} has no timestamps (perf script text printed without times)",
                s(&untimed)
            ),
        ),
        (
            vec!["report", "--time", "1,2", s(&untimed_data)],
            format!(
                "--time: {} has no timestamps (recorded without PERF_SAMPLE_TIME)",
                s(&untimed_data)
            ),
        ),
        (
            vec!["fold", "--time", "1,2", s(&script)],
            format!(
                "--time \"1,2\": no sample of {} is in 1.000000000,2.000000000 (its 1 samples are from 10.500000000 to 10.500000000)",
                s(&script)
            ),
        ),
    ];
    for (args, line) in cases {
        let out = cpiflame(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(&line), "{args:?}: {err}\nexpected: {line}");
    }
    // Inside the range: the one sample.
    assert_eq!(
        ok(&cpiflame(&["fold", "--time", "10.5,10.5", s(&script)])),
        "app;f 1\n"
    );
}
