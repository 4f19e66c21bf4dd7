//! Wall-time columns from synthetic recordings whose every switch is known: each thread's
//! on-CPU, runnable and blocked nanoseconds are checked exactly against the intervals written.

use std::collections::BTreeMap;

use cpiflame_perf_data::abi::{attr_type, callchain, sample};
use cpiflame_perf_data::attr_flags;
use cpiflame_perf_data::write::{
    comm_record, exit_record, fork_record, mmap2_record, sample_record, switch_record, EventAttr,
    Features, Mmap2, PerfDataWriter, SampleFields, SampleId,
};
use cpiflame_pipeline::{load_any, LoadOptions, Loaded};
use cpiflame_profile::wall;
use cpiflame_testkit::Dir;

const TYPES: u64 = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::PERIOD;

fn attr(config: u64, name: &str, id: u64, flags: u64) -> EventAttr {
    EventAttr {
        type_: attr_type::SOFTWARE,
        config,
        sample_type: TYPES | sample::CALLCHAIN,
        sample_period_or_freq: 1,
        flags: attr_flags::SAMPLE_ID_ALL | flags,
        name: Some(name.into()),
        ids: vec![id],
        ..EventAttr::default()
    }
}

/// cpu-clock (id 1) and context-switches (id 2, with `context_switch`), as
/// `perf record --switch-events -e cpu-clock -e context-switches -c 1` writes them.
fn attrs() -> Vec<EventAttr> {
    vec![
        attr(0, "cpu-clock", 1, 0),
        attr(3, "context-switches", 2, attr_flags::CONTEXT_SWITCH),
    ]
}

