//! `record -a` and `record -C LIST` (system-wide): processes started outside cpiflame are
//! recorded by name and function, and perf reads the same file to the same samples; and
//! the other scope flags, `-p` with a list of pids and `-t` with a list of threads.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output};

use support::{s, sampling_fixtures, start_loop, Dir};

fn run(args: &[&str]) -> Output {
    support::cpiflame(args)
}

/// `perf script -F FIELDS` on `data`.
pub(crate) fn perf_script(data: &Path, fields: &str) -> String {
    let out = Command::new("perf")
        .args(["script", "-i", s(data), "-F", fields])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The folded lines of thread `comm` (a sample in kernel space only, folded without kernel
/// frames, is the comm alone) and their samples.
fn folded_of<'a>(folded: &'a str, comm: &str) -> (Vec<&'a str>, u64) {
    let lines: Vec<&str> = folded
        .lines()
        .filter(|l| l.split([';', ' ']).next() == Some(comm))
        .collect();
    let n = lines
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    (lines, n)
}

/// Samples per comm among `pids`, from `perf script -F pid,comm` lines (`comm pid`).
fn perf_counts(text: &str, pids: &[u32]) -> BTreeMap<(u32, String), u64> {
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace().rev();
        let (Some(pid), Some(comm)) = (words.next(), words.next()) else {
            continue;
        };
        // Only the pids asked about count: another process's line may end otherwise (a
        // sample of pid -1, a comm perf prints with spaces).
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pids.contains(&pid) {
            *counts.entry((pid, comm.to_string())).or_insert(0) += 1;
        }
    }
    counts
}

/// Two processes started before the recording, named by cpiflame (their comm and their
/// function in `fold`) as by perf (`perf script` on the same file: the same pids and comms,
/// the same number of samples each), whose names come from the COMM records synthesized
/// from /proc.
#[test]
fn two_processes_started_outside_are_named() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("system-wide");
    let data = dir.path("out.data");
    let mut loops = [
        start_loop(f, &dir, "loop_one"),
        start_loop(f, &dir, "loop_two"),
    ];
    let out = run(&["record", "-a", "--duration", "1", "-o", s(&data)]);
    for l in &mut loops {
        let _ = l.kill();
        let _ = l.wait();
    }
    support::ok(&out);
    let pids: Vec<u32> = loops.iter().map(Child::id).collect();

    let theirs = perf_counts(&perf_script(&data, "comm,pid"), &pids);
    let names: Vec<(u32, String)> = theirs.keys().cloned().collect();
    assert_eq!(
        names,
        [(pids[0], "loop_one".into()), (pids[1], "loop_two".into())],
        "perf script's pids and comms"
    );

    let folded = support::ok(&run(&[
        "fold",
        s(&data),
        "--no-kernel",
        "--group-by",
        "comm",
    ]));
    for (i, name) in ["loop_one", "loop_two"].iter().enumerate() {
        let (lines, ours) = folded_of(&folded, name);
        assert_eq!(
            ours,
            theirs[&(pids[i], name.to_string())],
            "{name}: {lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains(";work_a")),
            "{name}'s function: {lines:?}"
        );
    }
    // The file's command line carries the flags, as for any recording.
    let header = Command::new("perf")
        .args(["report", "--header-only", "-i", s(&data)])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&header.stdout).contains("record -a --duration 1"));
}

/// `-C 0`: every sample was taken on CPU 0 (`perf script -F cpu`), and there are some.
#[test]
fn cpu_list_keeps_its_cpus() {
    if sampling_fixtures().is_none() {
        return;
    }
    let dir = Dir::new("cpu-list");
    let data = dir.path("out.data");
    support::ok(&run(&[
        "record",
        "-C",
        "0",
        "--duration",
        "0.5",
        "-o",
        s(&data),
    ]));
    let cpus = perf_script(&data, "cpu");
    assert!(cpus.lines().count() > 0);
    for line in cpus.lines() {
        assert_eq!(line.trim(), "[000]");
    }
}

