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
//! # JSON schemas
//!
//! Both documents are one JSON object on one line, followed by a newline. Shares are numbers
//! in `0..=1` (fractions, not percentages), `delta_points` is in percentage points, missing
//! values are `null`, and arrays are in the documented order. Fields may be added in later
//! versions of the same schema; none will be removed or change meaning.
//!
//! `cpiflame-report/1` ([`write_report_json`]):
//!
//! ```text
//! {
//!   "schema": "cpiflame-report/1",
//!   "totals": {
//!     "cycles_event": "cycles",          // name of the width column
//!     "stalls_event": "resource_stalls_any" | null,
//!     "cycles_samples": 1234,           // all cycles samples of the profile
//!     "cycles_period": 2468002468,       // their summed period
//!     "stall_samples": 400 | null,
//!     "stall_period": 800001200 | null,
//!     "stall_share": 0.324 | null,       // stall_period / cycles_period
//!     "instructions_event": "instructions" | null,   // these five added to /1 later
//!     "instructions_samples": 900 | null,
//!     "instructions_period": 2000000000 | null,
//!     "cpi": 1.234 | null,               // cycles_period / instructions_period
//!     "ipc": 0.810 | null,               // instructions_period / cycles_period
//!     "stall_share_interval": [0.31, 0.34] | null,   // these two added to /1 later:
//!     "cpi_interval": [1.2, 1.27] | null,  // confidence intervals (--confidence), null
//!                                        // where the value is; an unbounded end is null
//!     "on_cpu_ns": 500000000 | null,     // these four added to /1 later: nanoseconds of
//!     "runnable_ns": 100000000 | null,   // the wall-time columns (null without them)
//!     "blocked_ns": 1400000000 | null,
//!     "wall_ns": 2000000000 | null,      // on_cpu_ns + runnable_ns + blocked_ns
//!     "topdown": {"retiring": 0.3, "bad_speculation": 0.1, "frontend_bound": 0.1,
//!                 "backend_bound": 0.5, "level2": {...} | null} | null
//!                                        // added to /1 later, only when the columns are
//!                                        // a top-down group ([`add_topdown`])
//!     "topdown_why": "Intel ... needs the events topdown-be-bound"
//!                                        // added to /1 later, only when the columns have
//!                                        // top-down events that give no fractions: why
//!     "topdown_formulas": {"name": "Intel Golden Cove PERF_METRICS (spr/adl metrics)",
//!                          "approximation": "without int_misc.uop_dropping: ..." | null}
//!                                        // report only, with "topdown": the formula set
//!   },
//!   "frames": [                          // sorted: wall_ns desc (with wall time),
//!     {                                  //   total_samples desc, self_samples desc,
//!                                        //   name, module, kind
//!       "name": "memory_bound",
//!       "module": "demo",                // "" when unknown
//!       "kind": "process" | "user" | "inline" | "kernel" | "jit",
//!       "self_samples": 600, "total_samples": 600,
//!       "self_share": 0.486, "total_share": 0.486,
//!       "stall_share": 0.61 | null,
//!       "cpi": 1.5 | null, "ipc": 0.667 | null,  // inclusive; null without instructions
//!       "stall_share_interval": [0.55, 0.67] | null,  // added to /1 later, as in totals
//!       "cpi_interval": [1.4, 1.6] | null,
//!       "hottest_line": {"file": "/src/hot.c", "line": 7, "share": 0.71,
//!                        "stall_share": 0.8 | null} | null,  // only with report --lines
//!       "on_cpu_ns": 300000000 | null,   // inclusive nanoseconds (added to /1 later;
//!       "runnable_ns": 0 | null,         //   null without the wall-time columns)
//!       "blocked_ns": 900000000 | null,
//!       "wall_ns": 1200000000 | null,    // on_cpu_ns + runnable_ns + blocked_ns
//!       "wall_share": 0.6 | null,        // wall_ns / totals.wall_ns
//!       "topdown": {...} | null,         // inclusive, as in totals; with self_topdown
//!       "self_topdown": {...} | null     //   only when the columns are a top-down group
//!     }, ...
//!   ]
//! }
//! ```
//!
//! `cpiflame-diff/1` ([`write_diff_json`]):
//!
//! ```text
//! {
//!   "schema": "cpiflame-diff/1",
//!   "measure": "cycles" | "wall-time",   // what shares, order and gate compare (added
//!                                        //   later): wall-time when both sides have it
//!   "runs": {"before": 3, "after": 3},   // these three added to /1 later: runs per side
//!   "confidence": 0.95,                  //   (diff --before/--after), the intervals'
//!   "fail_above": 5.0 | null,            //   confidence, the gate's threshold (points)
//!   "before": { ...totals, as in cpiflame-report/1... },  // "topdown" only when both
//!   "after":  { ...totals... },          //   sides have the same top-down formulas
//!                                        //   ([`add_diff_topdown`]); no "topdown_why"
//!   "frames": [                          // sorted: |delta_points| desc (cycles) or
//!                                        //   |wall_delta_points| desc (wall-time), name, kind
//!     {
//!       "name": "memory_bound",
//!       "module": "demo",                // after's, or before's when after has none
//!       "kind": "user",                  // after's, or before's
//!       "before_total_share": 0.25, "after_total_share": 0.4,
//!       "delta_points": 15.0,            // (after - before) * 100
//!       "before_self_share": 0.25, "after_self_share": 0.4,
//!       "before_stall_share": 0.5 | null, "after_stall_share": 0.6 | null,
//!       "before_cpi": 1.1 | null, "after_cpi": 1.4 | null,   // inclusive CPI of each side
//!       "before_samples": 250, "after_samples": 800,  // total (inclusive) cycles samples
//!       "before_wall_share": 0.1 | null,   // inclusive wall share of each side; these
//!       "after_wall_share": 0.3 | null,    //   five added to /1 later, null unless
//!       "wall_delta_points": 20.0 | null,  //   measure is wall-time
//!       "before_wall_ns": 100000000 | null, "after_wall_ns": 600000000 | null,
//!       "before_mean_share": 0.25,       // these four added to /1 later: the mean share
//!       "after_mean_share": 0.4,         //   over each side's runs, in the measure
//!       "change_interval": [8.1, 21.9] | null,  // the change of the means' interval
//!       "exceeds_threshold": true | null //   (points); interval wholly above fail_above
//!       "topdown_before": {...} | null,  // added to /1 later: inclusive, as report's
//!       "topdown_after": {...} | null    //   "topdown", only when both sides have the
//!                                        //   same top-down formulas (first runs)
//!     }, ...
//!   ]
//! }
//! ```
//!
//! Every function of either side is in `frames`: one that vanished has `after_samples` 0,
//! a new one `before_samples` 0 (with wall time: `after_wall_ns` 0, `before_wall_ns` 0).
//! With several runs per side ([`diff_runs`]) every field but the four last is of the first
//! run of each side (as are `before` and `after`), and a function only later runs have is
//! listed with zeros there; the four last are over all runs.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::io::{self, Write};

