//! `diff --fail-above` as a gate that knows noise, end to end: folded runs drawn with a seeded
//! generator from profiles whose true shares are known by construction. The library's gate
//! (`cpiflame_profile::diff_runs`, what `cpiflame diff` calls) over hundreds of trials: its
//! false-alarm rate on pairs from one distribution, its detection of a 10-point growth, and
//! between-run variance with several runs per side; the binary on a few of the same inputs:
//! exit statuses, gate lines, JSON, and bad flags.

use std::path::PathBuf;

use cpiflame_profile::interval::{growth_test, Share};
use cpiflame_profile::{diff_runs, read_folded, Columns, Count, FrameDiff, Profile};
use serde_json::Value;

use crate::support::{cpiflame, s, Dir};

/// splitmix64: a seeded generator, so every trial is the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// 16 leaves under 4 callers (`app;main;mid_K;leaf_I`): 22 functions with shares from 30%
/// down to 0.5%; weights need not sum to 1.
const LEAVES: [f64; 16] = [
    30.0, 20.0, 12.0, 8.0, 6.0, 5.0, 4.0, 3.0, 3.0, 2.0, 2.0, 1.5, 1.5, 1.0, 1.0, 0.5,
];

fn stack(leaf: usize) -> String {
    format!("app;main;mid_{};leaf_{leaf}", leaf % 4)
}

/// One run: `samples` samples drawn multinomially over the leaves by `weights`, as folded
/// text (a sample of period 1 each).
fn draw(rng: &mut Rng, weights: &[f64], samples: u64) -> String {
    let total: f64 = weights.iter().sum();
    let mut counts = vec![0u64; weights.len()];
    for _ in 0..samples {
        let mut x = rng.uniform() * total;
        let mut leaf = weights.len() - 1;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                leaf = i;
                break;
            }
            x -= w;
        }
        counts[leaf] += 1;
    }
    counts
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(leaf, n)| format!("{} {n}\n", stack(leaf)))
        .collect()
}

/// `weights` with each share multiplied by exp(σ·N(0, 1)): a run of a program whose shares
/// vary from run to run by more than sampling makes them.
fn jittered(rng: &mut Rng, weights: &[f64], sigma: f64) -> Vec<f64> {
    weights
        .iter()
        .map(|w| w * (sigma * rng.normal()).exp())
        .collect()
}

fn profile(text: &str) -> Profile {
    read_folded(text.as_bytes(), "run.folded").unwrap()
}

/// The gate over runs of folded text, as `cpiflame diff` runs it (column 0 is the width).
fn gate(before: &[String], after: &[String], fail_above: f64) -> Vec<FrameDiff> {
    let (b, a): (Vec<Profile>, Vec<Profile>) = (
        before.iter().map(|t| profile(t)).collect(),
        after.iter().map(|t| profile(t)).collect(),
    );
    diff_runs(&runs(&b), &runs(&a), Some(fail_above), 0.95)
}

fn runs(ps: &[Profile]) -> Vec<(&Profile, Columns)> {
    ps.iter().map(|p| (p, Columns::new(0, None))).collect()
}

fn tripped(diffs: &[FrameDiff]) -> bool {
    diffs.iter().any(|d| d.exceeds_threshold == Some(true))
}

/// What the gate did before it knew noise: any share grown by more than the threshold.
fn old_rule(diffs: &[FrameDiff], fail_above: f64) -> bool {
    diffs.iter().any(|d| d.change_points() > fail_above)
}

/// Runs from one distribution: `runs` per side, `samples` each, jitter σ.
fn same_distribution(
    rng: &mut Rng,
    runs: usize,
    samples: u64,
    sigma: f64,
) -> (Vec<String>, Vec<String>) {
    let mut side = || -> Vec<String> {
        (0..runs)
            .map(|_| {
                let w = jittered(rng, &LEAVES, sigma);
                draw(rng, &w, samples)
            })
            .collect()
    };
    (side(), side())
}

/// Asserts that `rate` (a fraction of `trials`) is `published`, docs/verification.md's figure
/// for it (a fraction, given to `digits` decimals of a percent), within three standard errors
/// of a binomial rate over the trials (of at least a 0.5% rate) plus that rounding. The runs
/// are seeded (splitmix64, here), so the rate equals the published one; the margin lets the
/// gate's arithmetic change by rounding without holding the test to a figure nobody claims,
/// while a gate that trips more or less often than published fails.
fn assert_published(what: &str, rate: f64, published: f64, trials: usize, digits: i32) {
    let p = published.clamp(0.005, 0.995);
    let margin = 3.0 * (p * (1.0 - p) / trials as f64).sqrt() + 0.5 * 10f64.powi(-digits) / 100.0;
    assert!(
        (rate - published).abs() <= margin,
        "{what}: {rate:.4}, docs/verification.md {published} (margin {margin:.4})"
    );
}