/// An unknown CPU, and -p with -a, are one error line each (exit status 2), and no file.
#[test]
fn bad_scope_flags_are_one_line() {
    let dir = Dir::new("scope-errors");
    let data = dir.path("out.data");
    for (args, says) in [
        (vec!["-C", "4095"], "-C 4095: CPU 4095 is not online"),
        (vec!["-C", "1-0"], "-C 1-0: not a CPU list"),
        (vec!["-a", "-p", "1"], "-p/-t and -a/-C exclude each other"),
        (vec!["-p", "1,x"], "-p 1,x: expected a comma list of ids"),
    ] {
        support::refused_in_one_line(&data, &args, says);
    }
}

/// `-p` with a list: both processes recorded (and named), nothing else.
#[test]
fn a_pid_list_records_those_processes() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("pid-list");
    let data = dir.path("out.data");
    let mut loops = [
        start_loop(f, &dir, "loop_one"),
        start_loop(f, &dir, "loop_two"),
    ];
    let pids: Vec<u32> = loops.iter().map(Child::id).collect();
    let list = format!("{},{}", pids[0], pids[1]);
    let out = run(&["record", "-p", &list, "--duration", "0.5", "-o", s(&data)]);
    for l in &mut loops {
        let _ = l.kill();
        let _ = l.wait();
    }
    support::ok(&out);
    let text = perf_script(&data, "comm,pid");
    let theirs = perf_counts(&text, &pids);
    let names: Vec<(u32, String)> = theirs.keys().cloned().collect();
    assert_eq!(
        names,
        [(pids[0], "loop_one".into()), (pids[1], "loop_two".into())]
    );
    let all: u64 = theirs.values().sum();
    assert_eq!(all, text.lines().count() as u64, "samples of other pids");
}

/// `-t TID`: the samples are that thread's only, though its process has others running.
#[test]
fn a_tid_list_records_those_threads_only() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("tid-list");
    let data = dir.path("out.data");
    let mut target = Command::new(&f.threads).arg("3").spawn().unwrap();
    let task = format!("/proc/{}/task", target.id());
    // The thread named `heavy`, once the program has started it.
    let heavy = loop {
        let found = std::fs::read_dir(&task).ok().and_then(|d| {
            d.filter_map(Result::ok).find_map(|e| {
                let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
                (comm.trim() == "heavy").then(|| e.file_name().to_string_lossy().into_owned())
            })
        });
        match found {
            Some(tid) => break tid,
            None => std::thread::yield_now(),
        }
    };
    let out = run(&["record", "-t", &heavy, "--duration", "0.5", "-o", s(&data)]);
    let _ = target.kill();
    let _ = target.wait();
    support::ok(&out);
    let tids = perf_script(&data, "tid");
    assert!(tids.lines().count() > 0);
    for line in tids.lines() {
        assert_eq!(line.trim(), heavy);
    }
    let folded = support::ok(&run(&[
        "fold",
        s(&data),
        "--no-kernel",
        "--group-by",
        "comm",
    ]));
    assert!(folded.lines().all(|l| l.starts_with("heavy;")), "{folded}");
}

/// `-a -- COMMAND`: the recording ends when the command exits, cpiflame exits with its
/// status, and the command, started after the events were enabled, is named by the kernel's
/// own COMM records (perf script and fold agree).
#[test]
fn all_cpus_until_the_command_exits() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("all-cpus-command");
    let data = dir.path("out.data");
    let script = format!("{} 100 0.5; exit 3", s(&f.shift));
    let out = run(&["record", "-a", "-o", s(&data), "--", "sh", "-c", &script]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let comms = perf_script(&data, "comm");
    let theirs = comms.lines().filter(|l| l.trim() == "shift").count() as u64;
    assert!(theirs > 0, "no samples of the command");
    let folded = support::ok(&run(&[
        "fold",
        s(&data),
        "--no-kernel",
        "--group-by",
        "comm",
    ]));
    let (lines, ours) = folded_of(&folded, "shift");
    assert_eq!(ours, theirs, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains(";work_a")), "{lines:?}");
}
