//! Faults `cpiflame record` must survive, each checked on a real recording: a full disk, a
//! swarm of threads and processes (at the default rate, and overloaded), a symlink planted at
//! the output path, and an unprivileged user under kernel.perf_event_paranoid 2 and 3. (A
//! recorder killed with SIGKILL is `record.rs`'s `a_killed_recorder_leaves_a_file_that_renders`.)
//!
//! The tests that change the host (a tmpfs mount; kernel.perf_event_paranoid and a test
//! user) are named `host_changing_*`. They need root: without it they say "skipped: needs
//! root: ..." and return, and under CI=true they fail instead (CI runs as root; see
//! `cpiflame_testkit::unavailable`). The heavy ones (swarm, overload, disk full) take one lock
//! so that they do not compete with each other for this machine's CPUs; none asserts timings.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use cpiflame_perf_data::{PerfData, RecordKind};
use support::{perf_works, shared_fixtures, Dir, Fixtures};

/// Held by the tests that load the CPUs.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

fn cpiflame() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
}

fn run(args: &[&str]) -> Output {
    cpiflame().args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "cpiflame failed ({}): {}",
        out.status,
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Fixtures, or None (test skipped, reason printed) where the kernel cannot sample.
fn setup() -> Option<&'static Fixtures> {
    if !perf_works() {
        cpiflame_testkit::unavailable(
            "software sampling does not work here (`perf record -e cpu-clock` fails)",
        );
        return None;
    }
    Some(shared_fixtures().expect("fixtures build"))
}

/// Samples per (pid, tid), and the samples the file says were lost, as cpiflame's reader
/// sees them.
fn our_counts(data: &Path) -> (BTreeMap<(i32, i32), u64>, u64) {
    let file = PerfData::open(data).unwrap();
    let mut counts = BTreeMap::new();
    let mut lost = 0;
    for r in file.records() {
        match r.unwrap().kind {
            RecordKind::Sample(sm) => {
                *counts
                    .entry((sm.pid.unwrap(), sm.tid.unwrap()))
                    .or_insert(0) += 1
            }
            RecordKind::Lost { lost: n, .. } => lost += n,
            _ => {}
        }
    }
    (counts, lost)
}

/// Samples per (pid, tid) as `perf script` sees them.
fn perf_counts(data: &Path) -> BTreeMap<(i32, i32), u64> {
    let out = Command::new("perf")
        .args(["script", "-F", "pid,tid,event", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut counts = BTreeMap::new();
    for line in text(&out.stdout).lines() {
        let Some((pid, tid)) = line
            .split_whitespace()
            .next()
            .and_then(|w| w.split_once('/'))
        else {
            continue;
        };
        *counts
            .entry((pid.parse().unwrap(), tid.parse().unwrap()))
            .or_insert(0) += 1;
    }
    counts
}

/// Lines of `stderr` that are errors.
fn error_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("error")).collect()
}

// ---------------------------------------------------------------------------------------
// Disk full.

