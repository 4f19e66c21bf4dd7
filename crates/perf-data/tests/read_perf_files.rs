//! The reader against `perf` itself: files recorded by `perf record` here, counted by
//! `perf script`, must read with the same samples, events, threads and stacks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_perf_data::{PerfData, RecordKind};
use cpiflame_testkit::perf_works;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cpiflame-perf-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn record(out: &Path, args: &[&str]) {
    let status = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(out)
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "perf record {args:?} failed");
}

/// (event, tid) -> number of samples, as `perf script` prints them.
fn perf_script_counts(data: &Path) -> BTreeMap<(String, i32), usize> {
    let out = Command::new("perf")
        .args(["script", "-F", "event,tid", "-i"])
        .arg(data)
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut words = line.split_whitespace();
        let (Some(tid), Some(event)) = (words.next(), words.next()) else {
            continue;
        };
        let event = event.trim_end_matches(':').to_string();
        *counts.entry((event, tid.parse().unwrap())).or_insert(0) += 1;
    }
    counts
}

fn our_counts(data: &Path) -> BTreeMap<(String, i32), usize> {
    let file = PerfData::open(data).unwrap();
    let mut counts = BTreeMap::new();
    let mut last_time = 0;
    for r in file.records() {
        let r = r.unwrap();
        if let RecordKind::Sample(s) = r.kind {
            let name = file.attrs[s.attr].name.clone().unwrap();
            *counts.entry((name, s.tid.unwrap())).or_insert(0) += 1;
            let t = s.time.unwrap();
            assert!(
                t >= last_time,
                "samples out of time order at {:#x}",
                r.offset
            );
            last_time = t;
        }
    }
    counts
}

#[test]
fn sample_counts_per_event_and_thread_match_perf_script() {
    if !perf_works() {
        cpiflame_testkit::unavailable(
            "perf is not installed or cannot record here (`perf record -e cpu-clock` fails)",
        );
        return;
    }
    let data = tmp("dwarf.data");
    // Two software events, DWARF call graphs, a multi-threaded command (perf itself spawns
    // none; `sh -c` with a pipeline gives several processes).
    record(
        &data,
        &[
            "-e",
            "cpu-clock,task-clock",
            "--call-graph",
            "dwarf",
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done | cat",
        ],
    );
    let theirs = perf_script_counts(&data);
    let ours = our_counts(&data);
    assert!(!ours.is_empty());
    assert_eq!(ours, theirs);
}

#[test]
fn dwarf_samples_carry_registers_and_stack_bytes() {
    if !perf_works() {
        cpiflame_testkit::unavailable(
            "perf is not installed or cannot record here (`perf record -e cpu-clock` fails)",
        );
        return;
    }
    let data = tmp("regs.data");
    record(
        &data,
        &[
            "-e",
            "cpu-clock",
            "--call-graph",
            "dwarf,4096",
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
        ],
    );
    let file = PerfData::open(&data).unwrap();
    let mut user_samples = 0;
    for r in file.records() {
        if let RecordKind::Sample(s) = r.unwrap().kind {
            let stack = s.user_stack.expect("stack copy");
            assert_eq!(stack.data.len(), 4096);
            if s.cpumode == cpiflame_perf_data::abi::misc::USER {
                user_samples += 1;
                let regs = s.user_regs.expect("user regs");
                let sp = regs.get(cpiflame_perf_data::abi::x86_64_regs::SP).unwrap();
                let ip = regs.get(cpiflame_perf_data::abi::x86_64_regs::IP).unwrap();
                assert_eq!(Some(ip), s.ip);
                assert!(sp != 0);
                assert!(stack.dyn_size <= 4096);
            }
        }
    }
    assert!(user_samples > 0);
    assert_eq!(file.attrs[0].sample_stack_user, 4096);
    assert_eq!(file.attrs[0].name.as_deref(), Some("cpu-clock"));
    assert!(file
        .meta
        .build_ids
        .iter()
        .any(|b| b.path.ends_with(b"/dash")
            || b.path.ends_with(b"/sh")
            || b.path.ends_with(b"bash")));
    assert!(file.meta.cmdline.iter().any(|c| c == "record"));
}

