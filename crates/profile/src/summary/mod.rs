//! Per-function summaries of a profile (`cpiflame report`) and the comparison of two
//! profiles (`cpiflame diff --summary`), as aligned text tables and as JSON.
//!
//! # Definitions
//!
//! - A **function** is every frame with the same name and module (and, separately, the
//!   process frames: a process named like a function is not merged with it), merged across
//!   all stacks. [`diff_frames`] matches by name alone, since perf's and cpiflame's files can
//!   name modules differently.
//! - Only stacks with a non-zero count (samples or period) in the cycles, the stall or the
//!   instructions column are looked at; a function appears when it is in one of them. Other
//!   columns are ignored. (Stacks with instructions but no cycles count because, when cycles
//!   and instructions are sampled independently, they hold instructions of the function.)
//! - **Self** samples of a function: cycles samples of the stacks whose leaf it is.
//!   **Total** samples: cycles samples of the stacks it appears in, each stack counted once
//!   even when the function recurses. **Shares** are of cycles, as the CPI flame graph's
//!   widths are: the function's self or total cycles period over the cycles period of the
//!   whole profile (0 when it has none), fractions in `0..=1`. For a fixed sampling period
//!   they equal the sample ratios; in frequency mode or with leader sampling only periods
//!   measure cycles.
//! - **Stall share** (inclusive): summed stall period over summed cycles period, over the
//!   stacks the function appears in (each once), as the CPI flame graph colours frames.
//!   `None` without a stall column, or when those stacks have no cycles period. It is a ratio
//!   of two sampled estimates and can exceed 1 slightly.
//! - **CPI** (inclusive): summed cycles period over summed instructions period, over the
//!   stacks the function appears in (each once), as the CPI flame graph computes it; **IPC**
//!   is its inverse. Both are `None` (unknown) without an instructions column, or when the
//!   cycles or the instructions period is 0.
//! - Nothing is excluded: process frames (the roots) are listed too; their total is the
//!   process's share of the profile.
//!
//! ## Wall time
//!
//! A profile with off-CPU data has three more columns whose periods are nanoseconds of
//! wall-clock time ([`crate::wall`]: `on-cpu-time`, `runnable-time`, `blocked-time`, found by
//! name, [`WallColumns`]). When all three are there:
//!
//! - stacks with a non-zero period in any of them are looked at too (off-CPU stacks have no
//!   cycles), so a function only ever seen blocked is listed, with 0 samples;
//! - each function has its **inclusive** on-CPU, runnable and blocked nanoseconds (the
//!   periods of the stacks it appears in, each stack counted once even when the function
//!   recurses, as for total samples), their sum (**wall** time), and its **wall share**: its
//!   wall time over the profile's (0 when the profile has none). The totals have the
//!   profile's three sums and their sum;
//! - functions are **ordered by wall time** (most first), then as without it: a reader of an
//!   off-CPU profile asks where the time went. The cycles fields (`total_share`,
//!   `self_share`, samples, stall share, CPI) keep their meaning, of the on-CPU samples;
//! - a **diff** of two profiles that both have them compares wall time: its shares, its
//!   order and `--fail-above` are of wall time ([`Measure::WallTime`]); when one side lacks
//!   them, cycles, as without ([`Measure::Cycles`]). The JSON says which in `measure`.
//!
//! Without the wall-time columns every output is what it was before they existed, except
//! that the JSON documents carry the new fields as `null` (and the diff `"measure":
//! "cycles"`).
//!
//! The JSON documents (`cpiflame-report/1`, `cpiflame-diff/1`) are specified in
//! docs/cli.md ("JSON schemas of report and diff").
//!
//! The module is split by concern: `sums.rs` walks the profile (totals, per-function sums,
//! top-down sums), `diff.rs` compares runs, `text.rs` and `json.rs` write the outputs; the
//! types they share are here.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::io::{self, Write};

use serde::Serialize;

use crate::columns::{Column, Columns};
use crate::interval::{growth_test, PairedMoments, Share};
use crate::lines::SourceLines;
use crate::profile::{Count, Frame, FrameId, FrameKind, Profile, Stack};
use crate::ratios::{RatioIntervals, RatioKind};
use crate::topdown::{Breakdown, Plan};
use crate::wall::WallColumns;

