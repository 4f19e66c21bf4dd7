//! The profile: one row per distinct stack of named frames, with a count (samples and summed
//! period) per event. Every stage after reading speaks it: `render` draws it, `report` and
//! `diff` summarise it, `fold` writes it as the folded text FlameGraph and inferno read.
//!
//! - [`Profile`]: the model (frames interned once, stacks root first, one column per event);
//!   [`Columns`]: which column plays which role once a recording is read.
//! - [`write_folded`], [`write_folded_pair`], [`write_folded_periods`] (the wall-time
//!   columns' nanoseconds): folded text out; [`read_folded`]: folded text in (the [`read`]
//!   module documents the format accepted).
//! - [`read_perf_script`]: `perf script` text in (the [`perf_script`] module documents the
//!   layouts accepted); [`looks_like_perf_script`] and [`looks_folded`] tell the texts apart.
//! - [`lines`]: the source line of every frame of a recording's stacks, and the hottest lines
//!   of a frame or a function (the graph's tooltips, `report --lines`).
//! - [`interval`]: confidence intervals for stall shares and CPI (independently sampled
//!   events, leader-sampled groups) and the `diff` gate's test of a frame's growth.
//! - [`timed`]: when each sample was taken (time, thread, stack), FlameScope's cells of
//!   seconds and sub-second slices: `cpiflame timeline` and `render --strip`.
//! - [`topdown`]: top-down (TMA) fractions of a frame's summed counter deltas, per the
//!   kernel's metric JSON of the CPU the events belong to.
//! - [`summary`]: per-function tables and JSON (`cpiflame report`) and the comparison of two
//!   profiles (`cpiflame diff`), of cycles and, with the [`wall`] columns, of wall time.
//!
//! This crate must never depend on perf.data, unwinding or symbolization: a profile comes
//! from anywhere (a recording collapsed by `cpiflame-pipeline`, a folded file), and drawing
//! one links nothing that reads binaries.

pub mod columns;
mod folded;
pub mod interval;
pub mod lines;
pub mod perf_script;
mod profile;
pub mod ratios;
pub mod read;
pub mod summary;
pub mod timed;
pub mod topdown;
pub mod wall;

pub use columns::{Column, Columns, Width};
pub use folded::{folded_name, write_folded, write_folded_pair, write_folded_periods, EMPTY_NAME};
pub use lines::SourceLines;
pub use perf_script::{
    looks_like_perf_script, perf_script_without_event, read_perf_script, read_perf_script_in,
    read_perf_script_timed, read_perf_script_with, HeaderEvent, PerfScript, PerfScriptError,
    PerfScriptErrorKind, PerfScriptOptions, SchedArgs, ThreadEvent,
};
pub use profile::{Count, EventColumn, Frame, FrameId, FrameKind, PairMoments, Profile, Stack};
pub use read::{looks_folded, read_folded, FoldedError, FoldedErrorKind};
pub use summary::{
    add_diff_topdown, add_topdown, diff_frames, diff_runs, top_frames, topdown_totals_line, totals,
    write_diff, write_report, ChangeTest, DiffSummaryOptions, Format, FrameDiff, FrameSummary,
    LineSummary, Measure, ReportOptions, TopdownFormulas, Totals, DIFF_SCHEMA, REPORT_SCHEMA,
};
pub use wall::WallColumns;
