//! Folding: samples with symbolized stacks become one row per distinct stack with a count per
//! event. This is the data model every later stage reads (`render`, `report`, `diff`), and the
//! folded text format that FlameGraph and inferno read.
//!
//! This crate never touches the kernel, the file system or symbol files: it takes frames that
//! were already named and counts them.

mod folded;
mod profile;

pub use folded::{write_folded, write_folded_pair};
pub use profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile, Stack};
