//! Top-down (TMA) fractions in `report --json`: a synthetic perf.data file in perf's layout of
//! `perf record -e '{slots,cycles,topdown-retiring,topdown-bad-spec,topdown-fe-bound,
//! topdown-be-bound}:S'` on a Sapphire Rapids CPUID, whose planted per-sample deltas give
//! each function's fractions by exact arithmetic (dyadic values: no rounding). `perf script`
//! reads the same file and delivers the same per-function deltas (the oracle that the layout
//! is perf's). Folded text of the same sums, named as perf names the events, gives the same
//! fractions; AMD Zen 4 names need the CPU (`--topdown-cpu`), refused in one line without it;
//! a profile without top-down events has no `topdown` key. The writer and the formulas are
//! shared with `topdown_graph.rs`, the picture's test.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cpiflame_perf_data::abi::{attr_type, misc, read_format, sample};
use cpiflame_perf_data::synth::{anon_code, user_chain, write_perf_map, Recording};
use cpiflame_perf_data::write::{
    attr_flags, EventAttr, Features, GroupDesc, ReadValue, ReadValues, SampleFields,
};
use serde_json::Value;
use support::{cpiflame, ok, perf_stdout, s, Dir};

pub(crate) const CODE: u64 = 0x7f10_0000_0000;
/// perf's names, in the group's order: the `slots` leader, the `cycles` sampler, the metrics.
pub(crate) const EVENTS: [&str; 6] = [
    "slots",
    "cycles",
    "topdown-retiring",
    "topdown-bad-spec",
    "topdown-fe-bound",
    "topdown-be-bound",
];
/// Sapphire Rapids (family 6, model 0x8f): Golden Cove's formulas.
pub(crate) const SPR: &str = "GenuineIntel,6,143,8";

/// Planted per-sample deltas (slots, cycles, retiring, bad-spec, fe-bound, be-bound) of each
/// leaf (called from `main`).
pub(crate) fn planted() -> Vec<(&'static str, [u64; 6])> {
    vec![
        ("f", [1000, 250, 128, 32, 64, 32]),
        ("g", [1000, 250, 16, 16, 32, 192]),
        ("f", [1000, 250, 128, 32, 0, 96]),
        ("g", [1000, 250, 48, 16, 32, 160]),
    ]
}

/// The per-leaf sums of `planted`.
pub(crate) fn sums_by_leaf() -> BTreeMap<&'static str, [u64; 6]> {
    let mut out: BTreeMap<&str, [u64; 6]> = BTreeMap::new();
    for (leaf, d) in planted() {
        let sum = out.entry(leaf).or_default();
        for (s, x) in sum.iter_mut().zip(d) {
            *s += x;
        }
    }
    out
}

/// A pid above the range of `support::synthetic_pid` (which ends below 4_152_000), below
/// pid_max (4_194_304), so this module's perf map is its own.
fn pid() -> i32 {
    (4_152_000 + std::process::id() % 40_000) as i32
}

/// Golden Cove level 1 (spr-metrics.json without INT_MISC.UOP_DROPPING): each metric over
/// their sum, bad speculation the rest, clamped at 0. [retiring, bad spec, fe, be].
pub(crate) fn golden_cove(d: [u64; 6]) -> [f64; 4] {
    let sum = (d[2] + d[3] + d[4] + d[5]) as f64;
    let (ret, fe, be) = (d[2] as f64 / sum, d[4] as f64 / sum, d[5] as f64 / sum);
    [ret, (1.0 - (fe + be + ret)).max(0.0), fe, be]
}

pub(crate) fn add(a: [u64; 6], b: [u64; 6]) -> [u64; 6] {
    std::array::from_fn(|i| a[i] + b[i])
}

/// Writes the recording: perf's attrs for the group (slots leader counting, cycles sampling
/// with the group's values, metric events counting), GROUP_DESC and the CPUID.
pub(crate) fn write_recording(dir: &Dir) -> PathBuf {
    let samples: Vec<Planted> = planted()
        .into_iter()
        .enumerate()
        .map(|(i, (leaf, delta))| (leaf, 10 + i as u64, delta))
        .collect();
    write_topdown(&dir.path("topdown.data"), pid(), &samples)
}

