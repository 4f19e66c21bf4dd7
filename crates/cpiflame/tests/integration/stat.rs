//! `cpiflame stat` on real processes with software events (this machine has no PMU): a known
//! number of page faults, per-thread attribution, children, exit statuses, the JSON form;
//! the counts on stderr (or `-o FILE`), the command's stdout its own.

use crate::support;

use std::process::{Command, Output};

use support::{perf_works, shared_fixtures, Fixtures};

fn setup() -> Option<&'static Fixtures> {
    if !perf_works() {
        cpiflame_testkit::unavailable(
            "perf events do not work here (`perf record -e cpu-clock` fails)",
        );
        return None;
    }
    Some(shared_fixtures().expect("fixtures build"))
}

fn stat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .arg("stat")
        .args(args)
        .output()
        .unwrap()
}

/// The `"scaled"` value of `event` in a JSON counts array that starts at `from`.
fn json_value(json: &str, from: usize, event: &str) -> u64 {
    let at = json[from..]
        .find(&format!("{{\"event\":\"{event}\""))
        .unwrap()
        + from;
    let rest = &json[at..];
    let v = rest.split("\"scaled\":").nth(1).unwrap();
    v.split([',', '}']).next().unwrap().parse().unwrap()
}

#[test]
fn page_faults_of_a_known_program() {
    let Some(f) = setup() else { return };
    let base = stat(&[
        "--json",
        "-e",
        "page-faults",
        f.faults.to_str().unwrap(),
        "0",
    ]);
    let base_json = String::from_utf8(base.stderr).unwrap();
    let startup = json_value(&base_json, 0, "page-faults");
    let out = stat(&[
        "--json",
        "-e",
        "page-faults,task-clock",
        f.faults.to_str().unwrap(),
        "5000",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = String::from_utf8(out.stderr).unwrap();
    let faults = json_value(&json, 0, "page-faults");
    // 5000 pages written, each faulting once, on top of the program's start-up faults.
    let extra = faults as i64 - startup as i64;
    assert!(
        (4990..=5100).contains(&extra),
        "{faults} faults, {startup} at start-up: {json}"
    );
    assert!(json.starts_with("{\"schema\":\"cpiflame-stat/1\""));
    for key in [
        "\"command\":",
        "\"exit_status\":0",
        "\"elapsed_ns\":",
        "\"derived\":",
        "\"threads\":",
    ] {
        assert!(json.contains(key), "{key} in {json}");
    }
}

/// Raw `"value"`s of `event` in every counts array from `from` on, in order.
fn raw_values(json: &str, from: usize, event: &str) -> Vec<u64> {
    let needle = format!("{{\"event\":\"{event}\"");
    let mut out = Vec::new();
    let mut at = from;
    while let Some(i) = json[at..].find(&needle) {
        at += i + needle.len();
        let v = json[at..].split("\"value\":").nth(1).unwrap();
        out.push(v.split([',', '}']).next().unwrap().parse().unwrap());
    }
    out
}

#[test]
fn per_thread_counts_go_to_their_threads() {
    let Some(f) = setup() else { return };
    // When several threads' counts cannot be told apart (see README) they share one
    // unattributed row; try a few runs for one where every worker has its own.
    let mut checked = false;
    for _ in 0..5 {
        let out = stat(&[
            "--json",
            "-e",
            "task-clock",
            f.threads.to_str().unwrap(),
            "0.3",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = String::from_utf8(out.stderr).unwrap();
        let threads = json.find("\"threads\":").unwrap();
        // Every row, unattributed included, adds up to the total (raw counts).
        let total = raw_values(&json, 0, "task-clock")[0];
        let rows: u64 = raw_values(&json, threads, "task-clock").iter().sum();
        assert_eq!(rows, total, "{json}");
        let row = |comm: &str| {
            let at = json[threads..]
                .find(&format!("\"comm\":\"{comm}\""))
                .map(|i| i + threads)?;
            Some(json_value(&json, at, "task-clock") as f64)
        };
        if let (Some(heavy), Some(light), Some(recurse)) =
            (row("heavy"), row("light"), row("recurse"))
        {
            // heavy does three times light's work; light and recurse the same; each in its
            // own thread. CPU time per unit of work varies with what else runs (1.98 was seen
            // on a loaded machine, 1.80 in support_selftest), so the band is wide; 1× would
            // still fail it. light / recurse was seen at 0.49 under CI's load (the off-CPU
            // tests pin busy threads to one CPU meanwhile); a swap with heavy (3×) or a
            // missing count still fails its band.
            assert!(
                (1.5..6.0).contains(&(heavy / light)),
                "heavy {heavy} light {light}"
            );
            assert!(
                (0.4..2.5).contains(&(light / recurse)),
                "light {light} recurse {recurse}"
            );
            checked = true;
            break;
        }
    }
    assert!(
        checked,
        "the workers never all had rows of their own in 5 runs"
    );
    let text = String::from_utf8(
        stat(&[
            "--per-thread",
            "-e",
            "task-clock",
            f.threads.to_str().unwrap(),
            "0.1",
        ])
        .stderr,
    )
    .unwrap();
    assert!(
        text.contains("threads-") && text.contains("task-clock"),
        "{text}"
    );
}

#[test]
fn children_are_counted_and_exit_statuses_passed_on() {
    let Some(f) = setup() else { return };
    let forks = f.forks.to_str().unwrap();
    let out = stat(&["--json", "-e", "task-clock", forks, "0.05", "exit7"]);
    assert_eq!(out.status.code(), Some(7));
    let json = String::from_utf8(out.stderr).unwrap();
    // Three children and the parent each do the same work: the total holds all four, and
    // the parent's own row about a quarter of it.
    let total = raw_values(&json, 0, "task-clock")[0] as f64;
    let threads = json.find("\"threads\":").unwrap();
    let rows = raw_values(&json, threads, "task-clock");
    assert_eq!(rows.iter().sum::<u64>() as f64, total);
    let parent = rows[0] as f64;
    assert!(
        total > 3.0 * parent && total < 5.5 * parent,
        "total {total}, rows {rows:?}: {json}"
    );
    assert_eq!(
        stat(&["-e", "task-clock", forks, "0.02", "abort"])
            .status
            .code(),
        Some(134)
    );
    let out = stat(&["-e", "task-clock", "/nonexistent/app"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot execute /nonexistent/app"));
}

#[test]
fn default_events_fall_back_to_the_software_set_without_a_pmu() {
    let Some(f) = setup() else { return };
    let out = stat(&[f.faults.to_str().unwrap(), "10"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // The counts go to stderr too, after the note.
    let text = &err;
    if err.contains("hardware counters are unavailable") {
        for e in [
            "task-clock",
            "context-switches",
            "cpu-migrations",
            "page-faults",
        ] {
            assert!(text.contains(e), "{e} in {text}");
        }
    } else {
        assert!(
            text.contains("cycles") && text.contains("instructions"),
            "{text}"
        );
    }
    assert!(text.contains("seconds time elapsed"));
}

/// Regression (issue 41, item 8): `stat --json ./app > stat.json` did not parse: the
/// command's stdout and the counts shared the stream. The counts go to stderr, as perf
/// stat's, or with `-o FILE` to the file alone; the command's stdout is its own. A file that
/// cannot be created fails before the command runs.
#[test]
fn counts_go_to_stderr_or_a_file_and_stdout_stays_the_commands() {
    let Some(_) = setup() else { return };
    let dir = cpiflame_testkit::Dir::new("stat-output");
    let script = "echo out; echo err >&2";
    let out = stat(&["--json", "-e", "task-clock", "sh", "-c", script]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let (first, json) = stderr.trim_end().split_once('\n').unwrap();
    assert_eq!(first, "err");
    let json: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(json["schema"], "cpiflame-stat/1");
    assert_eq!(json["command"], serde_json::json!(["sh", "-c", script]));
    assert!(json["counts"][0]["value"].as_u64().unwrap() > 0);

    let file = dir.path("stat.json");
    let out = stat(&[
        "--json",
        "-o",
        file.to_str().unwrap(),
        "-e",
        "task-clock",
        "sh",
        "-c",
        script,
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["exit_status"], 0);
    let table = dir.path("stat.txt");
    let out = stat(&["-o", table.to_str().unwrap(), "-e", "task-clock", "true"]);
    assert!(out.status.success() && out.stderr.is_empty());
    let table = std::fs::read_to_string(&table).unwrap();
    assert!(
        table.contains("Performance counter stats for 'true'"),
        "{table}"
    );

    let ran = dir.path("ran");
    let touch = format!("touch {}", ran.display());
    let bad = dir.path("no/such/dir/stat.json");
    let out = stat(&["-o", bad.to_str().unwrap(), "sh", "-c", &touch]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(bad.to_str().unwrap()), "{stderr}");
    assert!(!ran.exists());
}
