//! `cpiflame record` on real processes, with software events (this machine has no PMU):
//! threads, forks, exit statuses, signals, attach mode, a killed recorder; files checked with
//! `perf script` and with cpiflame's own reader and folder.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cpiflame_perf_data::{PerfData, RecordKind};
use support::{s, sampling_fixtures, Dir};

fn cpiflame() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
}

fn run(args: &[&str]) -> Output {
    cpiflame().args(args).output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "cpiflame failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Samples per (event, tid) as cpiflame's reader sees them.
fn our_counts(data: &Path) -> BTreeMap<(String, i32), u64> {
    let file = PerfData::open(data).unwrap();
    let mut counts = BTreeMap::new();
    for r in file.records() {
        if let RecordKind::Sample(sm) = r.unwrap().kind {
            let name = file.attrs[sm.attr].name.clone().unwrap();
            *counts.entry((name, sm.tid.unwrap())).or_insert(0) += 1;
        }
    }
    counts
}

/// Samples per (event, tid) as `perf script` sees them.
fn perf_counts(data: &Path) -> BTreeMap<(String, i32), u64> {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,event", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = line.split_whitespace();
        let (Some(tid), Some(event)) = (w.next(), w.next()) else {
            continue;
        };
        *counts
            .entry((
                event.trim_end_matches(':').to_string(),
                tid.parse().unwrap(),
            ))
            .or_insert(0) += 1;
    }
    counts
}

/// Samples per leaf function of the folded output of one event (kind annotations `_[k]`,
/// `_[i]` stripped, as FlameGraph shows names).
fn leaf_counts(folded: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let leaf = stack.rsplit(';').next().unwrap();
        let leaf = leaf
            .strip_suffix("_[k]")
            .or_else(|| leaf.strip_suffix("_[i]"))
            .unwrap_or(leaf)
            .to_string();
        *m.entry(leaf).or_insert(0) += n.parse::<u64>().unwrap();
    }
    m
}

#[test]
fn threads_are_all_recorded_and_perf_script_reads_the_same_samples() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("threads");
    let data = dir.path("out.data");
    let out = run(&["record", "-o", s(&data), s(&f.threads), "0.3"]);
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("wrote"), "{stderr}");
    let ours = our_counts(&data);
    assert_eq!(
        ours,
        perf_counts(&data),
        "perf script sees the same samples"
    );
    // main, heavy, light, recurse: four threads, each sampled.
    assert!(ours.len() >= 4, "{ours:?}");
    // perf report reads it too, with the same total.
    let report = Command::new("perf")
        .args(["report", "--stdio", "--sort", "comm", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let total: u64 = ours.values().sum();
    let text = String::from_utf8_lossy(&report.stdout);
    // perf rounds the sample count ("2K"); its event count is exact: samples x period
    // (cpu-clock every 250 us by default without a PMU).
    assert!(
        text.contains(&format!("# Event count (approx.): {}", total * 250_000)),
        "{total} samples: {text}"
    );

    // The workload's functions, in the proportions it spends in them (fixtures/README.md:
    // worker_heavy does 3x the work of worker_light; CPU time per unit of work varies
    // between threads on these shared vCPUs, so the bounds are loose (see support_selftest).
    let folded = ok(&run(&["fold", s(&data), "--event", "cpu-clock"]));
    let leaves = leaf_counts(&folded);
    let heavy = leaves["worker_heavy"] as f64;
    let light = leaves["worker_light"] as f64;
    assert!(
        (1.5..6.0).contains(&(heavy / light)),
        "heavy/light = {}",
        heavy / light
    );
    for f in ["recurse_leaf", "inline_helper"] {
        assert!(
            leaves.get(f).copied().unwrap_or(0) > 0,
            "{f} sampled: {leaves:?}"
        );
    }
    let svg = ok(&run(&["render", s(&data)]));
    assert!(
        svg.contains("worker_heavy") && svg.contains("no PMU"),
        "labelled cpu-clock-only graph"
    );
}

#[test]
fn forked_children_are_followed() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("forks");
    let data = dir.path("out.data");
    ok(&run(&["record", "-o", s(&data), s(&f.forks), "0.2"]));
    let folded = ok(&run(&["fold", s(&data), "--pid", "--no-kernel"]));
    let mut child_pids = std::collections::BTreeSet::new();
    let mut parent = 0;
    for line in folded.lines() {
        let root = line.split(';').next().unwrap();
        if line.contains(";child_work ") {
            child_pids.insert(root.to_string());
        }
        if line.contains(";parent_work ") {
            parent += 1;
        }
    }
    assert_eq!(
        child_pids.len(),
        3,
        "three children sampled: {child_pids:?}"
    );
    assert!(parent > 0);
}