/// A planted sample: its leaf (`f` or `g` called from `main`, or `kernel`: a kernel
/// function called from `main`), its time (ns) and its group's deltas in [`EVENTS`]' order.
pub(crate) type Planted = (&'static str, u64, [u64; 6]);

/// The address of a kernel leaf's instruction (no kallsyms: a kernel frame all the same).
pub(crate) const KERNEL_IP: u64 = 0xffff_ffff_8100_0040;

/// Writes `path`, a recording of `{slots,cycles,topdown-*}:S` as perf lays it out (see
/// [`write_recording`]) with the `samples` of process `pid` (its perf map names `main`,
/// `f` and `g`).
pub(crate) fn write_topdown(path: &Path, pid: i32, samples: &[Planted]) -> PathBuf {
    let sample_type = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::READ
        | sample::CALLCHAIN
        | sample::CPU
        | sample::PERIOD;
    let attrs: Vec<EventAttr> = EVENTS
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (type_, config) = match i {
                0 => (attr_type::RAW, 0x400),
                1 => (attr_type::HARDWARE, 0),
                _ => (attr_type::RAW, 0x8000 + 0x100 * (i as u64 - 2)),
            };
            EventAttr {
                type_,
                config,
                sample_period_or_freq: if i == 1 { 250 } else { 0 },
                sample_type,
                read_format: read_format::ID | read_format::GROUP | read_format::LOST,
                flags: attr_flags::SAMPLE_ID_ALL
                    | if i == 0 {
                        attr_flags::DISABLED | attr_flags::COMM
                    } else {
                        0
                    },
                name: Some(name.to_string()),
                ids: vec![100 + i as u64],
                ..EventAttr::default()
            }
        })
        .collect();
    let mut rec = Recording::create(path, attrs);
    rec.comm(pid, pid, "app", 1);
    rec.mmap(&anon_code(pid, CODE, 0x1000), 2);
    let addr = |f: &str| {
        CODE + if f == "main" {
            0
        } else if f == "f" {
            0x100
        } else {
            0x200
        }
    };
    let mut value = [0u64; 6];
    for &(leaf, time, delta) in samples {
        value = add(value, delta);
        let (callchain, misc) = match leaf {
            "kernel" => {
                let mut chain = vec![cpiflame_perf_data::abi::callchain::KERNEL, KERNEL_IP];
                chain.extend(user_chain(&[addr("main")], 0x10, 0x20));
                (chain, misc::KERNEL)
            }
            _ => (
                user_chain(&[addr("main"), addr(leaf)], 0x10, 0x20),
                misc::USER,
            ),
        };
        rec.sample(
            1,
            &SampleFields {
                id: 101,
                ip: callchain[1],
                pid,
                tid: pid,
                time,
                period: 250,
                read: Some(ReadValues {
                    time_enabled: 0,
                    time_running: 0,
                    values: (0..6)
                        .map(|e| ReadValue {
                            value: value[e],
                            id: 100 + e as u64,
                            lost: 0,
                        })
                        .collect(),
                }),
                callchain,
                misc,
                ..SampleFields::default()
            },
        );
    }
    let mut features = Features::from_host(vec!["perf".into(), "record".into()]);
    features.arch = Some("x86_64".into());
    features.cpuid = Some(SPR.into());
    features.groups = vec![GroupDesc {
        name: None,
        leader: 0,
        members: 6,
    }];
    rec.finish(&features);
    write_perf_map(
        pid,
        &[
            (addr("main"), 0x100, "main"),
            (addr("f"), 0x100, "f"),
            (addr("g"), 0x100, "g"),
        ],
    );
    path.to_path_buf()
}

pub(crate) fn report(args: &[&str]) -> Value {
    let mut all = vec!["report", "--json"];
    all.extend(args);
    serde_json::from_str(&ok(&cpiflame(&all))).unwrap()
}

pub(crate) fn frame<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no frame {name} in {doc}"))
}

