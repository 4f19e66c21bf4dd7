//! Folding: samples with symbolized stacks become one row per distinct stack with a count per
//! event. This is the data model every later stage reads (`render`, `report`, `diff`), and the
//! folded text format that FlameGraph and inferno read.
//!
//! Folding itself only counts: reading files is the reader's job and naming frames the
//! resolver's (`cpiflame-perf-data`, `cpiflame-unwind`), which [`collapse`] drives.
//! Folded text files are read back with [`read_folded`] (the [`read`] module documents the
//! format accepted), and [`summary`] turns a profile into per-function tables and JSON
//! (`cpiflame report`) and compares two profiles (`cpiflame diff`).

mod collapse;
mod folded;
mod profile;
pub mod read;
pub mod summary;

pub use collapse::{collapse, event_names, walk_samples, CollapseOptions, CollapseStats};
pub use folded::{write_folded, write_folded_pair};
pub use profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile, Stack};
pub use read::{looks_folded, read_folded, FoldedError, FoldedErrorKind};
pub use summary::{
    diff_frames, top_frames, totals, write_diff_json, write_diff_text, write_report_json,
    write_report_text, FrameDiff, FrameSummary, Totals, DIFF_SCHEMA, REPORT_SCHEMA,
};
