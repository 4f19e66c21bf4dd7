//! A container's binary named from the host: a process in its own mount namespace runs a
//! copy of a fixture from a tmpfs mounted only inside that namespace, so its path does not
//! exist on the host. Recorded system-wide (`-a`) and by pid (`-p`), `fold` names the
//! fixture's functions while it runs (read through `/proc/PID/root`) and after it has gone
//! (from the build-id cache the recording filled), and `perf report` names them from the same
//! cache; the system-wide file holds the process's namespaces (`perf script
//! --show-namespace-events`), its mount namespace the one `/proc/PID/ns/mnt` shows. A
//! container whose mapped paths are swapped for absolute symlinks to host files never has
//! the recorder or the reader read those (paths resolved inside its root).

use crate::support;

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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
    run_contained(&script, name)
}

/// `sh -c script` in its own mount namespace (`unshare -m`), returned once it runs as
/// `name`.
fn run_contained(script: &str, name: &str) -> Result<Running, String> {
    let mut child = Running(
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", script])
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

/// A process this test started but is not the parent of, killed when dropped.
struct KilledByPid(u32);

impl Drop for KilledByPid {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}

/// The pid of the running process named `comm` whose parent is `parent`, once there is one
/// (at most 30 s).
fn child_named(parent: u32, comm: &str) -> u32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no process {comm} of parent {parent}"
        );
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
            let field = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .map(|v| v.trim().to_string())
            };
            if field("Name:").as_deref() == Some(comm)
                && field("PPid:").as_deref() == Some(parent.to_string().as_str())
            {
                return pid;
            }
        }
        std::thread::yield_now();
    }
}

/// Writes at `to` a twin of the `shift` fixture: the same code at the same addresses, but
/// its functions `work_a` and `work_b` named `host_a` and `host_b` (in its symbols and debug
/// info), so whatever names an address from the twin names it differently. With `own_id`,
/// its GNU build id is another (the last byte flipped), one no other file has; else it is
/// `shift`'s, which vouches for it. Returns the twin's build id.
fn host_twin(shift: &Path, to: &Path, own_id: bool) -> Vec<u8> {
    use object::Object;
    let mut bytes = std::fs::read(shift).unwrap();
    for (from, into) in [(b"work_a", b"host_a"), (b"work_b", b"host_b")] {
        while let Some(at) = bytes.windows(from.len()).position(|w| w == from) {
            bytes[at..at + from.len()].copy_from_slice(into);
        }
    }
    let build_id = |bytes: &[u8]| {
        let id = object::File::parse(bytes).unwrap().build_id().unwrap();
        id.unwrap().to_vec()
    };
    let mut id = build_id(&bytes);
    if own_id {
        let at = bytes.windows(id.len()).position(|w| w == id).unwrap();
        *id.last_mut().unwrap() ^= 0xff;
        bytes[at..at + id.len()].copy_from_slice(&id);
        assert_eq!(build_id(&bytes), id);
    }
    // Written aside and renamed: a file mapped from the last twin is not changed under it.
    let part = to.with_extension("part");
    std::fs::write(&part, &bytes).unwrap();
    std::fs::set_permissions(&part, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::rename(&part, to).unwrap();
    id
}

/// The names of the functions (text symbols) of the ELF file at `path`.
fn functions_of(path: &Path) -> BTreeSet<String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let bytes = std::fs::read(path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    file.symbols()
        .filter(|sym| sym.kind() == SymbolKind::Text)
        .filter_map(|sym| Some(sym.name().ok()?.to_string()))
        .filter(|name| !name.is_empty())
        .collect()
}

/// Every regular file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(files_under(&path)),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
    out
}

/// Whether any frame of the folded lines of `comm` is one of `names`; the lines (there must
/// be some).
fn named_from(folded: &str, comm: &str, names: &BTreeSet<String>) -> (bool, Vec<String>) {
    let lines = lines_of(folded, comm);
    assert!(!lines.is_empty(), "no samples of {comm}: {folded}");
    let named = lines.iter().any(|line| {
        let stack = line.rsplit_once(' ').map_or(line.as_str(), |(s, _)| s);
        stack.split(';').any(|frame| names.contains(frame))
    });
    (named, lines)
}