use serde::Serialize;

use crate::columns::{Column, Columns};
use crate::interval::{growth_test, PairedMoments, Share};
use crate::profile::{Count, Frame, FrameKind, Profile, Stack};
use crate::ratios::{RatioIntervals, RatioKind};
use crate::topdown::{Breakdown, Plan};
use crate::wall::WallColumns;

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

/// What a report says of its input beside the numbers: whether the weights are counts
/// (folded text: a count per line, not samples), and the top-down formula set, as the
/// graph's subtitle names it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportLabels {
    /// The weights are counts, not samples: the header and the column say "counts".
    pub counts: bool,
    /// The top-down formulas the fractions come from; `None` without fractions.
    pub topdown: Option<TopdownFormulas>,
    /// Why top-down events give no fractions (`totals.topdown_why` in JSON, a line under
    /// the text table).
    pub topdown_why: Option<String>,
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

/// Totals of the cycles and stall columns of `p`.
pub fn totals(p: &Profile, cycles: usize, stalls: Option<usize>) -> Totals {
    totals_of(p, Columns::new(cycles, stalls))
}

/// Totals of the cycles, stall and instructions columns of `p`, intervals at the default
/// confidence.
pub fn totals_of(p: &Profile, columns: Columns) -> Totals {
    totals_at(p, columns, crate::interval::DEFAULT_CONFIDENCE)
}

/// [`totals_of`] with intervals at `confidence`.
pub fn totals_at(p: &Profile, columns: Columns, confidence: f64) -> Totals {
    let cycles = columns.cycles.index();
    let stalls = columns.stalls.map(Column::index);
    let instructions = columns.instructions.map(Column::index);
    let ratio_index = columns.ratio_denominator().index();
    let (mut cs, mut cp, mut ss, mut sp) = (0u128, 0u128, 0u128, 0u128);
    let (mut is, mut ip, mut rs, mut rp) = (0u128, 0u128, 0u128, 0u128);
    let (mut stall_pair, mut cpi_pair) = (PairedMoments::default(), PairedMoments::default());
    let wall_columns = WallColumns::of(p);
    let mut wall = [0u128; 3];
    for stack in &p.stacks {
        if let Some(w) = wall_columns {
            for (sum, e) in wall.iter_mut().zip(w.all()) {
                *sum += u128::from(count(stack, e).period);
            }
        }
        let c = count(stack, cycles);
        cs += u128::from(c.samples);
        cp += u128::from(c.period);
        let r = count(stack, ratio_index);
        rs += u128::from(r.samples);
        rp += u128::from(r.period);
        if let Some(m) = stalls.and_then(|e| stack.paired_moments(e, ratio_index)) {
            stall_pair.add(m);
        }
        if let Some(m) = instructions.and_then(|e| stack.paired_moments(ratio_index, e)) {
            cpi_pair.add(m);
        }
        if let Some(s) = stalls {
            let s = count(stack, s);
            ss += u128::from(s.samples);
            sp += u128::from(s.period);
        }
        if let Some(i) = instructions {
            let i = count(stack, i);
            is += u128::from(i.samples);
            ip += u128::from(i.period);
        }
    }
    let name = |i: usize| p.events.get(i).map(|e| e.name.clone()).unwrap_or_default();
    let c = |samples: u128, period: u128| Count {
        samples: saturate(samples),
        period: saturate(period),
    };
    let (stall_c, ratio_c, instr_c) = (c(ss, sp), c(rs, rp), c(is, ip));
    let mut intervals = RatioIntervals::new(confidence);
    Totals {
        stall_share_interval: stalls.and_then(|_| ratio(sp, rp)).and_then(|_| {
            let i = intervals.as_mut()?.frame(
                stall_c,
                ratio_c,
                stall_c,
                Some(&stall_pair),
                RatioKind::Share,
            )?;
            Some([i.lo, i.hi])
        }),
        cpi_interval: instructions.and_then(|_| cpi_of(rp, ip)).and_then(|_| {
            let i = intervals.as_mut()?.frame(
                ratio_c,
                instr_c,
                ratio_c,
                Some(&cpi_pair),
                RatioKind::Ratio,
            )?;
            Some([i.lo, i.hi])
        }),
        cycles_event: name(cycles),
        stalls_event: stalls.map(name),
        cycles_samples: saturate(cs),
        cycles_period: saturate(cp),
        stall_samples: stalls.map(|_| saturate(ss)),
        stall_period: stalls.map(|_| saturate(sp)),
        stall_share: stalls.and_then(|_| ratio(sp, rp)),
        instructions_event: instructions.map(name),
        instructions_samples: instructions.map(|_| saturate(is)),
        instructions_period: instructions.map(|_| saturate(ip)),
        cpi: instructions.and_then(|_| cpi_of(rp, ip)),
        ipc: instructions.and_then(|_| cpi_of(ip, rp)),
        on_cpu_ns: wall_columns.map(|_| saturate(wall[0])),
        runnable_ns: wall_columns.map(|_| saturate(wall[1])),
        blocked_ns: wall_columns.map(|_| saturate(wall[2])),
        wall_ns: wall_columns.map(|_| saturate(wall.iter().sum())),
    }
}

/// Sums for one function while walking the stacks.
struct Agg<'a> {
    frame: &'a Frame,
    kind: Option<FrameKind>,
    self_samples: u128,
    total_samples: u128,
    /// Cycles period that landed in the function itself (shares are of cycles, like widths).
    self_period: u128,
    cycles_period: u128,
    /// The cycles stall shares and CPIs divide by (`Columns::ratio_cycles`, else cycles).
    ratio_period: u128,
    stall_period: u128,
    instructions_period: u128,
    /// Samples of the ratio columns, for the ratios' intervals.
    ratio_samples: u128,
    stall_samples: u128,
    instructions_samples: u128,
    /// Leader-sampled groups: the per-sample deltas of (stalls, ratio cycles) and (ratio
    /// cycles, instructions), where the stacks have them.
    stall_pair: PairedMoments,
    cpi_pair: PairedMoments,
    /// Nanoseconds on CPU, runnable and blocked (the wall-time columns), when there are any.
    wall: [u128; 3],
}

/// The sums of a whole profile that shares are of.
struct Whole {
    /// Cycles period: the graph's widths.
    cycles: u64,
    /// Wall time, nanoseconds; `None` without the wall-time columns.
    wall: Option<u64>,
    /// The stall and ratio-cycles columns' totals (the numerators' mean periods where a
    /// function has no sample of its own).
    stall_column: Count,
    ratio_column: Count,
}

