//! `cpiflame report` and `cpiflame diff`: summaries of one run, and the comparison of two
//! (perf.data files, ours or perf's, perf script text, or folded files), with a threshold for CI.

use std::path::PathBuf;

use anyhow::{bail, Result};
use cpiflame_cli::compare::{DiffArgs, ReportArgs};
use cpiflame_pipeline::compare::{parse_fail_above, Comparison};
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::time::sides;
use cpiflame_profile::{write_report, Format, ReportOptions};

use crate::draw::load;
use crate::{write_out, Outcome};

pub fn report(args: ReportArgs, env: &Environment) -> Result<Outcome> {
    let l = load(&args.roles, &args.files, args.roots, args.lines, env)?;
    let Some(options) = l.report_options(args.lines) else {
        bail!("{}: no samples", l.file.display());
    };
    let options = ReportOptions {
        limit: args.limit,
        confidence: args.confidence,
        ..options
    };
    if args.lines && l.lines.is_none() {
        bail!(
            "{}: --lines needs a perf.data recording (text input has no addresses)",
            l.file.display()
        );
    }
    let format = if args.json {
        Format::Json
    } else {
        Format::Text
    };
    write_out(&None, |out| {
        Ok(write_report(&l.profile, &options, format, out)?)
    })?;
    Ok(Outcome::Done)
}

/// [`Outcome::GateTripped`] when --fail-above tripped.
pub fn diff(args: DiffArgs, env: &Environment) -> Result<Outcome> {
    let gate = args
        .fail_above
        .as_deref()
        .map(parse_fail_above)
        .transpose()?;
    // `--time A:B`: A for the before runs, B for the after ones, as perf diff splits it.
    let (time_before, time_after) = args.roles.read.time.as_deref().map_or((None, None), sides);
    let load = |first: &PathBuf, more: &[PathBuf], time: Option<&str>| -> Result<Vec<_>> {
        let mut roles = args.roles.clone();
        roles.read.time = time.map(str::to_string);
        let runs = std::iter::once(first).chain(more);
        runs.map(|f| load(&roles, std::slice::from_ref(f), args.roots, false, env))
            .collect()
    };
    let before = load(&args.before, &args.more_before, time_before)?;
    let after = load(&args.after, &args.more_after, time_after)?;
    let c = Comparison::new(before, after, gate, args.confidence)?;
    crate::warn_all(c.topdown_why.as_slice());
    // `--json` alone used to write the SVG: JSON is only ever the summary's.
    let summary = args.summary || args.json;
    if summary {
        write_out(
            &None,
            |out| Ok(c.write_summary(args.json, args.limit, out)?),
        )?;
    }
    if !summary || args.output.is_some() {
        let look = args.layout.look(args.title, env);
        write_out(&args.output, |out| {
            Ok(cpiflame_draw::write_diff_graph(&c, look, out)?)
        })?;
    }
    let over = c.gate_lines();
    for line in &over {
        eprintln!("cpiflame: {line}");
    }
    Ok(match over.is_empty() {
        true => Outcome::Done,
        false => Outcome::GateTripped,
    })
}