/// [retiring, bad_speculation, frontend_bound, backend_bound] of a `topdown` object.
pub(crate) fn level1(v: &Value) -> [f64; 4] {
    [
        "retiring",
        "bad_speculation",
        "frontend_bound",
        "backend_bound",
    ]
    .map(|k| {
        v[k].as_f64()
            .unwrap_or_else(|| panic!("{k} missing in {v}"))
    })
}

/// The fractions of `f`, `g` (self and inclusive), `main` and the totals equal the
/// formulas on the planted sums.
fn check_fractions(doc: &Value) {
    let sums = sums_by_leaf();
    for leaf in ["f", "g"] {
        let want = golden_cove(sums[leaf]);
        assert_eq!(level1(&frame(doc, leaf)["self_topdown"]), want, "{leaf}");
        assert_eq!(level1(&frame(doc, leaf)["topdown"]), want, "{leaf}");
    }
    let all = golden_cove(add(sums["f"], sums["g"]));
    assert_eq!(level1(&frame(doc, "main")["topdown"]), all);
    assert!(frame(doc, "main")["self_topdown"].is_null());
    assert_eq!(level1(&doc["totals"]["topdown"]), all);
    assert!(doc["totals"]["topdown"]["level2"].is_null());
}

/// perf's reading of the file: per (leaf, event), the summed deltas `perf script` delivers.
/// The leaf is told by its address (perf 6.1 names only the first function of the perf map
/// here, so names are not compared).
pub(crate) fn perf_sums(data: &Path) -> BTreeMap<(String, String), u64> {
    perf_sums_in(data, &[])
}

/// [`perf_sums`] with more `perf script` arguments (`--time RANGE`): per (leaf, event); a
/// kernel leaf ([`KERNEL_IP`]) is `kernel`.
pub(crate) fn perf_sums_in(data: &Path, more: &[&str]) -> BTreeMap<(String, String), u64> {
    let mut args = vec!["script", "-F", "ip,event,period", "-G", "-i", s(data)];
    args.extend(more);
    let out = perf_stdout(&args);
    let mut sums = BTreeMap::new();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let [period, event, ip] = w[..] else {
            panic!("unexpected perf script line {line:?}");
        };
        let leaf = match u64::from_str_radix(ip, 16).unwrap().wrapping_sub(CODE) {
            0x110 => "f",
            0x210 => "g",
            _ if u64::from_str_radix(ip, 16).unwrap() == KERNEL_IP => "kernel",
            other => panic!("leaf at {other:#x}"),
        };
        *sums
            .entry((leaf.to_string(), event.trim_end_matches(':').to_string()))
            .or_default() += period.parse::<u64>().unwrap();
    }
    sums
}

#[test]
fn synthetic_topdown_group_gives_the_planted_fractions_per_frame() {
    let dir = Dir::new("topdown");
    let data = write_recording(&dir);
    // perf reads the layout: every event of the group, each leaf's deltas as planted.
    let perf = perf_sums(&data);
    for (leaf, sums) in sums_by_leaf() {
        for (e, name) in EVENTS.iter().enumerate() {
            assert_eq!(
                perf.get(&(leaf.to_string(), name.to_string())),
                Some(&sums[e]),
                "perf script's {name} of {leaf}: {perf:?}"
            );
        }
    }
    check_fractions(&report(&[s(&data)]));
    // perf script's text of the file (each member a line with its delta), read back with
    // the CPU given: the same totals.
    let text = dir.path("topdown.script");
    std::fs::write(&text, perf_stdout(&["script", "-i", s(&data)])).unwrap();
    let doc = report(&[s(&text), "--topdown-cpu", SPR]);
    let sums = sums_by_leaf();
    assert_eq!(
        level1(&doc["totals"]["topdown"]),
        golden_cove(add(sums["f"], sums["g"]))
    );
    // The text report's column: the largest category of each function.
    let text = ok(&cpiflame(&["report", s(&data)]));
    assert!(text.contains("Top-down"), "{text}");
    let row = |f: &str| row(&text, f);
    // f: retiring 256/512; g: back end 352/512 = 68.75%.
    assert!(row("f").contains("RET 50%"), "{text}");
    assert!(row("g").contains("BE 69%"), "{text}");
}