/// Sums cycles and stall counts (and wall time, when the profile has the wall-time columns)
/// per function, functions being the frames with equal `key`. Returns the functions that
/// appear in a counted stack, in no particular order, and the profile's totals that shares
/// are of.
fn aggregate<'a, K: Eq + Hash>(
    p: &'a Profile,
    columns: Columns,
    key: impl Fn(&'a Frame) -> K,
) -> (Vec<Agg<'a>>, Whole) {
    let cycles = columns.cycles.index();
    let stalls = columns.stalls.map(Column::index);
    let instructions = columns.instructions.map(Column::index);
    let ratio_index = columns.ratio_denominator().index();
    let mut index: HashMap<K, usize> = HashMap::new();
    let mut aggs: Vec<Agg<'a>> = Vec::new();
    let key_of: Vec<usize> = p
        .frames
        .iter()
        .map(|frame| {
            *index.entry(key(frame)).or_insert_with(|| {
                aggs.push(Agg {
                    frame,
                    kind: None,
                    self_samples: 0,
                    total_samples: 0,
                    self_period: 0,
                    cycles_period: 0,
                    ratio_period: 0,
                    stall_period: 0,
                    instructions_period: 0,
                    ratio_samples: 0,
                    stall_samples: 0,
                    instructions_samples: 0,
                    stall_pair: PairedMoments::default(),
                    cpi_pair: PairedMoments::default(),
                    wall: [0; 3],
                });
                aggs.len() - 1
            })
        })
        .collect();
    // The last stack each function was counted in: recursion counts a stack once.
    let mut counted_in: Vec<usize> = vec![usize::MAX; aggs.len()];
    let mut all_cycles = 0u128;
    let wall_columns = WallColumns::of(p);
    let mut all_wall = 0u128;
    let (mut stall_column, mut ratio_column) = (Count::default(), Count::default());
    for (i, stack) in p.stacks.iter().enumerate() {
        let c = count(stack, cycles);
        let s = stalls.map(|e| count(stack, e)).unwrap_or_default();
        let n = instructions.map(|e| count(stack, e)).unwrap_or_default();
        let r = count(stack, ratio_index);
        let stall_pair = stalls.and_then(|e| stack.paired_moments(e, ratio_index));
        let cpi_pair = instructions.and_then(|e| stack.paired_moments(ratio_index, e));
        // Off-CPU stacks have wall time and no cycles: they count too.
        let w = wall_columns.map_or([0; 3], |w| w.all().map(|e| count(stack, e).period));
        all_cycles += u128::from(c.period);
        all_wall += w.iter().map(|&x| u128::from(x)).sum::<u128>();
        stall_column.add(s);
        ratio_column.add(r);
        if c == Count::default() && s == Count::default() && n == Count::default() && w == [0; 3] {
            continue;
        }
        if let Some(&k) = stack.frames.last().and_then(|&f| key_of.get(f as usize)) {
            aggs[k].self_samples += u128::from(c.samples);
            aggs[k].self_period += u128::from(c.period);
        }
        for &f in &stack.frames {
            let Some(&k) = key_of.get(f as usize) else {
                continue;
            };
            let agg = &mut aggs[k];
            let kind = p.frames[f as usize].kind;
            agg.kind = Some(agg.kind.map_or(kind, |k| k.min(kind)));
            if counted_in[k] == i {
                continue;
            }
            counted_in[k] = i;
            agg.total_samples += u128::from(c.samples);
            agg.cycles_period += u128::from(c.period);
            agg.ratio_period += u128::from(r.period);
            agg.stall_period += u128::from(s.period);
            agg.instructions_period += u128::from(n.period);
            agg.ratio_samples += u128::from(r.samples);
            agg.stall_samples += u128::from(s.samples);
            agg.instructions_samples += u128::from(n.samples);
            if let Some(m) = stall_pair {
                agg.stall_pair.add(m);
            }
            if let Some(m) = cpi_pair {
                agg.cpi_pair.add(m);
            }
            for (sum, x) in agg.wall.iter_mut().zip(w) {
                *sum += u128::from(x);
            }
        }
    }
    aggs.retain(|a| a.kind.is_some());
    let whole = Whole {
        cycles: saturate(all_cycles),
        wall: wall_columns.map(|_| saturate(all_wall)),
        stall_column,
        ratio_column,
    };
    (aggs, whole)
}

impl Agg<'_> {
    fn kind(&self) -> FrameKind {
        self.kind.unwrap_or(self.frame.kind)
    }

    fn stall_share(&self, stalls: Option<Column>) -> Option<f64> {
        stalls.and_then(|_| ratio(self.stall_period, self.ratio_period))
    }

    fn cpi(&self, instructions: Option<Column>) -> Option<f64> {
        instructions.and_then(|_| cpi_of(self.ratio_period, self.instructions_period))
    }

    fn ipc(&self, instructions: Option<Column>) -> Option<f64> {
        self.cpi(instructions).map(|cpi| 1.0 / cpi)
    }

    fn count(samples: u128, period: u128) -> Count {
        Count {
            samples: saturate(samples),
            period: saturate(period),
        }
    }

    fn stall_share_interval(
        &self,
        stalls: Option<Column>,
        whole: &Whole,
        intervals: &mut Option<RatioIntervals>,
    ) -> Option<[f64; 2]> {
        self.stall_share(stalls)?;
        let i = intervals.as_mut()?.frame(
            Self::count(self.stall_samples, self.stall_period),
            Self::count(self.ratio_samples, self.ratio_period),
            whole.stall_column,
            Some(&self.stall_pair),
            RatioKind::Share,
        )?;
        Some([i.lo, i.hi])
    }

    fn cpi_interval(
        &self,
        instructions: Option<Column>,
        whole: &Whole,
        intervals: &mut Option<RatioIntervals>,
    ) -> Option<[f64; 2]> {
        self.cpi(instructions)?;
        let i = intervals.as_mut()?.frame(
            Self::count(self.ratio_samples, self.ratio_period),
            Self::count(self.instructions_samples, self.instructions_period),
            whole.ratio_column,
            Some(&self.cpi_pair),
            RatioKind::Ratio,
        )?;
        Some([i.lo, i.hi])
    }

    /// Inclusive wall time, nanoseconds.
    fn wall_ns(&self) -> u64 {
        saturate(self.wall.iter().sum())
    }
}

/// What sets a root frame (a process, thread or cgroup: not a function) apart from functions
/// of the same name, and from roots of other kinds: its kind; `None` for functions, whose
/// kinds merge (see [`FrameSummary::kind`]).
fn root_kind(f: &Frame) -> Option<FrameKind> {
    f.kind.is_root().then_some(f.kind)
}

/// Every function of `p` with its self and total cycles samples, shares and inclusive stall
/// share (see the [module docs](self) for the definitions). `cycles` and `stalls` are event
/// column indices; a column the profile does not have counts as zero.
///
/// Sorted by total samples (descending), then self samples (descending), then name, module
/// and kind, so the order is deterministic; when the profile has the wall-time columns, by
/// inclusive wall time (descending) first, and each function has its wall times and share.
/// Process frames are included.
pub fn top_frames(p: &Profile, cycles: usize, stalls: Option<usize>) -> Vec<FrameSummary> {
    top_frames_of(p, Columns::new(cycles, stalls))
}