/// A tmpfs mounted for one test, unmounted when dropped (also when the test fails).
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path, size: &str) -> Result<Mount, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755")])
            .arg("tmpfs")
            .arg(dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                text(&out.stderr).trim()
            ));
        }
        Ok(Mount(dir.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

#[test]
fn host_changing_a_full_disk_stops_the_recording_reaps_the_command_and_leaves_a_readable_file() {
    let Some(f) = setup() else { return };
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: mounts a small tmpfs (a full disk)");
        return;
    }
    let _heavy = heavy();
    let dir = Dir::new("full");
    let mount = match Mount::tmpfs(&dir.path("small"), "256k") {
        Ok(m) => m,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("a small tmpfs: {e}"));
            return;
        }
    };
    let data = mount.0.join("out.data");
    let pid_file = dir.path("workload.pid");
    // The shell writes its pid, then becomes the workload (same pid): ~4 s of CPU, far
    // more samples than 256 KiB holds.
    let script = format!("echo $$ > {}; exec {} 3", s(&pid_file), s(&f.threads));
    let out = run(&["record", "-o", s(&data), "--", "sh", "-c", &script]);
    let stderr = text(&out.stderr);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // No orphan: the workload is gone the moment cpiflame has returned (it was ended and
    // reaped, not left running or left for init).
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    if alive.is_some() {
        // SAFETY: SIGKILL to the workload this test started.
        unsafe { kill(pid, 9) };
    }
    assert_eq!(
        alive, None,
        "workload {pid} outlived the recorder: {stderr}"
    );

    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let errors = error_lines(&stderr);
    assert_eq!(errors.len(), 1, "one error line: {stderr}");
    let error = errors[0];
    for needle in [
        s(&data),
        "No space left on device",
        "the command was ended with SIGTERM",
    ] {
        assert!(error.contains(needle), "{needle:?} in {error}");
    }
    assert!(
        !stderr.contains("os error 28): No space"),
        "said once: {error}"
    );

    // The file keeps what reached the disk, cut at a record boundary and finished: the
    // header gives the data size (no "data size 0" warning, no record cut short), and perf
    // reads the same samples.
    let kept: u64 = error
        .split("keeps the ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("sample count in {error}"));
    let (ours, _) = our_counts(&data);
    assert_eq!(ours.values().sum::<u64>(), kept, "{error}");
    assert!(kept > 0, "{error}");
    assert_eq!(ours, perf_counts(&data));
    let fold = run(&["fold", s(&data), "--event", "cpu-clock"]);
    let fold_err = text(&fold.stderr);
    assert!(
        !fold_err.contains("data size 0") && !fold_err.contains("cut short"),
        "{fold_err}"
    );
    assert!(ok(&fold).contains("threads;"));
    assert!(ok(&run(&["render", s(&data)])).contains("<svg"));
    eprintln!("disk full: {error}");
}

// ---------------------------------------------------------------------------------------
// Many threads and processes.

/// What `swarm` printed: its pid, and the id of every thread and process by index.
struct Swarm {
    main: i32,
    threads: Vec<i32>,
    processes: Vec<i32>,
}

fn parse_swarm(stdout: &str) -> Swarm {
    let mut swarm = Swarm {
        main: 0,
        threads: Vec::new(),
        processes: Vec::new(),
    };
    for line in stdout.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["main", pid] => swarm.main = pid.parse().unwrap(),
            ["thread", i, tid] => {
                assert_eq!(i.parse::<usize>().unwrap(), swarm.threads.len());
                swarm.threads.push(tid.parse().unwrap());
            }
            ["process", i, pid] => {
                assert_eq!(i.parse::<usize>().unwrap(), swarm.processes.len());
                swarm.processes.push(pid.parse().unwrap());
            }
            _ => panic!("unexpected line from swarm: {line}"),
        }
    }
    swarm
}

