//! `record --switch-output` and `--max-files`: a recording cut into files named
//! OUT.TIMESTAMP, each read alone by perf and by cpiflame (its own side-band: the fixture's
//! functions are named in every file), together one uninterrupted recording (every sample
//! once, in order per CPU, none lost), the newest N kept, the finished ones whole after the
//! recorder is killed, and bad values refused in one line naming the flag.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{perf_script_samples, perf_stdout, s, sampling_fixtures, Dir};

/// The finished files in `dir` (OUT.TIMESTAMP), by name.
fn finished(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.strip_prefix("out.data.")
                .is_some_and(|t| t.len() == 16 && t.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    files.sort();
    files
}

/// The `dumped FILE (N samples, ...)` lines of a recording's stderr: file and samples.
fn dumped(stderr: &str) -> Vec<(PathBuf, u64)> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("cpiflame: dumped "))
        .map(|l| {
            let (file, rest) = l.split_once(" (").unwrap();
            let n = rest.split_once(" samples").unwrap().0.parse().unwrap();
            (PathBuf::from(file), n)
        })
        .collect()
}

/// The total of the final `wrote ...: N samples` line.
fn total_samples(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("cpiflame: wrote "))
        .unwrap_or_else(|| panic!("no summary in {stderr}"));
    let (_, after) = line.rsplit_once(": ").unwrap();
    after.split_once(" samples").unwrap().0.parse().unwrap()
}

/// (cpu, time in ns) of every sample of `file`, from `perf script`.
fn cpu_times(file: &Path) -> Vec<(u32, u64)> {
    perf_stdout(&["script", "--ns", "-F", "cpu,time", "-i", s(file)])
        .lines()
        .map(|l| {
            let (cpu, time) = l.trim().split_once(']').unwrap();
            let (secs, ns) = time.trim().trim_end_matches(':').split_once('.').unwrap();
            let cpu = cpu.trim_start_matches('[').parse().unwrap();
            (
                cpu,
                secs.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap(),
            )
        })
        .collect()
}

/// Samples of `cpiflame fold PATH` (every line's count) and those of the lines that name
/// `main` calling one of `functions`.
fn fold_counts(path: &Path, functions: &[&str]) -> (u64, u64) {
    let folded = support::ok(&support::cpiflame(&["fold", s(path)]));
    let mut all = 0;
    let mut named = 0;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if functions
            .iter()
            .any(|f| stack.contains(&format!(";main;{f}")))
        {
            named += n;
        }
    }
    (all, named)
}

const FUNCTIONS: [&str; 2] = ["memory_bound", "cpu_bound"];