/// [`top_frames`] with an instructions column too: each function then has its inclusive
/// CPI and IPC. Intervals at the default confidence.
pub fn top_frames_of(p: &Profile, columns: Columns) -> Vec<FrameSummary> {
    top_frames_at(p, columns, crate::interval::DEFAULT_CONFIDENCE)
}

/// [`top_frames_of`] with the stall shares' and CPIs' intervals at `confidence`.
pub fn top_frames_at(p: &Profile, columns: Columns, confidence: f64) -> Vec<FrameSummary> {
    let (stalls, instructions) = (columns.stalls, columns.instructions);
    let (aggs, whole) = aggregate(p, columns, |f| {
        (root_kind(f), f.name.as_str(), f.module.as_str())
    });
    let all = whole.cycles;
    let wall = |part: u128| whole.wall.map(|_| saturate(part));
    // Thousands of functions: the fast form of `interval::ratio_interval`, as the graph's.
    let mut intervals = RatioIntervals::new(confidence);
    let mut out: Vec<FrameSummary> = aggs
        .iter()
        .map(|a| {
            let self_samples = saturate(a.self_samples);
            let total_samples = saturate(a.total_samples);
            FrameSummary {
                name: a.frame.name.clone(),
                module: a.frame.module.clone(),
                kind: a.kind(),
                self_samples,
                total_samples,
                self_share: share(saturate(a.self_period), all),
                total_share: share(saturate(a.cycles_period), all),
                stall_share: a.stall_share(stalls),
                cpi: a.cpi(instructions),
                ipc: a.ipc(instructions),
                stall_share_interval: a.stall_share_interval(stalls, &whole, &mut intervals),
                cpi_interval: a.cpi_interval(instructions, &whole, &mut intervals),
                on_cpu_ns: wall(a.wall[0]),
                runnable_ns: wall(a.wall[1]),
                blocked_ns: wall(a.wall[2]),
                wall_ns: wall(a.wall.iter().sum()),
                wall_share: whole.wall.map(|all| share(a.wall_ns(), all)),
                hottest_line: None,
                topdown: None,
                self_topdown: None,
            }
        })
        .collect();
    // With wall time, the functions where most of it went come first (the order the reader
    // of an off-CPU profile expects); `wall_ns` is `None` for all or for none.
    out.sort_by(|a, b| {
        b.wall_ns
            .cmp(&a.wall_ns)
            .then(b.total_samples.cmp(&a.total_samples))
            .then(b.self_samples.cmp(&a.self_samples))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.module.cmp(&b.module))
            .then(a.kind.cmp(&b.kind))
    });
    out
}

/// Each function's top-down fractions under `plan` ([`FrameSummary::topdown`] and
/// `self_topdown`), `frames` from [`top_frames_at`] of `p`: every column's deltas summed over
/// the function's stacks first (each stack once for the inclusive sums), then the formulas
/// applied to the sums. Returns the whole profile's fractions.
pub fn add_topdown(p: &Profile, plan: &Plan, frames: &mut [FrameSummary]) -> Option<Breakdown> {
    let (sums, all) = column_sums(p, |f| (root_kind(f), f.name.as_str(), f.module.as_str()));
    for f in frames.iter_mut() {
        let root = f.kind.is_root().then_some(f.kind);
        let Some(s) = sums.get(&(root, f.name.as_str(), f.module.as_str())) else {
            continue;
        };
        f.topdown = Some(plan.apply(&s.total));
        f.self_topdown = Some(plan.apply(&s.leaf));
    }
    plan.apply(&all)
}

/// Each function's inclusive top-down fractions in before and after
/// ([`FrameDiff::topdown_before`], `topdown_after`), functions keyed as [`diff_frames`]
/// matches them (process or not, and the name): the summed deltas of the stacks containing
/// the function (each once) under each side's plan, as [`add_topdown`] sums them; `None`
/// inside where a side has nothing to apply them to (the function is not there, or has no
/// slots). `diffs` from [`diff_runs`] or [`diff_frames_of`] of the same two profiles.
/// Returns the two profiles' whole fractions.
pub fn add_diff_topdown(
    before: (&Profile, &Plan),
    after: (&Profile, &Plan),
    diffs: &mut [FrameDiff],
) -> (Option<Breakdown>, Option<Breakdown>) {
    let key = |f: &Frame| (root_kind(f), f.name.clone());
    let (b_sums, b_all) = column_sums(before.0, key);
    let (a_sums, a_all) = column_sums(after.0, key);
    for d in diffs.iter_mut() {
        let k = (d.kind.is_root().then_some(d.kind), d.name.clone());
        let side = |sums: &HashMap<_, FrameSums>, plan: &Plan| {
            Some(sums.get(&k).and_then(|s| plan.apply(&s.total)))
        };
        d.topdown_before = side(&b_sums, before.1);
        d.topdown_after = side(&a_sums, after.1);
    }
    (before.1.apply(&b_all), after.1.apply(&a_all))
}

/// A function's sums of every column: of the stacks with it as the leaf, and of the stacks
/// containing it (each once).
#[derive(Default)]
struct FrameSums {
    leaf: Vec<u64>,
    total: Vec<u64>,
}

/// Every column's periods summed per function (`key` of its frames), leaf and inclusive,
/// and over the whole profile.
fn column_sums<'p, K: Hash + Eq>(
    p: &'p Profile,
    key: impl Fn(&'p Frame) -> K,
) -> (HashMap<K, FrameSums>, Vec<u64>) {
    let n = p.events.len();
    let mut index: HashMap<K, usize> = HashMap::new();
    let key_of: Vec<usize> = p
        .frames
        .iter()
        .map(|f| {
            let next = index.len();
            *index.entry(key(f)).or_insert(next)
        })
        .collect();
    let mut sums: Vec<FrameSums> = (0..index.len())
        .map(|_| FrameSums {
            leaf: vec![0; n],
            total: vec![0; n],
        })
        .collect();
    let mut all = vec![0u64; n];
    let mut counted_in = vec![usize::MAX; index.len()];
    let add = |sums: &mut [u64], stack: &Stack| {
        for (sum, c) in sums.iter_mut().zip(&stack.counts) {
            *sum = sum.saturating_add(c.period);
        }
    };
    for (i, stack) in p.stacks.iter().enumerate() {
        add(&mut all, stack);
        if let Some(&k) = stack.frames.last().and_then(|&f| key_of.get(f as usize)) {
            add(&mut sums[k].leaf, stack);
        }
        for &f in &stack.frames {
            let Some(&k) = key_of.get(f as usize) else {
                continue;
            };
            if counted_in[k] != i {
                counted_in[k] = i;
                add(&mut sums[k].total, stack);
            }
        }
    }
    let by_key = index
        .into_iter()
        .map(|(k, i)| (k, std::mem::take(&mut sums[i])))
        .collect();
    (by_key, all)
}

