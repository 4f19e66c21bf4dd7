//! Data a recorder was interrupted in writing (issue 41): a recorder killed mid-run
//! (SIGKILL) leaves a file whose header says data size 0 and whose records end at its last
//! flush, which `report` reads to its end and perf recognises as an unfinished recording; a
//! folder holding a file a recorder has just started (too short for its header or attrs, as
//! `record --switch-output` leaves it between creating and writing it) reads without it, one
//! warning naming it; a live `record --switch-output` folder reads while it is recorded.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{cpiflame, ok, perf_stdout, s, sampling_fixtures, Dir};

/// `cpiflame record ARGS...`, started (stdout and stderr dropped).
fn start_record(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .arg("record")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGKILLs the recorder, then the command it started (a killed recorder leaves it running).
pub(crate) fn kill_recorder(recorder: &mut Child) {
    let pid = recorder.id();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    let _ = recorder.kill();
    let _ = recorder.wait();
    for child in children.split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", child]).status();
    }
}

/// The sample count `report` prints in its first line (`# cpiflame report: N samples of
/// EVENT`).
fn report_samples(report: &str) -> u64 {
    let first = report.lines().next().unwrap_or_default();
    first
        .strip_prefix("# cpiflame report: ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in {first:?}"))
}

/// Whether `report`'s table has a row for `function` of `module` (`  ... function [module]`).
fn has_row(report: &str, function: &str, module: &str) -> bool {
    report
        .lines()
        .any(|l| l.ends_with(&format!(" {function} [{module}]")))
}

/// `record -F 999 ./shift` killed after 1.2 s (issue 41, item 1: it used to leave 0 bytes,
/// nothing being written before a mebibyte was buffered): the file reads to its end, with
/// the warning that says why, and holds the samples of the 1.2 s in the workload's
/// functions; perf reads its header and says, as of a killed `perf record`'s file, that its
/// data size is 0.
#[test]
fn a_killed_recorder_leaves_a_file_that_reads_to_its_last_flush() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("killed-recorder");
    let out = dir.path("out.data");
    // 50% of 8e9 iterations in work_a: seconds of it, however loaded the machine.
    let mut recorder = start_record(&["-F", "999", "-o", s(&out), "--", s(&f.shift), "50", "20"]);
    std::thread::sleep(Duration::from_millis(1200));
    kill_recorder(&mut recorder);

    let len = std::fs::metadata(&out).unwrap().len();
    assert!(len > 0, "the killed recorder left an empty file");
    let report = cpiflame(&["report", s(&out)]);
    let stdout = ok(&report);
    let stderr = String::from_utf8_lossy(&report.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: header says data size 0 (still being written, or the recorder was killed)",
            out.display()
        )),
        "{stderr}"
    );
    // About 1.2 s at 999 Hz on one CPU, less what the last interval and a loaded machine
    // take: samples there are.
    let samples = report_samples(&stdout);
    assert!(samples > 0, "{stdout}");
    assert!(has_row(&stdout, "work_a", "shift"), "{stdout}");
    assert!(has_row(&stdout, "main", "shift"), "{stdout}");

    // perf: the header and attrs read (the event), and the warning perf gives a killed
    // `perf record`'s own file (perf 6.1 processes no record of a file with data size 0,
    // its own included).
    let events = perf_stdout(&["evlist", "-i", s(&out)]);
    assert_eq!(events.trim(), "cpu-clock", "{events}");
    let script = Command::new("perf")
        .args(["script", "-i", s(&out)])
        .output()
        .unwrap();
    let perf_says = String::from_utf8_lossy(&script.stderr);
    assert!(
        perf_says.contains("data size field is 0"),
        "perf script: {perf_says}"
    );
}

/// A folder of finished files plus files a recorder has just started (0 bytes; the header
/// and attrs cut short): `report DIR` reads the finished ones, one warning line naming each
/// file left out (issue 41, item 2).
#[test]
fn a_folder_with_a_file_just_started_reads_without_it() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("killed-folder");
    let live = dir.path("live");
    std::fs::create_dir(&live).unwrap();
    let finished = live.join("perf.data.2026112822000000");
    ok(&cpiflame(&[
        "record",
        "-F",
        "999",
        "-o",
        s(&finished),
        "--",
        s(&f.shift),
        "50",
        "0.5",
    ]));
    let alone = report_samples(&ok(&cpiflame(&["report", s(&finished)])));
    assert!(alone > 0);
    // Started, nothing written yet; and the header written but not all of the attrs (its
    // data size 0, as a recorder writes it until the end).
    let empty = live.join("perf.data");
    std::fs::write(&empty, b"").unwrap();
    let cut = live.join("perf.data.cut");
    let bytes = std::fs::read(&finished).unwrap();
    let mut head = bytes[..150].to_vec();
    head[48..56].fill(0);
    std::fs::write(&cut, head).unwrap();

    let out = cpiflame(&["report", s(&live)]);
    let stdout = ok(&out);
    assert_eq!(report_samples(&stdout), alone, "{stdout}");
    assert!(has_row(&stdout, "work_a", "shift"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for file in [&empty, &cut] {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(&format!("{}:", file.display())))
            .collect();
        assert_eq!(lines.len(), 1, "{}: {stderr}", file.display());
        assert!(lines[0].starts_with("cpiflame: warning: "), "{stderr}");
        assert!(lines[0].ends_with("left out (a file a recorder has just started?)"));
    }

    // A finished file cut short (its header gives its data size) is still an error.
    std::fs::write(&cut, &bytes[..150]).unwrap();
    let out = cpiflame(&["report", s(&live)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("error: {}:", cut.display())),
        "{stderr}"
    );
}

/// `record --switch-output 1s` running: its folder reads while it records (the file being
/// written to where it has got, or left out with a warning the moment it is started), and
/// holds the workload's samples.
#[test]
fn a_live_switch_output_folder_reads_while_recorded() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("killed-live");
    let live = dir.path("live");
    std::fs::create_dir(&live).unwrap();
    let output = live.join("perf.data");
    let mut recorder = start_record(&[
        "--switch-output",
        "1s",
        "-F",
        "999",
        "-o",
        s(&output),
        "--",
        s(&f.shift),
        "100",
        "1000",
    ]);
    // At least one finished file, and the next one started.
    let deadline = Instant::now() + Duration::from_secs(60);
    let count = |dir: &Path| std::fs::read_dir(dir).map_or(0, |d| d.count());
    while (count(&live) < 2 || !output.exists()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let out = cpiflame(&["report", s(&live)]);
    kill_recorder(&mut recorder);
    let stdout = ok(&out);
    assert!(report_samples(&stdout) > 0, "{stdout}");
    assert!(has_row(&stdout, "work_a", "shift"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("error"), "{stderr}");
}
