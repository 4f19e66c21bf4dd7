//! `record`'s clock (`-k`): by default every sample is timed on CLOCK_MONOTONIC, as `perf
//! record -k mono` times it, and the file says so in its CLOCKID and CLOCK_DATA features.
//! The oracle is a workload that reads CLOCK_MONOTONIC (and the wall clock) itself just
//! before and just after the loop it spins in (`support/data/clock_span.c`): every sample
//! taken in that loop carries a time between its two reads, read by `perf script` and by
//! cpiflame's own `script`; perf reads the clock's name and reference instant from the
//! header, and `perf script -F tod` gives the samples' wall-clock times from it.

use crate::support;

use std::path::PathBuf;
use std::process::Command;

use support::{cpiflame, ok, s, Dir};

/// The workload (`support/data/clock_span.c`), built into `dir`.
fn clock_span(dir: &Dir) -> Option<PathBuf> {
    support::sampled_data_program(dir, "clock_span")
}

/// What the workload printed: (monotonic, wall clock) ns at its start and end.
struct Span {
    start: (u64, u64),
    end: (u64, u64),
}

fn span_of(stdout: &str) -> Span {
    let read = |word: &str| -> (u64, u64) {
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix(word))
            .unwrap_or_else(|| panic!("no {word:?} line in {stdout:?}"));
        let mut numbers = line.split_whitespace().map(|n| n.parse::<u64>().unwrap());
        (numbers.next().unwrap(), numbers.next().unwrap())
    };
    Span {
        start: read("start "),
        end: read("end "),
    }
}

/// Each sample's time (ns) and whether its stack holds `spin`, from `perf script`'s or
/// cpiflame `script`'s text (a header line with `SECONDS.NANOS:`, then frame lines).
fn sample_times(text: &str) -> Vec<(u64, bool)> {
    let mut samples: Vec<(u64, bool)> = Vec::new();
    for line in text.lines() {
        if line.starts_with('\t') || line.starts_with(' ') {
            if let Some(last) = samples.last_mut() {
                last.1 |= line.split_whitespace().any(|w| w == "spin");
            }
            continue;
        }
        let Some(time) = line.split_whitespace().find_map(|w| {
            let (secs, nanos) = w.strip_suffix(':')?.split_once('.')?;
            (nanos.len() == 9).then_some(())?;
            Some(secs.parse::<u64>().ok()? * 1_000_000_000 + nanos.parse::<u64>().ok()?)
        }) else {
            continue;
        };
        samples.push((time, false));
    }
    samples
}

/// Every sample in the spin loop lies between the workload's two reads of the clock, and
/// they are most of the samples (the loader's and exit's are outside it); at least 20 of
/// them (a loaded machine gives a spin of wall time fewer than its rate would).
fn check_inside(what: &str, samples: &[(u64, bool)], (start, end): (u64, u64)) {
    let spinning: Vec<u64> = samples.iter().filter(|s| s.1).map(|s| s.0).collect();
    assert!(
        spinning.len() * 2 > samples.len() && spinning.len() >= 20,
        "{what}: {} of {} samples in spin()",
        spinning.len(),
        samples.len()
    );
    let outside: Vec<&u64> = spinning
        .iter()
        .filter(|t| !(start..=end).contains(*t))
        .collect();
    assert!(
        outside.is_empty(),
        "{what}: {} of {} samples in spin() outside {start}..={end}: {:?}",
        outside.len(),
        spinning.len(),
        &outside[..outside.len().min(5)]
    );
}