#[test]
fn exit_status_is_the_commands() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("status");
    let data = dir.path("out.data");
    let code = |args: &[&str]| run(args).status.code();
    assert_eq!(
        code(&["record", "-o", s(&data), s(&f.forks), "0.02", "exit7"]),
        Some(7)
    );
    // abort(): SIGABRT (6) gives 128 + 6, and the file is complete.
    assert_eq!(
        code(&["record", "-o", s(&data), s(&f.forks), "0.02", "abort"]),
        Some(134)
    );
    assert!(ok(&run(&["fold", s(&data), "--no-kernel"])).contains("parent_work"));
    // A command that cannot run.
    let out = run(&["record", "-o", s(&data), "--", "/nonexistent/app", "--flag"]);
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot execute /nonexistent/app"), "{err}");
    // The previous good recording was kept as out.data.old.
    assert!(dir.path("out.data.old").exists());
}

/// Regression (issue 21, item 12): `record --some-typo ./app` ran `--some-typo` as the
/// command ("cannot execute --some-typo"). An unknown flag before the command is an error
/// naming it, exit status 2, and nothing is run or written. Issue 41, item 4: in one line,
/// without clap's tip to pass `-- --some-typo` (which would run a command of that name).
#[test]
fn an_unknown_flag_before_the_command_is_an_error_naming_it() {
    let dir = Dir::new("typo");
    let data = dir.path("out.data");
    let out = run(&["record", "-o", s(&data), "--some-typo", "./app"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "cpiflame record: error: unexpected argument '--some-typo' found\n"
    );
    assert!(!data.exists());
    // stat parses its command the same way.
    let out = run(&["stat", "--some-typo", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "cpiflame stat: error: unexpected argument '--some-typo' found\n"
    );
}

/// Regression (issue 41, item 4): clap's errors were 3 to 6 lines (a `tip:`, a `Usage:`
/// line showing `--output <FILE>` as if required, "For more information"). Each is one line
/// naming the flag (a did-you-mean kept), exit status 2, nothing on stdout; `--help` and
/// `--version` still print to stdout with exit status 0.
#[test]
fn argument_errors_are_one_line_naming_the_flag() {
    for (args, want) in [
        (
            &["record", "-F", "x", "true"][..],
            "cpiflame record: error: invalid value 'x' for '--freq <HZ>': invalid digit found in string",
        ),
        (
            &["record", "--output"],
            "cpiflame record: error: a value is required for '--output <FILE>' but none was supplied",
        ),
        (
            &["record", "--fre", "10", "true"],
            "cpiflame record: error: unexpected argument '--fre' found (did you mean '--freq'?)",
        ),
        (
            &["record", "--mem", "-e", "cpu-clock", "true"],
            "cpiflame record: error: the argument '--mem' cannot be used with '--event <SPECS>'",
        ),
        (
            &["stat"],
            "cpiflame stat: error: the following required arguments were not provided: <COMMAND>...",
        ),
        (
            &["fold", "--group-by", "pids", "x"],
            "cpiflame fold: error: invalid value 'pids' for '--group-by <HOW>': unknown grouping \
             (groupings: cgroup, process, thread, comm)",
        ),
        (
            &["frobnicate"],
            "cpiflame: error: unrecognized subcommand 'frobnicate'",
        ),
    ] {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr, format!("{want}\n"), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let help = run(&["record", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: cpiflame record [OPTIONS]"));
    assert!(help.stderr.is_empty());
    let version = run(&["--version"]);
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("cpiflame {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// Regression (issue 41, item 6): `record -F 0` and `-c 0` wrote a file of 0 samples with
/// exit status 0 (perf refuses them); `-p` of a process that is not there said "No such
/// file or directory"; `record` alone did not mention -a/-C. Each is one error line, exit
/// status 2, and no file.
#[test]
fn rates_of_zero_missing_processes_and_nothing_to_record_are_refused() {
    let dir = Dir::new("refused-41");
    let data = dir.path("out.data");
    support::refused_in_one_line(
        &data,
        &["-F", "0", "true"],
        "cpiflame: error: -F 0: a frequency of 0 samples nothing",
    );
    support::refused_in_one_line(
        &data,
        &["-c", "0", "true"],
        "cpiflame: error: -c 0: a period of 0 events samples nothing",
    );
    support::refused_in_one_line(
        &data,
        &[],
        "or -a (every CPU) / -C LIST (these CPUs) to record the whole system",
    );
    // A pid no process has: the highest one not in /proc.
    let pid_max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = (2..pid_max)
        .rev()
        .find(|p| !Path::new(&format!("/proc/{p}")).exists())
        .unwrap()
        .to_string();
    for (flag, what) in [("-p", "process"), ("-t", "thread")] {
        let out = run(&["record", flag, &gone, "-o", s(&data)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(
            errors,
            [format!("cpiflame: error: process {gone}: no such {what}")],
            "{stderr}"
        );
        assert!(!data.exists());
    }
}

/// Regression (issue 41, item 7): `record --duration N CMD` exited 130 after the planned
/// stop (the command got SIGINT from the recorder), failing a CI step. When the recorder
/// stopped the command, the exit status is 0; a command that ends by itself before
/// `--duration` gives its own status, a SIGINT of its own included.
#[test]
fn a_stop_at_duration_exits_0_and_a_command_that_ends_first_its_own_status() {
    let Some(_) = sampling_fixtures() else { return };
    let dir = Dir::new("duration-status");
    let data = dir.path("out.data");
    let start = Instant::now();
    // A command far longer than any machine's delay: the recorder stopped it if it returns
    // well before the command would have ended.
    let out = run(&[
        "record",
        "--duration",
        "0.3",
        "-o",
        s(&data),
        "sleep",
        "600",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(start.elapsed() < Duration::from_secs(300));
    assert!(PerfData::open(&data).is_ok());
    for (script, status) in [("exit 3", 3), ("kill -INT $$", 130)] {
        let out = run(&[
            "record",
            "--duration",
            "20",
            "-o",
            s(&data),
            "sh",
            "-c",
            script,
        ]);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Regression (found with issue 41): an argument of the command that is not UTF-8 made
/// `record` panic (`std::env::args` for the file's cmdline). It is recorded; the cmdline
/// header has it with U+FFFD, as perf's `--header-only` prints it.
#[test]
fn a_command_argument_that_is_not_utf8_is_recorded() {
    use std::os::unix::ffi::OsStrExt;
    let Some(_) = sampling_fixtures() else { return };
    let dir = Dir::new("not-utf8");
    let data = dir.path("out.data");
    let odd = std::ffi::OsStr::from_bytes(b"\xff");
    let out = cpiflame()
        .args(["record", "-o", s(&data), "true"])
        .arg(odd)
        .output()
        .unwrap();
    ok(&out);
    let header = Command::new("perf")
        .args(["report", "--header-only", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let header = String::from_utf8_lossy(&header.stdout);
    assert!(header.contains("record -o"), "{header}");
    assert!(header.contains("true \u{fffd}"), "{header}");
}

/// Flags after the command are the command's, cpiflame's own included (`-o`).
#[test]
fn flags_after_the_command_belong_to_the_command() {
    let Some(_) = sampling_fixtures() else { return };
    let dir = Dir::new("app-flags");
    let data = dir.path("out.data");
    // The shell exits 5 only when it was given exactly `--app-flag -o x` as $1 and $2.
    let out = run(&[
        "record",
        "-o",
        s(&data),
        "/bin/sh",
        "-c",
        r#"[ "$1" = --app-flag ] && [ "$2" = -o ] && [ "$3" = x ] && exit 5; exit 1"#,
        "sh",
        "--app-flag",
        "-o",
        "x",
    ]);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(data.exists());
    assert!(!dir.path("x").exists());
}

/// `--` lets a command whose name starts with `-` be recorded.
#[test]
fn a_command_named_like_a_flag_after_a_double_dash() {
    let Some(_) = sampling_fixtures() else { return };
    let dir = Dir::new("weird-name");
    let program = dir.path("--weird-named-program");
    std::fs::write(&program, "#!/bin/sh\nexit 6\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path("out.data");
    let path = format!(
        "{}:{}",
        s(&dir.0),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = cpiflame()
        .args(["record", "-o", s(&data), "--", "--weird-named-program"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(data.exists());
}

#[test]
fn two_software_events_as_stalls_and_cycles() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("dual");
    let data = dir.path("out.data");
    ok(&run(&[
        "record",
        "--stalls",
        "task-clock",
        "--cycles",
        "cpu-clock",
        "-o",
        s(&data),
        s(&f.threads),
        "0.2",
    ]));
    // The roles chosen at record time carry over to fold and render.
    let folded = ok(&run(&["fold", s(&data), "--no-kernel"]));
    let line = folded
        .lines()
        .find(|l| l.contains(";worker_heavy "))
        .unwrap();
    let counts: Vec<u64> = line
        .rsplitn(3, ' ')
        .take(2)
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(counts.iter().all(|&n| n > 0), "{line}");
    let svg = ok(&run(&["render", s(&data)]));
    assert!(svg.contains("(event task-clock)") && svg.contains("(event cpu-clock)"));
}

#[test]
fn attaches_to_a_running_process() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("attach");
    let data = dir.path("out.data");
    let mut target = Command::new(&f.threads).arg("3").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = target.id().to_string();
    let out = run(&["record", "-p", &pid, "--duration", "0.5", "-o", s(&data)]);
    let _ = target.kill();
    let _ = target.wait();
    ok(&out);
    let folded = ok(&run(&[
        "fold",
        s(&data),
        "--no-kernel",
        "--event",
        "cpu-clock",
    ]));
    let leaves = leaf_counts(&folded);
    assert!(
        leaves.get("worker_heavy").copied().unwrap_or(0) > 0,
        "{folded}"
    );
    // Thread names come from /proc (synthesized COMM records).
    assert!(folded.lines().any(|l| l.starts_with("heavy;")), "{folded}");
}

#[test]
fn ctrl_c_is_forwarded_and_the_file_is_complete() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("sigint");
    let data = dir.path("out.data");
    let child = cpiflame()
        // Far longer than the wait below: the workload is still running when Ctrl-C comes.
        .args(["record", "-o", s(&data), s(&f.threads), "60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it is recording (its file has records), then press Ctrl-C.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10)
        && std::fs::metadata(&data).map(|m| m.len()).unwrap_or(0) < 64 * 1024
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc_kill(child.id() as i32, 2) };
    let out = child.wait_with_output().unwrap();
    // The workload died of the forwarded SIGINT: 128 + 2.
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(our_counts(&data), perf_counts(&data));
}

#[test]
fn a_killed_recorder_leaves_a_file_that_renders() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("killed");
    let data = dir.path("out.data");
    let mut child = cpiflame()
        .args(["record", "-o", s(&data), s(&f.threads), "3"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5)
        && std::fs::metadata(&data).map(|m| m.len()).unwrap_or(0) < 300_000
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    // The recorded workload outlives its recorder: note it now to end it afterwards (other
    // tests run the same binary at the same time, so not by name).
    let workload = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
        .unwrap_or_default();
    child.kill().unwrap();
    let _ = child.wait();
    for pid in workload.split_whitespace() {
        // SAFETY: SIGKILL to the workload we started.
        unsafe { libc_kill(pid.parse().unwrap(), 9) };
    }
    let out = run(&["fold", s(&data), "--event", "cpu-clock"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("data size 0"), "{err}");
    let leaves = leaf_counts(&ok(&out));
    assert!(leaves.values().sum::<u64>() > 0);
    assert!(ok(&run(&["render", s(&data)])).contains("<svg"));
}

#[test]
fn bad_flags_and_events_are_one_clear_error() {
    let Some(_) = sampling_fixtures() else { return };
    let check = |args: &[&str], needle: &str| {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    check(
        &["record", "-e", "cpu-clok", "true"],
        "did you mean cpu-clock",
    );
    check(
        &["record", "--call-graph", "dwarf,7", "true"],
        "--call-graph dwarf,7",
    );
    check(
        &["record", "--stalls", "task-clock", "true"],
        "--stalls and --cycles go together",
    );
    check(&["record"], "nothing to record");
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// `record --topdown` opens what `list --json` says this machine's top-down group is; where
/// there is none (this VM: no core PMU) it refuses with `list`'s reason as its one error
/// line, with `-a`, `-p`, `--off-cpu` and `--td-level 2` too, and writes no file: never a
/// silent fallback.
#[test]
fn record_topdown_opens_lists_group_or_refuses_with_its_reason() {
    let list: serde_json::Value = serde_json::from_str(&ok(&run(&["list", "--json"]))).unwrap();
    let dir = Dir::new("record-topdown");
    let out = dir.0.join("td.data");
    let out_s = out.to_str().unwrap();
    let base = ["record", "--topdown", "-o", out_s];
    let runs: [&[&str]; 5] = [
        &["--", "true"],
        &["--td-level", "2", "--", "true"],
        &["-a", "--duration", "0.2", "--", "true"],
        &["--off-cpu", "--", "true"],
        &["-p", "1", "--duration", "0.2"],
    ];
    match list["topdown"].as_object() {
        None => {
            let why = list["topdown_why"].as_str().unwrap();
            for extra in runs {
                let r = run(&[&base[..], extra].concat());
                let err = String::from_utf8_lossy(&r.stderr);
                assert!(!r.status.success(), "{extra:?}: {err}");
                assert_eq!(err.trim_end(), format!("cpiflame: error: --topdown: {why}"));
                assert!(!out.exists(), "{extra:?}");
            }
        }
        // A machine with a PMU (not this VM: untested here): the file has the group's events.
        Some(t) => {
            ok(&run(&[&base[..], runs[0]].concat()));
            let evlist = Command::new("perf")
                .args(["evlist", "-i", out_s])
                .output()
                .unwrap();
            let n = String::from_utf8_lossy(&evlist.stdout).lines().count();
            assert_eq!(n, t["events"].as_array().unwrap().len());
        }
    }
}

/// The nice value in `/proc/PID/stat` text (field 19, counted after the command name's
/// closing parenthesis, which may hold spaces).
fn nice_of_stat(stat: &str) -> i32 {
    let after = &stat[stat.rfind(')').expect("a stat line") + 1..];
    after.split_whitespace().nth(16).unwrap().parse().unwrap()
}

/// As root the recorder raises its own priority after it forks the command (which keeps
/// its own): by 20 nice levels when it records a command, by 10 system-wide, where the
/// other programs are what is measured (docs/verification.md, "Keeping up"). The oracle is
/// the kernel's nice value of the recorder, read by the recorded command from
/// `/proc/PPID/stat`, and the command's own.
#[test]
fn the_recorder_raises_itself_by_twenty_levels_for_a_command_and_ten_system_wide() {
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("only root may raise the recorder's priority");
        return;
    }
    let dir = Dir::new("priority");
    let data = dir.path("out.data");
    let own = nice_of_stat(&std::fs::read_to_string("/proc/self/stat").unwrap());
    let script = "cat /proc/$PPID/stat; cat /proc/$$/stat";
    for (system_wide, levels) in [(false, 20), (true, 10)] {
        let mut args = vec!["record", "-o", s(&data)];
        if system_wide {
            args.push("-a");
        }
        args.extend(["--", "sh", "-c", script]);
        let stdout = ok(&run(&args));
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        assert!(lines[0].contains("(cpiflame)"), "the parent: {}", lines[0]);
        let (recorder, command) = (nice_of_stat(lines[0]), nice_of_stat(lines[1]));
        assert_eq!(
            recorder,
            (own - levels).max(-20),
            "recorder (system-wide: {system_wide})"
        );
        assert_eq!(command, own, "the command keeps its priority");
    }
}
