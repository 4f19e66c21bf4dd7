//! `convert`'s flags.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::read::InputArgs;

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format: `pprof` (gzip-compressed profile.proto; every event two sample types,
    /// EVENT_sample and EVENT_event), `firefox` (the Firefox Profiler's processed profile:
    /// threads, samples at their times weighted by cycles, stall share as categories,
    /// counter tracks), `speedscope` (speedscope's JSON: a profile per thread weighted by
    /// cycles or wall time, and one by stall cycles) or `folded` (what `fold` prints).
    #[arg(long, value_name = "FORMAT", value_enum, hide_possible_values = true)]
    pub to: Format,
    /// Write to FILE (`-`: standard output; a name ending in .gz is gzip-compressed for
    /// firefox and speedscope). Default: profile.pb.gz for pprof, profile.json for firefox,
    /// profile.speedscope.json for speedscope, standard output for folded.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// With `--to folded`: the stacks of this event only, as `fold --event`.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

/// What `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Pprof,
    Firefox,
    Speedscope,
    Folded,
}
