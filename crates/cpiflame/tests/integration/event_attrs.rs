//! Every modifier and term of an event spec reaches the attr that is opened: for the same
//! `-e SPEC`, the perf_event_attr `cpiflame record` writes in its file header equals the one
//! `perf record` writes, in every field the spec decides (type, config, exclusions, precise
//! level, pinned/exclusive, the sample rate when the spec sets one, and the name). perf is
//! the oracle; both files are read back with cpiflame's reader.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use cpiflame_perf_data::abi::{attr_flags as bits, read_format as rf, sample as st};
use cpiflame_perf_data::{EventAttr, PerfData, RecordKind};
use support::{perf_works, shared_fixtures, Dir};

/// The bitfield bits a spec decides; FREQ only when the spec sets a rate.
const SPEC_BITS: u64 = bits::PINNED
    | bits::EXCLUSIVE
    | bits::EXCLUDE_USER
    | bits::EXCLUDE_KERNEL
    | bits::EXCLUDE_HV
    | bits::EXCLUDE_IDLE
    | bits::PRECISE_IP_MASK
    | bits::EXCLUDE_HOST
    | bits::EXCLUDE_GUEST;

fn record_both(dir: &Dir, spec: &str) -> (EventAttr, EventAttr) {
    let (perf, ours) = record_both_all(dir, spec);
    (perf[0].clone(), ours[0].clone())
}

/// Every event of `perf record -e SPEC` and `cpiflame record -e SPEC` of `true`.
fn record_both_all(dir: &Dir, spec: &str) -> (Vec<EventAttr>, Vec<EventAttr>) {
    let perf_file = dir.path("perf.data");
    let ours_file = dir.path("cpiflame.data");
    let perf = Command::new("perf")
        .args(["record", "-q", "-e", spec, "-o"])
        .arg(&perf_file)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        perf.status.success(),
        "perf record -e {spec}: {}",
        String::from_utf8_lossy(&perf.stderr)
    );
    let ours = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "-e", spec, "-o"])
        .arg(&ours_file)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        ours.status.success(),
        "cpiflame record -e {spec}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let attrs = |path: &Path| PerfData::open(path).unwrap_or_else(|e| panic!("{e}")).attrs;
    (attrs(&perf_file), attrs(&ours_file))
}