/// `cpiflame record -F 1000 FLAGS -o DIR/out.data cpu_mem_bound 0.3` (a second of CPU
/// time, `memory_bound` then `cpu_bound`), which must succeed; its stderr.
fn record_by_size(f: &support::Fixtures, dir: &Dir, flags: &[&str]) -> String {
    let data = dir.path("out.data");
    let mut args = vec!["record", "-F", "1000"];
    args.extend(flags);
    args.extend(["-o", s(&data), s(&f.cpu_mem_bound), "0.3"]);
    let out = support::cpiflame(&args);
    support::ok(&out);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Checks each finished file alone (perf script reads it; perf and cpiflame name the
/// fixture's functions from the file's own records) and returns its samples' (cpu, time).
/// The first and last files may hold only the workload's start or exit (a loaded machine
/// can switch there), so only files between them (`edge` false) must have samples in the
/// fixture's functions; every file must name every user frame it has.
fn check_alone(file: &Path, dumped_samples: u64, edge: bool) -> Vec<(u32, u64)> {
    let name = file.display();
    let samples = perf_script_samples(file).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        samples.len() as u64,
        dumped_samples,
        "{name}: perf's samples"
    );
    // A user frame perf cannot name means the file lacks the mapping it is in.
    let named = samples
        .iter()
        .filter(|x| x.user_leaf().is_some_and(|f| !f.is_unknown()))
        .count();
    let in_fixture = samples
        .iter()
        .filter(|x| {
            x.user_leaf()
                .is_some_and(|f| FUNCTIONS.contains(&f.symbol.as_str()))
        })
        .count();
    let with_user = samples.iter().filter(|x| x.user_leaf().is_some()).count();
    assert_eq!(named, with_user, "{name}: user frames perf cannot name");
    assert!(
        edge || in_fixture > 0,
        "{name}: perf names none of {FUNCTIONS:?}"
    );
    if dumped_samples == 0 {
        // The workload's exit, with no sample: cpiflame refuses to draw nothing.
        assert!(edge, "{name}: no samples");
        return Vec::new();
    }
    let (all, ours) = fold_counts(file, &FUNCTIONS);
    assert_eq!(all, dumped_samples, "{name}: cpiflame fold's samples");
    assert!(
        ours * 10 >= in_fixture as u64 * 9,
        "{name}: cpiflame names {ours} samples under main in {FUNCTIONS:?}, perf {in_fixture}"
    );
    let times = cpu_times(file);
    assert_eq!(times.len() as u64, dumped_samples);
    times
}

/// `--switch-output SIZE` on a known workload: three files or more, each read alone by
/// perf and by cpiflame naming the fixture's functions; their samples add up to the
/// recorder's total and to the folder read as one; on every CPU each file's samples come
/// after the previous file's (a batch written twice or into the wrong file would break
/// that), no sample twice, none lost.
#[test]
fn size_switches_give_files_that_each_read_alone() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("switch-size");
    let stderr = record_by_size(f, &dir, &["--switch-output", "96K"]);
    assert!(!stderr.contains("lost"), "{stderr}");
    let files = finished(dir.root());
    let dumped = dumped(&stderr);
    assert!(files.len() >= 3, "{files:?}\n{stderr}");
    assert!(!dir.path("out.data").exists(), "the last file is named too");
    assert_eq!(
        dumped.iter().map(|d| d.0.clone()).collect::<Vec<_>>(),
        files,
        "one dumped line per file, in name order"
    );

    let mut previous: BTreeMap<u32, u64> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut sum = 0;
    for (i, (file, n)) in dumped.iter().enumerate() {
        let times = check_alone(file, *n, i == 0 || i + 1 == dumped.len());
        let mut first: BTreeMap<u32, u64> = BTreeMap::new();
        let mut last: BTreeMap<u32, u64> = BTreeMap::new();
        for &(cpu, t) in &times {
            assert!(
                seen.insert((cpu, t)),
                "{}: sample {cpu}/{t} twice",
                file.display()
            );
            first
                .entry(cpu)
                .and_modify(|x| *x = (*x).min(t))
                .or_insert(t);
            last.entry(cpu)
                .and_modify(|x| *x = (*x).max(t))
                .or_insert(t);
        }
        for (cpu, t) in &first {
            if let Some(before) = previous.get(cpu) {
                assert!(
                    t > before,
                    "{}: CPU {cpu} starts at {t}, before {before}",
                    file.display()
                );
            }
        }
        previous.extend(last);
        sum += n;
    }
    assert_eq!(sum, total_samples(&stderr), "{stderr}");
    let (merged, _) = fold_counts(dir.root(), &FUNCTIONS);
    assert_eq!(merged, sum, "cpiflame fold DIR");
}

/// `--switch-output 1s` over a run of two seconds of CPU time or more: at least two
/// files, and no more than one per second of the run and the last.
#[test]
fn time_switches_follow_the_clock() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("switch-time");
    let started = Instant::now();
    let out = support::cpiflame(&[
        "record",
        "-F",
        "200",
        "--switch-output=1s",
        "-o",
        s(&dir.path("out.data")),
        s(&f.cpu_mem_bound),
        "0.8",
    ]);
    let wall = started.elapsed().as_secs_f64();
    support::ok(&out);
    let files = finished(dir.root());
    assert!(files.len() >= 2, "{files:?}");
    assert!(
        files.len() as f64 <= wall.ceil() + 1.0,
        "{} files in {wall:.1} s",
        files.len()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dumped = dumped(&stderr);
    assert_eq!(dumped.len(), files.len());
    assert_eq!(
        dumped.iter().map(|d| d.1).sum::<u64>(),
        total_samples(&stderr)
    );
}

/// `--max-files 2`: of three files or more, the newest two are left (the last two named,
/// which sort last), the others removed; the summary says so.
#[test]
fn max_files_keeps_the_newest() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("switch-max");
    let stderr = record_by_size(f, &dir, &["--switch-output", "64K", "--max-files", "2"]);
    let dumped = dumped(&stderr);
    assert!(dumped.len() >= 3, "{stderr}");
    let left: Vec<PathBuf> = std::fs::read_dir(dir.root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let files = finished(dir.root());
    assert_eq!(left.len(), 2, "{left:?}");
    let newest: Vec<PathBuf> = dumped[dumped.len() - 2..]
        .iter()
        .map(|d| d.0.clone())
        .collect();
    assert_eq!(files, newest);
    let summary = format!(
        "wrote {} files, 2 kept: {} to {}:",
        dumped.len(),
        newest[0].display(),
        newest[1].display()
    );
    assert!(stderr.contains(&summary), "{stderr}");
    for (i, (file, n)) in dumped[dumped.len() - 2..].iter().enumerate() {
        check_alone(file, *n, i == 1);
    }
}

