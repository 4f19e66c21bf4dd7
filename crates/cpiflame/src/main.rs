//! `cpiflame`: the command line. Parses flags, calls the pipeline crates, prints. Errors are
//! printed once, as one line naming the file, offset, flag or event at fault; the exit status
//! of every outcome is decided in [`exit_status`].

mod annotate;
mod c2c;
mod compare;
mod convert;
mod draw;
mod progress;
mod record;
mod stat;

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};
use cpiflame_cli::{Cli, Command};
use cpiflame_pipeline::{error_line, options::Environment};

/// How a command that did not fail ended.
pub enum Outcome {
    /// Done: exit status 0.
    Done,
    /// A recorded or counted command ended with this status (128 + N for signal N); cpiflame
    /// ends with the same.
    Command(i32),
    /// `diff --fail-above` found a frame that grew by more than the threshold.
    GateTripped,
}

/// Exit status when `diff --fail-above` trips.
const STATUS_GATE: u8 = 3;
/// Exit status when the command to record or count cannot be executed, as a shell's.
const STATUS_CANNOT_EXECUTE: u8 = 127;
/// Exit status of every other error.
const STATUS_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(argument_error(e)),
    };
    // The command's large structures are left to the exit, not freed one by one.
    cpiflame_pipeline::exit::exit_frees_memory();
    let result = run(cli);
    cpiflame_pipeline::finish_progress();
    ExitCode::from(exit_status(result))
}

fn run(cli: Cli) -> Result<Outcome> {
    // The environment, read once for the whole command (the only place it is read).
    let env = &Environment::read();
    match cli.command {
        Command::Render(args) => draw::render(args, env),
        Command::Fold(args) => draw::fold(args, env),
        Command::Timeline(args) => draw::timeline(args, env),
        Command::Script(args) => draw::script(args, env),
        Command::Convert(args) => convert::convert(args, env),
        Command::Record(args) => record::record_command(args, env),
        Command::Stat(args) => stat::stat_command(args),
        Command::Annotate(args) => annotate::run(args, env),
        Command::Report(args) => compare::report(args, env),
        Command::Diff(args) => compare::diff(args, env),
        Command::C2c(args) => c2c::c2c(args, env),
        Command::List(args) => {
            let mut out = io::stdout().lock();
            let root = args.root.as_deref();
            if args.json {
                cpiflame_record::machine::write_list_json(&mut out, root)?;
            } else {
                cpiflame_record::machine::write_list(&mut out, root)?;
            }
            out.flush()?;
            Ok(Outcome::Done)
        }
    }
}

/// The one place that turns outcomes and errors into exit statuses; errors are printed here,
/// once.
fn exit_status(result: Result<Outcome>) -> u8 {
    match result {
        Ok(Outcome::Done) => 0,
        Ok(Outcome::Command(status)) => status.clamp(0, 255) as u8,
        Ok(Outcome::GateTripped) => STATUS_GATE,
        // `cpiflame fold | head`: the reader is done, and so are we.
        Err(e)
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
        {
            0
        }
        Err(e) => {
            eprintln!("cpiflame: error: {}", error_line(e.as_ref()));
            let cannot_execute = matches!(
                e.downcast_ref::<cpiflame_record::RecordError>(),
                Some(cpiflame_record::RecordError::Exec { .. })
            ) || matches!(
                e.downcast_ref::<cpiflame_counters::stat::StatError>(),
                Some(cpiflame_counters::stat::StatError::Exec { .. })
            );
            if cannot_execute {
                STATUS_CANNOT_EXECUTE
            } else {
                STATUS_ERROR
            }
        }
    }
}

/// A command line clap refused, as one line naming the flag (`cpiflame record: error:
/// unexpected argument '--some-typo' found`), exit status 2; `--help` and `--version` as clap
/// prints them. clap's tips, usage and "For more information" lines are left out: `record`'s
/// tip to pass `-- --some-typo` would run a command of that name, and the usage line shows
/// flags with defaults as if they were required. A did-you-mean is kept.
fn argument_error(e: clap::Error) -> u8 {
    if !e.use_stderr() || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // --help and --version (0), and the help shown for a bare `cpiflame` (2).
        let _ = e.print();
        return e.exit_code() as u8;
    }
    // Lists (missing arguments, possible values) follow the first line, indented; tips,
    // then usage after a blank line.
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim);
    let first = lines.next().unwrap_or_default();
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    for more in lines.take_while(|l| !l.is_empty() && !l.starts_with("tip:")) {
        line = format!("{line} {more}");
    }
    let suggested = [ContextKind::SuggestedArg, ContextKind::SuggestedSubcommand]
        .into_iter()
        .find_map(|kind| match e.get(kind)? {
            ContextValue::String(s) => Some(s.clone()),
            ContextValue::Strings(v) => v.first().cloned(),
            _ => None,
        });
    if let Some(s) = suggested {
        line = format!("{line} (did you mean '{s}'?)");
    }
    // The subcommand, when one was named: flags are per subcommand.
    let command = std::env::args_os()
        .nth(1)
        .and_then(|a| a.into_string().ok())
        .filter(|a| Cli::command().find_subcommand(a).is_some())
        .map_or_else(String::new, |a| format!(" {a}"));
    eprintln!("cpiflame{command}: error: {line}");
    STATUS_ERROR
}

/// Prints warnings, one line each.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("cpiflame: warning: {w}");
    }
}

/// Runs `read` and prints the warnings it pushed, also when it then fails.
pub fn warned<T, E>(read: impl FnOnce(&mut Vec<String>) -> Result<T, E>) -> Result<T, E> {
    let mut warnings = Vec::new();
    let result = read(&mut warnings);
    warn_all(&warnings);
    result
}

/// Writes to standard output, or a file created at `path`, and flushes: a write error is an
/// error, not lost when the writer is dropped.
pub fn write_out(
    path: &Option<PathBuf>,
    write: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    let mut out = output(path)?;
    write(&mut out)?;
    Ok(out.flush()?)
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
