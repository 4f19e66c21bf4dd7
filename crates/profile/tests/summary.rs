//! top_frames, diff_frames and their text and JSON forms, on hand-built profiles whose
//! numbers are worked out by hand in the comments.

use cpiflame_profile::interval::DEFAULT_CONFIDENCE;
use cpiflame_profile::{
    diff_frames, read_folded, top_frames, totals, write_diff, write_report, Column, Columns, Count,
    DiffSummaryOptions, EventColumn, Format, Frame, FrameDiff, FrameKind, FrameSummary, Profile,
    ReportOptions, Totals, Width,
};
use serde_json::Value;

const STALLS: usize = 0;
const CYCLES: usize = 1;
/// Period of one cycles sample, and of one stall sample (3×): shares must use periods.
const CP: u64 = 10;
const SP: u64 = 30;

fn frame(name: &str, module: &str, kind: FrameKind) -> Frame {
    Frame {
        name: name.into(),
        module: module.into(),
        kind,
    }
}

fn columns(names: &[&str]) -> Vec<EventColumn> {
    names
        .iter()
        .map(|n| EventColumn {
            name: n.to_string(),
        })
        .collect()
}

/// Adds a stack given by names (first is the process, in no module; the leaf in `module`, the
/// others in `demo`) with `stalls` and `cycles` samples.
fn add(p: &mut Profile, names: &[&str], module: &str, stalls: u64, cycles: u64) {
    let ids: Vec<u32> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if i == 0 {
                p.intern(frame(n, "", FrameKind::Process))
            } else if i + 1 == names.len() {
                p.intern(frame(n, module, FrameKind::User))
            } else {
                p.intern(frame(n, "demo", FrameKind::User))
            }
        })
        .collect();
    if stalls > 0 {
        p.add(
            &ids,
            STALLS,
            Count {
                samples: stalls,
                period: stalls * SP,
            },
        );
    }
    if cycles > 0 {
        p.add(
            &ids,
            CYCLES,
            Count {
                samples: cycles,
                period: cycles * CP,
            },
        );
    }
}

/// stalls, cycles (samples)
///   app;main;compute           1   6
///   app;main;load              1   3
///   app;main;rec;rec;load      0   1
///   app;main;idle              1   0
/// 10 cycles samples (period 100), 3 stall samples (period 90).
fn hand_built() -> Profile {
    let mut p = Profile::new(columns(&["resource_stalls_any", "cycles"]));
    add(&mut p, &["app", "main", "compute"], "demo", 1, 6);
    add(&mut p, &["app", "main", "load"], "demo", 1, 3);
    add(&mut p, &["app", "main", "rec", "rec", "load"], "demo", 0, 1);
    add(&mut p, &["app", "main", "idle"], "demo", 1, 0);
    p
}

/// `samples` and `shares` are (self, total).
fn summary(
    name: &str,
    module: &str,
    kind: FrameKind,
    samples: (u64, u64),
    shares: (f64, f64),
    stall_share: Option<f64>,
) -> FrameSummary {
    FrameSummary {
        name: name.into(),
        module: module.into(),
        kind,
        self_samples: samples.0,
        total_samples: samples.1,
        self_share: shares.0,
        total_share: shares.1,
        stall_share,
        cpi: None,
        ipc: None,
        stall_share_interval: None,
        cpi_interval: None,
        on_cpu_ns: None,
        runnable_ns: None,
        blocked_ns: None,
        wall_ns: None,
        wall_share: None,
        hottest_line: None,
        topdown: None,
        self_topdown: None,
    }
}

/// `frames` with their intervals checked (one wherever there is a stall share, holding it,
/// as `interval::ratio_interval` gives it for these small counts, cut to [0, 1]) and then left out, so the
/// rest compares with [`summary`]'s.
fn without_intervals(p: &Profile, mut frames: Vec<FrameSummary>) -> Vec<FrameSummary> {
    let all_stalls = p.total(STALLS);
    for f in &mut frames {
        match (f.stall_share, f.stall_share_interval) {
            (None, None) => {}
            (Some(share), Some([lo, hi])) => {
                assert!(lo <= share && share <= hi, "{f:?}");
                let (stalls, cycles) = inclusive(p, &f.name);
                let i =
                    cpiflame_profile::interval::ratio_interval(stalls, cycles, all_stalls, 0.95)
                        .unwrap()
                        .within_share();
                assert_eq!([i.lo, i.hi], [lo, hi], "{}", f.name);
            }
            other => panic!("{}: stall share and interval {other:?}", f.name),
        }
        f.stall_share_interval = None;
    }
    frames
}

/// The stall and cycles counts of the stacks containing the frame named `name` (each once).
fn inclusive(p: &Profile, name: &str) -> (Count, Count) {
    let (mut s, mut c) = (Count::default(), Count::default());
    for stack in &p.stacks {
        if stack.frames.iter().any(|&f| p.frame(f).name == name) {
            s.add(stack.counts[STALLS]);
            c.add(stack.counts[CYCLES]);
        }
    }
    (s, c)
}

