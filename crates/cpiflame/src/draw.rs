//! `render`, `fold` and `script`: one recording in, a picture or text out.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use cpiflame_draw::page::{graph_with_strip, write_timeline_page};
use cpiflame_draw::{write_memory_graph, Graph, Look, CPI_TITLE};
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::timeline::{read_timed, TimedLoad};
use cpiflame_pipeline::{
    load_all, write_fold, write_script, FoldError, GroupBy, LoadOptions, Loaded, Roles, ScriptError,
};
use cpiflame_profile::interval::DEFAULT_CONFIDENCE;

use crate::{warned, write_out, Outcome};

/// The flags every reading command takes: where the binaries are, which samples.
#[derive(Args, Clone)]
pub struct ReadArgs {
    /// Look up the recorded binaries under DIR (for files recorded on another machine).
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// Name kernel frames from FILE (/proc/kallsyms text, e.g. copied from the machine that
    /// recorded the file) instead of this machine's kernel.
    #[arg(long, value_name = "FILE")]
    pub kallsyms: Option<PathBuf>,
    /// Only samples in these ranges, as perf script --time: START,STOP (seconds as perf
    /// script prints them; either side empty), several separated by spaces, or percentages
    /// (10%-20%, 0%-10%,30%-40%, 10%/2, 25%).
    #[arg(long, value_name = "RANGES")]
    pub time: Option<String>,
    /// Look for JIT dumps (jit-PID.dump) and perf maps (perf-PID.map) in DIR first
    /// (repeatable); then in the recording's FILE.jit/ folder and its own folder.
    #[arg(long = "jit-dir", value_name = "DIR")]
    pub jit_dirs: Vec<PathBuf>,
}

impl ReadArgs {
    /// How to read `file` with these flags (the defaults for every other choice).
    pub fn options(self, file: PathBuf, env: &Environment) -> LoadOptions {
        LoadOptions::new(file, self.symfs, self.kallsyms, env)
            .with_time(self.time)
            .with_jit_dirs(self.jit_dirs)
    }
}

/// How to read a recording: which events play which role, where the binaries are.
#[derive(Args, Clone)]
pub struct SourceArgs {
    /// Event that gives the colour (stall cycles); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub stalls: Option<String>,
    /// Event that gives the width (unhalted cycles); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub cycles: Option<String>,
    /// Event that CPI divides by (retired instructions); any event of the file, by name.
    #[arg(long, value_name = "NAME")]
    pub instructions: Option<String>,
    /// Leave kernel frames out of the stacks.
    #[arg(long)]
    pub no_kernel: bool,
    /// Leave off-CPU time out: the on-CPU graph of a recording with context-switch data.
    #[arg(long)]
    pub on_cpu_only: bool,
    /// CPU of the top-down events, as perf.data's CPUID (GenuineIntel,6,143,8;
    /// AuthenticAMD,25,17,1; an Arm MIDR 0x410fd490): for text input, or to override.
    #[arg(long, value_name = "CPUID")]
    pub topdown_cpu: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// The root frames of the stacks.
#[derive(Args, Clone, Copy, Default)]
pub struct Roots {
    /// Root frames: cgroup (its path, then `comm [pid]`), process (`comm [pid]`), thread
    /// (`comm [pid]`, then `comm [tid]`) or comm. Default for a system-wide recording (-a,
    /// -C): cgroup when samples carry cgroup ids, else process; else comm.
    #[arg(long, value_name = "HOW")]
    pub group_by: Option<GroupBy>,
    /// Root frame `comm-PID` instead of `comm`.
    #[arg(long)]
    pub pid: bool,
    /// Root frame `comm-PID/TID` instead of `comm`.
    #[arg(long)]
    pub tid: bool,
}

impl SourceArgs {
    /// How to read `file` with these flags and what the environment says.
    pub fn options(&self, file: &Path, roots: Roots, env: &Environment) -> LoadOptions {
        LoadOptions {
            roles: Roles {
                stalls: self.stalls.clone(),
                cycles: self.cycles.clone(),
                instructions: self.instructions.clone(),
            },
            kernel: !self.no_kernel,
            on_cpu_only: self.on_cpu_only,
            topdown_cpu: self.topdown_cpu.clone(),
            group_by: roots.group_by,
            pid: roots.pid,
            tid: roots.tid,
            ..self.read.clone().options(file.to_path_buf(), env)
        }
    }

    /// Reads `files` (perf.data, perf script text or folded; folders of them), added up,
    /// with these flags, each frame's source lines kept when `lines`; warnings are printed,
    /// even when reading then fails.
    pub fn load(
        &self,
        files: &[PathBuf],
        roots: Roots,
        lines: bool,
        env: &Environment,
    ) -> Result<Loaded> {
        crate::progress::show_on_terminal(env);
        let first = files.first().map_or(Path::new("out.data"), |f| f.as_path());
        let options = LoadOptions {
            lines,
            ..self.options(first, roots, env)
        };
        Ok(warned(|w| load_all(&options, files, w))?)
    }
}

/// Flags shared by `render` and `fold`.
#[derive(Args)]
pub struct InputArgs {
    /// perf.data, perf script text, or folded files to read (several, or a folder of them:
    /// added up).
    #[arg(default_value = "out.data", num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub roots: Roots,
}

impl InputArgs {
    /// The options of a command that reads one recording (`what`): more files are an error.
    pub fn options(&self, what: &str, env: &Environment) -> Result<LoadOptions> {
        let [file] = self.files.as_slice() else {
            anyhow::bail!("{what} reads one recording ({} given)", self.files.len());
        };
        Ok(self.source.options(file, self.roots, env))
    }