mod diff;
mod json;
mod sums;
mod text;

pub use diff::*;
pub use json::*;
pub use sums::*;
pub use text::*;

/// One function (frames with the same name and module merged across all stacks).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameSummary {
    pub name: String,
    pub module: String,
    /// When frames of several kinds merged (a function both inlined and called), the first
    /// in [`FrameKind`]'s order: `User` before `Inline` before `Kernel`.
    pub kind: FrameKind,
    /// Cycles samples with this function as the leaf.
    pub self_samples: u64,
    /// Cycles samples of the stacks containing this function (each stack once).
    pub total_samples: u64,
    /// Cycles period with this function as the leaf / all cycles period (0..1).
    pub self_share: f64,
    /// Cycles period of the stacks containing it (each once) / all cycles period (0..1).
    pub total_share: f64,
    /// Inclusive: stall period / cycles period over every stack containing it (each stack
    /// once); `None` without a stall column or with zero cycles period.
    pub stall_share: Option<f64>,
    /// Inclusive: cycles period / instructions period over every stack containing it (each
    /// stack once); `None` without an instructions column or when either period is zero.
    pub cpi: Option<f64>,
    /// Inclusive: instructions period / cycles period, `1 / cpi`; `None` when `cpi` is.
    pub ipc: Option<f64>,
    /// The confidence interval of `stall_share` (`[lo, hi]`, see [`crate::interval`]);
    /// `None` where `stall_share` is. An unbounded end is `null` in JSON.
    pub stall_share_interval: Option<[f64; 2]>,
    /// The confidence interval of `cpi`; `None` where `cpi` is.
    pub cpi_interval: Option<[f64; 2]>,
    /// Inclusive nanoseconds on a CPU (the [`wall::ON_CPU`](crate::wall::ON_CPU) column's period over the stacks
    /// containing the function, each once); `None` without the wall-time columns.
    pub on_cpu_ns: Option<u64>,
    /// Inclusive nanoseconds runnable, waiting for a CPU ([`wall::RUNNABLE`](crate::wall::RUNNABLE)).
    pub runnable_ns: Option<u64>,
    /// Inclusive nanoseconds blocked ([`wall::BLOCKED`](crate::wall::BLOCKED)).
    pub blocked_ns: Option<u64>,
    /// `on_cpu_ns + runnable_ns + blocked_ns`: the function's inclusive wall time.
    pub wall_ns: Option<u64>,
    /// `wall_ns` over the profile's wall time (0..1; 0 when the profile has none).
    pub wall_share: Option<f64>,
    /// `report --lines`: the source line with the most of the function's self weight
    /// (`Some(None)` when none of its samples has a line); `None` (left out of the JSON)
    /// when lines were not asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest_line: Option<Option<LineSummary>>,
    /// Inclusive top-down fractions: the formulas applied to the summed deltas of every
    /// stack containing the function, each once ([`add_topdown`]); `Some(None)` where they
    /// give none (no slots); `None` (left out of the JSON) when the recording has no
    /// top-down events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topdown: Option<Option<Breakdown>>,
    /// As `topdown`, of the stacks with the function as the leaf.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_topdown: Option<Option<Breakdown>>,
}

/// A function's hottest self line (`report --lines`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineSummary {
    /// As the debug information names it.
    pub file: String,
    pub line: u32,
    /// Of the function's self weight (the width column's period of the samples whose leaf
    /// it is), 0..1.
    pub share: f64,
    /// Stall period / cycles period of the line's samples; `None` without those columns.
    pub stall_share: Option<f64>,
}