/// A function's sums in before and after.
type Pair<'p, 'a> = (Option<&'p Agg<'a>>, Option<&'p Agg<'a>>);

/// For each (is process, name): the module to show, the first non-empty module in
/// [`top_frames`] order (most wall time first when there is wall time, then most total
/// samples).
fn modules_by_name(p: &Profile, columns: Columns) -> HashMap<(Option<FrameKind>, String), String> {
    let mut map = HashMap::new();
    for f in top_frames_of(p, columns) {
        if f.module.is_empty() {
            continue;
        }
        map.entry((f.kind.is_root().then_some(f.kind), f.name))
            .or_insert(f.module);
    }
    map
}

/// Compares two profiles function by function, functions matched by name (and process
/// frames only with process frames). Each side's shares are of its own total cycles period,
/// so runs of different lengths compare. Every function of either side appears; one missing
/// on a side has zero shares and samples there and a `None` stall share. When both profiles
/// have the wall-time columns ([`Measure::WallTime`]) each function also has its shares of
/// each side's wall time.
///
/// Sorted by `|delta_points|` (descending), or `|wall_delta_points|` with wall time
/// ([`FrameDiff::change_points`]), then name, then kind.
pub fn diff_frames(
    before: &Profile,
    b_cycles: usize,
    b_stalls: Option<usize>,
    after: &Profile,
    a_cycles: usize,
    a_stalls: Option<usize>,
) -> Vec<FrameDiff> {
    diff_frames_of(
        before,
        Columns::new(b_cycles, b_stalls),
        after,
        Columns::new(a_cycles, a_stalls),
    )
}

/// [`diff_frames`] with instructions columns too: each function then has its inclusive CPI
/// before and after.
pub fn diff_frames_of(
    before: &Profile,
    b_columns: Columns,
    after: &Profile,
    a_columns: Columns,
) -> Vec<FrameDiff> {
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
    /// One run per side, the default confidence, no threshold: what [`diff_frames`] alone
    /// stands for.
    fn default() -> Self {
        ChangeTest {
            runs: (1, 1),
            confidence: crate::interval::DEFAULT_CONFIDENCE,
            fail_above: None,
        }
    }
}

/// A function's key as [`diff_frames`] matches functions: process or not, and the name.
type DiffKey<'p> = (Option<FrameKind>, &'p str);