#[test]
fn one_run_per_side_raises_the_published_false_alarms_where_the_old_gate_tripped_often() {
    let mut rng = Rng(25);
    let trials = 400;
    let (mut new, mut old) = (0, 0);
    for _ in 0..trials {
        let (b, a) = same_distribution(&mut rng, 1, 1500, 0.0);
        let d = gate(&b, &a, 2.0);
        new += usize::from(tripped(&d));
        old += usize::from(old_rule(&d, 2.0));
    }
    let (new, old) = (new as f64 / trials as f64, old as f64 / trials as f64);
    println!("one run per side, 1500 samples: false alarms {new:.4}, old gate {old:.4}");
    assert!(new <= 0.05, "false alarms {new}");
    // Published: 0%, where the old rule tripped in 45%.
    assert_published("false alarms", new, 0.0, trials, 0);
    // The threshold alone is crossed by noise in nearly half the gate runs (45% with this
    // seed): the change of the 30% leaf (and of its 36% caller) has a standard deviation
    // of 1.7 points.
    assert_published("old gate", old, 0.45, trials, 0);
}

#[test]
fn one_run_per_side_detects_a_ten_point_growth_on_two_thousand_samples() {
    let mut rng = Rng(2500);
    let trials = 200;
    let mut grown = LEAVES;
    // leaf_1: 20 of 100 → 30 of 110 would also shrink the rest; give it 10 points of the
    // whole instead: weights 20/100 → 30/100 with leaf_0 giving up 10.
    grown[1] = 30.0;
    grown[0] = 20.0;
    let mut detected = 0;
    for _ in 0..trials {
        let b = [draw(&mut rng, &LEAVES, 2000)];
        let a = [draw(&mut rng, &grown, 2000)];
        let d = gate(&b, &a, 2.0);
        let leaf = d.iter().find(|d| d.name == "leaf_1").unwrap();
        detected += usize::from(leaf.exceeds_threshold == Some(true));
    }
    let rate = detected as f64 / trials as f64;
    println!("10-point growth, 2000 samples: detected {rate:.4}");
    assert!(rate >= 0.95, "detected {rate}");
    assert_published("detected", rate, 1.0, trials, 0);
}

#[test]
fn several_runs_per_side_measure_run_to_run_variation() {
    // Shares that vary by 15% from run to run: the first pair alone (sampling variance
    // only) raises false alarms far above 5%; three runs per side, tested with the variance
    // between them, do not.
    let mut rng = Rng(33);
    let trials = 200;
    let (mut three, mut first_pair) = (0, 0);
    for _ in 0..trials {
        let (b, a) = same_distribution(&mut rng, 3, 2000, 0.15);
        three += usize::from(tripped(&gate(&b, &a, 2.0)));
        first_pair += usize::from(tripped(&gate(&b[..1], &a[..1], 2.0)));
    }
    let (three, first_pair) = (
        three as f64 / trials as f64,
        first_pair as f64 / trials as f64,
    );
    println!("15% jitter, 2000 samples: 3 runs {three:.4}, first runs alone {first_pair:.4}");
    assert!(three <= 0.05, "3 runs per side: {three}");
    // Published: 1% and 48.5%.
    assert_published("3 runs per side", three, 0.01, trials, 0);
    assert_published("one run per side", first_pair, 0.485, trials, 1);

    // And a real growth is still found through that variation: leaf_1 20% → 30%.
    let mut grown = LEAVES;
    grown[1] = 30.0;
    grown[0] = 20.0;
    let mut detected = 0;
    for _ in 0..trials {
        let runs = |rng: &mut Rng, w: &[f64]| -> Vec<String> {
            (0..3)
                .map(|_| {
                    let w = jittered(rng, w, 0.05);
                    draw(rng, &w, 2000)
                })
                .collect()
        };
        let (b, a) = (runs(&mut rng, &LEAVES), runs(&mut rng, &grown));
        let d = gate(&b, &a, 2.0);
        let leaf = d.iter().find(|d| d.name == "leaf_1").unwrap();
        detected += usize::from(leaf.exceeds_threshold == Some(true));
    }
    let rate = detected as f64 / trials as f64;
    println!("3 runs per side, 5% jitter: 10-point growth detected {rate:.4}");
    assert!(rate >= 0.95, "detected {rate}");
    assert_published("detected through 5% jitter", rate, 0.995, trials, 1);
}

