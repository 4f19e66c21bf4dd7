//! `convert --to speedscope` and `convert --to firefox` against their oracles.
//!
//! speedscope: the file validates against the JSON schema shipped in the `speedscope` npm
//! package (Debian's python3-jsonschema checks it), and the package's own offline viewer,
//! opened in headless Chromium, shows in its sandwich view per-function totals equal to
//! `cpiflame report`'s.
//!
//! Firefox Profiler (no offline UI): the structure against `samply import` of the same
//! perf.data (threads, sample counts and times per thread, user stacks by library and
//! address), the format's own invariants (every index in range, tables' lengths equal), and
//! per-function totals of the call tree computed from the file against `report`'s.
//!
//! Recordings: perf's and cpiflame's of the threads fixture (cpu-clock as cycles, task-clock
//! as stalls: no PMU here), two wall-time ones of the offcpu fixture (`cpiflame record
//! --off-cpu`, and perf's `--switch-events` without a stack at any switch: most of its
//! off-CPU time is `[blocked]` directly under its thread), a JIT one (`cpiflame record -k
//! mono` of the jitdump fixture: its JIT frames named by its own JIT dump), and the synthetic
//! top-down one (its frames named by a perf map, as JIT code). Each thread's wall time in
//! both exports is checked against `fold --tid`'s. The tools are installed by scripts/test.sh
//! under target/tools.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cpiflame_profile::wall;
use serde_json::Value;
use support::browser::Browser;
use support::{cpiflame, ok, perf_record, perf_works, s, shared_fixtures, Dir};

/// Where scripts/test.sh installs the tools these tests need.
fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tools")
}

/// The roles of the recordings of the threads fixture: no PMU here.
const ROLES: [&str; 4] = ["--stalls", "task-clock", "--cycles", "cpu-clock"];

struct Recordings {
    /// perf record of the threads fixture (cpu-clock, task-clock).
    perf: PathBuf,
    /// cpiflame record of the threads fixture (cpu-clock, task-clock).
    cpiflame: PathBuf,
    /// cpiflame record --off-cpu of the offcpu fixture.
    wall: PathBuf,
    /// perf record -e cpu-clock --switch-events -g of the offcpu fixture: switch records, no
    /// stack at a switch.
    perf_wall: PathBuf,
    /// cpiflame record -k mono of the jitdump fixture.
    jit: PathBuf,
    /// The synthetic top-down recording, its code named by a perf map.
    topdown: PathBuf,
}

fn recordings() -> Option<&'static Recordings> {
    static REC: OnceLock<Option<Recordings>> = OnceLock::new();
    REC.get_or_init(|| {
        if !perf_works() {
            cpiflame_testkit::unavailable(
                "sampling does not work here (`perf record -e cpu-clock` fails)",
            );
            return None;
        }
        let f = shared_fixtures().expect("fixtures build");
        let dir = support::run_scratch("viewers");
        let perf = dir.join("threads.perf.data");
        perf_record(
            &perf,
            "cpu-clock,task-clock",
            &["-m", "4096"],
            &[&f.threads],
        )
        .expect("perf record");
        let cpiflame_data = dir.join("threads.cpiflame.data");
        let mut args = vec!["record"];
        args.extend(ROLES);
        args.extend(["--call-graph", "dwarf,8192", "-m", "4096", "-o"]);
        args.extend([s(&cpiflame_data), "--", s(&f.threads)]);
        ok(&cpiflame(&args));
        let wall = dir.join("offcpu.data");
        ok(&cpiflame(&[
            "record",
            "--off-cpu",
            "-m",
            "8192",
            "--call-graph",
            "dwarf,2048",
            "-o",
            s(&wall),
            "--",
            s(&f.offcpu),
        ]));
        let perf_wall = dir.join("offcpu.perf.data");
        support::perf_record_with(
            &perf_wall,
            "cpu-clock",
            &["-q", "-g", "-N", "--switch-events"],
            &[&f.offcpu],
        )
        .expect("perf record --switch-events");
        // 3 phases of 200 ms; the dump goes beside the recording.
        let jit = dir.join("jit.data");
        ok(&cpiflame(&[
            "record",
            "-k",
            "mono",
            "-e",
            "cpu-clock",
            "-F",
            "1000",
            "-N",
            "-o",
            s(&jit),
            "--",
            s(&f.dir.join("jitdump")),
            "--dir",
            s(&dir),
            "--phase-ms",
            "200",
        ]));
        let topdown_dir = Box::leak(Box::new(Dir::new("viewers-topdown")));
        let topdown = crate::topdown::write_recording(topdown_dir);
        Some(Recordings {
            perf,
            cpiflame: cpiflame_data,
            wall,
            perf_wall,
            jit,
            topdown,
        })
    })
    .as_ref()
}

/// `convert DATA --to FORMAT -o OUT ARGS...`.
fn convert(data: &Path, to: &str, out: &Path, args: &[&str]) {
    let mut argv = vec!["convert", s(data), "--to", to, "-o", s(out)];
    argv.extend_from_slice(args);
    ok(&cpiflame(&argv));
}

/// `report --json` of `data` with `args`.
fn report(data: &Path, args: &[&str]) -> Value {
    let mut argv = vec!["report", "--json", "--limit", "100000", s(data)];
    argv.extend_from_slice(args);
    serde_json::from_str(&ok(&cpiflame(&argv))).unwrap()
}

