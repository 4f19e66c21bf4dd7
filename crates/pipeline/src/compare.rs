//! Runs compared (`cpiflame diff`): each frame's share before and after, the summary of the
//! change with each change's interval, and `--fail-above`, the threshold a CI job sets on how
//! much a frame's share of the total may grow, with the frames whose growth is above it and
//! not noise. Each side may have several runs: the test of a change then uses the variance
//! between the runs (`cpiflame_profile::interval::growth_test`), and the graph and the
//! per-run columns of the summary come from the first run of each side. Shares are of
//! cycles, or of wall time when the first runs both have the wall-time columns
//! (`cpiflame_profile::Measure`): the summary's header and JSON say which, and the gate's
//! lines say "of wall time" when it is. When both first runs have the same top-down formula
//! set, each frame's inclusive fractions before and after are in the summary (and the
//! whole runs' in its totals); when only one has top-down events, or their sets differ
//! (fractions of different formulas do not compare number for number), there are none and
//! `Comparison::topdown_why` says why.

use std::io::{self, Write};
use std::path::PathBuf;

use cpiflame_profile::interval::DEFAULT_CONFIDENCE;
use cpiflame_profile::topdown::Breakdown;
use cpiflame_profile::{
    add_diff_topdown, diff_runs, totals, write_diff, ChangeTest, Columns, DiffSummaryOptions,
    Format, FrameDiff, Measure,
};

use crate::load::Loaded;
use crate::merge::set_text;

/// Runs read, compared frame by frame.
#[derive(Debug)]
pub struct Comparison {
    /// The first run of each side: the graph's and the summary's totals.
    pub before: Loaded,
    pub after: Loaded,
    /// The columns of each first run's summaries (`cycles` is the graph's width).
    pub before_columns: Columns,
    pub after_columns: Columns,
    /// The other runs of each side (`diff --before`, `--after`), with their columns.
    pub more_before: Vec<(Loaded, Columns)>,
    pub more_after: Vec<(Loaded, Columns)>,
    /// Every frame's change with its interval, largest first (of wall time or cycles, as
    /// `measure` says).
    pub diffs: Vec<FrameDiff>,
    /// What the shares are of: wall time when both first runs have it, else cycles.
    pub measure: Measure,
    /// The runs per side, the intervals' confidence and the threshold.
    pub test: ChangeTest,
    /// The first runs' whole top-down fractions, before and after, when both have the same
    /// formula set (each frame's are in `diffs`); `None` otherwise.
    pub topdown: Option<(Option<Breakdown>, Option<Breakdown>)>,
    /// Why the runs' top-down fractions are not compared though a side has them: one line.
    pub topdown_why: Option<String>,
}

/// Why runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// One of the first runs has nothing sampled.
    #[error("{} or {}: no samples", before.display(), after.display())]
    NoSamples { before: PathBuf, after: PathBuf },
    /// A further run has nothing sampled.
    #[error("{}: no samples", .0.display())]
    RunNoSamples(PathBuf),
    /// The first runs compare wall time, and a further run has no wall-time columns (its
    /// share of wall time would be unknown).
    #[error(
        "{}: no wall-time columns, while {} and {} have them: record every run alike (--off-cpu)",
        run.display(), before.display(), after.display()
    )]
    NoWallTime {
        run: PathBuf,
        before: PathBuf,
        after: PathBuf,
    },
    /// No run on a side.
    #[error("diff needs at least one run on each side")]
    NoRuns,
}

