//! Top-down fractions carried beyond `report`: `diff` (each frame's before and after, and the
//! totals'), `annotate` (each instruction's, line's and function's), `--time` (the fractions
//! of only the samples in the ranges, in report, diff, annotate and the graph's tooltips), merged reads (several files, a folder) and the note
//! of events there only in part. Synthetic perf.data in perf's layout of
//! `{slots,cycles,topdown-*}:S` on a Sapphire Rapids CPUID (topdown.rs's writer); the oracle
//! is `perf script`'s per-sample deltas summed per leaf by the test (with `--time` too) and
//! pushed through the test's own Golden Cove formula, exactly (dyadic values), and for
//! annotate under `--no-kernel` also `fold`'s per-stack sums.

use crate::support;
use crate::topdown::{
    add, folded, frame, golden_cove, level1, perf_sums_in, report, row, write_topdown, Planted,
    EVENTS, SPR,
};
use crate::topdown_graph::{split, title};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{cpiflame, ok, s, Dir};

/// A pid of this module's own (`salt` < 4), above topdown.rs's range and below pid_max
/// (4_194_304), so its perf maps are its own.
fn pid(salt: u32) -> i32 {
    (4_192_000 + (std::process::id() % 500) * 4 + salt) as i32
}

/// Per leaf, perf's summed deltas in [`EVENTS`]' order.
fn perf_by_leaf(data: &Path, more: &[&str]) -> BTreeMap<String, [u64; 6]> {
    let mut out: BTreeMap<String, [u64; 6]> = BTreeMap::new();
    for ((leaf, event), sum) in perf_sums_in(data, more) {
        let e = EVENTS.iter().position(|n| *n == event).unwrap();
        out.entry(leaf).or_default()[e] += sum;
    }
    out
}

/// Per leaf, the planted deltas summed (the kind of sums perf must agree with).
fn planted_by_leaf(samples: &[Planted]) -> BTreeMap<String, [u64; 6]> {
    let mut out: BTreeMap<String, [u64; 6]> = BTreeMap::new();
    for &(leaf, _, d) in samples {
        let sum = out.entry(leaf.to_string()).or_default();
        *sum = add(*sum, d);
    }
    out
}

/// The sums of every leaf (what `main`, the totals, contain).
fn all(by_leaf: &BTreeMap<String, [u64; 6]>) -> [u64; 6] {
    by_leaf.values().fold([0; 6], |a, &b| add(a, b))
}

const SECOND: u64 = 1_000_000_000;

/// Eight samples a second apart: in the first four seconds `f` retires most of its slots
/// and `g` is back-end bound; in the last four the other way round.
fn halves() -> Vec<Planted> {
    vec![
        ("f", SECOND, [1024, 250, 192, 0, 32, 32]),
        ("g", 2 * SECOND, [1024, 250, 32, 32, 0, 192]),
        ("f", 3 * SECOND, [1024, 250, 160, 32, 32, 32]),
        ("g", 4 * SECOND, [1024, 250, 0, 32, 32, 192]),
        ("f", 5 * SECOND, [1024, 250, 32, 0, 32, 192]),
        ("g", 6 * SECOND, [1024, 250, 192, 32, 0, 32]),
        ("f", 7 * SECOND, [1024, 250, 0, 32, 0, 224]),
        ("g", 8 * SECOND, [1024, 250, 160, 32, 32, 32]),
    ]
}

/// The first half's range and the second's, as `perf script --time` takes them.
const FIRST: &str = "0.5,4.5";
const SECOND_HALF: &str = "4.5,9";

/// perf's sums per leaf in `range`, equal to the planted ones of the samples in it.
fn perf_in(data: &Path, range: &str, planted: &[Planted]) -> BTreeMap<String, [u64; 6]> {
    let perf = perf_by_leaf(data, &["--time", range]);
    assert_eq!(perf, planted_by_leaf(planted), "perf script --time {range}");
    perf
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(&cpiflame(args))).unwrap()
}

/// annotate's JSON of `symbol` (the one function).
fn annotate(args: &[&str], symbol: &str) -> Value {
    let mut all = vec!["annotate", "--json"];
    all.extend(args);
    all.push(symbol);
    let doc = json(&all);
    let functions = doc.as_array().unwrap();
    assert_eq!(functions.len(), 1, "{doc}");
    functions[0].clone()
}