/// Report's per-function totals by name: the width column's total, as `total_share` of the
/// cycles period, or `wall_ns`. A name that report lists more than once (a kernel
/// `futex_wait` and glibc's inlined one: report keeps kinds apart, the viewers only names)
/// is NaN: not compared.
fn report_totals(report: &Value) -> BTreeMap<String, f64> {
    let totals = &report["totals"];
    let wall = totals["wall_ns"].as_f64();
    let cycles = totals["cycles_period"].as_f64().unwrap();
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for f in report["frames"].as_array().unwrap() {
        if !is_function(f) {
            continue;
        }
        let v = match wall {
            Some(_) => f["wall_ns"].as_f64().unwrap(),
            None => f["total_share"].as_f64().unwrap() * cycles,
        };
        let name = f["name"].as_str().unwrap().to_string();
        match out.get_mut(&name) {
            Some(seen) => *seen = f64::NAN,
            None => {
                out.insert(name, v);
            }
        }
    }
    out
}

/// A row of report's that is a function, not a root frame (process, thread, cgroup).
fn is_function(frame: &Value) -> bool {
    ["user", "kernel", "inline", "jit"].contains(&frame["kind"].as_str().unwrap())
}

/// Whether `a` and `b` agree to `report`'s float precision.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

// ---------------------------------------------------------------- speedscope

/// Debian's python3 with python3-jsonschema (scripts/test.sh installs it).
fn validate(schema: &Path, file: &Path) -> Result<(), String> {
    let out = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             schema = json.load(open(sys.argv[1]))\n\
             jsonschema.Draft7Validator.check_schema(schema)\n\
             jsonschema.validate(json.load(open(sys.argv[2])), schema, cls=jsonschema.Draft7Validator)\n",
        ])
        .arg(schema)
        .arg(file)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The speedscope package's viewer folder, or None (said) when it is not installed.
fn speedscope_release() -> Option<PathBuf> {
    let release = tools().join("speedscope/package/dist/release");
    if !release.join("index.html").is_file() {
        cpiflame_testkit::unavailable(format!(
            "speedscope: {} missing (scripts/test.sh installs the npm package)",
            release.display()
        ));
        return None;
    }
    let jsonschema = Command::new("/usr/bin/python3")
        .args(["-c", "import jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !jsonschema {
        cpiflame_testkit::unavailable("python3-jsonschema (Debian) is not installed");
        return None;
    }
    Some(release)
}

/// Per function (symbol name), its total in every profile's sandwich view in the viewer,
/// summed over the width profiles and over the stall profiles.
type Shown = (BTreeMap<String, f64>, BTreeMap<String, f64>);

fn sandwich_totals(release: &Path, file: &Path, dir: &Dir, shot: &Path) -> Shown {
    let json = std::fs::read(file).unwrap();
    let n_profiles = serde_json::from_slice::<Value>(&json).unwrap()["profiles"]
        .as_array()
        .unwrap()
        .len();
    // What the package's command line does: a script that hands the file to the viewer,
    // named in the page's hash.
    let loader = dir.path("load.js");
    std::fs::write(
        &loader,
        format!(
            "speedscope.loadFileFromBase64({}, {})",
            serde_json::to_string(&file.file_name().unwrap().to_string_lossy()).unwrap(),
            serde_json::to_string(&base64(&json)).unwrap()
        ),
    )
    .unwrap();
    let mut browser = Browser::launch(dir, 1400, 6000);
    let url = format!(
        "file://{}#localProfilePath={}",
        release.join("index.html").display(),
        loader.display()
    );
    browser.open(&url, "document.body.innerText.includes('Sandwich')");
    // The profile shown is named in the title with its place, `(i/n)`; `p` and `n` step
    // through them (no wrapping): to the first, then each in turn.
    let place = format!(
        "(() => {{ const m = [...document.body.innerText.matchAll(/\\((\\d+)\\/{n_profiles}\\)/g)]; return m.length ? Number(m[m.length - 1][1]) : 0; }})()"
    );
    browser.wait_for("the profile to show", &format!("{place} > 0"));
    for _ in 0..n_profiles {
        press(&mut browser, "p");
    }
    browser.wait_for("the first profile", &format!("{place} == 1"));
    click_text(&mut browser, "Sandwich");
    let mut totals: Shown = Default::default();
    for profile in 1..=n_profiles {
        browser.wait_for("the profile to show", &format!("{place} == {profile}"));
        browser.wait_for(
            "the sandwich table's rows",
            &format!("{SANDWICH_ROWS}.length > 0"),
        );
        let rows = browser.eval(SANDWICH_ROWS);
        let rows = rows.as_array().expect("rows");
        assert!(!rows.is_empty(), "profile {profile}: empty sandwich view");
        let stalls = browser
            .eval("document.body.innerText.includes(': stall cycles (')")
            .as_bool()
            .unwrap();
        let sums = if stalls { &mut totals.1 } else { &mut totals.0 };
        for row in rows {
            let name = row[2].as_str().unwrap().to_string();
            let total = number(row[0].as_str().unwrap());
            *sums.entry(name).or_default() += total;
        }
        if profile == 1 {
            screenshot(&mut browser, shot);
        }
        press(&mut browser, "n");
    }
    totals
}

/// The sandwich table's rows: [symbol name, total] as shown.
const SANDWICH_ROWS: &str = r#"(() => {
  const rows = [];
  for (const tr of document.querySelectorAll('tr')) {
    const cells = [...tr.querySelectorAll('td')].map(td => td.innerText.trim());
    if (cells.length == 3 && cells[0].includes('%')) rows.push(cells);
  }
  return rows;
})()"#;

