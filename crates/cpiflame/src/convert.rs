//! `convert`: a recording in another tool's format: pprof (for `go tool pprof` and fleet
//! profilers) or folded text.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use cpiflame_cli::convert::ConvertArgs;
use cpiflame_cli::draw::FoldArgs;
use cpiflame_cli::read::InputArgs;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::Recording;
use cpiflame_pprof::{encode, from_recording};

use crate::draw::fold;
use crate::{output, warned, Outcome};

pub fn convert(args: ConvertArgs, env: &Environment) -> Result<Outcome> {
    match args.to.as_str() {
        "folded" => fold(
            FoldArgs {
                input: args.input,
                event: args.event,
                output: args.output.filter(|p| p.as_os_str() != "-"),
            },
            env,
        ),
        "pprof" => {
            if args.event.is_some() {
                bail!("--event: only with --to folded (pprof keeps every event)");
            }
            pprof(&args.input, args.output, env)
        }
        other => bail!("--to {other}: unknown format (formats: pprof, folded)"),
    }
}

fn pprof(input: &InputArgs, output_path: Option<PathBuf>, env: &Environment) -> Result<Outcome> {
    let options = input.options("convert --to pprof", env)?;
    crate::progress::show_on_terminal(env);
    let recording = Recording::open(&options)?;
    let profile = warned(|w| from_recording(recording, w))?;
    let path = match output_path {
        Some(p) if p.as_os_str() == "-" => None,
        Some(p) => Some(p),
        None => Some(PathBuf::from("profile.pb.gz")),
    };
    let mut out = output(&path)?;
    out.write_all(&encode(&profile))
        .and_then(|()| out.flush())
        .with_context(|| match &path {
            Some(p) => p.display().to_string(),
            None => "standard output".to_string(),
        })?;
    Ok(Outcome::Done)
}