    /// Reads the one recording with the time of each sample (`timeline`, `render --strip`).
    fn timed(&self, what: &str, lines: bool, env: &Environment) -> Result<TimedLoad> {
        crate::progress::show_on_terminal(env);
        let mut options = self.options(what, env)?;
        options.lines = lines;
        Ok(warned(|w| read_timed(&options, w))?)
    }

    fn load(&self, lines: bool, env: &Environment) -> Result<Loaded> {
        self.source.load(&self.files, self.roots, lines, env)
    }
}

/// `--confidence`'s parser: the error is the flag's one line.
pub fn confidence(text: &str) -> Result<f64, String> {
    cpiflame_pipeline::options::parse_confidence(text).map_err(|e| e.to_string())
}

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
    /// The graph's look: this layout, `title` and what the environment says.
    pub fn look(&self, title: String, env: &Environment) -> Look {
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
    input: InputArgs,
    /// Write the SVG to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Title of the graph.
    #[arg(long, default_value = CPI_TITLE)]
    title: String,
    #[command(flatten)]
    layout: LayoutArgs,
    /// The original CPI flame graph: FlameGraph's differential colouring of stalls against
    /// cycles, normalised (`difffolded.pl -n | flamegraph.pl`), drawn with inferno.
    #[arg(long)]
    classic: bool,
    /// The memory flame graph of a memory recording (`record --mem`, `perf mem record`):
    /// load samples only, width = summed load latency, colour = where the loads were
    /// served (L1 red ... remote DRAM / HITM blue).
    #[arg(long, conflicts_with_all = ["classic", "stalls", "cycles", "instructions"])]
    mem: bool,
    /// Confidence of each frame's stall-share (or CPI) interval; frames whose interval is
    /// too wide for the colour scale are drawn washed out.
    #[arg(long, value_name = "P", default_value_t = DEFAULT_CONFIDENCE, value_parser = confidence)]
    confidence: f64,
    /// A strip of the stall share (or CPI) over time above the frames (one recording whose samples carry their times: perf.data or perf script text).
    #[arg(long, conflicts_with_all = ["classic", "mem"])]
    strip: bool,
    /// Top-down recordings: colour = this category's share on the stall scale (retiring,
    /// bad-speculation, frontend, backend, a level-2 node, smt-contention) instead of the
    /// dominant category.
    #[arg(long, value_name = "CATEGORY", conflicts_with_all = ["classic", "mem", "strip"])]
    topdown_color: Option<String>,
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
    file: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
}

pub fn render(args: RenderArgs, env: &Environment) -> Result<Outcome> {
    if args.mem {
        return render_mem(args, env);
    }
    let look = Look {
        confidence: Some(args.confidence),
        topdown_colour: args.topdown_color.clone(),
        ..args.layout.look(args.title.clone(), env)
    };
    if args.strip {
        let timed = args.input.timed("render --strip", true, env)?;
        write_out(&args.output, |out| {
            Ok(graph_with_strip(&timed, look)?.write(out)?)
        })?;
        return Ok(Outcome::Done);
    }
    // The CPI graph's tooltips list each wide frame's hottest lines; FlameGraph's has none.
    let loaded = args.input.load(!args.classic, env)?;
    let graph = Graph::of(&loaded, args.classic, look)?;
    write_out(&args.output, |out| Ok(graph.write(out)?))?;
    Ok(Outcome::Done)
}

/// `render --mem`: the load samples' flame graph.
fn render_mem(args: RenderArgs, env: &Environment) -> Result<Outcome> {
    // --stalls, --cycles and --instructions conflict with --mem: unset here.
    let options = args.input.options("render --mem", env)?;
    let loads = warned(|w| cpiflame_pipeline::load_loads(&options, w))?;
    let look = args.layout.look(args.title, env);
    write_out(&args.output, |out| {
        Ok(write_memory_graph(&loads, look, out)?)
    })?;
    Ok(Outcome::Done)
}

pub fn fold(args: FoldArgs, env: &Environment) -> Result<Outcome> {
    let loaded = args.input.load(false, env)?;
    write_out(&args.output, |out| {
        match write_fold(&loaded, args.event.as_deref(), out) {
            // A plain io::Error, so that a closed pipe is recognised as one.
            Err(FoldError::Write(e)) => Err(e.into()),
            other => Ok(other?),
        }
    })?;
    Ok(Outcome::Done)
}

pub fn script(args: ScriptArgs, env: &Environment) -> Result<Outcome> {
    crate::progress::show_on_terminal(env);
    let options = args.read.options(args.file, env);
    write_out(&None, |out| {
        match warned(|w| write_script(&options, &mut &mut *out, w)) {
            // A plain io::Error, so that a closed pipe is recognised as one.
            Err(ScriptError::Write(e)) => Err(e.into()),
            other => Ok(other?),
        }
    })?;
    Ok(Outcome::Done)
}

#[derive(Args)]
#[command(mut_arg("files", |a| a.value_name("FILE")
    .help("The one recording to read (its samples must carry their times)")))]
pub struct TimelineArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Write the HTML page to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Title of the page.
    #[arg(long, default_value = "CPI Timeline")]
    title: String,
    #[command(flatten)]
    layout: LayoutArgs,
    /// Heat map rows per second (a divisor of 1000000).
    #[arg(long, default_value_t = cpiflame_timeline::DEFAULT_ROWS, value_parser = cpiflame_timeline::parse_rows)]
    rows: u32,
}

pub fn timeline(a: TimelineArgs, env: &Environment) -> Result<Outcome> {
    let timed = a.input.timed("timeline", false, env)?;
    let look = a.layout.look(a.title, env);
    write_out(&a.output, |out| {
        Ok(write_timeline_page(&timed, look, a.rows, out)?)
    })?;
    Ok(Outcome::Done)
}
