//! `cpiflame record`: chooses the events (this CPU's stall/cycles pair, or what the flags
//! say), records the command or process, and reports what was written and lost.

use std::io::IsTerminal;

use anyhow::Result;
use cpiflame_cli::record::RecordArgs;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::RecordingMarks;
use cpiflame_record::plan::summary_lines;
use cpiflame_record::{record, StatusLines};

use crate::{warn_all, Outcome};

/// Records the command; its exit status is the [`Outcome`].
pub fn record_command(args: RecordArgs, env: &Environment) -> Result<Outcome> {
    // Lossy: `std::env::args` panics on an argument that is not UTF-8 (`./app $'\xff'`).
    let cmdline = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let request = args.request(cmdline, env);
    let (options, notes) =
        request.plan(|plan| RecordingMarks::words_for(plan.no_pmu, &plan.roles))?;
    for n in &notes {
        eprintln!("cpiflame: {n}");
    }
    let mut lines = StatusLines::new(std::io::stderr(), std::io::stderr().is_terminal());
    let report = record(&options, &mut |status| lines.show(status));
    lines.end();
    let report = report?;
    warn_all(&report.warnings);
    let (summary, warnings) = summary_lines(&options, &report);
    eprintln!("cpiflame: {summary}");
    warn_all(&warnings);
    // A command stopped at --duration ends as planned: status 0, not its 130 (a CI step).
    Ok(match report.status {
        Some(status) if !report.stopped_at_duration => Outcome::Command(status.code()),
        _ => Outcome::Done,
    })
}
