//! `annotate`'s flags.

use std::path::PathBuf;

use clap::Args;

use crate::read::SourceArgs;

#[derive(Args)]
pub struct AnnotateArgs {
    /// perf.data file to read (one recording).
    #[arg(default_value = "out.data")]
    pub file: PathBuf,
    #[command(flatten)]
    pub source: SourceArgs,
    /// The function, named as `report` names it (default: the top ones by self weight).
    pub symbol: Option<String>,
    /// Functions shown without SYMBOL.
    #[arg(long, default_value_t = 3)]
    pub limit: usize,
    /// Weigh instructions by this event's column (as `fold --event`).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// Print JSON (an array of functions; schema in docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// Also look for source files under DIR.
    #[arg(long, value_name = "DIR")]
    pub source_dir: Option<PathBuf>,
    /// Put DIR before source paths (after --prefix-strip), as perf annotate's --prefix.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    /// Drop N leading directories of source paths.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub prefix_strip: usize,
}
