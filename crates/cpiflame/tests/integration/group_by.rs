//! `--group-by cgroup|process|thread|comm`: the root frames of every stack. Synthetic files
//! with known cgroups, processes and threads give exact folded lines (and the defaults: cgroup
//! when samples carry cgroup ids, process for a system-wide command line, else comm); perf's
//! own recordings are checked against `perf report --sort cgroup` / `--sort pid` and `perf
//! script -F comm,pid,tid` on the same file.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use cpiflame_perf_data::abi::{attr_type, misc, sample};
use cpiflame_perf_data::synth::Recording;
use cpiflame_perf_data::write::{attr_flags, namespaces_record, EventAttr, Features, SampleFields};
use support::{cpiflame, ok, s, sampling_fixtures, synthetic_pid, Dir};

/// Samples (pid, tid, cgroup id, count) of the synthetic recording.
fn synthetic_samples(p: [i32; 3]) -> Vec<(i32, i32, u64, u64)> {
    vec![
        (p[0], p[0], 1, 3),
        (p[1], p[1], 0x1234, 2),
        (p[1], p[1] + 1, 0x1234, 4),
        (p[2], p[2], 0x99, 1),
    ]
}

/// A cpu-clock recording of three processes: `init` (p0) in cgroup `/` (id 1), `nginx` (p1,
/// threads `nginx` and `worker`) in `/system.slice/nginx.service` (id 0x1234), and p2, of no
/// COMM record, in a cgroup of no CGROUP record (0x99). `cgroups`: samples carry their ids;
/// `cmdline`: the command line the file keeps.
fn synthetic(dir: &Dir, name: &str, cgroups: bool, cmdline: &str) -> (PathBuf, [i32; 3]) {
    // Salts apart: nginx's worker thread is p1 + 1.
    let p = [0, 1, 4].map(|i| synthetic_pid(0, i));
    let mut sample_type = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME;
    if cgroups {
        sample_type |= sample::CGROUP;
    }
    let attr = EventAttr {
        type_: attr_type::SOFTWARE,
        config: 0,
        sample_period_or_freq: 250_000,
        sample_type,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM | attr_flags::CGROUP,
        name: Some("cpu-clock".into()),
        ids: vec![5],
        ..EventAttr::default()
    };
    let path = dir.path(name);
    let mut rec = Recording::create(&path, vec![attr]);
    rec.cgroup(1, "/", 1)
        .cgroup(0x1234, "/system.slice/nginx.service", 1)
        .comm(p[0], p[0], "init", 2)
        .comm(p[1], p[1], "nginx", 2)
        .comm(p[1], p[1] + 1, "worker", 3);
    let mut time = 10;
    for (pid, tid, cgroup, n) in synthetic_samples(p) {
        for _ in 0..n {
            time += 1;
            rec.sample(
                0,
                &SampleFields {
                    id: 5,
                    ip: 0xffff_ffff_8100_0000,
                    pid,
                    tid,
                    time,
                    cgroup,
                    misc: misc::KERNEL,
                    ..SampleFields::default()
                },
            );
        }
    }
    let features = Features::from_host(cmdline.split(' ').map(String::from).collect());
    rec.finish(&features);
    (path, p)
}

/// The root frames of each folded line (the frames before the kernel leaf, which is the
/// only other frame) with their summed counts.
fn roots(folded: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let (roots, _leaf) = stack.rsplit_once(';').unwrap();
        *out.entry(roots.to_string()).or_default() += n.parse::<u64>().unwrap();
    }
    out
}

fn fold(file: &Path, flags: &[&str]) -> BTreeMap<String, u64> {
    let mut args = vec!["fold", s(file)];
    args.extend(flags);
    roots(&ok(&cpiflame(&args)))
}