#[test]
fn top_frames_by_hand() {
    use FrameKind::{Process, User};
    let p = hand_built();
    let top = without_intervals(
        &p,
        top_frames(&p, &Columns::new(CYCLES, Some(STALLS)), DEFAULT_CONFIDENCE),
    );
    // app, main: in every stack: total 10 of 10; stall period 30+30+0+30 = 90 over cycles
    //   period 60+30+10+0 = 100 → 0.9.
    // compute: self = total = 6 → 0.6; stall 30 / 60 = 0.5.
    // load: self 3 + 1 = 4 → 0.4; stall 30 / 40 = 0.75 (by samples it would be 1/4).
    // rec: twice in one stack, counted once: total 1 → 0.1; stall 0 / 10 = 0.
    // idle: only in a stack without cycles: total 0, stall share None (no cycles period).
    assert_eq!(
        top,
        vec![
            summary("app", "", Process, (0, 10), (0.0, 1.0), Some(0.9)),
            summary("main", "demo", User, (0, 10), (0.0, 1.0), Some(0.9)),
            summary("compute", "demo", User, (6, 6), (0.6, 0.6), Some(0.5)),
            summary("load", "demo", User, (4, 4), (0.4, 0.4), Some(0.75)),
            summary("rec", "demo", User, (0, 1), (0.0, 0.1), Some(0.0)),
            summary("idle", "demo", User, (0, 0), (0.0, 0.0), None),
        ]
    );

    // Without a stall column: no stall shares, and `idle` (no cycles) is gone.
    let top = top_frames(&p, &Columns::new(CYCLES, None), DEFAULT_CONFIDENCE);
    assert_eq!(top.len(), 5);
    assert!(top.iter().all(|f| f.stall_share.is_none()));
    assert_eq!(top[2].name, "compute");
    assert_eq!(top[2].self_share, 0.6);

    let t = totals(&p, &Columns::new(CYCLES, Some(STALLS)), DEFAULT_CONFIDENCE);
    assert_eq!(
        t,
        Totals {
            cycles_event: "cycles".into(),
            stalls_event: Some("resource_stalls_any".into()),
            cycles_samples: 10,
            cycles_period: 100,
            stall_samples: Some(3),
            stall_period: Some(90),
            stall_share: Some(0.9),
            instructions_event: None,
            instructions_samples: None,
            instructions_period: None,
            cpi: None,
            ipc: None,
            stall_share_interval: t.stall_share_interval,
            cpi_interval: None,
            on_cpu_ns: None,
            runnable_ns: None,
            blocked_ns: None,
            wall_ns: None,
        }
    );
    let i = cpiflame_profile::interval::ratio_interval(
        Count {
            samples: 3,
            period: 90,
        },
        Count {
            samples: 10,
            period: 100,
        },
        p.total(STALLS),
        0.95,
    )
    .unwrap()
    .within_share();
    assert_eq!(t.stall_share_interval, Some([i.lo, i.hi]));
}

#[test]
fn same_name_and_module_merge_across_kinds_and_modules_stay_apart() {
    let mut p = Profile::new(columns(&["cpu-clock"]));
    let app = p.intern(frame("app", "", FrameKind::Process));
    let main = p.intern(frame("main", "app", FrameKind::User));
    let inl = p.intern(frame("helper", "app", FrameKind::Inline));
    let called = p.intern(frame("helper", "app", FrameKind::User));
    let other = p.intern(frame("helper", "libother.so", FrameKind::User));
    // A function named like the process is not the process.
    let app_fn = p.intern(frame("app", "", FrameKind::User));
    let c = |n| Count {
        samples: n,
        period: n * 250_000,
    };
    p.add(&[app, main, inl], 0, c(2));
    p.add(&[app, main, called], 0, c(3));
    p.add(&[app, main, inl, called], 0, c(1)); // helper twice: once in its total
    p.add(&[app, main, other], 0, c(4));
    p.add(&[app, app_fn], 0, c(10));
    let top = top_frames(&p, &Columns::new(0, None), DEFAULT_CONFIDENCE);
    let find = |name: &str, module: &str, kind: FrameKind| {
        top.iter()
            .find(|f| f.name == name && f.module == module && f.kind == kind)
            .unwrap_or_else(|| panic!("{name} [{module}] {kind:?} in {top:#?}"))
            .clone()
    };
    let helper = find("helper", "app", FrameKind::User);
    // Inline and called `helper` merge: self 2 + 3 + 1, total 2 + 3 + 1 (the last stack once).
    assert_eq!((helper.self_samples, helper.total_samples), (6, 6));
    assert_eq!(helper.kind, FrameKind::User);
    assert_eq!(helper.total_share, 0.3);
    assert_eq!(
        find("helper", "libother.so", FrameKind::User).total_samples,
        4
    );
    assert_eq!(find("app", "", FrameKind::Process).total_samples, 20);
    assert_eq!(find("app", "", FrameKind::User).total_samples, 10);
    assert_eq!(top.len(), 5);
    assert!(top.iter().all(|f| f.stall_share.is_none()));
}

/// before (one column, as read from a folded file): 20 samples.
///   app;main;foo 5 (25%)   app;main;bar 10 (50%)   app;main;gone 5 (25%)
/// after (stalls and cycles, different periods): 40 cycles samples, twice before's.
///   app;main;foo 16 (40%)  app;main;bar 20 (50%)   app;main;new 4 (10%)
fn before_after() -> (Profile, Profile) {
    let before = read_folded(
        &b"app;main;foo 5\napp;main;bar 10\napp;main;gone 5\n"[..],
        "before.folded",
    )
    .unwrap();
    let mut after = Profile::new(columns(&["stalls", "cycles"]));
    add(&mut after, &["app", "main", "foo"], "demo", 8, 16); // stall 240 / 160 → 1.5
    add(&mut after, &["app", "main", "bar"], "libbar.so", 2, 20); // 60 / 200 → 0.3
    add(&mut after, &["app", "main", "new"], "", 0, 4); // 0 / 40 → 0
    (before, after)
}

