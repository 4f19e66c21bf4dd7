//! `cpiflame annotate` against `perf annotate --stdio` and `addr2line -i -f -C` (binutils) on
//! real recordings of three hot loops with code inlined into them: `hotloop.c` (`mix` forced
//! inline), `hotloop_cpp.cpp` (templates inlined two deep) and `hotloop_rust.rs` (`#[inline]`
//! functions and core's iterator, the loop unrolled), recorded by perf (with and without DWARF
//! call graphs, fixed and frequency-mode periods) and by `cpiflame record`: the same
//! instructions with the same percentages (perf prints two decimals), the same sample count,
//! and each instruction's frames (functions and lines, innermost first) as addr2line's inline
//! chain; source files found under `--source-dir`, not under a wrong `--prefix`; pipe mode and
//! standard input as the plain file; GCC's `.cold` parts annotated apart, as perf does. Stall
//! share and CPI need a PMU: they are checked on synthetic recordings in `crates/annotate`'s
//! unit tests.

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

/// One frame as `addr2line -a -i -f -C` gives it: the function (demangled) and `file:line`.
#[derive(Clone, Debug)]
struct Frame {
    function: String,
    line: String,
}

/// `addr2line -a -i -f -C`: per address, its frames, innermost first.
fn addr2line(binary: &Path, addresses: &[u64]) -> BTreeMap<u64, Vec<Frame>> {
    let out = Command::new("addr2line")
        .args(["-a", "-i", "-f", "-C", "-e"])
        .arg(binary)
        .args(addresses.iter().map(|a| format!("{a:#x}")))
        .output()
        .expect("addr2line runs");
    assert!(out.status.success());
    let mut frames: BTreeMap<u64, Vec<Frame>> = BTreeMap::new();
    let mut current = None;
    let mut function = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(hex) = line.strip_prefix("0x") {
            current = Some(u64::from_str_radix(hex, 16).unwrap());
            continue;
        }
        // A function's line, then its `file:line`.
        let Some(name) = function.take() else {
            function = Some(line.to_string());
            continue;
        };
        // `hotloop.c:14 (discriminator 1)`: the discriminator is not a line.
        let line = line.split(" (").next().unwrap_or(line).to_string();
        frames.entry(current.unwrap()).or_default().push(Frame {
            function: name,
            line,
        });
    }
    frames
}

