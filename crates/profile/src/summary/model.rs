//! The types the summaries share (what a function, a change and a profile's totals are),
//! and the small ratio helpers every walk and writer uses.

use serde::Serialize;

use crate::columns::Columns;
use crate::lines::SourceLines;
use crate::profile::{Count, FrameKind, Stack};
use crate::topdown::{Breakdown, Plan};

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
    /// stack containing the function, each once ([`add_topdown`](super::add_topdown)); `Some(None)`
    /// where they
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
    /// [`diff_runs`](super::diff_runs)); with one run, before's compared share.
    pub before_mean_share: f64,
    /// The same over after's runs.
    pub after_mean_share: f64,
    /// The interval of the change of the mean shares, percentage points, at the comparison's
    /// confidence ([`crate::interval::growth_test`]); `None` when the change was not tested
    /// ([`diff_frames`](super::diff_frames) alone, or a run with nothing in the measure).
    pub change_interval: Option<[f64; 2]>,
    /// With a threshold (`--fail-above`): whether the change's interval lies wholly above it,
    /// which is what trips the gate; `None` without a threshold.
    pub exceeds_threshold: Option<bool>,
    /// Inclusive top-down fractions in before ([`add_diff_topdown`](super::add_diff_topdown): as
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
    pub(super) fn present(&self) -> (bool, bool) {
        match (self.before_wall_ns, self.after_wall_ns) {
            (Some(b), Some(a)) => (b > 0, a > 0),
            _ => (self.before_samples > 0, self.after_samples > 0),
        }
    }
}

/// What a comparison's shares are of: wall time when both profiles have the wall-time
/// columns ([`WallColumns`](crate::WallColumns)), else cycles, the graph's widths. In the diff JSON
/// as
/// `"measure"`: `"cycles"` or `"wall-time"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    Cycles,
    WallTime,
}

impl Measure {
    /// The measure comparing runs read with `before`'s and `after`'s columns: wall time
    /// when both widths are ([`Columns::wall`]: the columns the recordings were read with,
    /// so `--on-cpu-only` compares cycles), else cycles.
    pub fn of(before: &Columns, after: &Columns) -> Measure {
        if before.wall().is_some() && after.wall().is_some() {
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
pub(super) fn count(stack: &Stack, event: usize) -> Count {
    stack.counts.get(event).copied().unwrap_or_default()
}

pub(super) fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// `part / whole * 100`, computed so that whole-number percentages come out exact.
pub(super) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

pub(super) fn ratio(num: u128, den: u128) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Cycles per instruction, or `None` when either count is zero: no instructions means
/// unknown, and instructions without cycles is an artefact of sampling the two events
/// independently, not an infinitely fast function.
pub(super) fn cpi_of(cycles: u128, instructions: u128) -> Option<f64> {
    (cycles > 0 && instructions > 0).then(|| cycles as f64 / instructions as f64)
}

pub(super) fn saturate(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// A confidence as a percentage without trailing zeros: `95%`, `97.5%`.
pub(super) fn percent_text(confidence: f64) -> String {
    let text = format!("{:.4}", confidence * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// The form of a summary: the aligned text table or the JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// How `report` summarises a profile ([`write_report`](super::write_report)).
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

/// How `diff --summary` writes a comparison ([`write_diff`](super::write_diff)).
#[derive(Clone, Debug, Default)]
pub struct DiffSummaryOptions {
    /// Rows of the text table (0: all); the JSON has every frame.
    pub limit: usize,
    /// How the changes were tested ([`diff_runs`](super::diff_runs)): runs per side,
    /// confidence, threshold.
    pub test: ChangeTest,
    /// Each side's whole top-down fractions, when both have the same formulas
    /// ([`add_diff_topdown`](super::add_diff_topdown)).
    pub topdown: Option<(Option<Breakdown>, Option<Breakdown>)>,
    /// Whether each side's weights (before, after) are counts rather than samples (folded
    /// input): its header line says so, as `report`'s does.
    pub counts: (bool, bool),
}

/// How a comparison's changes were tested, for the summary's header and JSON: the runs on
/// each side, the confidence of the change intervals, and the gate's threshold if any.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangeTest {
    /// Runs before, runs after.
    pub runs: (usize, usize),
    pub confidence: f64,
    /// `--fail-above`, percentage points.
    pub fail_above: Option<f64>,
}

impl ChangeTest {
    /// The confidence as the summaries print it: `95%`, `97.5%`.
    pub fn confidence_text(&self) -> String {
        percent_text(self.confidence)
    }
}

impl Default for ChangeTest {
    /// One run per side, the default confidence, no threshold: what
    /// [`diff_frames`](super::diff_frames) alone stands for.
    fn default() -> Self {
        ChangeTest {
            runs: (1, 1),
            confidence: crate::interval::DEFAULT_CONFIDENCE,
            fail_above: None,
        }
    }
}
