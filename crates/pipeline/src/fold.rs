//! `fold`'s text for a recording read: which event's stacks, or which pair of columns, the
//! folded lines carry.

use std::io::{self, Write};
use std::path::PathBuf;

use cpiflame_profile::{
    wall, write_folded, write_folded_pair, write_folded_periods, Column, Profile,
};

use crate::load::Loaded;
use crate::load_options::{EventList, LoadError};

/// Why the folded stacks could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FoldError {
    /// `--event` named an event the recording does not have.
    #[error(transparent)]
    Event(#[from] LoadError),
    /// Several events sampled, none chosen.
    #[error("{}: has events {events}; choose one with --event, or set --stalls and --cycles", file.display())]
    Ambiguous { file: PathBuf, events: EventList },
    /// Writing failed (a closed pipe among others).
    #[error(transparent)]
    Write(#[from] io::Error),
}

/// Writes the folded stacks of `loaded`: of `event` alone (`stack count`) when given (for
/// the wall-time columns, `on-cpu-time`, `runnable-time` and `blocked-time`, the count is
/// nanoseconds, their period: their samples only count intervals); else,
/// with a stall and a cycles event, `stack stalls cycles`; with cycles and instructions but
/// no stall event, `stack instructions cycles` (first column = "before" for difffolded.pl
/// and flamegraph.pl, widths from the second); else the one event sampled. A recording with
/// wall time gives its wall-clock nanoseconds per stack (on-CPU + runnable + blocked), the
/// widths of its graph, unless `--on-cpu-only` left them out.
pub fn write_fold(
    loaded: &Loaded,
    event: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), FoldError> {
    let profile = &loaded.profile;
    if let Some(name) = event {
        let index = loaded.event_index(name, "--event")?;
        if is_wall_column(profile, index) {
            write_folded_periods(profile, &[index], out)?;
        } else {
            write_folded(profile, index, out)?;
        }
        return Ok(());
    }
    if let Some(wall) = loaded.wall {
        write_folded_periods(profile, &wall.all().map(Column::index), out)?;
        return Ok(());
    }
    let roles = loaded.roles;
    match (roles.stalls, roles.cycles, roles.instructions) {
        (Some(stalls), Some(cycles), _) => write_folded_pair(profile, stalls, cycles, out)?,
        // Instructions first, so that difffolded.pl's "before" is instructions and the
        // widths ("after") are cycles, as with a stall pair.
        (None, Some(cycles), Some(instructions)) => {
            // Named, so that reading the file back finds instructions, not stalls.
            writeln!(
                out,
                "{} instructions cycles",
                cpiflame_profile::read::COLUMNS_COMMENT
            )?;
            write_folded_pair(profile, instructions, cycles, out)?
        }
        _ if profile.events.len() == 1 => write_folded(profile, 0, out)?,
        // Several events named (a `perf script --header` text names perf's `dummy` event
        // too) but one sampled: that one, as render draws it.
        _ => match only_sampled_event(profile) {
            Some(event) => write_folded(profile, event, out)?,
            None => {
                return Err(FoldError::Ambiguous {
                    file: loaded.file.clone(),
                    events: loaded.event_list(),
                })
            }
        },
    }
    Ok(())
}

/// Whether column `index` holds wall-clock nanoseconds ([`wall`]).
fn is_wall_column(profile: &Profile, index: usize) -> bool {
    let name = profile.events[index].name.as_str();
    [wall::ON_CPU, wall::RUNNABLE, wall::BLOCKED].contains(&name)
}

/// The one event of `profile` with samples, when exactly one has any.
fn only_sampled_event(profile: &Profile) -> Option<usize> {
    let mut sampled = (0..profile.events.len()).filter(|&e| profile.total(e).samples > 0);
    match (sampled.next(), sampled.next()) {
        (Some(event), None) => Some(event),
        _ => None,
    }
}
