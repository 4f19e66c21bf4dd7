//! `report` and `diff` summaries of profiles with the wall-time columns (`on-cpu-time`,
//! `runnable-time`, `blocked-time`), on hand-built profiles whose nanoseconds per stack are
//! known, so every inclusive sum, total and share below is worked out by hand.

use cpiflame_profile::interval::DEFAULT_CONFIDENCE;
use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
use cpiflame_profile::{
    diff_frames, top_frames, totals, write_diff, write_folded_periods, write_report, Columns,
    Count, DiffSummaryOptions, EventColumn, Format, Frame, FrameKind, Measure, Profile,
    ReportOptions, WallColumns, Width,
};
use serde_json::Value;

const CPU_CLOCK: usize = 0;
const ON: usize = 1;
const RUN: usize = 2;
const BLOCK: usize = 3;

/// The columns of `p` as a recording read says them: cpu-clock the width's events, and wall
/// time the width when `p` has the three wall-time columns.
fn columns(p: &Profile) -> Columns {
    Columns {
        width: WallColumns::of(p).map_or(Width::Cycles, Width::Wall),
        ..Columns::new(CPU_CLOCK, None)
    }
}

fn wall_profile_events() -> Vec<EventColumn> {
    ["cpu-clock", ON_CPU, RUNNABLE, BLOCKED]
        .iter()
        .map(|n| EventColumn {
            name: n.to_string(),
        })
        .collect()
}

/// Adds the stack `names` (the first the process, the others user frames in `demo`):
/// `samples` cpu-clock samples of 1 ms each, and on-CPU, runnable and blocked nanoseconds
/// (each from one sample or interval, when non-zero).
fn add(p: &mut Profile, names: &[&str], samples: u64, ns: [u64; 3]) {
    let ids: Vec<u32> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            p.intern(Frame {
                name: n.to_string(),
                module: if i == 0 { "" } else { "demo" }.into(),
                kind: if i == 0 {
                    FrameKind::Process
                } else {
                    FrameKind::User
                },
            })
        })
        .collect();
    if samples > 0 {
        p.add(
            &ids,
            CPU_CLOCK,
            Count {
                samples,
                period: samples * 1_000_000,
            },
        );
    }
    for (event, ns) in [ON, RUN, BLOCK].into_iter().zip(ns) {
        if ns > 0 {
            p.add(
                &ids,
                event,
                Count {
                    samples: 1,
                    period: ns,
                },
            );
        }
    }
}

/// cpu-clock samples; on-CPU, runnable, blocked ns:
///   app;main;compute             3   3_000_000          0           0
///   app;main;read;wait           0           0    500_000   9_000_000
///   app;main;rec;rec;compute     1   1_000_000    250_000   1_250_000
///   app;main;lock                0           0          0   4_000_000
/// Totals: on 4_000_000, runnable 750_000, blocked 14_250_000, wall 19_000_000.
fn wall_profile() -> Profile {
    let mut p = Profile::new(wall_profile_events());
    add(&mut p, &["app", "main", "compute"], 3, [3_000_000, 0, 0]);
    add(
        &mut p,
        &["app", "main", "read", "wait"],
        0,
        [0, 500_000, 9_000_000],
    );
    add(
        &mut p,
        &["app", "main", "rec", "rec", "compute"],
        1,
        [1_000_000, 250_000, 1_250_000],
    );
    add(&mut p, &["app", "main", "lock"], 0, [0, 0, 4_000_000]);
    p
}

/// name, total cpu-clock samples, on, runnable, blocked, wall ns.
type Row<'a> = (&'a str, u64, u64, u64, u64, u64);