#[test]
fn a_swarm_of_64_threads_and_50_processes_is_all_attributed_and_nothing_is_lost() {
    let Some(f) = setup() else { return };
    if !cpiflame_testkit::is_root() {
        // 115 runnable tasks on a few CPUs leave a recorder of the same priority too little
        // CPU to drain its buffers (perf loses most samples too); as root it raises its own.
        cpiflame_testkit::unavailable("without root the recorder cannot raise its priority above the swarm's, and samples are lost (reported; see the overload test)");
        return;
    }
    let _heavy = heavy();
    let dir = Dir::new("swarm");
    let data = dir.path("out.data");
    let out = run(&["record", "-o", s(&data), s(&f.swarm)]);
    let stdout = ok(&out);
    let stderr = text(&out.stderr);
    let swarm = parse_swarm(&stdout);
    assert_eq!((swarm.threads.len(), swarm.processes.len()), (64, 50));

    // Nothing lost or throttled at the default rate: no warning, no LOST record.
    assert!(
        !stderr.contains("lost") && !stderr.contains("throttled"),
        "{stderr}"
    );
    let (ours, lost) = our_counts(&data);
    assert_eq!(lost, 0);
    // perf, the oracle, sees the same samples for every (pid, tid).
    assert_eq!(ours, perf_counts(&data));

    // Every thread (pid = the main pid) and every child process (pid = tid) was sampled.
    let per_task = |pid: i32, tid: i32| ours.get(&(pid, tid)).copied().unwrap_or(0);
    let threads: Vec<u64> = swarm
        .threads
        .iter()
        .map(|&tid| per_task(swarm.main, tid))
        .collect();
    let processes: Vec<u64> = swarm.processes.iter().map(|&p| per_task(p, p)).collect();
    for (i, n) in threads.iter().enumerate() {
        assert!(
            *n > 0,
            "thread {i} (tid {}) has no samples",
            swarm.threads[i]
        );
    }
    for (i, n) in processes.iter().enumerate() {
        assert!(
            *n > 0,
            "process {i} (pid {}) has no samples",
            swarm.processes[i]
        );
    }

    // ... in its own function, under its own name: thread i's samples in spin_thread are
    // `swarm-tI`'s, process i's in spin_process are `swarm-pI`'s.
    let folded = ok(&run(&[
        "fold",
        s(&data),
        "--tid",
        "--no-kernel",
        "--event",
        "cpu-clock",
    ]));
    let mut named: BTreeSet<(String, i32)> = BTreeSet::new();
    for line in folded.lines() {
        let root = line.split(';').next().unwrap();
        let (comm, ids) = root.rsplit_once('-').unwrap();
        let tid: i32 = ids.split('/').nth(1).unwrap().parse().unwrap();
        if line.contains(";spin_thread") || line.contains(";spin_process") {
            named.insert((comm.to_string(), tid));
        }
    }
    for (i, &tid) in swarm.threads.iter().enumerate() {
        assert!(
            named.contains(&(format!("swarm-t{i}"), tid)),
            "thread {i}: spin_thread as swarm-t{i}"
        );
    }
    for (i, &pid) in swarm.processes.iter().enumerate() {
        assert!(
            named.contains(&(format!("swarm-p{i}"), pid)),
            "process {i}: spin_process as swarm-p{i}"
        );
    }
    let all: Vec<u64> = threads.iter().chain(&processes).copied().collect();
    eprintln!(
        "swarm: {} samples, {} tasks sampled (64 threads, 50 processes, main), per task min {} max {}, lost 0",
        ours.values().sum::<u64>(),
        ours.len(),
        all.iter().min().unwrap(),
        all.iter().max().unwrap()
    );
}

