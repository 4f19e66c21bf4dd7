//! `record --jit`: the command gets what each JIT runtime needs to write its perf map or JIT
//! dump (the user's values appended to, never replaced), said in one line; without a
//! command it is refused in one line. Every recording keeps the JIT dumps its processes
//! mapped and their perf maps in `OUTPUT.jit/` (a test program that maps files named as
//! runtimes name their dumps, node's `--perf-prof`, a JDK 17's perf map at exit).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{ok, s, Dir};

fn cpiflame() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
}

/// The command sees the variables `--jit` set, the user's own values kept in front.
#[test]
fn the_command_gets_the_runtimes_variables_after_the_users() {
    if !cpiflame_testkit::perf_works() {
        cpiflame_testkit::unavailable("software sampling does not work here");
        return;
    }
    let dir = Dir::new("record-jit-env");
    let data = dir.path("env.data");
    let show = "for v in PYTHON_PERF_JIT_SUPPORT PYTHONPERFSUPPORT DOTNET_PerfMapEnabled \
                NODE_OPTIONS JAVA_TOOL_OPTIONS; do eval \"echo $v=\\$$v\"; done";
    let out = cpiflame()
        .args(["record", "--jit", "-o", s(&data), "--", "sh", "-c", show])
        .env("NODE_OPTIONS", "--max-old-space-size=300")
        .env("DOTNET_PerfMapEnabled", "3")
        .env("JAVA_TOOL_OPTIONS", "-Xss2m")
        .env_remove("PYTHON_PERF_JIT_SUPPORT")
        .env_remove("PYTHONPERFSUPPORT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let seen: Vec<&str> = stdout.lines().collect();
    assert_eq!(seen[..4], [
        "PYTHON_PERF_JIT_SUPPORT=1",
        "PYTHONPERFSUPPORT=1",
        "DOTNET_PerfMapEnabled=3",
        "NODE_OPTIONS=--max-old-space-size=300 --perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack",
    ], "{stdout}");
    assert!(
        seen[4].starts_with("JAVA_TOOL_OPTIONS=-Xss2m -XX:+PreserveFramePointer"),
        "{stdout}"
    );
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("--jit:")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    for part in [
        "PYTHON_PERF_JIT_SUPPORT=1",
        "NODE_OPTIONS+=\"--perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack\"",
        "kept as set: DOTNET_PerfMapEnabled=3",
    ] {
        assert!(said[0].contains(part), "{part}: {}", said[0]);
    }

    // Without a command there is nothing to set the variables for.
    for args in [&["-p", "1"][..], &["-a", "--duration", "0.1"][..]] {
        let mut all = vec!["record", "--jit", "-o", s(&data)];
        all.extend(args);
        let out = cpiflame().args(&all).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--jit sets the runtimes' variables for the command"),
            "{stderr}"
        );
    }
}

/// The test program (`support/data/jit_writer.c`), built into `dir`.
fn jit_writer(dir: &Dir) -> Option<PathBuf> {
    support::sampled_data_program(dir, "jit_writer")
}

/// What a file written by `jit_writer` of process `pid` holds.
fn written_by(pid: i32) -> Vec<u8> {
    format!("{pid}\n").bytes().cycle().take(4096).collect()
}