/// One function in the comparison of two profiles, matched by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrameDiff {
    pub name: String,
    /// After's module when it names one, else before's (empty when neither does). When a side
    /// has the name in several modules, its module with the most total samples.
    pub module: String,
    /// After's kind, or before's when the function is not in after.
    pub kind: FrameKind,
    pub before_total_share: f64,
    pub after_total_share: f64,
    /// `(after_total_share - before_total_share) * 100`: percentage points.
    pub delta_points: f64,
    pub before_self_share: f64,
    pub after_self_share: f64,
    pub before_stall_share: Option<f64>,
    pub after_stall_share: Option<f64>,
    /// Inclusive CPI in before (see [`FrameSummary::cpi`]); `None` when before has no
    /// instructions column or no instructions under the function.
    pub before_cpi: Option<f64>,
    /// Inclusive CPI in after.
    pub after_cpi: Option<f64>,
    /// Total (inclusive) cycles samples of the function in before.
    pub before_samples: u64,
    /// Total (inclusive) cycles samples of the function in after.
    pub after_samples: u64,
    /// Inclusive wall time of the function over before's wall time (0..1); `None` unless
    /// both profiles have the wall-time columns ([`Measure::WallTime`]).
    pub before_wall_share: Option<f64>,
    /// Inclusive wall time of the function over after's wall time.
    pub after_wall_share: Option<f64>,
    /// `(after_wall_share - before_wall_share) * 100`: percentage points of wall time, what
    /// [`Measure::WallTime`] sorts and gates by.
    pub wall_delta_points: Option<f64>,
    /// Inclusive wall time of the function in before, nanoseconds.
    pub before_wall_ns: Option<u64>,
    /// Inclusive wall time of the function in after, nanoseconds.
    pub after_wall_ns: Option<u64>,
    /// The function's share in the measure compared, the mean over before's runs (0..1;
    /// [`diff_runs`]); with one run, before's compared share.
    pub before_mean_share: f64,
    /// The same over after's runs.
    pub after_mean_share: f64,
    /// The interval of the change of the mean shares, percentage points, at the comparison's
    /// confidence ([`crate::interval::growth_test`]); `None` when the change was not tested
    /// ([`diff_frames`] alone, or a run with nothing in the measure).
    pub change_interval: Option<[f64; 2]>,
    /// With a threshold (`--fail-above`): whether the change's interval lies wholly above it,
    /// which is what trips the gate; `None` without a threshold.
    pub exceeds_threshold: Option<bool>,
    /// Inclusive top-down fractions in before ([`add_diff_topdown`]: as
    /// [`FrameSummary::topdown`]), `Some(None)` where there are none (not in before, no
    /// slots); `None` (left out of the JSON) unless both sides have the same top-down
    /// formulas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topdown_before: Option<Option<Breakdown>>,
    /// The same in after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topdown_after: Option<Option<Breakdown>>,
}

impl FrameDiff {
    /// The change compared: percentage points of wall time when both profiles have the
    /// wall-time columns, else of cycles ([`FrameDiff::delta_points`]).
    pub fn change_points(&self) -> f64 {
        self.wall_delta_points.unwrap_or(self.delta_points)
    }

    /// Before's and after's shares in the measure compared (see [`FrameDiff::change_points`]).
    pub fn compared_shares(&self) -> (f64, f64) {
        match (self.before_wall_share, self.after_wall_share) {
            (Some(b), Some(a)) => (b, a),
            _ => (self.before_total_share, self.after_total_share),
        }
    }

    /// The change of the mean shares over each side's runs, percentage points: the centre of
    /// [`FrameDiff::change_interval`]; [`FrameDiff::change_points`] with one run per side.
    pub fn mean_change_points(&self) -> f64 {
        (self.after_mean_share - self.before_mean_share) * 100.0
    }

    /// Whether the function has anything in the measure compared before, and after.
    fn present(&self) -> (bool, bool) {
        match (self.before_wall_ns, self.after_wall_ns) {
            (Some(b), Some(a)) => (b > 0, a > 0),
            _ => (self.before_samples > 0, self.after_samples > 0),
        }
    }
}

/// What a comparison's shares are of: wall time when both profiles have the wall-time
/// columns ([`WallColumns`]), else cycles, the graph's widths. In the diff JSON as
/// `"measure"`: `"cycles"` or `"wall-time"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    Cycles,
    WallTime,
}

impl Measure {
    /// The measure comparing `before` with `after`.
    pub fn of(before: &Profile, after: &Profile) -> Measure {
        if WallColumns::of(before).is_some() && WallColumns::of(after).is_some() {
            Measure::WallTime
        } else {
            Measure::Cycles
        }
    }