fn diff(
    name: &str,
    module: &str,
    kind: FrameKind,
    before: (f64, f64, u64),
    after: (f64, f64, u64),
    delta: f64,
    stalls: (Option<f64>, Option<f64>),
) -> FrameDiff {
    FrameDiff {
        name: name.into(),
        module: module.into(),
        kind,
        before_total_share: before.0,
        after_total_share: after.0,
        delta_points: delta,
        before_self_share: before.1,
        after_self_share: after.1,
        before_stall_share: stalls.0,
        after_stall_share: stalls.1,
        before_samples: before.2,
        after_samples: after.2,
        before_cpi: None,
        after_cpi: None,
        before_wall_share: None,
        after_wall_share: None,
        wall_delta_points: None,
        before_wall_ns: None,
        after_wall_ns: None,
        before_mean_share: before.0,
        after_mean_share: after.0,
        change_interval: None,
        exceeds_threshold: None,
        topdown_before: None,
        topdown_after: None,
    }
}

#[test]
fn diff_frames_by_hand() {
    use FrameKind::{Process, User};
    let (before, after) = before_after();
    let d = diff_frames(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(CYCLES, Some(STALLS)),
    );
    // Sorted by |delta|: gone (-25), foo (+15), new (+10), then the unchanged by name.
    // app and main: stall (240 + 60 + 0) / (160 + 200 + 40) = 300 / 400 = 0.75.
    assert_eq!(
        d,
        vec![
            diff(
                "gone",
                "",
                User,
                (0.25, 0.25, 5),
                (0.0, 0.0, 0),
                -25.0,
                (None, None)
            ),
            diff(
                "foo",
                "demo",
                User,
                (0.25, 0.25, 5),
                (0.4, 0.4, 16),
                15.0,
                (None, Some(1.5))
            ),
            diff(
                "new",
                "",
                User,
                (0.0, 0.0, 0),
                (0.1, 0.1, 4),
                10.0,
                (None, Some(0.0))
            ),
            diff(
                "app",
                "",
                Process,
                (1.0, 0.0, 20),
                (1.0, 0.0, 40),
                0.0,
                (None, Some(0.75))
            ),
            diff(
                "bar",
                "libbar.so",
                User,
                (0.5, 0.5, 10),
                (0.5, 0.5, 20),
                0.0,
                (None, Some(0.3))
            ),
            diff(
                "main",
                "demo",
                User,
                (1.0, 0.0, 20),
                (1.0, 0.0, 40),
                0.0,
                (None, Some(0.75))
            ),
        ]
    );

    // The other way round: signs flip, modules still come from whichever side has them.
    let r = diff_frames(
        &after,
        &Columns::new(CYCLES, Some(STALLS)),
        &before,
        &Columns::new(0, None),
    );
    let foo = r.iter().find(|x| x.name == "foo").unwrap();
    assert_eq!(foo.delta_points, -15.0);
    assert_eq!(foo.module, "demo");
    assert_eq!(
        (foo.before_stall_share, foo.after_stall_share),
        (Some(1.5), None)
    );
    let new = r.iter().find(|x| x.name == "new").unwrap();
    assert_eq!((new.before_samples, new.after_samples), (4, 0));
}

#[test]
fn diff_matches_by_name_across_modules() {
    // before: foo in two modules (perf names it by DSO); after: one, from a folded file.
    let mut before = Profile::new(columns(&["cycles"]));
    let app = before.intern(frame("app", "", FrameKind::Process));
    let foo_a = before.intern(frame("foo", "liba.so", FrameKind::User));
    let foo_b = before.intern(frame("foo", "libb.so", FrameKind::User));
    let one = Count {
        samples: 1,
        period: 1,
    };
    before.add(&[app, foo_a], 0, one);
    before.add(&[app, foo_b], 0, one);
    before.add(&[app, foo_b], 0, one);
    before.add(&[app, foo_a, foo_b], 0, one); // foo twice in one stack: counted once
    let after = read_folded(&b"app;foo 1\napp;bar 1\n"[..], "after").unwrap();
    let d = diff_frames(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
    );
    let foo = d.iter().find(|x| x.name == "foo").unwrap();
    // before: 4 of 4 samples; after 1 of 2.
    assert_eq!((foo.before_samples, foo.after_samples), (4, 1));
    assert_eq!(foo.delta_points, -50.0);
    // after names no module: before's, the one with the most samples (libb.so: 3).
    assert_eq!(foo.module, "libb.so");
    assert_eq!(d.iter().filter(|x| x.name == "foo").count(), 1);
}

