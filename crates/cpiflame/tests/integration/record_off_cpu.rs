//! `record --off-cpu`, read back by `perf script --show-switch-events` (the oracle: perf's own
//! reading of the switch records, of the context-switches samples and of the sched_waking
//! tracepoint's raw fields, which it prints only from the file's tracing data). The workloads
//! are `fixtures/workloads/pingpong.c`'s, whose switches are known by construction: two
//! threads handing a token over pipes (every switch-out has its switch sample just before
//! it), two spinning threads pinned to one CPU (every switch-out of theirs preempted), and a
//! thread blocked N times and woken by another recorded thread (N wakeups of it).
//! Every `perf script` run must exit 0 with nothing on stderr.
//!
//! `host_changing_an_unprivileged_off_cpu_recording_goes_without_wakeups_and_says_so` records
//! as a test user under kernel.perf_event_paranoid 2 (root only; see `faults.rs`).

use crate::faults::{test_user, Paranoid};
use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cpiflame_perf_data::abi::attr_type;
use cpiflame_perf_data::PerfData;
use support::{cpiflame, ok, perf_works, s, shared_fixtures, Dir};

/// The mark `record --off-cpu` leaves in the command line (`cpiflame_record::offcpu`).
const OFF_CPU_MARK: &str = "[cpiflame: off-cpu]";

/// One line of `perf script --show-switch-events` (callchain lines left out).
#[derive(Clone, Debug, PartialEq)]
struct Line {
    tid: i32,
    cpu: u32,
    what: What,
}

#[derive(Clone, Debug, PartialEq)]
enum What {
    /// A context-switches sample.
    Switches,
    /// A sched:sched_waking sample waking `pid`.
    Waking { pid: i32 },
    /// PERF_RECORD_SWITCH OUT, preempted or not.
    Out { preempt: bool },
    /// PERF_RECORD_SWITCH IN.
    In,
    /// Any other sample (the on-CPU event).
    Other,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parses perf script's default output: `COMM TID [CPU] TIME: ...` per record.
fn parse(script: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    for line in script.lines() {
        if line.starts_with('\t') || line.trim().is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words
            .iter()
            .position(|w| w.starts_with('[') && w.ends_with(']'))
        else {
            panic!("no [CPU] in {line:?}");
        };
        let tid = words[at - 1].parse().unwrap_or_else(|_| panic!("{line:?}"));
        let cpu = words[at].trim_matches(['[', ']']).parse().unwrap();
        let rest = &words[at + 2..];
        let what = match rest {
            ["PERF_RECORD_SWITCH", "OUT", flags @ ..] => What::Out {
                preempt: flags.contains(&"preempt"),
            },
            ["PERF_RECORD_SWITCH", "IN", ..] => What::In,
            [.., "context-switches:"] => What::Switches,
            ["sched:sched_waking:", fields @ ..] => What::Waking {
                pid: fields
                    .iter()
                    .find_map(|f| f.strip_prefix("pid="))
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| panic!("no pid= in {line:?}")),
            },
            _ => What::Other,
        };
        lines.push(Line { tid, cpu, what });
    }
    lines
}

/// `perf script --show-switch-events` of `data`, which must exit 0 with an empty stderr.
fn script(data: &Path) -> Vec<Line> {
    let out = Command::new("perf")
        .args(["script", "-f", "--show-switch-events", "-i"])
        .arg(data)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "perf script: {stderr}");
    assert_eq!(stderr, "", "perf script warned");
    parse(&text(&out.stdout))
}

/// The recorded command's thread: the first in the file but for wakeups, which the tasks
/// that made them (any on the machine: the recorder starting the command, an interrupt's)
/// took.
fn command_tid(lines: &[Line]) -> i32 {
    lines
        .iter()
        .find(|l| !matches!(l.what, What::Waking { .. }))
        .expect("a record of the command")
        .tid
}

