//! A container's binary named from the host: a process in its own mount namespace runs a
//! copy of a fixture from a tmpfs mounted only inside that namespace, so its path does not
//! exist on the host. Recorded system-wide (`-a`) and by pid (`-p`), `fold` names the
//! fixture's functions while it runs (read through `/proc/PID/root`) and after it has gone
//! (from the build-id cache the recording filled), and `perf report` names them from the same
//! cache; the system-wide file holds the process's namespaces (`perf script
//! --show-namespace-events`), its mount namespace the one `/proc/PID/ns/mnt` shows.

use crate::support;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command};

use support::{cpiflame_at_home, s, sampling_fixtures, Dir};

fn perf_at(home: &Path, args: &[&str]) -> String {
    let out = Command::new("perf")
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `perf report` of `comm`'s samples in `data` by `sort`, with `HOME` at `home`.
fn perf_report_of(home: &Path, data: &Path, comm: &str, sort: &str) -> String {
    perf_at(
        home,
        &[
            "report",
            "-i",
            s(data),
            "--comm",
            comm,
            "--stdio",
            "--no-children",
            "-g",
            "none",
            "--sort",
            sort,
        ],
    )
}

/// The folded lines of `comm`.
fn lines_of(folded: &str, comm: &str) -> Vec<String> {
    folded
        .lines()
        .filter(|l| l.split([';', ' ']).next() == Some(comm))
        .map(String::from)
        .collect()
}

/// A process this test started, killed and reaped when dropped (a failing assertion must not
/// leave it running: the next system-wide recordings would see it).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// [`start_contained`] as root; `None` (said why) where it cannot be.
fn contained(exe: &Path, inner: &Path, name: &str) -> Option<Running> {
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: unshare -m and a tmpfs mount");
        return None;
    }
    start_contained(exe, inner, name)
        .map_err(cpiflame_testkit::unavailable)
        .ok()
}

/// The process in its own mount namespace: `unshare -m` mounts a tmpfs on `inner` (empty on
/// the host), copies `exe` there as `name` and execs it (same pid throughout); returned
/// once it runs as `name`.
fn start_contained(exe: &Path, inner: &Path, name: &str) -> Result<Running, String> {
    std::fs::create_dir_all(inner).unwrap();
    let script = format!(
        "mount -t tmpfs cpiflame-test {d} && cp {exe} {d}/{name} && exec {d}/{name} 100 1000",
        d = s(inner),
        exe = s(exe)
    );
    let mut child = Running(
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .spawn()
            .map_err(|e| format!("unshare: {e}"))?,
    );
    let comm = format!("/proc/{}/comm", child.0.id());
    loop {
        if std::fs::read_to_string(&comm).unwrap_or_default().trim() == name {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            return Err(format!("unshare -m sh -c {script:?}: {status}"));
        }
        std::thread::yield_now();
    }
}

