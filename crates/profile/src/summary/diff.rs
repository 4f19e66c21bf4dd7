//! Runs compared: per-function changes of one or several runs per side, and the gate.

use std::collections::{HashMap, HashSet};

use crate::columns::Columns;
use crate::interval::{growth_test, Share};
use crate::profile::{Count, Frame, FrameKind, Profile};

use super::model::{percent, saturate, share, FrameDiff, Measure};
use super::sums::{aggregate, root_kind, top_frames, Agg};

/// A function's sums in before and after.
pub(super) type Pair<'p, 'a> = (Option<&'p Agg<'a>>, Option<&'p Agg<'a>>);

/// For each (is process, name): the module to show, the first non-empty module in
/// [`top_frames`] order (most wall time first when there is wall time, then most total
/// samples).
pub(super) fn modules_by_name(
    p: &Profile,
    columns: Columns,
) -> HashMap<(Option<FrameKind>, String), String> {
    let mut map = HashMap::new();
    for f in top_frames(p, &columns, crate::interval::DEFAULT_CONFIDENCE) {
        if f.module.is_empty() {
            continue;
        }
        map.entry((f.kind.is_root().then_some(f.kind), f.name))
            .or_insert(f.module);
    }
    map
}

/// Compares two profiles function by function, each in its own `columns`' roles, functions
/// matched by name (and process frames only with process frames). Each side's shares are of
/// its own total cycles period, so runs of different lengths compare. Every function of
/// either side appears; one missing on a side has zero shares and samples there and a
/// `None` stall share. When both profiles have the wall-time columns
/// ([`Measure::WallTime`]) each function also has its shares of each side's wall time.
///
/// Sorted by `|delta_points|` (descending), or `|wall_delta_points|` with wall time
/// ([`FrameDiff::change_points`]), then name, then kind.
pub fn diff_frames(
    before: &Profile,
    b_columns: &Columns,
    after: &Profile,
    a_columns: &Columns,
) -> Vec<FrameDiff> {
    let (b_columns, a_columns) = (*b_columns, *a_columns);
    let (b_stalls, a_stalls) = (b_columns.stalls, a_columns.stalls);
    let key = |f: &Frame| (root_kind(f), f.name.clone());
    let (b_aggs, b_whole) = aggregate(before, b_columns, key);
    let (a_aggs, a_whole) = aggregate(after, a_columns, key);
    let (b_all, a_all) = (b_whole.cycles, a_whole.cycles);
    // Wall time is compared when both sides have it; `None` otherwise.
    let walls = b_whole.wall.zip(a_whole.wall);
    let b_modules = modules_by_name(before, b_columns);
    let a_modules = modules_by_name(after, a_columns);

    let mut pairs: HashMap<(Option<FrameKind>, &str), Pair> = HashMap::new();
    for a in &b_aggs {
        pairs
            .entry((root_kind(a.frame), a.frame.name.as_str()))
            .or_default()
            .0 = Some(a);
    }
    for a in &a_aggs {
        pairs
            .entry((root_kind(a.frame), a.frame.name.as_str()))
            .or_default()
            .1 = Some(a);
    }
    let mut out: Vec<FrameDiff> = pairs
        .into_iter()
        .map(|((process, name), (b, a))| {
            let samples = |x: Option<&Agg>| x.map_or(0, |x| saturate(x.total_samples));
            // Shares are of cycles periods, as the graph's widths are.
            let period = |x: Option<&Agg>| x.map_or(0, |x| saturate(x.cycles_period));
            let self_period = |x: Option<&Agg>| x.map_or(0, |x| saturate(x.self_period));
            let (bs, as_) = (samples(b), samples(a));
            let (bp, ap) = (period(b), period(a));
            let owned_key = (process, name.to_string());
            let module = a_modules
                .get(&owned_key)
                .or_else(|| b_modules.get(&owned_key))
                .cloned()
                .unwrap_or_default();
            let kind = a.or(b).map_or(FrameKind::User, |x| x.kind());
            let wall_ns = |x: Option<&Agg>| x.map_or(0, |x| x.wall_ns());
            let (bw, aw) = (wall_ns(b), wall_ns(a));
            FrameDiff {
                name: name.to_string(),
                module,
                kind,
                before_total_share: share(bp, b_all),
                after_total_share: share(ap, a_all),
                delta_points: percent(ap, a_all) - percent(bp, b_all),
                before_self_share: share(self_period(b), b_all),
                after_self_share: share(self_period(a), a_all),
                before_stall_share: b.and_then(|x| x.stall_share(b_stalls)),
                after_stall_share: a.and_then(|x| x.stall_share(a_stalls)),
                before_cpi: b.and_then(|x| x.cpi(b_columns.instructions)),
                after_cpi: a.and_then(|x| x.cpi(a_columns.instructions)),
                before_samples: bs,
                after_samples: as_,
                before_wall_share: walls.map(|(b_wall, _)| share(bw, b_wall)),
                after_wall_share: walls.map(|(_, a_wall)| share(aw, a_wall)),
                wall_delta_points: walls
                    .map(|(b_wall, a_wall)| percent(aw, a_wall) - percent(bw, b_wall)),
                before_wall_ns: walls.map(|_| bw),
                after_wall_ns: walls.map(|_| aw),
                before_mean_share: match walls {
                    Some((b_wall, _)) => share(bw, b_wall),
                    None => share(bp, b_all),
                },
                after_mean_share: match walls {
                    Some((_, a_wall)) => share(aw, a_wall),
                    None => share(ap, a_all),
                },
                change_interval: None,
                exceeds_threshold: None,
                topdown_before: None,
                topdown_after: None,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.change_points()
            .abs()
            .total_cmp(&x.change_points().abs())
            .then_with(|| x.name.cmp(&y.name))
            .then(x.kind.cmp(&y.kind))
    });
    out
}

/// A function's key as [`diff_frames`] matches functions: process or not, and the name.
pub(super) type DiffKey<'p> = (Option<FrameKind>, &'p str);

