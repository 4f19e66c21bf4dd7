//! `cpiflame stat`: counts events for a command and everything it starts, and prints a
//! perf-stat-like table (or JSON), with derived ratios and optional per-thread rows, to
//! standard error as perf stat does (the command's standard output stays its own) or `-o`.

use std::io::Write;

use anyhow::Result;
use cpiflame_cli::stat::StatArgs;
use cpiflame_counters::stat::{stat, StatOptions};
use cpiflame_counters::stat_report::StatPrintout;
use cpiflame_record::stat_groups::{default_groups, event_refs, groups_of_lists};

use crate::{output, Outcome};

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
