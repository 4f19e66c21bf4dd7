//! `cpiflame report` and `cpiflame diff` on recorded runs of a fixture whose work shifts
//! between two functions by a known amount, the CI threshold in both directions, and folded
//! input (including bad lines).

use crate::support;

use std::path::PathBuf;
use std::sync::OnceLock;

use support::{cpiflame, ok, perf_works, s, shared_fixtures};

/// Recordings of `shift 25`, `shift 75` and `shift 0` (work_a 25%, 75%, never), made once.
struct Runs {
    dir: PathBuf,
    a25: PathBuf,
    a75: PathBuf,
    a0: PathBuf,
}

fn runs() -> Option<&'static Runs> {
    static RUNS: OnceLock<Option<Runs>> = OnceLock::new();
    RUNS.get_or_init(|| {
        if !perf_works() {
            cpiflame_testkit::unavailable(
                "sampling does not work here (`perf record -e cpu-clock` fails)",
            );
            return None;
        }
        let f = shared_fixtures().expect("fixtures build");
        let dir = crate::support::run_scratch("compare");
        let rec = |name: &str, percent: &str| {
            let data = dir.join(name);
            ok(&cpiflame(&[
                "record",
                "-o",
                s(&data),
                s(&f.shift),
                percent,
                "0.5",
            ]));
            data
        };
        Some(Runs {
            a25: rec("a25.data", "25"),
            a75: rec("a75.data", "75"),
            a0: rec("a0.data", "0"),
            dir,
        })
    })
    .as_ref()
}

/// The number after `"key":` in the JSON object that follows `"name":"NAME"`.
fn field(json: &str, name: &str, key: &str) -> f64 {
    let at = json
        .find(&format!("\"name\":\"{name}\""))
        .unwrap_or_else(|| panic!("{name} in {json}"));
    let rest = &json[at..];
    let v = rest.split(&format!("\"{key}\":")).nth(1).unwrap();
    v.split([',', '}']).next().unwrap().trim().parse().unwrap()
}

#[test]
fn diff_measures_the_known_shift() {
    let Some(r) = runs() else { return };
    let json = ok(&cpiflame(&[
        "diff",
        "--summary",
        "--json",
        s(&r.a25),
        s(&r.a75),
    ]));
    assert!(json.contains("\"schema\":\"cpiflame-diff/1\""), "{json}");
    // work_a: 25% -> 75% of the samples (+50 points); work_b the opposite.
    let a = field(&json, "work_a", "delta_points");
    let b = field(&json, "work_b", "delta_points");
    assert!((40.0..60.0).contains(&a), "work_a moved {a} points");
    assert!((-60.0..-40.0).contains(&b), "work_b moved {b} points");
    // The text summary names them too, and the SVG draws both.
    let text = ok(&cpiflame(&["diff", "--summary", s(&r.a25), s(&r.a75)]));
    assert!(text.contains("work_a") && text.contains("work_b"), "{text}");
    let svg = ok(&cpiflame(&["diff", s(&r.a25), s(&r.a75)]));
    assert!(
        svg.starts_with("<?xml") || svg.starts_with("<svg"),
        "{}",
        &svg[..100]
    );
    assert!(svg.contains("work_a") && svg.contains("work_b"));
}