#[test]
fn zero_totals_give_zero_shares_not_nan() {
    let p = Profile::new(columns(&["stalls", "cycles"]));
    assert!(top_frames(&p, &Columns::new(CYCLES, Some(STALLS)), DEFAULT_CONFIDENCE).is_empty());
    let t = totals(&p, &Columns::new(CYCLES, Some(STALLS)), DEFAULT_CONFIDENCE);
    assert_eq!((t.cycles_samples, t.stall_share), (0, None));
    // Columns the profile does not have count as zero instead of panicking.
    let p = hand_built();
    let top = top_frames(&p, &Columns::new(7, Some(9)), DEFAULT_CONFIDENCE);
    assert!(top.is_empty());
    let t = totals(&p, &Columns::new(7, Some(9)), DEFAULT_CONFIDENCE);
    assert_eq!(t.cycles_event, "");
    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions::new(Columns::new(7, Some(9))),
        Format::Json,
        &mut out,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["totals"]["stall_share"], Value::Null);
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    k.sort();
    k
}

const TOTALS_KEYS: [&str; 18] = [
    "blocked_ns",
    "cpi",
    "cpi_interval",
    "cycles_event",
    "cycles_period",
    "cycles_samples",
    "instructions_event",
    "instructions_period",
    "instructions_samples",
    "ipc",
    "on_cpu_ns",
    "runnable_ns",
    "stall_period",
    "stall_samples",
    "stall_share",
    "stall_share_interval",
    "stalls_event",
    "wall_ns",
];

#[test]
fn report_json_has_the_documented_schema() {
    let p = hand_built();
    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions::new(Columns::new(CYCLES, Some(STALLS))),
        Format::Json,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.ends_with("}\n") && text.lines().count() == 1);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(keys(&v), ["frames", "schema", "totals"]);
    assert_eq!(v["schema"], "cpiflame-report/1");
    assert_eq!(keys(&v["totals"]), TOTALS_KEYS);
    assert_eq!(v["totals"]["cycles_event"], "cycles");
    assert_eq!(v["totals"]["stalls_event"], "resource_stalls_any");
    assert_eq!(v["totals"]["cycles_samples"], 10);
    assert_eq!(v["totals"]["cycles_period"], 100);
    assert_eq!(v["totals"]["stall_samples"], 3);
    assert_eq!(v["totals"]["stall_period"], 90);
    assert_eq!(v["totals"]["stall_share"], 0.9);
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 6);
    for f in frames {
        assert_eq!(
            keys(f),
            [
                "blocked_ns",
                "cpi",
                "cpi_interval",
                "ipc",
                "kind",
                "module",
                "name",
                "on_cpu_ns",
                "runnable_ns",
                "self_samples",
                "self_share",
                "stall_share",
                "stall_share_interval",
                "total_samples",
                "total_share",
                "wall_ns",
                "wall_share"
            ]
        );
    }
    assert_eq!(frames[0]["kind"], "process");
    assert_eq!(frames[2]["name"], "compute");
    assert_eq!(frames[2]["module"], "demo");
    assert_eq!(frames[2]["kind"], "user");
    assert_eq!(frames[2]["self_samples"], 6);
    assert_eq!(frames[2]["total_share"], 0.6);
    assert_eq!(frames[2]["stall_share"], 0.5);
    assert_eq!(frames[5]["name"], "idle");
    assert_eq!(frames[5]["stall_share"], Value::Null);
    assert!(frames[4]["stall_share"].is_f64());

    // No stall column: nulls.
    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions::new(Columns::new(CYCLES, None)),
        Format::Json,
        &mut out,
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    for k in [
        "stalls_event",
        "stall_samples",
        "stall_period",
        "stall_share",
        "instructions_event",
        "instructions_samples",
        "instructions_period",
        "cpi",
        "ipc",
        "on_cpu_ns",
        "runnable_ns",
        "blocked_ns",
        "wall_ns",
    ] {
        assert_eq!(v["totals"][k], Value::Null, "{k}");
    }
    for k in [
        "on_cpu_ns",
        "runnable_ns",
        "blocked_ns",
        "wall_ns",
        "wall_share",
    ] {
        assert_eq!(v["frames"][0][k], Value::Null, "{k}");
    }
    assert_eq!(v["frames"][0]["cpi"], Value::Null);
    assert_eq!(v["frames"][0]["ipc"], Value::Null);
    assert_eq!(v["frames"][0]["stall_share"], Value::Null);
}