/// `cpiflame record --off-cpu -o DIR/NAME.data -- pingpong ARGS`; its stderr (which must not
/// report lost records).
fn record(dir: &Dir, name: &str, args: &[&str]) -> Option<(PathBuf, String)> {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return None;
    }
    let f = shared_fixtures().expect("fixtures build");
    let data = dir.path(&format!("{name}.data"));
    let pingpong = f.dir.join("pingpong");
    // Rings of 32 MiB a CPU and 2 KiB stack copies: every record of these short runs fits in
    // the ring even if the recorder never drained it, so none is lost however loaded the
    // machine is (what the tests check needs every record).
    let mut argv = vec![
        "record",
        "--off-cpu",
        "-m",
        "8192",
        "--call-graph",
        "dwarf,2048",
        "-o",
        s(&data),
        "--",
        s(&pingpong),
    ];
    argv.extend_from_slice(args);
    let out = cpiflame(&argv);
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("lost"), "{stderr}");
    Some((data, stderr))
}

/// Every switch-out has the context-switches sample of the same thread just before it on its
/// CPU (the kernel counts the switch, then writes the record, with interrupts off), and the
/// file keeps the mark, the attrs asked for and perf-readable tracing data.
#[test]
fn every_switch_out_follows_its_switch_sample() {
    let dir = Dir::new("offcpu-pingpong");
    let Some((data, stderr)) = record(&dir, "pingpong", &["2000"]) else {
        return;
    };
    assert!(!stderr.contains("not recorded"), "{stderr}");
    let lines = script(&data);
    let mut outs = 0;
    let mut samples = 0;
    for (k, line) in lines.iter().enumerate() {
        match line.what {
            What::Switches => samples += 1,
            What::Out { .. } => {
                outs += 1;
                let before = lines[..k]
                    .iter()
                    .rev()
                    .find(|l| l.cpu == line.cpu && !matches!(l.what, What::Waking { .. }));
                assert_eq!(
                    before.map(|l| (&l.what, l.tid)),
                    Some((&What::Switches, line.tid)),
                    "line {k}: {line:?}"
                );
            }
            _ => {}
        }
    }
    // Most of the 2000 round trips block each thread once (a reply that comes before the
    // thread blocks saves it a switch, so not all).
    assert!(outs >= 2000, "{outs} switch-outs");
    assert_eq!(samples, outs, "one switch sample per switch-out");

    let file = PerfData::open(&data).unwrap();
    assert!(file.meta.cmdline.iter().any(|w| w == OFF_CPU_MARK));
    let names: Vec<String> = file.attrs.iter().map(|a| a.display_name()).collect();
    assert!(names.iter().any(|n| n == "context-switches"), "{names:?}");
    assert!(names.iter().any(|n| n == "sched:sched_waking"), "{names:?}");
    let switches = file
        .attrs
        .iter()
        .find(|a| a.display_name() == "context-switches")
        .unwrap();
    assert_eq!(switches.sample_period_or_freq, 1);
    assert_ne!(
        switches.flags & cpiflame_perf_data::attr_flags::CONTEXT_SWITCH,
        0
    );
}