#[test]
fn inclusive_wall_time_per_function_each_stack_once() {
    let p = wall_profile();
    let top = top_frames(&p, &columns(&p), DEFAULT_CONFIDENCE);
    // app, main: every stack. read, wait: the blocked stack (0.5M + 9M). compute: its own
    // stack and the recursive one (3M + 1M on CPU, 0.25M runnable, 1.25M blocked). lock:
    // 4M blocked, no samples. rec: twice in its stack, counted once: 1M + 0.25M + 1.25M.
    // Ordered by wall time; app and main tie (same samples) and go by name, as read and
    // wait do.
    let expected: [Row; 7] = [
        ("app", 4, 4_000_000, 750_000, 14_250_000, 19_000_000),
        ("main", 4, 4_000_000, 750_000, 14_250_000, 19_000_000),
        ("read", 0, 0, 500_000, 9_000_000, 9_500_000),
        ("wait", 0, 0, 500_000, 9_000_000, 9_500_000),
        ("compute", 4, 4_000_000, 250_000, 1_250_000, 5_500_000),
        ("lock", 0, 0, 0, 4_000_000, 4_000_000),
        ("rec", 1, 1_000_000, 250_000, 1_250_000, 2_500_000),
    ];
    let got: Vec<Row> = top
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                f.total_samples,
                f.on_cpu_ns.unwrap(),
                f.runnable_ns.unwrap(),
                f.blocked_ns.unwrap(),
                f.wall_ns.unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    for f in &top {
        assert_eq!(
            f.wall_share,
            Some(f.wall_ns.unwrap() as f64 / 19_000_000.0),
            "{}",
            f.name
        );
    }
    assert_eq!(top[2].wall_share, Some(0.5));
    // The cycles fields keep their meaning: of cpu-clock (4 samples, 4 ms).
    let compute = top.iter().find(|f| f.name == "compute").unwrap();
    assert_eq!(
        (
            compute.self_samples,
            compute.total_share,
            compute.self_share
        ),
        (4, 1.0, 1.0)
    );
    let lock = top.iter().find(|f| f.name == "lock").unwrap();
    assert_eq!((lock.total_samples, lock.total_share), (0, 0.0));

    let t = totals(&p, &columns(&p), DEFAULT_CONFIDENCE);
    assert_eq!(
        (t.on_cpu_ns, t.runnable_ns, t.blocked_ns, t.wall_ns),
        (
            Some(4_000_000),
            Some(750_000),
            Some(14_250_000),
            Some(19_000_000)
        )
    );
    assert_eq!((t.cycles_samples, t.cycles_period), (4, 4_000_000));
}

#[test]
fn without_all_three_columns_there_is_no_wall_time() {
    // The blocked column renamed: two wall columns are not wall time, and the off-CPU-only
    // stacks (no cpu-clock) are not listed, as before the columns existed.
    let mut p = wall_profile();
    p.events[BLOCK].name = "sched:sched_switch".into();
    let top = top_frames(&p, &columns(&p), DEFAULT_CONFIDENCE);
    assert!(top.iter().all(|f| f.on_cpu_ns.is_none()
        && f.runnable_ns.is_none()
        && f.blocked_ns.is_none()
        && f.wall_ns.is_none()
        && f.wall_share.is_none()));
    let names: Vec<&str> = top.iter().map(|f| f.name.as_str()).collect();
    // All three have 4 samples; compute has them as self samples.
    assert_eq!(names, ["compute", "app", "main", "rec"]);
    let t = totals(&p, &columns(&p), DEFAULT_CONFIDENCE);
    assert_eq!(
        (t.on_cpu_ns, t.runnable_ns, t.blocked_ns, t.wall_ns),
        (None, None, None, None)
    );
}

