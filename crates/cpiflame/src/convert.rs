//! `convert`: a recording in another tool's format: pprof (for `go tool pprof` and fleet
//! profilers), the Firefox Profiler's or speedscope's JSON, or folded text.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use cpiflame_cli::convert::{ConvertArgs, Format};
use cpiflame_cli::draw::FoldArgs;
use cpiflame_cli::read::InputArgs;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::Recording;
use cpiflame_pprof::{encode, from_recording};
use cpiflame_viewers::{firefox, gzip, speedscope};

use crate::draw::fold;
use crate::{output, warned, Outcome};

pub fn convert(args: ConvertArgs, env: &Environment) -> Result<Outcome> {
    if args.to == Format::Folded {
        let output = args.output.filter(|p| p.as_os_str() != "-");
        let (input, event) = (args.input, args.event);
        return fold(
            FoldArgs {
                input,
                event,
                output,
            },
            env,
        );
    }
    let to = match args.to {
        Format::Pprof => "pprof",
        Format::Firefox => "firefox",
        _ => "speedscope",
    };
    if args.event.is_some() {
        bail!("--event: only with --to folded ({to} keeps the roles' events)");
    }
    match args.to {
        Format::Pprof => pprof(&args.input, args.output, env),
        _ => viewer(to, &args.input, args.output, env),
    }
}

/// `--to firefox` and `--to speedscope`: the recording read once with each sample's time,
/// written as the viewer reads it.
fn viewer(
    to: &str,
    input: &InputArgs,
    output_path: Option<PathBuf>,
    env: &Environment,
) -> Result<Outcome> {
    let options = input.options(&format!("convert --to {to}"), env)?;
    crate::progress::show_on_terminal(env);
    let recording = Recording::open(&options)?;
    let recorded = warned(|w| cpiflame_viewers::read(recording, w))?;
    let bytes = match to {
        "firefox" => {
            // The first sample's wall-clock time, estimated as the file's last change less
            // the samples' span (as pprof's time_nanos when the file has no clock data).
            let span = (recorded.samples.last().map_or(0, |l| l.time))
                .saturating_sub(recorded.samples.first().map_or(0, |f| f.time));
            let started = std::fs::metadata(&options.file)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.checked_sub(std::time::Duration::from_nanos(span)));
            firefox::write(&recorded, &firefox::Options { started })?
        }
        _ => speedscope::write(&recorded),
    };
    let path = match output_path {
        Some(p) if p.as_os_str() == "-" => None,
        Some(p) => Some(p),
        None if to == "firefox" => Some(PathBuf::from("profile.json")),
        None => Some(PathBuf::from("profile.speedscope.json")),
    };
    let gzipped = path
        .as_ref()
        .is_some_and(|p| p.extension().is_some_and(|e| e == "gz"));
    let bytes = if gzipped { gzip(&bytes) } else { bytes };
    let mut out = output(&path)?;
    out.write_all(&bytes)
        .and_then(|()| out.flush())
        .with_context(|| match &path {
            Some(p) => p.display().to_string(),
            None => "standard output".to_string(),
        })?;
    Ok(Outcome::Done)
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
