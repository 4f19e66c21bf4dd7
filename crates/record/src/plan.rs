//! What to record, from what the user asked: the events (`-e` lists with their groups,
//! `--stalls`/`--cycles`, or this CPU's default: stalls, else CPI, else cycles, else cpu-clock), how they are grouped, the default rate,
//! and the lines that tell the user what was chosen and what was written.

use std::io;
use std::path::Path;

use cpiflame_events::{
    join_unbraced, resolve_events, resolve_groups, Choice, EventGroup, Mode, Rate, ResolveError,
    ResolvedEvent, Roles, DEFAULT_PERIOD, SYSFS_ROOT,
};

use cpiflame_events::memory::{check_ldlat, MemOptions};

use crate::machine::MemoryRefusal;
use crate::{machine, Group, MemorySampling, RecordOptions, Report};

/// What the user asked for.
#[derive(Clone, Debug, Default)]
pub struct EventRequest {
    /// `-e` lists, each perf-style (groups in braces allowed).
    pub events: Vec<String>,
    /// `--stalls SPEC` and `--cycles SPEC`: the two roles, given together.
    pub stalls: Option<String>,
    pub cycles: Option<String>,
    /// `--with-instructions`.
    pub with_instructions: bool,
    /// `--leader-sampling`: the pair as one group sampled by its cycles event.
    pub leader_sampling: bool,
    /// `--topdown`: this CPU's top-down group ([`crate::topdown::decide`]), or an error.
    pub topdown: bool,
    /// `--td-level`: 1 (default; 0 means 1) or 2 (AMD: two more multiplexed groups).
    pub td_level: u8,
}

/// The events to open and how.
#[derive(Clone, Debug)]
pub struct EventPlan {
    pub events: Vec<ResolvedEvent>,
    /// The kernel groups, in order (see [`RecordOptions::groups`]).
    pub groups: Vec<Group>,
    /// cpu-clock alone, for want of a PMU.
    pub no_pmu: bool,
    /// The stalls and cycles event names when `--stalls`/`--cycles` chose them (none
    /// otherwise).
    pub roles: Roles<String>,
    /// What was chosen and why, one line each.
    pub notes: Vec<String>,
    /// `record --mem`: the memory sample bits every event gets.
    pub memory: Option<MemorySampling>,
}

/// Why the events could not be chosen.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A spec of the named flag does not parse or names a PMU this machine lacks.
    #[error("{flag}: {source}")]
    Spec {
        flag: &'static str,
        source: Box<ResolveError>,
    },
    /// Flags that do not go together, or a spec list where one event is needed.
    #[error("{0}")]
    Usage(String),
    /// `record --mem` on a machine without a memory-sampling PMU that opens.
    #[error("{0}")]
    NoMemoryPmu(String),
    /// Detecting the CPU (`/proc/cpuinfo`).
    #[error(transparent)]
    Detect(#[from] io::Error),
}

fn resolve(text: &str, flag: &'static str) -> Result<Vec<ResolvedEvent>, PlanError> {
    resolve_events(text, Path::new(SYSFS_ROOT)).map_err(|source| PlanError::Spec {
        flag,
        source: Box::new(source),
    })
}

fn one_spec(text: &str, flag: &'static str) -> Result<ResolvedEvent, PlanError> {
    match resolve(text, flag)?.as_slice() {
        [event] => Ok(event.clone()),
        _ => Err(PlanError::Usage(format!(
            "{flag} {text}: give exactly one event"
        ))),
    }
}

impl EventPlan {
    /// All events one group (the stall/cycles pair, as always recorded); `described`: the
    /// user asked for it as a group.
    fn one_group(events: Vec<ResolvedEvent>, described: bool, no_pmu: bool) -> EventPlan {
        EventPlan {
            groups: vec![Group {
                len: events.len(),
                described,
            }],
            events,
            no_pmu,
            roles: Roles::default(),
            notes: Vec::new(),
            memory: None,
        }
    }