#[test]
fn diff_json_has_the_documented_schema() {
    let (before, after) = before_after();
    let d = diff_frames(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(CYCLES, Some(STALLS)),
    );
    let (tb, ta) = (
        totals(&before, &Columns::new(0, None), DEFAULT_CONFIDENCE),
        totals(
            &after,
            &Columns::new(CYCLES, Some(STALLS)),
            DEFAULT_CONFIDENCE,
        ),
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
    assert_eq!(
        keys(&v),
        [
            "after",
            "before",
            "confidence",
            "fail_above",
            "frames",
            "measure",
            "runs",
            "schema"
        ]
    );
    assert_eq!(v["schema"], "cpiflame-diff/1");
    assert_eq!(v["measure"], "cycles");
    // diff_frames alone: one run per side, untested (no intervals, no threshold).
    assert_eq!(v["runs"], serde_json::json!({"before": 1, "after": 1}));
    assert_eq!(v["confidence"], 0.95);
    assert_eq!(v["fail_above"], Value::Null);
    assert_eq!(keys(&v["before"]), TOTALS_KEYS);
    assert_eq!(keys(&v["after"]), TOTALS_KEYS);
    assert_eq!(v["before"]["cycles_event"], "samples");
    assert_eq!(v["before"]["cycles_samples"], 20);
    assert_eq!(v["before"]["stall_share"], Value::Null);
    assert_eq!(v["after"]["cycles_samples"], 40);
    assert_eq!(v["after"]["stall_share"], 0.75);
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 6);
    for f in frames {
        assert_eq!(
            keys(f),
            [
                "after_cpi",
                "after_mean_share",
                "after_samples",
                "after_self_share",
                "after_stall_share",
                "after_total_share",
                "after_wall_ns",
                "after_wall_share",
                "before_cpi",
                "before_mean_share",
                "before_samples",
                "before_self_share",
                "before_stall_share",
                "before_total_share",
                "before_wall_ns",
                "before_wall_share",
                "change_interval",
                "delta_points",
                "exceeds_threshold",
                "kind",
                "module",
                "name",
                "wall_delta_points"
            ]
        );
    }
    let foo = &frames[1];
    assert_eq!(foo["name"], "foo");
    assert_eq!(foo["delta_points"], 15.0);
    assert_eq!(foo["before_total_share"], 0.25);
    assert_eq!(foo["after_total_share"], 0.4);
    assert_eq!(foo["before_stall_share"], Value::Null);
    assert_eq!(foo["after_stall_share"], 1.5);
    assert_eq!(foo["before_samples"], 5);
    assert_eq!(foo["after_samples"], 16);
    assert_eq!(frames[0]["name"], "gone");
    assert_eq!(frames[0]["after_samples"], 0);
    assert_eq!(frames[0]["delta_points"], -25.0);
    for f in frames {
        for k in [
            "before_wall_share",
            "after_wall_share",
            "wall_delta_points",
            "before_wall_ns",
            "after_wall_ns",
        ] {
            assert_eq!(f[k], Value::Null, "{k}");
        }
    }
}