/// The feature sections cpiflame reads itself (bounded against hostile counts) say what
/// linux-perf-data, samply's reader, says of the same perf-written file.
#[test]
fn feature_sections_agree_with_linux_perf_data() {
    if !perf_works() {
        cpiflame_testkit::unavailable(
            "perf is not installed or cannot record here (`perf record -e cpu-clock` fails)",
        );
        return;
    }
    let data = tmp("features.data");
    record(
        &data,
        &[
            "-e",
            "cpu-clock,task-clock",
            "--",
            "sh",
            "-c",
            "echo x >/dev/null",
        ],
    );
    let ours = PerfData::open(&data).unwrap();
    let bytes = std::fs::read(&data).unwrap();
    let theirs = linux_perf_data::PerfFileReader::parse_file(std::io::Cursor::new(&bytes[..]))
        .unwrap()
        .perf_file;
    let s = |r: Result<Option<&str>, linux_perf_data::Error>| r.unwrap().map(String::from);
    let m = &ours.meta;
    assert_eq!(m.hostname, s(theirs.hostname()));
    assert_eq!(m.os_release, s(theirs.os_release()));
    assert_eq!(m.arch, s(theirs.arch()));
    assert_eq!(m.perf_version, s(theirs.perf_version()));
    assert_eq!(m.cpu_desc, s(theirs.cpu_desc()));
    assert_eq!(m.cpuid, s(theirs.cpu_id()));
    assert_eq!(
        m.nr_cpus_online,
        theirs.nr_cpus().unwrap().map(|n| n.nr_cpus_online)
    );
    let cmdline: Vec<String> = theirs
        .cmdline()
        .unwrap()
        .unwrap()
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(m.cmdline, cmdline);
    let range = theirs
        .sample_time_range()
        .unwrap()
        .expect("perf writes SAMPLE_TIME");
    assert_eq!(
        m.sample_time,
        Some((range.first_sample_time, range.last_sample_time))
    );
    assert!(range.first_sample_time > 0 && range.last_sample_time >= range.first_sample_time);
    let mut build_ids: Vec<(Vec<u8>, Vec<u8>)> = theirs
        .build_ids()
        .unwrap()
        .into_values()
        .map(|i| (i.path, i.build_id))
        .collect();
    build_ids.sort();
    let ours_ids: Vec<(Vec<u8>, Vec<u8>)> = m
        .build_ids
        .iter()
        .map(|b| (b.path.clone(), b.build_id.clone()))
        .collect();
    assert!(!ours_ids.is_empty());
    assert_eq!(ours_ids, build_ids);
    let names: Vec<Option<&str>> = ours.attrs.iter().map(|a| a.name.as_deref()).collect();
    let their_names: Vec<Option<&str>> =
        theirs.event_attributes().iter().map(|d| d.name()).collect();
    assert_eq!(names, their_names);
    assert_eq!(names, [Some("cpu-clock"), Some("task-clock")]);
}

/// perf's `--namespaces` records read as perf reads them (`perf script -D`: the offset,
/// pid/tid and count of each PERF_RECORD_NAMESPACES), and their (dev, inode) pairs are the
/// namespaces of this process, which the recorded command shares (`/proc/self/ns/*`, in the
/// kernel's order).
#[test]
fn namespaces_records_match_perf_script_and_proc() {
    use std::os::unix::fs::MetadataExt;
    if !perf_works() {
        cpiflame_testkit::unavailable(
            "perf is not installed or cannot record here (`perf record -e cpu-clock` fails)",
        );
        return;
    }
    let data = tmp("namespaces.data");
    record(&data, &["--namespaces", "-e", "cpu-clock", "--", "true"]);
    let out = Command::new("perf")
        .args(["script", "-D", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success());
    // `0 0x270 [0x98]: PERF_RECORD_NAMESPACES 30640/30640 - nr_namespaces: 7`
    let theirs: Vec<(u64, i32, i32, usize)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (head, rest) = l.split_once(": PERF_RECORD_NAMESPACES ")?;
            let offset = head.split_whitespace().nth(1)?.strip_prefix("0x")?;
            let (ids, nr) = rest.split_once(" - nr_namespaces: ")?;
            let (pid, tid) = ids.split_once('/')?;
            Some((
                u64::from_str_radix(offset, 16).ok()?,
                pid.parse().ok()?,
                tid.parse().ok()?,
                nr.trim().parse().ok()?,
            ))
        })
        .collect();
    assert!(!theirs.is_empty(), "perf wrote no NAMESPACES record");
    let file = PerfData::open(&data).unwrap();
    let mut ours = Vec::new();
    for r in file.records_in_file_order() {
        let r = r.unwrap();
        if let RecordKind::Namespaces(ns) = r.kind {
            ours.push((r.offset, ns.pid, ns.tid, ns.len()));
            let names = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup", "time"];
            for (i, name) in names.iter().enumerate().take(ns.len()) {
                let Ok(m) = std::fs::metadata(format!("/proc/self/ns/{name}")) else {
                    continue;
                };
                assert_eq!(ns.link(i), Some((m.dev(), m.ino())), "{name}");
            }
        }
    }
    assert_eq!(ours, theirs);
    let _ = std::fs::remove_file(&data);
}
