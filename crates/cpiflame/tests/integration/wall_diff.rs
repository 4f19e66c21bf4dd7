//! `cpiflame diff` of two wall-time recordings (issue 37, item 4): the differential graph is
//! of wall time, as the summary and the gate are. Two `record --off-cpu` recordings of the
//! `offcpu` fixture whose split differs by construction (`offcpu SCALE COMPUTE`: COMPUTE 1,
//! then 3, triples the compute thread's CPU budget and leaves the waiters' waits alone), read
//! back from the SVG: every frame's width (`data-n`, and its drawn width) is AFTER's wall
//! time as `report --json` of AFTER gives it, and the tooltips carry both runs' on-CPU,
//! runnable and blocked time as `report --json` of each run gives them.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use support::{cpiflame, ok, perf_works, s, Dir};

/// SCALE of both runs: a phase of 200 ms.
const SCALE: &str = "0.5";

/// `cpiflame record --off-cpu -o DATA -- offcpu SCALE COMPUTE`, which must succeed.
fn record(offcpu: &Path, data: &Path, compute: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "--off-cpu", "-o"])
        .arg(data)
        .arg("--")
        .arg(offcpu)
        .args([SCALE, compute])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The wall-time numbers of a frame: on-CPU, runnable, blocked nanoseconds.
type Split = [f64; 3];

/// `report --json --limit 0`'s user frames by name, and its total wall time.
fn report(data: &Path) -> (HashMap<String, Split>, f64) {
    let out = cpiflame(&["report", "--json", "--limit", "0", s(data)]);
    let v: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    let ns = |f: &serde_json::Value, key: &str| f[key].as_f64().expect(key);
    let frames = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "user")
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                [
                    ns(f, "on_cpu_ns"),
                    ns(f, "runnable_ns"),
                    ns(f, "blocked_ns"),
                ],
            )
        })
        .collect();
    (frames, ns(&v["totals"], "wall_ns"))
}

/// A frame of the differential graph: its name, tooltip, `data-n` and drawn width.
#[derive(Debug)]
struct Drawn {
    name: String,
    title: String,
    n: f64,
    width: f64,
}

fn drawn(svg: &str) -> Vec<Drawn> {
    svg.split("<g class=\"f\"")
        .skip(1)
        .map(|g| {
            let attr = |key: &str| -> f64 {
                let after = g.split_once(&format!("{key}=\"")).unwrap().1;
                after.split('"').next().unwrap().parse().unwrap()
            };
            let title = g.split_once("<title>").unwrap().1;
            let title = title.split("</title>").next().unwrap().to_string();
            Drawn {
                name: title.lines().next().unwrap().to_string(),
                n: attr("data-n"),
                width: attr("width"),
                title,
            }
        })
        .collect()
}

/// A tooltip's line of one run, `RUN: wall W (P%): on-CPU A, runnable B, blocked C`, as
/// nanoseconds (the tooltip's milliseconds).
fn tooltip_split(title: &str, run: &str) -> Split {
    let line = title
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{run}: wall ")))
        .unwrap_or_else(|| panic!("no {run} line in {title:?}"));
    let ms = |text: &str| -> f64 {
        let number = text.trim().strip_suffix(" ms").unwrap().replace(',', "");
        number.parse::<f64>().unwrap() * 1e6
    };
    let (_, parts) = line.split_once("): ").unwrap();
    let mut split = [0.0; 3];
    for (i, (part, label)) in parts
        .split(", ")
        .zip(["on-CPU ", "runnable ", "blocked "])
        .enumerate()
    {
        split[i] = ms(part.strip_prefix(label).unwrap());
    }
    split
}

/// Equal at the tooltip's precision: three significant digits (0 exactly).
fn same_ms(shown: f64, ns: f64) -> bool {
    if ns == 0.0 {
        shown == 0.0
    } else {
        (shown - ns).abs() <= 0.005 * ns + 1.0
    }
}

