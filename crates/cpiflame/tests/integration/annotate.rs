//! `cpiflame annotate` against `perf annotate --stdio` and `addr2line -i` (binutils) on real
//! recordings of the hotloop fixture (`fixtures/workloads/hotloop.c`: one hot loop with
//! `mix` inlined into it), with and without DWARF call graphs, fixed and frequency-mode
//! periods: the same instructions with the same percentages (perf prints two decimals), the
//! same sample count, and each instruction's source line and inline chain as addr2line gives
//! them; source files found under `--source-dir`, not under a wrong `--prefix`; pipe mode and
//! standard input as the plain file. Stall share and CPI need a PMU: they are checked on
//! synthetic recordings in `crates/annotate`'s unit tests.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{cpiflame, ok, perf_record, perf_record_with, perf_works, s, shared_fixtures, Dir};

/// perf annotate's per-instruction percentages by address, and its sample count.
fn perf_annotate(data: &Path, symbol: &str) -> (BTreeMap<u64, f64>, u64) {
    let out = Command::new("perf")
        .args(["annotate", "--stdio", "-i"])
        .arg(data)
        .arg(symbol)
        .output()
        .expect("perf runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "perf annotate failed: {text}");
    let samples = text
        .split_once(" samples, ")
        .and_then(|(head, _)| head.rsplit('(').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sample count in perf annotate's header: {text}"));
    let mut percent = BTreeMap::new();
    for line in text.lines() {
        // `   28.19 :   11c7:   xor    %rcx,%rax`
        let Some((value, rest)) = line.split_once(" : ") else {
            continue;
        };
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        let Some((address, _)) = rest.trim_start().split_once(':') else {
            continue;
        };
        let address = u64::from_str_radix(address, 16).expect("hex address");
        percent.insert(address, value);
    }
    (percent, samples)
}

/// `addr2line -a -i`: per address, its frames' `file:line`, innermost first.
fn addr2line(binary: &Path, addresses: &[u64]) -> BTreeMap<u64, Vec<String>> {
    let out = Command::new("addr2line")
        .arg("-a")
        .arg("-i")
        .arg("-e")
        .arg(binary)
        .args(addresses.iter().map(|a| format!("{a:#x}")))
        .output()
        .expect("addr2line runs");
    assert!(out.status.success());
    let mut lines: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(hex) = line.strip_prefix("0x") {
            current = Some(u64::from_str_radix(hex, 16).unwrap());
            continue;
        }
        // `hotloop.c:14 (discriminator 1)`: the discriminator is not a line.
        let line = line.split(" (").next().unwrap_or(line).to_string();
        lines.entry(current.unwrap()).or_default().push(line);
    }
    lines
}

fn binutils_available() -> bool {
    let ok = Command::new("addr2line")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        cpiflame_testkit::unavailable("addr2line (binutils) is not installed");
    }
    ok
}

/// How the fixture is recorded.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `--call-graph dwarf -c 100000`.
    Dwarf,
    /// No call graph, `-c 100000`.
    Flat,
    /// No call graph, `-F 4000`: every sample has its own period (shares are of periods,
    /// perf annotate's `local period`).
    Frequency,
}