/// A name as `addr2line -C` prints it, as cpiflame names frames: a C++ function without its
/// parameter list (and `const`) and return type (`unsigned long ns::step<unsigned long>(unsigned
/// long, unsigned long)` is `ns::step<unsigned long>`); Rust names are the same in both.
fn frame_name(demangled: &str) -> String {
    let mut name = demangled.trim_end_matches(" const");
    if name.ends_with(')') {
        // The parameter list: from the `(` that closes at the end.
        let mut depth = 0;
        for (i, c) in name.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        name = &name[..i];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // The return type: everything before the last space outside `<...>`.
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    name[start..].to_string()
}

/// `file:line` as addr2line prints it: `??` for no file, `?` for no line (DWARF's line 0,
/// code the compiler gives to no line).
fn file_line(file: &Value, line: &Value) -> String {
    let line = match line.as_u64() {
        Some(0) | None => "?".to_string(),
        Some(n) => n.to_string(),
    };
    format!("{}:{line}", file.as_str().unwrap_or("??"))
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
    /// `perf record --call-graph dwarf -c 100000`.
    Dwarf,
    /// `perf record` with no call graph, `-c 100000`.
    Flat,
    /// `perf record` with no call graph, `-F 4000`: every sample has its own period (shares
    /// are of periods, perf annotate's `local period`).
    Frequency,
    /// `cpiflame record -c 100000` (DWARF call chains; cpu-clock without a PMU).
    Cpiflame,
}

/// A fixture with one hot function and what its annotation must show.
struct Hot {
    /// The binary in the fixtures' directory, and the module cpiflame names.
    binary: &'static str,
    /// The function, as perf annotate and cpiflame both name it.
    symbol: &'static str,
    /// A line of its source, as the text output shows it when the file is found.
    source: &'static str,
}

const HOTLOOP: Hot = Hot {
    binary: "hotloop",
    symbol: "hot_loop",
    source: "x ^= x >> 7;",
};

const HOTLOOP_CPP: Hot = Hot {
    binary: "hotloop_cpp",
    symbol: "cpiflame::fixtures::hot_loop",
    source: "x ^= x >> 7;",
};

const HOTLOOP_RUST: Hot = Hot {
    binary: "hotloop_rust",
    symbol: "hotloop_rust::hot_loop",
    source: "let x = x ^ (x >> 7);",
};

/// Records `hot`'s fixture as `mode` says and checks `cpiflame annotate` against perf
/// annotate and addr2line: every instruction's share, source line and inline chain.
fn check_against_perf(hot: &Hot, mode: Mode) {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    if !binutils_available() {
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let binary = f.dir.join(hot.binary);
    let dir = Dir::new("annotate");
    let data = dir.path("hot.data");
    let flat = |rate: &str, value: &str| {
        perf_record_with(&data, "cpu-clock", &["-q", "-N", rate, value], &[&binary])
    };
    let recorded = match mode {
        Mode::Dwarf => perf_record(&data, "cpu-clock", &["-c", "100000"], &[&binary]),
        Mode::Flat => flat("-c", "100000"),
        Mode::Frequency => flat("-F", "4000"),
        Mode::Cpiflame => {
            ok(&cpiflame(&[
                "record",
                "-N",
                "-c",
                "100000",
                "-o",
                s(&data),
                s(&binary),
            ]));
            Ok(())
        }
    };
    recorded.expect("record");

    let (perf, perf_samples) = perf_annotate(&data, hot.symbol);
    let json: Value = serde_json::from_str(&ok(&cpiflame(&[
        "annotate",
        s(&data),
        hot.symbol,
        "--json",
    ])))
    .expect("JSON");
    let function = &json[0];
    assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(function["function"], hot.symbol);
    assert_eq!(function["module"], hot.binary);
    // The same instructions, each within perf's rounding to two decimals.
    assert_shares_match(function, &perf, perf_samples);
    assert!(function["cold_part"].is_null(), "{function}");

    // Each instruction's line is addr2line's innermost one, and its frames are addr2line's
    // inline chain: the same functions with the same lines, innermost first.
    let addresses: Vec<u64> = perf.keys().copied().collect();
    let truth = addr2line(&binary, &addresses);
    // Per inlined line (`file:line`), the inline chains of its instructions.
    let mut inlined_lines: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for i in function["instructions"].as_array().unwrap() {
        let address = u64::from_str_radix(i["address"].as_str().unwrap(), 16).unwrap();
        let frames = &truth[&address];
        let ours = file_line(&i["file"], &i["line"]);
        assert_eq!(
            ours, frames[0].line,
            "{address:x}: addr2line -i says {frames:?}"
        );
        let chain: Vec<(String, String, bool)> = i["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let line = file_line(&f["file"], &f["line"]);
                let name = f["function"].as_str().unwrap().to_string();
                (name, line, f["inlined"] == true)
            })
            .collect();
        let expected: Vec<(String, String, bool)> = frames
            .iter()
            .enumerate()
            .map(|(k, f)| {
                (
                    frame_name(&f.function),
                    f.line.clone(),
                    k + 1 < frames.len(),
                )
            })
            .collect();
        assert_eq!(
            chain, expected,
            "{address:x}: addr2line -i -f -C says {frames:?}"
        );
        // Code at no line (`?`) counts on no source line.
        if frames.len() > 1 && !frames[0].line.ends_with(":?") {
            let names: Vec<&str> = chain[..chain.len() - 1]
                .iter()
                .map(|(name, _, _)| name.as_str())
                .collect();
            inlined_lines
                .entry(frames[0].line.clone())
                .or_default()
                .push(names.join(" <- "));
        }
    }
    // The inlined code's source lines carry an inline chain of theirs in the text output.
    assert!(!inlined_lines.is_empty(), "addr2line shows no inlined code");
    let text = ok(&cpiflame(&["annotate", s(&data), hot.symbol]));
    for (line, chains) in &inlined_lines {
        let found = chains.iter().any(|chain| {
            text.lines()
                .any(|l| l.contains(&format!("  {line}  (inlined: {chain})")))
        });
        assert!(
            found,
            "no source row for {line} with one of {chains:?}:\n{text}"
        );
    }
    // cpu-clock has no precise_ip: the skid note.
    assert!(text.contains("is not precise (precise_ip 0)"), "{text}");
    // The source text is read from the file DWARF names.
    assert!(text.contains(hot.source), "{text}");
    if mode != Mode::Dwarf || hot.binary != "hotloop" {
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
    check_against_perf(&HOTLOOP, Mode::Dwarf);
}

#[test]
fn percentages_and_lines_match_perf_annotate_and_addr2line_without_call_graphs() {
    check_against_perf(&HOTLOOP, Mode::Flat);
}

#[test]
fn percentages_match_perf_annotate_with_periods_of_their_own() {
    check_against_perf(&HOTLOOP, Mode::Frequency);
}

/// C++: templates inlined two deep (`rotate <- step <- hot_loop`), names demangled.
#[test]
fn cpp_inlined_templates_match_perf_annotate_and_addr2line() {
    check_against_perf(&HOTLOOP_CPP, Mode::Dwarf);
}

#[test]
fn cpp_recorded_by_cpiflame_matches_perf_annotate_and_addr2line() {
    check_against_perf(&HOTLOOP_CPP, Mode::Cpiflame);
}

/// Rust: `#[inline]` functions and core's iterator inlined, the loop unrolled.
#[test]
fn rust_inlined_functions_match_perf_annotate_and_addr2line() {
    check_against_perf(&HOTLOOP_RUST, Mode::Dwarf);
}

#[test]
fn rust_without_call_graphs_matches_perf_annotate_and_addr2line() {
    check_against_perf(&HOTLOOP_RUST, Mode::Flat);
}

#[test]
fn rust_recorded_by_cpiflame_matches_perf_annotate_and_addr2line() {
    check_against_perf(&HOTLOOP_RUST, Mode::Cpiflame);
}

/// The instruction shares of one function of cpiflame's JSON against perf annotate's.
fn assert_shares_match(function: &Value, perf: &BTreeMap<u64, f64>, perf_samples: u64) {
    assert_eq!(
        function["samples"].as_u64(),
        Some(perf_samples),
        "{function}"
    );
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
}

/// GCC's `.cold` part (`work.cold`, which `report` names `work`) is annotated apart, as perf
/// annotate does: SYMBOL `work` is `work`'s own symbol and mentions `work.cold` with its
/// samples; SYMBOL `work.cold` is the part; each matches perf annotate's; both are listed
/// without SYMBOL.
#[test]
fn cold_parts_are_annotated_apart_as_perf_does() {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("annotate-cold");
    let data = dir.path("coldpart.data");
    perf_record_with(
        &data,
        "cpu-clock",
        &["-q", "-N", "-c", "100000"],
        &[&f.coldpart],
    )
    .expect("perf record");
    let json = |symbol: &str| -> Value {
        let out = ok(&cpiflame(&["annotate", s(&data), symbol, "--json"]));
        let json: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(json.as_array().map(Vec::len), Some(1), "{json}");
        json[0].clone()
    };
    let (perf_work, work_samples) = perf_annotate(&data, "work");
    let (perf_cold, cold_samples) = perf_annotate(&data, "work.cold");
    assert!(cold_samples > 0, "the fixture's work.cold has no samples");
    let work = json("work");
    assert_eq!(work["function"], "work");
    assert_shares_match(&work, &perf_work, work_samples);
    assert_eq!(work["cold_part"]["function"], "work.cold", "{work}");
    assert_eq!(work["cold_part"]["samples"].as_u64(), Some(cold_samples));
    let cold = json("work.cold");
    assert_eq!(cold["function"], "work.cold");
    assert!(cold["cold_part"].is_null(), "{cold}");
    assert_shares_match(&cold, &perf_cold, cold_samples);
    let text = ok(&cpiflame(&["annotate", s(&data), "work"]));
    assert!(
        text.contains(&format!("work.cold has {cold_samples} samples more")),
        "{text}"
    );
    let top: Value = serde_json::from_str(&ok(&cpiflame(&[
        "annotate",
        s(&data),
        "--json",
        "--limit",
        "2",
    ])))
    .expect("JSON");
    let mut names: Vec<&str> = top
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["work", "work.cold"]);
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