#[test]
fn diff_of_two_wall_time_recordings_is_drawn_by_wall_time() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return;
    }
    let fixtures = support::shared_fixtures().unwrap();
    let dir = Dir::new("wall-diff");
    let (before, after, svg) = (dir.path("b.data"), dir.path("a.data"), dir.path("d.svg"));
    record(&fixtures.offcpu, &before, "1");
    record(&fixtures.offcpu, &after, "3");
    ok(&cpiflame(&["diff", s(&before), s(&after), "-o", s(&svg)]));
    let text = std::fs::read_to_string(&svg).unwrap();
    let frames = drawn(&text);
    let (b_report, _) = report(&before);
    let (a_report, a_wall) = report(&after);

    // The root is AFTER's wall time; every frame's drawn width is its share of the root's.
    let root = frames.iter().find(|f| f.name == "all").unwrap();
    assert_eq!(root.n, a_wall, "the root's width is AFTER's wall time");
    for f in &frames {
        let want = root.width * f.n / root.n;
        assert!(
            (f.width - want).abs() <= 0.15,
            "{}: drawn {} px, its wall time makes it {want:.2} px",
            f.name,
            f.width
        );
    }
    assert!(text.contains("wall-time share change (points):"));

    // The fixture's own functions, one frame each: width = AFTER's wall time, tooltips = each
    // run's report.
    let mut failures = Vec::new();
    for function in [
        "compute_spin",
        "wait_lock",
        "wait_pipe",
        "spin_preempted",
        "spin_hog",
    ] {
        let here: Vec<&Drawn> = frames.iter().filter(|f| f.name == function).collect();
        assert_eq!(here.len(), 1, "{function}: one frame in the graph");
        let f = here[0];
        let a = a_report[function];
        let b = b_report[function];
        if f.n != a.iter().sum::<f64>() {
            failures.push(format!(
                "{function}: width {} ns, AFTER's report says {a:?}",
                f.n
            ));
        }
        for (run, want) in [("before", b), ("after", a)] {
            let shown = tooltip_split(&f.title, run);
            if !(0..3).all(|i| same_ms(shown[i], want[i])) {
                failures.push(format!(
                    "{function}: {run} tooltip {shown:?} ns, report {want:?} ns"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // By construction: compute ran three times the CPU time, and its share of wall time grew
    // (red side: a positive change), the waiters' (whose waits did not change) shrank.
    let change = |name: &str| -> f64 {
        let f = frames.iter().find(|f| f.name == name).unwrap();
        let line = f
            .title
            .lines()
            .find_map(|l| l.strip_prefix("change: "))
            .unwrap();
        line.split(' ').next().unwrap().parse().unwrap()
    };
    let cpu_ratio = a_report["compute_spin"][0] / b_report["compute_spin"][0];
    assert!(
        (2.5..=3.5).contains(&cpu_ratio),
        "compute_spin's on-CPU time grew {cpu_ratio:.2}x, the fixture tripled it"
    );
    assert!(change("compute_spin") > 0.0);
    assert!(change("wait_lock") < 0.0 && change("wait_pipe") < 0.0);

    // `--on-cpu-only`: the same two recordings compared by cycles, as read (the measure
    // comes from the columns each run was read with, not from the columns' names).
    let on_cpu = dir.path("on-cpu.svg");
    ok(&cpiflame(&[
        "diff",
        "--on-cpu-only",
        s(&before),
        s(&after),
        "-o",
        s(&on_cpu),
    ]));
    let text = std::fs::read_to_string(&on_cpu).unwrap();
    assert!(
        !text.contains("wall-time share change"),
        "drawn by wall time"
    );
    let json = ok(&cpiflame(&["report", "--on-cpu-only", "--json", s(&after)]));
    let totals: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cycles = totals["totals"]["cycles_period"].as_f64().unwrap();
    let root = drawn(&text).into_iter().find(|f| f.name == "all").unwrap();
    assert_eq!(root.n, cycles, "the root's width is AFTER's cycles");
    let summary = ok(&cpiflame(&[
        "diff",
        "--on-cpu-only",
        "--summary",
        s(&before),
        s(&after),
    ]));
    assert!(!summary.contains("wall"), "{summary}");
}