/// Records the hotloop fixture as `mode` says and checks `cpiflame annotate` against perf
/// annotate and addr2line.
fn check_against_perf(mode: Mode) {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    if !binutils_available() {
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let binary = f.dir.join("hotloop");
    let dir = Dir::new("annotate");
    let data = dir.path("hotloop.data");
    let flat = |rate: &str, value: &str| {
        perf_record_with(&data, "cpu-clock", &["-q", "-N", rate, value], &[&binary])
    };
    let recorded = match mode {
        Mode::Dwarf => perf_record(&data, "cpu-clock", &["-c", "100000"], &[&binary]),
        Mode::Flat => flat("-c", "100000"),
        Mode::Frequency => flat("-F", "4000"),
    };
    recorded.expect("perf record");

    let (perf, perf_samples) = perf_annotate(&data, "hot_loop");
    let json: Value = serde_json::from_str(&ok(&cpiflame(&[
        "annotate",
        s(&data),
        "hot_loop",
        "--json",
    ])))
    .expect("JSON");
    let function = &json[0];
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(function["function"], "hot_loop");
    assert_eq!(function["module"], "hotloop");
    assert_eq!(function["samples"].as_u64(), Some(perf_samples));
    let ours: BTreeMap<u64, f64> = function["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let address = u64::from_str_radix(i["address"].as_str().unwrap(), 16).unwrap();
            // JSON shares are fractions; perf prints percentages.
            (address, 100.0 * i["share"].as_f64().unwrap())
        })
        .collect();
    // The same instructions, each within perf's rounding to two decimals.
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        perf.keys().collect::<Vec<_>>(),
        "instructions differ from perf annotate's"
    );
    for (address, share) in &ours {
        let theirs = perf[address];
        assert!(
            (share - theirs).abs() <= 0.005 + 1e-9,
            "{address:x}: cpiflame {share:.4}%, perf annotate {theirs:.2}%"
        );
    }

    // Each instruction's line is addr2line's innermost one.
    let addresses: Vec<u64> = ours.keys().copied().collect();
    let truth = addr2line(&binary, &addresses);
    let mut inlined_lines = Vec::new();
    for i in function["instructions"].as_array().unwrap() {
        let address = u64::from_str_radix(i["address"].as_str().unwrap(), 16).unwrap();
        let frames = &truth[&address];
        let ours = format!(
            "{}:{}",
            i["file"].as_str().unwrap_or("??"),
            i["line"].as_u64().unwrap_or(0)
        );
        assert_eq!(ours, frames[0], "{address:x}: addr2line -i says {frames:?}");
        if frames.len() > 1 {
            inlined_lines.push(frames[0].clone());
        }
    }
    // mix is inlined into the loop: its lines carry the inline chain in the text output.
    assert!(!inlined_lines.is_empty(), "addr2line shows no inlined code");
    let text = ok(&cpiflame(&["annotate", s(&data), "hot_loop"]));
    for line in &inlined_lines {
        let row = text
            .lines()
            .find(|l| l.contains(&format!("  {line}")))
            .unwrap_or_else(|| panic!("no source row for {line}:\n{text}"));
        assert!(row.contains("(inlined: mix)"), "{row}");
    }
    // cpu-clock has no precise_ip: the skid note.
    assert!(text.contains("is not precise (precise_ip 0)"), "{text}");
    // The source text is read from the file DWARF names.
    assert!(text.contains("x ^= x >> 7;"), "{text}");
    if mode != Mode::Dwarf {
        return;
    }
    // Found under --source-dir by its file name once every directory is stripped; not found
    // under a --prefix that does not exist.
    let workloads = support::repo_root().join("fixtures/workloads");
    let source_of = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["annotate", s(&data), "hot_loop", "--json"];
        all.extend(args);
        let json: Value = serde_json::from_str(&ok(&cpiflame(&all))).expect("JSON");
        json[0]["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["source"].clone())
            .collect()
    };
    let found = source_of(&["--prefix-strip", "99", "--source-dir", s(&workloads)]);
    assert!(found.iter().any(|v| v == "\tx ^= x >> 7;"), "{found:?}");
    let missing = source_of(&["--prefix", "/nonexistent-cpiflame-prefix"]);
    assert!(missing.iter().all(Value::is_null), "{missing:?}");
}

#[test]
fn percentages_and_lines_match_perf_annotate_and_addr2line_with_dwarf_call_graphs() {
    check_against_perf(Mode::Dwarf);
}

#[test]
fn percentages_and_lines_match_perf_annotate_and_addr2line_without_call_graphs() {
    check_against_perf(Mode::Flat);
}

#[test]
fn percentages_match_perf_annotate_with_periods_of_their_own() {
    check_against_perf(Mode::Frequency);
}

/// Without SYMBOL: the top function by self weight is first, `--limit` bounds them.
#[test]
fn top_functions_without_a_symbol() {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("annotate-top");
    let data = dir.path("hotloop.data");
    perf_record(
        &data,
        "cpu-clock",
        &["-c", "100000"],
        &[&f.dir.join("hotloop")],
    )
    .expect("perf record");
    let json: Value = serde_json::from_str(&ok(&cpiflame(&[
        "annotate",
        s(&data),
        "--json",
        "--limit",
        "1",
    ])))
    .expect("JSON");
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json[0]["function"], "hot_loop");
}

/// Text input has no addresses: one line naming the file, exit 2.
#[test]
fn bad_input_is_one_line() {
    let dir = Dir::new("annotate-bad");
    let folded = dir.path("x.folded");
    std::fs::write(&folded, "main;work 10\n").unwrap();
    let out = cpiflame(&["annotate", s(&folded)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("needs a perf.data file") && err.contains(s(&folded)),
        "{err}"
    );
}

/// The same recording in pipe mode (`perf inject -o -`), read from a file and from standard
/// input, annotates exactly as the plain file does.
#[test]
fn pipe_mode_and_standard_input_annotate_as_the_plain_file() {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("annotate-pipe");
    let data = dir.path("hotloop.data");
    perf_record(
        &data,
        "cpu-clock",
        &["-c", "100000"],
        &[&f.dir.join("hotloop")],
    )
    .expect("perf record");
    let pipe = dir.path("hotloop.pipe");
    let injected = Command::new("perf")
        .args(["inject", "-o", "-", "-i"])
        .arg(&data)
        .output()
        .expect("perf inject runs");
    assert!(injected.status.success(), "perf inject failed");
    std::fs::write(&pipe, &injected.stdout).unwrap();
    let plain = ok(&cpiflame(&["annotate", s(&data), "hot_loop", "--json"]));
    assert_eq!(
        ok(&cpiflame(&["annotate", s(&pipe), "hot_loop", "--json"])),
        plain
    );
    let from_stdin = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["annotate", "-", "hot_loop", "--json"])
        .stdin(std::fs::File::open(&pipe).unwrap())
        .output()
        .unwrap();
    assert_eq!(ok(&from_stdin), plain);
}