    /// The events of `groups` as parsed (`-e`, `--topdown`), each a kernel group.
    fn of_groups(groups: Vec<EventGroup>) -> EventPlan {
        EventPlan {
            groups: groups
                .iter()
                .map(|g| Group {
                    len: g.events.len(),
                    described: g.braced,
                })
                .collect(),
            events: groups.into_iter().flat_map(|g| g.events).collect(),
            no_pmu: false,
            roles: Roles::default(),
            notes: Vec::new(),
            memory: None,
        }
    }

    /// `[stalls, cycles, instructions?]` as the request says: one group, or with
    /// `--leader-sampling` one group led by cycles, every member with `S`, as perf's
    /// `{cycles,stalls,instructions}:S` resolves.
    fn pair(mut events: Vec<ResolvedEvent>, leader_sampling: bool) -> EventPlan {
        if !leader_sampling {
            return EventPlan::one_group(events, false, false);
        }
        if events.len() >= 2 {
            events.swap(0, 1);
        }
        for e in &mut events {
            e.sample_read = true;
        }
        EventPlan::one_group(events, true, false)
    }

    /// The events `request` asks for: `--stalls`/`--cycles`, else `-e`, else this CPU's
    /// preset pair, else cpu-clock alone (no PMU).
    pub fn choose(request: &EventRequest) -> Result<EventPlan, PlanError> {
        if request.topdown {
            return EventPlan::topdown(request.td_level.max(1));
        }
        let instructions = || one_spec("instructions", "--with-instructions");
        if request.stalls.is_some() || request.cycles.is_some() {
            let (Some(s), Some(c)) = (&request.stalls, &request.cycles) else {
                return Err(PlanError::Usage(
                    "--stalls and --cycles go together (give both, or -e, or neither for this CPU's pair)".into(),
                ));
            };
            let mut events = vec![one_spec(s, "--stalls")?, one_spec(c, "--cycles")?];
            if request.with_instructions {
                events.push(instructions()?);
            }
            let roles = Roles {
                stalls: Some(events[0].name.clone()),
                cycles: Some(events[1].name.clone()),
                instructions: None,
            };
            let mut plan = EventPlan::pair(events, request.leader_sampling);
            plan.roles = roles;
            return Ok(plan);
        }
        if !request.events.is_empty() {
            let mut groups: Vec<EventGroup> = Vec::new();
            for text in &request.events {
                groups.extend(
                    resolve_groups(text, Path::new(SYSFS_ROOT)).map_err(|source| {
                        PlanError::Spec {
                            flag: "-e",
                            source: Box::new(source),
                        }
                    })?,
                );
            }
            if request.with_instructions {
                groups.push(EventGroup {
                    events: vec![instructions()?],
                    braced: false,
                });
            }
            return Ok(EventPlan::of_groups(join_unbraced(groups)));
        }
        let (choice, events) = machine::default_events(request.with_instructions)?;
        Ok(EventPlan::default_for(
            &choice,
            events,
            request.leader_sampling,
        ))
    }

    /// The plan for this machine's default `choice` (its events resolved, in the choice's
    /// order): the stall pair as `EventPlan::pair` groups it; cycles and instructions as one group,
    /// led by cycles and sampled by it with `--leader-sampling`; cycles or cpu-clock alone.
    pub fn default_for(choice: &Choice, events: Vec<ResolvedEvent>, leader: bool) -> EventPlan {
        let group_note = ", as one group sampled by its cycles event";
        let alone_note = " (--leader-sampling has no group to sample)";
        let (mut plan, leader_note) = match choice.mode {
            // [stalls, cycles, instructions?]
            Mode::Stalls => (EventPlan::pair(events, leader), group_note),
            // [cycles, instructions]: cycles leads already.
            Mode::Cpi if leader => {
                let mut events = events;
                for e in &mut events {
                    e.sample_read = true;
                }
                (EventPlan::one_group(events, true, false), group_note)
            }
            Mode::Cpi => (EventPlan::one_group(events, false, false), ""),
            Mode::Cycles => (EventPlan::one_group(events, false, false), alone_note),
            Mode::CpuClock => (EventPlan::one_group(events, false, true), alone_note),
        };
        plan.notes.push(format!(
            "recording {}{}",
            choice.why,
            if leader { leader_note } else { "" }
        ));
        plan
    }

