//! `convert`'s flags.

use std::path::PathBuf;

use clap::Args;

use crate::read::InputArgs;

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format: `pprof` (gzip-compressed profile.proto; every event two sample types,
    /// EVENT_sample and EVENT_event) or `folded` (what `fold` prints).
    #[arg(long, value_name = "FORMAT")]
    pub to: String,
    /// Write to FILE (`-`: standard output). Default: profile.pb.gz for pprof, standard
    /// output for folded.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// With `--to folded`: the stacks of this event only, as `fold --event`.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}