/// Writes folded runs into `dir` as `NAME0.folded`, `NAME1.folded`, …
fn write(dir: &Dir, name: &str, runs: &[String]) -> Vec<PathBuf> {
    runs.iter()
        .enumerate()
        .map(|(i, text)| {
            let path = dir.path(&format!("{name}{i}.folded"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect()
}

/// `cpiflame diff --summary BEFORE AFTER [--before …] [--after …] EXTRA…`: status, stdout,
/// stderr.
fn diff(before: &[PathBuf], after: &[PathBuf], extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["diff", "--summary", s(&before[0]), s(&after[0])];
    for p in &before[1..] {
        args.extend(["--before", s(p)]);
    }
    for p in &after[1..] {
        args.extend(["--after", s(p)]);
    }
    args.extend(extra);
    let out = cpiflame(&args);
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn frame<'v>(json: &'v Value, name: &str) -> &'v Value {
    json["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap()
}

#[test]
fn the_binary_passes_noise_the_old_gate_failed_and_fails_a_real_growth() {
    let dir = Dir::new("gate-binary");
    // The first seeded pair from one distribution on which the old gate (a share grown by
    // more than 2 points) would have failed the build.
    let mut rng = Rng(7);
    let (b, a) = loop {
        let (b, a) = same_distribution(&mut rng, 1, 1500, 0.0);
        if old_rule(&gate(&b, &a, 2.0), 2.0) {
            break (b, a);
        }
    };
    let (before, after) = (write(&dir, "noise-b", &b), write(&dir, "noise-a", &a));
    let (code, out, err) = diff(&before, &after, &["--fail-above", "2"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert!(out.contains("# [lo, hi]: the change's 95% confidence interval (sampling variance)\n"));
    let (code, json, _) = diff(&before, &after, &["--fail-above", "2", "--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["runs"], serde_json::json!({"before": 1, "after": 1}));
    assert_eq!(v["confidence"], 0.95);
    let noisy = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["delta_points"].as_f64().unwrap() > 2.0)
        .expect("a share grown by more than 2 points");
    assert_eq!(noisy["exceeds_threshold"], false, "{noisy}");
    let [lo, hi] = [0, 1].map(|i| noisy["change_interval"][i].as_f64().unwrap());
    assert!(lo <= 2.0 && hi > 2.0, "{noisy}");

    // leaf_1 from 20% to 30%, 2,000 samples per run: exit 3, its line with the interval.
    let mut grown = LEAVES;
    grown[1] = 30.0;
    grown[0] = 20.0;
    let (b, a) = (
        [draw(&mut rng, &LEAVES, 2000)],
        [draw(&mut rng, &grown, 2000)],
    );
    let (before, after) = (write(&dir, "grow-b", &b), write(&dir, "grow-a", &a));
    let (code, out, err) = diff(&before, &after, &["--fail-above", "2"]);
    assert_eq!(code, Some(3), "{out}{err}");
    // The oracle: the two runs' counts of leaf_1, tested by hand.
    let share = |text: &str| {
        let k: u64 = text
            .lines()
            .filter(|l| l.starts_with(&format!("{} ", stack(1))))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        let n = 2000;
        Share {
            frame: Count {
                samples: k,
                period: k,
            },
            total: Count {
                samples: n,
                period: n,
            },
        }
    };
    let g = growth_test(&[share(&b[0])], &[share(&a[0])], 2.0, 0.95).unwrap();
    assert!(g.exceeds);
    let expected = format!(
        "cpiflame: leaf_1 grew by {:.2} points ({:.2}% → {:.2}%, 95% interval [{:+.2}, {:+.2}]), \
         above --fail-above 2\n",
        g.growth,
        share(&b[0]).fraction().unwrap() * 100.0,
        share(&a[0]).fraction().unwrap() * 100.0,
        g.interval.lo,
        g.interval.hi
    );
    assert!(err.lines().count() >= 1 && err.contains(&expected), "{err}");
    // Every line is a frame whose interval lies above 2 (leaf_1, and the callers it
    // carries when they grew as surely).
    assert!(
        err.lines()
            .all(|l| l.starts_with("cpiflame: ") && l.ends_with("above --fail-above 2")),
        "{err}"
    );
}

#[test]
fn the_binary_tests_several_runs_with_their_own_variance() {
    let dir = Dir::new("gate-runs");
    // leaf_a's share in three runs per side, 10,000 samples each: before 20, 30, 25%;
    // after 30, 20, 28%. The first pair alone says +10 points, far outside sampling noise
    // (±1.2 points); the runs say the mean moved by 1 point and runs differ by ±5.
    let run = |pct: u64| {
        format!(
            "app;main;leaf_a {}\napp;main;rest {}\n",
            pct * 100,
            (100 - pct) * 100
        )
    };
    let b: Vec<String> = [20, 30, 25].map(run).to_vec();
    let a: Vec<String> = [30, 20, 28].map(run).to_vec();
    let (before, after) = (write(&dir, "b", &b), write(&dir, "a", &a));

    let (code, _, err) = diff(&before[..1], &after[..1], &["--fail-above", "2"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("cpiflame: leaf_a grew by 10.00 points (20.00% → 30.00%"),
        "{err}"
    );

    let (code, out, err) = diff(&before, &after, &["--fail-above", "2"]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert!(out.contains(
        "# 3 runs before, 3 after: before, after and change are means over each side's runs"
    ));
    assert!(out.contains("(between-run variance)"), "{out}");
    let (_, json, _) = diff(&before, &after, &["--fail-above", "2", "--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["runs"], serde_json::json!({"before": 3, "after": 3}));
    let leaf = frame(&v, "leaf_a");
    // The oracle: growth_test on the shares written, 10,000 samples per run.
    let share = |pct: u64| Share {
        frame: Count {
            samples: pct * 100,
            period: pct * 100,
        },
        total: Count {
            samples: 10_000,
            period: 10_000,
        },
    };
    let g = growth_test(
        &[share(20), share(30), share(25)],
        &[share(30), share(20), share(28)],
        2.0,
        0.95,
    )
    .unwrap();
    assert!(!g.exceeds);
    assert_eq!(
        leaf["change_interval"],
        serde_json::json!([g.interval.lo, g.interval.hi])
    );
    assert_eq!(leaf["exceeds_threshold"], false);
    assert_eq!(leaf["before_mean_share"], 0.25);
    assert_eq!(leaf["after_mean_share"], 0.26);
    // The first runs' numbers are still the first runs' (and the graph's).
    assert_eq!(leaf["delta_points"], 10.0);
}

#[test]
fn bad_confidence_and_a_missing_run_are_one_error_line() {
    let dir = Dir::new("gate-errors");
    let runs = write(&dir, "r", &["app;main 10\n".to_string()]);
    let r = s(&runs[0]);
    for bad in ["0", "1", "1.5", "-0.2", "x", ""] {
        let flag = format!("--confidence={bad}");
        let out = cpiflame(&["diff", "--summary", r, r, &flag]);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        // One error line, as for every flag clap rejects.
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains(&format!("--confidence {bad}: expected a probability")),
            "{err}"
        );
    }
    let missing = dir.path("missing.folded");
    let out = cpiflame(&["diff", "--summary", r, r, "--before", s(&missing)]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(s(&missing)), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Regression (issue 41, item 9): `diff a b --json > d.json` wrote an SVG (`--json` only
/// worked with `--summary`). `--json` implies the summary: the same document as `--summary
/// --json`, and no SVG unless `-o` asks for one.
#[test]
fn json_alone_prints_the_summary() {
    let dir = Dir::new("gate-json-alone");
    let before = write(&dir, "b", &["app;main;a 30\napp;main;b 10\n".to_string()]);
    let after = write(&dir, "a", &["app;main;a 10\napp;main;b 30\n".to_string()]);
    let (b, a) = (s(&before[0]), s(&after[0]));
    let summary = cpiflame(&["diff", "--summary", "--json", b, a]);
    let alone = cpiflame(&["diff", b, a, "--json"]);
    assert_eq!(alone.status.code(), Some(0));
    assert_eq!(alone.stdout, summary.stdout);
    let json: Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_eq!(json["schema"], "cpiflame-diff/1");
    assert!(frame(&json, "b")["delta_points"].as_f64().unwrap() > 0.0);
    // With -o, the graph as well, in its file.
    let svg = dir.path("d.svg");
    let both = cpiflame(&["diff", b, a, "--json", "-o", s(&svg)]);
    assert_eq!(both.stdout, summary.stdout);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}
