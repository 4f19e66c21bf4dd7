//! Cgroups in recordings: `record -a --cgroup NAME` records that cgroup's tasks only, and a
//! system-wide recording carries each sample's cgroup id with the cgroups' paths, which
//! `perf report --sort cgroup` reads. The oracles are perf's: `perf script -F pid,tid` and
//! `perf report --sort cgroup[,pid]` on cpiflame's file.
//!
//! The tests that make a cgroup are `host_changing_*` (root): each removes its cgroup (its
//! processes killed first) even when it fails.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use cpiflame_record::cgroup::{find_mount, MOUNTINFO};
use support::{s, sampling_fixtures, start_loop, Dir};

fn run(args: &[&str]) -> Output {
    support::cpiflame(args)
}

/// A cgroup made for a test under the mount the recorder uses, with the processes moved
/// into it; dropped: those processes killed and reaped, the cgroup removed.
pub struct TestCgroup {
    /// Its path relative to the mount (what `--cgroup` takes), e.g. `cpiflame-test-12-0`.
    pub name: String,
    dir: PathBuf,
    children: Vec<Child>,
}

impl TestCgroup {
    /// A new cgroup, or why there cannot be one here (not root, no cgroup mount).
    pub fn new(tag: &str) -> Result<TestCgroup, String> {
        if !cpiflame_testkit::is_root() {
            return Err("needs root: makes a cgroup".into());
        }
        let mount = std::fs::read_to_string(MOUNTINFO)
            .ok()
            .and_then(|t| find_mount(&t))
            .ok_or("no cgroup v2 mount nor v1 perf_event hierarchy")?;
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("cpiflame-test-{tag}-{}-{n}", std::process::id());
        let dir = mount.path.join(&name);
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(TestCgroup {
            name,
            dir,
            children: Vec::new(),
        })
    }

    /// Moves `child` (all its threads) into the cgroup; it is killed when the cgroup goes.
    pub fn adopt(&mut self, child: Child) {
        let pid = child.id();
        self.children.push(child);
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).unwrap();
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A cgroup is removable once its last task has gone.
        for _ in 0..200 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        eprintln!("could not remove {}", self.dir.display());
    }
}

