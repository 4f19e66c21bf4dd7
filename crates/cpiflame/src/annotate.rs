//! `annotate`: a function's instructions and source lines with their samples.

use anyhow::Result;
use cpiflame_annotate::{annotate_file, write, AnnotateOptions, SourcePaths};
use cpiflame_cli::annotate::AnnotateArgs;
use cpiflame_pipeline::options::Environment;

use crate::{warned, write_out, Outcome};

pub fn run(a: AnnotateArgs, env: &Environment) -> Result<Outcome> {
    let sources = SourcePaths::new(a.source_dir, a.prefix, a.prefix_strip);
    let what = AnnotateOptions::new(a.symbol, a.limit, a.event, sources);
    crate::progress::show_on_terminal(env);
    let options = a.source.options(&a.file, Default::default(), env);
    let functions = warned(|w| annotate_file(&options, &what, w))?;
    write_out(&None, |out| Ok(write(&functions, a.json, out)?))?;
    Ok(Outcome::Done)
}