/// A run's counts per function and its column total ([`measured_counts`]).
type RunCounts<'p> = (HashMap<DiffKey<'p>, (Count, &'p Frame)>, Count);

/// One run's inclusive count of each function (each stack counted once per function) in the
/// column the comparison's shares are of, cycles or the three wall-time columns summed, with
/// a frame of the function (its module and kind where only later runs have it), and that
/// column's total. Stacks without period in the column are left out: they add nothing to a
/// share.
fn measured_counts(p: &Profile, columns: Columns, measure: Measure) -> RunCounts<'_> {
    let wall = WallColumns::of(p);
    let mut counts: HashMap<DiffKey, (Count, &Frame, usize)> = HashMap::new();
    let mut total = Count::default();
    for (i, stack) in p.stacks.iter().enumerate() {
        let c = match measure {
            Measure::Cycles => columns.cycles.of(stack),
            Measure::WallTime => wall.map_or(Count::default(), |w| {
                let mut sum = Count::default();
                for e in w.all() {
                    sum.add(count(stack, e));
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

/// Compares several runs per side: [`diff_frames_of`] of the first run of each side (its
/// shares, stall shares, CPIs and samples, as the differential graph draws them), and for
/// every function of any run the test of its change over all runs
/// ([`crate::interval::growth_test`]: sampling variance with one run per side, between-run
/// variance with several): each side's mean share ([`FrameDiff::before_mean_share`]), the
/// change's interval at `confidence`, and, given `fail_above`, whether the interval lies
/// wholly above it (the gate's rule).
///
/// Each run's share is of its own total in the measure of the first runs
/// ([`Measure::of`]); every run should have the wall-time columns when those do (a run
/// without them has no total there, and its functions no interval). A function only later
/// runs have is added with zero first-run shares. With one run per side the order is
/// [`diff_frames_of`]'s; with several, by the size of the mean change, then name and kind.
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
    let mut diffs = diff_frames_of(b0, b_columns, a0, a_columns);
    let measure = Measure::of(b0, a0);
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
fn absent_from_first_runs(name: &str, frame: &Frame, measure: Measure) -> FrameDiff {
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

// ---- text ----

/// `1.23`, or `-` for a missing value.
fn cpi_cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.2}"),
        _ => "-".to_string(),
    }
}

/// `cell` and the interval's `±` (in the cell's units: `scale` times the value), or the
/// cell alone without one.
fn with_interval(
    cell: String,
    value: Option<f64>,
    interval: Option<[f64; 2]>,
    scale: f64,
) -> String {
    match (value, interval) {
        (Some(v), Some([lo, hi])) => {
            let i = crate::interval::Interval {
                lo: lo * scale,
                hi: hi * scale,
            };
            format!("{cell} {}", i.plus_minus(v * scale, 2))
        }
        _ => cell,
    }
}

/// `12.34%`, or `-` for a missing value.
fn pct_cell(v: Option<f64>) -> String {
    match v {
        Some(v) => format!("{:.2}%", v * 100.0),
        None => "-".to_string(),
    }
}

/// A duration: `850ns`, `12.50us`, `3.20ms`, `1.25s` (two decimals from a microsecond up).
fn duration_cell(ns: Option<u64>) -> String {
    match ns {
        None => "-".to_string(),
        Some(ns) if ns < 1_000 => format!("{ns}ns"),
        Some(ns) if ns < 1_000_000 => format!("{:.2}us", ns as f64 / 1e3),
        Some(ns) if ns < 1_000_000_000 => format!("{:.2}ms", ns as f64 / 1e6),
        Some(ns) => format!("{:.2}s", ns as f64 / 1e9),
    }
}

/// The function column: `name`, `(inlined)` for inline frames, and `[module]` (or
/// `[kernel]` for a kernel frame without one).
/// `app/hot.c:7 67%`, with ` stalled 80%` where known; `-` without a line.
fn line_cell(line: Option<&LineSummary>) -> String {
    let Some(l) = line else {
        return "-".to_string();
    };
    let at = crate::lines::SourceLine {
        file: l.file.clone(),
        line: l.line,
    };
    let mut cell = format!("{} {:.0}%", at.short(), l.share * 100.0);
    if let Some(s) = l.stall_share {
        cell.push_str(&format!(" stalled {:.0}%", s * 100.0));
    }
    cell
}

fn function_cell(name: &str, module: &str, kind: FrameKind) -> String {
    let mut s = name.to_string();
    match kind {
        FrameKind::Inline => s.push_str(" (inlined)"),
        // Root frames that are not processes (a process's is its name alone, as ever).
        FrameKind::Thread => s.push_str(" (thread)"),
        FrameKind::Cgroup => s.push_str(" (cgroup)"),
        _ => {}
    }
    if !module.is_empty() {
        s.push_str(" [");
        s.push_str(module);
        s.push(']');
    } else if kind == FrameKind::Kernel {
        s.push_str(" [kernel]");
    }
    s
}

/// Writes `header` and `rows` as a table: every column but the last right-aligned to its
/// widest cell (at least 7 wide, as `100.00%` is, so tables of a few rows align like long
/// ones), two spaces apart, the last left-aligned; header lines start with `#`, rows
/// with a space, as `perf report` prints them.
fn write_table<W: Write>(header: &[&str], rows: &[Vec<String>], out: &mut W) -> io::Result<()> {
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count().max(7)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |lead: char, cells: &[String]| {
        let mut s = String::new();
        s.push(lead);
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            s.push_str(if i == 0 { " " } else { "  " });
            if i + 1 == n {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:>w$}"));
            }
        }
        s.trim_end().to_string()
    };
    let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let dots: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| ".".repeat(if i + 1 == n { header[i].len() } else { w }))
        .collect();
    writeln!(out, "{}", line('#', &header))?;
    writeln!(out, "{}", line('#', &dots))?;
    writeln!(out, "#")?;
    for row in rows {
        writeln!(out, "{}", line(' ', row))?;
    }
    Ok(())
}

/// The level-1 top-down categories as the text tables name them, with their fractions.
fn level1_cells(b: &Breakdown) -> [(&'static str, f64); 4] {
    [
        ("RET", b.retiring),
        ("BS", b.bad_speculation),
        ("FE", b.frontend_bound),
        ("BE", b.backend_bound),
    ]
}

/// The index in [`level1_cells`] of the largest category (the first of equals).
fn dominant(b: &Breakdown) -> usize {
    let cells = level1_cells(b);
    (1..cells.len()).fold(
        0,
        |best, k| if cells[k].1 > cells[best].1 { k } else { best },
    )
}

/// The largest level-1 top-down category of a frame's inclusive fractions and its share
/// (`BE 62%`); `-` where there are none. `report`'s and `annotate`'s top-down column.
pub fn topdown_cell(b: Option<Breakdown>) -> String {
    let Some(b) = b else {
        return "-".into();
    };
    let (name, value) = level1_cells(&b)[dominant(&b)];
    format!("{name} {:.0}%", value * 100.0)
}

/// The last line of `diff`'s text summary with top-down fractions: the whole runs' change,
/// as the table's cells and with all four categories, `# top-down of the whole runs: ...`.
pub fn topdown_totals_line(before: Option<Breakdown>, after: Option<Breakdown>) -> String {
    let side = |b: Option<Breakdown>| {
        b.map_or("-".to_string(), |b| {
            level1_cells(&b)
                .iter()
                .map(|(name, v)| format!("{name} {:.0}%", v * 100.0))
                .collect::<Vec<_>>()
                .join(" ")
        })
    };
    format!(
        "# top-down of the whole runs: {} -> {}",
        side(before),
        side(after)
    )
}

/// A function's top-down change in `diff`'s table: the category largest in after (in
/// before when after has none) and its share before and after, `BE 41% -> 63%`; `-` for a
/// side without fractions, `-` alone when neither has any.
fn topdown_change_cell(before: Option<Breakdown>, after: Option<Breakdown>) -> String {
    let Some(k) = after.or(before).map(|b| dominant(&b)) else {
        return "-".into();
    };
    let side = |b: Option<Breakdown>| {
        b.map_or("-".to_string(), |b| {
            format!("{:.0}%", level1_cells(&b)[k].1 * 100.0)
        })
    };
    let name = ["RET", "BS", "FE", "BE"][k];
    format!("{name} {} -> {}", side(before), side(after))
}

fn totals_line(t: &Totals, counts: bool) -> String {
    let mut s = format!(
        "{} {} of {}",
        t.cycles_samples,
        if counts { "counts" } else { "samples" },
        if t.cycles_event.is_empty() {
            "?"
        } else {
            &t.cycles_event
        }
    );
    if let Some(stalls) = &t.stalls_event {
        s.push_str(&format!(
            ", {} of cycles stalled ({stalls})",
            pct_cell(t.stall_share)
        ));
    }
    if let Some(instructions) = &t.instructions_event {
        s.push_str(&format!(", CPI {} ({instructions})", cpi_cell(t.cpi)));
    }
    if let (Some(all), Some(on), Some(runnable), Some(blocked)) =
        (t.wall_ns, t.on_cpu_ns, t.runnable_ns, t.blocked_ns)
    {
        let part = |ns: u64| pct_cell(Some(share(ns, all)));
        s.push_str(&format!(
            "; wall time {}: {} on CPU, {} runnable, {} blocked",
            duration_cell(Some(all)),
            part(on),
            part(runnable),
            part(blocked)
        ));
    }
    s
}

fn limited<T>(items: &[T], limit: usize) -> &[T] {
    if limit == 0 {
        items
    } else {
        &items[..items.len().min(limit)]
    }
}

/// Writes `frames` (from [`top_frames`] on the same profile and columns) as a table like
/// `perf report`'s: total %, self %, stall % (only when there is a stall column), inclusive
/// CPI (only when there is an instructions column), cycles samples, `function [module]`. At
/// most `limit` rows (0: all), then a line saying how many were left out.
///
/// When the profile has the wall-time columns ([`WallColumns`]), the header adds the wall
/// time and its parts, and the table starts with the inclusive wall share (`Wall`) and the
/// inclusive on-CPU, runnable and blocked times (`On-CPU`, `Runnable`, `Blocked`); the rows
/// are then in wall-time order ([`top_frames_of`]).
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
pub fn write_report_text<W: Write>(
    p: &Profile,
    cycles: usize,
    stalls: Option<usize>,
    frames: &[FrameSummary],
    limit: usize,
    out: W,
) -> io::Result<()> {
    write_report_text_of(p, Columns::new(cycles, stalls), frames, limit, out)
}

/// [`write_report_text`] with an instructions column: the table gets a CPI column (from
/// [`FrameSummary::cpi`]; `frames` should come from [`top_frames_of`] with the same columns)
/// and the header the overall CPI.
pub fn write_report_text_of<W: Write>(
    p: &Profile,
    columns: Columns,
    frames: &[FrameSummary],
    limit: usize,
    out: W,
) -> io::Result<()> {
    write_report_text_labelled(p, columns, frames, limit, &ReportLabels::default(), out)
}

/// [`write_report_text_of`] saying what `labels` say: "counts" for samples, and a second
/// header line naming the top-down formula set and its approximation (as the graph's
/// subtitle does).
pub fn write_report_text_labelled<W: Write>(
    p: &Profile,
    columns: Columns,
    frames: &[FrameSummary],
    limit: usize,
    labels: &ReportLabels,
    mut out: W,
) -> io::Result<()> {
    let t = totals_of(p, columns);
    writeln!(out, "# cpiflame report: {}", totals_line(&t, labels.counts))?;
    if let Some(f) = &labels.topdown {
        match f.approximation {
            Some(approximation) => writeln!(out, "# top-down: {} · {approximation}", f.name)?,
            None => writeln!(out, "# top-down: {}", f.name)?,
        }
    }
    writeln!(out, "#")?;
    let with_stalls = columns.stalls.is_some();
    let with_cpi = columns.instructions.is_some();
    let with_wall = t.wall_ns.is_some();
    let with_lines = frames.iter().any(|f| f.hottest_line.is_some());
    let with_topdown = frames.iter().any(|f| f.topdown.is_some());
    let shown = limited(frames, limit);
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|f| {
            let mut row = Vec::new();
            if with_wall {
                row.extend([
                    pct_cell(f.wall_share),
                    duration_cell(f.on_cpu_ns),
                    duration_cell(f.runnable_ns),
                    duration_cell(f.blocked_ns),
                ]);
            }
            row.extend([pct_cell(Some(f.total_share)), pct_cell(Some(f.self_share))]);
            if with_stalls {
                row.push(with_interval(
                    pct_cell(f.stall_share),
                    f.stall_share,
                    f.stall_share_interval,
                    100.0,
                ));
            }
            if with_cpi {
                row.push(with_interval(cpi_cell(f.cpi), f.cpi, f.cpi_interval, 1.0));
            }
            if with_topdown {
                row.push(topdown_cell(f.topdown.flatten()));
            }
            row.push(f.total_samples.to_string());
            if with_lines {
                row.push(line_cell(f.hottest_line.as_ref().and_then(Option::as_ref)));
            }
            row.push(function_cell(&f.name, &f.module, f.kind));
            row
        })
        .collect();
    let mut header = Vec::new();
    if with_wall {
        header.extend(["Wall", "On-CPU", "Runnable", "Blocked"]);
    }
    header.extend(["Total", "Self"]);
    if with_stalls {
        header.push("Stall");
    }
    if with_cpi {
        header.push("CPI");
    }
    if with_topdown {
        header.push("Top-down");
    }
    header.push(if labels.counts { "Counts" } else { "Samples" });
    if with_lines {
        header.push("Hottest self line");
    }
    header.push("Function [module]");
    write_table(&header, &rows, &mut out)?;
    if shown.len() < frames.len() {
        writeln!(
            out,
            "#\n# {} more functions not shown",
            frames.len() - shown.len()
        )?;
    }
    match &labels.topdown_why {
        Some(why) => writeln!(out, "#\n# no top-down breakdown: {why}"),
        None => Ok(()),
    }
}

/// Writes `diffs` (from [`diff_frames`]) as a table: before %, after % (total shares, each of
/// its own run: of wall time when both runs have it, [`Measure::WallTime`], else of cycles),
/// change in percentage points, stall share before -> after, inclusive CPI
/// before -> after (only when either side has an instructions column), function
/// `[module]`, marked `(new)` or `(gone)` when it has no samples on one side. At most `limit`
/// rows (0: all). `before` and `after` are the [`totals`] of the two profiles, for the
/// header.
///
/// ```text
/// # cpiflame diff: before: 400 samples of cycles, 20.00% of cycles stalled (stalls)
/// #                after:  800 samples of cycles, 30.00% of cycles stalled (stalls)
/// # shares are of each run's own total; change in percentage points
/// #
/// #  Before    After   Change  Stall before -> after  Function [module]
/// # .......  .......  .......  .....................  .................
/// #
///    25.00%   40.00%   +15.00      10.00% ->  20.00%  memory_bound [demo]
///    10.00%    0.00%   -10.00      35.00% ->       -  old_path [demo] (gone)
/// ```
pub fn write_diff_text<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    limit: usize,
    out: W,
) -> io::Result<()> {
    write_diff_text_of(before, after, diffs, limit, &ChangeTest::default(), out)
}

