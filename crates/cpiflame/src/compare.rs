//! `cpiflame report` and `cpiflame diff`: summaries of one run, and the comparison of two
//! (perf.data files, ours or perf's, perf script text, or folded files), with a threshold for CI.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use cpiflame_pipeline::compare::{grown_above, parse_fail_above, Comparison};
use cpiflame_pipeline::options::Environment;

use crate::draw::{confidence, LayoutArgs, SourceArgs};
use crate::{output, Outcome};

#[derive(Args)]
pub struct ReportArgs {
    /// perf.data, perf script text, or folded file.
    #[arg(default_value = "out.data")]
    file: PathBuf,
    /// Print JSON (schema cpiflame-report/1) instead of the table.
    #[arg(long)]
    json: bool,
    /// Rows in the table.
    #[arg(long, default_value_t = 25)]
    limit: usize,
    /// Each function's hottest source line by self weight (perf.data input).
    #[arg(long)]
    lines: bool,
    /// Confidence of the stall shares' and CPIs' intervals (`±`).
    #[arg(long, value_name = "P", default_value = "0.95", value_parser = confidence)]
    confidence: f64,
    #[command(flatten)]
    roles: SourceArgs,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The earlier run (perf.data, perf script text, or folded).
    before: PathBuf,
    /// The later run (perf.data, perf script text, or folded); widths come from it.
    after: PathBuf,
    /// Write the SVG to FILE (default: standard output; with --summary, no SVG unless -o).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the text summary (or JSON with --json) instead of the SVG.
    #[arg(long)]
    summary: bool,
    /// With --summary: JSON (schema cpiflame-diff/1).
    #[arg(long)]
    json: bool,
    /// Exit with status 3 when a frame's share of the total grew by more than PCT
    /// percentage points (e.g. `5` or `5%`).
    #[arg(long, value_name = "PCT")]
    fail_above: Option<String>,
    /// Rows in the text summary.
    #[arg(long, default_value_t = 25)]
    limit: usize,
    /// Title of the graph.
    #[arg(long, default_value = "Differential CPI Flame Graph")]
    title: String,
    #[command(flatten)]
    layout: LayoutArgs,
    #[command(flatten)]
    roles: SourceArgs,
}

pub fn report(args: ReportArgs, env: &Environment) -> Result<Outcome> {
    let l = args.roles.load(&args.file, false, false, args.lines, env)?;
    let Some(columns) = l.columns() else {
        bail!("{}: no samples", args.file.display());
    };
    if args.lines && l.lines.is_none() {
        bail!(
            "{}: --lines needs a perf.data recording (text input has no addresses)",
            args.file.display()
        );
    }
    let mut out = output(&None)?;
    l.write_report(
        columns,
        args.json,
        args.limit,
        args.lines,
        args.confidence,
        &mut out,
    )?;
    out.flush()?;
    Ok(Outcome::Done)
}

/// [`Outcome::GateTripped`] when --fail-above tripped.
pub fn diff(args: DiffArgs, env: &Environment) -> Result<Outcome> {
    let gate = args
        .fail_above
        .as_deref()
        .map(parse_fail_above)
        .transpose()?;
    let before = args.roles.load(&args.before, false, false, false, env)?;
    let after = args.roles.load(&args.after, false, false, false, env)?;
    let c = Comparison::new(before, after)?;
    if args.summary {
        let mut out = output(&None)?;
        c.write_summary(args.json, args.limit, &mut out)?;
        out.flush()?;
    }
    if !args.summary || args.output.is_some() {
        let mut out = output(&args.output)?;
        c.write_graph(args.layout.look(args.title, env), &mut out)?;
        out.flush()?;
    }
    if let Some(limit) = gate {
        let over = grown_above(&c.diffs, limit);
        for line in &over {
            eprintln!("cpiflame: {line}");
        }
        if !over.is_empty() {
            return Ok(Outcome::GateTripped);
        }
    }
    Ok(Outcome::Done)
}
