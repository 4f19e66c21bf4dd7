//! Wall-time columns of synthetic `perf script` text of `sched:sched_switch` and
//! `sched:sched_wakeup` samples (one CPU, every switch known): each thread's on-CPU,
//! runnable and blocked nanoseconds checked exactly against the intervals written (issue 37).

use std::collections::BTreeMap;

use cpiflame_pipeline::{load_any, LoadOptions, Loaded};
use cpiflame_profile::wall;
use cpiflame_testkit::Dir;

/// A `sched_switch` sample at `us` microseconds after 1 s by `comm` `pid/tid` (the tid the
/// header shows), with `prev_pid`, its state and `next_pid`, and a stack.
fn switch(us: u64, who: &str, prev: i32, state: &str, next: i32) -> String {
    format!(
        "{who} [000] 1.{:09}: sched:sched_switch: prev_comm=x prev_pid={prev} prev_prio=120 prev_state={state} ==> next_comm=y next_pid={next} next_prio=120\n\tffffffff81000000 __schedule+0x0 ([kernel.kallsyms])\n\t    1000 wait_here+0x0 (/nonexistent/app)\n\n",
        us * 1000
    )
}

fn wakeup(us: u64, who: &str, pid: i32) -> String {
    format!(
        "{who} [000] 1.{:09}: sched:sched_wakeup: comm=z pid={pid} prio=120 target_cpu=000\n\tffffffff81000100 try_to_wake_up+0x0 ([kernel.kallsyms])\n\n",
        us * 1000
    )
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

/// Thread `app` (tid 7, its samples' headers showing tid 70, as in another pid namespace)
/// blocks at 1000 µs, is woken at 3000 and runs at 4000..6000, then blocks to the end
/// (8000); `other` (9), seen first coming on at 1000, runs to 4000, is preempted to 7000,
/// runs to 8000; `late` (8), woken at 2000 before it was ever seen, first comes on at 6000,
/// runs to 7000, blocks to the end. No thread has an on-CPU sample.
#[test]
fn sched_text_accounts_every_threads_time_from_the_recordings_start() {
    let text = [
        switch(1000, "app 100/70", 7, "S", 9),
        wakeup(2000, "other 200/9", 8),
        wakeup(3000, "other 200/9", 7),
        switch(4000, "other 200/9", 9, "R", 7),
        switch(6000, "app 100/70", 7, "S", 8),
        switch(7000, "late 300/8", 8, "S", 9),
        switch(8000, "other 200/9", 9, "S", 0),
    ]
    .concat();
    let dir = Dir::new("wall-script-sched");
    let path = dir.path("sched.txt");
    std::fs::write(&path, text).unwrap();
    let mut warnings = Vec::new();
    let l = load_any(
        &LoadOptions {
            file: path.clone(),
            kernel: true,
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap();
    let per = per_thread(&l);
    let ms = 1_000_000;
    // app: the intervals its sched_switch samples begin are found by the header's tid (70),
    // not lost for being prev_pid 7's: blocked 1..3 ms, runnable 3..4, on 4..6, blocked 6..8.
    assert_eq!(per["app"], [2 * ms, ms, 4 * ms]);
    // other: on 1..4 ms (from its first switch-in, seen in app's sample), runnable 4..7, on
    // 7..8.
    assert_eq!(per["other"], [4 * ms, 3 * ms, 0]);
    // late: blocked from the recording's start to its wakeup at 2 ms, runnable to its first
    // run at 6, on to 7, blocked to 8.
    assert_eq!(per["late"], [ms, 4 * ms, 2 * ms]);
    for (thread, split) in &per {
        assert_eq!(split.iter().sum::<u64>(), 7 * ms, "{thread}: its life");
    }
    // No on-CPU sample: all on-CPU time is `[on-CPU, not sampled]`, and the warning says so
    // (text input has a warnings channel, as perf.data has).
    let wc = l.wall.unwrap();
    let unsampled: u64 = l
        .profile
        .stacks
        .iter()
        .filter(|s| s.frames.len() == 2 && wall::is_unsampled(l.profile.frame(s.frames[1])))
        .map(|s| wc.on_cpu.of(s).period)
        .sum();
    assert_eq!(unsampled, 7 * ms);
    let path = path.display().to_string();
    assert!(
        warnings.iter().any(|w| w.starts_with(&path)
            && w.contains(
                "7.0 ms on-CPU of threads without an on-CPU sample: drawn as [on-CPU, not sampled]"
            )),
        "{warnings:?}"
    );
}

fn load_text(name: &str, text: &str) -> (Loaded, Vec<String>) {
    let dir = Dir::new(name);
    let path = dir.path("perf.txt");
    std::fs::write(&path, text).unwrap();
    let mut warnings = Vec::new();
    let l = load_any(
        &LoadOptions {
            file: path,
            kernel: true,
            ..Default::default()
        },
        &mut warnings,
    )
    .unwrap();
    (l, warnings)
}

/// perf's file may lack a CPU's switch (no LOST record says so): `app` leaves at 1000 µs,
/// the CPU switches `other` to `third` at 2000, and `app` leaves again at 4000 with the
/// switch that brought it back missing. It came on at the CPU's last switch, 2000 (as
/// `perf sched timehist` takes it), not at 4000.
#[test]
fn a_missing_switch_in_is_the_cpus_last_switch() {
    let text = [
        switch(1000, "app 100/7", 7, "S", 9),
        switch(2000, "other 200/9", 9, "R", 8),
        switch(4000, "app 100/7", 7, "S", 0),
        switch(5000, "third 300/8", 8, "S", 9),
    ]
    .concat();
    let (l, _) = load_text("wall-script-gap", &text);
    let per = per_thread(&l);
    let ms = 1_000_000;
    // app: blocked 1..2 ms, on 2..4, blocked 4..5 (the end).
    assert_eq!(per["app"], [2 * ms, 0, 2 * ms]);
}

/// A cpu-clock sample (250 µs period) at `us` microseconds after 1 s on CPU 0.
fn tick(us: u64, who: &str) -> String {
    format!(
        "{who} [000] 1.{:09}: 250000 cpu-clock:ppp: \n\t    1000 work+0x0 (/nonexistent/app)\n\n",
        us * 1000
    )
}

/// The switches perf's `-a` files lack are mostly the idle task's switch-outs, and an idle
/// CPU shows no other switch: the CPU's last switch can be long before the thread came on.
/// Where on-CPU time is sampled (cpu-clock, every 250 µs) and none of the thread's samples
/// fell since, it ran less than one interval: `app` leaves at 1 ms, `other` runs until
/// 2 ms and leaves the CPU idle (`next_pid=0`), and `app` leaves again at 40 ms with no
/// sample and no switch onto it. It came on at 39.75 ms, not at 2 ms (38 ms on a CPU
/// nothing shows it on); with a sample at 30 ms it was on from then.
#[test]
fn a_missing_switch_in_without_a_sample_is_at_most_one_sample_interval() {
    let head = [
        switch(1000, "app 100/7", 7, "S", 9),
        tick(1250, "other 200/9"),
        tick(1500, "other 200/9"),
        tick(1750, "other 200/9"),
        switch(2000, "other 200/9", 9, "S", 0),
    ]
    .concat();
    let ms = 1_000_000;
    let us = 1_000;
    let text = [head.clone(), switch(40000, "app 100/7", 7, "S", 0)].concat();
    let (l, _) = load_text("wall-script-idle-gap", &text);
    assert_eq!(per_thread(&l)["app"], [250 * us, 0, 38 * ms + 750 * us]);
    let text = [
        head,
        tick(30000, "app 100/7"),
        switch(40000, "app 100/7", 7, "S", 0),
    ]
    .concat();
    let (l, _) = load_text("wall-script-idle-gap-sampled", &text);
    assert_eq!(per_thread(&l)["app"], [10 * ms, 0, 29 * ms]);
}

/// A thread that came off the CPU (here: forked, runnable) after its CPU's last switch
/// came on after that: `other` leaves CPU 0 idle at 1 ms, `app` is forked at 2 ms and
/// leaves CPU 0 at 40 ms with no switch onto it (the kernel emitted none). It ran from its
/// fork, 38 ms, not runnable all that time.
#[test]
fn a_missing_switch_in_after_the_cpus_last_switch_is_after_the_thread_left() {
    let text = [
        switch(1000, "other 200/9", 9, "S", 0),
        "app 100/100 [000] 1.002000000: PERF_RECORD_FORK(100:7):(100:100)\n\n".to_string(),
        switch(40000, "app 100/7", 7, "S", 0),
    ]
    .concat();
    let (l, _) = load_text("wall-script-fork-gap", &text);
    assert_eq!(per_thread(&l)["app"], [38_000_000, 0, 0]);
}

/// Where wakeups are recorded, a thread that left blocked and was not seen woken did not run
/// before it left again, however long its CPU was idle: `app` blocks at 1 ms leaving CPU 0
/// idle, and leaves again at 40 ms with neither its wakeup nor the switch onto the CPU in
/// the file (a timer's wakeup of an idle CPU, as this machine's kernel drops both). Blocked
/// for the 39 ms (not on a CPU, as `perf sched timehist` has it); with its wakeup at 30 ms,
/// on from then. The warning counts the switch-outs without a switch-in.
#[test]
fn a_blocked_thread_not_seen_woken_is_blocked_until_it_leaves_again() {
    let head = [
        switch(1000, "app 100/7", 7, "S", 0),
        wakeup(2000, "other 200/9", 3),
    ]
    .concat();
    let ms = 1_000_000;
    let text = [head.clone(), switch(40000, "app 100/7", 7, "S", 0)].concat();
    let (l, warnings) = load_text("wall-script-unwoken", &text);
    assert_eq!(per_thread(&l)["app"], [0, 0, 39 * ms]);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("1 of 2 switch-outs have no switch onto their CPU")),
        "{warnings:?}"
    );
    let text = [
        head,
        wakeup(30000, "other 200/9", 7),
        switch(40000, "app 100/7", 7, "S", 0),
    ]
    .concat();
    let (l, _) = load_text("wall-script-unwoken-woken", &text);
    assert_eq!(per_thread(&l)["app"], [10 * ms, 0, 29 * ms]);
}

/// A `--time` range with wall time in it and no sample (a thread asleep between two
/// switches) is that wall time, not a "no sample in the range" error; a range with neither
/// is still one.
#[test]
fn a_time_range_with_wall_time_and_no_sample_is_read() {
    let text = [
        switch(1000, "app 100/7", 7, "S", 0),
        wakeup(39000, "other 200/9", 7),
        switch(40000, "app 100/7", 7, "S", 0),
    ]
    .concat();
    let dir = Dir::new("wall-script-empty-range");
    let path = dir.path("perf.txt");
    std::fs::write(&path, text).unwrap();
    let load = |range: &str| {
        load_any(
            &LoadOptions {
                file: path.clone(),
                kernel: true,
                time: Some(range.to_string()),
                ..Default::default()
            },
            &mut Vec::new(),
        )
    };
    let l = load("1.010,1.020").unwrap();
    // Both ends are in the range, as in perf's --time: 10 ms and a nanosecond.
    assert_eq!(per_thread(&l)["app"], [0, 0, 10_000_001]);
    let e = load("2.0,3.0").unwrap_err().to_string();
    assert!(e.contains("no sample of"), "{e}");
}

/// perf's `perf record --off-cpu` output as `perf script` prints it: `offcpu-time` samples
/// (a made-up time after every other, period = nanoseconds blocked on the stack) beside
/// cpu-clock samples. Blocked time is their periods, on the stack; on-CPU time, without
/// switches, the cpu-clock periods.
#[test]
fn perfs_offcpu_time_lines_are_blocked_nanoseconds() {
    let sample = |time: &str, period: u64, event: &str, leaf: &str| {
        format!(
            "app 100/7 [000] {time}: {period} {event}: \n\t    1000 {leaf}+0x0 (/nonexistent/app)\n\t    2000 main+0x0 (/nonexistent/app)\n\n"
        )
    };
    let text = [
        sample("1.000001000", 1_000_000, "cpu-clock:ppp", "work"),
        sample("1.000002000", 1_000_000, "cpu-clock:ppp", "work"),
        sample("18446744069.414584320", 5_000_000, "offcpu-time", "wait"),
        sample("18446744069.414584320", 2_500_000, "offcpu-time", "wait"),
    ]
    .concat();
    let (l, warnings) = load_text("wall-script-offcpu-time", &text);
    assert_eq!(per_thread(&l)["app"], [2_000_000, 0, 7_500_000]);
    let wc = l.wall.unwrap();
    let on_wait: u64 = l
        .profile
        .stacks
        .iter()
        .filter(|s| l.profile.frame(*s.frames.last().unwrap()).name == "wait")
        .map(|s| wc.blocked.of(s).period)
        .sum();
    assert_eq!(on_wait, 7_500_000);
    assert!(
        !warnings.iter().any(|w| w.contains("wakeup")),
        "{warnings:?}"
    );
}
