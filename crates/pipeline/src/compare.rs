//! Two runs compared (`cpiflame diff`): each frame's share before and after, the summary of
//! the change, and `--fail-above`, the threshold a CI job sets on how much a frame's share of
//! the total may grow, with the frames above it. Shares are of cycles, or of wall time when
//! both runs have the wall-time columns (`cpiflame_profile::Measure`): the summary's header
//! and JSON say which, and the gate's lines say "of wall time" when it is.

use std::io::{self, Write};
use std::path::PathBuf;

use cpiflame_profile::{
    diff_frames_of, totals_of, write_diff_json, write_diff_text, Columns, FrameDiff, Measure,
};

use crate::load::Loaded;

/// Two recordings read, compared frame by frame.
#[derive(Debug)]
pub struct Comparison {
    pub before: Loaded,
    pub after: Loaded,
    /// The columns of each run's summaries (`cycles` is the graph's width).
    pub before_columns: Columns,
    pub after_columns: Columns,
    /// Every frame's change, largest first (of wall time or cycles, as `measure` says).
    pub diffs: Vec<FrameDiff>,
    /// What the shares are of: wall time when both runs have it, else cycles.
    pub measure: Measure,
}

/// One of the runs has nothing sampled.
#[derive(Debug, thiserror::Error)]
#[error("{} or {}: no samples", before.display(), after.display())]
pub struct NoSamples {
    pub before: PathBuf,
    pub after: PathBuf,
}

impl Comparison {
    /// Compares `after` with `before`.
    pub fn new(before: Loaded, after: Loaded) -> Result<Comparison, NoSamples> {
        let (Some(before_columns), Some(after_columns)) = (before.columns(), after.columns())
        else {
            return Err(NoSamples {
                before: before.file,
                after: after.file,
            });
        };
        let diffs = diff_frames_of(
            &before.profile,
            before_columns,
            &after.profile,
            after_columns,
        );
        let measure = Measure::of(&before.profile, &after.profile);
        Ok(Comparison {
            before,
            after,
            before_columns,
            after_columns,
            diffs,
            measure,
        })
    }

    /// The summary: totals of both runs and the `limit` frames that changed most, as text,
    /// or every frame as JSON (schema cpiflame-diff/1).
    pub fn write_summary(&self, json: bool, limit: usize, out: &mut dyn Write) -> io::Result<()> {
        let tb = totals_of(&self.before.profile, self.before_columns);
        let ta = totals_of(&self.after.profile, self.after_columns);
        if json {
            write_diff_json(&tb, &ta, &self.diffs, out)
        } else {
            write_diff_text(&tb, &ta, &self.diffs, limit, out)
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

/// One line for each of the first ten frames whose share grew by more than `limit` points
/// (`diffs` in their order); empty when none did. The share is of wall time when the diffs
/// have it (both runs had the wall-time columns), else of cycles.
pub fn grown_above(diffs: &[FrameDiff], limit: f64) -> Vec<String> {
    diffs
        .iter()
        .filter(|d| d.change_points() > limit)
        .take(10)
        .map(|d| {
            let (before, after) = d.compared_shares();
            let of = if d.wall_delta_points.is_some() {
                " of wall time"
            } else {
                ""
            };
            format!(
                "{} grew by {:.2} points{of} ({:.2}% → {:.2}%), above --fail-above {limit}",
                d.name,
                d.change_points(),
                before * 100.0,
                after * 100.0
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
    use cpiflame_profile::{Count, EventColumn, Frame, FrameKind, Profile};

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
        p.add(&[app, main, work], 0, one(1_000_000));
        p.add(&[app, main, work], 1, one(on));
        p.add(&[app, main, sleep], 3, one(blocked));
        p
    }

    #[test]
    fn the_gate_is_of_wall_time_when_both_runs_have_it() {
        let wall = ["cpu-clock", ON_CPU, RUNNABLE, BLOCKED];
        let columns = Columns::new(0, None);
        // sleep: 1 of 4 ms (25%) → 3 of 4 ms (75%): +50 points of wall time; every cycles
        // share is 100% or 0% in both.
        let before = profile(wall, 3_000_000, 1_000_000);
        let after = profile(wall, 1_000_000, 3_000_000);
        let diffs = diff_frames_of(&before, columns, &after, columns);
        assert_eq!(
            grown_above(&diffs, 49.0),
            ["sleep grew by 50.00 points of wall time (25.00% → 75.00%), above --fail-above 49"]
        );
        assert!(grown_above(&diffs, 50.0).is_empty());

        // One side without wall time: cycles, where nothing moved.
        let plain = ["cpu-clock", ON_CPU, RUNNABLE, "sched:sched_switch"];
        let after = profile(plain, 1_000_000, 3_000_000);
        let diffs = diff_frames_of(&before, columns, &after, columns);
        assert!(grown_above(&diffs, 0.0).is_empty());
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