/// The number a sandwich cell shows first (`1,234,567 (12.3%)`).
fn number(cell: &str) -> f64 {
    let first = cell.split_whitespace().next().unwrap_or(cell);
    first
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

fn click_text(browser: &mut Browser, text: &str) {
    let at = browser.eval(&format!(
        r#"(() => {{
  const all = [...document.querySelectorAll('div, span, button')];
  const el = all.filter(e => e.innerText && e.innerText.trim().endsWith({text:?}) && e.children.length <= 1)
    .sort((a, b) => a.innerText.length - b.innerText.length)[0];
  const r = el.getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2];
}})()"#
    ));
    let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    browser.mouse("mousePressed", (x, y), 1, 0);
    browser.mouse("mouseReleased", (x, y), 0, 0);
}

/// A character typed (speedscope's shortcuts listen to keypress).
fn press(browser: &mut Browser, ch: &str) {
    for kind in ["keyDown", "keyUp"] {
        browser.call(
            "Input.dispatchKeyEvent",
            serde_json::json!({ "type": kind, "key": ch, "text": ch, "code": format!("Key{}", ch.to_uppercase()) }),
        );
    }
}

fn screenshot(browser: &mut Browser, path: &Path) {
    let shot = browser.call(
        "Page.captureScreenshot",
        serde_json::json!({ "format": "png", "clip": { "x": 0, "y": 0, "width": 1400, "height": 900, "scale": 1 } }),
    );
    let bytes = base64_decode(shot["data"].as_str().unwrap());
    std::fs::write(path, bytes).unwrap();
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            _ => 63,
        }
    };
    let mut out = Vec::new();
    for chunk in text.trim_end_matches('=').as_bytes().chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | value(c) << (18 - 6 * i));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// The per-function totals a speedscope file gives, computed from it (each sample counts a
/// frame once, however often it recurs), summed over the width profiles.
fn speedscope_totals(file: &Value) -> BTreeMap<String, f64> {
    let frames = file["shared"]["frames"].as_array().unwrap();
    let mut out = BTreeMap::new();
    for p in file["profiles"].as_array().unwrap() {
        if p["name"].as_str().unwrap().contains(": stall cycles (") {
            continue;
        }
        let weights = p["weights"].as_array().unwrap();
        for (stack, w) in p["samples"].as_array().unwrap().iter().zip(weights) {
            let mut seen: Vec<u64> = Vec::new();
            for f in stack.as_array().unwrap() {
                let f = f.as_u64().unwrap();
                if !seen.contains(&f) {
                    seen.push(f);
                    let name = frames[f as usize]["name"].as_str().unwrap().to_string();
                    *out.entry(name).or_default() += w.as_f64().unwrap();
                }
            }
        }
    }
    out
}

/// Every function's total agrees with report's.
fn assert_totals_match(what: &str, got: &BTreeMap<String, f64>, report: &BTreeMap<String, f64>) {
    let mut compared = 0;
    for (name, &v) in got {
        let r = report.get(name).copied().unwrap_or(0.0);
        if r.is_nan() {
            continue;
        }
        assert!(close(v, r), "{what}: {name}: {v} here, {r} in report");
        compared += 1;
    }
    // Every function report counts is there, and the time a wall-time graph has directly
    // under a thread (`[blocked]`, `[runnable]`, `[on-CPU, not sampled]`) too (report's
    // thread roots are not functions).
    for (name, &r) in report {
        assert!(
            r == 0.0 || got.contains_key(name),
            "{what}: {name} ({r} in report) missing"
        );
    }
    assert!(compared >= 3, "{what}: only {compared} functions");
}

fn speedscope_cases(r: &Recordings) -> Vec<(&'static str, PathBuf, Vec<&'static str>)> {
    vec![
        ("perf", r.perf.clone(), ROLES.to_vec()),
        ("cpiflame", r.cpiflame.clone(), ROLES.to_vec()),
        ("wall", r.wall.clone(), Vec::new()),
        ("perf-wall", r.perf_wall.clone(), Vec::new()),
        ("jit", r.jit.clone(), Vec::new()),
        ("topdown", r.topdown.clone(), Vec::new()),
    ]
}

#[test]
fn speedscope_files_validate_against_the_package_schema_and_match_report() {
    let Some(r) = recordings() else { return };
    let Some(release) = speedscope_release() else {
        return;
    };
    let dir = Dir::new("viewers-speedscope");
    for (name, data, args) in speedscope_cases(r) {
        let out = dir.path(&format!("{name}.speedscope.json"));
        convert(&data, "speedscope", &out, &args);
        validate(&release.join("file-format-schema.json"), &out)
            .unwrap_or_else(|e| panic!("{name}: schema: {e}"));
        let file: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let report = report_totals(&report(&data, &args));
        assert_totals_match(name, &speedscope_totals(&file), &report);
        // A stall profile beside each thread's where the recording has a stall event.
        let stall_profiles = file["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| {
                p["name"]
                    .as_str()
                    .unwrap()
                    .contains("stall cycles (task-clock)")
            })
            .count();
        assert_eq!(stall_profiles > 0, !args.is_empty(), "{name}");
        if name.ends_with("wall") {
            assert!(file["profiles"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["unit"] == "nanoseconds"));
        }
    }
}

