//! `cpiflame report` and `cpiflame diff`: summaries of one run, and the comparison of two
//! (perf.data files, ours or perf's, perf script text, or folded files), with a threshold for CI.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use cpiflame_pipeline::compare::{parse_fail_above, Comparison};
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::time::sides;
use cpiflame_profile::interval::DEFAULT_CONFIDENCE;
use cpiflame_profile::{write_report, Format, ReportOptions};

use crate::draw::{confidence, LayoutArgs, Roots, SourceArgs};
use crate::{write_out, Outcome};

#[derive(Args)]
pub struct ReportArgs {
    /// perf.data, perf script text, or folded files (several, or a folder: added up).
    #[arg(default_value = "out.data", num_args = 1..)]
    files: Vec<PathBuf>,
    /// Print JSON (schema cpiflame-report/1) instead of the table.
    #[arg(long)]
    json: bool,
    /// Rows in the table (0: all; --json has every frame).
    #[arg(long, default_value_t = 25)]
    limit: usize,
    /// Each function's hottest source line by self weight (perf.data input).
    #[arg(long)]
    lines: bool,
    /// Confidence of the stall shares' and CPIs' intervals (`±`).
    #[arg(long, value_name = "P", default_value_t = DEFAULT_CONFIDENCE, value_parser = confidence)]
    confidence: f64,
    #[command(flatten)]
    roles: SourceArgs,
    #[command(flatten)]
    roots: Roots,
}

#[derive(Args)]
#[command(mut_arg("time", |a| a.help("Only samples in these ranges, as perf diff --time: \
    BEFORE:AFTER (each as render's --time; either side empty: all), or one for both")))]
pub struct DiffArgs {
    /// The earlier run (perf.data, perf script text, folded; a folder: its files added up).
    before: PathBuf,
    /// The later run (a file or a folder); the graph takes its widths from it.
    after: PathBuf,
    /// One more earlier run (repeatable): changes are tested against between-run variance.
    #[arg(long = "before", value_name = "FILE|DIR")]
    more_before: Vec<PathBuf>,
    /// One more later run, a file or a folder (repeatable).
    #[arg(long = "after", value_name = "FILE|DIR")]
    more_after: Vec<PathBuf>,
    /// Write the SVG to FILE (default: standard output; with --summary or --json, no SVG
    /// unless -o).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the text summary (or JSON with --json) instead of the SVG.
    #[arg(long)]
    summary: bool,
    /// Print the summary as JSON (schema cpiflame-diff/1) instead of the SVG: implies --summary.
    #[arg(long)]
    json: bool,
    /// Exit with status 3 when a frame's share of the total grew by more than PCT points
    /// (e.g. `5` or `5%`), not by noise: the change's interval lies wholly above PCT.
    #[arg(long, value_name = "PCT")]
    fail_above: Option<String>,
    /// Confidence of the changes' intervals and of the gate's test.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_CONFIDENCE, value_parser = confidence)]
    confidence: f64,
    /// Rows in the text summary (0: all; --json has every frame).
    #[arg(long, default_value_t = 25)]
    limit: usize,
    /// Title of the graph.
    #[arg(long, default_value = "Differential CPI Flame Graph")]
    title: String,
    #[command(flatten)]
    layout: LayoutArgs,
    #[command(flatten)]
    roles: SourceArgs,
    #[command(flatten)]
    roots: Roots,
}

pub fn report(args: ReportArgs, env: &Environment) -> Result<Outcome> {
    let l = args.roles.load(&args.files, args.roots, args.lines, env)?;
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
        runs.map(|f| roles.load(std::slice::from_ref(f), args.roots, false, env))
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
