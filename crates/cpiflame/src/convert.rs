//! `convert`: a recording in another tool's format: pprof (for `go tool pprof` and fleet
//! profilers), the Firefox Profiler's or speedscope's JSON, or folded text.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::Recording;
use cpiflame_pprof::{encode, from_recording};
use cpiflame_viewers::{firefox, gzip, speedscope};

use crate::draw::{fold, FoldArgs, InputArgs};
use crate::{output, warned, Outcome};

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Output format: `pprof` (gzip-compressed profile.proto; every event two sample types,
    /// EVENT_sample and EVENT_event), `firefox` (the Firefox Profiler's processed profile:
    /// threads, samples at their times weighted by cycles, stall share as categories,
    /// counter tracks), `speedscope` (speedscope's JSON: a profile per thread weighted by
    /// cycles or wall time, and one by stall cycles) or `folded` (what `fold` prints).
    #[arg(long, value_name = "FORMAT")]
    to: String,
    /// Write to FILE (`-`: standard output; a name ending in .gz is gzip-compressed for
    /// firefox and speedscope). Default: profile.pb.gz for pprof, profile.json for firefox,
    /// profile.speedscope.json for speedscope, standard output for folded.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// With `--to folded`: the stacks of this event only, as `fold --event`.
    #[arg(long, value_name = "NAME")]
    event: Option<String>,
}

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
        to @ ("pprof" | "firefox" | "speedscope") => {
            if args.event.is_some() {
                bail!("--event: only with --to folded ({to} keeps the roles' events)");
            }
            match to {
                "pprof" => pprof(&args.input, args.output, env),
                _ => viewer(to, &args.input, args.output, env),
            }
        }
        other => {
            bail!("--to {other}: unknown format (formats: pprof, firefox, speedscope, folded)")
        }
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
