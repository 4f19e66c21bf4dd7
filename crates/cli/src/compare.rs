//! `report`'s and `diff`'s flags.

use std::path::PathBuf;

use clap::Args;
use cpiflame_profile::interval::DEFAULT_CONFIDENCE;

use crate::draw::LayoutArgs;
use crate::read::{confidence, Roots, SourceArgs};

#[derive(Args)]
pub struct ReportArgs {
    /// perf.data, perf script text, or folded files (several, or a folder: added up).
    #[arg(default_value = "out.data", num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Print JSON (schema cpiflame-report/1) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Rows in the table (0: all; --json has every frame).
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// Each function's hottest source line by self weight (perf.data input).
    #[arg(long)]
    pub lines: bool,
    /// Confidence of the stall shares' and CPIs' intervals (`±`).
    #[arg(long, value_name = "P", default_value_t = DEFAULT_CONFIDENCE, value_parser = confidence)]
    pub confidence: f64,
    #[command(flatten)]
    pub roles: SourceArgs,
    #[command(flatten)]
    pub roots: Roots,
}

#[derive(Args)]
#[command(mut_arg("time", |a| a.help("Only samples in these ranges, as perf diff --time: \
    BEFORE:AFTER (each as render's --time; either side empty: all), or one for both")))]
pub struct DiffArgs {
    /// The earlier run (perf.data, perf script text, folded; a folder: its files added up).
    pub before: PathBuf,
    /// The later run (a file or a folder); the graph takes its widths from it.
    pub after: PathBuf,
    /// One more earlier run (repeatable): changes are tested against between-run variance.
    #[arg(long = "before", value_name = "FILE|DIR")]
    pub more_before: Vec<PathBuf>,
    /// One more later run, a file or a folder (repeatable).
    #[arg(long = "after", value_name = "FILE|DIR")]
    pub more_after: Vec<PathBuf>,
    /// Write the SVG to FILE (default: standard output; with --summary or --json, no SVG
    /// unless -o).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the text summary (or JSON with --json) instead of the SVG.
    #[arg(long)]
    pub summary: bool,
    /// Print the summary as JSON (schema cpiflame-diff/1) instead of the SVG: implies --summary.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 3 when a frame's share of the total grew by more than PCT points
    /// (e.g. `5` or `5%`), not by noise: the change's interval lies wholly above PCT.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<String>,
    /// Confidence of the changes' intervals and of the gate's test.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_CONFIDENCE, value_parser = confidence)]
    pub confidence: f64,
    /// Rows in the text summary (0: all; --json has every frame).
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// Title of the graph [default: "Differential CPI Flame Graph", "Differential Wall-Time
    /// Flame Graph" when both runs have off-CPU time].
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    #[command(flatten)]
    pub layout: LayoutArgs,
    #[command(flatten)]
    pub roles: SourceArgs,
    #[command(flatten)]
    pub roots: Roots,
}
