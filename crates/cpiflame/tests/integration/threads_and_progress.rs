//! Rendering on several threads gives the same bytes as on one (`CPIFLAME_THREADS=1`), on a
//! recording made here with DWARF call graphs of several threads, and so does rendering with
//! the cache of decompressed debug sections empty, filled or off; and the progress display
//! shows on a terminal only: nothing on a pipe or under CI.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{perf_record, perf_works, s, shared_fixtures, Dir};

/// Records the threads fixture (five threads with `bigframe`, recursion, an inlined helper)
/// with both clock events; `None` when perf cannot record here.
fn record(dir: &Dir) -> Option<std::path::PathBuf> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return None;
    }
    let fixtures = shared_fixtures().expect("fixtures build");
    let data = dir.path("threads.data");
    let threads = s(&fixtures.threads);
    perf_record(
        &data,
        "cpu-clock,task-clock",
        &["-F", "4000"],
        &[threads, "0.5", "bigframe"],
    )
    .expect("perf record");
    Some(data)
}

fn cpiflame_with(args: &[&str], threads: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cpiflame"));
    command.args(args).stdin(Stdio::null());
    match threads {
        Some(n) => command.env("CPIFLAME_THREADS", n),
        None => command.env_remove("CPIFLAME_THREADS"),
    };
    command.output().unwrap()
}

/// `render DATA` with the fixture's task-clock as stalls and cpu-clock as cycles.
fn render_args(data: &str) -> [&str; 6] {
    [
        "render",
        data,
        "--stalls",
        "task-clock",
        "--cycles",
        "cpu-clock",
    ]
}

fn success(out: &Output) -> &[u8] {
    assert!(
        out.status.success(),
        "cpiflame failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    &out.stdout
}

#[test]
fn one_thread_and_many_give_the_same_bytes() {
    let dir = Dir::new("threads-identical");
    let Some(data) = record(&dir) else { return };
    let data = s(&data);
    let samples = String::from_utf8(
        success(&cpiflame_with(
            &["fold", data, "--event", "cpu-clock"],
            None,
        ))
        .to_vec(),
    )
    .unwrap()
    .lines()
    .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
    .sum::<u64>();
    assert!(samples > 2000, "only {samples} cpu-clock samples");
    for args in [
        &render_args(data)[..],
        &[
            "fold",
            data,
            "--tid",
            "--stalls",
            "task-clock",
            "--cycles",
            "cpu-clock",
        ][..],
        &["fold", data, "--event", "task-clock"][..],
        &["script", data][..],
        &["convert", data, "--to", "pprof", "-o", "-"][..],
    ] {
        let one = cpiflame_with(args, Some("1"));
        let many = cpiflame_with(args, None);
        let (one, many) = (success(&one), success(&many));
        assert!(!one.is_empty(), "{args:?} wrote nothing");
        if one != many {
            // Kept with CPIFLAME_KEEP_FAILED_TESTS, to compare.
            std::fs::write(dir.path("one.out"), one).unwrap();
            std::fs::write(dir.path("many.out"), many).unwrap();
            panic!(
                "{args:?}: one thread and several differ: {}",
                first_difference(one, many)
            );
        }
    }
    // The graph names every thread of the fixture.
    let folded = String::from_utf8(
        success(&cpiflame_with(
            &["fold", data, "--event", "cpu-clock"],
            None,
        ))
        .to_vec(),
    )
    .unwrap();
    for thread in ["heavy", "light", "recurse", "bigframe"] {
        assert!(
            folded.lines().any(|l| l.starts_with(&format!("{thread};"))),
            "no {thread} stacks in\n{folded}"
        );
    }
}

/// The cache of decompressed debug sections and symbol indexes (`CPIFLAME_CACHE_DIR`)
/// changes no byte of any output: a first run fills it (libc's debug file is compressed), a
/// second reads from it, and a run with it off decompresses and indexes in memory.
#[test]
fn the_debug_section_cache_changes_nothing() {
    let dir = Dir::new("threads-cache");
    let Some(data) = record(&dir) else { return };
    let data = s(&data);
    let cache = dir.path("cache");
    let run = |args: &[&str], cache: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
            .args(args)
            .env("CPIFLAME_CACHE_DIR", cache)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        success(&out).to_vec()
    };
    let render = render_args(data);
    let script = ["script", data];
    let cold = (run(&render, s(&cache)), run(&script, s(&cache)));
    // Both kinds of entry: decompressed debug sections and symbol indexes.
    for kind in ["dwarf", "symbols"] {
        let entries = std::fs::read_dir(cache.join(kind))
            .map(|d| d.filter_map(Result::ok).count())
            .unwrap_or(0);
        assert!(
            entries > 0,
            "no {kind} cache entry written under {}",
            cache.display()
        );
    }
    let warm = (run(&render, s(&cache)), run(&script, s(&cache)));
    let off = (run(&render, ""), run(&script, ""));
    assert!(!cold.0.is_empty() && !cold.1.is_empty());
    for (name, other) in [("warm", &warm), ("off", &off)] {
        if cold != *other {
            // Kept with CPIFLAME_KEEP_FAILED_TESTS, to compare.
            for (part, (c, o)) in [(&cold.0, &other.0), (&cold.1, &other.1)]
                .into_iter()
                .enumerate()
            {
                std::fs::write(dir.path(&format!("cold.{part}")), c).unwrap();
                std::fs::write(dir.path(&format!("{name}.{part}")), o).unwrap();
            }
            panic!(
                "outputs differ with the cache {name}: render {}; script {}",
                first_difference(&cold.0, &other.0),
                first_difference(&cold.1, &other.1)
            );
        }
    }
}