/// A container makes its mapped files' paths lead to host files (issue 35): after two
/// processes have mapped their binaries, a tmpfs mounted over the binary's directory holds
/// in its place an absolute symlink to a host file (`ctr_lnk`), and one mounted over a
/// directory on the other's path holds in that directory's place an absolute symlink to a
/// host directory (`ctr_dir`). The host files are twins of the program with other function
/// names ([`host_twin`]) and lie under the container's tmpfs, so inside the container those
/// absolute paths lead nowhere, while the kernel still reports the mappings at their old
/// paths. Joining `/proc/PID/root` and a path reads the host files (checked first: the setup
/// escapes).
///
/// The recorder: recorded by pid and system-wide after the swap, with twins of a build id
/// of their own, nothing of the host files is in the recording's build ids or the build-id
/// cache, and no frame is named after them, while the processes run and after they have
/// gone. The reader: a recording made before the swap names the genuine files' build id;
/// with twins of that same build id behind the symlinks, folded while the processes run
/// (their files read through their roots) and without the cache, no frame is named after
/// the twins either.
#[test]
fn host_file_behind_a_containers_absolute_symlink_is_never_read() {
    let Some(f) = sampling_fixtures() else { return };
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: unshare -m, nsenter and tmpfs mounts");
        return;
    }
    let dir = Dir::new("containers-symlinks");
    let inner = dir.path("inner");
    // On the host, under the mount point of the container's tmpfs (hidden inside it).
    let host_file = inner.join("host_secret");
    let host_dir = inner.join("hostdir");
    std::fs::create_dir_all(&host_dir).unwrap();
    let twins = |own_id: bool| {
        let id = host_twin(&f.shift, &host_file, own_id);
        host_twin(&f.shift, &host_dir.join("ctr_dir"), own_id);
        id
    };
    twins(false);
    let host_functions: BTreeSet<String> = functions_of(&host_file)
        .difference(&functions_of(&f.shift))
        .cloned()
        .collect();
    assert_eq!(
        host_functions,
        BTreeSet::from(["host_a".to_string(), "host_b".to_string()])
    );

    let script = format!(
        "mount -t tmpfs cpiflame-test {d} && mkdir -p {d}/a {d}/b/sub \
         && cp {exe} {d}/a/ctr_lnk && cp {exe} {d}/b/sub/ctr_dir || exit 1; \
         {d}/b/sub/ctr_dir 100 1000 & exec {d}/a/ctr_lnk 100 1000",
        d = s(&inner),
        exe = s(&f.shift)
    );
    let Some(child) = run_contained(&script, "ctr_lnk")
        .map_err(cpiflame_testkit::unavailable)
        .ok()
    else {
        return;
    };
    let pid = child.0.id();
    let dir_pid = child_named(pid, "ctr_dir");
    // Not this test's child: killed by pid when the test ends, however it ends.
    let _dir_child = KilledByPid(dir_pid);
    let pids = format!("{pid},{dir_pid}");
    let record = |tag: &str, args: &[&str]| {
        let home = dir.path(&format!("home-{tag}"));
        std::fs::create_dir_all(&home).unwrap();
        let data = dir.path(&format!("{tag}.data"));
        let mut all = vec!["record", "-e", "cpu-clock", "-F", "997", "-o", s(&data)];
        all.extend(args);
        support::ok(&cpiflame_at_home(&home, &all));
        (home, data)
    };
    let fold = |home: &Path, data: &Path| {
        support::ok(&cpiflame_at_home(
            home,
            &["fold", s(data), "--no-kernel", "--group-by", "comm"],
        ))
    };
    // Before the swap: the genuine files, their build id in the recording.
    let (_, before) = record("before", &["-p", &pids, "--duration", "1"]);

    // The swap, inside the container's mount namespace.
    let swap = format!(
        "mount -t tmpfs cpiflame-swap {d}/a && ln -s {file} {d}/a/ctr_lnk \
         && mount -t tmpfs cpiflame-swap {d}/b && ln -s {hdir} {d}/b/sub",
        d = s(&inner),
        file = s(&host_file),
        hdir = s(&host_dir)
    );
    let swapped = match Command::new("nsenter")
        .args(["-t", &pid.to_string(), "-m", "sh", "-c", &swap])
        .output()
    {
        Ok(out) => out,
        Err(e) => return cpiflame_testkit::unavailable(format!("nsenter: {e}")),
    };
    assert!(
        swapped.status.success(),
        "nsenter: {}",
        String::from_utf8_lossy(&swapped.stderr)
    );
    let lnk = inner.join("a/ctr_lnk");
    let in_dir = inner.join("b/sub/ctr_dir");
    let secret = std::fs::read(&host_file).unwrap();
    // The mappings keep their paths; joined to the root, those paths read the host files.
    for (pid, path) in [(pid, &lnk), (dir_pid, &in_dir)] {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        assert!(
            maps.lines()
                .any(|l| l.ends_with(&format!(" {}", path.display()))),
            "{} not mapped by {pid}: {maps}",
            path.display()
        );
        let joined = format!("/proc/{pid}/root{}", path.display());
        assert!(
            std::fs::read(&joined).unwrap() == secret,
            "{joined}: not the host's file"
        );
    }

    // The reader: twins the recording's build id vouches for, read through the roots while
    // the processes run (no cache: `nowhere` has none).
    let nowhere = dir.path("no-home");
    let folded = fold(&nowhere, &before);
    for comm in ["ctr_lnk", "ctr_dir"] {
        let (named, lines) = named_from(&folded, comm, &host_functions);
        assert!(!named, "before: {comm} named from the host file: {lines:?}");
    }

    // The recorder: twins of a build id of their own.
    let secret_id = twins(true);
    let secret = std::fs::read(&host_file).unwrap();
    let secret_hex: String = secret_id.iter().map(|b| format!("{b:02x}")).collect();
    let mut recorded = Vec::new();
    for (tag, args) in [
        ("all", vec!["-a", "--duration", "1"]),
        ("pid", vec!["-p", pids.as_str(), "--duration", "1"]),
    ] {
        let (home, data) = record(tag, &args);
        let running = fold(&home, &data);
        recorded.push((tag, home, data, running));
    }
    drop(child);

    for (tag, home, data, running) in &recorded {
        let ids = perf_at(home, &["buildid-list", "-i", s(data)]);
        assert!(
            !ids.contains(&secret_hex),
            "{tag}: the host file's build id: {ids}"
        );
        for file in files_under(&home.join(".debug")) {
            assert!(
                std::fs::read(&file).unwrap() != secret,
                "{tag}: {} is a copy of the host file",
                file.display()
            );
            assert!(
                !file.to_string_lossy().contains(&secret_hex),
                "{tag}: {} is kept under the host file's build id",
                file.display()
            );
        }
        for (when, folded) in [("running", running.clone()), ("gone", fold(home, data))] {
            for comm in ["ctr_lnk", "ctr_dir"] {
                let (named, lines) = named_from(&folded, comm, &host_functions);
                assert!(
                    !named,
                    "{tag}, {when}: {comm} named from the host file: {lines:?}"
                );
            }
        }
    }
}