#[test]
fn time_ranges_give_the_fractions_of_their_samples_in_report_diff_and_annotate() {
    let dir = Dir::new("topdown-time");
    let samples = halves();
    let data = write_topdown(&dir.path("halves.data"), pid(0), &samples);
    let first = perf_in(&data, FIRST, &samples[..4]);
    let second = perf_in(&data, SECOND_HALF, &samples[4..]);
    // The halves differ: a range that leaked the other half's samples would show.
    assert_ne!(golden_cove(first["f"]), golden_cove(second["f"]));
    for (range, sums) in [(FIRST, &first), (SECOND_HALF, &second)] {
        let doc = report(&[s(&data), "--time", range]);
        for leaf in ["f", "g"] {
            let want = golden_cove(sums[leaf]);
            assert_eq!(
                level1(&frame(&doc, leaf)["self_topdown"]),
                want,
                "{range} {leaf}"
            );
        }
        assert_eq!(level1(&doc["totals"]["topdown"]), golden_cove(all(sums)));
        // annotate: the function's and its one sampled instruction's.
        let f = annotate(&[s(&data), "--time", range], "f");
        assert_eq!(level1(&f["topdown"]), golden_cove(sums["f"]), "{f}");
        let sampled: Vec<&Value> = f["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["samples"].as_u64() > Some(0))
            .collect();
        assert_eq!(sampled.len(), 1, "{f}");
        assert_eq!(level1(&sampled[0]["topdown"]), golden_cove(sums["f"]));
        // render: each leaf's tooltip gives the range's split.
        let svg = ok(&cpiflame(&["render", s(&data), "--time", range]));
        for leaf in ["f", "g"] {
            let t = title(&svg, leaf);
            assert!(
                t.contains(&split(golden_cove(sums[leaf]))),
                "render --time {range}, {leaf}: {t}"
            );
        }
    }
    // diff --time A:B: the first half before, the second after, of the same file.
    let doc = json(&[
        "diff",
        "--summary",
        "--json",
        "--time",
        &format!("{FIRST}:{SECOND_HALF}"),
        s(&data),
        s(&data),
    ]);
    for leaf in ["f", "g"] {
        let d = frame(&doc, leaf);
        assert_eq!(
            level1(&d["topdown_before"]),
            golden_cove(first[leaf]),
            "{d}"
        );
        assert_eq!(
            level1(&d["topdown_after"]),
            golden_cove(second[leaf]),
            "{d}"
        );
    }
    let main = frame(&doc, "main");
    assert_eq!(level1(&main["topdown_before"]), golden_cove(all(&first)));
    assert_eq!(level1(&main["topdown_after"]), golden_cove(all(&second)));
    assert_eq!(level1(&doc["before"]["topdown"]), golden_cove(all(&first)));
    assert_eq!(level1(&doc["after"]["topdown"]), golden_cove(all(&second)));
}

#[test]
fn diff_table_shows_the_after_dominant_category_before_and_after() {
    let dir = Dir::new("topdown-diff-text");
    let samples = halves();
    let before = write_topdown(&dir.path("before.data"), pid(1), &samples[..4]);
    let after = write_topdown(&dir.path("after.data"), pid(1), &samples[4..]);
    let b = perf_by_leaf(&before, &[]);
    let a = perf_by_leaf(&after, &[]);
    let text = ok(&cpiflame(&["diff", "--summary", s(&before), s(&after)]));
    assert!(text.contains("Top-down before -> after"), "{text}");
    let row = |f: &str| row(&text, f);
    // The category largest after, both sides' share of it in whole percent.
    let cell = |leaf: &str| {
        let (bf, af) = (golden_cove(b[leaf]), golden_cove(a[leaf]));
        let k = (1..4).fold(0, |best, k| if af[k] > af[best] { k } else { best });
        let name = ["RET", "BS", "FE", "BE"][k];
        format!("{name} {:.0}% -> {:.0}%", bf[k] * 100.0, af[k] * 100.0)
    };
    // f: back end 64/512 before, 416/512 after.
    assert!(cell("f").starts_with("BE "), "{}", cell("f"));
    for leaf in ["f", "g"] {
        assert!(
            row(leaf).contains(&cell(leaf)),
            "{leaf}: {}\n{text}",
            cell(leaf)
        );
    }
    // The last line: the whole runs' four categories, before and after.
    let whole = |sums: &BTreeMap<String, [u64; 6]>| {
        let v = golden_cove(all(sums));
        format!(
            "RET {:.0}% BS {:.0}% FE {:.0}% BE {:.0}%",
            v[0] * 100.0,
            v[1] * 100.0,
            v[2] * 100.0,
            v[3] * 100.0
        )
    };
    let last = format!(
        "# top-down of the whole runs: {} -> {}",
        whole(&b),
        whole(&a)
    );
    assert_eq!(
        text.trim_end().lines().last(),
        Some(last.as_str()),
        "{text}"
    );
    // A side without top-down events: a warning naming both files, no column, no keys.
    let plain = folded(
        &dir,
        "plain.folded",
        &["cycles", "instructions"],
        &[("f", vec![40, 20]), ("g", vec![10, 30])],
    );
    let out = cpiflame(&["diff", "--summary", "--json", s(&before), s(&plain)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("top-down not compared")
            && err.contains("before.data")
            && err.contains("plain.folded"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["before"].get("topdown").is_none(), "{doc}");
    for f in doc["frames"].as_array().unwrap() {
        assert!(f.get("topdown_before").is_none() && f.get("topdown_after").is_none());
    }
}

/// Samples of `f` and `g` with kernel samples between them: a leader-sampled group's deltas
/// of the sample after a kernel one must not include the kernel sample's.
fn with_kernel() -> Vec<Planted> {
    vec![
        ("f", 10, [1024, 250, 192, 0, 32, 32]),
        ("kernel", 11, [1024, 250, 0, 0, 32, 224]),
        ("f", 12, [1024, 250, 128, 32, 32, 64]),
        ("g", 13, [1024, 250, 32, 32, 0, 192]),
        ("kernel", 14, [1024, 250, 0, 64, 192, 0]),
        ("g", 15, [1024, 250, 64, 0, 0, 192]),
    ]
}

#[test]
fn annotate_weighs_leader_sampled_deltas_as_report_does_under_no_kernel() {
    let dir = Dir::new("topdown-annotate");
    let samples = with_kernel();
    let data = write_topdown(&dir.path("kernel.data"), pid(2), &samples);
    let perf = perf_by_leaf(&data, &[]);
    assert_eq!(perf, planted_by_leaf(&samples), "perf script's deltas");
    // fold's samples of each leaf's stack (the cycles sampler's), as annotate counts them.
    let fold = ok(&cpiflame(&[
        "fold",
        "--event",
        "cycles",
        "--no-kernel",
        s(&data),
    ]));
    let doc = report(&[s(&data), "--no-kernel"]);
    for leaf in ["f", "g"] {
        let want = golden_cove(perf[leaf]);
        let function = annotate(&[s(&data), "--no-kernel"], leaf);
        // The deltas of the sample after a kernel one are its own: perf's, report's (whose
        // weights are fold's), annotate's.
        assert_eq!(
            level1(&function["topdown"]),
            want,
            "annotate {leaf}: {function}"
        );
        assert_eq!(
            level1(&frame(&doc, leaf)["self_topdown"]),
            want,
            "report {leaf}"
        );
        let stack = fold
            .lines()
            .find(|l| {
                l.rsplit_once(' ')
                    .unwrap()
                    .0
                    .ends_with(&format!(";{leaf}_[j]"))
            })
            .unwrap_or_else(|| panic!("no {leaf} in {fold}"));
        assert_eq!(
            function["samples"]
                .as_u64()
                .map(|n| n.to_string())
                .as_deref(),
            stack.rsplit_once(' ').map(|(_, n)| n),
            "{fold}"
        );
    }
    // The text: the function's split in words and the instruction's column.
    let text = ok(&cpiflame(&["annotate", s(&data), "--no-kernel", "f"]));
    let f = golden_cove(perf["f"]);
    assert!(
        text.contains(&format!("top-down: retiring {:.1}%", f[0] * 100.0)),
        "{text}"
    );
    assert!(text.contains("top-down  address"), "{text}");
    assert!(
        text.contains(&format!("RET {:.0}%", f[0] * 100.0)),
        "{text}"
    );
}

#[test]
fn merged_files_keep_top_down_only_with_the_same_formulas() {
    let dir = Dir::new("topdown-merge");
    // A recording cut in two (as --switch-output cuts one): each piece its own perf.data.
    let pieces = dir.path("pieces");
    std::fs::create_dir(&pieces).unwrap();
    let samples = halves();
    let one = write_topdown(&pieces.join("out.data.1"), pid(3), &samples[..4]);
    let two = write_topdown(&pieces.join("out.data.2"), pid(3), &samples[4..]);
    let mut sums = perf_by_leaf(&one, &[]);
    for (leaf, s2) in perf_by_leaf(&two, &[]) {
        let sum = sums.entry(leaf).or_default();
        *sum = add(*sum, s2);
    }
    let doc = report(&[s(&pieces)]);
    for leaf in ["f", "g"] {
        assert_eq!(
            level1(&frame(&doc, leaf)["topdown"]),
            golden_cove(sums[leaf]),
            "{leaf}"
        );
    }
    assert_eq!(level1(&doc["totals"]["topdown"]), golden_cove(all(&sums)));

    // Files of two formula sets (Golden Cove with INT_MISC.UOP_DROPPING, without): no
    // fractions, one warning naming both files and their sets.
    let by_leaf = planted_by_leaf(&samples);
    let rows = |extra: bool| -> Vec<(&str, Vec<u64>)> {
        by_leaf
            .iter()
            .map(|(leaf, s)| {
                let mut counts = s.to_vec();
                if extra {
                    counts.push(8);
                }
                (leaf.as_str(), counts)
            })
            .collect()
    };
    let mut with_drops = EVENTS.to_vec();
    with_drops.push("int_misc.uop_dropping");
    let mixed = dir.path("mixed");
    std::fs::create_dir(&mixed).unwrap();
    let a = folded(&dir, "mixed/a.folded", &EVENTS, &rows(false));
    let b = folded(&dir, "mixed/b.folded", &with_drops, &rows(true));
    let out = cpiflame(&["report", "--json", "--topdown-cpu", SPR, s(&a), s(&b)]);
    let err = String::from_utf8_lossy(&out.stderr);
    // With --topdown-cpu the user asked for the fractions: one error line.
    assert!(!out.status.success() && out.stdout.is_empty(), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("a.folded") && err.contains("b.folded"),
        "{err}"
    );
    assert!(err.contains("Golden Cove"), "{err}");
    // Without it: a warning, and report says why there are none.
    let out = cpiflame(&["report", "--json", s(&mixed)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("top-down")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("a.folded") && warnings[0].contains("b.folded"),
        "{err}"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["totals"].get("topdown").is_none(), "{doc}");
    let why = doc["totals"]["topdown_why"].as_str().unwrap_or_default();
    assert!(
        why.contains("a.folded") && why.contains("b.folded"),
        "{doc}"
    );
}

#[test]
fn report_says_why_events_there_in_part_give_no_fractions() {
    let dir = Dir::new("topdown-part");
    // topdown-be-bound left out: Golden Cove's set is there only in part.
    let path: PathBuf = folded(
        &dir,
        "part.folded",
        &EVENTS[..5],
        &[
            ("f", vec![1024, 250, 512, 64, 128]),
            ("g", vec![1024, 250, 64, 64, 512]),
        ],
    );
    // (No --topdown-cpu: with it, an incomplete set is an error line.)
    let doc = report(&[s(&path)]);
    assert!(doc["totals"].get("topdown").is_none(), "{doc}");
    let why = doc["totals"]["topdown_why"].as_str().unwrap_or_default();
    assert!(why.contains("topdown-be-bound"), "{doc}");
    let text = ok(&cpiflame(&["report", s(&path)]));
    let last = text.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("# no top-down breakdown:") && last.contains("topdown-be-bound"),
        "{text}"
    );
    // A complete set says nothing of the kind.
    let full = folded(
        &dir,
        "full.folded",
        &EVENTS,
        &[("f", vec![1024, 250, 512, 64, 128, 64])],
    );
    let doc = report(&[s(&full), "--topdown-cpu", SPR]);
    assert!(doc["totals"].get("topdown_why").is_none(), "{doc}");
    assert!(!ok(&cpiflame(&["report", s(&full)])).contains("no top-down"));
}