#[test]
fn report_text_rows() {
    // The intervals of so few samples are wide and lopsided (`[lo, hi]`, not `±`), cut at
    // 100% (a share's interval; compute's `±` is the larger side); their values are
    // `ratio_interval`'s, checked in `top_frames_by_hand`.
    let p = hand_built();
    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions {
            limit: 0,
            ..ReportOptions::new(Columns::new(CYCLES, Some(STALLS)))
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    print!("{text}");
    assert_eq!(
        text,
        "\
# cpiflame report: 10 samples of cycles, 90.00% of cycles stalled (resource_stalls_any)
#
#   Total     Self                   Stall  Samples  Function [module]
# .......  .......  ......................  .......  .................
#
  100.00%    0.00%  90.00% [19.93, 100.00]       10  app
  100.00%    0.00%  90.00% [19.93, 100.00]       10  main [demo]
   60.00%   60.00%           50.00% ±50.00        6  compute [demo]
   40.00%   40.00%   75.00% [3.03, 100.00]        4  load [demo]
   10.00%    0.00%    0.00% [0.00, 100.00]        1  rec [demo]
    0.00%    0.00%                       -        0  idle [demo]
"
    );

    // A limit, and no stall column.
    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions {
            limit: 2,
            ..ReportOptions::new(Columns::new(CYCLES, None))
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    print!("{text}");
    assert_eq!(
        text,
        "\
# cpiflame report: 10 samples of cycles
#
#   Total     Self  Samples  Function [module]
# .......  .......  .......  .................
#
  100.00%    0.00%       10  app
  100.00%    0.00%       10  main [demo]
#
# 3 more functions not shown
"
    );
}

#[test]
fn diff_text_rows() {
    let (before, after) = before_after();
    let d = diff_frames(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(CYCLES, Some(STALLS)),
    );
    let (tb, ta) = (
        totals(&before, &Columns::new(0, None), DEFAULT_CONFIDENCE),
        totals(
            &after,
            &Columns::new(CYCLES, Some(STALLS)),
            DEFAULT_CONFIDENCE,
        ),
    );
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
    assert_eq!(
        text,
        "\
# cpiflame diff: before: 20 samples of samples
#                after:  40 samples of cycles, 75.00% of cycles stalled (stalls)
# shares are of each run's own total; change in percentage points
#
#  Before    After   Change  Stall before -> after  Function [module]
# .......  .......  .......  .....................  .................
#
   25.00%    0.00%   -25.00           - ->       -  gone (gone)
   25.00%   40.00%   +15.00           - -> 150.00%  foo [demo]
    0.00%   10.00%   +10.00           - ->   0.00%  new (new)
  100.00%  100.00%    +0.00           - ->  75.00%  app
   50.00%   50.00%    +0.00           - ->  30.00%  bar [libbar.so]
  100.00%  100.00%    +0.00           - ->  75.00%  main [demo]
"
    );
    // Folded weights are counts (issue 38): that side's line says so, as report's does.
    let mut out = Vec::new();
    write_diff(
        &tb,
        &ta,
        &d,
        &DiffSummaryOptions {
            limit: 0,
            counts: (true, false),
            ..Default::default()
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with(
            "# cpiflame diff: before: 20 counts of samples\n#                after:  40 samples of cycles"
        ),
        "{text}"
    );
    let mut out = Vec::new();
    write_diff(
        &tb,
        &ta,
        &d,
        &DiffSummaryOptions {
            limit: 1,
            ..Default::default()
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("  gone (gone)\n#\n# 5 more functions not shown\n"));
}

/// Cycles (event 0) and instructions (event 1), no stall column; periods per sample differ
/// (1,000 cycles, 2,000 instructions) so that CPI must come from periods.
///
/// ```text
/// app;main;fast   cycles 4 (4,000)   instructions 8 (16,000)   CPI 0.25
/// app;main;slow   cycles 8 (8,000)   instructions 1 (2,000)    CPI 4
/// app;main;blind  cycles 2 (2,000)   no instructions           CPI unknown
/// app;main;seen   no cycles          instructions 1 (2,000)    (counts for main and app)
/// main and app: 14,000 cycles / 20,000 instructions = CPI 0.7, IPC 1/0.7
/// ```
fn with_instructions() -> Profile {
    let mut p = Profile::new(columns(&["cycles", "instructions"]));
    let app = p.intern(frame("app", "", FrameKind::Process));
    let main = p.intern(frame("main", "demo", FrameKind::User));
    for (leaf, cycles, instructions) in [
        ("fast", 4, 8),
        ("slow", 8, 1),
        ("blind", 2, 0),
        ("seen", 0, 1),
    ] {
        let leaf = p.intern(frame(leaf, "demo", FrameKind::User));
        for (column, n, period) in [(0, cycles, 1_000), (1, instructions, 2_000)] {
            if n > 0 {
                p.add(
                    &[app, main, leaf],
                    column,
                    Count {
                        samples: n,
                        period: n * period,
                    },
                );
            }
        }
    }
    p
}

const CPI_COLUMNS: Columns = Columns {
    width: Width::Cycles,
    cycles: Column(0),
    stalls: None,
    instructions: Some(Column(1)),
    ratio_cycles: None,
};

#[test]
fn report_gives_inclusive_cpi_and_ipc_from_periods() {
    let p = with_instructions();
    let top = top_frames(&p, &CPI_COLUMNS, DEFAULT_CONFIDENCE);
    let by = |name: &str| top.iter().find(|f| f.name == name).expect(name);
    assert_eq!(by("fast").cpi, Some(0.25));
    assert_eq!(by("fast").ipc, Some(4.0));
    assert_eq!(by("slow").cpi, Some(4.0));
    assert_eq!(by("slow").ipc, Some(0.25));
    assert_eq!(by("blind").cpi, None);
    assert_eq!(by("blind").ipc, None);
    assert_eq!(by("main").cpi, Some(14_000.0 / 20_000.0));
    assert_eq!(by("main").ipc, Some(20_000.0 / 14_000.0));
    // An instructions-only stack names a function with no cycles: CPI and IPC unknown.
    assert_eq!(
        (by("seen").total_samples, by("seen").cpi, by("seen").ipc),
        (0, None, None)
    );
    let t = totals(&p, &CPI_COLUMNS, DEFAULT_CONFIDENCE);
    assert_eq!(t.instructions_event.as_deref(), Some("instructions"));
    assert_eq!(
        (t.instructions_samples, t.instructions_period),
        (Some(10), Some(20_000))
    );
    assert_eq!((t.cpi, t.ipc), (Some(0.7), Some(20_000.0 / 14_000.0)));

    let mut out = Vec::new();
    write_report(&p, &ReportOptions::new(CPI_COLUMNS), Format::Json, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["schema"], "cpiflame-report/1");
    assert_eq!(v["totals"]["cpi"], 0.7);
    assert_eq!(v["totals"]["instructions_period"], 20_000);
    let frames = v["frames"].as_array().unwrap();
    let json = |name: &str| frames.iter().find(|f| f["name"] == name).expect(name);
    assert_eq!(json("fast")["cpi"], 0.25);
    assert_eq!(json("fast")["ipc"], 4.0);
    assert_eq!(json("slow")["cpi"], 4.0);
    assert_eq!(json("blind")["cpi"], Value::Null);
    assert_eq!(json("blind")["stall_share"], Value::Null);

    let mut out = Vec::new();
    write_report(
        &p,
        &ReportOptions {
            limit: 0,
            ..ReportOptions::new(CPI_COLUMNS)
        },
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "\
# cpiflame report: 14 samples of cycles, CPI 0.70 (instructions)
#
#   Total     Self                 CPI  Samples  Function [module]
# .......  .......  ..................  .......  .................
#
  100.00%    0.00%   0.70 [0.31, 1.63]       14  app
  100.00%    0.00%   0.70 [0.31, 1.63]       14  main [demo]
   57.14%   57.14%  4.00 [0.64, 89.47]        8  slow [demo]
   28.57%   28.57%   0.25 [0.07, 0.83]        4  fast [demo]
   14.29%   14.29%                   -        2  blind [demo]
    0.00%    0.00%                   -        0  seen [demo]
"
    );
}

#[test]
fn diff_summary_gives_cpi_before_and_after() {
    let before = with_instructions();
    // After: slow got faster (CPI 4 → 2), fast unchanged; no blind, no seen.
    let mut after = Profile::new(columns(&["cycles", "instructions"]));
    let app = after.intern(frame("app", "", FrameKind::Process));
    let main = after.intern(frame("main", "demo", FrameKind::User));
    for (leaf, cycles, instructions) in [("fast", 4, 8), ("slow", 8, 2)] {
        let leaf = after.intern(frame(leaf, "demo", FrameKind::User));
        for (column, n, period) in [(0, cycles, 1_000), (1, instructions, 2_000)] {
            after.add(
                &[app, main, leaf],
                column,
                Count {
                    samples: n,
                    period: n * period,
                },
            );
        }
    }
    let d = diff_frames(&before, &CPI_COLUMNS, &after, &CPI_COLUMNS);
    let by = |name: &str| d.iter().find(|f| f.name == name).expect(name);
    assert_eq!(
        (by("slow").before_cpi, by("slow").after_cpi),
        (Some(4.0), Some(2.0))
    );
    assert_eq!(
        (by("fast").before_cpi, by("fast").after_cpi),
        (Some(0.25), Some(0.25))
    );
    assert_eq!(
        (by("blind").before_cpi, by("blind").after_cpi),
        (None, None)
    );
    // main: 14,000 / 20,000 before; 12,000 / 20,000 after.
    assert_eq!(
        (by("main").before_cpi, by("main").after_cpi),
        (Some(0.7), Some(0.6))
    );

    let (tb, ta) = (
        totals(&before, &CPI_COLUMNS, DEFAULT_CONFIDENCE),
        totals(&after, &CPI_COLUMNS, DEFAULT_CONFIDENCE),
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
    assert_eq!(v["schema"], "cpiflame-diff/1");
    assert_eq!(
        (v["before"]["cpi"].clone(), v["after"]["cpi"].clone()),
        (0.7.into(), 0.6.into())
    );
    let frames = v["frames"].as_array().unwrap();
    let slow = frames.iter().find(|f| f["name"] == "slow").unwrap();
    assert_eq!(
        (slow["before_cpi"].clone(), slow["after_cpi"].clone()),
        (4.0.into(), 2.0.into())
    );
    let blind = frames.iter().find(|f| f["name"] == "blind").unwrap();
    assert_eq!(blind["after_cpi"], Value::Null);

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
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "# cpiflame diff: before: 14 samples of cycles, CPI 0.70 (instructions)"
    );
    assert_eq!(
        lines[1],
        "#                after:  12 samples of cycles, CPI 0.60 (instructions)"
    );
    assert!(
        lines[4].contains("Stall before -> after  CPI before -> after  Function [module]"),
        "{text}"
    );
    let slow = lines
        .iter()
        .find(|l| l.ends_with(" slow [demo]"))
        .expect("slow row");
    assert!(slow.contains("  4.00 ->   2.00  "), "{slow}");
    let blind = lines
        .iter()
        .find(|l| l.contains(" blind [demo]"))
        .expect("blind row");
    assert!(blind.contains("     - ->      -  "), "{blind}");
}

/// Frequency mode: samples carry different periods. Shares follow the cycles periods (the
/// graph's widths), not the sample counts; samples stay counts.
#[test]
fn shares_are_of_cycles_periods_not_samples() {
    let mut p = Profile::new(columns(&["stalls", "cycles"]));
    let app = p.intern(frame("app", "", FrameKind::Process));
    let hot = p.intern(frame("hot", "demo", FrameKind::User));
    let cold = p.intern(frame("cold", "demo", FrameKind::User));
    // hot: 1 sample of 3,000 cycles; cold: 3 samples of 1,000 cycles together.
    p.add(
        &[app, hot],
        CYCLES,
        Count {
            samples: 1,
            period: 3000,
        },
    );
    p.add(
        &[app, cold],
        CYCLES,
        Count {
            samples: 3,
            period: 1000,
        },
    );
    let frames = top_frames(&p, &Columns::new(CYCLES, None), DEFAULT_CONFIDENCE);
    let get = |n: &str| frames.iter().find(|f| f.name == n).unwrap();
    assert_eq!(get("hot").total_share, 0.75);
    assert_eq!(get("hot").self_share, 0.75);
    assert_eq!(get("hot").total_samples, 1);
    assert_eq!(get("cold").total_share, 0.25);
    assert_eq!(get("cold").total_samples, 3);

    // diff: the same samples with the periods swapped moves 50 points from hot to cold.
    let mut after = Profile::new(columns(&["stalls", "cycles"]));
    let app = after.intern(frame("app", "", FrameKind::Process));
    let hot = after.intern(frame("hot", "demo", FrameKind::User));
    let cold = after.intern(frame("cold", "demo", FrameKind::User));
    after.add(
        &[app, hot],
        CYCLES,
        Count {
            samples: 1,
            period: 1000,
        },
    );
    after.add(
        &[app, cold],
        CYCLES,
        Count {
            samples: 3,
            period: 3000,
        },
    );
    let diffs = diff_frames(
        &p,
        &Columns::new(CYCLES, None),
        &after,
        &Columns::new(CYCLES, None),
    );
    let d = |n: &str| diffs.iter().find(|f| f.name == n).unwrap().delta_points;
    assert!((d("hot") + 50.0).abs() < 1e-9, "{}", d("hot"));
    assert!((d("cold") - 50.0).abs() < 1e-9, "{}", d("cold"));
}

/// Hybrid: stalls recorded on P-cores only. Shares stay of all cycles; the stall share
/// divides by the P-cores' cycles, as the graph's colour does.
#[test]
fn ratios_divide_by_the_ratio_cycles_column_when_given() {
    let mut p = Profile::new(columns(&["cycles", "stalls", "cycles (cpu_core)"]));
    let app = p.intern(frame("app", "", FrameKind::Process));
    let both = p.intern(frame("both", "demo", FrameKind::User));
    let e_only = p.intern(frame("e_only", "demo", FrameKind::User));
    p.add(
        &[app, both],
        0,
        Count {
            samples: 3,
            period: 3000,
        },
    );
    p.add(
        &[app, both],
        1,
        Count {
            samples: 1,
            period: 500,
        },
    );
    p.add(
        &[app, both],
        2,
        Count {
            samples: 1,
            period: 1000,
        },
    );
    p.add(
        &[app, e_only],
        0,
        Count {
            samples: 1,
            period: 1000,
        },
    );
    let columns = Columns {
        ratio_cycles: Some(Column(2)),
        ..Columns::new(0, Some(1))
    };
    let frames = top_frames(&p, &columns, DEFAULT_CONFIDENCE);
    let get = |n: &str| frames.iter().find(|f| f.name == n).unwrap();
    assert_eq!(get("both").stall_share, Some(0.5));
    assert_eq!(get("both").total_share, 0.75);
    assert_eq!(get("e_only").stall_share, None);
    assert_eq!(
        totals(&p, &columns, DEFAULT_CONFIDENCE).stall_share,
        Some(0.5)
    );
}

#[test]
fn diff_runs_tests_every_function_over_all_runs() {
    use cpiflame_profile::diff_runs;
    use cpiflame_profile::interval::{growth_test, Share};
    let folded = |text: &str| read_folded(text.as_bytes(), "run.folded").unwrap();
    let one = Columns::new(0, None);
    // foo: 20 and 30 of 100 before (mean 25%), 40 and 50 of 100 after (mean 45%): +20
    // points; `late` is only in the second after run (10 of 100).
    let b = [
        folded("app;foo 20\napp;bar 80\n"),
        folded("app;foo 30\napp;bar 70\n"),
    ];
    let a = [
        folded("app;foo 40\napp;bar 60\n"),
        folded("app;foo 50\napp;bar 40\napp;late 10\n"),
    ];
    let (br, ar) = ([(&b[0], one), (&b[1], one)], [(&a[0], one), (&a[1], one)]);
    let d = diff_runs(&br, &ar, Some(5.0), 0.9);
    let row = |name: &str| d.iter().find(|x| x.name == name).unwrap();
    let share = |k: u64| Share {
        frame: Count {
            samples: k,
            period: k,
        },
        total: Count {
            samples: 100,
            period: 100,
        },
    };
    let foo = row("foo");
    // The first runs' numbers stay those of diff_frames.
    assert_eq!((foo.before_total_share, foo.after_total_share), (0.2, 0.4));
    assert_eq!((foo.before_mean_share, foo.after_mean_share), (0.25, 0.45));
    let g = growth_test(&[share(20), share(30)], &[share(40), share(50)], 5.0, 0.9).unwrap();
    assert_eq!(foo.change_interval, Some([g.interval.lo, g.interval.hi]));
    assert_eq!(foo.exceeds_threshold, Some(g.exceeds));
    assert!((foo.mean_change_points() - 20.0).abs() < 1e-12);
    let late = row("late");
    assert_eq!((late.before_samples, late.after_samples), (0, 0));
    assert_eq!((late.before_mean_share, late.after_mean_share), (0.0, 0.05));
    let g = growth_test(&[share(0), share(0)], &[share(0), share(10)], 5.0, 0.9).unwrap();
    assert_eq!(late.change_interval, Some([g.interval.lo, g.interval.hi]));
    // Sorted by the size of the mean change: bar (-25), foo (+20), late (+5), app (0).
    let names: Vec<&str> = d.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["bar", "foo", "late", "app"]);
    // Without a threshold nothing is judged; the intervals are there all the same.
    let d = diff_runs(&br, &ar, None, 0.9);
    assert!(d
        .iter()
        .all(|x| x.exceeds_threshold.is_none() && x.change_interval.is_some()));
}

/// With several runs a side, `(new)` and `(gone)` go by all the side's runs, as the shares
/// shown: a function missing from the first after run but in the second is neither.
#[test]
fn several_runs_mark_new_and_gone_by_all_runs() {
    use cpiflame_profile::{diff_runs, ChangeTest};
    let folded = |text: &str| read_folded(text.as_bytes(), "run.folded").unwrap();
    let one = Columns::new(0, None);
    let b = [
        folded("app;foo 20\napp;bar 70\napp;old 10\n"),
        folded("app;foo 30\napp;bar 70\n"),
    ];
    let a = [
        folded("app;bar 100\n"),
        folded("app;foo 10\napp;bar 80\napp;late 10\n"),
    ];
    let (br, ar) = ([(&b[0], one), (&b[1], one)], [(&a[0], one), (&a[1], one)]);
    let d = diff_runs(&br, &ar, None, 0.95);
    let test = ChangeTest {
        runs: (2, 2),
        confidence: 0.95,
        fail_above: None,
    };
    let mut out = Vec::new();
    let options = DiffSummaryOptions {
        limit: 50,
        test,
        topdown: None,
        counts: (false, false),
    };
    write_diff(
        &totals(&b[0], &one, DEFAULT_CONFIDENCE),
        &totals(&a[0], &one, DEFAULT_CONFIDENCE),
        &d,
        &options,
        Format::Text,
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {name}")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    // foo: 25% before, 5% after (only in the second after run): still there.
    assert!(line("foo").ends_with(" foo"), "{text}");
    assert!(line("old").ends_with("old (gone)"), "{text}");
    assert!(line("late").ends_with("late (new)"), "{text}");
}