/// Two threads spinning on one CPU are only ever preempted: each has switch-outs, all of
/// them (once spinning) flagged preempt.
#[test]
fn spinning_threads_on_one_cpu_are_switched_out_preempted() {
    let dir = Dir::new("offcpu-contend");
    let Some((data, _)) = record(&dir, "contend", &["contend", "300"]) else {
        return;
    };
    let lines = script(&data);
    // The command's own thread is the first in the file; the spinners are the others.
    let main = command_tid(&lines);
    let mut per_thread = std::collections::BTreeMap::<i32, (u32, u32)>::new();
    for l in &lines {
        if let What::Out { preempt } = l.what {
            let e = per_thread.entry(l.tid).or_default();
            if preempt {
                e.0 += 1
            } else {
                e.1 += 1
            }
        }
    }
    let spinners: Vec<_> = per_thread.iter().filter(|(&t, _)| t != main).collect();
    assert_eq!(spinners.len(), 2, "{per_thread:?}");
    for (tid, (preempted, _)) in spinners {
        // How often depends on the scheduler's slices and on what else runs on CPU 0 (a
        // loaded machine gives each spinner fewer turns): at least once, as both spin for
        // the whole 300 ms.
        assert!(*preempted >= 1, "thread {tid}: {preempted} preempted");
        // The threads are born on CPU 0 (the main thread pins itself first: a thread that
        // pins itself blocks waiting for its own migration). Once spinning (after its first
        // preempted switch-out, in case its start blocked), it never blocks.
        let after: Vec<bool> = lines
            .iter()
            .filter_map(|l| match l.what {
                What::Out { preempt } if l.tid == *tid => Some(preempt),
                _ => None,
            })
            .skip_while(|&p| !p)
            .collect();
        assert!(after.iter().all(|&p| p), "thread {tid}: {after:?}");
    }
    // The main thread sleeps in nanosleep and join: blocked switch-outs.
    assert!(per_thread
        .get(&main)
        .is_some_and(|&(_, blocked)| blocked >= 1));
}

/// A thread that blocks in read() and is woken each time by another recorded thread has its
/// wakeups in the file: sched:sched_waking samples naming it (`pid=`), taken by its waker,
/// between its blocked switch-out and its next switch-in.
#[test]
fn a_sleeping_thread_s_wakeups_are_recorded() {
    let dir = Dir::new("offcpu-wake");
    let Some((data, _)) = record(&dir, "wake", &["wake", "30"]) else {
        return;
    };
    let lines = script(&data);
    let main = command_tid(&lines);
    let sleeper = lines
        .iter()
        .filter(|l| !matches!(l.what, What::Waking { .. }))
        .map(|l| l.tid)
        .find(|&t| t != main)
        .expect("the sleeping thread is in the file");
    // Every recorded wakeup of it is made by the main thread.
    let wakers: Vec<i32> = lines
        .iter()
        .filter(|l| l.what == What::Waking { pid: sleeper })
        .map(|l| l.tid)
        .collect();
    assert!(wakers.iter().all(|&t| t == main), "{wakers:?}");
    // Each blocked switch-out of the sleeper (in read) is followed by a wakeup of it before
    // its next switch-in. How many times it blocks depends on the load (a write that comes
    // while it is still runnable wakes nobody), and a wakeup racing with the switch-out
    // record on another CPU may be stamped just before it: nine in ten, of at least ten.
    let (mut blocked, mut woken, mut waiting) = (0, 0, false);
    for l in &lines {
        match l.what {
            What::Out { preempt: false } if l.tid == sleeper => {
                blocked += 1;
                waiting = true
            }
            What::Waking { pid } if pid == sleeper && waiting => {
                woken += 1;
                waiting = false
            }
            What::In if l.tid == sleeper => waiting = false,
            _ => {}
        }
    }
    assert!(blocked >= 10, "{blocked} blocked switch-outs");
    assert!(
        woken * 10 >= blocked * 9,
        "{woken} of {blocked} blocked switch-outs followed by a recorded wakeup"
    );
}