fn expect(pairs: &[(String, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().cloned().collect()
}

/// The synthetic recording's roots by process.
fn by_process(p: [i32; 3]) -> BTreeMap<String, u64> {
    expect(&[
        (format!("init [{}]", p[0]), 3),
        (format!("nginx [{}]", p[1]), 6),
        (format!(":{0} [{0}]", p[2]), 1),
    ])
}

/// The synthetic recording's roots by comm (its threads' names).
fn by_comm(p: [i32; 3]) -> BTreeMap<String, u64> {
    expect(&[
        ("init".to_string(), 3),
        ("nginx".to_string(), 2),
        ("worker".to_string(), 4),
        (format!(":{}", p[2]), 1),
    ])
}

/// Every grouping on known stacks: the cgroup's path from its CGROUP record (or the id when
/// none names it), the process named by its main thread for all its threads, threads by
/// their own names, comm roots as before; the default is cgroup for a system-wide recording
/// whose samples carry cgroup ids.
#[test]
fn synthetic_roots_by_cgroup_process_thread_and_comm() {
    let dir = Dir::new("group-by");
    let (file, p) = synthetic(&dir, "cg.data", true, "perf record -a -e cpu-clock");
    let cgroup = expect(&[
        (format!("/;init [{}]", p[0]), 3),
        (format!("/system.slice/nginx.service;nginx [{}]", p[1]), 6),
        (format!("[unknown cgroup 0x99];:{0} [{0}]", p[2]), 1),
    ]);
    assert_eq!(fold(&file, &[]), cgroup, "the default with cgroup ids");
    assert_eq!(fold(&file, &["--group-by", "cgroup"]), cgroup);
    assert_eq!(fold(&file, &["--group-by", "process"]), by_process(p));
    assert_eq!(
        fold(&file, &["--group-by", "thread"]),
        expect(&[
            (format!("init [{0}];init [{0}]", p[0]), 3),
            (format!("nginx [{0}];nginx [{0}]", p[1]), 2),
            (format!("nginx [{}];worker [{}]", p[1], p[1] + 1), 4),
            (format!(":{0} [{0}];:{0} [{0}]", p[2]), 1),
        ])
    );
    assert_eq!(fold(&file, &["--group-by", "comm"]), by_comm(p));
    // --pid/--tid keep stackcollapse-perf's comm roots, and choose them.
    assert_eq!(
        fold(&file, &["--tid"]),
        expect(&[
            (format!("init-{0}/{0}", p[0]), 3),
            (format!("nginx-{0}/{0}", p[1]), 2),
            (format!("worker-{}/{}", p[1], p[1] + 1), 4),
            (format!(":{0}-{0}/{0}", p[2]), 1),
        ])
    );

    // The report lists root frames with their kinds and totals, as functions are listed.
    let json = ok(&cpiflame(&["report", "--json", "--limit", "100", s(&file)]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut kinds = BTreeMap::new();
    for f in v["frames"].as_array().unwrap() {
        let kind = f["kind"].as_str().unwrap();
        if kind != "kernel" {
            let name = f["name"].as_str().unwrap().to_string();
            kinds.insert(
                (kind.to_string(), name),
                f["total_samples"].as_u64().unwrap(),
            );
        }
    }
    let want: BTreeMap<(String, String), u64> = [
        ("cgroup", "/".to_string(), 3),
        ("cgroup", "/system.slice/nginx.service".to_string(), 6),
        ("cgroup", "[unknown cgroup 0x99]".to_string(), 1),
        ("process", format!("init [{}]", p[0]), 3),
        ("process", format!("nginx [{}]", p[1]), 6),
        ("process", format!(":{0} [{0}]", p[2]), 1),
    ]
    .into_iter()
    .map(|(k, n, c)| ((k.to_string(), n), c))
    .collect();
    assert_eq!(kinds, want);

    // A thread frame and its process's frame of the same name are two rows, not one.
    let json = ok(&cpiflame(&[
        "report",
        "--json",
        "--group-by",
        "thread",
        s(&file),
    ]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let nginx = format!("nginx [{}]", p[1]);
    let rows: BTreeMap<&str, u64> = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == nginx.as_str())
        .map(|f| {
            (
                f["kind"].as_str().unwrap(),
                f["total_samples"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [("process", 6), ("thread", 2)].into_iter().collect());
    // The text table says which rows are threads (and cgroups); a process is its name.
    let text = ok(&cpiflame(&["report", "--group-by", "thread", s(&file)]));
    assert!(row_in(&text, &format!(" {nginx} (thread)")), "{text}");
    assert!(row_in(&text, &format!(" {nginx}")), "{text}");
    let text = ok(&cpiflame(&["report", s(&file)]));
    assert!(
        row_in(&text, " /system.slice/nginx.service (cgroup)"),
        "{text}"
    );

    // pprof: a `cgroup` label on every sample, its path (the samples' first value is their
    // count).
    let pb = dir.path("cg.pb.gz");
    ok(&cpiflame(&[
        "convert",
        s(&file),
        "--to",
        "pprof",
        "-o",
        s(&pb),
    ]));
    let profile = cpiflame_pprof::decode(&std::fs::read(&pb).unwrap()).unwrap();
    let text = |i: i64| profile.string_table[i as usize].clone();
    let mut by_cgroup: BTreeMap<String, i64> = BTreeMap::new();
    for sample in &profile.sample {
        let label = sample
            .label
            .iter()
            .find(|l| text(l.key) == "cgroup")
            .unwrap();
        *by_cgroup.entry(text(label.str)).or_default() += sample.value[0];
    }
    let want: BTreeMap<String, i64> = [
        ("/", 3),
        ("/system.slice/nginx.service", 6),
        ("[unknown cgroup 0x99]", 1),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_string(), n))
    .collect();
    assert_eq!(by_cgroup, want);

    // The SVG outlines cgroup frames and says what they are.
    let svg = ok(&cpiflame(&["render", s(&file)]));
    let at = svg
        .find("<title>/system.slice/nginx.service\n(cgroup)\n")
        .unwrap();
    let rect = &svg[at..at + svg[at..].find("</g>").unwrap()];
    assert!(rect.contains(r#"stroke-dasharray="4 2""#), "{rect}");
}

/// Two events, one sampling cgroup ids and one not: cgroup roots, the other event's samples
/// under `[no cgroup id]`.
#[test]
fn samples_of_an_event_without_cgroup_ids_have_a_root_of_their_own() {
    let dir = Dir::new("group-by-mixed");
    let pid = synthetic_pid(2, 0);
    let attr = |sample_type: u64, id: u64, name: &str| EventAttr {
        type_: attr_type::SOFTWARE,
        config: id - 5,
        sample_period_or_freq: 250_000,
        sample_type: sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample_type,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM,
        name: Some(name.into()),
        ids: vec![id],
        ..EventAttr::default()
    };
    let path = dir.path("mixed.data");
    let mut rec = Recording::create(
        &path,
        vec![
            attr(sample::CGROUP, 5, "cpu-clock"),
            attr(0, 6, "task-clock"),
        ],
    );
    rec.cgroup(1, "/", 1).comm(pid, pid, "app", 2);
    for (event, id, n) in [(0, 5, 2), (1, 6, 3)] {
        for t in 0..n {
            let fields = SampleFields {
                id,
                ip: 0xffff_ffff_8100_0000,
                pid,
                tid: pid,
                time: 10 + t,
                cgroup: 1,
                misc: misc::KERNEL,
                ..SampleFields::default()
            };
            rec.sample(event, &fields);
        }
    }
    rec.finish(&Features::from_host(vec![
        "perf".into(),
        "record".into(),
        "-a".into(),
    ]));
    let want = |event: &str, root: &str, n| {
        let folded = ok(&cpiflame(&["fold", "--event", event, s(&path)]));
        assert_eq!(
            roots(&folded),
            expect(&[(format!("{root};app [{pid}]"), n)])
        );
    };
    want("cpu-clock", "/", 2);
    want("task-clock", "[no cgroup id]", 3);
}

/// The default: `comm [pid]` for a system-wide command line (perf's `-a`, `-C`) without
/// cgroup ids, the comm otherwise (so graphs of one program do not change), cgroup ids or not.
#[test]
fn default_roots_follow_the_recording() {
    let dir = Dir::new("group-by-default");
    let (wide, p) = synthetic(&dir, "a.data", false, "/usr/bin/perf record -ag -- sleep 1");
    assert_eq!(fold(&wide, &[]), by_process(p));
    let (cpus, p) = synthetic(&dir, "c.data", false, "cpiflame record -C 0-1 -- sleep 1");
    assert_eq!(fold(&cpus, &[]), by_process(p));
    let (one, p) = synthetic(&dir, "p.data", false, "perf record -g -- ./app -a");
    assert_eq!(fold(&one, &[]), by_comm(p));
    let (ids, p) = synthetic(&dir, "g.data", true, "cpiflame record -- ./app");
    assert_eq!(fold(&ids, &[]), by_comm(p));
}

/// One error line, naming the file or the flag, for groupings the input cannot give.
#[test]
fn impossible_groupings_are_one_error_line() {
    let dir = Dir::new("group-by-errors");
    let (plain, _) = synthetic(&dir, "plain.data", false, "perf record -a");
    let (cg, _) = synthetic(&dir, "cg.data", true, "perf record -a");
    let folded = dir.path("x.folded");
    std::fs::write(&folded, "app;main 3\n").unwrap();
    for (args, want) in [
        (
            vec!["fold", "--group-by", "cgroup", s(&plain)],
            format!(
                "cpiflame: error: {}: --group-by cgroup: the samples carry no cgroup ids",
                s(&plain)
            ),
        ),
        (
            vec!["fold", "--pid", "--group-by", "thread", s(&cg)],
            format!(
                "cpiflame: error: {}: --group-by thread: --pid and --tid",
                s(&cg)
            ),
        ),
        (
            vec!["report", "--group-by", "process", s(&folded)],
            format!(
                "cpiflame: error: {}: --group-by process: text input has only the root frames",
                s(&folded)
            ),
        ),
        (
            vec!["fold", "--group-by", "pids", s(&cg)],
            "cpiflame fold: error: invalid value 'pids' for '--group-by <HOW>'".to_string(),
        ),
    ] {
        let out = cpiflame(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(&want), "{args:?}: {stderr}");
        // clap's refusal too (issue 41, item 4).
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

/// A NAMESPACES record whose count claims more (dev, inode) pairs than it holds: one error
/// line with the record's offset.
#[test]
fn a_short_namespaces_record_is_one_error_line_with_its_offset() {
    let dir = Dir::new("group-by-ns");
    let attr = EventAttr {
        type_: attr_type::SOFTWARE,
        sample_period_or_freq: 250_000,
        sample_type: sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::NAMESPACES,
        name: Some("cpu-clock".into()),
        ids: vec![5],
        ..EventAttr::default()
    };
    let path = dir.path("ns.data");
    let mut rec = Recording::create(&path, vec![attr.clone()]);
    let pid = synthetic_pid(1, 0);
    let sid = rec.sid(pid, pid, 1);
    let good = namespaces_record(&attr, pid, pid, &[(4, 0xf000_0001); 7], &sid).unwrap();
    let mut bad = namespaces_record(&attr, pid, pid + 1, &[(4, 0xf000_0002); 2], &sid).unwrap();
    // The count (after pid and tid) says 9 pairs; the record holds 2 and the trailer.
    bad[16..24].copy_from_slice(&9u64.to_ne_bytes());
    rec.comm(pid, pid, "app", 1).record(&good).record(&bad);
    rec.sample(
        0,
        &SampleFields {
            id: 5,
            ip: 0x1000,
            pid,
            tid: pid,
            time: 2,
            ..SampleFields::default()
        },
    );
    rec.finish(&Features::from_host(vec![
        "perf".into(),
        "record".into(),
        "-a".into(),
    ]));
    let bytes = std::fs::read(&path).unwrap();
    let offset = bytes.windows(bad.len()).position(|w| w == bad).unwrap();
    let out = cpiflame(&["fold", s(&path)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "cpiflame: error: {}: offset {offset:#x}: record type 16 is cut short: namespaces links (fewer bytes than the count says)\n",
            s(&path)
        )
    );
}

/// `perf script -F comm,pid,tid` lines (`comm pid/tid`) counted per (pid, tid, comm).
fn perf_threads(data: &Path) -> BTreeMap<(i64, i64, String), u64> {
    let mut counts = BTreeMap::new();
    for line in crate::system_wide::perf_script(data, "comm,pid,tid").lines() {
        let Some((comm, ids)) = line.trim().rsplit_once(' ') else {
            continue;
        };
        let (pid, tid) = ids.split_once('/').unwrap();
        let key = (
            pid.parse().unwrap(),
            tid.parse().unwrap(),
            comm.trim().to_string(),
        );
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// `--group-by thread` on perf's recording of a program with named threads: one process frame
/// `threads [pid]` (its main thread's name) and under it a frame per thread, `comm [tid]`,
/// with as many samples as `perf script` shows for that thread.
#[test]
fn threads_of_a_process_split_by_tid_as_perf_script_counts_them() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("group-by-threads");
    let data = dir.path("threads.data");
    support::perf_record(
        &data,
        "cpu-clock",
        &["--call-graph", "fp"],
        &[s(&f.threads), "0.3"],
    )
    .unwrap();
    let perf = perf_threads(&data);
    let pids: Vec<i64> = perf.keys().map(|k| k.0).collect();
    let pid = pids[0];
    assert!(pids.iter().all(|&p| p == pid), "one process: {perf:?}");
    let want: BTreeMap<String, u64> = perf
        .iter()
        .map(|((_, tid, comm), n)| (format!("threads [{pid}];{comm} [{tid}]"), *n))
        .collect();
    assert!(want.len() >= 4, "main, heavy, light, recurse: {want:?}");
    let folded = ok(&cpiflame(&[
        "fold",
        "--group-by",
        "thread",
        "--no-kernel",
        s(&data),
    ]));
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let mut frames = stack.split(';');
        let roots = format!("{};{}", frames.next().unwrap(), frames.next().unwrap());
        *got.entry(roots).or_default() += n.parse::<u64>().unwrap();
    }
    assert_eq!(got, want);
    // Not system-wide, no cgroup ids: comm roots by default, as before.
    let plain = ok(&cpiflame(&["fold", "--no-kernel", s(&data)]));
    assert_eq!(
        plain,
        ok(&cpiflame(&[
            "fold",
            "--group-by",
            "comm",
            "--no-kernel",
            s(&data)
        ]))
    );
    assert!(plain.lines().any(|l| l.starts_with("heavy;")), "{plain}");
}

/// A cgroup v2 directory made for a test, removed when dropped (after its processes ended).
struct TestCgroup {
    path: PathBuf,
    /// Its path as perf and the kernel name it, from the cgroup v2 root.
    name: String,
}

impl TestCgroup {
    fn new() -> Result<TestCgroup, String> {
        let mounts = std::fs::read_to_string("/proc/mounts").map_err(|e| e.to_string())?;
        let root = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.len() > 2 && w[2] == "cgroup2")
            .map(|w| PathBuf::from(w[1]))
            .ok_or("no cgroup v2 hierarchy mounted")?;
        let name = format!("cpiflame-group-by-{}", std::process::id());
        let path = root.join(&name);
        std::fs::create_dir(&path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        Ok(TestCgroup {
            path,
            name: format!("/{name}"),
        })
    }

    fn admit(&self, pid: u32) {
        std::fs::write(self.path.join("cgroup.procs"), pid.to_string()).unwrap();
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // The processes in it are reaped by now; an empty cgroup's directory is removed.
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// Processes killed and reaped when dropped.
struct Reaped(Vec<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `perf report --sort KEY --stdio -q` rows: the percentage of each entry.
fn perf_report(data: &Path, key: &str) -> BTreeMap<String, f64> {
    let out = Command::new("perf")
        .args(["report", "-i", s(data), "--sort", key, "--stdio", "-q"])
        .env("PERF_PAGER", "cat")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (pct, name) = l.trim().split_once('%')?;
            Some((name.trim().to_string(), pct.trim().parse().ok()?))
        })
        .collect()
}

/// perf's system-wide recording with `--all-cgroups` of two busy processes, one moved into a
/// test cgroup: the graph's roots are cgroups by default, each with perf report's share
/// (`--sort cgroup`), and processes `comm [pid]` with the pids and samples `perf script`
/// gives and perf report's share (`--sort pid`: per thread, and these are single-threaded).
#[test]
fn host_changing_system_wide_cgroup_and_process_shares_match_perf_report() {
    let Some(f) = sampling_fixtures() else { return };
    if !cpiflame_testkit::is_root() {
        cpiflame_testkit::unavailable("needs root: makes a cgroup and records system-wide");
        return;
    }
    let cgroup = match TestCgroup::new() {
        Ok(c) => c,
        Err(e) => {
            cpiflame_testkit::unavailable(format!("a test cgroup: {e}"));
            return;
        }
    };
    let dir = Dir::new("group-by-cgroups");
    let busy = Reaped(vec![
        support::start_loop(f, &dir, "gb_outside"),
        support::start_loop(f, &dir, "gb_inside"),
    ]);
    let (outside, inside) = (busy.0[0].id(), busy.0[1].id());
    cgroup.admit(inside);
    let data = dir.path("all.data");
    support::perf_record_with(
        &data,
        "cpu-clock",
        &["-q", "-a", "--all-cgroups"],
        &["sleep", "0.5"],
    )
    .unwrap();
    drop(busy);

    let json = ok(&cpiflame(&[
        "report",
        "--json",
        "--limit",
        "1000000",
        s(&data),
    ]));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let share = |kind: &str| -> BTreeMap<String, f64> {
        v["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["kind"] == kind)
            .map(|f| {
                let name = f["name"].as_str().unwrap().to_string();
                (name, 100.0 * f["total_share"].as_f64().unwrap())
            })
            .collect()
    };
    let ours = share("cgroup");
    let perf = perf_report(&data, "cgroup");
    assert!(perf.contains_key(&cgroup.name), "{perf:?}");
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        perf.keys().collect::<Vec<_>>()
    );
    for (name, pct) in &perf {
        // perf prints two decimals.
        assert!(
            (ours[name] - pct).abs() <= 0.0051,
            "{name}: ours {} perf {pct}",
            ours[name]
        );
    }
    let processes = share("process");
    let perf = perf_report(&data, "pid");
    for (pid, comm) in [(outside, "gb_outside"), (inside, "gb_inside")] {
        let ours = processes[&format!("{comm} [{pid}]")];
        let theirs = perf[&format!("{pid}:{comm}")];
        assert!(
            (ours - theirs).abs() <= 0.0051,
            "{comm}: ours {ours} perf {theirs}"
        );
    }

    // The folded roots: the busy processes under their cgroups, with perf script's samples
    // (no call chains: every stack is its roots and one leaf).
    let roots = fold(&data, &[]);
    let threads = perf_threads(&data);
    for (pid, comm, group) in [
        (outside, "gb_outside", "/"),
        (inside, "gb_inside", cgroup.name.as_str()),
    ] {
        let n = threads[&(pid.into(), pid.into(), comm.to_string())];
        let key = format!("{group};{comm} [{pid}]");
        let ours: u64 = fold_lines_under(&roots, &key);
        assert_eq!(ours, n, "{key}: {roots:?}");
    }
}

fn row_in(text: &str, end: &str) -> bool {
    text.lines().any(|l| l.ends_with(end))
}

/// Samples of the folded roots that start with `prefix` (the folded leaf is cut off by
/// [`roots`], so a deeper stack's roots start with the prefix too).
fn fold_lines_under(roots: &BTreeMap<String, u64>, prefix: &str) -> u64 {
    roots
        .iter()
        .filter(|(r, _)| *r == prefix || r.starts_with(&format!("{prefix};")))
        .map(|(_, n)| n)
        .sum()
}

/// The idle task (pid 0) has no COMM record, yet perf names it `swapper`: so do the roots of
/// every grouping (a thread of no COMM record stays `:PID`).
#[test]
fn the_idle_task_is_swapper_as_perf_names_it() {
    let dir = Dir::new("group-by-idle");
    let attr = EventAttr {
        type_: attr_type::SOFTWARE,
        sample_period_or_freq: 250_000,
        sample_type: sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM,
        name: Some("cpu-clock".into()),
        ids: vec![5],
        ..EventAttr::default()
    };
    let path = dir.path("idle.data");
    let mut rec = Recording::create(&path, vec![attr]);
    for (time, pid) in [(11, 0), (12, 0), (13, 77)] {
        rec.sample(
            0,
            &SampleFields {
                id: 5,
                ip: 0xffff_ffff_8100_0000,
                pid,
                tid: pid,
                time,
                misc: misc::KERNEL,
                ..SampleFields::default()
            },
        );
    }
    rec.finish(&Features::from_host(vec![
        "perf".into(),
        "record".into(),
        "-a".into(),
    ]));
    let comm = crate::system_wide::perf_script(&path, "comm,pid");
    assert!(
        comm.contains("swapper     0"),
        "perf names pid 0 swapper: {comm}"
    );
    assert_eq!(
        fold(&path, &[]),
        expect(&[("swapper [0]".to_string(), 2), (":77 [77]".to_string(), 1)])
    );
    assert_eq!(
        fold(&path, &["--group-by", "comm"]),
        expect(&[("swapper".to_string(), 2), (":77".to_string(), 1)])
    );
}

/// Issue 35 item 5: a process whose name starts with `#` (the perf_data fuzz finding, an
/// `offcpu` recording whose COMM records name the process `#ffcpu`) folded to lines that every
/// folded reader of cpiflame took for comments ("no stacks"). `fold` now writes the root as
/// `\x23ffcpu [PID]` (the folded renaming rule), and `report` reads every stack of it back,
/// through a pipe as in the issue; `fold` of that text gives the same lines.
#[test]
fn a_process_named_like_a_comment_folds_to_lines_report_reads() {
    let data = support::repo_root().join("fuzz/regressions/perf_data/perf_data-crash-d72aebfc");
    let folded = ok(&cpiflame(&["fold", "--group-by", "process", s(&data)]));
    let mut lines: Vec<&str> = folded.lines().collect();
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l.starts_with("\\x23ffcpu [27415];")),
        "{folded}"
    );
    let total: u64 = lines
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();

    let mut child = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["report", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(folded.as_bytes())
        .unwrap();
    let report = ok(&child.wait_with_output().unwrap());
    assert_eq!(
        report.lines().next().unwrap(),
        // Folded weights are counts (issue 38), even in the column folded text calls samples.
        format!("# cpiflame report: {total} counts of samples"),
        "{report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.ends_with(&format!("100.00%    0.00%  {total}  \\x23ffcpu [27415]"))),
        "{report}"
    );

    let dir = Dir::new("group-by-comment-root");
    let path = dir.path("crash.folded");
    std::fs::write(&path, &folded).unwrap();
    let again = ok(&cpiflame(&["fold", s(&path)]));
    let mut again: Vec<&str> = again.lines().collect();
    lines.sort_unstable();
    again.sort_unstable();
    assert_eq!(again, lines);
}
