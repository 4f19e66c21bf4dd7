//! The C ABI as a C program, a C++ compiler and Python's ctypes use it: the library installed
//! by `scripts/install-markers-c.sh` into a scratch prefix, programs built with the documented
//! pkg-config commands, and their per-region counts set against `perf stat` of the same runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use cpiflame_testkit::{unavailable, Dir};
use serde_json::Value;

const EVENTS: &str = "task-clock,page-faults,context-switches";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The prefix the library was installed into, once per process: the shared and static
/// libraries cargo built for this test (beside the test binary, in target/*/deps).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let deps = exe.parent().unwrap();
        let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("markers-c-prefix");
        let _ = std::fs::remove_dir_all(&prefix);
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/install-markers-c.sh"))
            .arg("--prefix")
            .arg(&prefix)
            .arg("--from")
            .arg(deps)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "install-markers-c.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        prefix
    })
}

/// Whether every tool a test runs is on PATH; else the test does not run (a skip locally, a
/// failure under CI=true: scripts/test.sh installs them).
fn tools(names: &[&str]) -> bool {
    for name in names {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            unavailable(format!(
                "{name} is not installed (scripts/test.sh installs it)"
            ));
            return false;
        }
    }
    true
}

fn pkg_config(args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args(args)
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"))
        .output()
        .expect("pkg-config (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "pkg-config {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// `CC -O2 SOURCE $(pkg-config --cflags --libs PACKAGE) EXTRA -o OUT`, the documented command
/// (plus an rpath, as the prefix is not one the dynamic linker searches).
fn build(cc: &str, source: &Path, package: &str, extra: &[&str], out: &Path) {
    let mut cmd = Command::new(cc);
    cmd.arg("-O2")
        .arg("-Wall")
        .arg("-Werror")
        .arg(source)
        .args(pkg_config(&["--cflags", "--libs", package]))
        .args(extra)
        .arg(format!("-Wl,-rpath,{}", prefix().join("lib").display()))
        .arg("-o")
        .arg(out);
    let shown = format!("{cmd:?}");
    let o = cmd.output().unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(
        o.status.success(),
        "{shown}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn run_ok(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn software_events_open() -> bool {
    let ok = Command::new("perf")
        .args(["stat", "-x,", "-e", EVENTS, "--", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        unavailable(format!("perf stat -e {EVENTS} does not run here"));
    }
    ok
}

/// `perf stat -x, -e EVENTS` of `cmd`: each event's count.
fn perf_stat(dir: &Dir, cmd: &[&str]) -> Vec<(String, u64)> {
    let out = dir.path("stat.txt");
    run_ok(
        Command::new("perf")
            .args(["stat", "-x,", "-e", EVENTS, "-o"])
            .arg(&out)
            .arg("--")
            .args(cmd),
    );
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            // task-clock is printed in msec with a fraction: back to ns.
            let value = if f[1] == "msec" {
                (f[0].parse::<f64>().unwrap() * 1e6).round() as u64
            } else {
                f[0].parse().unwrap()
            };
            (f[2].to_string(), value)
        })
        .collect()
}

fn region<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["regions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no region {name} in {report}"))
}

fn total(report: &Value, name: &str, metric: &str) -> u64 {
    region(report, name)["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .and_then(|m| m["total"].as_u64())
        .unwrap()
}

/// One run of the ray tracer under perf stat: perf's counts and the program's report.
struct Run {
    stat: Vec<(String, u64)>,
    report: Value,
}

impl Run {
    fn new(dir: &Dir, exe: &Path, args: &[&str]) -> Run {
        let json = dir.path("report.json");
        let mut cmd = vec![
            exe.to_str().unwrap(),
            "-e",
            EVENTS,
            "-j",
            json.to_str().unwrap(),
        ];
        cmd.extend_from_slice(args);
        let stat = perf_stat(dir, &cmd);
        let report = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        Run { stat, report }
    }

    fn stat(&self, event: &str) -> u64 {
        self.stat.iter().find(|(e, _)| e == event).unwrap().1
    }

    /// The regions that do not nest (setup, the frames, output), added up.
    fn regions(&self, event: &str) -> u64 {
        ["setup", "frame", "output"]
            .iter()
            .map(|r| total(&self.report, r, event))
            .sum()
    }

    /// What the regions leave out: startup (the dynamic loader, the library opening its
    /// counters), the threads' creation, exit.
    fn left_out(&self, event: &str) -> i64 {
        self.stat(event) as i64 - self.regions(event) as i64
    }
}

#[test]
fn the_ray_tracer_counts_per_pixel_what_perf_stat_counts_for_the_run() {
    if !tools(&["cc", "pkg-config", "perf"]) || !software_events_open() {
        return;
    }
    let dir = Dir::new("markers-c-raytrace");
    let exe = dir.path("raytrace");
    let source = repo_root().join("fixtures/workloads/raytrace.c");
    build(
        "cc",
        &source,
        "cpiflame_markers",
        &["-lm", "-pthread"],
        &exe,
    );
    for threads in ["1", "2"] {
        let big = Run::new(&dir, &exe, &["-s", "160x120", "-t", threads]);
        let tiny = Run::new(&dir, &exe, &["-s", "1x1", "-t", threads]);
        let pixel = region(&big.report, "pixel");
        assert_eq!(pixel["samples"], 160 * 120, "threads {threads}");
        // The frame buffer's pages are first written by pixels: one fault per page, exactly.
        let pages = (160u64 * 120 * 3 + 1).div_ceil(4096);
        assert_eq!(total(&big.report, "pixel", "page-faults"), pages);
        for event in ["task-clock", "page-faults", "context-switches"] {
            let (stat, regions) = (big.stat(event), big.regions(event));
            assert!(
                regions <= stat,
                "threads {threads}: {event}: regions {regions} > perf stat {stat}"
            );
            // What the regions leave out does not grow with the image: the tiny run's.
            let (left, base) = (big.left_out(event), tiny.left_out(event));
            let slack = match event {
                "task-clock" => 2_000_000 + stat as i64 / 50, // 2 ms + 2%: scheduling noise
                "page-faults" => 8,                           // ASLR: a page more or less
                _ => 40, // context switches: the machine's other load
            };
            assert!(
                (left - base).abs() <= slack,
                "threads {threads}: {event}: perf stat {stat}, regions {regions}: {left} left \
                 out, the 1x1 run's {base} (slack {slack})"
            );
            eprintln!(
                "threads {threads}: {event}: perf stat {stat}, regions {regions}, left out \
                 {left} (1x1 run: {base})"
            );
        }
    }
}

#[test]
fn the_static_library_links_with_its_pkg_config_file() {
    if !tools(&["cc", "pkg-config", "ldd"]) {
        return;
    }
    let dir = Dir::new("markers-c-static");
    let exe = dir.path("raytrace");
    let source = repo_root().join("fixtures/workloads/raytrace.c");
    build(
        "cc",
        &source,
        "cpiflame_markers-static",
        &["-lm", "-pthread"],
        &exe,
    );
    let ldd = run_ok(Command::new("ldd").arg(&exe));
    assert!(!String::from_utf8_lossy(&ldd.stdout).contains("cpiflame"));
    let out = run_ok(Command::new(&exe).args(["-s", "8x8", "-e", "task-clock"]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("region pixel: 64 samples"));
}

#[test]
fn wrong_call_sequences_from_c_are_codes_and_messages_never_a_crash() {
    if !tools(&["cc", "pkg-config"]) {
        return;
    }
    let dir = Dir::new("markers-c-misuse");
    let exe = dir.path("misuse");
    build(
        "cc",
        &data("misuse.c"),
        "cpiflame_markers",
        &["-pthread"],
        &exe,
    );
    let out = run_ok(Command::new(&exe).arg(EVENTS));
    let text = String::from_utf8(out.stdout).unwrap();
    let expect = [
        "cpiflame_markers_open(\"no-such-event\", &never) => -2 | ",
        "cpiflame_markers_open(events, NULL) => -1 | out is NULL",
        "cpiflame_markers_open(events, &m) => 0 | ",
        "cpiflame_markers_stop(m, r) => -6 | stop of region 'x': it is not running",
        "cpiflame_markers_stop_named(m, \"never\") => -6 | stop of region 'never': it is not running",
        "cpiflame_markers_start(m, 42) => -5 | start: id 42 is not a region of this handle",
        "cpiflame_markers_lap(m, 42) => -5 | ",
        "cpiflame_markers_metric(m, 42, \"ns\", NULL) => -1 | out is NULL",
        "cpiflame_markers_start_named(m, NULL) => -1 | name is NULL",
        "cpiflame_markers_write_report(m, 7, 1) => -1 | unknown report format 7",
        "cpiflame_markers_write_report(m, CPIFLAME_MARKERS_TEXT, -1) => -9 | writing the report to file descriptor -1",
        "cpiflame_markers_report(m, CPIFLAME_MARKERS_JSON, small, sizeof small, &needed) => -8 | the report needs",
        "cut report: '{\n  \"",
        "cpiflame_markers_start(never, 0) => -3 | handle 0 is not an open handle",
        "cpiflame_markers_start(0x123456789abcdefULL, 0) => -3 | 0x123456789abcdef is not a handle this library opened",
        "cpiflame_markers_start(shared, 0) => -4 | handle 0x",
        "cpiflame_markers_close(m) => 0 | ",
        "cpiflame_markers_start(m, r) => -3 | handle 0x",
        "cpiflame_markers_close(m) => -3 | ",
        "cpiflame_markers_collected_write_report(CPIFLAME_MARKERS_TEXT, 1) => -11 | nothing collected yet",
        "strerror(-6): CPIFLAME_MARKERS_ENOTRUNNING",
        "done",
    ];
    let mut rest = text.as_str();
    for e in expect {
        let at = rest
            .find(e)
            .unwrap_or_else(|| panic!("'{e}' not found (in order) in:\n{text}"));
        rest = &rest[at + e.len()..];
    }
    assert!(text.contains("belongs to another thread"), "{text}");
    assert!(text.contains("was closed"), "{text}");
}

#[test]
fn likwid_style_macros_in_c_and_cpp_add_threads_up() {
    if !tools(&["cc", "c++", "pkg-config"]) {
        return;
    }
    let dir = Dir::new("markers-c-macros");
    for (cc, name) in [("cc", "macros_c"), ("c++", "macros_cpp")] {
        let exe = dir.path(name);
        let mut extra = vec!["-pthread"];
        if cc == "c++" {
            extra.insert(0, "-xc++");
        }
        build(cc, &data("macros.c"), "cpiflame_markers", &extra, &exe);
        let json = dir.path(&format!("{name}.json"));
        let out = run_ok(
            Command::new(&exe)
                .env("CPIFLAME_MARKERS_EVENTS", EVENTS)
                .env("CPIFLAME_MARKERS_OUTPUT", &json),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("CPIFLAME_MARKER_STOP of region 'main': it is not running"),
            "{stderr}"
        );
        let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(
            report["events"],
            serde_json::json!(EVENTS.split(',').collect::<Vec<_>>())
        );
        assert_eq!(region(&report, "work")["samples"], 3 * 50);
        assert_eq!(region(&report, "main")["samples"], 1);
        assert_eq!(region(&report, "main")["unmatched_stops"], 1);
    }
    // Compiled out: no library needed, nothing printed.
    let exe = dir.path("macros_off");
    let o = Command::new("cc")
        .args([
            "-O2",
            "-Wall",
            "-Werror",
            "-DCPIFLAME_MARKERS_DISABLE",
            "-pthread",
        ])
        .arg(format!(
            "-I{}",
            repo_root().join("crates/markers-c/include").display()
        ))
        .arg(data("macros.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = run_ok(&mut Command::new(&exe));
    assert!(out.stderr.is_empty());
}

#[test]
fn python_ctypes_smoke() {
    if !tools(&["python3"]) {
        return;
    }
    let lib = prefix().join("lib/libcpiflame_markers.so");
    let out = run_ok(
        Command::new("python3")
            .arg(data("smoke.py"))
            .arg(&lib)
            .arg(EVENTS),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("py-loop samples: 100"), "{text}");
    assert!(text.contains(&format!("events: {EVENTS}")), "{text}");
    assert!(
        text.contains(
            "stop_named(never-started) => -6 | stop of region 'never-started': it is not running"
        ),
        "{text}"
    );
    assert!(
        text.contains("start after close => -3 | handle 0x"),
        "{text}"
    );
}

#[test]
fn the_header_declares_exactly_the_exported_functions() {
    if !tools(&["nm"]) {
        return;
    }
    let lib = prefix().join("lib/libcpiflame_markers.so");
    let nm = run_ok(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib));
    let mut exported: Vec<String> = String::from_utf8(nm.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("cpiflame_"))
        .map(str::to_string)
        .collect();
    exported.sort();
    let header =
        std::fs::read_to_string(repo_root().join("crates/markers-c/include/cpiflame_markers.h"))
            .unwrap();
    let mut declared: Vec<String> = header
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim_start().starts_with('*'))
        .filter_map(|l| {
            let at = l.find("cpiflame_marker")?;
            let name: String = l[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            l[at + name.len()..].starts_with('(').then_some(name)
        })
        .filter(|n| !n.ends_with("_t"))
        .collect();
    declared.sort();
    declared.dedup();
    assert_eq!(exported, declared);
}