/// `--off-cpu` with `-p PID`: attached to a running `pingpong wake`, the file has its switch
/// records and switch samples, perf reads it without a word, and (the attached process's
/// mappings reaching the record-time unwinder) its binary's build id is in the file and its
/// switch samples' stack copies are trimmed to far less than the 2 KiB copied.
#[test]
fn an_attached_process_is_recorded_off_cpu() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("offcpu-attach");
    let data = dir.path("attach.data");
    let pingpong = f.dir.join("pingpong");
    let mut child = Command::new(&pingpong)
        .args(["wake", "100000"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    // Its second thread exists once the first wakeup is done; wait for it, not for a time.
    let tasks = format!("/proc/{pid}/task");
    while std::fs::read_dir(&tasks).map_or(0, |d| d.count()) < 2 {
        std::thread::yield_now();
    }
    let out = cpiflame(&[
        "record",
        "--off-cpu",
        "-m",
        "8192",
        "--call-graph",
        "dwarf,2048",
        "-p",
        &pid,
        "--duration",
        "0.3",
        "-o",
        s(&data),
    ]);
    let _ = child.kill();
    let _ = child.wait();
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("lost"), "{stderr}");
    let lines = script(&data);
    let outs = lines
        .iter()
        .filter(|l| matches!(l.what, What::Out { .. }))
        .count();
    let samples = lines.iter().filter(|l| l.what == What::Switches).count();
    // The events stay enabled after the last drain (the process runs on): a thread's last
    // switch may have its sample in the file and not its record, or the other way round,
    // once per thread (two).
    assert!(
        outs >= 20 && samples.abs_diff(outs) <= 2,
        "{outs} switch-outs, {samples} samples"
    );
    let file = PerfData::open(&data).unwrap();
    let path = pingpong.to_str().unwrap().as_bytes();
    assert!(
        file.meta.build_ids.iter().any(|b| b.path == path),
        "no build id of {}",
        pingpong.display()
    );
    let switches = file
        .attrs
        .iter()
        .position(|a| a.display_name() == "context-switches")
        .unwrap();
    let (mut n, mut bytes) = (0usize, 0usize);
    for r in file.records() {
        if let cpiflame_perf_data::RecordKind::Sample(sm) = r.unwrap().kind {
            if sm.attr == switches {
                n += 1;
                bytes += sm.user_stack.map_or(0, |st| st.data.len());
            }
        }
    }
    assert!(
        n > 0 && bytes / n < 1024,
        "{n} samples, {bytes} stack bytes"
    );
}

/// As a user under kernel.perf_event_paranoid 2: no raw tracepoint data, so no
/// sched:sched_waking, said in one line with what it costs; the switch records are there and
/// perf reads the file.
#[test]
fn host_changing_an_unprivileged_off_cpu_recording_goes_without_wakeups_and_says_so() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return;
    }
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable(
            "needs root: changes kernel.perf_event_paranoid and adds the user cpiflame-test",
        );
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        cpiflame_testkit::unavailable("setpriv (util-linux) is not installed");
        return;
    }
    let (uid, gid) = match test_user() {
        Ok(ids) => ids,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("a second user: {e}"));
            return;
        }
    };
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("offcpu-user");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path("cpiflame");
    let pingpong = dir.path("pingpong");
    for (from, to) in [
        (Path::new(env!("CARGO_BIN_EXE_cpiflame")), &bin),
        (&f.dir.join("pingpong"), &pingpong),
    ] {
        std::fs::copy(from, to).unwrap();
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out_dir = dir.path("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::chown(&out_dir, Some(uid), Some(gid)).unwrap();
    let data = out_dir.join("user.data");
    let saved = match Paranoid::save() {
        Ok(p) => p,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("kernel.perf_event_paranoid: {e}"));
            return;
        }
    };
    saved.set(2).unwrap();
    let out: Output = Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .arg("--clear-groups")
        .arg(&bin)
        .args([
            "record",
            "--off-cpu",
            "-o",
            s(&data),
            "--",
            s(&pingpong),
            "500",
        ])
        .current_dir(&out_dir)
        .output()
        .unwrap();
    drop(saved);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let waking: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("sched:sched_waking"))
        .collect();
    assert_eq!(waking.len(), 1, "{stderr}");
    assert!(
        waking[0].starts_with("cpiflame: --off-cpu: sched:sched_waking not recorded (")
            && waking[0].ends_with("): time after a wakeup waiting for a CPU counts as blocked"),
        "{stderr}"
    );
    assert!(
        stderr.contains("context switches are recorded without the stack"),
        "{stderr}"
    );
    let file = PerfData::open(&data).unwrap();
    assert!(file.attrs.iter().all(|a| a.type_ != attr_type::TRACEPOINT));
    let lines = script(&data);
    // Its rings are small (perf_event_mlock_kb's), so a loaded machine may lose some of the
    // 1000 and more.
    let outs = lines
        .iter()
        .filter(|l| matches!(l.what, What::Out { .. }))
        .count();
    assert!(outs >= 100, "{outs} switch-outs");
    assert!(!lines.iter().any(|l| matches!(l.what, What::Waking { .. })));
}

