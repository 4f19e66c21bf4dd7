//! Several recordings read as one (`render a b`, `fold DIR`, `report a b`): the stacks of
//! every file added up, exactly, whatever the inputs (folded text, perf.data); a folder
//! stands for its files (for `diff` too: BEFORE, AFTER and each `--before`/`--after`);
//! commands that read one recording say so in one line.

use crate::support;

use std::collections::BTreeMap;

use serde_json::Value;
use support::{cpiflame, ok, perf_record_with, perf_works, s, shared_fixtures, Dir};

/// `stack count` lines as a map.
fn folded(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        *out.entry(stack.to_string()).or_default() += count.parse::<u64>().unwrap();
    }
    out
}

#[test]
fn folded_files_and_a_folder_of_them_add_up() {
    let dir = Dir::new("merge-folded");
    let (a, b) = (dir.path("a.folded"), dir.path("b.folded"));
    std::fs::write(&a, "app;main;a 3\napp;main;b 1\n").unwrap();
    std::fs::write(&b, "app;main;a 2\napp;main;c 5\nother;x 1\n").unwrap();
    let expected = "app;main;a 5\napp;main;b 1\napp;main;c 5\nother;x 1\n";
    assert_eq!(ok(&cpiflame(&["fold", s(&a), s(&b)])), expected);
    let folder = dir.path("runs");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(&a, folder.join("1.folded")).unwrap();
    std::fs::copy(&b, folder.join("2.folded")).unwrap();
    assert_eq!(ok(&cpiflame(&["fold", s(&folder)])), expected);
    // The graph draws the sum: 12 counts (folded weights are counts, as report says).
    let svg = ok(&cpiflame(&["render", s(&a), s(&b)]));
    assert!(svg.contains("12 counts"), "{}", &svg[..svg.len().min(2000)]);
    // So do the frames' tooltips, in the graph and in diff's.
    let diff = dir.path("diff.svg");
    ok(&cpiflame(&["diff", s(&a), s(&b), "-o", s(&diff)]));
    let diff = std::fs::read_to_string(&diff).unwrap();
    for (svg, tooltip) in [
        (&svg, "<title>a\ncounts: 5, 5 events (41.67%)</title>"),
        (
            &diff,
            "<title>a\nbefore: 3 counts, 3 cycles (75.00%)\nafter: 2 counts,",
        ),
    ] {
        assert!(svg.contains(tooltip), "{tooltip}");
        for frame in svg.split(r#"<g class="f""#).skip(1) {
            let title = &frame[frame.find("<title>").unwrap()..frame.find("</title>").unwrap()];
            assert!(!title.contains("samples"), "{title}");
        }
    }

    // An empty folder, and a command that reads one recording: one line each, exit 2.
    let empty = dir.path("empty");
    std::fs::create_dir(&empty).unwrap();
    for args in [
        vec!["render", s(&empty)],
        vec!["convert", s(&a), s(&b), "--to", "pprof", "-o", "-"],
        vec!["render", s(&a), s(&b), "--mem"],
    ] {
        let out = cpiflame(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn two_perf_recordings_report_and_fold_as_their_sum() {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let binary = f.dir.join("hotloop");
    let dir = Dir::new("merge-perf");
    let (a, b) = (dir.path("a.data"), dir.path("b.data"));
    for data in [&a, &b] {
        perf_record_with(
            data,
            "cpu-clock",
            &["-q", "-c", "100000", "--call-graph", "dwarf"],
            &[binary.as_os_str(), std::ffi::OsStr::new("0.2")],
        )
        .expect("perf record");
    }
    let one = |file: &std::path::Path| folded(&ok(&cpiflame(&["fold", s(file)])));
    let mut expected = one(&a);
    for (stack, n) in one(&b) {
        *expected.entry(stack).or_default() += n;
    }
    assert_eq!(folded(&ok(&cpiflame(&["fold", s(&a), s(&b)]))), expected);

    let samples = |args: &[&str]| -> u64 {
        let v: Value = serde_json::from_str(&ok(&cpiflame(args))).unwrap();
        v["totals"]["cycles_samples"].as_u64().unwrap()
    };
    let both = samples(&["report", "--json", s(&a), s(&b)]);
    assert_eq!(
        both,
        samples(&["report", "--json", s(&a)]) + samples(&["report", "--json", s(&b)])
    );
    // Source lines are kept when every file has them: the merged graph lists hot_loop's.
    let svg = ok(&cpiflame(&["render", s(&a), s(&b)]));
    assert!(
        svg.contains("hottest lines:"),
        "no hottest lines in the merged graph"
    );
}

/// `diff` with a folder for BEFORE (and for a further run, `--before DIR`): the files of one
/// run cut into two, known by construction (the stacks of golden.rs's BEFORE split between
/// them), compare with AFTER exactly as the whole run written as one file does: the same
/// summary, JSON and graph. An empty folder is one line naming it.
#[test]
fn diff_reads_a_folder_as_one_run() {
    use crate::golden::{write, Stack, AFTER, BEFORE};
    const PART_A: &[Stack] = &[
        (&["main", "compute", "stall_here"], 10, 15),
        (&["main", "busy"], 0, 60),
    ];
    const PART_B: &[Stack] = &[
        (&["main", "compute", "stall_here"], 20, 25),
        (&["main", "compute", "helper"], 4, 10),
        (&["main"], 1, 5),
    ];
    // One process (one pid, one perf map) in every file, as the pieces of one recording are.
    let pid = support::synthetic_pid(3, 8);
    struct Map(i32);
    impl Drop for Map {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", self.0));
        }
    }
    let _map = Map(pid);
    let dir = Dir::new("merge-diff");
    let pieces = dir.path("pieces");
    std::fs::create_dir(&pieces).unwrap();
    write(&pieces, "perf.data.2026112601000000", pid, PART_A);
    write(&pieces, "perf.data.2026112601010000", pid, PART_B);
    let whole = write(&dir.0, "whole.data", pid, BEFORE);
    let after = write(&dir.0, "after.data", pid, AFTER);

    let (p, w, a) = (s(&pieces), s(&whole), s(&after));
    for extra in [&["--summary"][..], &["--summary", "--json"], &[]] {
        let diff = |before: &str| ok(&cpiflame(&[&["diff", before, a], extra].concat()));
        assert_eq!(diff(p), diff(w), "diff {extra:?}");
    }
    // The pieces' folder as a further run of BEFORE's side.
    let runs = |more: &str| {
        ok(&cpiflame(&[
            "diff",
            "--summary",
            "--json",
            w,
            a,
            "--before",
            more,
            "--after",
            a,
        ]))
    };
    let json = runs(p);
    assert_eq!(json, runs(w));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["runs"]["before"], 2);
    // BEFORE's totals are the sum of the pieces': 115 cycles samples.
    assert_eq!(v["before"]["cycles_samples"], 115);

    let empty = dir.path("empty");
    std::fs::create_dir(&empty).unwrap();
    for args in [
        vec!["diff", s(&empty), a],
        vec!["diff", w, a, "--after", s(&empty)],
    ] {
        let out = cpiflame(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(s(&empty)), "{err}");
    }
}

/// A file of a folder that holds no sample (the last of a `--switch-output` run can) is left
/// out with one warning; the others are read as without it. A folder of empty files only is
/// one error line.
#[test]
fn an_empty_file_among_several_is_left_out_with_a_warning() {
    use crate::golden::{write, Stack};
    const STACKS: &[Stack] = &[
        (&["main", "compute", "stall_here"], 10, 15),
        (&["main"], 1, 5),
    ];
    let pid = support::synthetic_pid(3, 9);
    let _map = PerfMap(pid);
    let dir = Dir::new("merge-empty");
    let full = write(&dir.0, "full.data", pid, STACKS);
    let folder = dir.path("run");
    std::fs::create_dir(&folder).unwrap();
    write(&folder, "out.data.2026112601000000", pid, STACKS);
    let empty = write(&folder, "out.data.2026112601010000", pid, &[]);
    let alone = ok(&cpiflame(&["fold", s(&full)]));
    let out = cpiflame(&["fold", s(&folder)]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), alone);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "cpiflame: warning: {}: contains no samples: left out",
            empty.display()
        ),
        "{stderr}"
    );
    let only_empty = dir.path("empty");
    std::fs::create_dir(&only_empty).unwrap();
    write(&only_empty, "a.data", pid, &[]);
    write(&only_empty, "b.data", pid, &[]);
    let out = cpiflame(&["fold", s(&only_empty)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("cpiflame: error: ")
                && l.ends_with("a.data: contains no samples")),
        "{stderr}"
    );
}

/// Removes the perf map a synthetic recording of `pid` wrote.
struct PerfMap(i32);

impl Drop for PerfMap {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", self.0));
    }
}