/// The row of function `f` in a text table (`report`'s, `diff --summary`'s).
pub(crate) fn row(text: &str, f: &str) -> String {
    text.lines()
        .find(|l| l.contains(&format!(" {f} [")))
        .unwrap_or_else(|| panic!("no row {f} in {text}"))
        .to_string()
}

/// The wide folded form of the per-leaf sums, columns named as perf names the events.
pub(crate) fn folded(
    dir: &Dir,
    name: &str,
    columns: &[&str],
    rows: &[(&str, Vec<u64>)],
) -> PathBuf {
    let mut text = format!("# columns: {}\n", columns.join(" "));
    for (leaf, counts) in rows {
        let counts: Vec<String> = counts.iter().map(u64::to_string).collect();
        text.push_str(&format!("app;main;{leaf} {}\n", counts.join(" ")));
    }
    let path = dir.path(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn folded_topdown_columns_give_the_same_fractions() {
    let dir = Dir::new("topdown-folded");
    let rows: Vec<(&str, Vec<u64>)> = sums_by_leaf()
        .into_iter()
        .map(|(leaf, s)| (leaf, s.to_vec()))
        .collect();
    let path = folded(&dir, "intel.folded", &EVENTS, &rows);
    check_fractions(&report(&[s(&path), "--topdown-cpu", SPR]));
    // Without a CPU the names alone say Intel PERF_METRICS: each metric over their sum.
    let doc = report(&[s(&path)]);
    let f = sums_by_leaf()["f"];
    let sum = (f[2] + f[3] + f[4] + f[5]) as f64;
    assert_eq!(
        level1(&frame(&doc, "f")["topdown"]),
        [f[2], f[3], f[4], f[5]].map(|x| x as f64 / sum)
    );
    // ... and says so, as the graph's subtitle does (issue 38: `report` used them silently),
    // and folded weights are counts, not samples.
    let formulas = &doc["totals"]["topdown_formulas"];
    assert_eq!(formulas["name"], "Intel PERF_METRICS, core unknown");
    assert!(formulas["approximation"]
        .as_str()
        .unwrap()
        .contains("plain ratios"));
    let text = ok(&cpiflame(&["report", s(&path)]));
    let header: Vec<&str> = text.lines().take(4).collect();
    assert!(header[0].contains(" counts of cycles"), "{text}");
    assert_eq!(
        header[1],
        "# top-down: Intel PERF_METRICS, core unknown · core unknown: plain ratios of the metrics' sum"
    );
    assert!(header[3].contains(" Counts  Function"), "{text}");
    // With the CPU, that CPU's set (what it leaves out named: these columns have no
    // int_misc.uop_dropping).
    let doc = report(&[s(&path), "--topdown-cpu", SPR]);
    let formulas = &doc["totals"]["topdown_formulas"];
    assert_eq!(
        formulas["name"],
        "Intel Golden Cove PERF_METRICS (spr/adl metrics)"
    );
    assert!(formulas["approximation"]
        .as_str()
        .unwrap()
        .contains("int_misc.uop_dropping"));
}

pub(crate) const ZEN: [&str; 5] = [
    "cycles",
    "de_no_dispatch_per_slot.no_ops_from_frontend",
    "de_no_dispatch_per_slot.backend_stalls",
    "de_src_op_disp.all",
    "ex_ret_ops",
];

/// Per leaf: cycles, no ops from the front end, back-end stalls, dispatched, retired.
pub(crate) fn zen_rows() -> Vec<(&'static str, Vec<u64>)> {
    vec![
        ("f", vec![1000, 600, 3000, 2600, 2400]),
        ("g", vec![500, 1500, 300, 1300, 1200]),
    ]
}

/// amdzen4 metrics: slots = 6 × cycles; front end, back end and retiring each over slots,
/// bad speculation (dispatched − retired) over slots.
pub(crate) fn zen4(r: &[u64]) -> [f64; 4] {
    let slots = 6.0 * r[0] as f64;
    [
        r[4] as f64 / slots,
        (r[3] as f64 - r[4] as f64) / slots,
        r[1] as f64 / slots,
        r[2] as f64 / slots,
    ]
}

pub(crate) fn close(a: [f64; 4], b: [f64; 4]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-12)
}

#[test]
fn amd_zen4_names_need_the_cpu_and_give_its_fractions() {
    let dir = Dir::new("topdown-zen");
    let path = folded(&dir, "zen4.folded", &ZEN, &zen_rows());
    // Family 0x19 model 0x11: Zen 4, 6 slots per cycle.
    let doc = report(&[s(&path), "--topdown-cpu", "AuthenticAMD,25,17,1"]);
    for (leaf, r) in zen_rows() {
        let got = level1(&frame(&doc, leaf)["topdown"]);
        assert!(close(got, zen4(&r)), "{leaf}: {got:?} vs {:?}", zen4(&r));
    }
    let all: Vec<u64> = (0..5)
        .map(|i| zen_rows().iter().map(|r| r.1[i]).sum())
        .collect();
    assert!(close(level1(&doc["totals"]["topdown"]), zen4(&all)));
    // Without the CPU: one line naming the flag, no output.
    let out = cpiflame(&["report", "--json", s(&path)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--topdown-cpu") && err.contains("zen4.folded"),
        "{err}"
    );
    // A CPUID that names no CPU is refused the same way.
    let out = cpiflame(&["report", s(&path), "--topdown-cpu", "Zen4"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--topdown-cpu Zen4"), "{err}");
}

#[test]
fn profile_without_topdown_events_has_no_topdown_key() {
    let dir = Dir::new("topdown-none");
    let path = folded(
        &dir,
        "plain.folded",
        &["stalls", "cycles", "instructions"],
        &[("f", vec![10, 40, 20]), ("g", vec![5, 10, 30])],
    );
    let doc = report(&[s(&path)]);
    assert!(doc["totals"].get("topdown").is_none(), "{doc}");
    for f in doc["frames"].as_array().unwrap() {
        assert!(f.get("topdown").is_none() && f.get("self_topdown").is_none());
    }
    // The wide form read the three named columns as given.
    assert_eq!(doc["totals"]["cycles_period"], 50);
    assert_eq!(doc["totals"]["stall_period"], 15);
    assert_eq!(doc["totals"]["instructions_period"], 50);
    let text = ok(&cpiflame(&["report", s(&path)]));
    assert!(!text.contains("Top-down"), "{text}");
}

/// `perf report --group` reads the synthetic file as the group it is (the oracle that the
/// layout is perf's for its report too): one row per leaf with one column per member, each
/// the leaf's share of that member's summed deltas, which the planted sums give (cpiflame's
/// reading of the same file: the tests above).
#[test]
fn perf_report_group_reads_the_file_as_one_group() {
    let dir = Dir::new("topdown-report-group");
    let data = write_recording(&dir);
    let out = perf_stdout(&[
        "report",
        "--group",
        "--stdio",
        "--no-children",
        "--sort",
        "sym",
        "-g",
        "none",
        "-i",
        s(&data),
    ]);
    assert!(
        out.contains(&format!("anon group {{ {} }}", EVENTS.join(", "))),
        "perf report saw no group of the six events:\n{out}"
    );
    let sums = sums_by_leaf();
    let all = add(sums["f"], sums["g"]);
    for (leaf, offset) in [("f", 0x110u64), ("g", 0x210)] {
        let address = format!("{:#018x}", CODE + offset);
        let line = out
            .lines()
            .find(|l| l.trim_end().ends_with(&format!("[.] {address}")))
            .unwrap_or_else(|| panic!("no row of {leaf} ({address}) in\n{out}"));
        let shown: Vec<f64> = line
            .split_whitespace()
            .filter_map(|w| w.strip_suffix('%'))
            .map(|w| w.parse().unwrap())
            .collect();
        let want: Vec<f64> = (0..6)
            .map(|k| 100.0 * sums[leaf][k] as f64 / all[k] as f64)
            .collect();
        assert_eq!(shown.len(), 6, "{line}");
        for (k, (got, want)) in shown.iter().zip(&want).enumerate() {
            assert!(
                (got - want).abs() < 0.006,
                "{leaf} {}: perf report {got}%, planted {want}%",
                EVENTS[k]
            );
        }
    }
}
