//! Folding: samples with symbolized stacks become one row per distinct stack with a count per
//! event. This is the data model every later stage reads (`render`, `report`, `diff`), and the
//! folded text format that FlameGraph and inferno read.
//!
//! Folding itself only counts: reading files is the reader's job and naming frames the
//! resolver's (`cpiflame-perf-data`, `cpiflame-unwind`), which [`collapse`] drives.

mod collapse;
mod folded;
mod profile;

pub use collapse::{collapse, event_names, walk_samples, CollapseOptions, CollapseStats};
pub use folded::{write_folded, write_folded_pair};
pub use profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile, Stack};
