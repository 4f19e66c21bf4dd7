//! Tracepoint events are named as perf names them (`sched:sched_switch`), in pipe and file
//! mode, also when the file holds no name for them but the tracing data (PERF_RECORD_HEADER_
//! TRACING_DATA in a pipe, the HEADER_TRACING_DATA feature section in a file): the format
//! files there say each event's system, `name:` and `ID:`.
//!
//! Recorded here with perf (tracepoints work without a PMU); the nameless twins are the same
//! recordings with their name records taken out (pipe: EVENT_UPDATE records and the EVENT_DESC
//! and CMDLINE feature records; file: those feature sections), which perf names from the
//! tracing data. The oracle is `perf script` and `perf report` on the very same files.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cpiflame_perf_data::abi::{feature, record};
use support::{cpiflame, ok, perf_works, s, Dir};

/// The tracepoints recorded: two, so that each sample's event must be found by its config.
const EVENTS: &str = "sched:sched_switch,sched:sched_process_exit";

/// `perf record -e EVENTS` of `sleep 0.1`, to a pipe (`-o -`, stdout kept in `pipe.data`)
/// and to `file.data`.
fn record(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return None;
    }
    let pipe = dir.join("pipe.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-e", EVENTS, "-o", "-"])
        .args(["--", "sleep", "0.1"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&pipe).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "perf record -o -: {out:?}");
    let file = dir.join("file.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-e", EVENTS, "-o"])
        .arg(&file)
        .args(["--", "sleep", "0.1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "perf record: {out:?}");
    Some((pipe, file))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The feature sections that hold the event's name: EVENT_DESC, and CMDLINE (perf's command
/// line, `-e sched:sched_switch`).
const NAMING_FEATURES: [u32; 2] = [feature::CMDLINE, feature::EVENT_DESC];

/// The pipe stream `bytes` without its EVENT_UPDATE records and its naming feature records:
/// events are left with the tracing data alone to name them.
fn pipe_without_names(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes[..16].to_vec();
    let mut pos = 16;
    while pos + 8 <= bytes.len() {
        let rtype = u32_at(bytes, pos);
        let mut size = usize::from(u16_at(bytes, pos + 6));
        assert!(size >= 8, "record of size {size} at {pos}");
        if rtype == record::HEADER_TRACING_DATA {
            size += (u32_at(bytes, pos + 8) as usize).next_multiple_of(8);
        }
        let names = rtype == record::EVENT_UPDATE
            || (rtype == record::HEADER_FEATURE
                && NAMING_FEATURES
                    .iter()
                    .any(|&f| u64_at(bytes, pos + 8) == u64::from(f)));
        if !names {
            out.extend_from_slice(&bytes[pos..pos + size]);
        }
        pos += size;
    }
    out
}

/// The perf.data file `bytes` without its naming feature sections: their bits cleared and
/// their entries taken out of the feature table (the sections' bytes cleared too).
fn file_without_names(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let table = (u64_at(bytes, 40) + u64_at(bytes, 48)) as usize;
    let bits = u64_at(bytes, 72);
    assert!(
        (1..4).all(|i| u64_at(bytes, 72 + 8 * i) == 0),
        "feature bits past 63"
    );
    let mut entries = Vec::new();
    let mut kept_bits = 0u64;
    for (k, bit) in (0..64).filter(|b| bits & (1 << b) != 0).enumerate() {
        let entry = &bytes[table + 16 * k..table + 16 * (k + 1)];
        if NAMING_FEATURES.contains(&bit) {
            let (off, size) = (u64_at(entry, 0) as usize, u64_at(entry, 8) as usize);
            out[off..off + size].fill(0);
        } else {
            kept_bits |= 1 << bit;
            entries.extend_from_slice(entry);
        }
    }
    assert_ne!(kept_bits, bits, "no naming feature to take out");
    out[table..table + entries.len()].copy_from_slice(&entries);
    out[72..80].copy_from_slice(&kept_bits.to_le_bytes());
    out
}

/// The event of each sample, in order, from `perf script -F event` or cpiflame's script
/// header lines (`comm pid time: EVENT:`).
fn perf_events(file: &Path) -> Vec<String> {
    let out = Command::new("perf")
        .args(["script", "-F", "event", "-i"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf script {}: {out:?}",
        file.display()
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().trim_end_matches(':').to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn cpiflame_events(file: &Path) -> Vec<String> {
    ok(&cpiflame(&["script", s(file)]))
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .map(|l| {
            let (_, event) = l
                .rsplit_once(": ")
                .unwrap_or_else(|| panic!("header {l:?}"));
            event.trim_end_matches(':').to_string()
        })
        .collect()
}

/// The events `perf report --stdio` says its samples are of (`# Samples: 3  of event 'X'`,
/// one line per event).
fn perf_report_events(file: &Path) -> Vec<String> {
    let out = Command::new("perf")
        .args(["report", "--stdio", "-i"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf report {}: {out:?}",
        file.display()
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("# Samples:")?.split_once("of event '"))
        .map(|(_, event)| event.trim_end_matches('\'').to_string())
        .collect()
}

/// The event cpiflame's report is of when asked for `event` by name (`# cpiflame report: 3
/// samples of X`).
fn cpiflame_report_event(file: &Path, event: &str) -> String {
    // On-CPU only: a sched_switch recording also has wall time, whose totals the header
    // line adds after the event name.
    let text = ok(&cpiflame(&[
        "report",
        "--on-cpu-only",
        "--cycles",
        event,
        s(file),
    ]));
    let line = text.lines().next().unwrap();
    let (_, event) = line
        .split_once(" samples of ")
        .unwrap_or_else(|| panic!("first line of cpiflame report: {line:?}"));
    event.to_string()
}

#[test]
fn tracepoints_are_named_as_perf_names_them_with_or_without_other_names() {
    let dir = Dir::new("tracepoints");
    let Some((pipe, file)) = record(&dir.0) else {
        return;
    };
    let pipe_bare = dir.path("pipe-bare.data");
    let file_bare = dir.path("file-bare.data");
    for (from, to, strip) in [
        (
            &pipe,
            &pipe_bare,
            pipe_without_names as fn(&[u8]) -> Vec<u8>,
        ),
        (&file, &file_bare, file_without_names),
    ] {
        let bare = strip(&std::fs::read(from).unwrap());
        // Nothing but the tracing data names the events: `sched:...` is not there.
        assert!(
            !bare.windows(6).any(|w| w == b"sched:"),
            "{} still names the events",
            to.display()
        );
        std::fs::write(to, bare).unwrap();
    }
    for data in [&pipe, &file, &pipe_bare, &file_bare] {
        let perf = perf_events(data);
        for event in EVENTS.split(',') {
            assert!(
                perf.iter().any(|e| e == event),
                "no {event} sample in {}: perf script names {perf:?}",
                data.display()
            );
        }
        assert_eq!(cpiflame_events(data), perf, "{}", data.display());
        // Each event perf's report shows is one cpiflame's report finds by that name.
        let reported = perf_report_events(data);
        assert_eq!(reported.len(), 2, "perf report of {}", data.display());
        for event in reported {
            assert_eq!(
                cpiflame_report_event(data, &event),
                event,
                "{}",
                data.display()
            );
        }
    }
}