#[test]
fn an_overloaded_recorder_reports_the_samples_it_lost() {
    let Some(f) = setup() else { return };
    let _heavy = heavy();
    let dir = Dir::new("overload");
    let data = dir.path("out.data");
    // cpu-clock every 10 us (the kernel's shortest), 32 KiB stack copies, and an 8-page ring
    // (raised to the 32 pages that hold two samples): far more than can be drained.
    let out = run(&[
        "record",
        "-c",
        "10000",
        "-m",
        "8",
        "-o",
        s(&data),
        s(&f.swarm),
        "16",
        "8",
        "20",
    ]);
    ok(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("-m 8: a ring buffer of 32 KiB cannot hold two samples"),
        "{stderr}"
    );
    // "lost N of M samples (x%)"
    let line = stderr
        .lines()
        .find(|l| l.contains("warning: lost "))
        .unwrap_or_else(|| panic!("no lost-samples warning: {stderr}"));
    let reported: u64 = line
        .split("lost ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(reported > 0, "{line}");
    // The file carries them as LOST records: the same count, which cpiflame's reader warns
    // about and perf counts as lost events.
    let (ours, lost) = our_counts(&data);
    assert_eq!(lost, reported, "{line}");
    let fold = run(&["fold", s(&data), "--event", "cpu-clock"]);
    ok(&fold);
    assert!(
        text(&fold.stderr).contains(&format!("the kernel lost {reported} samples")),
        "{}",
        text(&fold.stderr)
    );
    let stats = Command::new("perf")
        .args(["report", "--stats", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let stats = text(&stats.stdout);
    let lost_events: u64 = stats
        .lines()
        .find(|l| l.trim_start().starts_with("LOST events:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("perf report --stats: {stats}"));
    assert!(lost_events > 0, "{stats}");
    eprintln!(
        "overload: {} samples written, {line}; perf report --stats: {lost_events} LOST events",
        ours.values().sum::<u64>()
    );
}

// ---------------------------------------------------------------------------------------
// The output file.

#[test]
fn the_output_is_private_and_never_written_through_a_planted_link() {
    let Some(f) = setup() else { return };
    let dir = Dir::new("links");
    let victim = dir.path("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let record = |out: &Path| ok(&run(&["record", "-o", s(out), s(&f.forks), "0.01"]));
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode();

    // A fresh file: 0600.
    let fresh = dir.path("fresh.data");
    record(&fresh);
    assert_eq!(mode(&fresh) & 0o7777, 0o600);

    // A symlink at the path: moved aside to .old, the victim untouched, a new private file.
    let linked = dir.path("linked.data");
    std::os::unix::fs::symlink(&victim, &linked).unwrap();
    record(&linked);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(mode(&victim) & 0o7777, 0o644);
    let meta = std::fs::symlink_metadata(&linked).unwrap();
    assert!(meta.file_type().is_file() && meta.mode() & 0o7777 == 0o600);
    assert_eq!(
        std::fs::read_link(dir.path("linked.data.old")).unwrap(),
        victim
    );
    assert!(ok(&run(&["fold", s(&linked), "--no-kernel"])).contains("parent_work"));

    // A dangling symlink (to where a file would be created) and a symlink planted at the
    // .old path: neither target is created or written.
    let dangling = dir.path("dangling.data");
    let target = dir.path("created-through-link");
    std::os::unix::fs::symlink(&target, &dangling).unwrap();
    std::os::unix::fs::symlink(&victim, dir.path("dangling.data.old")).unwrap();
    record(&dangling);
    assert!(!target.exists());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_link(dir.path("dangling.data.old")).unwrap(),
        target,
        "the planted .old link was replaced by the moved one"
    );

    // A hard link to the victim: moved aside, never truncated.
    let hard = dir.path("hard.data");
    std::fs::hard_link(&victim, &hard).unwrap();
    record(&hard);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_to_string(dir.path("hard.data.old")).unwrap(),
        "precious\n"
    );
    assert_eq!(mode(&hard) & 0o7777, 0o600);
}

// ---------------------------------------------------------------------------------------
// An unprivileged user.

/// kernel.perf_event_paranoid set for a test and put back when dropped (also on failure).
/// One test at a time holds it (the tests of this binary run in parallel, and each needs
/// its own level).
pub(crate) struct Paranoid {
    saved: String,
    _held: std::sync::MutexGuard<'static, ()>,
}

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

static PARANOID_HELD: Mutex<()> = Mutex::new(());

impl Paranoid {
    pub(crate) fn save() -> Result<Paranoid, String> {
        let held = PARANOID_HELD.lock().unwrap_or_else(|e| e.into_inner());
        std::fs::read_to_string(PARANOID)
            .map(|v| Paranoid {
                saved: v.trim().to_string(),
                _held: held,
            })
            .map_err(|e| format!("{PARANOID}: {e}"))
    }
    pub(crate) fn set(&self, value: i32) -> Result<(), String> {
        std::fs::write(PARANOID, value.to_string()).map_err(|e| format!("{PARANOID}: {e}"))
    }
}

impl Drop for Paranoid {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(PARANOID, &self.saved) {
            eprintln!("cannot restore {PARANOID} to {}: {e}", self.saved);
        }
    }
}

/// The uid and gid of the test user `cpiflame-test`, created (a system user without home
/// or shell) when missing.
pub(crate) fn test_user() -> Result<(u32, u32), String> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id")
            .args([flag, "cpiflame-test"])
            .output()
            .ok()?;
        text(&out.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "cpiflame-test",
            ])
            .output()
            .map_err(|e| format!("cannot run useradd: {e}"))?;
        // A concurrent run may have created it first.
        if !out.status.success() && id("-u").is_none() {
            return Err(format!("useradd failed: {}", text(&out.stderr).trim()));
        }
    }
    match (id("-u"), id("-g")) {
        (Some(u), Some(g)) => Ok((u, g)),
        _ => Err("id cpiflame-test failed".into()),
    }
}