/// A run's counts per function and its column total ([`measured_counts`]).
pub(super) type RunCounts<'p> = (HashMap<DiffKey<'p>, (Count, &'p Frame)>, Count);

/// One run's inclusive count of each function (each stack counted once per function) in the
/// column the comparison's shares are of, cycles or the three wall-time columns summed, with
/// a frame of the function (its module and kind where only later runs have it), and that
/// column's total. Stacks without period in the column are left out: they add nothing to a
/// share.
pub(super) fn measured_counts(p: &Profile, columns: Columns, measure: Measure) -> RunCounts<'_> {
    let wall = columns.wall();
    let mut counts: HashMap<DiffKey, (Count, &Frame, usize)> = HashMap::new();
    let mut total = Count::default();
    for (i, stack) in p.stacks.iter().enumerate() {
        let c = match measure {
            Measure::Cycles => columns.cycles.of(stack),
            Measure::WallTime => wall.map_or(Count::default(), |w| {
                let mut sum = Count::default();
                for e in w.all() {
                    sum.add(e.of(stack));
                }
                sum
            }),
        };
        if c.period == 0 {
            continue;
        }
        total.add(c);
        for &f in &stack.frames {
            let Some(frame) = p.frames.get(f as usize) else {
                continue;
            };
            let entry = counts
                .entry((root_kind(frame), frame.name.as_str()))
                .or_insert((Count::default(), frame, usize::MAX));
            // Recursion counts a stack once.
            if entry.2 != i {
                entry.2 = i;
                entry.0.add(c);
            }
        }
    }
    let counts = counts
        .into_iter()
        .map(|(k, (c, frame, _))| (k, (c, frame)))
        .collect();
    (counts, total)
}

