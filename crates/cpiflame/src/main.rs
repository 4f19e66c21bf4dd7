//! `cpiflame`: the command line. Parses flags, calls the pipeline crates, prints. Errors are
//! printed once, as one line naming the file, offset, flag or event at fault, with exit
//! status 2; a closed stdout (`cpiflame fold | head`) is not an error.

mod compare;
mod events;
mod load;
mod record;
mod script;
mod stat;

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::load::{load_any, LoadOptions, Loaded};

#[derive(Parser)]
#[command(
    name = "cpiflame",
    version,
    about = "CPI flame graphs: width = cycles, colour = share of those cycles stalled",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Draw a CPI flame graph (SVG) from a perf.data file.
    Render(RenderArgs),
    /// Print folded stacks (`frame;frame;frame count`) for FlameGraph or inferno.
    Fold(FoldArgs),
    /// Print every sample with its resolved stack, laid out like `perf script`.
    Script(ScriptArgs),
    /// Record a command (or a running process) into perf.data, with this CPU's stall and
    /// cycles events and DWARF call chains.
    Record(record::RecordArgs),
    /// Summarize a run: the top frames by cycles, self and total, with their stall share.
    Report(compare::ReportArgs),
    /// Compare two runs: a differential flame graph, a summary, a CI threshold.
    Diff(compare::DiffArgs),
    /// Count events for a command and everything it starts (perf stat style).
    Stat(stat::StatArgs),
    /// Show the CPU, its PMUs, the stall/cycles pair `record` would use and why, and every
    /// preset with its encoding and whether it opens here.
    List,
}

/// How to read a recording: which events play which role, where the binaries are.
#[derive(Args)]
pub struct SourceArgs {
    /// Event that gives the colour (stall cycles); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub stalls: Option<String>,
    /// Event that gives the width (unhalted cycles); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub cycles: Option<String>,
    /// Look up the recorded binaries under DIR (for files recorded on another machine).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Leave kernel frames out of the stacks.
    #[arg(long)]
    pub no_kernel: bool,
}

/// Flags shared by every command that reads a perf.data file.
#[derive(Args)]
struct InputArgs {
    /// perf.data file to read.
    #[arg(default_value = "out.data")]
    file: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// Root frame `comm-PID` instead of `comm`.
    #[arg(long)]
    pid: bool,
    /// Root frame `comm-PID/TID` instead of `comm`.
    #[arg(long)]
    tid: bool,
}

#[derive(Args)]
struct RenderArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Write the SVG to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Title of the graph.
    #[arg(long, default_value = "CPI Flame Graph")]
    title: String,
    /// Width of the image in pixels.
    #[arg(long, default_value_t = 1200)]
    width: u32,
    /// Leave out frames narrower than this many pixels (keeps huge profiles light).
    #[arg(long, default_value_t = 0.1)]
    minwidth: f64,
    /// Icicle graph: root at the top.
    #[arg(long)]
    inverted: bool,
    /// The seed's picture: differential, normalised (difffolded.pl -n | flamegraph.pl).
    #[arg(long)]
    classic: bool,
}

#[derive(Args)]
struct FoldArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Print the stacks of this event only (`stack count`). Without it, a file with a stall
    /// and a cycles event gives `stack stalls cycles`.
    #[arg(long, value_name = "NAME")]
    event: Option<String>,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
struct ScriptArgs {
    /// perf.data file to read.
    #[arg(default_value = "out.data")]
    file: PathBuf,
    /// Look up the recorded binaries under DIR.
    #[arg(long, value_name = "DIR")]
    symfs: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("cpiflame: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs a command; returns the exit status (a recorded command's own).
fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Render(args) => render(args).map(|()| 0),
        Command::Fold(args) => fold(args).map(|()| 0),
        Command::Script(args) => script::script(&args.file, args.symfs).map(|()| 0),
        Command::Record(args) => record::record_command(args),
        Command::Stat(args) => stat::stat_command(args),
        Command::Report(args) => compare::report(args).map(|()| 0),
        Command::Diff(args) => compare::diff(args),
        Command::List => {
            let mut out = io::stdout().lock();
            events::list(&mut out)?;
            out.flush()?;
            Ok(0)
        }
    }
}

fn load_options(input: &InputArgs) -> LoadOptions {
    LoadOptions {
        file: input.file.clone(),
        stalls: input.source.stalls.clone(),
        cycles: input.source.cycles.clone(),
        symfs: input.source.symfs.clone(),
        kernel: !input.source.no_kernel,
        pid: input.pid,
        tid: input.tid,
    }
}

/// Standard output, or a file created at `path`.
pub fn output(path: &Option<PathBuf>) -> Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("{}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    })
}

fn render(args: RenderArgs) -> Result<()> {
    let Loaded {
        profile,
        roles,
        notes,
        ..
    } = load_any(&load_options(&args.input))?;
    let Some(cycles) = roles.cycles else {
        bail!("{}: no samples to draw", args.input.file.display());
    };
    let options = cpiflame_render::Options {
        title: args.title,
        subtitle: (!notes.is_empty()).then(|| notes.join(" · ")),
        width: args.width,
        min_width: args.minwidth,
        inverted: args.inverted,
        instructions: roles.instructions,
    };
    let mut out = output(&args.output)?;
    if args.classic {
        cpiflame_render::render_classic(&profile, cycles, roles.stalls, &options, &mut out)?;
    } else {
        cpiflame_render::render_cpi(&profile, cycles, roles.stalls, &options, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

fn fold(args: FoldArgs) -> Result<()> {
    let loaded = load_any(&load_options(&args.input))?;
    let mut out = output(&args.output)?;
    match &args.event {
        Some(name) => {
            let index = loaded.event_index(name, "--event")?;
            cpiflame_fold::write_folded(&loaded.profile, index, &mut out)?;
        }
        None => match (loaded.roles.stalls, loaded.roles.cycles) {
            (Some(stalls), Some(cycles)) => {
                cpiflame_fold::write_folded_pair(&loaded.profile, stalls, cycles, &mut out)?
            }
            _ if loaded.profile.events.len() == 1 => {
                cpiflame_fold::write_folded(&loaded.profile, 0, &mut out)?
            }
            _ => bail!(
                "{}: has events {}; choose one with --event, or set --stalls and --cycles",
                args.input.file.display(),
                loaded.event_list()
            ),
        },
    }
    out.flush()?;
    Ok(())
}