#[test]
fn report_json_carries_the_wall_fields() {
    let p = wall_profile();
    let mut out = Vec::new();
    write_report(&p, &ReportOptions::new(columns(&p)), Format::Json, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema"], "cpiflame-report/1");
    let t = &v["totals"];
    assert_eq!(t["on_cpu_ns"], 4_000_000);
    assert_eq!(t["runnable_ns"], 750_000);
    assert_eq!(t["blocked_ns"], 14_250_000);
    assert_eq!(t["wall_ns"], 19_000_000);
    let wait = &v["frames"][3];
    assert_eq!(wait["name"], "wait");
    assert_eq!(wait["on_cpu_ns"], 0);
    assert_eq!(wait["runnable_ns"], 500_000);
    assert_eq!(wait["blocked_ns"], 9_000_000);
    assert_eq!(wait["wall_ns"], 9_500_000);
    assert_eq!(wait["wall_share"], 0.5);
    assert_eq!(wait["total_samples"], 0);
    assert_eq!(wait["stall_share"], Value::Null);
}

#[test]
fn report_text_has_the_wall_columns() {
    let p = wall_profile();
    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions {
            limit: 0,
            ..ReportOptions::new(columns(&p))
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    print!("{text}");
    // 19 ms of wall time: 4 / 19 = 21.05% on CPU, 0.75 / 19 = 3.95% runnable, 14.25 / 19 =
    // 75.00% blocked.
    assert_eq!(
        text,
        "\
# cpiflame report: 4 samples of cpu-clock; wall time 19.00ms: 21.05% on CPU, 3.95% runnable, 75.00% blocked
#
#    Wall   On-CPU  Runnable  Blocked    Total     Self  Samples  Function [module]
# .......  .......  ........  .......  .......  .......  .......  .................
#
  100.00%   4.00ms  750.00us  14.25ms  100.00%    0.00%        4  app
  100.00%   4.00ms  750.00us  14.25ms  100.00%    0.00%        4  main [demo]
   50.00%      0ns  500.00us   9.00ms    0.00%    0.00%        0  read [demo]
   50.00%      0ns  500.00us   9.00ms    0.00%    0.00%        0  wait [demo]
   28.95%   4.00ms  250.00us   1.25ms  100.00%  100.00%        4  compute [demo]
   21.05%      0ns       0ns   4.00ms    0.00%    0.00%        0  lock [demo]
   13.16%   1.00ms  250.00us   1.25ms   25.00%    0.00%        1  rec [demo]
"
    );
}

#[test]
fn folded_periods_are_the_nanoseconds() {
    let p = wall_profile();
    let mut out = Vec::new();
    write_folded_periods(&p, &[BLOCK], &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "app;main;read;wait 9000000\napp;main;rec;rec;compute 1250000\napp;main;lock 4000000\n"
    );
}

/// before: [`wall_profile`] (19 ms). after: the read blocks twice as long (18 ms), the lock
/// is gone, and a new `log` stack blocks for 1 ms: 3 + 18.5 + 2.5 + 1 = 25 ms of wall time.
fn before_after() -> (Profile, Profile) {
    let before = wall_profile();
    let mut after = Profile::new(wall_profile_events());
    add(
        &mut after,
        &["app", "main", "compute"],
        3,
        [3_000_000, 0, 0],
    );
    add(
        &mut after,
        &["app", "main", "read", "wait"],
        0,
        [0, 500_000, 18_000_000],
    );
    add(
        &mut after,
        &["app", "main", "rec", "rec", "compute"],
        1,
        [1_000_000, 250_000, 1_250_000],
    );
    add(&mut after, &["app", "main", "log"], 0, [0, 0, 1_000_000]);
    (before, after)
}

#[test]
fn diff_compares_shares_of_wall_time_when_both_have_it() {
    let (before, after) = before_after();
    assert_eq!(
        Measure::of(&columns(&before), &columns(&after)),
        Measure::WallTime
    );
    // after's wall: 3M + 18.5M + 2.5M + 1M = 25M.
    // read/wait: 9.5 / 19 = 50% → 18.5 / 25 = 74%: +24 points.
    // compute: 5.5 / 19 → 5.5 / 25 = 22%. lock: 4 / 19 → 0 (gone). log: 0 → 1 / 25 = 4%.
    let d = diff_frames(&before, &columns(&before), &after, &columns(&after));
    let row = |name: &str| d.iter().find(|x| x.name == name).unwrap();
    let wait = row("wait");
    assert_eq!(wait.before_wall_share, Some(0.5));
    assert_eq!(wait.after_wall_share, Some(0.74));
    assert_eq!(
        wait.wall_delta_points,
        Some(18_500_000.0 * 100.0 / 25_000_000.0 - 9_500_000.0 * 100.0 / 19_000_000.0)
    );
    assert!((wait.change_points() - 24.0).abs() < 1e-9);
    assert_eq!(
        (wait.before_wall_ns, wait.after_wall_ns),
        (Some(9_500_000), Some(18_500_000))
    );
    // The cycles shares are still there, unchanged in meaning: neither side has cycles in
    // the blocked stack.
    assert_eq!(
        (
            wait.before_total_share,
            wait.after_total_share,
            wait.delta_points
        ),
        (0.0, 0.0, 0.0)
    );
    let compute = row("compute");
    assert_eq!(compute.after_wall_share, Some(0.22));
    assert_eq!(compute.delta_points, 0.0);
    let lock = row("lock");
    assert_eq!(
        (lock.before_wall_ns, lock.after_wall_ns),
        (Some(4_000_000), Some(0))
    );
    assert_eq!(row("log").after_wall_share, Some(0.04));
    // Sorted by the wall change: read and wait first (+24), by name.
    assert_eq!(d[0].name, "read");
    assert_eq!(d[1].name, "wait");
    let changes: Vec<f64> = d.iter().map(|x| x.change_points().abs()).collect();
    assert!(changes.windows(2).all(|w| w[0] >= w[1]), "{changes:?}");

    let (tb, ta) = (
        totals(&before, &columns(&before), DEFAULT_CONFIDENCE),
        totals(&after, &columns(&after), DEFAULT_CONFIDENCE),
    );
    let mut out = Vec::new();
    write_diff(
        &tb,
        &ta,
        &d,
        &DiffSummaryOptions::default(),
        Format::Json,
        &mut out,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["measure"], "wall-time");
    assert_eq!(v["after"]["wall_ns"], 25_000_000);
    assert_eq!(v["frames"][1]["after_wall_share"], 0.74);

    let mut out = Vec::new();
    write_diff(
        &tb,
        &ta,
        &d,
        &DiffSummaryOptions {
            limit: 0,
            ..Default::default()
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    print!("{text}");
    assert!(text.contains(
        "\n# shares are of each run's own wall time (on CPU + runnable + blocked); \
         change in percentage points\n"
    ));
    // Before and after are wall shares; (new) and (gone) go by wall time.
    assert!(text.contains("\n   50.00%   74.00%   +24.00"), "{text}");
    assert!(text.contains("lock [demo] (gone)\n"), "{text}");
    assert!(text.contains("log [demo] (new)\n"), "{text}");
}

#[test]
fn diff_compares_cycles_when_one_side_has_no_wall_time() {
    let (before, mut after) = before_after();
    after.events[BLOCK].name = "sched:sched_switch".into();
    assert_eq!(
        Measure::of(&columns(&before), &columns(&after)),
        Measure::Cycles
    );
    let d = diff_frames(&before, &columns(&before), &after, &columns(&after));
    assert!(d.iter().all(|x| x.wall_delta_points.is_none()
        && x.before_wall_share.is_none()
        && x.change_points() == x.delta_points));
    let (tb, ta) = (
        totals(&before, &columns(&before), DEFAULT_CONFIDENCE),
        totals(&after, &columns(&after), DEFAULT_CONFIDENCE),
    );
    let mut out = Vec::new();
    write_diff(
        &tb,
        &ta,
        &d,
        &DiffSummaryOptions::default(),
        Format::Json,
        &mut out,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["measure"], "cycles");
    let mut out = Vec::new();
    write_diff(
        &tb,
        &ta,
        &d,
        &DiffSummaryOptions {
            limit: 0,
            ..Default::default()
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(
        "\n# shares are of each run's own total; change in percentage points\n\
         # (of cycles: only before has wall time, so wall time is not compared)\n"
    ));
}

/// The summaries take the width from the columns they are given, not from the columns'
/// names: a profile with the wall-time columns read as on-CPU only (`--on-cpu-only`: the
/// cycles the width) has no wall time in its totals or frames, as its graph has none.
#[test]
fn columns_of_cycles_leave_the_wall_time_out() {
    let p = wall_profile();
    let on_cpu = Columns::new(CPU_CLOCK, None);
    let t = totals(&p, &on_cpu, DEFAULT_CONFIDENCE);
    assert_eq!(
        (t.on_cpu_ns, t.runnable_ns, t.blocked_ns, t.wall_ns),
        (None, None, None, None)
    );
    assert!(top_frames(&p, &on_cpu, DEFAULT_CONFIDENCE)
        .iter()
        .all(|f| f.wall_ns.is_none() && f.blocked_ns.is_none()));
    let t = totals(&p, &columns(&p), DEFAULT_CONFIDENCE);
    assert!(t.wall_ns.is_some_and(|ns| ns > 0), "{t:?}");
}