    /// `record --topdown`: this machine's top-down group, leader-sampled, or the one-line
    /// reason there is none (never a fallback to other events).
    fn topdown(level: u8) -> Result<EventPlan, PlanError> {
        let g = machine::Machine::here()?
            .topdown_at(level)
            .map_err(|why| PlanError::Usage(format!("--topdown: {why}")))?;
        let groups =
            resolve_groups(&g.spec(), Path::new(SYSFS_ROOT)).map_err(|source| PlanError::Spec {
                flag: "--topdown",
                source: Box::new(source),
            })?;
        let mut plan = EventPlan::of_groups(groups);
        plan.notes.push(format!(
            "recording top-down level {} ({}), sampled by {}: {}",
            g.level,
            g.formulas,
            g.sampler,
            g.spec()
        ));
        plan.notes.extend(g.notes);
        Ok(plan)
    }

    /// `record --mem`: the first memory preset of this machine that opens, else
    /// [`PlanError::NoMemoryPmu`] (never a fallback to other events); a flag that preset
    /// cannot honour (`--ldlat` on AMD IBS without the filter) is [`PlanError::Usage`].
    pub fn memory(options: MemOptions) -> Result<EventPlan, PlanError> {
        if let Some(ldlat) = options.ldlat {
            check_ldlat(ldlat).map_err(PlanError::Usage)?;
        }
        let m = machine::memory_events(options)?.map_err(|refusal| match refusal {
            MemoryRefusal::Flag(why) => PlanError::Usage(why),
            MemoryRefusal::NoPmu(why) => PlanError::NoMemoryPmu(why),
        })?;
        Ok(EventPlan {
            events: m.events,
            groups: m.groups,
            no_pmu: false,
            roles: Roles::default(),
            notes: vec![format!("recording memory accesses: {}", m.label)],
            memory: Some(m.sampling),
        })
    }

    /// The rate of events whose spec sets none: one fixed period for hardware events, so
    /// stall and cycle samples compare (the recipe of the original CPI flame graphs); every
    /// 250 µs for a software clock (4 kHz, perf's default rate); 4000 a second for memory
    /// sampling, as perf mem.
    pub fn default_rate(&self) -> Rate {
        if self.memory.is_some() {
            // perf mem / perf c2c record keep perf record's default: 4000 samples a second.
            return Rate::Frequency(4000);
        }
        if self
            .events
            .iter()
            .any(|e| e.type_ != cpiflame_events::abi::attr_type::SOFTWARE)
        {
            Rate::Period(DEFAULT_PERIOD)
        } else {
            Rate::Period(250_000)
        }
    }
}