#[test]
fn host_changing_a_containers_binary_is_named_while_it_runs_and_after_it_is_gone() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("containers");
    let inner = dir.path("inner");
    let name = "ctr_app";
    let Some(child) = contained(&f.shift, &inner, name) else {
        return;
    };
    let pid = child.0.id();
    let pid_arg = pid.to_string();
    let inside = inner.join(name);
    assert!(!inside.exists(), "{} exists on the host", inside.display());
    let mnt = |p: &str| std::fs::metadata(format!("/proc/{p}/ns/mnt")).unwrap();
    let (theirs, ours) = (mnt(&pid_arg), mnt("self"));
    assert_ne!(theirs.ino(), ours.ino(), "not in its own mount namespace");

    // Each recording with its own empty build-id cache.
    let recordings = [
        ("all", vec!["-a", "--duration", "1"]),
        ("pid", vec!["-p", pid_arg.as_str(), "--duration", "0.5"]),
    ];
    let mut files = Vec::new();
    for (tag, args) in &recordings {
        let home = dir.path(&format!("home-{tag}"));
        std::fs::create_dir_all(&home).unwrap();
        let data = dir.path(&format!("{tag}.data"));
        let mut all = vec!["record", "-e", "cpu-clock", "-F", "997", "-o", s(&data)];
        all.extend(args);
        let out = cpiflame_at_home(&home, &all);
        support::ok(&out);
        let folded = support::ok(&cpiflame_at_home(
            &home,
            &["fold", s(&data), "--no-kernel", "--group-by", "comm"],
        ));
        let lines = lines_of(&folded, name);
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.contains(";work_a")),
            "{tag}, running: {lines:?}"
        );
        files.push((tag, home, data));
    }
    drop(child);

    for (tag, home, data) in &files {
        // The file names the binary by build id, and the cache holds it under that id.
        let ids = perf_at(home, &["buildid-list", "-i", s(data)]);
        let id = ids
            .lines()
            .find_map(|l| l.strip_suffix(s(&inside))?.trim().split(' ').next())
            .unwrap_or_else(|| panic!("{tag}: no build id for {}: {ids}", inside.display()))
            .to_string();
        let elf = home.join(format!(".debug/.build-id/{}/{}/elf", &id[..2], &id[2..]));
        assert_eq!(
            std::fs::read(&elf).unwrap_or_default(),
            std::fs::read(&f.shift).unwrap(),
            "{tag}: {} is a copy of the binary",
            elf.display()
        );

        let folded = support::ok(&cpiflame_at_home(
            home,
            &["fold", s(data), "--no-kernel", "--group-by", "comm"],
        ));
        let lines = lines_of(&folded, name);
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.contains(";work_a")),
            "{tag}, gone, from the cache: {lines:?}"
        );
        // Without the cache nothing names it any more: the cache is what did.
        let nowhere = dir.path("no-home");
        let folded = support::ok(&cpiflame_at_home(
            &nowhere,
            &["fold", s(data), "--no-kernel", "--group-by", "comm"],
        ));
        assert!(
            !lines_of(&folded, name).iter().any(|l| l.contains("work_a")),
            "{tag}: named without a cache: {folded}"
        );

        let report = perf_report_of(home, data, name, "dso,sym");
        assert!(
            report
                .lines()
                .any(|l| l.contains(&format!("{name} ")) && l.contains("[.] work_a")),
            "{tag}: perf report: {report}"
        );
    }

    // The system-wide file's namespaces of the process: its mount namespace is the one
    // /proc/PID/ns/mnt had (perf prints dev/inode, the inode in hex).
    let (_, _, all) = &files[0];
    let script = perf_at(
        &dir.path("no-home"),
        &[
            "script",
            "-i",
            s(all),
            "--show-namespace-events",
            "-F",
            "pid",
        ],
    );
    let at = script
        .find(&format!("PERF_RECORD_NAMESPACES {pid}/{pid} "))
        .unwrap_or_else(|| panic!("no NAMESPACES record of {pid}"));
    let record = &script[at..at + script[at..].find(']').unwrap()];
    let want = format!("5/mnt: {}/{:#x}", theirs.dev(), theirs.ino());
    assert!(record.contains(&want), "{want} not in {record}");
}

/// The host has a file of its own at the path the container's binary has inside (another
/// program, run on the host too): recording both (`-p`), each process is named from its own
/// file, while the container runs and after it has gone (the container's mappings carry its
/// build id; the file's build-id table keeps the host's for that path), by cpiflame and by
/// perf report.
#[test]
fn host_changing_a_host_file_at_the_containers_path_is_another() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("containers-shadowed");
    let inner = dir.path("inner");
    // Not the other test's name: each -a recording sees the other test's processes.
    let name = "ctr_shadowed";
    // On the host: `threads` at inner/NAME, run through a link so its comm differs.
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::copy(&f.threads, inner.join(name)).unwrap();
    let link = dir.path("host_app");
    std::os::unix::fs::symlink(inner.join(name), &link).unwrap();
    let host = Running(Command::new(&link).arg("30").spawn().unwrap());
    let Some(child) = contained(&f.shift, &inner, name) else {
        return;
    };
    let home = dir.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let data = dir.path("out.data");
    // The two processes only (the other test records -a): on a loaded machine a system-wide
    // recording's ring buffers can lose every sample of one of them.
    let pids = format!("{},{}", child.0.id(), host.0.id());
    let out = cpiflame_at_home(
        &home,
        &[
            "record",
            "-p",
            &pids,
            "-e",
            "cpu-clock",
            "-F",
            "997",
            "--duration",
            "1",
            "-o",
            s(&data),
        ],
    );
    let fold = || {
        support::ok(&cpiflame_at_home(
            &home,
            &["fold", s(&data), "--no-kernel", "--group-by", "comm"],
        ))
    };
    let running = fold();
    drop((child, host));
    support::ok(&out);
    for (when, folded) in [("running", running), ("gone", fold())] {
        let ours = lines_of(&folded, name);
        assert!(
            !ours.is_empty() && ours.iter().all(|l| l.contains(";work_a")),
            "{when}: the container's: {ours:?}"
        );
        let heavy = lines_of(&folded, "heavy");
        assert!(
            !heavy.is_empty() && heavy.iter().all(|l| l.contains("thread_heavy")),
            "{when}: the host's: {heavy:?}"
        );
    }
    let report = perf_report_of(&home, &data, name, "sym");
    assert!(report.contains("[.] work_a"), "perf report: {report}");
}