/// The `word PID` line of the program's output.
fn pid_of(stdout: &str, word: &str) -> i32 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(word)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {word:?} line in {stdout:?}"))
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Removes the perf map a test's process wrote in /tmp, and ends a child left running.
struct Cleanup(Vec<PathBuf>, Vec<i32>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
        for &pid in &self.1 {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Kept beside the output in `OUTPUT.jit/`: the dump the command wrote into the current
/// directory (moved: nothing left there), the dump that was there before it started (copied:
/// it stays), the dump of a child still running at the end (copied: it stays), and the
/// command's perf map (copied from /tmp); the final line counts them. A second recording to
/// the same output keeps the first's folder as `OUTPUT.old.jit`, beside `OUTPUT.old`.
#[test]
fn jit_dumps_and_perf_maps_are_kept_beside_the_recording() {
    let dir = Dir::new("record-jit-keep");
    let Some(exe) = jit_writer(&dir) else { return };
    let work = dir.path("work");
    let rec = dir.path("rec");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&rec).unwrap();
    let before = work.join("jit-1.dump");
    std::fs::write(&before, written_by(1)).unwrap();
    let data = rec.join("out.data");
    let out = cpiflame()
        .current_dir(&work)
        .args([
            "record",
            "-o",
            s(&data),
            "--",
            s(&exe),
            "0.3",
            "jit-1.dump",
            "3",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (pid, child) = (pid_of(&stdout, "pid "), pid_of(&stdout, "child "));
    let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    let _cleanup = Cleanup(vec![map.clone()], vec![child]);
    assert!(out.status.success(), "{stderr}");

    let kept = rec.join("out.data.jit");
    let own = format!("jit-{pid}.dump");
    let childs = format!("jit-{child}.dump");
    let mut want = vec![
        own.clone(),
        childs.clone(),
        "jit-1.dump".into(),
        format!("perf-{pid}.map"),
    ];
    want.sort();
    assert_eq!(names_in(&kept), want, "{stderr}");
    assert_eq!(std::fs::read(kept.join(&own)).unwrap(), written_by(pid));
    assert_eq!(
        std::fs::read(kept.join(&childs)).unwrap(),
        written_by(child)
    );
    assert_eq!(
        std::fs::read(kept.join("jit-1.dump")).unwrap(),
        written_by(1)
    );
    assert_eq!(
        std::fs::read(kept.join(format!("perf-{pid}.map"))).unwrap(),
        std::fs::read(&map).unwrap()
    );
    // Moved: only the finished command's own dump, which was not there before.
    let mut left = vec![childs.clone(), "jit-1.dump".to_string()];
    left.sort();
    assert_eq!(names_in(&work), left);
    let line = stderr.lines().find(|l| l.contains("wrote ")).unwrap();
    assert!(
        line.ends_with(&format!(
            "; 3 JIT dumps, 1 perf map kept in {} (1 moved there from the current directory)",
            kept.display()
        )),
        "{line}"
    );

    // Again to the same output: the first recording's folder goes with its file.
    unsafe { libc::kill(child, libc::SIGKILL) };
    let out = cpiflame()
        .current_dir(&work)
        .args(["record", "-o", s(&data), "--", s(&exe), "0.1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let second = pid_of(&stdout, "pid ");
    let _cleanup2 = Cleanup(
        vec![PathBuf::from(format!("/tmp/perf-{second}.map"))],
        vec![],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(rec.join("out.data.old").is_file());
    assert_eq!(names_in(&rec.join("out.data.old.jit")), want);
    let mut now = vec![format!("jit-{second}.dump"), format!("perf-{second}.map")];
    now.sort();
    assert_eq!(names_in(&kept), now);
}

/// With `--switch-output` the folder is named after the OUTPUT given, beside its files
/// `OUTPUT.TIMESTAMP`.
#[test]
fn switch_output_files_share_the_folder_named_after_the_output() {
    let dir = Dir::new("record-jit-switch");
    let Some(exe) = jit_writer(&dir) else { return };
    let data = dir.path("out.data");
    let out = cpiflame()
        .current_dir(dir.root())
        .args([
            "record",
            "--switch-output=signal",
            "-o",
            s(&data),
            "--",
            s(&exe),
            "0.2",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let pid = pid_of(&stdout, "pid ");
    let _cleanup = Cleanup(vec![PathBuf::from(format!("/tmp/perf-{pid}.map"))], vec![]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want = vec![format!("jit-{pid}.dump"), format!("perf-{pid}.map")];
    want.sort();
    assert_eq!(names_in(&dir.path("out.data.jit")), want);
    let pieces: Vec<String> = names_in(dir.root())
        .into_iter()
        .filter(|n| n.starts_with("out.data.") && n.len() == "out.data.".len() + 16)
        .collect();
    assert_eq!(pieces.len(), 1, "{:?}", names_in(dir.root()));
    assert!(!dir.path(&format!("jit-{pid}.dump")).exists());
}

/// `node --perf-prof` writes its JIT dump into its current directory: the recording moves it
/// beside itself, so nothing is left in the user's way; with `--jit` (which gives node
/// `--perf-prof`), V8's log of the process there too.
#[test]
fn nodes_dump_is_moved_out_of_the_current_directory() {
    if !cpiflame_testkit::perf_works() {
        cpiflame_testkit::unavailable("software sampling does not work here");
        return;
    }
    if Command::new("node").arg("--version").output().is_err() {
        cpiflame_testkit::unavailable("node is not installed");
        return;
    }
    let dir = Dir::new("record-jit-node");
    let script = dir.path("fib.js");
    std::fs::write(
        &script,
        "function fib(n){return n<2?n:fib(n-1)+fib(n-2)}\n\
         let s=0;for(let i=0;i<10;i++)s+=fib(24);console.log(process.pid, s)\n",
    )
    .unwrap();
    for (flags, data, logs) in [
        (
            &["--", "node", "--perf-prof", "fib.js"][..],
            "plain.data",
            0,
        ),
        (&["--jit", "--", "node", "fib.js"][..], "jit.data", 1),
    ] {
        let mut args = vec!["record", "-o", data];
        args.extend(flags);
        let out = cpiflame()
            .current_dir(dir.root())
            .args(&args)
            .env_remove("NODE_OPTIONS")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let pid: i32 = stdout.split_whitespace().next().unwrap().parse().unwrap();
        let kept = names_in(&dir.path(&format!("{data}.jit")));
        assert!(kept.contains(&format!("jit-{pid}.dump")), "{kept:?}");
        let v8: Vec<&String> = kept.iter().filter(|n| n.ends_with("-v8.log")).collect();
        assert_eq!(v8.len(), logs, "{kept:?}");
        let dump = std::fs::read(dir.path(&format!("{data}.jit/jit-{pid}.dump"))).unwrap();
        // The jitdump header's magic, "JiTD" in the writer's byte order.
        assert!(
            dump.starts_with(b"DTiJ") || dump.starts_with(b"JiTD"),
            "{:?}",
            &dump[..4]
        );
        let here = names_in(dir.root());
        assert!(!here.contains(&format!("jit-{pid}.dump")), "{here:?}");
        if logs == 1 {
            assert!(!here.iter().any(|n| n.ends_with("-v8.log")), "{here:?}");
        }
        for f in here.iter().filter(|n| n.ends_with("-v8.log")) {
            std::fs::remove_file(dir.path(f)).unwrap();
        }
    }
}

/// Java on JDK 17 and later: `--jit` asks for a perf map at exit, which is kept beside the
/// recording, the same as the JVM left in /tmp.
#[test]
fn a_jvms_perf_map_at_exit_is_kept() {
    if !cpiflame_testkit::perf_works() {
        cpiflame_testkit::unavailable("software sampling does not work here");
        return;
    }
    let vars = cpiflame_record::runtimes::JitVars::from_vars(|n| std::env::var_os(n));
    let java = [std::ffi::OsString::from("java")];
    match cpiflame_record::runtimes::find_jdk(&java, &vars) {
        Some(jdk) if jdk.major >= 17 => {}
        other => {
            cpiflame_testkit::unavailable(format!("no JDK 17 or later here ({other:?})"));
            return;
        }
    }
    let dir = Dir::new("record-jit-java");
    std::fs::write(
        dir.path("Hello.java"),
        "public class Hello { public static void main(String[] a) { long s = 0; \
         for (int i = 0; i < 20000000; i++) s += i % 7; \
         System.out.println(ProcessHandle.current().pid() + \" \" + s); } }\n",
    )
    .unwrap();
    let data = dir.path("java.data");
    let out = cpiflame()
        .current_dir(dir.root())
        .args([
            "record",
            "--jit",
            "-F",
            "200",
            "--call-graph",
            "none",
            "-o",
            s(&data),
        ])
        .args(["--", "java", "Hello.java"])
        .env_remove("JAVA_TOOL_OPTIONS")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let pid: i32 = stdout.split_whitespace().next().unwrap().parse().unwrap();
    let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    let _cleanup = Cleanup(vec![map.clone()], vec![]);
    let kept = std::fs::read(dir.path(&format!("java.data.jit/perf-{pid}.map"))).unwrap();
    assert_eq!(kept, std::fs::read(&map).unwrap());
    assert!(kept.len() > 1000, "{} bytes", kept.len());
    assert!(stderr.contains("1 perf map kept in"), "{stderr}");
}

/// A container's JIT files: its process (own mount and pid namespaces; `/tmp` a tmpfs only
/// it sees) writes `/tmp/w/jit-1.dump` and `/tmp/perf-1.map` as pid 1. After it and its namespaces
/// are gone both are kept, read through its root: the dump under its own name, the map under
/// the recording's (host) pid, which is what a reader looks it up by.
#[test]
fn a_containers_dump_and_perf_map_are_kept_after_it_is_gone() {
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: unshare -m -p and a tmpfs mount");
        return;
    }
    let dir = Dir::new("record-jit-container");
    let Some(exe) = jit_writer(&dir) else { return };
    // The writer runs from the container's own tmpfs, so its dump (`/tmp/w/jit-1.dump`) and
    // perf map are files only the container sees (the test's folder is under /tmp, hidden
    // once the tmpfs is mounted: the program is read through a descriptor opened before).
    // The shell spins first and sleeps while the recorder drains, so the process's first
    // samples are seen before its perf map exists: the map is then read at the end, through
    // the root and mount namespace held since.
    let script = format!(
        "exec 3< {} && mount -t tmpfs cpiflame-jit /tmp && mkdir /tmp/w && cd /tmp/w \
         && cat <&3 > jit_writer && chmod +x jit_writer \
         && i=0 && while [ $i -lt 30000 ]; do i=$((i+1)); done && sleep 0.3 \
         && exec ./jit_writer 0.3",
        s(&exe)
    );
    let data = dir.path("ctr.data");
    let out = cpiflame()
        .args([
            "record",
            "-o",
            s(&data),
            "--",
            "unshare",
            "-m",
            "--propagation",
            "private",
        ])
        .args(["-p", "--fork", "sh", "-c", &script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(pid_of(&String::from_utf8_lossy(&out.stdout), "pid "), 1);
    // The writer's pid on the host, from the recording's COMM records.
    let file = cpiflame_perf_data::PerfData::open(&data).unwrap();
    let host_pid = file
        .records()
        .filter_map(|r| match r.unwrap().kind {
            cpiflame_perf_data::RecordKind::Comm { pid, name, .. } if name == b"jit_writer" => {
                Some(pid)
            }
            _ => None,
        })
        .next()
        .expect("a COMM record of jit_writer");
    assert_ne!(host_pid, 1);
    let kept = dir.path("ctr.data.jit");
    let map = format!("perf-{host_pid}.map");
    // Another process of the recording (`unshare`, `sh`) whose pid an earlier program on
    // the host left a /tmp/perf-PID.map for (the suite's JIT tests write them) has that
    // map kept too, as perf would read it: only the dump and the writer's map are asked for.
    let pids: std::collections::BTreeSet<i32> = file
        .records()
        .filter_map(|r| match r.unwrap().kind {
            cpiflame_perf_data::RecordKind::Comm { pid, .. } => Some(pid),
            _ => None,
        })
        .collect();
    let names = names_in(&kept);
    for want in ["jit-1.dump", map.as_str()] {
        assert!(
            names.iter().any(|n| n == want),
            "{want}: {names:?} {stderr}"
        );
    }
    for other in names.iter().filter(|n| *n != "jit-1.dump" && **n != map) {
        let pid = other
            .strip_prefix("perf-")
            .and_then(|n| n.strip_suffix(".map"))
            .and_then(|n| n.parse::<i32>().ok());
        assert!(
            pid.is_some_and(|p| pids.contains(&p) && p != host_pid),
            "{other} kept: not a perf map of another process of the recording ({names:?})"
        );
    }
    assert_eq!(
        std::fs::read(kept.join("jit-1.dump")).unwrap(),
        written_by(1)
    );
    assert_eq!(
        std::fs::read_to_string(kept.join(&map)).unwrap(),
        "7f0000001000 40 fake_jit_function\n"
    );
}

/// `--jit-dir DIR` is taken by every reading command: a folder is read (the same stacks
/// as without it when it holds nothing of the recording's), anything else is one error line
/// naming it.
#[test]
fn every_reading_command_takes_jit_dir() {
    let dir = Dir::new("record-jit-dir");
    let Some(exe) = jit_writer(&dir) else { return };
    let data = dir.path("r.data");
    let out = cpiflame()
        .current_dir(dir.root())
        .args(["record", "-o", s(&data), "--", s(&exe), "0.1"])
        .output()
        .unwrap();
    let pid = pid_of(&String::from_utf8_lossy(&out.stdout), "pid ");
    let _cleanup = Cleanup(vec![PathBuf::from(format!("/tmp/perf-{pid}.map"))], vec![]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fold = |extra: &[&str]| ok(&support::cpiflame(&[&["fold", s(&data)], extra].concat()));
    let empty = dir.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(
        fold(&["--jit-dir", s(&empty), "--jit-dir", s(dir.root())]),
        fold(&[])
    );
    let missing = dir.path("missing");
    for command in [
        &["fold"][..],
        &["render", "-o", "/dev/null"],
        &["timeline", "-o", "/dev/null"],
        &["report"],
        &["script"],
        &["annotate"],
        &["convert", "--to", "pprof", "-o", "/dev/null"],
        &["c2c"],
        &["diff", s(&data), "-o", "/dev/null"],
    ] {
        let out = cpiflame()
            .args(command)
            .args(["--jit-dir", s(&missing), s(&data)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command:?}: {stderr}");
        assert!(
            stderr.contains(&format!("--jit-dir {}: not a folder", s(&missing))),
            "{command:?}: {stderr}"
        );
    }
}
