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
//! name, [`WallColumns`](crate::WallColumns)). When all three are there:
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

mod diff;
mod json;
mod model;
mod report;
mod sums;
mod text;

pub use diff::{diff_frames, diff_runs};
pub use json::{DIFF_SCHEMA, REPORT_SCHEMA};
pub use model::{
    ChangeTest, DiffSummaryOptions, Format, FrameDiff, FrameSummary, LineSummary, Measure,
    ReportOptions, TopdownFormulas, Totals,
};
pub use report::{write_diff, write_report};
pub use sums::{add_diff_topdown, add_topdown, top_frames, totals};
pub use text::{topdown_cell, topdown_totals_line};