/// [`write_diff_text`] of a comparison tested as `test` says ([`diff_runs`]): with several
/// runs per side, Before, After and Change are the means over each side's runs (a header
/// line says so); each change with an interval is followed by it (`+12.30 [+8.10, +16.50]`);
/// with a threshold, a column says whether the change's interval lies above it.
pub fn write_diff_text_of<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    limit: usize,
    test: &ChangeTest,
    mut out: W,
) -> io::Result<()> {
    writeln!(
        out,
        "# cpiflame diff: before: {}",
        totals_line(before, false)
    )?;
    writeln!(
        out,
        "#                after:  {}",
        totals_line(after, false)
    )?;
    match Measure::of_totals(before, after) {
        Measure::WallTime => writeln!(
            out,
            "# shares are of each run's own wall time (on CPU + runnable + blocked); \
             change in percentage points"
        )?,
        Measure::Cycles => {
            writeln!(
                out,
                "# shares are of each run's own total; change in percentage points"
            )?;
            // Say why wall time is not compared when one side has it.
            if before.wall_ns.is_some() != after.wall_ns.is_some() {
                let side = if before.wall_ns.is_some() {
                    "before"
                } else {
                    "after"
                };
                writeln!(
                    out,
                    "# (of cycles: only {side} has wall time, so wall time is not compared)"
                )?;
            }
        }
    }
    let several = test.runs != (1, 1);
    if several {
        writeln!(
            out,
            "# {} runs before, {} after: before, after and change are means over each side's \
             runs; stall shares and CPIs are the first runs' (totals above too)",
            test.runs.0, test.runs.1
        )?;
    }
    if diffs.iter().any(|d| d.change_interval.is_some()) {
        let variance = if several {
            "between-run variance"
        } else {
            "sampling variance"
        };
        writeln!(
            out,
            "# [lo, hi]: the change's {} confidence interval ({variance})",
            percent_text(test.confidence)
        )?;
    }
    if let Some(pct) = test.fail_above {
        writeln!(
            out,
            "# grew > {pct}: yes when the whole interval is above {pct} points (--fail-above)"
        )?;
    }
    writeln!(out, "#")?;
    let with_cpi = before.instructions_event.is_some() || after.instructions_event.is_some();
    let with_topdown = diffs.iter().any(|d| d.topdown_before.is_some());
    let shown = limited(diffs, limit);
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|d| {
            let mut function = function_cell(&d.name, &d.module, d.kind);
            // With several runs a side, new and gone are of all its runs, as the shares shown.
            let present = if several {
                (d.before_mean_share > 0.0, d.after_mean_share > 0.0)
            } else {
                d.present()
            };
            match present {
                (false, true) => function.push_str(" (new)"),
                (true, false) => function.push_str(" (gone)"),
                _ => {}
            }
            let ((b_share, a_share), change) = if several {
                (
                    (d.before_mean_share, d.after_mean_share),
                    d.mean_change_points(),
                )
            } else {
                (d.compared_shares(), d.change_points())
            };
            let mut change = format!("{change:+.2}");
            if let Some([lo, hi]) = d.change_interval {
                change.push_str(&format!(" [{lo:+.2}, {hi:+.2}]"));
            }
            let mut row = vec![
                pct_cell(Some(b_share)),
                pct_cell(Some(a_share)),
                change,
                format!(
                    "{:>7} -> {:>7}",
                    pct_cell(d.before_stall_share),
                    pct_cell(d.after_stall_share)
                ),
            ];
            if with_cpi {
                row.push(format!(
                    "{:>6} -> {:>6}",
                    cpi_cell(d.before_cpi),
                    cpi_cell(d.after_cpi)
                ));
            }
            if with_topdown {
                row.push(topdown_change_cell(
                    d.topdown_before.flatten(),
                    d.topdown_after.flatten(),
                ));
            }
            if test.fail_above.is_some() {
                row.push(
                    match d.exceeds_threshold {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "-",
                    }
                    .to_string(),
                );
            }
            row.push(function);
            row
        })
        .collect();
    let gate_header = test.fail_above.map(|pct| format!("Grew > {pct}"));
    let mut header = vec!["Before", "After", "Change", "Stall before -> after"];
    if with_cpi {
        header.push("CPI before -> after");
    }
    if with_topdown {
        header.push("Top-down before -> after");
    }
    if let Some(h) = &gate_header {
        header.push(h);
    }
    header.push("Function [module]");
    write_table(&header, &rows, &mut out)?;
    if shown.len() < diffs.len() {
        writeln!(
            out,
            "#\n# {} more functions not shown",
            diffs.len() - shown.len()
        )?;
    }
    Ok(())
}