/// A freshly booted machine has no tracefs mounted. In a mount namespace of its own (so no
/// other test sees the change) with every tracefs unmounted, `record --off-cpu` mounts it as
/// perf does, says nothing about it, and records the wakeups.
#[test]
fn without_tracefs_mounted_the_recorder_mounts_it_and_records_wakeups() {
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: unshare -m, umount and mount of tracefs");
        return;
    }
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("offcpu-fresh");
    let data = dir.path("fresh.data");
    // Unmount every tracefs of the namespace (the debugfs automount with debugfs), check
    // none is left, then record.
    let script = format!(
        "umount -q /sys/kernel/debug/tracing; umount -q /sys/kernel/tracing; umount -q /sys/kernel/debug; \
         if grep -q ' - tracefs ' /proc/self/mountinfo; then echo 'tracefs still mounted' >&2; exit 97; fi; \
         exec {bin} record --off-cpu -m 8192 --call-graph dwarf,2048 -o {data} -- {pingpong} wake 30",
        bin = env!("CARGO_BIN_EXE_cpiflame"),
        data = s(&data),
        pingpong = s(&f.dir.join("pingpong")),
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("tracefs"), "{stderr}");
    assert!(!stderr.contains("not recorded"), "{stderr}");
    let wakeups = script_lines_waking(&data);
    assert!(wakeups >= 10, "{wakeups} sched_waking samples");
}

fn script_lines_waking(data: &Path) -> usize {
    script(data)
        .iter()
        .filter(|l| matches!(l.what, What::Waking { .. }))
        .count()
}

/// Per tid, `cpiflame fold --tid --event COLUMN` of `data` summed (roots `comm-PID/TID`,
/// nanoseconds).
fn fold_by_tid(data: &Path, column: &str) -> std::collections::HashMap<i64, f64> {
    let mut by_tid = std::collections::HashMap::new();
    for line in ok(&cpiflame(&["fold", "--tid", "--event", column, s(data)])).lines() {
        let parsed = line.rsplit_once(' ').and_then(|(stack, count)| {
            let root = stack.split(';').next()?;
            Some((
                root.rsplit_once('/')?.1.parse::<i64>().ok()?,
                count.parse::<f64>().ok()?,
            ))
        });
        let (tid, ns) = parsed.unwrap_or_else(|| panic!("fold --event {column}: {line:?}"));
        *by_tid.entry(tid).or_default() += ns;
    }
    by_tid
}

