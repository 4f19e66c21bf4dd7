//! `annotate`: a function's instructions and source lines with their samples.

use anyhow::Result;
use clap::Args;
use cpiflame_annotate::{annotate_file, write, AnnotateOptions, SourcePaths};
use cpiflame_pipeline::options::Environment;

use crate::{draw::SourceArgs, warned, write_out, Outcome};

#[derive(Args)]
pub struct AnnotateArgs {
    /// perf.data file to read (one recording).
    #[arg(default_value = "out.data")]
    file: std::path::PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// The function, named as `report` names it (default: the top ones by self weight).
    symbol: Option<String>,
    /// Functions shown without SYMBOL.
    #[arg(long, default_value_t = 3)]
    limit: usize,
    /// Weigh instructions by this event's column (as `fold --event`).
    #[arg(long, value_name = "NAME")]
    event: Option<String>,
    /// Print JSON (an array of functions; schema in docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Also look for source files under DIR.
    #[arg(long, value_name = "DIR")]
    source_dir: Option<std::path::PathBuf>,
    /// Put DIR before source paths (after --prefix-strip), as perf annotate's --prefix.
    #[arg(long, value_name = "DIR")]
    prefix: Option<std::path::PathBuf>,
    /// Drop N leading directories of source paths.
    #[arg(long, value_name = "N", default_value_t = 0)]
    prefix_strip: usize,
}

pub fn run(a: AnnotateArgs, env: &Environment) -> Result<Outcome> {
    let sources = SourcePaths::new(a.source_dir, a.prefix, a.prefix_strip);
    let what = AnnotateOptions::new(a.symbol, a.limit, a.event, sources);
    crate::progress::show_on_terminal(env);
    let options = a.source.options(&a.file, Default::default(), env);
    let functions = warned(|w| annotate_file(&options, &what, w))?;
    write_out(&None, |out| Ok(write(&functions, a.json, out)?))?;
    Ok(Outcome::Done)
}