/// A confidence as a percentage without trailing zeros: `95%`, `97.5%`.
fn percent_text(confidence: f64) -> String {
    let text = format!("{:.4}", confidence * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

// ---- JSON ----

#[derive(Serialize)]
struct ReportDoc<'a> {
    schema: &'static str,
    totals: ReportTotals<'a>,
    frames: &'a [FrameSummary],
}

/// `report`'s totals: [`Totals`] and, when the recording has top-down events, the whole
/// profile's fractions (`null` where they give none).
#[derive(Serialize)]
struct ReportTotals<'a> {
    #[serde(flatten)]
    totals: &'a Totals,
    #[serde(skip_serializing_if = "Option::is_none")]
    topdown: Option<Option<Breakdown>>,
    /// Why a recording with top-down events has no fractions.
    #[serde(skip_serializing_if = "Option::is_none")]
    topdown_why: Option<&'a str>,
    /// The formulas of `topdown` (`report` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    topdown_formulas: Option<&'a TopdownFormulas>,
}

#[derive(Serialize)]
struct DiffDoc<'a> {
    schema: &'static str,
    measure: Measure,
    runs: Runs,
    confidence: f64,
    fail_above: Option<f64>,
    before: ReportTotals<'a>,
    after: ReportTotals<'a>,
    frames: &'a [FrameDiff],
}

#[derive(Serialize)]
struct Runs {
    before: usize,
    after: usize,
}

/// Schema name of [`write_report_json`]'s document.
pub const REPORT_SCHEMA: &str = "cpiflame-report/1";
/// Schema name of [`write_diff_json`]'s document.
pub const DIFF_SCHEMA: &str = "cpiflame-diff/1";

/// Writes the `cpiflame-report/1` document (see the [module docs](self)): the totals of
/// `p`'s cycles and stall columns and every entry of `frames`, in order.
pub fn write_report_json<W: Write>(
    p: &Profile,
    cycles: usize,
    stalls: Option<usize>,
    frames: &[FrameSummary],
    out: W,
) -> io::Result<()> {
    write_report_json_of(p, Columns::new(cycles, stalls), frames, out)
}

/// [`write_report_json`] with the totals of an instructions column too (CPI and IPC).
pub fn write_report_json_of<W: Write>(
    p: &Profile,
    columns: Columns,
    frames: &[FrameSummary],
    out: W,
) -> io::Result<()> {
    write_report_json_at(
        p,
        columns,
        crate::interval::DEFAULT_CONFIDENCE,
        frames,
        None,
        &ReportLabels::default(),
        out,
    )
}

/// [`write_report_json_of`] with the totals' intervals at `confidence` (the frames carry
/// their own: [`top_frames_at`]) and, for a recording with top-down events, the whole
/// profile's fractions as `totals.topdown` (`Some(None)`: `null`, see [`add_topdown`]);
/// `labels`' formula set as `totals.topdown_formulas`, or why the events give no fractions
/// as `totals.topdown_why` (each left out when `None`).
pub fn write_report_json_at<W: Write>(
    p: &Profile,
    columns: Columns,
    confidence: f64,
    frames: &[FrameSummary],
    topdown: Option<Option<Breakdown>>,
    labels: &ReportLabels,
    mut out: W,
) -> io::Result<()> {
    let doc = ReportDoc {
        schema: REPORT_SCHEMA,
        totals: ReportTotals {
            totals: &totals_at(p, columns, confidence),
            topdown,
            topdown_why: labels.topdown_why.as_deref(),
            topdown_formulas: labels.topdown.as_ref(),
        },
        frames,
    };
    serde_json::to_writer(&mut out, &doc)?;
    out.write_all(b"\n")
}

/// Writes the `cpiflame-diff/1` document (see the [module docs](self)): both sides'
/// [`totals`] and every entry of `diffs`, in order.
pub fn write_diff_json<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    out: W,
) -> io::Result<()> {
    write_diff_json_of(before, after, diffs, &ChangeTest::default(), out)
}

/// [`write_diff_json`] of a comparison tested as `test` says ([`diff_runs`]): `runs`,
/// `confidence` and `fail_above` in the document.
pub fn write_diff_json_of<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    test: &ChangeTest,
    out: W,
) -> io::Result<()> {
    write_diff_json_with(before, after, diffs, test, None, out)
}

/// [`write_diff_json_of`] with, when both sides have the same top-down formulas, each
/// side's whole fractions (from [`add_diff_topdown`]) as `before.topdown` and
/// `after.topdown` (`null` where they give none).
pub fn write_diff_json_with<W: Write>(
    before: &Totals,
    after: &Totals,
    diffs: &[FrameDiff],
    test: &ChangeTest,
    topdown: Option<(Option<Breakdown>, Option<Breakdown>)>,
    mut out: W,
) -> io::Result<()> {
    let doc = DiffDoc {
        schema: DIFF_SCHEMA,
        measure: Measure::of_totals(before, after),
        runs: Runs {
            before: test.runs.0,
            after: test.runs.1,
        },
        confidence: test.confidence,
        fail_above: test.fail_above,
        before: ReportTotals {
            totals: before,
            topdown: topdown.map(|t| t.0),
            topdown_why: None,
            topdown_formulas: None,
        },
        after: ReportTotals {
            totals: after,
            topdown: topdown.map(|t| t.1),
            topdown_why: None,
            topdown_formulas: None,
        },
        frames: diffs,
    };
    serde_json::to_writer(&mut out, &doc)?;
    out.write_all(b"\n")
}