#[test]
fn fail_above_trips_in_both_directions_and_not_below_the_change() {
    let Some(r) = runs() else { return };
    let code = |args: &[&str]| cpiflame(args).status.code();
    // work_a grew by ~50 points.
    assert_eq!(
        code(&[
            "diff",
            "--summary",
            s(&r.a25),
            s(&r.a75),
            "--fail-above",
            "40%"
        ]),
        Some(3)
    );
    assert_eq!(
        code(&[
            "diff",
            "--summary",
            s(&r.a25),
            s(&r.a75),
            "--fail-above",
            "65"
        ]),
        Some(0)
    );
    // The other way round work_b grew by ~50 points.
    assert_eq!(
        code(&[
            "diff",
            "--summary",
            s(&r.a75),
            s(&r.a25),
            "--fail-above",
            "40"
        ]),
        Some(3)
    );
    // Against itself nothing grows.
    assert_eq!(
        code(&[
            "diff",
            "--summary",
            s(&r.a25),
            s(&r.a25),
            "--fail-above",
            "0.5"
        ]),
        Some(0)
    );
    let out = cpiflame(&[
        "diff",
        "--summary",
        s(&r.a25),
        s(&r.a75),
        "--fail-above",
        "lots",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--fail-above lots"));
}

#[test]
fn stacks_gone_in_after_are_shown() {
    let Some(r) = runs() else { return };
    // shift 0 never calls work_a.
    let svg = ok(&cpiflame(&["diff", s(&r.a25), s(&r.a0)]));
    assert!(
        svg.contains("work_a"),
        "the vanished work_a is still in the picture"
    );
    let json = ok(&cpiflame(&[
        "diff",
        "--summary",
        "--json",
        s(&r.a25),
        s(&r.a0),
    ]));
    assert_eq!(field(&json, "work_a", "after_total_share"), 0.0);
}

#[test]
fn report_lists_top_frames_with_shares() {
    let Some(r) = runs() else { return };
    let json = ok(&cpiflame(&["report", "--json", s(&r.a75)]));
    assert!(json.contains("\"schema\":\"cpiflame-report/1\""), "{json}");
    let a = field(&json, "work_a", "total_share");
    assert!((0.65..0.85).contains(&a), "work_a has {a} of the samples");
    let text = ok(&cpiflame(&["report", s(&r.a75)]));
    let a_line = text.lines().position(|l| l.contains("work_a")).unwrap();
    let b_line = text.lines().position(|l| l.contains("work_b")).unwrap();
    assert!(a_line < b_line, "sorted by total: {text}");
}

#[test]
fn folded_files_are_read_by_render_report_and_diff() {
    let Some(r) = runs() else { return };
    let before = r.dir.join("before.folded");
    let after = r.dir.join("after.folded");
    std::fs::write(
        &before,
        ok(&cpiflame(&["fold", s(&r.a25), "--event", "cpu-clock"])),
    )
    .unwrap();
    std::fs::write(
        &after,
        ok(&cpiflame(&["fold", s(&r.a75), "--event", "cpu-clock"])),
    )
    .unwrap();
    assert!(ok(&cpiflame(&["render", s(&after)])).contains("work_a"));
    assert!(ok(&cpiflame(&["report", s(&after)])).contains("work_a"));
    let json = ok(&cpiflame(&[
        "diff",
        "--summary",
        "--json",
        s(&before),
        s(&after),
    ]));
    let a = field(&json, "work_a", "delta_points");
    assert!((40.0..60.0).contains(&a), "{a}");
    // A perf.data before and a folded after compare too.
    let mixed = ok(&cpiflame(&[
        "diff",
        "--summary",
        "--json",
        s(&r.a25),
        s(&after),
    ]));
    assert!((40.0..60.0).contains(&field(&mixed, "work_a", "delta_points")));
}

#[test]
fn a_bad_folded_line_is_one_error_with_its_line_number() {
    let dir = support::Dir::new("badfold");
    let bad = dir.path("bad.folded");
    std::fs::write(&bad, "app;main;a 10\napp;main;b 20\napp;main;c twelve\n").unwrap();
    for cmd in ["render", "report"] {
        let out = cpiflame(&[cmd, s(&bad)]);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{err}");
        assert!(
            errors[0].contains("bad.folded") && errors[0].contains("line 3"),
            "{err}"
        );
        assert!(!err.contains("panicked"));
    }
    drop(dir);
}

/// `perf script` text of a cycles + instructions recording without a stall event (periods
/// differ from sample to sample, as in frequency mode): fast has CPI 0.25, slow CPI 8.
const CYCLES_AND_INSTRUCTIONS: &str = "\
app  100 [000]     1.000001:       4000 cycles: \n\
\t    55555555 fast+0x0 (/bin/app)\n\
\t    55555556 main+0x0 (/bin/app)\n\
\n\
app  100 [000]     1.000002:      16000 instructions: \n\
\t    55555555 fast+0x0 (/bin/app)\n\
\t    55555556 main+0x0 (/bin/app)\n\
\n\
app  100 [000]     1.000003:       8000 cycles: \n\
\t    55555557 slow+0x0 (/bin/app)\n\
\t    55555556 main+0x0 (/bin/app)\n\
\n\
app  100 [000]     1.000004:       1000 instructions: \n\
\t    55555557 slow+0x0 (/bin/app)\n\
\t    55555556 main+0x0 (/bin/app)\n\
\n\
app  100 [000]     1.000005:       1000 instructions: \n\
\t    55555557 slow+0x0 (/bin/app)\n\
\t    55555556 main+0x0 (/bin/app)\n\
\n";

#[test]
fn cycles_and_instructions_fold_report_render_and_diff_give_cpi() {
    let dir = support::Dir::new("cpi-columns");
    let text = dir.path("two.txt");
    std::fs::write(&text, CYCLES_AND_INSTRUCTIONS).unwrap();
    let text = s(&text);

    // fold: instructions first ("before" for difffolded.pl), cycles second; samples; the
    // columns named so that reading the folded file back finds instructions again.
    let folded = ok(&cpiflame(&["fold", text]));
    assert_eq!(
        folded,
        "# columns: instructions cycles\napp;main;fast 1 1\napp;main;slow 2 1\n"
    );
    let refolded = dir.path("two.folded");
    std::fs::write(&refolded, &folded).unwrap();
    assert!(
        ok(&cpiflame(&["report", s(&refolded)])).contains("CPI"),
        "the folded file reads back with instructions"
    );

    let report = ok(&cpiflame(&["report", text]));
    assert!(
        report.starts_with("# cpiflame report: 2 samples of cycles, CPI 0.67 (instructions)\n"),
        "{report}"
    );
    assert!(
        report.contains("CPI  Samples  Function [module]"),
        "{report}"
    );
    // One sample of each event: the CPI's interval is unbounded above.
    assert!(
        report
            .lines()
            .any(|l| l.contains(" 4.00 [") && l.ends_with("        1  slow [app]")),
        "{report}"
    );
    let json = ok(&cpiflame(&["report", "--json", text]));
    assert_eq!(field(&json, "fast", "cpi"), 0.25);
    assert_eq!(field(&json, "fast", "ipc"), 4.0);
    assert_eq!(field(&json, "slow", "cpi"), 4.0);

    // render: CPI colours, legend, subtitle; widths are cycles periods (4,000 and 8,000).
    let svg = ok(&cpiflame(&["render", text]));
    assert!(svg.contains(r#"fill="url(#cpi-scale)""#));
    assert!(
        svg.contains(">CPI 0.67 · IPC 1.50 · cycles: 2 samples, 12.0 k events"),
        "{svg}"
    );
    assert!(svg.contains(r#"data-total="12000""#));
    assert!(svg.contains("CPI: 4.00 · IPC: 0.25"));

    // diff against itself: CPI before → after in the summary and the tooltips.
    let summary = ok(&cpiflame(&["diff", "--summary", text, text]));
    assert!(summary.contains("CPI before -> after"), "{summary}");
    assert!(summary.contains("  4.00 ->   4.00  "), "{summary}");
    let json = ok(&cpiflame(&["diff", "--summary", "--json", text, text]));
    assert_eq!(field(&json, "slow", "before_cpi"), 4.0);
    assert_eq!(field(&json, "slow", "after_cpi"), 4.0);
    let svg = ok(&cpiflame(&["diff", text, text]));
    assert!(svg.contains("CPI: 4.00 → 4.00"), "{svg}");
    assert!(svg.contains(" · CPI: 0.67 → 0.67"), "{svg}");
}