impl Comparison {
    /// Compares the runs `after` with the runs `before` (at least one each; the first of each
    /// is the graph's), each change tested at `confidence` and, given `fail_above`, against
    /// that threshold.
    pub fn new(
        before: Vec<Loaded>,
        after: Vec<Loaded>,
        fail_above: Option<f64>,
        confidence: f64,
    ) -> Result<Comparison, CompareError> {
        let runs = (before.len(), after.len());
        let mut before = before.into_iter();
        let mut after = after.into_iter();
        let (Some(b0), Some(a0)) = (before.next(), after.next()) else {
            return Err(CompareError::NoRuns);
        };
        let (Some(before_columns), Some(after_columns)) = (b0.columns(), a0.columns()) else {
            return Err(CompareError::NoSamples {
                before: b0.file,
                after: a0.file,
            });
        };
        let measure = Measure::of(&before_columns, &after_columns);
        let more = |runs: std::vec::IntoIter<Loaded>| {
            runs.map(|l| {
                let Some(columns) = l.columns() else {
                    return Err(CompareError::RunNoSamples(l.file));
                };
                if measure == Measure::WallTime && columns.wall().is_none() {
                    return Err(CompareError::NoWallTime {
                        run: l.file,
                        before: b0.file.clone(),
                        after: a0.file.clone(),
                    });
                }
                Ok((l, columns))
            })
            .collect::<Result<Vec<_>, _>>()
        };
        let more_before = more(before)?;
        let more_after = more(after)?;
        let mut diffs = diff_runs(
            &side(&b0, before_columns, &more_before),
            &side(&a0, after_columns, &more_after),
            fail_above,
            confidence,
        );
        let (topdown, topdown_why) = match (&b0.topdown, &a0.topdown) {
            (Some(b), Some(a)) if b.set == a.set => (
                Some(add_diff_topdown(
                    (&b0.profile, b),
                    (&a0.profile, a),
                    &mut diffs,
                )),
                None,
            ),
            (None, None) => (None, None),
            (b, a) => {
                let what = |p: &Option<cpiflame_profile::topdown::Plan>, l: &Loaded| {
                    set_text(p.as_ref().map(|p| p.set), l.topdown_why.as_deref())
                };
                let why = format!(
                    "top-down not compared: {} has {}, {} {}",
                    b0.file.display(),
                    what(b, &b0),
                    a0.file.display(),
                    what(a, &a0)
                );
                (None, Some(why))
            }
        };
        Ok(Comparison {
            before: b0,
            after: a0,
            before_columns,
            after_columns,
            more_before,
            more_after,
            diffs,
            measure,
            test: ChangeTest {
                runs,
                confidence,
                fail_above,
            },
            topdown,
            topdown_why,
        })
    }

    /// The summary: totals of the first runs and the `limit` frames that changed most, with
    /// each change's interval, as text, or every frame as JSON (schema cpiflame-diff/1).
    pub fn write_summary(&self, json: bool, limit: usize, out: &mut dyn Write) -> io::Result<()> {
        // The header's totals at the default confidence: they print no interval.
        let totals = |l: &Loaded, c: &Columns| totals(&l.profile, c, DEFAULT_CONFIDENCE);
        let tb = totals(&self.before, &self.before_columns);
        let ta = totals(&self.after, &self.after_columns);
        let options = DiffSummaryOptions {
            limit,
            test: self.test,
            topdown: self.topdown,
            counts: (self.before.counts, self.after.counts),
        };
        let format = if json { Format::Json } else { Format::Text };
        write_diff(&tb, &ta, &self.diffs, &options, format, out)
    }

    /// One line for each of the first ten frames whose growth's interval lies above
    /// `--fail-above` (none without it): what trips the gate.
    pub fn gate_lines(&self) -> Vec<String> {
        match self.test.fail_above {
            Some(limit) => grown_above(&self.diffs, limit, &self.test),
            None => Vec::new(),
        }
    }
}

/// A `--fail-above` value that is not a number of percentage points.
#[derive(Debug, thiserror::Error)]
#[error("--fail-above {0}: expected percentage points, e.g. 5 or 5%")]
pub struct GateError(pub String);

/// `5`, `5%`, `2.5` → percentage points.
pub fn parse_fail_above(text: &str) -> Result<f64, GateError> {
    text.trim()
        .trim_end_matches('%')
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| GateError(text.to_string()))
}

/// A side's runs as [`diff_runs`] takes them: the first, then the others.
fn side<'a>(
    first: &'a Loaded,
    columns: Columns,
    more: &'a [(Loaded, Columns)],
) -> Vec<(&'a cpiflame_profile::Profile, Columns)> {
    let mut runs = vec![(&first.profile, columns)];
    runs.extend(more.iter().map(|(l, c)| (&l.profile, *c)));
    runs
}

