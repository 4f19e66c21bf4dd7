//! `cpiflame stat`: counts events for a command and everything it starts, and prints a
//! perf-stat-like table (or JSON), with derived ratios and optional per-thread rows.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use cpiflame_counters::stat::{probe, stat, ResolvedEvent, StatOptions};
use cpiflame_counters::stat_report::StatPrintout;
use cpiflame_events::{
    has_hardware_pmu, join_unbraced, resolve_events, resolve_groups, EventRef, Mode, SYSFS_ROOT,
};
use cpiflame_record::machine::Machine;

use crate::Outcome;

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
    /// Print JSON instead of the table (schema in README).
    #[arg(long)]
    json: bool,
    /// The command to run; everything after it is its own arguments. A name that starts
    /// with `-` needs `--` before it. (An unknown flag before the command is an error, as
    /// for `record`.)
    #[arg(trailing_var_arg = true, value_name = "COMMAND", required = true)]
    command: Vec<OsString>,
}

/// The events of one `-e` list (one group), resolved (PMU types and formats from sysfs).
fn count_event(text: &str) -> Result<Vec<ResolvedEvent>> {
    resolve_events(text, Path::new(SYSFS_ROOT)).context("-e")
}

const SOFTWARE_SET: &str = "task-clock,context-switches,cpu-migrations,page-faults";

/// The default groups: the events `record` would choose here (stall, cycles and
/// instructions; else cycles and instructions; else cycles) together, branches and branch
/// misses together; each group split into single events if it does not fit the counters;
/// the software set when no hardware event opens.
fn default_groups() -> Result<(Vec<Vec<ResolvedEvent>>, Option<String>)> {
    let machine = Machine::here()?;
    let choice = machine.choose(true);
    let mut wanted = Vec::new();
    if choice.mode != Mode::CpuClock {
        wanted.push(machine.resolve_choice(&choice)?);
    }
    if let Ok(branches) = count_event("branches,branch-misses") {
        wanted.push(branches);
    }
    let mut groups = Vec::new();
    for group in wanted {
        if probe(std::slice::from_ref(&group)).is_ok() {
            groups.push(group);
            continue;
        }
        // Too many for the counters together, or some do not exist: each on its own.
        for e in group {
            let single = vec![e];
            if probe(std::slice::from_ref(&single)).is_ok() {
                groups.push(single);
            }
        }
    }
    if groups.is_empty() {
        // "No PMU" only where there is none.
        let why = if has_hardware_pmu(&machine.cpu, &machine.pmus) {
            "no hardware event opens here"
        } else {
            "hardware counters are unavailable here (no PMU, as in most VMs)"
        };
        return Ok((
            vec![count_event(SOFTWARE_SET)?],
            Some(format!("{why}: counting software events")),
        ));
    }
    Ok((groups, None))
}

pub fn stat_command(args: StatArgs) -> Result<Outcome> {
    let (groups, note) = if args.events.is_empty() {
        default_groups()?
    } else {
        let mut groups = Vec::new();
        for text in &args.events {
            let listed = resolve_groups(text, Path::new(SYSFS_ROOT)).context("-e")?;
            groups.extend(join_unbraced(listed).into_iter().map(|g| g.events));
        }
        (groups, None)
    };
    if let Some(n) = &note {
        eprintln!("cpiflame: {n}");
    }
    let options = StatOptions {
        groups,
        command: args.command.clone(),
    };
    let report = stat(&options)?;
    let command: Vec<String> = args
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let events: Vec<&ResolvedEvent> = options.groups.iter().flatten().collect();
    let refs: Vec<EventRef<'_>> = events
        .iter()
        .map(|e| EventRef {
            type_: e.type_,
            config: e.config,
            name: &e.name,
        })
        .collect();
    let printout = StatPrintout::new(&report, &refs, &command);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        printout.write_json(&mut out)?;
    } else {
        printout.write_table(&mut out, args.per_thread)?;
    }
    out.flush()?;
    Ok(Outcome::Command(report.status.code()))
}