/// Kernel frames met before the kernel symbols are read (on their own thread) get their names
/// at the end, a frame per address until then: pprof's locations and samples must not depend
/// on when the symbols arrived. Page faults put kernel frames in the very first samples.
#[test]
fn pprof_of_early_kernel_frames_is_the_same_from_one_thread_and_many() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock` fails)");
        return;
    }
    let fixtures = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("threads-pprof");
    let data = dir.path("faults.data");
    perf_record(
        &data,
        "cpu-clock",
        &["-F", "4000"],
        &[s(&fixtures.faults), "20000"],
    )
    .expect("perf record");
    let args = ["convert", s(&data), "--to", "pprof", "-o", "-"];
    let one = cpiflame_with(&args, Some("1"));
    for _ in 0..3 {
        let many = cpiflame_with(&args, None);
        assert!(!success(&one).is_empty());
        assert!(
            success(&one) == success(&many),
            "pprof from one thread and from several differ"
        );
    }
}

/// Runs `cpiflame ARGS` with standard error on a terminal (util-linux `script` gives it a
/// pseudo-terminal), with `CI` set to `ci` or unset; returns what the terminal showed.
fn on_terminal(args: &[&str], ci: Option<&str>) -> Option<String> {
    let line = std::iter::once(env!("CARGO_BIN_EXE_cpiflame"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut command = Command::new("script");
    command
        .args([
            "-q",
            "-e",
            "-c",
            &format!("{line} > /dev/null"),
            "/dev/null",
        ])
        .stdin(Stdio::null());
    match ci {
        Some(v) => command.env("CI", v),
        None => command.env_remove("CI"),
    };
    let out = match command.output() {
        Ok(out) => out,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cannot run script (util-linux): {e}"));
            return None;
        }
    };
    assert!(out.status.success(), "{line} on a terminal failed: {out:?}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn progress_shows_on_a_terminal_only() {
    let dir = Dir::new("threads-progress");
    let Some(data) = record(&dir) else { return };
    let data = s(&data);
    let args = [
        "render",
        data,
        "--stalls",
        "task-clock",
        "--cycles",
        "cpu-clock",
    ];

    // On a pipe: only the warnings, never a progress line.
    let piped = cpiflame_with(&args, None);
    success(&piped);
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(
        !stderr.contains('\r') && !stderr.contains("samples in") && !stderr.contains("reading"),
        "progress on a pipe: {stderr:?}"
    );

    // On a terminal: a summary with the file, its size and the samples read.
    let Some(shown) = on_terminal(&args, None) else {
        return;
    };
    let size_mib = std::fs::metadata(Path::new(data)).unwrap().len() as f64 / 1048576.0;
    let summary = shown
        .split(['\r', '\n'])
        .find(|l| l.starts_with(&format!("cpiflame: read {data}: ")))
        .unwrap_or_else(|| panic!("no summary on the terminal: {shown:?}"));
    let mib: f64 = summary
        .split(": ")
        .nth(2)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {summary:?}"));
    // The data section, to a tenth of a MiB: at most the file.
    assert!(
        mib > 0.0 && mib <= size_mib + 0.05,
        "{summary:?} for a {size_mib} MiB file"
    );
    assert!(summary.contains(" samples in "), "{summary:?}");

    // A command that reads the file twice (convert: roles, then addresses): one summary.
    let pprof = format!("{data}.pb.gz");
    let converted = on_terminal(&["convert", data, "--to", "pprof", "-o", &pprof], None).unwrap();
    let summaries = converted
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("cpiflame: read "))
        .count();
    assert_eq!(summaries, 1, "{converted:?}");

    // Under CI, even on a terminal: nothing.
    let under_ci = on_terminal(&args, Some("true")).unwrap();
    assert!(
        !under_ci.contains("cpiflame: read") && !under_ci.contains("reading"),
        "progress under CI: {under_ci:?}"
    );
}

/// Where two outputs first differ: the line number and both lines (cut to 300 bytes), for a
/// failure message that says what changed.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let cut = |l: &str| l.chars().take(300).collect::<String>();
    let mut lines = a.lines().zip(b.lines()).enumerate();
    match lines.find(|(_, (x, y))| x != y) {
        Some((n, (x, y))) => format!("line {}: {:?} then {:?}", n + 1, cut(x), cut(y)),
        None if a == b => "none".to_string(),
        None => format!("{} lines, then {}", a.lines().count(), b.lines().count()),
    }
}