    /// The measure of two runs' [`Totals`]: wall time when both have it.
    pub fn of_totals(before: &Totals, after: &Totals) -> Measure {
        if before.wall_ns.is_some() && after.wall_ns.is_some() {
            Measure::WallTime
        } else {
            Measure::Cycles
        }
    }
}

/// The whole-profile numbers reports and diffs print in their headers (and in JSON, as
/// `totals`, `before`, `after`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Totals {
    /// Name of the cycles (width) column; empty if the index was out of range.
    pub cycles_event: String,
    pub stalls_event: Option<String>,
    pub cycles_samples: u64,
    pub cycles_period: u64,
    pub stall_samples: Option<u64>,
    pub stall_period: Option<u64>,
    /// `stall_period / cycles_period`; `None` without a stall column or cycles period.
    pub stall_share: Option<f64>,
    pub instructions_event: Option<String>,
    pub instructions_samples: Option<u64>,
    pub instructions_period: Option<u64>,
    /// `cycles_period / instructions_period`; `None` without an instructions column or when
    /// either period is zero.
    pub cpi: Option<f64>,
    /// `instructions_period / cycles_period`; `None` when `cpi` is.
    pub ipc: Option<f64>,
    /// The confidence interval of `stall_share` (see [`crate::interval`]); `None` where
    /// `stall_share` is.
    pub stall_share_interval: Option<[f64; 2]>,
    /// The confidence interval of `cpi`; `None` where `cpi` is.
    pub cpi_interval: Option<[f64; 2]>,
    /// Nanoseconds on a CPU, over all threads ([`wall::ON_CPU`](crate::wall::ON_CPU)'s period); `None` without the
    /// wall-time columns.
    pub on_cpu_ns: Option<u64>,
    /// Nanoseconds runnable, waiting for a CPU ([`wall::RUNNABLE`](crate::wall::RUNNABLE)).
    pub runnable_ns: Option<u64>,
    /// Nanoseconds blocked ([`wall::BLOCKED`](crate::wall::BLOCKED)).
    pub blocked_ns: Option<u64>,
    /// `on_cpu_ns + runnable_ns + blocked_ns`: the threads' wall time.
    pub wall_ns: Option<u64>,
}

/// The form of a summary: the aligned text table or the JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// How `report` summarises a profile ([`write_report`]).
#[derive(Clone, Debug)]
pub struct ReportOptions<'a> {
    /// The roles of the profile's columns.
    pub columns: Columns,
    /// The confidence of the stall shares' and CPIs' intervals.
    pub confidence: f64,
    /// Rows of the text table (0: all); the JSON has every frame.
    pub limit: usize,
    /// The profile's source lines: each function gets its hottest self line (`report
    /// --lines`). `None`: no line column (JSON: no `hottest_line`).
    pub lines: Option<&'a SourceLines>,
    /// The top-down formulas of the columns: fractions per frame and in the totals, and the
    /// set named (text: under the header; JSON: `totals.topdown_formulas`).
    pub topdown: Option<&'a Plan>,
    /// Why top-down events give no fractions (JSON: `totals.topdown_why`; text: a line
    /// under the table).
    pub topdown_why: Option<&'a str>,
    /// The weights are counts (folded text), not samples: the header and the column say
    /// "counts".
    pub counts: bool,
}

impl ReportOptions<'_> {
    /// A report of `columns` at the default confidence, every row, nothing else.
    pub fn new(columns: Columns) -> ReportOptions<'static> {
        ReportOptions {
            columns,
            confidence: crate::interval::DEFAULT_CONFIDENCE,
            limit: 0,
            lines: None,
            topdown: None,
            topdown_why: None,
            counts: false,
        }
    }
}