#[test]
fn record_opens_what_perf_opens_for_each_modifier_and_term() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock`)");
        return;
    }
    let dir = Dir::new("event-attrs");
    // (spec, whether it sets the rate)
    let specs = [
        ("cpu-clock", false),
        ("cpu-clock:u", false),
        ("cpu-clock:k", false),
        ("cpu-clock:uk", false),
        ("cpu-clock:h", false),
        ("cpu-clock:H", false),
        ("cpu-clock:G", false),
        ("cpu-clock:p", false),
        ("cpu-clock:pp", false),
        ("cpu-clock:ppp", false),
        ("cpu-clock:upp", false),
        ("cpu-clock:D", false),
        ("cpu-clock:I", false),
        ("cpu-clock:e", false),
        ("task-clock:pp", false),
        ("cpu-clock/period=100000/", true),
        ("cpu-clock/freq=500/", true),
        ("cpu-clock/name=foo/", false),
        ("cpu-clock/period=200000,name=bar/u", true),
        ("software/config=1,period=300000/pp", true),
    ];
    let mut wrong = Vec::new();
    for (spec, sets_rate) in specs {
        let (perf, ours) = record_both(&dir, spec);
        let mask = if sets_rate {
            SPEC_BITS | bits::FREQ
        } else {
            SPEC_BITS
        };
        let fields = |a: &EventAttr| {
            (
                a.type_,
                a.config,
                a.flags & mask,
                sets_rate.then_some(a.sample_period_or_freq),
                a.name.clone(),
            )
        };
        if fields(&perf) != fields(&ours) {
            wrong.push(format!(
                "{spec}: perf (type, config, flags, rate, name) {:x?}, cpiflame {:x?}",
                fields(&perf),
                fields(&ours)
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// A term or modifier that cannot be honoured is refused with one line naming it, never
/// dropped and never shown in Rust's debug form.
#[test]
fn record_refuses_what_it_cannot_honour_naming_it() {
    let dir = Dir::new("event-attrs-refused");
    for (spec, named) in [
        ("cpu-clock:W", "W"),
        ("cpu-clock/call-graph=dwarf/", "call-graph"),
        ("nosuchpmu/event=1/", "nosuchpmu"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
            .args(["record", "-e", spec, "-o"])
            .arg(dir.path("refused.data"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{spec}: {stderr}");
        assert!(errors[0].contains(named), "{spec}: {stderr}");
        for debug in ["Some(", "None", "Os {"] {
            assert!(!stderr.contains(debug), "{spec}: {stderr}");
        }
    }
}

/// Groups: for each spec, every member's attr as cpiflame writes it equals perf's in what the
/// spec decides: type, config, the spec's flag bits, inherit (perf drops it in a
/// leader-sampled group), the READ sample bit, read_format where samples carry it (perf also
/// sets ID|LOST on events that never read, which changes nothing in the file), whether the
/// member samples, and its name; and `perf evlist -g` shows the same groups (cpiflame writes
/// the GROUP_DESC feature as perf does). (The periods differ: perf's default is 4000 Hz, cpiflame's a
/// fixed period.)
#[test]
fn record_opens_groups_as_perf_does() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock`)");
        return;
    }
    let dir = Dir::new("event-attrs-groups");
    let mut wrong = Vec::new();
    for spec in [
        "{cpu-clock,task-clock}:S",
        "{task-clock,page-faults}:S",
        "{cpu-clock,task-clock}:u",
        "{cpu-clock,task-clock}",
        "{cpu-clock:k,task-clock/period=100000/}:uS",
        "{cpu-clock,task-clock}:S,page-faults",
        "cpu-clock:S",
    ] {
        let (perf, ours) = record_both_all(&dir, spec);
        let fields = |a: &EventAttr| {
            let reads = a.sample_type & st::READ != 0;
            (
                a.type_,
                a.config,
                a.flags & (SPEC_BITS | bits::INHERIT),
                reads,
                if reads {
                    a.read_format
                } else {
                    a.read_format & rf::GROUP
                },
                a.sample_period_or_freq != 0,
                a.name.clone(),
            )
        };
        let perf: Vec<_> = perf.iter().map(fields).collect();
        let ours: Vec<_> = ours.iter().map(fields).collect();
        // The group relationship, from the GROUP_DESC feature.
        let (perf_groups, our_groups) = (
            evlist_groups(&dir.path("perf.data")),
            evlist_groups(&dir.path("cpiflame.data")),
        );
        if perf_groups != our_groups {
            wrong.push(format!(
                "{spec}: perf evlist -g: perf {perf_groups:?}, cpiflame {our_groups:?}"
            ));
        }
        if perf != ours {
            wrong.push(format!(
                "{spec}:\n  perf     (type, config, flags, READ, read_format, samples, name) {perf:x?}\n  cpiflame {ours:x?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// `perf evlist -g`: the file's events, groups as `{a,b}`.
fn evlist_groups(path: &Path) -> Vec<String> {
    let out = Command::new("perf")
        .args(["evlist", "-g", "-i"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Sums of the per-sample deltas of each member's count, per (tid, event), as perf
/// delivers a leader-sampled group (`deliver_sample_value`: each value minus the previous
/// value of the same id).
fn our_group_deltas(path: &Path) -> (BTreeMap<(i32, String), u64>, usize) {
    let file = PerfData::open(path).unwrap_or_else(|e| panic!("{e}"));
    let name_of: HashMap<u64, String> = file
        .attrs
        .iter()
        .flat_map(|a| {
            a.ids
                .iter()
                .map(|&id| (id, a.name.clone().unwrap_or_default()))
        })
        .collect();
    let mut previous: HashMap<u64, u64> = HashMap::new();
    let mut sums = BTreeMap::new();
    let mut samples = 0;
    for r in file.records() {
        let RecordKind::Sample(s) = r.unwrap_or_else(|e| panic!("{e}")).kind else {
            continue;
        };
        samples += 1;
        assert_eq!(s.attr, 0, "only the leader samples");
        let values = s
            .read
            .expect("a leader sample carries the group's values")
            .values();
        assert_eq!(values.len(), 2, "both members' values");
        for (value, id) in values {
            let id = id.expect("read_format ID");
            let delta = value - previous.insert(id, value).unwrap_or(0);
            *sums
                .entry((s.tid.unwrap(), name_of[&id].clone()))
                .or_insert(0) += delta;
        }
    }
    (sums, samples)
}

/// The same sums as `perf script -F tid,period,event` prints them.
fn perf_group_deltas(path: &Path) -> BTreeMap<(i32, String), u64> {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,period,event", "-i"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sums = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [tid, period, event] = w[..] else {
            panic!("perf script line {line:?}");
        };
        let key = (
            tid.parse().unwrap(),
            event.trim_end_matches(':').to_string(),
        );
        *sums.entry(key).or_insert(0) += period.parse::<u64>().unwrap();
    }
    sums
}

/// A leader-sampled recording of a real workload (DWARF call chains: the recorder unwinds
/// and trims each sample at record time) reads the same in perf and in cpiflame's reader:
/// the per-thread sums of each member's count deltas are equal.
#[test]
fn a_leader_sampled_recording_reads_as_perf_reads_it() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock`)");
        return;
    }
    let fixtures = shared_fixtures().expect("fixtures build");
    let dir = Dir::new("event-attrs-leader-sampled");
    let data = dir.path("group.data");
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "-e", "{cpu-clock,task-clock}:S", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&fixtures.cpu_mem_bound)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("task-clock read in cpu-clock's"),
        "members do not sample: {stderr}"
    );
    let (ours, samples) = our_group_deltas(&data);
    assert!(samples > 20, "{samples} samples: {stderr}");
    let perf = perf_group_deltas(&data);
    assert_eq!(ours, perf);
    // Both clocks ran all along: their sums agree within a sample period or so.
    let total = |name: &str| -> u64 {
        ours.iter()
            .filter(|((_, n), _)| n == name)
            .map(|(_, v)| v)
            .sum()
    };
    let (cpu, task) = (total("cpu-clock"), total("task-clock"));
    assert!(
        cpu.abs_diff(task) < cpu / 10 + 1_000_000,
        "cpu-clock {cpu}, task-clock {task}"
    );
}

/// `cpiflame stat -e '{a,b},{c,d}'` counts two groups; `{a,b}:S` is refused for counting,
/// naming the event.
#[test]
fn stat_counts_each_braced_group() {
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args([
            "stat",
            "-e",
            "{task-clock,page-faults},{cs,cpu-migrations}",
            "--json",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    // The counts are on stderr, as perf stat's.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = &stderr;
    if !out.status.success() && stderr.contains("perf_event") {
        cpiflame_testkit::unavailable("software counters do not open here");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    for name in ["task-clock", "page-faults", "cs", "cpu-migrations"] {
        assert!(stdout.contains(name), "{name}: {stdout}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["stat", "-e", "{task-clock,page-faults}:S", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("task-clock") && stderr.contains("S modifier"),
        "{stderr}"
    );
}

/// Bad groups are refused with one line naming the group part.
#[test]
fn record_refuses_bad_groups_naming_them() {
    let dir = Dir::new("event-attrs-bad-groups");
    for (spec, named) in [
        ("{cpu-clock,{task-clock}}", "nest"),
        ("{cpu-clock,task-clock", "missing closing"),
        ("{cpu-clock,task-clock:S}", "S on a group member"),
        ("{cpu-clock,task-clock}:Q", "'Q'"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
            .args(["record", "-e", spec, "-o"])
            .arg(dir.path("refused.data"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{spec}: {stderr}");
        assert!(errors[0].contains(named), "{spec}: {stderr}");
    }
}

/// `--leader-sampling` records this CPU's pair as one leader-sampled group (cycles first);
/// without a PMU it records cpu-clock alone and says so.
#[test]
fn leader_sampling_records_the_pair_as_one_group_or_says_why_not() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (`perf record -e cpu-clock`)");
        return;
    }
    let dir = Dir::new("event-attrs-leader-flag");
    let data = dir.path("pair.data");
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "--leader-sampling", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let attrs = PerfData::open(&data)
        .unwrap_or_else(|e| panic!("{e}"))
        .attrs;
    if stderr.contains("recording cpu-clock alone") {
        assert!(
            stderr.contains("--leader-sampling has no group to sample"),
            "{stderr}"
        );
        assert_eq!(attrs.len(), 1);
        assert_eq!(attrs[0].sample_type & st::READ, 0);
        return;
    }
    assert!(attrs.len() >= 2, "{stderr}");
    for (i, a) in attrs.iter().enumerate() {
        assert_ne!(a.sample_type & st::READ, 0, "{i}: {a:?}");
        assert_ne!(a.read_format & rf::GROUP, 0, "{i}: {a:?}");
        assert_eq!(
            a.sample_period_or_freq != 0,
            i == 0,
            "only the leader samples"
        );
    }
    assert_eq!(evlist_groups(&data).len(), 1, "one group");
}