fn perf(args: &[&str]) -> String {
    let out = Command::new("perf")
        .args(args)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn samples_are_timed_on_clock_monotonic_by_default() {
    let dir = Dir::new("record-clock");
    let Some(exe) = clock_span(&dir) else { return };
    let data = dir.path("mono.data");
    let stdout = ok(&cpiflame(&["record", "-o", s(&data), "--", s(&exe), "0.3"]));
    let span = span_of(&stdout);
    let monotonic = (span.start.0, span.end.0);

    let header = perf(&["report", "--header-only", "-i", s(&data)]);
    assert!(header.contains("\n# clockid: monotonic (1)\n"), "{header}");
    assert!(header.contains("\n# clockid frequency: "), "{header}");
    assert!(header.contains("use_clockid = 1"), "{header}");
    assert!(header.contains("clockid = 1\n"), "{header}");
    // The reference instant: read as the recording started, before the workload's start.
    let reference = header
        .lines()
        .find_map(|l| l.strip_prefix("# reference time: "))
        .unwrap_or_else(|| panic!("no reference time in {header}"));
    let on_clock = reference
        .rsplit(" = ")
        .next()
        .and_then(|r| r.strip_suffix(" (monotonic)"))
        .unwrap_or_else(|| panic!("{reference}"));
    let (secs, nanos) = on_clock.split_once('.').unwrap();
    let on_clock: u64 =
        secs.parse::<u64>().unwrap() * 1_000_000_000 + nanos.parse::<u64>().unwrap();
    assert!(
        on_clock < span.start.0,
        "{reference} after {}",
        span.start.0
    );

    let script = perf(&[
        "script",
        "-i",
        s(&data),
        "-F",
        "comm,tid,time,ip,sym,dso",
        "--ns",
    ]);
    check_inside("perf script", &sample_times(&script), monotonic);
    let ours = ok(&cpiflame(&["script", s(&data)]));
    check_inside("cpiflame script", &sample_times(&ours), monotonic);

    // perf's wall-clock time of each sample (from CLOCK_DATA) is the workload's wall clock:
    // microseconds, so within a microsecond of its reads.
    let tod = perf(&["script", "-i", s(&data), "-F", "tod,time", "--ns"]);
    let times = sample_times(&script);
    let mut checked = 0;
    for (line, &(time, spinning)) in tod.lines().zip(&times) {
        if !spinning {
            continue;
        }
        let stamp: String = line
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        let date = Command::new("date")
            .args(["-u", "-d", &stamp, "+%s%6N"])
            .output()
            .unwrap();
        let us: u64 = String::from_utf8(date.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            (span.start.1 / 1000 - 1..=span.end.1 / 1000 + 1).contains(&us),
            "tod {stamp} of the sample at {time} outside the wall-clock span {}..{}",
            span.start.1,
            span.end.1
        );
        checked += 1;
        if checked == 20 {
            break;
        }
    }
    assert_eq!(checked, 20, "{tod}");
}

/// `-k realtime` times samples on the wall clock (a software event may use it), `-k perf`
/// on the kernel's perf clock with neither feature written; both files read with perf.
#[test]
fn other_clocks_are_perfs() {
    let dir = Dir::new("record-clock-k");
    let Some(exe) = clock_span(&dir) else { return };
    let data = dir.path("real.data");
    let stdout = ok(&cpiflame(&[
        "record",
        "-k",
        "CLOCK_REALTIME",
        "-o",
        s(&data),
        "--",
        s(&exe),
        "0.1",
    ]));
    let span = span_of(&stdout);
    let header = perf(&["report", "--header-only", "-i", s(&data)]);
    assert!(header.contains("\n# clockid: realtime (0)\n"), "{header}");
    let script = perf(&[
        "script",
        "-i",
        s(&data),
        "-F",
        "comm,tid,time,ip,sym,dso",
        "--ns",
    ]);
    check_inside(
        "-k realtime",
        &sample_times(&script),
        (span.start.1, span.end.1),
    );

    let data = dir.path("perf.data");
    ok(&cpiflame(&[
        "record",
        "-k",
        "perf",
        "-o",
        s(&data),
        "--",
        s(&exe),
        "0.1",
    ]));
    let header = perf(&["report", "--header-only", "-i", s(&data)]);
    assert!(!header.contains("use_clockid"), "{header}");
    assert!(!header.contains("# clockid"), "{header}");
    assert!(!header.contains("# reference time"), "{header}");
    // perf reads the samples with their times (how many a 0.1 s spin gets depends on the
    // machine's load: a tenth of the ~100 expected is plenty to show they are there).
    let script = perf(&["script", "-i", s(&data), "-F", "time", "--ns"]);
    assert!(sample_times(&script).len() >= 10, "{script}");

    let out = cpiflame(&["record", "-k", "jiffies", "-o", s(&data), "--", s(&exe)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("-k jiffies: expected monotonic"),
        "{stderr}"
    );
}
