//! `cpiflame stat`: counts events for a command and everything it starts, and prints a
//! perf-stat-like table (or JSON), with derived ratios and optional per-thread rows, to
//! standard error as perf stat does (the command's standard output stays its own) or `-o`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use cpiflame_counters::stat::{stat, StatOptions};
use cpiflame_counters::stat_report::StatPrintout;
use cpiflame_record::stat_groups::{default_groups, event_refs, groups_of_lists};

use crate::{output, Outcome};

#[derive(Args)]
pub struct StatArgs {
    /// Events to count, perf style; the events of one -e are counted as one group (always
    /// together), or as its {...} groups when it has any (`-e '{a,b},{c,d}'`: two groups;
    /// events outside braces: one group per run). Repeat -e for more groups.
    #[arg(short = 'e', long = "event", value_name = "SPECS")]
    events: Vec<String>,
    /// One row per thread (and child process), with its name and tid.
    #[arg(long)]
    per_thread: bool,
    /// Print JSON instead of the table (schema in docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Write the counts (table or JSON) to FILE instead of standard error, where they go
    /// by default, as perf stat's, so that the command's standard output stays its own.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// The command to run; everything after it is its own arguments. A name that starts
    /// with `-` needs `--` before it. (An unknown flag before the command is an error, as
    /// for `record`.)
    #[arg(trailing_var_arg = true, value_name = "COMMAND", required = true)]
    command: Vec<OsString>,
}

pub fn stat_command(args: StatArgs) -> Result<Outcome> {
    let (groups, note) = if args.events.is_empty() {
        let defaults = default_groups()?;
        (defaults.groups, defaults.note)
    } else {
        (groups_of_lists(&args.events)?, None)
    };
    if let Some(n) = &note {
        eprintln!("cpiflame: {n}");
    }
    // Created before the command runs: a path that cannot be written fails before it starts.
    let mut file = args
        .output
        .as_ref()
        .map(|_| output(&args.output))
        .transpose()?;
    let options = StatOptions {
        groups,
        command: args.command.clone(),
    };
    let report = stat(&options)?;
    let (refs, command) = (event_refs(&options.groups), options.command_text());
    let printout = StatPrintout::new(&report, &refs, &command);
    let mut stderr = std::io::stderr().lock();
    let out: &mut dyn Write = match &mut file {
        Some(f) => f,
        None => &mut stderr,
    };
    printout.write(args.json, args.per_thread, &mut &mut *out)?;
    out.flush()?;
    Ok(Outcome::Command(report.status.code()))
}