/// One line for each of the first ten frames (`diffs` in their order) whose change's interval
/// lies above `limit` ([`FrameDiff::exceeds_threshold`], tested as `test` says); empty when
/// none does. The share is of wall time when the diffs have it (both runs had the wall-time
/// columns), else of cycles.
pub fn grown_above(diffs: &[FrameDiff], limit: f64, test: &ChangeTest) -> Vec<String> {
    diffs
        .iter()
        .filter(|d| d.exceeds_threshold == Some(true))
        .take(10)
        .map(|d| {
            let of = if d.wall_delta_points.is_some() {
                " of wall time"
            } else {
                ""
            };
            let interval = d.change_interval.map_or(String::new(), |[lo, hi]| {
                format!(
                    ", {} interval [{lo:+.2}, {hi:+.2}]",
                    test.confidence_text()
                )
            });
            format!(
                "{} grew by {:.2} points{of} ({:.2}% → {:.2}%{interval}), above --fail-above {limit}",
                d.name,
                d.mean_change_points(),
                d.before_mean_share * 100.0,
                d.after_mean_share * 100.0
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
    use cpiflame_profile::{Count, EventColumn, Frame, FrameKind, Profile, Width};

    /// Process `app` with `main;work` (1 cpu-clock sample, `on` ns on CPU) and `main;sleep`
    /// (`blocked` ns), under columns named `names` (cpu-clock, then three more).
    fn profile(names: [&str; 4], on: u64, blocked: u64) -> Profile {
        let mut p = Profile::new(
            names
                .iter()
                .map(|n| EventColumn {
                    name: n.to_string(),
                })
                .collect(),
        );
        let mut frame = |name: &str, kind| {
            p.intern(Frame {
                name: name.into(),
                module: String::new(),
                kind,
            })
        };
        let (app, main) = (
            frame("app", FrameKind::Process),
            frame("main", FrameKind::User),
        );
        let (work, sleep) = (
            frame("work", FrameKind::User),
            frame("sleep", FrameKind::User),
        );
        let one = |period| Count { samples: 1, period };
        // A wall-time sample per microsecond: enough samples for a 50-point change to be
        // told from noise.
        let ns = |period: u64| Count {
            samples: period / 1_000,
            period,
        };
        p.add(&[app, main, work], 0, one(1_000_000));
        p.add(&[app, main, work], 1, ns(on));
        p.add(&[app, main, sleep], 3, ns(blocked));
        p
    }

    fn gate(before: &Profile, after: &Profile, limit: f64) -> Vec<String> {
        // As `Loaded::columns` says them: wall time the width where the run has it.
        let columns = |p: &Profile| Columns {
            width: cpiflame_profile::WallColumns::of(p).map_or(Width::Cycles, Width::Wall),
            ..Columns::new(0, None)
        };
        let test = ChangeTest {
            fail_above: Some(limit),
            ..ChangeTest::default()
        };
        let diffs = diff_runs(
            &[(before, columns(before))],
            &[(after, columns(after))],
            Some(limit),
            test.confidence,
        );
        grown_above(&diffs, limit, &test)
    }

    #[test]
    fn the_gate_is_of_wall_time_when_both_runs_have_it() {
        let wall = ["cpu-clock", ON_CPU, RUNNABLE, BLOCKED];
        // sleep: 1 of 4 ms (25%) → 3 of 4 ms (75%): +50 points of wall time; every cycles
        // share is 100% or 0% in both.
        let before = profile(wall, 3_000_000, 1_000_000);
        let after = profile(wall, 1_000_000, 3_000_000);
        // 1,000 of 4,000 samples to 3,000 of 4,000: the half-width is z(0.975) × 100 ×
        // √(v(1001/4002) + v(3001/4002)), v(p) = p(1 - p)/4002 (one sample added each way).
        let v = |p: f64| p * (1.0 - p) / 4002.0;
        let half = 1.959963984540054 * 100.0 * (v(1001.0 / 4002.0) + v(3001.0 / 4002.0)).sqrt();
        assert_eq!(
            gate(&before, &after, 47.0),
            [format!(
                "sleep grew by 50.00 points of wall time (25.00% → 75.00%, 95% interval \
                 [{:+.2}, {:+.2}]), above --fail-above 47",
                50.0 - half,
                50.0 + half
            )]
        );
        // Grown by more than 49 points, but not surely: the interval reaches below 49.
        assert!(50.0 - half < 49.0);
        assert!(gate(&before, &after, 49.0).is_empty());

        // One side without wall time: cycles, where nothing moved.
        let plain = ["cpu-clock", ON_CPU, RUNNABLE, "sched:sched_switch"];
        let after = profile(plain, 1_000_000, 3_000_000);
        assert!(gate(&before, &after, 0.0).is_empty());
        let diffs = diff_runs(
            &[(&before, Columns::new(0, None))],
            &[(&after, Columns::new(0, None))],
            None,
            0.95,
        );
        assert!(diffs.iter().all(|d| d.wall_delta_points.is_none()));
    }

    #[test]
    fn points_with_or_without_a_percent_sign() {
        assert_eq!(parse_fail_above("5").unwrap(), 5.0);
        assert_eq!(parse_fail_above(" 2.5% ").unwrap(), 2.5);
        for bad in ["-1", "x", "inf", ""] {
            assert_eq!(
                parse_fail_above(bad).unwrap_err().to_string(),
                format!("--fail-above {bad}: expected percentage points, e.g. 5 or 5%")
            );
        }
    }
}