/// Issue 37, item 3: every wakeup of a recorded thread is in the file, whoever made it, and
/// no other. `pingpong wake 30`'s main thread is started by the recorder and ends its 30
/// nanosleeps woken by its timer: an interrupt, on whatever task was running (a per-task
/// event, as recorded before, saw none of these). Recorded by `cpiflame record --off-cpu` inside `perf sched record -k
/// mono` (every CPU, every task, the same tracepoint on the same clock), the wakeups of each
/// pingpong thread are as many in cpiflame's file as in perf's; cpiflame's file has no
/// wakeup of any other thread. The main thread's runnable time (from each wakeup to its
/// next switch-in) is then what `perf sched timehist` gives it (the sch delays, and the
/// waits after a preempted switch-out), over the same intervals: those after its first
/// switch-out in cpiflame's recording (before it, timehist also saw the held child before
/// its exec).
#[test]
fn every_wakeup_of_a_recorded_thread_is_kept_whoever_made_it() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("offcpu-every-wakeup");
    let (data, sched) = (dir.path("w.data"), dir.path("sched.data"));
    let out = Command::new("perf")
        .args(["sched", "record", "-k", "mono", "-o", s(&sched), "--"])
        .arg(env!("CARGO_BIN_EXE_cpiflame"))
        .args([
            "record",
            "--off-cpu",
            "-m",
            "8192",
            "--call-graph",
            "dwarf,2048",
        ])
        .args([
            "-o",
            s(&data),
            "--",
            s(&f.dir.join("pingpong")),
            "wake",
            "30",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    if !out.status.success() && !data.exists() {
        cpiflame_testkit::unavailable(format!("perf sched record: {stderr}"));
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("lost"), "{stderr}");
    assert!(
        !stderr.contains("--off-cpu: sched:sched_waking"),
        "{stderr}"
    );

    let ours = script(&data);
    let pingpong: std::collections::BTreeSet<i32> = ours
        .iter()
        .filter(|l| matches!(l.what, What::In | What::Out { .. }))
        .map(|l| l.tid)
        .collect();
    assert_eq!(pingpong.len(), 2, "main and sleeper: {pingpong:?}");
    let main = command_tid(&ours);
    let count = |lines: &[Line]| {
        let mut by_wakee = std::collections::BTreeMap::<i32, usize>::new();
        for l in lines {
            if let What::Waking { pid } = l.what {
                *by_wakee.entry(pid).or_default() += 1;
            }
        }
        by_wakee
    };
    let ours_by_wakee = count(&ours);
    let theirs = parse(&perf_script_of(&sched));
    let mut theirs_by_wakee = count(&theirs);
    theirs_by_wakee.retain(|tid, _| pingpong.contains(tid));
    assert_eq!(ours_by_wakee, theirs_by_wakee, "wakeups per woken tid");
    // Those made outside the recording too: the recorder's own start of the command, and the
    // main thread's timers, whose interrupt wakes it on whatever task runs (how many of its
    // 30 nanosleeps end so varies: a run under perf sched record has seen none, a plain one
    // all 30). A per-task event saw none of them.
    let outside = |lines: &[Line]| {
        lines
            .iter()
            .filter(|l| l.what == What::Waking { pid: main } && !pingpong.contains(&l.tid))
            .count()
    };
    let from_outside = outside(&ours);
    assert!(
        from_outside >= 1 && from_outside == outside(&theirs),
        "{from_outside} of the main thread's wakeups made outside the recording, perf saw {}",
        outside(&theirs)
    );
    // The off-CPU flame graph recipe's fields read: every event has an IP, as perf's own.
    let recipe = Command::new("perf")
        .args([
            "script",
            "-F",
            "comm,pid,tid,cpu,time,period,event,ip,sym",
            "-i",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(recipe.status.success(), "{}", text(&recipe.stderr));

    // The wall plan starts the main thread's runnable time at each of these wakeups: its
    // runnable total is what perf's reading of the same file gives, interval by interval
    // (from a preempted switch-out, or from the first wakeup after a blocked one, to the
    // next switch-in), within perf script's microsecond per interval end.
    let ours_runnable = fold_by_tid(&data, cpiflame_profile::wall::RUNNABLE)
        .get(&i64::from(main))
        .copied()
        .unwrap_or(0.0);
    let (perf_runnable, intervals, switch_ins) = runnable_in_script(&data, main);
    assert!(
        (ours_runnable - perf_runnable).abs() <= 2_000.0 * intervals as f64 + 1.0,
        "main thread runnable: cpiflame {ours_runnable} ns, perf script {perf_runnable} ns over {intervals} intervals"
    );

    // And perf sched timehist, from its own records of the same run, over the intervals
    // after the main thread's first switch-out in cpiflame's recording (before it timehist
    // also saw the held child before its exec). Nothing is missing: cpiflame's is at least
    // timehist's (less 5%). It may be more: timehist's switch-in is the sched_switch
    // tracepoint, stamped before the context switch, cpiflame's the switch record, stamped
    // after it, so each switch-in adds the switch's own cost: 5-15 µs in these VMs on a
    // quiet host, 130 µs on average measured under a loaded one (the vCPU's steal time
    // falls between the two stamps too). Allowed as 200 µs a switch-in: a bound on what is
    // added (counting the 30 nanosleeps' 60 ms as runnable would break it), not a measure.
    let first_out = first_switch_out_secs(&data, main);
    let timehist = Command::new("perf")
        .args(["sched", "timehist", "--state", "-i", s(&sched)])
        .output()
        .unwrap();
    assert!(timehist.status.success(), "{}", text(&timehist.stderr));
    let after: String = text(&timehist.stdout)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .and_then(|t| t.parse::<f64>().ok())
                .is_some_and(|t| t > first_out + 5e-6)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let timehist_runnable =
        support::offcpu::timehist_split(&after).unwrap()[&(main as u32)].runnable;
    let slack = timehist_runnable * 0.05 + 200_000.0 * switch_ins as f64;
    assert!(
        timehist_runnable > 0.0
            && ours_runnable >= timehist_runnable * 0.95 - 20_000.0
            && ours_runnable <= timehist_runnable + slack,
        "main thread runnable: cpiflame {ours_runnable} ns, perf sched timehist {timehist_runnable} ns ({switch_ins} switch-ins)"
    );
}

/// `tid`'s runnable nanoseconds as perf reads `data` (`perf script --show-switch-events
/// --ns`): from a preempted switch-out, or from the first wakeup of it after a blocked one,
/// to its next switch-in; with the number of such intervals and of its switch-ins.
fn runnable_in_script(data: &Path, tid: i32) -> (f64, usize, usize) {
    let text = perf_script_ns(data);
    let (mut total, mut intervals, mut ins) = (0.0, 0, 0);
    let (mut out, mut since) = (false, None::<f64>);
    for l in text.lines() {
        let Some((head, rest)) = l.split_once(": ") else {
            continue;
        };
        let mut words = head.split_whitespace();
        let (Some(t), Some(time)) = (
            words.next().and_then(|w| w.parse::<i32>().ok()),
            words.next().and_then(|w| w.parse::<f64>().ok()),
        ) else {
            continue;
        };
        if rest.contains("sched:sched_waking") {
            let woken = rest.contains(&format!(" pid={tid} "));
            if woken && out && since.is_none() {
                since = Some(time);
            }
        } else if t == tid && rest.contains("PERF_RECORD_SWITCH OUT") {
            out = true;
            since = rest.contains("preempt").then_some(time);
        } else if t == tid && rest.contains("PERF_RECORD_SWITCH IN") {
            ins += 1;
            if let Some(from) = since.take() {
                total += (time - from) * 1e9;
                intervals += 1;
            }
            out = false;
        }
    }
    (total, intervals, ins)
}

/// `perf script --show-switch-events --ns -F tid,time,event,trace` of `data`.
fn perf_script_ns(data: &Path) -> String {
    let out = Command::new("perf")
        .args(["script", "-f", "--ns", "--show-switch-events"])
        .args(["-F", "tid,time,event,trace", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf script: {}", text(&out.stderr));
    text(&out.stdout)
}

/// `perf script` of `data` (any perf.data), which must exit 0.
fn perf_script_of(data: &Path) -> String {
    let out = Command::new("perf")
        .args(["script", "-f", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf script: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The time (seconds, as perf script prints it) of `tid`'s first switch-out in `data`.
fn first_switch_out_secs(data: &Path, tid: i32) -> f64 {
    let out = Command::new("perf")
        .args([
            "script",
            "-f",
            "--show-switch-events",
            "-F",
            "tid,time",
            "-i",
        ])
        .arg(data)
        .output()
        .unwrap();
    let text = text(&out.stdout);
    text.lines()
        .find_map(|l| {
            let (head, rest) = l.split_once(':')?;
            let mut words = head.split_whitespace();
            let (t, time) = (words.next()?.parse::<i32>().ok()?, words.next()?);
            (t == tid && rest.contains("PERF_RECORD_SWITCH OUT"))
                .then(|| time.parse().ok())
                .flatten()
        })
        .unwrap_or_else(|| panic!("no switch-out of {tid} in perf script:\n{text}"))
}