/// One event of a thread's synthetic life.
enum Ev {
    Comm(&'static str),
    /// A cpu-clock sample of `period` ns in function at `ip`.
    OnCpu(u64, u64),
    /// A context-switches sample (the stack as the thread leaves) at `ip`.
    Stack(u64),
    Out {
        preempt: bool,
    },
    In,
    Exit,
    /// PERF_RECORD_FORK of the thread (by thread 7).
    Fork,
}

fn write(dir: &Dir, name: &str, events: &[(u64, i32, Ev)]) -> std::path::PathBuf {
    write_attrs(dir, name, attrs(), events)
}

/// `perf record --switch-events -e cpu-clock -g`: switch records and no stack at any
/// switch-out (no [`Ev::Stack`] in its events).
fn bare_attrs() -> Vec<EventAttr> {
    vec![attr(0, "cpu-clock", 1, attr_flags::CONTEXT_SWITCH)]
}

fn write_attrs(
    dir: &Dir,
    name: &str,
    attrs: Vec<EventAttr>,
    events: &[(u64, i32, Ev)],
) -> std::path::PathBuf {
    let path = dir.path(name);
    // The switch records' event: the one with `context_switch`.
    let switches = attrs
        .iter()
        .position(|a| a.flags & attr_flags::CONTEXT_SWITCH != 0)
        .unwrap();
    let switch_id = attrs[switches].ids[0];
    let mut w = PerfDataWriter::new(std::fs::File::create(&path).unwrap(), attrs.clone()).unwrap();
    // A binary that is not there: its frames are named `app+0xOFFSET`, one name per address.
    let map = Mmap2 {
        pid: 100,
        tid: 100,
        addr: 0,
        len: 0x10000,
        prot: 5,
        filename: "/nonexistent/app".into(),
        misc: cpiflame_perf_data::abi::misc::USER,
        ..Mmap2::default()
    };
    let sid0 = SampleId {
        pid: 100,
        tid: 100,
        time: 0,
        id: 1,
        stream_id: 0,
        cpu: 0,
    };
    w.write_record(&mmap2_record(&attrs[0], &map, &sid0).unwrap())
        .unwrap();
    for (time, tid, ev) in events {
        let (time, tid) = (*time, *tid);
        let sid = |id| SampleId {
            pid: 100,
            tid,
            time,
            id,
            stream_id: 0,
            cpu: 0,
        };
        let sample = |a: &EventAttr, ip: u64, period: u64, id: u64| {
            sample_record(
                a,
                &SampleFields {
                    id,
                    ip,
                    pid: 100,
                    tid,
                    time,
                    period,
                    callchain: vec![callchain::USER, ip],
                    misc: cpiflame_perf_data::abi::misc::USER,
                    ..SampleFields::default()
                },
            )
            .unwrap()
        };
        let record = match ev {
            Ev::Comm(comm) => comm_record(&attrs[0], 100, tid, comm, false, &sid(1)).unwrap(),
            Ev::OnCpu(ip, period) => sample(&attrs[0], *ip, *period, 1),
            Ev::Stack(ip) => sample(&attrs[1], *ip, 1, 2),
            Ev::Out { preempt } => {
                switch_record(&attrs[switches], true, *preempt, None, &sid(switch_id)).unwrap()
            }
            Ev::In => switch_record(&attrs[switches], false, false, None, &sid(switch_id)).unwrap(),
            Ev::Exit => exit_record(&attrs[0], 100, 100, tid, 100, time, &sid(1)).unwrap(),
            Ev::Fork => fork_record(&attrs[0], 100, 100, tid, 7, time, &sid(1)).unwrap(),
        };
        w.write_record(&record).unwrap();
    }
    w.finish(&Features::default()).unwrap();
    path
}

fn load(path: &std::path::Path, on_cpu_only: bool) -> (Loaded, Vec<String>) {
    let mut warnings = Vec::new();
    let loaded = load_any(
        &LoadOptions {
            file: path.to_path_buf(),
            kernel: true,
            on_cpu_only,
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap();
    (loaded, warnings)
}

/// (on, runnable, blocked) ns per root frame (thread name).
fn per_thread(l: &Loaded) -> BTreeMap<String, [u64; 3]> {
    let wc = l.wall.expect("wall columns");
    let mut per = BTreeMap::new();
    for s in &l.profile.stacks {
        let root = l.profile.frame(s.frames[0]).name.clone();
        let e: &mut [u64; 3] = per.entry(root).or_default();
        for (i, c) in wc.all().iter().enumerate() {
            e[i] += c.of(s).period;
        }
    }
    per
}

/// The threads of [`every_nanosecond_of_each_thread_lands_in_its_state`].
fn states() -> [(u64, i32, Ev); 16] {
    use Ev::*;
    [
        (1000, 7, Comm("worker")),
        (1000, 8, Comm("idle")),
        (1200, 7, OnCpu(0x1000, 100)),
        (1300, 8, OnCpu(0x3000, 50)),
        (1490, 8, Stack(0x3100)),
        (1500, 8, Out { preempt: false }),
        (2000, 7, OnCpu(0x1000, 100)),
        (2500, 7, OnCpu(0x2000, 200)),
        (2990, 7, Stack(0x1100)),
        (3000, 7, Out { preempt: true }),
        (4000, 7, In),
        (5000, 7, OnCpu(0x2000, 100)),
        (5990, 7, Stack(0x2100)),
        (6000, 7, Out { preempt: false }),
        (9000, 8, Exit),
        (10000, 9, Comm("late")),
    ]
}

/// Thread `worker` lives 1000..10000: on 1000..3000, preempted 3000..4000, on 4000..6000,
/// blocked 6000..10000 (never woken within the recording, which ends at 10000 with the
/// other thread's last event); thread `idle` is on 1000..1500 then blocked to its exit at 9000.
#[test]
fn every_nanosecond_of_each_thread_lands_in_its_state() {
    let events = states();
    let dir = Dir::new("wall-states");
    let path = write(&dir, "states.data", &events);
    let (l, _) = load(&path, false);
    let per = per_thread(&l);
    // worker: on 2000 + 2000, runnable 1000, blocked 4000 (to the end).
    assert_eq!(per["worker"], [4000, 1000, 4000]);
    // idle: on 500, blocked 1500..9000.
    assert_eq!(per["idle"], [500, 0, 7500]);
    // On-CPU time spreads by weight: 0x1000 had 200 of 500 weight units, 0x2000 300.
    let wc = l.wall.unwrap();
    let mut by_leaf: BTreeMap<String, u64> = BTreeMap::new();
    for s in &l.profile.stacks {
        if l.profile.frame(s.frames[0]).name == "worker" {
            let leaf = l.profile.frame(*s.frames.last().unwrap()).name.clone();
            *by_leaf.entry(leaf).or_default() += wc.on_cpu.of(s).period;
        }
    }
    let on: Vec<u64> = by_leaf.values().copied().filter(|&v| v > 0).collect();
    assert_eq!(on.iter().sum::<u64>(), 4000);
    assert!(on.contains(&1600) && on.contains(&2400), "{by_leaf:?}");
    // The widths' event stays cpu-clock, never the switch event.
    assert_eq!(l.profile.events[l.roles.cycles.unwrap()].name, "cpu-clock");
    assert_eq!(
        &l.profile.events[wc.on_cpu.index()].name,
        wall::ON_CPU,
        "columns named as the contract says"
    );
}

/// `--on-cpu-only` gives the profile without the wall columns, as before off-CPU existed.
#[test]
fn on_cpu_only_leaves_the_wall_columns_out() {
    use Ev::*;
    let events = [
        (1000, 7, Comm("worker")),
        (1200, 7, OnCpu(0x1000, 100)),
        (1290, 7, Stack(0x1100)),
        (1300, 7, Out { preempt: false }),
        (1400, 7, In),
        (1500, 7, OnCpu(0x1000, 100)),
    ];
    let dir = Dir::new("wall-only");
    let path = write(&dir, "only.data", &events);
    let (l, _) = load(&path, true);
    assert_eq!(l.wall, None);
    assert_eq!(
        l.profile
            .events
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["cpu-clock", "context-switches"]
    );
    let (l, warnings) = load(&path, false);
    assert_eq!(per_thread(&l)["worker"], [400, 0, 100]);
    assert!(
        warnings.iter().any(|w| w.contains("no wakeup events")),
        "{warnings:?}"
    );
}

/// A switch-out whose stack sample is missing is not put on some other stack: its time is
/// drawn directly under the thread as `[blocked]`, and a warning says how much.
#[test]
fn off_cpu_time_without_a_stack_is_under_its_thread_not_invented() {
    use Ev::*;
    let events = [
        (1000, 7, Comm("worker")),
        (1200, 7, OnCpu(0x1000, 100)),
        (1290, 7, Stack(0x1100)),
        (1300, 7, Out { preempt: false }),
        (1400, 7, In),
        (1500, 7, OnCpu(0x1000, 100)),
        (2000, 7, Out { preempt: false }),
        (2_000_000, 7, In),
        (2_000_100, 7, OnCpu(0x1000, 100)),
    ];
    let dir = Dir::new("wall-nostack");
    let path = write(&dir, "nostack.data", &events);
    let (l, warnings) = load(&path, false);
    // On 1000..1300, 1400..2000, 2_000_000..2_000_100; blocked 1300..1400 on its stack and
    // 2000..2_000_000 without one.
    assert_eq!(
        per_thread(&l)["worker"],
        [300 + 600 + 100, 0, 100 + 1_998_000]
    );
    assert_eq!(
        stackless(&l),
        BTreeMap::from([(("worker".into(), wall::NO_STACK_BLOCKED.into()), 1_998_000)])
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("2.0 ms off-CPU have no switch-out stack")),
        "{warnings:?}"
    );
    assert!(
        l.notes.iter().any(|n| n.to_string().contains("[blocked]")),
        "{:?}",
        l.notes
    );
}

/// (root, frame) -> ns of the `[runnable]`/`[blocked]` frames, which must sit directly under
/// a root and hold only their own column.
fn stackless(l: &Loaded) -> BTreeMap<(String, String), u64> {
    let wc = l.wall.expect("wall columns");
    let mut found = BTreeMap::new();
    for s in &l.profile.stacks {
        let frames: Vec<_> = s.frames.iter().map(|&f| l.profile.frame(f)).collect();
        let Some(at) = frames.iter().position(|f| wall::is_no_stack(f)) else {
            continue;
        };
        assert_eq!(at, 1, "directly under the root: {frames:?}");
        assert_eq!(frames.len(), 2, "nothing under it: {frames:?}");
        let name = &frames[1].name;
        let column = if name == wall::NO_STACK_RUNNABLE {
            wc.runnable
        } else {
            wc.blocked
        };
        for (i, c) in s.counts.iter().enumerate() {
            if i != column.index() {
                assert_eq!(c.period, 0, "{name}: column {i}");
            }
        }
        *found
            .entry((frames[0].name.clone(), name.clone()))
            .or_default() += column.of(s).period;
    }
    found
}

/// Switch records and no stack at any switch-out (`perf record --switch-events -e cpu-clock`):
/// every thread's off-CPU time is under it as `[runnable]` (preempted) and `[blocked]`, and
/// its three columns add up to its life in the recording, from its COMM to its exit or the
/// recording's end.
#[test]
fn switch_records_without_stacks_put_all_of_each_threads_wall_time_under_it() {
    use Ev::*;
    let events = [
        (1000, 7, Comm("worker")),
        (1000, 8, Comm("sleeper")),
        (1100, 8, OnCpu(0x3000, 50)),
        (1200, 7, OnCpu(0x1000, 100)),
        (1500, 8, Out { preempt: false }),
        (2000, 7, Out { preempt: true }),
        (2500, 7, In),
        (2600, 7, OnCpu(0x2000, 100)),
        (3000, 7, Out { preempt: false }),
        (7000, 7, In),
        (7100, 7, OnCpu(0x2000, 100)),
        (8000, 7, Exit),
        (9000, 8, In),
        (9100, 8, OnCpu(0x3000, 50)),
        (9500, 8, Out { preempt: true }),
        (10_000, 9, Comm("tail")),
    ];
    let dir = Dir::new("wall-bare");
    let path = write_attrs(&dir, "bare.data", bare_attrs(), &events);
    let (l, warnings) = load(&path, false);
    let per = per_thread(&l);
    // worker: on 1000..2000, 2500..3000, 7000..8000; preempted 2000..2500; blocked 3000..7000.
    assert_eq!(per["worker"], [2500, 500, 4000]);
    // sleeper: on 1000..1500, 9000..9500; blocked 1500..9000; preempted 9500..10_000 (the end).
    assert_eq!(per["sleeper"], [1000, 500, 7500]);
    // Each thread's width is its life: COMM to exit, or to the recording's end.
    assert_eq!(per["worker"].iter().sum::<u64>(), 8000 - 1000);
    assert_eq!(per["sleeper"].iter().sum::<u64>(), 10_000 - 1000);
    let n = |s: &str| s.to_string();
    assert_eq!(
        stackless(&l),
        BTreeMap::from([
            ((n("sleeper"), n(wall::NO_STACK_BLOCKED)), 7500),
            ((n("sleeper"), n(wall::NO_STACK_RUNNABLE)), 500),
            ((n("worker"), n(wall::NO_STACK_BLOCKED)), 4000),
            ((n("worker"), n(wall::NO_STACK_RUNNABLE)), 500),
        ])
    );
    // Not one nanosecond less than the switch records tell.
    assert!(
        warnings
            .iter()
            .all(|w| !w.contains("without an on-CPU sample") || w.contains("drawn as")),
        "{warnings:?}"
    );
}

/// perf's own `perf record --off-cpu` output: `offcpu-time` samples whose period is the
/// nanoseconds blocked on their stack, written after every other record with a made-up time
/// (`OFF_CPU_TIMESTAMP`, `~0 << 32`, in perf's util/bpf_off_cpu.c). Blocked time is their
/// periods; on-CPU time, without switches, is what the cpu-clock samples stand for.
#[test]
fn perfs_offcpu_time_samples_are_blocked_nanoseconds() {
    // perf adds PERF_SAMPLE_CGROUP, which the writer does not lay out; it changes nothing here.
    let offcpu_types = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::ID
        | sample::CPU
        | sample::PERIOD
        | sample::CALLCHAIN;
    let attrs = vec![
        attr(0, "cpu-clock", 1, 0),
        EventAttr {
            type_: attr_type::SOFTWARE,
            config: cpiflame_events::abi::software::BPF_OUTPUT,
            sample_type: offcpu_types,
            sample_period_or_freq: 1,
            flags: attr_flags::SAMPLE_ID_ALL,
            name: Some("offcpu-time".into()),
            ids: vec![2],
            ..EventAttr::default()
        },
    ];
    let dir = Dir::new("wall-offcpu-time");
    let path = dir.path("offcpu-time.data");
    let mut w = PerfDataWriter::new(std::fs::File::create(&path).unwrap(), attrs.clone()).unwrap();
    let sid = |time| SampleId {
        pid: 100,
        tid: 7,
        time,
        id: 1,
        stream_id: 0,
        cpu: 0,
    };
    w.write_record(&comm_record(&attrs[0], 100, 7, "app", false, &sid(1000)).unwrap())
        .unwrap();
    let s = |a: &EventAttr, id, time, period| {
        sample_record(
            a,
            &SampleFields {
                id,
                ip: 0x1000,
                pid: 100,
                tid: 7,
                time,
                period,
                callchain: vec![callchain::USER, 0x1000],
                misc: cpiflame_perf_data::abi::misc::USER,
                ..SampleFields::default()
            },
        )
        .unwrap()
    };
    for t in [2000, 3000, 4000] {
        w.write_record(&s(&attrs[0], 1, t, 1_000_000)).unwrap();
    }
    w.write_record(&s(&attrs[1], 2, !0u64 << 32, 5_000_000))
        .unwrap();
    w.write_record(&s(&attrs[1], 2, !0u64 << 32, 2_500_000))
        .unwrap();
    w.finish(&Features::default()).unwrap();
    let (l, warnings) = load(&path, false);
    assert_eq!(per_thread(&l)["app"], [3_000_000, 0, 7_500_000]);
    assert_eq!(l.profile.events[l.roles.cycles.unwrap()].name, "cpu-clock");
    assert!(
        l.notes
            .iter()
            .any(|n| n.to_string().contains("(off-CPU samples)")),
        "{:?}",
        l.notes
    );
    // No switches, so nothing about wakeups is claimed.
    assert!(
        !warnings.iter().any(|w| w.contains("wakeup")),
        "{warnings:?}"
    );
}

/// `--time` clips every interval: the states test's threads over 2500..=6999 ns. worker:
/// on 2500..3000 and 4000..6000, runnable 3000..4000, blocked 6000..7000; idle: blocked
/// 2500..7000, on the switch-out stack sampled at 1490, before the range, which carries that
/// time and nothing else (its context-switches sample is not counted). On-CPU time spreads
/// over the on-CPU samples inside the range only.
#[test]
fn time_ranges_clip_each_interval_to_the_nanoseconds_inside() {
    let events = states();
    let dir = Dir::new("wall-time-ranges");
    let path = write(&dir, "states.data", &events);
    let load_in = |time: &str, on_cpu_only: bool| {
        load_any(
            &LoadOptions {
                file: path.clone(),
                kernel: true,
                on_cpu_only,
                time: Some(time.to_string()),
                ..Default::default()
            },
            &mut Vec::new(),
        )
        .unwrap()
    };
    let l = load_in("0.0000025,0.000006999", false);
    let per = per_thread(&l);
    assert_eq!(per["worker"], [500 + 2000, 1000, 1000]);
    assert_eq!(per["idle"], [0, 0, 4500]);
    // The events' columns count the samples inside only: cpu-clock at 2500 and 5000,
    // context-switches at 2990 and 5990.
    let total = |name: &str| {
        let e = l
            .profile
            .events
            .iter()
            .position(|e| e.name == name)
            .unwrap();
        let t = l.profile.total(e);
        (t.samples, t.period)
    };
    assert_eq!(total("cpu-clock"), (2, 300));
    assert_eq!(total("context-switches").0, 2);
    // Two ranges: 1000..=1999 and 5000..: worker on 1000..2000 (from its start) and
    // 5000..6000, blocked 6000..10000; idle on 1000..1500, blocked 1500..2000 and 5000..9000.
    let l = load_in("0.000001,0.000001999 0.000005,", false);
    let per = per_thread(&l);
    assert_eq!(per["worker"], [1000 + 1000, 0, 4000]);
    assert_eq!(per["idle"], [500, 0, 500 + 4000]);
    assert_eq!(load_in("0.0000025,0.000006999", true).wall, None);
}

/// (root, frame) -> ns of the `[on-CPU, not sampled]` frames, which must sit directly under a
/// root and hold only the on-CPU column.
fn unsampled(l: &Loaded) -> BTreeMap<(String, u64), u64> {
    let wc = l.wall.expect("wall columns");
    let mut found = BTreeMap::new();
    for s in &l.profile.stacks {
        let frames: Vec<_> = s.frames.iter().map(|&f| l.profile.frame(f)).collect();
        if !frames.iter().any(|f| wall::is_unsampled(f)) {
            continue;
        }
        assert_eq!(frames.len(), 2, "directly under the root: {frames:?}");
        assert!(wall::is_unsampled(frames[1]));
        for (i, c) in s.counts.iter().enumerate() {
            if i != wc.on_cpu.index() {
                assert_eq!(c.period, 0, "column {i}");
            }
        }
        let c = wc.on_cpu.of(s);
        found.insert((frames[0].name.clone(), c.samples), c.period);
    }
    found
}

/// Issue 37: a new thread is runnable from its fork (the kernel's `wake_up_new_task` queues
/// it) to its first switch-in; switch records start at that switch-in, so the wait is drawn
/// as `[runnable]` under the thread, and its width is fork to the recording's end.
#[test]
fn a_new_threads_wait_from_its_fork_to_its_first_run_is_runnable() {
    use Ev::*;
    let events = [
        (1000, 7, Comm("main")),
        (1100, 7, OnCpu(0x1000, 100)),
        (1200, 9, Fork),
        (1250, 9, Comm("child")),
        (1500, 9, In),
        (1600, 9, OnCpu(0x2000, 100)),
        (2000, 9, Out { preempt: false }),
        (3000, 7, Out { preempt: false }),
        (4000, 7, In),
        (5000, 7, OnCpu(0x1000, 100)),
    ];
    let dir = Dir::new("wall-fork");
    let path = write_attrs(&dir, "fork.data", bare_attrs(), &events);
    let (l, _) = load(&path, false);
    let per = per_thread(&l);
    // child: runnable 1200..1500, on 1500..2000, blocked 2000..5000 (the end).
    assert_eq!(per["child"], [500, 300, 3000]);
    assert_eq!(per["child"].iter().sum::<u64>(), 5000 - 1200);
    // main: on 1000..3000 and 4000..5000, blocked 3000..4000.
    assert_eq!(per["main"], [3000, 0, 1000]);
    let n = |s: &str| s.to_string();
    assert_eq!(
        stackless(&l),
        BTreeMap::from([
            ((n("child"), n(wall::NO_STACK_BLOCKED)), 3000),
            ((n("child"), n(wall::NO_STACK_RUNNABLE)), 300),
            ((n("main"), n(wall::NO_STACK_BLOCKED)), 1000),
        ])
    );
}

/// Issue 37: a thread's time before its first switch record is its, from the recording's
/// first event (perf's records of threads that existed before it are at time 0): a first
/// switch-out means it was on a CPU since, a first switch-in that it was off (blocked: no
/// wakeup tells otherwise here).
#[test]
fn the_time_before_a_threads_first_switch_record_is_accounted() {
    use Ev::*;
    let events = [
        (0, 7, Comm("runner")),
        (0, 8, Comm("waiter")),
        (1000, 7, OnCpu(0x1000, 100)),
        (2000, 7, Out { preempt: true }),
        (2500, 8, In),
        (2600, 8, OnCpu(0x3000, 50)),
        (3000, 8, Out { preempt: false }),
        (3000, 7, In),
        (4000, 7, OnCpu(0x1000, 100)),
    ];
    let dir = Dir::new("wall-before-first");
    let path = write_attrs(&dir, "first.data", bare_attrs(), &events);
    let (l, _) = load(&path, false);
    let per = per_thread(&l);
    // runner: on 1000..2000 and 3000..4000, runnable 2000..3000.
    assert_eq!(per["runner"], [2000, 1000, 0]);
    // waiter: blocked 1000..2500, on 2500..3000, blocked 3000..4000.
    assert_eq!(per["waiter"], [500, 0, 2500]);
    for thread in ["runner", "waiter"] {
        assert_eq!(per[thread].iter().sum::<u64>(), 4000 - 1000, "{thread}");
    }
}

/// Issue 37: on-CPU time of a thread with switch records and no on-CPU sample is drawn under
/// the thread as `[on-CPU, not sampled]` (samples: its on-CPU intervals), so the thread's
/// width is its life, and the warning says where it went.
#[test]
fn on_cpu_time_without_a_sample_is_under_its_thread() {
    use Ev::*;
    let events = [
        (1000, 7, Comm("busy")),
        (1000, 8, Comm("quiet")),
        (1100, 7, OnCpu(0x1000, 100)),
        (1500, 8, Out { preempt: false }),
        (2500, 8, In),
        (3000, 8, Out { preempt: true }),
        (4000, 7, OnCpu(0x1000, 100)),
    ];
    let dir = Dir::new("wall-unsampled");
    let path = write_attrs(&dir, "unsampled.data", bare_attrs(), &events);
    let (l, warnings) = load(&path, false);
    let per = per_thread(&l);
    // quiet: on 1000..1500 and 2500..3000, blocked 1500..2500, runnable 3000..4000.
    assert_eq!(per["quiet"], [1000, 1000, 1000]);
    // busy has no switch data: its samples' cpu-clock periods.
    assert_eq!(per["busy"], [200, 0, 0]);
    assert_eq!(
        unsampled(&l),
        BTreeMap::from([(("quiet".to_string(), 2), 1000)])
    );
    assert_eq!(per["quiet"].iter().sum::<u64>(), 4000 - 1000);
    assert!(
        warnings
            .iter()
            .all(|w| !w.contains("on-CPU of threads without") || w.contains(wall::UNSAMPLED_ON_CPU)),
        "{warnings:?}"
    );
}

/// The kernel's `sched_switch` format (Linux 6.x, as tracefs gives it), id 372.
const SCHED_SWITCH_FORMAT: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_pid=%d next_pid=%d\", REC->prev_pid, REC->next_pid
";

/// The raw record of a `sched_switch` from `prev` (in `prev_state`: 0 runnable, 1 asleep)
/// to `next`.
fn sched_switch_raw(prev: i32, state: i64, next: i32) -> Vec<u8> {
    let mut raw = vec![0u8; 64];
    raw[0..2].copy_from_slice(&372u16.to_ne_bytes());
    raw[4..8].copy_from_slice(&prev.to_ne_bytes());
    raw[24..28].copy_from_slice(&prev.to_ne_bytes());
    raw[32..40].copy_from_slice(&state.to_ne_bytes());
    raw[56..60].copy_from_slice(&next.to_ne_bytes());
    raw
}

/// Issue 37: a `sched_switch` sample whose tid is not its `prev_pid` (perf in a pid namespace
/// writes the sample's ids in its own, the tracepoint's fields are the kernel's) keeps its
/// off-CPU interval: it was stored under `prev_pid` and looked up under the sample's tid, and
/// lost. Thread `app` (sample tid 70, prev_pid 7) blocks at 2000 ns, is switched back in by
/// `other` (90 / 9) at 4000, blocks again at 6000; the recording ends at 7000.
#[test]
fn a_sched_switch_interval_is_found_by_its_samples_tid_not_prev_pid() {
    use cpiflame_perf_data::write::TracingData;
    let switch_attr = EventAttr {
        type_: attr_type::TRACEPOINT,
        config: 372,
        sample_type: TYPES | sample::CALLCHAIN | sample::RAW,
        sample_period_or_freq: 1,
        flags: attr_flags::SAMPLE_ID_ALL,
        name: Some("sched:sched_switch".into()),
        ids: vec![2],
        ..EventAttr::default()
    };
    let attrs = vec![attr(0, "cpu-clock", 1, 0), switch_attr];
    let dir = Dir::new("wall-prev-pid");
    let path = dir.path("sched.data");
    let mut w = PerfDataWriter::new(std::fs::File::create(&path).unwrap(), attrs.clone()).unwrap();
    let sid = |pid, tid, time| SampleId {
        pid,
        tid,
        time,
        id: 1,
        stream_id: 0,
        cpu: 0,
    };
    for (pid, tid, comm) in [(70, 70, "app"), (90, 90, "other")] {
        w.write_record(&comm_record(&attrs[0], pid, tid, comm, false, &sid(pid, tid, 0)).unwrap())
            .unwrap();
        let map = Mmap2 {
            pid,
            tid,
            addr: 0,
            len: 0x10000,
            prot: 5,
            filename: "/nonexistent/app".into(),
            misc: cpiflame_perf_data::abi::misc::USER,
            ..Mmap2::default()
        };
        w.write_record(&mmap2_record(&attrs[0], &map, &sid(pid, tid, 0)).unwrap())
            .unwrap();
    }
    let sample = |a: &EventAttr, id, tid: i32, time, ip, raw: Vec<u8>| {
        sample_record(
            a,
            &SampleFields {
                id,
                ip,
                pid: tid,
                tid,
                time,
                period: if id == 1 { 500 } else { 1 },
                callchain: vec![callchain::USER, ip],
                misc: cpiflame_perf_data::abi::misc::USER,
                raw,
                ..SampleFields::default()
            },
        )
        .unwrap()
    };
    let records = [
        sample(&attrs[0], 1, 70, 1000, 0x1000, Vec::new()),
        sample(&attrs[1], 2, 70, 2000, 0x1100, sched_switch_raw(7, 1, 9)),
        sample(&attrs[0], 1, 90, 3000, 0x2000, Vec::new()),
        sample(&attrs[1], 2, 90, 4000, 0x2100, sched_switch_raw(9, 0, 7)),
        sample(&attrs[0], 1, 70, 5000, 0x1000, Vec::new()),
        sample(&attrs[1], 2, 70, 6000, 0x1200, sched_switch_raw(7, 1, 0)),
        sample(&attrs[0], 1, 90, 7000, 0x2000, Vec::new()),
    ];
    for r in &records {
        w.write_record(r).unwrap();
    }
    let tracing = TracingData {
        page_size: 4096,
        header_page: b"\tfield: u64 timestamp;\n".to_vec(),
        header_event: b"# compressed entry header\n".to_vec(),
        systems: vec![(
            "sched".into(),
            vec![SCHED_SWITCH_FORMAT.as_bytes().to_vec()],
        )],
    };
    w.finish(&Features {
        tracing_data: Some(tracing.encode().unwrap()),
        ..Features::default()
    })
    .unwrap();
    let (l, _) = load(&path, false);
    let wc = l.wall.expect("wall columns");
    // Blocked time on each of app's switch-out stacks: 2000..4000 on 0x1100's, 6000..7000 on
    // 0x1200's.
    let mut blocked: BTreeMap<String, u64> = BTreeMap::new();
    for s in &l.profile.stacks {
        if l.profile.frame(s.frames[0]).name == "app" && wc.blocked.of(s).period > 0 {
            let leaf = l.profile.frame(*s.frames.last().unwrap()).name.clone();
            *blocked.entry(leaf).or_default() += wc.blocked.of(s).period;
        }
    }
    assert_eq!(
        blocked,
        BTreeMap::from([
            ("app+0x1100".to_string(), 2000),
            ("app+0x1200".to_string(), 1000)
        ])
    );
}

/// The stretches of time the profile has only under a thread's root (`[runnable]`,
/// `[blocked]`, `[on-CPU, not sampled]`), each with its start, for a reader that shows time
/// (the viewers): one per interval, at its switch-out or switch-in (with `--time`, its first
/// nanosecond inside), summing to the plan's per-thread totals; kept only when asked for.
#[test]
fn placed_stretches_are_the_intervals_without_a_stack_or_sample() {
    use cpiflame_pipeline::{load_walked, PlacedTime, WalkAlso};
    use Ev::*;
    let events = [
        (1000, 7, Comm("worker")),
        (1000, 8, Comm("sleeper")),
        (1000, 10, Comm("quiet")),
        (1100, 8, OnCpu(0x3000, 50)),
        (1200, 7, OnCpu(0x1000, 100)),
        (1500, 8, Out { preempt: false }),
        (1500, 10, Out { preempt: false }),
        (2000, 7, Out { preempt: true }),
        (2500, 7, In),
        (2500, 10, In),
        (2600, 7, OnCpu(0x2000, 100)),
        (3000, 7, Out { preempt: false }),
        (3000, 10, Out { preempt: true }),
        (7000, 7, In),
        (7100, 7, OnCpu(0x2000, 100)),
        (8000, 7, Exit),
        (9000, 8, In),
        (9100, 8, OnCpu(0x3000, 50)),
        (9500, 8, Out { preempt: true }),
        (10_000, 9, Comm("tail")),
    ];
    let dir = Dir::new("wall-placed");
    let path = write_attrs(&dir, "placed.data", bare_attrs(), &events);
    let file = cpiflame_perf_data::PerfData::open(&path).unwrap();
    let plan = |time: Option<&str>, place: bool| {
        let options = LoadOptions {
            file: path.clone(),
            kernel: true,
            time: time.map(String::from),
            ..Default::default()
        };
        let also = WalkAlso {
            wall_placed: place,
            ..WalkAlso::default()
        };
        load_walked(&file, &options, also, &mut Vec::new())
            .unwrap()
            .wall
            .expect("a wall plan")
    };
    // (start, tid, on-CPU, runnable, blocked)
    let placed = |plan: &cpiflame_pipeline::WallPlan| -> Vec<(u64, i32, u64, u64, u64)> {
        // Each thread's stretches sum to its totals under its root.
        let mut sums: BTreeMap<i32, [u64; 3]> = BTreeMap::new();
        for p in plan.placed() {
            assert_eq!((p.pid, p.sample_tid), (100, p.tid), "{p:?}");
            let s = sums.entry(p.tid).or_default();
            s[0] += p.on_cpu_ns;
            s[1] += p.runnable_ns;
            s[2] += p.blocked_ns;
        }
        let mut totals: BTreeMap<i32, [u64; 3]> = BTreeMap::new();
        for s in plan.without_stack() {
            let t = totals.entry(s.tid).or_default();
            (t[1], t[2]) = (s.runnable_ns, s.blocked_ns);
        }
        for u in plan.unsampled() {
            totals.entry(u.tid).or_default()[0] = u.on_cpu_ns;
        }
        assert_eq!(sums, totals);
        plan.placed()
            .iter()
            .map(
                |&PlacedTime {
                     start,
                     tid,
                     on_cpu_ns,
                     runnable_ns,
                     blocked_ns,
                     ..
                 }| { (start, tid, on_cpu_ns, runnable_ns, blocked_ns) },
            )
            .collect()
    };
    // worker: preempted 2000..2500, blocked 3000..7000; sleeper: blocked 1500..9000,
    // preempted 9500..10_000 (the end); quiet, never sampled: on 1000..1500, blocked
    // 1500..2500, on 2500..3000, preempted 3000..10_000.
    assert_eq!(
        placed(&plan(None, true)),
        [
            (1000, 10, 500, 0, 0),
            (1500, 8, 0, 0, 7500),
            (1500, 10, 0, 0, 1000),
            (2000, 7, 0, 500, 0),
            (2500, 10, 500, 0, 0),
            (3000, 7, 0, 0, 4000),
            (3000, 10, 0, 7000, 0),
            (9500, 8, 0, 500, 0),
        ]
    );
    // Inside 2500..=6999 only: a stretch begins where it enters the range.
    assert_eq!(
        placed(&plan(Some("0.0000025,0.000006999"), true)),
        [
            (2500, 8, 0, 0, 4500),
            (2500, 10, 500, 0, 0),
            (3000, 7, 0, 0, 4000),
            (3000, 10, 0, 4000, 0),
        ]
    );
    // Not asked for: the totals only.
    let plain = plan(None, false);
    assert!(plain.placed().is_empty());
    assert_eq!(plain.without_stack().len(), 3);
}