/// Compares several runs per side: [`diff_frames`] of the first run of each side (its
/// shares, stall shares, CPIs and samples, as the differential graph draws them), and for
/// every function of any run the test of its change over all runs
/// ([`crate::interval::growth_test`]: sampling variance with one run per side, between-run
/// variance with several): each side's mean share ([`FrameDiff::before_mean_share`]), the
/// change's interval at `confidence`, and, given `fail_above`, whether the interval lies
/// wholly above it (the gate's rule).
///
/// Each run's share is of its own total in the measure of the first runs
/// ([`Measure::of`] of their columns); every run's columns should have the wall-time width
/// when those do (a run
/// without them has no total there, and its functions no interval). A function only later
/// runs have is added with zero first-run shares. With one run per side the order is
/// [`diff_frames`]'s; with several, by the size of the mean change, then name and kind.
/// Empty when a side has no runs.
pub fn diff_runs<'p>(
    before: &[(&'p Profile, Columns)],
    after: &[(&'p Profile, Columns)],
    fail_above: Option<f64>,
    confidence: f64,
) -> Vec<FrameDiff> {
    let (Some(&(b0, b_columns)), Some(&(a0, a_columns))) = (before.first(), after.first()) else {
        return Vec::new();
    };
    let mut diffs = diff_frames(b0, &b_columns, a0, &a_columns);
    let measure = Measure::of(&b_columns, &a_columns);
    let side = |runs: &[(&'p Profile, Columns)]| -> Vec<_> {
        runs.iter()
            .map(|&(p, c)| measured_counts(p, c, measure))
            .collect()
    };
    let (b_runs, a_runs) = (side(before), side(after));

    let mut known: HashSet<(Option<FrameKind>, String)> = diffs
        .iter()
        .map(|d| (d.kind.is_root().then_some(d.kind), d.name.clone()))
        .collect();
    let mut added = false;
    for (counts, _) in b_runs.iter().chain(&a_runs) {
        let mut new: Vec<(&DiffKey, &(Count, &Frame))> = counts
            .iter()
            .filter(|(k, _)| !known.contains(&(k.0, k.1.to_string())))
            .collect();
        // HashMap order is random; the rows are not.
        new.sort_by(|x, y| x.0.cmp(y.0));
        for (&(process, name), &(_, frame)) in new {
            known.insert((process, name.to_string()));
            diffs.push(absent_from_first_runs(name, frame, measure));
            added = true;
        }
    }

    let several = before.len() > 1 || after.len() > 1;
    for d in &mut diffs {
        let key = (d.kind.is_root().then_some(d.kind), d.name.as_str());
        let shares = |runs: &[RunCounts]| -> Vec<Share> {
            runs.iter()
                .map(|(counts, total)| Share {
                    frame: counts.get(&key).map_or(Count::default(), |c| c.0),
                    total: *total,
                })
                .collect()
        };
        let (b, a) = (shares(&b_runs), shares(&a_runs));
        let test = growth_test(&b, &a, fail_above.unwrap_or(0.0), confidence);
        d.change_interval = test.map(|g| [g.interval.lo, g.interval.hi]);
        d.exceeds_threshold = fail_above.map(|_| test.is_some_and(|g| g.exceeds));
        if several {
            let mean = |shares: &[Share]| {
                shares
                    .iter()
                    .map(|s| s.fraction().unwrap_or(0.0))
                    .sum::<f64>()
                    / shares.len() as f64
            };
            d.before_mean_share = mean(&b);
            d.after_mean_share = mean(&a);
        }
    }
    if several || added {
        diffs.sort_by(|x, y| {
            y.mean_change_points()
                .abs()
                .total_cmp(&x.mean_change_points().abs())
                .then_with(|| x.name.cmp(&y.name))
                .then(x.kind.cmp(&y.kind))
        });
    }
    diffs
}

/// The row of a function that neither first run has (so its first-run numbers are zero).
pub(super) fn absent_from_first_runs(name: &str, frame: &Frame, measure: Measure) -> FrameDiff {
    let with_wall = measure == Measure::WallTime;
    let wall = |v: f64| with_wall.then_some(v);
    FrameDiff {
        name: name.to_string(),
        module: frame.module.clone(),
        kind: frame.kind,
        before_total_share: 0.0,
        after_total_share: 0.0,
        delta_points: 0.0,
        before_self_share: 0.0,
        after_self_share: 0.0,
        before_stall_share: None,
        after_stall_share: None,
        before_cpi: None,
        after_cpi: None,
        before_samples: 0,
        after_samples: 0,
        before_wall_share: wall(0.0),
        after_wall_share: wall(0.0),
        wall_delta_points: wall(0.0),
        before_wall_ns: with_wall.then_some(0),
        after_wall_ns: with_wall.then_some(0),
        before_mean_share: 0.0,
        after_mean_share: 0.0,
        change_interval: None,
        exceeds_threshold: None,
        topdown_before: None,
        topdown_after: None,
    }
}
