//! `render`, `fold`, `script` and `timeline`: one recording in, a picture or text out.

use std::path::{Path, PathBuf};

use anyhow::Result;
use cpiflame_cli::draw::{FoldArgs, RenderArgs, ScriptArgs, TimelineArgs};
use cpiflame_cli::read::{InputArgs, Roots, SourceArgs};
use cpiflame_draw::page::{graph_with_strip, write_timeline_page};
use cpiflame_draw::{write_memory_graph, Graph, Look};
use cpiflame_pipeline::exit::discard;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::timeline::{read_timed, TimedLoad};
use cpiflame_pipeline::{
    load_all, write_fold, write_script, FoldError, LoadOptions, Loaded, ScriptError,
};

use crate::{warned, write_out, Outcome};

/// Reads `files` (perf.data, perf script text or folded; folders of them), added up, with
/// `source`'s flags, each frame's source lines kept when `lines`; warnings are printed, even
/// when reading then fails.
pub fn load(
    source: &SourceArgs,
    files: &[PathBuf],
    roots: Roots,
    lines: bool,
    env: &Environment,
) -> Result<Loaded> {
    crate::progress::show_on_terminal(env);
    let first = files.first().map_or(Path::new("out.data"), |f| f.as_path());
    let options = LoadOptions {
        lines,
        ..source.options(first, roots, env)
    };
    Ok(warned(|w| load_all(&options, files, w))?)
}

/// Reads `input`'s files as [`load`] does.
pub fn load_input(input: &InputArgs, lines: bool, env: &Environment) -> Result<Loaded> {
    load(&input.source, &input.files, input.roots, lines, env)
}

/// Reads the one recording with the time of each sample (`timeline`, `render --strip`).
fn timed(input: &InputArgs, what: &str, lines: bool, env: &Environment) -> Result<TimedLoad> {
    crate::progress::show_on_terminal(env);
    let mut options = input.options(what, env)?;
    options.lines = lines;
    Ok(warned(|w| read_timed(&options, w))?)
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
        let timed = timed(&args.input, "render --strip", true, env)?;
        write_out(&args.output, |out| {
            Ok(graph_with_strip(&timed, look)?.write(out)?)
        })?;
        return Ok(Outcome::Done);
    }
    // The CPI graph's tooltips list each wide frame's hottest lines; FlameGraph's has none.
    let loaded = load_input(&args.input, !args.classic, env)?;
    let graph = Graph::of(&loaded, args.classic, look)?;
    write_out(&args.output, |out| Ok(graph.write(out)?))?;
    discard(graph);
    discard(loaded);
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
    let loaded = load_input(&args.input, false, env)?;
    write_out(&args.output, |out| {
        match write_fold(&loaded, args.event.as_deref(), out) {
            // A plain io::Error, so that a closed pipe is recognised as one.
            Err(FoldError::Write(e)) => Err(e.into()),
            other => Ok(other?),
        }
    })?;
    discard(loaded);
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

pub fn timeline(a: TimelineArgs, env: &Environment) -> Result<Outcome> {
    let timed = timed(&a.input, "timeline", false, env)?;
    let look = a.layout.look(a.title, env);
    write_out(&a.output, |out| {
        Ok(write_timeline_page(&timed, look, a.rows, out)?)
    })?;
    Ok(Outcome::Done)
}