#[test]
fn host_changing_an_unprivileged_user_records_user_space_and_gets_translated_errors() {
    let Some(f) = setup() else { return };
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
    // The binary and the workload where the user can run them, and a folder it can write.
    let dir = Dir::new("user");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path("cpiflame");
    let forks = dir.path("forks");
    for (from, to) in [
        (Path::new(env!("CARGO_BIN_EXE_cpiflame")), &bin),
        (&f.forks, &forks),
    ] {
        std::fs::copy(from, to).unwrap();
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out_dir = dir.path("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::chown(&out_dir, Some(uid), Some(gid)).unwrap();
    let data = out_dir.join("user.data");
    let as_user = |args: &[&str]| -> Output {
        Command::new("setpriv")
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
            .arg("--clear-groups")
            .arg(&bin)
            .args(args)
            .current_dir(&out_dir)
            .output()
            .unwrap()
    };
    // One clear error line: translated, never a bare "Permission denied (os error 13)".
    let refused = |out: &Output, needles: &[&str]| {
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let errors = error_lines(&stderr);
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(!stderr.contains("os error"), "{stderr}");
        for needle in needles {
            assert!(errors[0].contains(needle), "{needle:?} in {}", errors[0]);
        }
    };

    let saved = match Paranoid::save() {
        Ok(p) => p,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("kernel.perf_event_paranoid: {e}"));
            return;
        }
    };
    let mut observed = Vec::new();
    for level in [2, 3] {
        saved.set(level).unwrap();
        let paranoid = format!("kernel.perf_event_paranoid is {level}");
        let record = as_user(&["record", "-o", s(&data), s(&forks), "0.05"]);
        let stat = as_user(&["stat", "--", s(&forks), "0.02"]);
        let kernel_only = as_user(&["record", "-e", "cpu-clock:k", "-o", s(&data), "true"]);
        let stat_kernel_only = as_user(&["stat", "-e", "task-clock:k", "true"]);
        let init = as_user(&["record", "-p", "1", "--duration", "0.1", "-o", s(&data)]);
        let all_cpus = as_user(&["record", "-a", "--duration", "0.1", "-o", s(&data)]);
        // Whether this kernel gives 3 a meaning of its own (Debian's: no perf_event_open for
        // users at all); upstream treats it as 2.
        let forbids_all = level == 3 && !record.status.success();
        if !forbids_all {
            // User space only, said once; the file has samples and no kernel space.
            let stderr = text(&record.stderr);
            ok(&record);
            assert!(
                stderr.contains(&format!("{paranoid}: recording user space only")),
                "{stderr}"
            );
            let file = PerfData::open(&data).unwrap();
            assert!(file
                .attrs
                .iter()
                .all(|a| a.flags & cpiflame_perf_data::attr_flags::EXCLUDE_KERNEL != 0));
            assert!(ok(&run(&["fold", s(&data), "--no-kernel"])).contains("parent_work"));
            // The counts are on stderr, as perf stat's.
            ok(&stat);
            assert!(
                text(&stat.stderr).contains("task-clock"),
                "{}",
                text(&stat.stderr)
            );
            observed.push(format!(
                "paranoid {level}: user-space record and stat work as an unprivileged user"
            ));
        } else {
            // A kernel where 3 forbids perf_event_open to users (Debian's): refused, said so.
            refused(&record, &[&paranoid, "3 and above forbid"]);
            refused(&stat, &[&paranoid, "3 and above forbid"]);
            observed.push(format!(
                "paranoid {level}: refused with the translated message"
            ));
        }
        // Kernel space only cannot be had: refused, not an empty recording.
        refused(
            &kernel_only,
            &[
                "cpu-clock:k",
                &paranoid,
                "sysctl kernel.perf_event_paranoid=1",
            ],
        );
        refused(
            &stat_kernel_only,
            &[
                "task-clock:k",
                &paranoid,
                "sysctl kernel.perf_event_paranoid=1",
            ],
        );
        // Another user's process (init): the real reason, not the sysctl.
        if forbids_all {
            refused(&init, &[&paranoid]);
        } else {
            refused(&init, &["process 1", "uid 0", "CAP_PERFMON"]);
        }
        // System-wide, checked before anything is opened: the sysctl and the capability.
        refused(
            &all_cpus,
            &[
                &format!("kernel.perf_event_paranoid <= 0 (it is {level})"),
                "CAP_PERFMON",
            ],
        );
    }
    drop(saved);
    eprintln!("unprivileged: {}", observed.join("; "));
}

extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}