fn perf(args: &[&str]) -> String {
    let out = Command::new("perf").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn cgroup_or_skip(tag: &str) -> Option<TestCgroup> {
    TestCgroup::new(tag)
        .map_err(cpiflame_testkit::unavailable)
        .ok()
}

/// A system-wide recording (`--call-graph none`, cpu-clock, 1 s, and `flags`) of two busy
/// processes, one in a test cgroup: the file (in the returned directory), the cgroup, the
/// pid inside and the pid outside. `None`: no cgroup can be made here (said why).
fn record_two(tag: &str, flags: &[&str]) -> Option<(Dir, TestCgroup, u32, u32)> {
    let f = sampling_fixtures()?;
    let mut cgroup = cgroup_or_skip(tag)?;
    let dir = Dir::new(&format!("cgroup-{tag}"));
    let data = dir.path("out.data");
    let inside = start_loop(f, &dir, "in_cgroup");
    let inside_pid = inside.id();
    cgroup.adopt(inside);
    let mut outside = start_loop(f, &dir, "outside");
    let mut args = vec!["record", "-a", "-e", "cpu-clock", "--call-graph", "none"];
    let with_name: Vec<&str> = flags
        .iter()
        .map(|&a| if a == "NAME" { cgroup.name.as_str() } else { a })
        .collect();
    args.extend(with_name);
    args.extend(["--duration", "1", "-o", s(&data)]);
    let out = run(&args);
    let outside_pid = outside.id();
    let _ = outside.kill();
    let _ = outside.wait();
    support::ok(&out);
    Some((dir, cgroup, inside_pid, outside_pid))
}

/// `-a --cgroup NAME`: of two busy processes, only the one in the cgroup is sampled (every
/// sample perf script shows is its pid, and there are many), the other not at all.
#[test]
fn host_changing_cgroup_records_only_its_tasks() {
    let Some((dir, _cgroup, inside_pid, outside_pid)) = record_two("only", &["--cgroup", "NAME"])
    else {
        return;
    };
    let script = perf(&["script", "-i", s(&dir.path("out.data")), "-F", "pid,tid"]);
    let pids: Vec<u32> = script
        .lines()
        .filter_map(|l| l.split('/').next()?.trim().parse().ok())
        .collect();
    assert!(
        pids.iter().filter(|&&p| p == inside_pid).count() > 20,
        "{inside_pid} busy in the cgroup for 1 s: {script}"
    );
    let others: Vec<&u32> = pids.iter().filter(|&&p| p != inside_pid).collect();
    assert!(others.is_empty(), "not in the cgroup: {others:?}");
    assert!(!pids.contains(&outside_pid));
}

/// A system-wide recording's samples carry their cgroup: `perf report --sort cgroup` lists
/// the test cgroup's path and `/`, and by `--sort cgroup,pid` the process in the cgroup is
/// under its path only, the one outside under `/` only.
#[test]
fn host_changing_samples_carry_their_cgroup_for_perf_report() {
    let Some((dir, cgroup, inside_pid, outside_pid)) = record_two("ids", &[]) else {
        return;
    };
    let data = dir.path("out.data");
    let path = format!("/{}", cgroup.name);
    let report = |sort: &str| {
        perf(&[
            "report",
            "-i",
            s(&data),
            "--sort",
            sort,
            "--stdio",
            "--no-children",
            "-g",
            "none",
        ])
    };
    let rows = report("cgroup");
    let names: Vec<&str> = rows
        .lines()
        .filter(|l| l.contains('%') && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert!(names.contains(&path.as_str()), "{rows}");
    assert!(names.contains(&"/"), "{rows}");
    let rows = report("cgroup,pid");
    let cgroups_of = |pid: u32| -> Vec<&str> {
        rows.lines()
            .filter(|l| l.contains(&format!(" {pid}:")))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect()
    };
    assert_eq!(cgroups_of(inside_pid), [path.as_str()], "{rows}");
    assert_eq!(cgroups_of(outside_pid), ["/"], "{rows}");
}

/// Bad `--cgroup` uses are one error line each (exit status 2) naming the flag, and no file.
#[test]
fn bad_cgroup_flags_are_one_line() {
    let dir = Dir::new("cgroup-errors");
    let data = dir.path("out.data");
    let mount = std::fs::read_to_string(MOUNTINFO)
        .ok()
        .and_then(|t| find_mount(&t))
        .map(|m| m.path);
    let looked_in = mount.as_deref().map_or("".into(), |p: &Path| {
        format!(
            "{} is not a directory",
            p.join("cpiflame-no-such").display()
        )
    });
    // `-a` is refused first to a user who may not record every process.
    let system_wide = cpiflame_testkit::is_root();
    for (args, says) in [
        (
            vec!["-a", "--cgroup", "cpiflame-no-such"],
            looked_in.as_str(),
        ),
        (
            vec!["--cgroup", "x", "--", "true"],
            "--cgroup x: only with -a or -C",
        ),
        (
            vec!["-a", "-G", "a,b"],
            "--cgroup a,b: one cgroup for all events",
        ),
    ] {
        if args[0] == "-a" && !system_wide {
            eprintln!("{args:?}: not checked (not root: -a is refused first)");
            continue;
        }
        support::refused_in_one_line(&data, &args, says);
    }
}

/// Without CAP_PERFMON (root's uid with every capability dropped) and with
/// kernel.perf_event_paranoid 0, `-a` may record every process but the kernel refuses
/// `attr.namespaces`: the recording goes on without namespaces, said in one warning line, and
/// keeps its cgroup ids (perf script shows no NAMESPACES record, the root cgroup's CGROUP).
#[test]
fn host_changing_namespaces_refused_are_left_out_in_one_line() {
    use crate::faults::Paranoid;
    if sampling_fixtures().is_none() {
        return;
    }
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: sets kernel.perf_event_paranoid");
        return;
    }
    let dir = Dir::new("cgroup-no-ns");
    let data = dir.path("out.data");
    let saved = match Paranoid::save() {
        Ok(p) => p,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("kernel.perf_event_paranoid: {e}"));
            return;
        }
    };
    saved.set(0).unwrap();
    let out = Command::new("setpriv")
        .args(["--bounding-set=-all", "--inh-caps=-all"])
        .arg(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "-a", "-e", "cpu-clock", "--call-graph", "none"])
        .args(["--duration", "0.3", "-o", s(&data)])
        .output()
        .unwrap();
    drop(saved);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("not recorded"))
        .collect();
    assert_eq!(
        said,
        ["cpiflame: warning: namespaces not recorded: the kernel refused attr.namespaces (it needs CAP_PERFMON or root)"],
        "{stderr}"
    );
    let events = perf(&[
        "script",
        "-i",
        s(&data),
        "--show-namespace-events",
        "--show-cgroup-events",
    ]);
    assert!(!events.contains("PERF_RECORD_NAMESPACES"), "{events}");
    assert!(events.contains("PERF_RECORD_CGROUP cgroup: "), "{events}");
}
