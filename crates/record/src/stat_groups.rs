//! The groups of events `cpiflame stat` counts: its `-e` lists, or when none is given what
//! `record` would sample on this machine, counted together where the counters allow it.

use std::io;
use std::path::Path;

use cpiflame_counters::stat::{probe, ResolvedEvent};
use cpiflame_events::{
    has_hardware_pmu, join_unbraced, resolve_events, resolve_groups, EventRef, Mode, ResolveError,
    SYSFS_ROOT,
};

use crate::machine::Machine;

/// The software events counted where no hardware event opens.
const SOFTWARE_SET: &str = "task-clock,context-switches,cpu-migrations,page-faults";

/// The default groups and why they are not the hardware ones, if they are not.
#[derive(Debug)]
pub struct DefaultGroups {
    /// One inner list per group counted together.
    pub groups: Vec<Vec<ResolvedEvent>>,
    /// Why software events are counted instead, for the user.
    pub note: Option<String>,
}

/// Why the groups could not be chosen.
#[derive(Debug, thiserror::Error)]
pub enum StatGroupsError {
    /// This machine's CPU or PMUs could not be read.
    #[error(transparent)]
    Machine(#[from] io::Error),
    /// An event of the set could not be resolved (named as the flag `-e` would be).
    #[error("-e")]
    Event(#[source] ResolveError),
}

/// The groups `-e` lists give: each list one group, or its `{...}` groups when it has any
/// (events outside braces: one group per run).
pub fn groups_of_lists(lists: &[String]) -> Result<Vec<Vec<ResolvedEvent>>, StatGroupsError> {
    let mut groups = Vec::new();
    for text in lists {
        let listed = resolve_groups(text, Path::new(SYSFS_ROOT)).map_err(StatGroupsError::Event)?;
        groups.extend(join_unbraced(listed).into_iter().map(|g| g.events));
    }
    Ok(groups)
}

/// The events of `groups` in order, as the ratios and the printout name them.
pub fn event_refs(groups: &[Vec<ResolvedEvent>]) -> Vec<EventRef<'_>> {
    groups
        .iter()
        .flatten()
        .map(|e| EventRef {
            type_: e.type_,
            config: e.config,
            name: &e.name,
        })
        .collect()
}

/// The events of one `-e` list (one group), resolved (PMU types and formats from sysfs).
fn count_event(text: &str) -> Result<Vec<ResolvedEvent>, StatGroupsError> {
    resolve_events(text, Path::new(SYSFS_ROOT)).map_err(StatGroupsError::Event)
}

/// The default groups: the events `record` would choose here (stall, cycles and
/// instructions; else cycles and instructions; else cycles) together, branches and branch
/// misses together; each group split into single events if it does not fit the counters;
/// the software set when no hardware event opens.
pub fn default_groups() -> Result<DefaultGroups, StatGroupsError> {
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
        return Ok(DefaultGroups {
            groups: vec![count_event(SOFTWARE_SET)?],
            note: Some(format!("{why}: counting software events")),
        });
    }
    Ok(DefaultGroups { groups, note: None })
}
