//! The command line: every subcommand and flag of `cpiflame` with its `--help` text (what
//! docs/cli.md documents, and a test keeps equal), parsed by clap into typed arguments, and
//! what the flags mean for the stages: the options of a read (`read`), the look of a picture
//! (`draw`), a recording's request (`record`).
//!
//! The binary runs the commands with these; this crate only says what a user can type. It
//! never reads, records, prints or exits.

pub mod annotate;
pub mod c2c;
pub mod compare;
pub mod convert;
pub mod draw;
pub mod read;
pub mod record;
pub mod stat;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cpiflame",
    version,
    about = "CPI flame graphs: width = cycles, colour = share of those cycles stalled",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Draw a CPI flame graph (SVG) from a recording (perf.data, perf script text, folded).
    Render(draw::RenderArgs),
    /// A FlameScope-style heat map over time coloured by stall share or CPI; a dragged
    /// range drawn as its CPI flame graph (one HTML page).
    Timeline(draw::TimelineArgs),
    /// Print folded stacks (`frame;frame;frame count`) for FlameGraph or inferno.
    Fold(draw::FoldArgs),
    /// Convert a recording for other tools: `--to pprof` (gzip protobuf, every event a
    /// sample type), `--to firefox` (the Firefox Profiler), `--to speedscope` or `--to
    /// folded` (what `fold` prints).
    Convert(convert::ConvertArgs),
    /// Print every sample with its resolved stack, laid out like `perf script`.
    Script(draw::ScriptArgs),
    /// Record a command (or a running process) into perf.data, with this CPU's stall and
    /// cycles events and DWARF call chains.
    Record(record::RecordArgs),
    /// A function's instructions and source lines with their share of its samples.
    Annotate(annotate::AnnotateArgs),
    /// Summarize a run: the top frames by cycles, self and total, with their stall share.
    Report(compare::ReportArgs),
    /// Compare two runs: a differential flame graph, a summary, a CI threshold.
    Diff(compare::DiffArgs),
    /// Count events for a command and everything it starts (perf stat style).
    Stat(stat::StatArgs),
    /// perf c2c's report of memory samples: loads and stores by data source, shared cache
    /// lines (HITMs, false sharing) and who touches each offset of them.
    C2c(c2c::C2cArgs),
    /// Show the CPU, its PMUs, the events `record` would use (stalls, else CPI, else
    /// cycles, else cpu-clock) and why, and every preset with its encoding and whether it
    /// opens here (or, with --root, on a saved machine).
    List(ListArgs),
}

#[derive(clap::Args)]
pub struct ListArgs {
    /// Decide for a saved machine: read DIR/proc/cpuinfo and DIR/sys/bus/event_source/devices
    /// (laid out as the kernel lays out the live files) instead of this machine's, opening
    /// nothing.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print one JSON object: "cpu", "pmus", "record" {"mode", "events", "pmu", "why"}.
    #[arg(long)]
    pub json: bool,
}