/// What to tell the user after a recording into `options.output`: the samples written per
/// event (a member of a leader-sampled group has none of its own: its counts are in the
/// leader's), then warnings about losses and throttling (the report's own warnings are
/// told before these).
pub fn summary_lines(options: &RecordOptions, report: &Report) -> (String, Vec<String>) {
    let samples: u64 = report.samples.iter().sum();
    let mut read_by = vec![None; options.events.len()];
    let mut start = 0;
    for g in &options.groups {
        let group = options.events.get(start..start + g.len).unwrap_or_default();
        if group.first().is_some_and(|l| l.sample_read) {
            // The leader samples, or the second member after a `slots` leader.
            let sampler = crate::open::read_sampler(group);
            for (k, e) in group.iter().enumerate() {
                if k != sampler && (e.rate.is_none() || k == 0) {
                    read_by[start + k] = Some(&group[sampler].name);
                }
            }
        }
        start += g.len;
    }
    let per_event: Vec<String> = options
        .events
        .iter()
        .zip(&report.samples)
        .zip(&read_by)
        .map(|((e, n), by)| match by {
            Some(leader) => format!("{} read in {leader}'s", e.name),
            None => format!("{} {n}", e.name),
        })
        .collect();
    let written = match (report.files.as_slice(), report.files_written) {
        (_, 0) => options.output.display().to_string(),
        ([one], 1) => one.display().to_string(),
        ([], n) => format!("{n} files, none kept"),
        ([one], n) => format!("{n} files, {} kept", one.display()),
        ([first, .., last], n) => format!(
            "{n} files, {} kept: {} to {}",
            report.files.len(),
            first.display(),
            last.display()
        ),
    };
    let mut summary = format!(
        "wrote {written}: {samples} samples ({}), {:.1} MB",
        per_event.join(", "),
        report.bytes_written as f64 / 1e6
    );
    if report.jit.dir.is_some() {
        summary.push_str("; ");
        summary.push_str(&report.jit.said());
    }
    let mut warnings = Vec::new();
    if report.lost > 0 {
        let total = samples + report.lost;
        warnings.push(format!(
            "lost {} of {total} samples ({:.1}%): the ring buffer filled faster than it was drained; use a lower -F (or larger -c), or more -m pages{}",
            report.lost,
            report.lost as f64 * 100.0 / total as f64,
            if report.priority_raised {
                ""
            } else {
                " (as root, cpiflame also raises its own priority to drain them in time)"
            }
        ));
        if options.off_cpu.is_some() {
            // The rate does not bound switch samples: the switches do.
            warnings.push(format!(
                "with --off-cpu every context switch is a sample with a copy of up to {} bytes of stack: a smaller --call-graph dwarf,SIZE copies less, and the switch records themselves are small",
                crate::offcpu::SWITCH_STACK_SIZE
            ));
        }
    }
    if report.throttled > 0 {
        warnings.push(format!(
            "the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate); use a lower rate",
            report.throttled
        ));
    }
    (summary, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_events::resolve_event;

    fn event(spec: &str) -> ResolvedEvent {
        // Generic events resolve without sysfs.
        resolve_event(spec, Path::new("/nonexistent")).unwrap()
    }

    fn choice(mode: Mode, events: &[&str]) -> Choice {
        Choice {
            mode,
            events: events.iter().map(|e| e.to_string()).collect(),
            pmu: None,
            why: "why".into(),
            refused: Vec::new(),
        }
    }

    /// A CPU with cycles and instructions but no stall event: with --leader-sampling one
    /// group led by cycles, every member reading the group; without, one group sampling
    /// each event.
    #[test]
    fn cpi_mode_with_and_without_leader_sampling() {
        let c = choice(Mode::Cpi, &["cycles", "instructions"]);
        let events = vec![event("cycles"), event("instructions")];
        let plan = EventPlan::default_for(&c, events.clone(), true);
        assert_eq!(plan.events[0].name, "cycles");
        assert!(plan.events.iter().all(|e| e.sample_read));
        assert_eq!(plan.groups.len(), 1);
        assert!(plan.groups[0].described && plan.groups[0].len == 2);
        assert!(!plan.no_pmu);
        assert_eq!(
            plan.notes,
            ["recording why, as one group sampled by its cycles event"]
        );
        let plan = EventPlan::default_for(&c, events, false);
        assert!(plan.events.iter().all(|e| !e.sample_read));
        assert_eq!(plan.notes, ["recording why"]);
    }

    /// The stall pair leads with cycles under --leader-sampling; cpu-clock says it has no
    /// group, and is the only plan marked as recorded without a PMU.
    #[test]
    fn stall_pair_and_cpu_clock() {
        let c = choice(Mode::Stalls, &["stalled-cycles-backend", "cycles"]);
        let plan = EventPlan::default_for(
            &c,
            vec![event("stalled-cycles-backend"), event("cycles")],
            true,
        );
        assert_eq!(plan.events[0].name, "cycles");
        assert!(plan.events.iter().all(|e| e.sample_read));
        let c = choice(Mode::CpuClock, &["cpu-clock"]);
        let plan = EventPlan::default_for(&c, vec![event("cpu-clock")], true);
        assert!(plan.no_pmu);
        assert!(plan.notes[0].ends_with("(--leader-sampling has no group to sample)"));
        let c = choice(Mode::Cycles, &["cycles"]);
        let plan = EventPlan::default_for(&c, vec![event("cycles")], false);
        assert!(!plan.no_pmu && plan.events.len() == 1);
    }
}
