//! `render`, `fold`, `script` and `timeline`: one recording in, a picture or text out.

use std::path::PathBuf;

use clap::Args;
use cpiflame_draw::Look;
use cpiflame_pipeline::options::Environment;
use cpiflame_profile::interval::DEFAULT_CONFIDENCE;

use crate::read::{confidence, InputArgs, ReadArgs};

/// How a flame graph is laid out (`render` and `diff`).
#[derive(Args)]
pub struct LayoutArgs {
    /// Width of the image in pixels (at least 200).
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(200..))]
    pub width: u32,
    /// Leave out frames narrower than this many pixels (keeps huge profiles light).
    #[arg(long, default_value_t = 0.1)]
    pub minwidth: f64,
    /// Icicle graph: root at the top.
    #[arg(long)]
    pub inverted: bool,
}

impl LayoutArgs {
    /// The graph's look: this layout, `title` (`None`: the picture's own) and what the
    /// environment says.
    pub fn look(&self, title: Option<String>, env: &Environment) -> Look {
        Look {
            title,
            width: self.width,
            min_width: self.minwidth,
            inverted: self.inverted,
            single_threaded: env.single_threaded,
            confidence: None,
            topdown_colour: None,
        }
    }
}

#[derive(Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Write the SVG to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Title of the graph [default: what it is: "CPI Flame Graph", "Wall-Time Flame Graph"
    /// (off-CPU time), "Top-Down Flame Graph", "Memory Load Flame Graph" (--mem)].
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// The original CPI flame graph: FlameGraph's differential colouring of stalls against
    /// cycles, normalised (`difffolded.pl -n | flamegraph.pl`), drawn with inferno.
    #[arg(long)]
    pub classic: bool,
    /// The memory flame graph of a memory recording (`record --mem`, `perf mem record`):
    /// load samples only, width = summed load latency, colour = where the loads were
    /// served (L1 red ... remote DRAM / HITM blue).
    #[arg(long, conflicts_with_all = ["classic", "stalls", "cycles", "instructions"])]
    pub mem: bool,
    /// Confidence of each frame's stall-share (or CPI) interval; frames whose interval is
    /// too wide for the colour scale are drawn washed out.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_CONFIDENCE, value_parser = confidence)]
    pub confidence: f64,
    /// A strip of the stall share (or CPI) over time above the frames (one recording whose samples carry their times: perf.data or perf script text).
    #[arg(long, conflicts_with_all = ["classic", "mem"])]
    pub strip: bool,
    /// Top-down recordings: colour = this category's share on the stall scale (retiring,
    /// bad-speculation, frontend, backend, a level-2 node, smt-contention) instead of the
    /// dominant category.
    #[arg(long, value_name = "CATEGORY", conflicts_with_all = ["classic", "mem", "strip"])]
    pub topdown_color: Option<String>,
}

#[derive(Args)]
pub struct FoldArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Print the stacks of this event only (`stack count`). Without it, a file with a stall
    /// and a cycles event gives `stack stalls cycles`, and one with cycles and instructions
    /// but no stall event `stack instructions cycles` (first column = "before" for
    /// difffolded.pl and flamegraph.pl, widths from the second). Counts are samples.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Args)]
pub struct ScriptArgs {
    /// perf.data file to read (one recording).
    #[arg(default_value = "out.data")]
    pub file: PathBuf,
    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(Args)]
#[command(mut_arg("files", |a| a.value_name("FILE")
    .help("The one recording to read (its samples must carry their times)")))]
pub struct TimelineArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Write the HTML page to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Title of the page [default: "CPI Timeline", "Wall-Time Timeline" with off-CPU time].
    #[arg(long, value_name = "TITLE")]
    pub title: Option<String>,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Heat map rows per second (a divisor of 1000000).
    #[arg(long, default_value_t = cpiflame_timeline::DEFAULT_ROWS, value_parser = cpiflame_timeline::parse_rows)]
    pub rows: u32,
}