#[test]
fn speedscope_s_own_viewer_shows_report_s_totals_in_its_sandwich_view() {
    let Some(r) = recordings() else { return };
    let Some(release) = speedscope_release() else {
        return;
    };
    let dir = Dir::new("viewers-speedscope-ui");
    let out = dir.path("threads.speedscope.json");
    convert(&r.perf, "speedscope", &out, &ROLES);
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("speedscope-sandwich.png");
    let (widths, stalls) = sandwich_totals(&release, &out, &dir, &shot);
    let report = report_json(&r.perf);
    // The viewer shows each number whole: exact for these integer weights.
    assert_totals_match("sandwich, cpu-clock", &widths, &report_totals(&report));
    // The stall profiles: report gives a function's stall cycles as the stall share of its
    // cycles (none for a function without cycles samples).
    let stall_report = report_stall_totals(&report);
    let mut compared = 0;
    for (name, &v) in &stalls {
        if let Some(&expected) = stall_report.get(name).filter(|e| !e.is_nan()) {
            assert!(
                close(v, expected),
                "{name}: sandwich {v}, report {expected}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 5, "{stalls:?}");
    assert!(shot.is_file());
}

fn report_json(data: &Path) -> Value {
    report(data, &ROLES)
}

/// Report's stall cycles per function: `stall_share` of its cycles.
fn report_stall_totals(report: &Value) -> BTreeMap<String, f64> {
    let cycles = report["totals"]["cycles_period"].as_f64().unwrap();
    let mut out = BTreeMap::new();
    for f in report["frames"].as_array().unwrap() {
        if !is_function(f) {
            continue;
        }
        let total = f["total_share"].as_f64().unwrap() * cycles;
        // No share: a function without cycles, whose stall cycles report does not give.
        let Some(share) = f["stall_share"].as_f64() else {
            continue;
        };
        let name = f["name"].as_str().unwrap().to_string();
        match out.get_mut(&name) {
            Some(seen) => *seen = f64::NAN,
            None => {
                out.insert(name, total * share);
            }
        }
    }
    out
}

// ---------------------------------------------------------------- Firefox Profiler

/// `convert --to firefox` of `data`, read back (a `.gz` name is gzip-compressed).
fn firefox(data: &Path, out: &Path, args: &[&str]) -> Value {
    convert(data, "firefox", out, args);
    let bytes = if out.extension().is_some_and(|e| e == "gz") {
        let unzipped = Command::new("gzip")
            .arg("-dc")
            .arg(out)
            .output()
            .expect("gzip runs");
        assert!(unzipped.status.success(), "{}: not gzip", out.display());
        unzipped.stdout
    } else {
        std::fs::read(out).unwrap()
    };
    serde_json::from_slice(&bytes).unwrap()
}

/// A thread's samples: (time in ms, stack index, weight, threadCPUDelta).
fn samples(thread: &Value) -> Vec<(f64, Option<usize>, f64)> {
    let s = &thread["samples"];
    let n = s["length"].as_u64().unwrap() as usize;
    let times: Vec<f64> = match s.get("time") {
        Some(t) => t
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect(),
        None => s["timeDeltas"]
            .as_array()
            .unwrap()
            .iter()
            .scan(0.0, |t, d| {
                *t += d.as_f64().unwrap();
                Some(*t)
            })
            .collect(),
    };
    let weights: Vec<f64> = match s.get("weight").filter(|w| !w.is_null()) {
        Some(w) => w
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect(),
        None => vec![1.0; n],
    };
    let stacks = s["stack"].as_array().unwrap();
    assert_eq!((times.len(), weights.len(), stacks.len()), (n, n, n));
    (0..n)
        .map(|i| (times[i], stacks[i].as_u64().map(|v| v as usize), weights[i]))
        .collect()
}

/// A stack's frames, leaf first.
fn frames_of(thread: &Value, stack: Option<usize>) -> Vec<usize> {
    let prefix = thread["stackTable"]["prefix"].as_array().unwrap();
    let frame = thread["stackTable"]["frame"].as_array().unwrap();
    let mut out = Vec::new();
    let mut at = stack;
    while let Some(s) = at {
        out.push(frame[s].as_u64().unwrap() as usize);
        at = prefix[s].as_u64().map(|p| p as usize);
    }
    out
}

/// A frame's function name and, for code in a library other than the kernel, the
/// library's name and the address.
fn frame_info(profile: &Value, thread: &Value, frame: usize) -> (String, Option<(String, i64)>) {
    let func = thread["frameTable"]["func"][frame].as_u64().unwrap() as usize;
    let name = thread["funcTable"]["name"][func].as_u64().unwrap() as usize;
    let name = thread["stringArray"][name].as_str().unwrap().to_string();
    let resource = thread["funcTable"]["resource"][func].as_i64().unwrap();
    let lib = usize::try_from(resource)
        .ok()
        .and_then(|r| thread["resourceTable"]["lib"][r].as_u64())
        .map(|l| {
            profile["libs"][l as usize]["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|l| l != "[kernel.kallsyms]");
    let address = thread["frameTable"]["address"][frame].as_i64().unwrap();
    (name, lib.map(|l| (l, address)))
}

/// The format's invariants: every table's columns as long as its `length`, every index
/// in range, stacks' prefixes before them.
fn check_invariants(what: &str, p: &Value) {
    let n_libs = p["libs"].as_array().unwrap().len();
    let n_categories = p["meta"]["categories"].as_array().unwrap().len();
    for t in p["threads"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let strings = t["stringArray"].as_array().unwrap().len();
        let len = |table: &str| t[table]["length"].as_u64().unwrap() as usize;
        for table in [
            "samples",
            "stackTable",
            "frameTable",
            "funcTable",
            "resourceTable",
            "nativeSymbols",
            "markers",
        ] {
            let n = len(table);
            for (key, column) in t[table].as_object().unwrap() {
                if let Some(a) = column.as_array() {
                    if key != "weightType" {
                        assert_eq!(a.len(), n, "{what}: {name}: {table}.{key}");
                    }
                }
            }
        }
        let in_range = |v: &Value, n: usize, nullable: bool, at: &str| match v.as_i64() {
            Some(-1) | None => assert!(nullable, "{what}: {name}: {at} is null"),
            Some(i) => assert!((i as usize) < n, "{what}: {name}: {at} = {i} of {n}"),
        };
        let col = |table: &str, key: &str| {
            t[table][key]
                .as_array()
                .unwrap_or_else(|| panic!("{what}: {name}: no column {table}.{key}"))
                .clone()
        };
        for v in col("samples", "stack") {
            in_range(&v, len("stackTable"), true, "samples.stack");
        }
        for (i, v) in col("stackTable", "prefix").iter().enumerate() {
            in_range(v, i, true, "stackTable.prefix");
        }
        for v in col("stackTable", "frame") {
            in_range(&v, len("frameTable"), false, "stackTable.frame");
        }
        // Newer versions of the format leave a stack's category to its frame's.
        let stack_categories = t["stackTable"]["category"].as_array().cloned();
        for v in stack_categories
            .iter()
            .flatten()
            .chain(&col("frameTable", "category"))
        {
            in_range(v, n_categories, false, "category");
        }
        for v in col("frameTable", "func") {
            in_range(&v, len("funcTable"), false, "frameTable.func");
        }
        for v in col("frameTable", "nativeSymbol") {
            in_range(&v, len("nativeSymbols"), true, "frameTable.nativeSymbol");
        }
        for v in col("funcTable", "name")
            .iter()
            .chain(&col("resourceTable", "name"))
        {
            in_range(v, strings, false, "a name");
        }
        for v in col("funcTable", "fileName")
            .iter()
            .chain(&col("markers", "name"))
        {
            in_range(v, strings, true, "a string");
        }
        for v in col("funcTable", "resource") {
            in_range(&v, len("resourceTable"), true, "funcTable.resource");
        }
        for v in col("resourceTable", "lib") {
            in_range(&v, n_libs, true, "resourceTable.lib");
        }
        let times: Vec<f64> = samples(t).iter().map(|s| s.0).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{what}: {name}: samples out of order"
        );
    }
}

/// Per-function totals of the call tree computed from the file (a sample adds its weight
/// once to every function on its stack), all threads.
fn call_tree_totals(p: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for t in p["threads"].as_array().unwrap() {
        for (_, stack, weight) in samples(t) {
            let mut names: Vec<String> = frames_of(t, stack)
                .into_iter()
                .map(|f| frame_info(p, t, f).0)
                .collect();
            names.sort();
            names.dedup();
            for name in names {
                *out.entry(name).or_default() += weight;
            }
        }
    }
    out
}

fn samply() -> Option<PathBuf> {
    let samply = tools().join("samply/bin/samply");
    if !samply.is_file() {
        cpiflame_testkit::unavailable(format!(
            "samply: {} missing (scripts/test.sh installs it with cargo install)",
            samply.display()
        ));
        return None;
    }
    Some(samply)
}

#[test]
fn firefox_profiles_keep_the_format_s_invariants_and_report_s_totals() {
    let Some(r) = recordings() else { return };
    let dir = Dir::new("viewers-firefox");
    for (name, data, args) in speedscope_cases(r) {
        let p = firefox(&data, &dir.path(&format!("{name}.json.gz")), &args);
        check_invariants(name, &p);
        let report = report(&data, &args);
        assert_totals_match(name, &call_tree_totals(&p), &report_totals(&report));
        let categories: Vec<&str> = p["meta"]["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        // The counters: every cycles sample's period, at its time.
        let cycles: f64 = p["counters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["name"] == "cycles")
            .flat_map(|c| c["samples"]["count"].as_array().unwrap().clone())
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert_eq!(
            cycles,
            report["totals"]["cycles_period"].as_f64().unwrap(),
            "{name}: the cycles counter"
        );
        if !args.is_empty() {
            // Stalled (blue) and Running (red); the share of samples marked stalled follows
            // the stacks' stall shares: here nearly all (task-clock counts what cpu-clock
            // does).
            assert!(categories.contains(&"Stalled") && categories.contains(&"Running"));
            let color = |n: &str| {
                p["meta"]["categories"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["name"] == n)
                    .unwrap()["color"]
                    .clone()
            };
            assert_eq!(
                (color("Stalled"), color("Running")),
                ("blue".into(), "red".into())
            );
            let stalled = categories.iter().position(|&c| c == "Stalled").unwrap() as u64;
            let (mut marked, mut all) = (0usize, 0usize);
            for t in p["threads"].as_array().unwrap() {
                for (_, stack, _) in samples(t) {
                    let Some(stack) = stack else { continue };
                    all += 1;
                    let frame = &t["stackTable"]["frame"][stack];
                    let category = &t["frameTable"]["category"][frame.as_u64().unwrap() as usize];
                    marked += usize::from(*category == stalled);
                }
            }
            // Per stack the marked share is the stack's stall share (the unit test
            // `stalled_samples_follow_each_stacks_stall_share`); over the recording it falls
            // short of report's by what the two clocks, sampled apart, leave uneven: a stack
            // (one per address here) seen by cpu-clock only counts no stall, one seen more by
            // task-clock counts at most all (2.2% short seen under load).
            let share = report["totals"]["stall_share"].as_f64().unwrap();
            let seen = marked as f64 / all as f64;
            assert!(
                seen <= share + 0.02 && seen >= share - 0.06,
                "{name}: {seen} stalled, report {share}"
            );
            assert!(p["counters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "stall cycles"));
        }
        if name.ends_with("wall") {
            // Off-CPU time: samples without CPU time, and markers of the waits.
            assert!(categories.contains(&"Blocked") && categories.contains(&"Runnable"));
            let markers: usize = p["threads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    let names = t["markers"]["name"].as_array().unwrap();
                    names
                        .iter()
                        .filter(|n| {
                            let s = n.as_u64().unwrap() as usize;
                            t["stringArray"][s] == "Blocked"
                        })
                        .count()
                })
                .sum();
            assert!(markers > 10, "{markers} Blocked markers");
        }
    }
}

#[test]
fn firefox_profiles_have_samply_s_threads_sample_times_and_stacks() {
    let Some(r) = recordings() else { return };
    let Some(samply) = samply() else { return };
    let dir = Dir::new("viewers-samply");
    let ours = firefox(&r.perf, &dir.path("ours.json"), &ROLES);
    let theirs_path = dir.path("samply.json");
    let out = Command::new(&samply)
        .args(["import", "--save-only", "--no-open", "-o"])
        .arg(&theirs_path)
        .arg(&r.perf)
        .output()
        .expect("samply runs");
    assert!(
        out.status.success(),
        "samply import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Value = serde_json::from_slice(&std::fs::read(&theirs_path).unwrap()).unwrap();
    check_invariants("samply's", &theirs);
    check_invariants("ours", &ours);
    // The libraries sampled in, with the same ids.
    let libs = |p: &Value| -> BTreeMap<String, (Value, Value)> {
        p["libs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["path"].as_str().unwrap().to_string(),
                    (l["breakpadId"].clone(), l["codeId"].clone()),
                )
            })
            .collect()
    };
    let (our_libs, their_libs) = (libs(&ours), libs(&theirs));
    assert!(!our_libs.is_empty());
    for (path, ids) in &our_libs {
        assert_eq!(their_libs.get(path), Some(ids), "{path}");
    }
    // Threads by tid: names, sample counts, times (from the first sample of the recording)
    // and user stacks by library and address.
    let by_tid = |p: &Value| -> BTreeMap<String, Value> {
        p["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["samples"]["length"].as_u64().unwrap() > 0)
            // samply names a process's main thread `PID.N` (its Nth process of that pid).
            .map(|t| {
                let tid = t["tid"]
                    .as_str()
                    .map_or_else(|| t["tid"].to_string(), str::to_string);
                (tid.split('.').next().unwrap_or(&tid).to_string(), t.clone())
            })
            .collect()
    };
    let (our_threads, their_threads) = (by_tid(&ours), by_tid(&theirs));
    assert_eq!(
        our_threads.keys().collect::<Vec<_>>(),
        their_threads.keys().collect::<Vec<_>>()
    );
    let first = |threads: &BTreeMap<String, Value>| {
        threads
            .values()
            .map(|t| samples(t)[0].0)
            .fold(f64::INFINITY, f64::min)
    };
    let (our_zero, their_zero) = (first(&our_threads), first(&their_threads));
    let (mut same_stacks, mut all) = (0usize, 0usize);
    for (tid, ours_t) in &our_threads {
        let theirs_t = &their_threads[tid];
        assert_eq!(ours_t["name"], theirs_t["name"], "tid {tid}");
        let (a, b) = (samples(ours_t), samples(theirs_t));
        assert_eq!(a.len(), b.len(), "tid {tid}: sample counts");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                ((x.0 - our_zero) - (y.0 - their_zero)).abs() < 0.001,
                "tid {tid}: a sample at {} here, {} in samply's",
                x.0 - our_zero,
                y.0 - their_zero
            );
            let user = |p: &Value, t: &Value, s: Option<usize>| -> Vec<(String, i64)> {
                frames_of(t, s)
                    .into_iter()
                    .filter_map(|f| frame_info(p, t, f).1)
                    .collect()
            };
            let (ua, ub) = (user(&ours, ours_t, x.1), user(&theirs, theirs_t, y.1));
            all += 1;
            same_stacks += usize::from(ua == ub);
            // The sampled instruction: the same wherever both have a user leaf.
            if let (Some(la), Some(lb)) = (ua.first(), ub.first()) {
                assert_eq!(la, lb, "tid {tid}: leaf");
            }
        }
    }
    // Unwinding may end a few stacks differently (two unwinders of DWARF stack copies).
    assert!(
        same_stacks * 100 >= all * 95,
        "{same_stacks} of {all} user stacks the same"
    );
}

#[test]
fn firefox_marks_time_ranges_and_refuses_folded_text_in_one_line() {
    let Some(r) = recordings() else { return };
    let dir = Dir::new("viewers-firefox-bad");
    let mut args = ROLES.to_vec();
    args.extend(["--time", "10%-60%"]);
    let p = firefox(&r.perf, &dir.path("cut.json"), &args);
    let ranges = p["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["markers"]["name"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| t["stringArray"][n.as_u64().unwrap() as usize] == "--time range")
        })
        .count();
    assert_eq!(ranges, p["threads"].as_array().unwrap().len());
    // Folded text has no times: one line saying so, exit 2; speedscope takes it.
    let folded = dir.path("in.folded");
    std::fs::write(
        &folded,
        ok(&cpiflame(&["fold", "--event", "cpu-clock", s(&r.perf)])),
    )
    .unwrap();
    let out = cpiflame(&[
        "convert",
        s(&folded),
        "--to",
        "firefox",
        "-o",
        s(&dir.path("f.json")),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("in.folded") && err.contains("no time per sample"),
        "{err}"
    );
    let ss = dir.path("f.speedscope.json");
    convert(&folded, "speedscope", &ss, &[]);
    let file: Value = serde_json::from_slice(&std::fs::read(&ss).unwrap()).unwrap();
    let total: f64 = speedscope_totals(&file).get("main").copied().unwrap_or(0.0);
    assert!(total > 0.0);
    // An unknown format names the flag.
    let out = cpiflame(&["convert", s(&r.perf), "--to", "chrome"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        (out.status.code(), err.lines().count()),
        (Some(2), 1),
        "{err}"
    );
    assert!(
        err.contains("'chrome'") && err.contains("--to") && err.contains("firefox, speedscope"),
        "{err}"
    );
}

// ---------------------------------------------------------------- wall time per thread

/// Each thread's (on-CPU, runnable, blocked) nanoseconds by tid, and the part of each drawn
/// directly under the thread (`ROOT;[blocked]`, ...), as `fold --tid` gives them.
fn fold_thread_totals(data: &Path) -> (BTreeMap<String, [u64; 3]>, [u64; 3]) {
    let (mut threads, mut under_root) = (BTreeMap::new(), [0u64; 3]);
    for (column, event) in [wall::ON_CPU, wall::RUNNABLE, wall::BLOCKED]
        .into_iter()
        .enumerate()
    {
        let text = ok(&cpiflame(&["fold", "--tid", "--event", event, s(data)]));
        for line in text.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            // The root is `comm-PID/TID`.
            let root = stack.split(';').next().unwrap();
            let tid = root.rsplit_once('/').unwrap().1.to_string();
            threads.entry(tid).or_insert([0; 3])[column] += n;
            let under = stack.split_once(';').map(|(_, rest)| rest);
            if under
                .is_some_and(|f| ["[on-CPU, not sampled]", "[runnable]", "[blocked]"].contains(&f))
            {
                under_root[column] += n;
            }
        }
    }
    (threads, under_root)
}

/// A thread label's tid: `comm (pid/tid)` or `comm (tid)`.
fn label_tid(label: &str) -> String {
    let inside = &label[label.rfind('(').unwrap() + 1..label.rfind(')').unwrap()];
    inside.rsplit('/').next().unwrap().to_string()
}

/// Off-CPU time whose switch-out has no stack (`[blocked]`, `[runnable]` under the thread in
/// the graph) and on-CPU time of a thread without an on-CPU sample (`[on-CPU, not sampled]`)
/// are exported as the graph shows them: each thread's total in speedscope and in the
/// Firefox Profiler is its wall time in `fold --tid`, to the nanosecond; in the Firefox
/// Profiler the stretches are samples in their categories, and each thread's Blocked and
/// Runnable markers cover its off-CPU time.
///
/// The same of each recording's `perf script` text (its intervals placed in time as the
/// perf.data walk places them): the text's threads get the file's wall time, to the
/// nanosecond.
#[test]
fn wall_time_exports_give_every_thread_its_wall_time_as_fold_does() {
    let Some(r) = recordings() else { return };
    let dir = Dir::new("viewers-wall-threads");
    let wall_text = perf_script_text(&r.wall, &dir.path("wall.txt"));
    let perf_wall_text = perf_script_text(&r.perf_wall, &dir.path("perf-wall.txt"));
    for (data, text) in [(&r.wall, &wall_text), (&r.perf_wall, &perf_wall_text)] {
        assert_eq!(
            fold_thread_totals(text).0,
            fold_thread_totals(data).0,
            "{}: the text's threads, then the file's",
            text.display()
        );
    }
    for (name, data) in [
        ("wall", &r.wall),
        ("perf-wall", &r.perf_wall),
        ("wall-text", &wall_text),
        ("perf-wall-text", &perf_wall_text),
    ] {
        let (threads, under_root) = fold_thread_totals(data);
        let expected: BTreeMap<String, u64> = threads
            .iter()
            .map(|(tid, t)| (tid.clone(), t.iter().sum()))
            .filter(|&(_, total)| total > 0)
            .collect();
        assert!(expected.len() >= 7, "{name}: {expected:?}");
        if name.starts_with("perf-wall") {
            // No stack at any switch: all off-CPU time is under the threads.
            let off: u64 = threads.values().map(|t| t[1] + t[2]).sum();
            assert_eq!(under_root[1] + under_root[2], off, "{name}");
            assert!(off > 1_000_000_000, "{name}: {off} ns off the CPU");
        }

        let out = dir.path(&format!("{name}.speedscope.json"));
        convert(data, "speedscope", &out, &[]);
        let file: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let mut shown: BTreeMap<String, u64> = BTreeMap::new();
        for p in file["profiles"].as_array().unwrap() {
            let label = p["name"].as_str().unwrap().rsplit_once(": ").unwrap().0;
            let total: u64 = p["weights"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .sum();
            *shown.entry(label_tid(label)).or_default() += total;
            assert_eq!(p["endValue"].as_u64(), Some(total), "{name}");
        }
        assert_eq!(shown, expected, "{name}: speedscope's threads");

        let p = firefox(data, &dir.path(&format!("{name}.json")), &[]);
        check_invariants(name, &p);
        let categories: Vec<&str> = p["meta"]["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let (mut shown, mut placed) = (BTreeMap::new(), [0u64; 3]);
        for t in p["threads"].as_array().unwrap() {
            let tid = t["tid"]
                .as_str()
                .map_or_else(|| t["tid"].to_string(), str::to_string);
            let mut total = 0u64;
            for (_, stack, weight) in samples(t) {
                total += weight as u64;
                let frames = frames_of(t, stack);
                let [frame] = frames[..] else { continue };
                let (function, _) = frame_info(&p, t, frame);
                let category = t["frameTable"]["category"][frame].as_u64().unwrap() as usize;
                let (i, want) = match function.as_str() {
                    "[on-CPU, not sampled]" => (0, "On CPU"),
                    "[runnable]" => (1, "Runnable"),
                    "[blocked]" => (2, "Blocked"),
                    _ => continue,
                };
                assert_eq!(categories[category], want, "{name}: {function}");
                placed[i] += weight as u64;
            }
            if total > 0 {
                shown.insert(tid.clone(), total);
            }
            // The markers: each thread's off-CPU time, in milliseconds.
            let marked: f64 = (0..t["markers"]["length"].as_u64().unwrap() as usize)
                .filter(|&m| {
                    let n = t["markers"]["name"][m].as_u64().unwrap() as usize;
                    ["Blocked", "Runnable"].contains(&t["stringArray"][n].as_str().unwrap())
                })
                .map(|m| {
                    t["markers"]["endTime"][m].as_f64().unwrap()
                        - t["markers"]["startTime"][m].as_f64().unwrap()
                })
                .sum();
            let off = threads.get(&tid).map_or(0, |t| t[1] + t[2]) as f64 / 1e6;
            assert!(
                (marked - off).abs() < 1e-3,
                "{name}: tid {tid}: {marked} ms marked, {off} ms off the CPU"
            );
        }
        assert_eq!(shown, expected, "{name}: the Firefox Profiler's threads");
        assert_eq!(
            placed, under_root,
            "{name}: the stretches under the threads"
        );
    }
}

// ---------------------------------------------------------------- JIT

/// A JIT recording (cpiflame's of the jitdump fixture, its code named by its own dump):
/// the JIT functions are there by name in both exports, each with report's total, and the
/// dump's source file is kept.
#[test]
fn jit_functions_are_named_in_both_exports_with_report_s_totals() {
    let Some(r) = recordings() else { return };
    let dir = Dir::new("viewers-jit");
    let report = report(&r.jit, &[]);
    let cycles = report["totals"]["cycles_period"].as_f64().unwrap();
    let jit: BTreeMap<String, f64> = report["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "jit")
        .map(|f| {
            let name = f["name"].as_str().unwrap().to_string();
            (name, f["total_share"].as_f64().unwrap() * cycles)
        })
        .collect();
    assert_eq!(
        jit.keys().map(String::as_str).collect::<Vec<_>>(),
        ["jit_middle", "jit_outer", "jit_reuse"]
    );

    let out = dir.path("jit.speedscope.json");
    convert(&r.jit, "speedscope", &out, &[]);
    let file: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let ss = speedscope_totals(&file);
    let p = firefox(&r.jit, &dir.path("jit.json"), &[]);
    let ff = call_tree_totals(&p);
    for (function, &total) in &jit {
        assert!(total > 0.0, "{function}");
        for (viewer, totals) in [("speedscope", &ss), ("firefox", &ff)] {
            let got = totals.get(function).copied().unwrap_or(0.0);
            assert!(
                close(got, total),
                "{viewer}: {function}: {got} here, {total} in report"
            );
        }
    }
    // jit_outer's source file, from the dump's DEBUG_INFO.
    let frame = file["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "jit_outer")
        .unwrap();
    assert_eq!(frame["file"], "jitted.js");
    let t = &p["threads"][0];
    let names = t["funcTable"]["name"].as_array().unwrap();
    let func = names
        .iter()
        .position(|n| t["stringArray"][n.as_u64().unwrap() as usize] == "jit_outer")
        .unwrap();
    let file_name = t["funcTable"]["fileName"][func].as_u64().unwrap() as usize;
    assert_eq!(t["stringArray"][file_name], "jitted.js");
}

/// `perf script --show-switch-events --show-task-events --ns` of `data`, written to `text`.
fn perf_script_text(data: &Path, text: &Path) -> PathBuf {
    let out = std::process::Command::new("perf")
        .args([
            "script",
            "--show-switch-events",
            "--show-task-events",
            "--ns",
            "-i",
        ])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(text, &out.stdout).unwrap();
    text.to_path_buf()
}

/// `convert --to pprof` of the wall-time recordings (sharing this module's recordings): each
/// thread's on-CPU, runnable and blocked nanoseconds in the profile equal `fold --tid`'s, the
/// time without a switch-out stack (all of it in perf's `--switch-events` file) included as
/// the graph's `[runnable]`/`[blocked]` frames.
#[test]
fn pprof_of_a_wall_time_recording_keeps_every_threads_wall_time() {
    let Some(r) = recordings() else { return };
    let dir = Dir::new("viewers-pprof-wall");
    for data in [&r.wall, &r.perf_wall] {
        let out = dir.path("wall.pb.gz");
        ok(&cpiflame(&[
            "convert",
            s(data),
            "--to",
            "pprof",
            "-o",
            s(&out),
        ]));
        let profile = cpiflame_pprof::decode(&std::fs::read(&out).unwrap()).unwrap();
        let text = |i: i64| profile.string_table[i as usize].as_str();
        let column = |name: &str| {
            profile
                .sample_type
                .iter()
                .position(|t| text(t.r#type) == name)
                .unwrap_or_else(|| panic!("no sample type {name}"))
        };
        let columns = [
            column(cpiflame_profile::wall::ON_CPU),
            column(cpiflame_profile::wall::RUNNABLE),
            column(cpiflame_profile::wall::BLOCKED),
        ];
        let mut per_tid: std::collections::HashMap<u32, [f64; 3]> = Default::default();
        for sample in &profile.sample {
            let tid = sample
                .label
                .iter()
                .find(|l| text(l.key) == "tid")
                .map(|l| l.num)
                .unwrap();
            let Ok(tid) = u32::try_from(tid) else {
                continue;
            };
            let sums = per_tid.entry(tid).or_default();
            for (sum, &c) in sums.iter_mut().zip(&columns) {
                *sum += sample.value[c] as f64;
            }
        }
        let fold = crate::wall_truth::fold_split_by_tid(data);
        assert!(!fold.is_empty());
        for (tid, split) in &fold {
            let got = per_tid.get(tid).copied().unwrap_or_default();
            assert_eq!(
                got,
                [split.on_cpu, split.runnable, split.blocked],
                "{}: tid {tid}",
                data.display()
            );
        }
    }
}