/// The recorder killed (SIGKILL) after two files were finished: every finished file reads
/// whole (its feature sections, every sample the recorder said it holds, named by perf
/// and cpiflame).
#[test]
fn a_killed_recorder_leaves_the_finished_files_whole() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("switch-kill");
    let mut recorder = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "-F", "1000", "--switch-output", "64K", "-o"])
        .arg(dir.path("out.data"))
        .arg(&f.cpu_mem_bound)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while finished(dir.root()).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::killed::kill_recorder(&mut recorder);
    let mut stderr = String::new();
    use std::io::Read;
    recorder
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let dumped = dumped(&stderr);
    assert!(dumped.len() >= 2, "{stderr}");
    assert_eq!(
        finished(dir.root()),
        dumped.iter().map(|d| d.0.clone()).collect::<Vec<_>>()
    );
    for (i, (file, n)) in dumped.iter().enumerate() {
        check_alone(file, *n, i == 0);
        let header = perf_stdout(&["report", "--header-only", "-i", s(file)]);
        for line in ["# cmdline : ", "# time of last sample : "] {
            assert!(
                header.contains(line),
                "{}: no {line:?} in\n{header}",
                file.display()
            );
        }
    }
}

/// Bad values: one line naming the flag, exit status 2, nothing recorded.
#[test]
fn bad_values_name_the_flag() {
    let dir = Dir::new("switch-bad");
    let out = dir.path("out.data");
    let cases: [(&[&str], &str); 4] = [
        (&["--switch-output", "10X"], "--switch-output 10X: "),
        (
            &["--switch-output=1M", "--max-files", "0"],
            "--max-files 0: ",
        ),
        (
            &["--max-files", "2"],
            "--max-files 2: only with --switch-output",
        ),
        (&["--switch-output", "true"], "--switch-output=signal"),
    ];
    for (flags, said) in cases {
        let mut args = vec!["record", "-o", s(&out)];
        args.extend(flags);
        args.push("true");
        let run: Output = support::cpiflame(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr}");
        assert!(stderr.contains(said), "{flags:?}: {stderr}");
        assert!(!out.exists());
    }
}

/// `-a --off-cpu --switch-output 1s`: a process started before the recording, described
/// from `/proc` at its start only, is named with its function in every file, and every
/// file carries the wakeup tracepoint's format (perf script prints its fields).
#[test]
fn system_wide_files_name_processes_started_before() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("switch-system");
    let mut running = support::start_loop(f, &dir, "loop_rot");
    let out = support::cpiflame(&[
        "record",
        "-a",
        "--off-cpu",
        "-F",
        "200",
        "--switch-output",
        "1s",
        "--duration",
        "3.5",
        "-o",
        s(&dir.path("out.data")),
    ]);
    let _ = running.kill();
    let _ = running.wait();
    support::ok(&out);
    let files = finished(dir.root());
    assert!(files.len() >= 2, "{files:?}");
    for file in &files {
        let folded = support::ok(&support::cpiflame(&["fold", s(file), "--no-kernel"]));
        assert!(
            folded
                .lines()
                .any(|l| l.contains("loop_rot [") && l.contains(";main;work_a ")),
            "{}: loop_rot's work_a not named",
            file.display()
        );
        let text = perf_stdout(&["script", "-F", "event,trace", "-i", s(file)]);
        assert!(
            text.lines()
                .any(|l| l.contains("sched:sched_waking") && l.contains("comm=")),
            "{}: no sched_waking fields in perf script",
            file.display()
        );
    }
}

/// `--switch-output` alone (`signal`, before `--`): a file per SIGUSR2, and the last at the
/// end.
#[test]
fn signal_switches_on_sigusr2() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("switch-signal");
    let data = dir.path("out.data");
    let recorder = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "-F", "200", "--switch-output", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&f.cpu_mem_bound)
        .arg("0.8")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let wait_for = |what: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !what() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(what(), "timed out");
    };
    wait_for(&|| data.exists());
    for n in 1..=2 {
        std::thread::sleep(Duration::from_millis(200));
        let usr2 = Command::new("kill")
            .args(["-USR2", &recorder.id().to_string()])
            .status()
            .unwrap();
        assert!(usr2.success());
        wait_for(&|| finished(dir.root()).len() == n);
    }
    let out = recorder.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let files = finished(dir.root());
    assert_eq!(files.len(), 3, "{stderr}");
    let dumped = dumped(&stderr);
    assert_eq!(
        dumped.iter().map(|d| d.0.clone()).collect::<Vec<_>>(),
        files
    );
    assert_eq!(
        dumped.iter().map(|d| d.1).sum::<u64>(),
        total_samples(&stderr)
    );
}