/// `cpiflame report`: the top functions of `p` (see [`top_frames`]) as a table like `perf
/// report`'s or as the `cpiflame-report/1` document.
///
/// The table: total %, self %, stall % (only with a stall column), inclusive CPI (only with
/// an instructions column), top-down (only with formulas), cycles samples, the hottest self
/// line (only with `opts.lines`), `function [module]`; at most `opts.limit` rows (0: all),
/// then a line saying how many were left out. With the wall-time columns ([`WallColumns`]),
/// the header adds the wall time and its parts, the table starts with the inclusive wall
/// share and on-CPU, runnable and blocked times, and the rows are in wall-time order.
///
/// ```text
/// # cpiflame report: 1000 samples of cycles, 32.40% of cycles stalled (resource_stalls_any)
/// #
/// #   Total     Self    Stall  Samples  Function [module]
/// # .......  .......  .......  .......  .................
/// #
///   100.00%    0.00%   32.40%     1000  demo
///    60.00%   60.00%   50.00%      600  memory_bound [demo]
/// ```
pub fn write_report<W: Write>(
    p: &Profile,
    opts: &ReportOptions,
    format: Format,
    out: W,
) -> io::Result<()> {
    let mut frames = top_frames(p, &opts.columns, opts.confidence);
    if let Some(lines) = opts.lines {
        let hot = lines.hottest_self(p, &opts.columns, |f| {
            (!f.kind.is_root()).then(|| (f.name.clone(), f.module.clone()))
        });
        for f in &mut frames {
            let line = hot.get(&(f.name.clone(), f.module.clone())).and_then(|h| {
                let at = lines.line(h.line)?;
                Some(LineSummary {
                    file: at.file.clone(),
                    line: at.line,
                    share: h.share,
                    stall_share: h.stall_share,
                })
            });
            f.hottest_line = Some(line);
        }
    }
    let topdown = opts.topdown.map(|plan| add_topdown(p, plan, &mut frames));
    match format {
        Format::Text => write_report_text(p, &frames, opts, out),
        Format::Json => write_report_json(p, &frames, topdown, opts, out),
    }
}

/// How `diff --summary` writes a comparison ([`write_diff`]).
#[derive(Clone, Debug, Default)]
pub struct DiffSummaryOptions {
    /// Rows of the text table (0: all); the JSON has every frame.
    pub limit: usize,
    /// How the changes were tested ([`diff_runs`]): runs per side, confidence, threshold.
    pub test: ChangeTest,
    /// Each side's whole top-down fractions, when both have the same formulas
    /// ([`add_diff_topdown`]).
    pub topdown: Option<(Option<Breakdown>, Option<Breakdown>)>,
}

/// `cpiflame diff --summary`: the comparison `diffs` (from [`diff_frames`] or
/// [`diff_runs`]) of two runs whose totals are `before` and `after`, as a table (see
/// `text.rs`, then the top-down totals line) or as the `cpiflame-diff/1` document.
pub fn write_diff<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    opts: &DiffSummaryOptions,
    format: Format,
    mut out: W,
) -> io::Result<()> {
    match format {
        Format::Json => write_diff_json(before, after, diffs, &opts.test, opts.topdown, out),
        Format::Text => {
            write_diff_text(before, after, diffs, opts.limit, &opts.test, &mut out)?;
            match opts.topdown {
                Some((b, a)) => writeln!(out, "#\n{}", topdown_totals_line(b, a)),
                None => Ok(()),
            }
        }
    }
}

/// The top-down formula set of a report's fractions (`totals.topdown_formulas` in JSON).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopdownFormulas {
    /// [`FormulaSet::name`](crate::topdown::FormulaSet::name).
    pub name: String,
    /// Why it is not perf's exact formula for the machine
    /// ([`FormulaSet::approximation`](crate::topdown::FormulaSet::approximation)); `None`
    /// when it is.
    pub approximation: Option<&'static str>,
}

impl TopdownFormulas {
    /// The formulas of `plan`.
    pub fn of(plan: &Plan) -> TopdownFormulas {
        TopdownFormulas {
            name: plan.set.name(),
            approximation: plan.set.approximation(),
        }
    }
}

/// Count of `event` in `stack`; zero for a column the stack (or profile) does not have.
fn count(stack: &Stack, event: usize) -> Count {
    stack.counts.get(event).copied().unwrap_or_default()
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// `part / whole * 100`, computed so that whole-number percentages come out exact.
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

fn ratio(num: u128, den: u128) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Cycles per instruction, or `None` when either count is zero: no instructions means
/// unknown, and instructions without cycles is an artefact of sampling the two events
/// independently, not an infinitely fast function.
fn cpi_of(cycles: u128, instructions: u128) -> Option<f64> {
    (cycles > 0 && instructions > 0).then(|| cycles as f64 / instructions as f64)
}

fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}
