//! Reading a recording into a profile with the roles chosen: the part every command that takes
//! a perf.data or folded file shares.

use std::path::PathBuf;

use cpiflame_events::{detect_roles, Arch, EventRef, Roles};
use cpiflame_perf_data::{InputKind, PerfData};
use cpiflame_profile::timed::Timed;
use cpiflame_profile::topdown::{plan, Cpu, Machine, NoTopdown, Plan};
use cpiflame_profile::{
    read_folded, read_perf_script_in, read_perf_script_timed, read_perf_script_with, Column,
    Columns, Count, FrameId, PerfScriptOptions, Profile,
};
use cpiflame_profile::{ReportOptions, SourceLines, WallColumns, Width};
use cpiflame_unwind::Resolver;

use crate::collapse::{
    collapse_visiting, event_names, CollapseOptions, Collapsed, SampleVisitor, TimedWalk,
};
use crate::hybrid::Hybrid;
use crate::load_options::{EventList, LoadError, LoadOptions};
use crate::marks::RecordingMarks;
use crate::offcpu::{WallPlan, WallStats};
use crate::time::TimeRanges;
use crate::walker::Walker;

/// One line of a graph's subtitle: what the reader of the graph should know of the
/// recording or of how it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// Recorded without hardware counters: widths are cpu-clock time, or, in a wall-time
    /// graph (`wall`), the on-CPU time is not split into running and stalled.
    NoPmu { wall: bool },
    /// No stall/cycles pair among the recording's events (`events`, listed): the graph is
    /// of the first event with samples. A top-down picture, coloured by its categories,
    /// does not say it.
    NoStallPair { events: String },
    /// Any other line, as it is shown.
    Text(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::NoPmu { wall: false } => f.write_str(
                "recorded without hardware counters (no PMU): widths are cpu-clock time",
            ),
            Note::NoPmu { wall: true } => {
                f.write_str("no PMU: on-CPU time not split into running and stalled")
            }
            Note::NoStallPair { events } => write!(
                f,
                "no stall/cycles pair recognised among {events}; set --stalls and --cycles"
            ),
            Note::Text(text) => f.write_str(text),
        }
    }
}

impl From<String> for Note {
    fn from(text: String) -> Note {
        Note::Text(text)
    }
}

/// A recording read: its profile (stacks sorted), the event columns chosen for each role,
/// and lines for the graph's subtitle.
#[derive(Debug)]
pub struct Loaded {
    pub file: PathBuf,
    pub profile: Profile,
    pub roles: Roles,
    /// How the roles were chosen, and what else the reader of the graph should know.
    pub notes: Vec<Note>,
    /// The cycles column that colour events (instructions, stalls) are divided by, when it
    /// is not `roles.cycles`: a hybrid recording whose cycles cover more core types than
    /// its colour event (widths add every core type's cycles; CPI uses only the core types
    /// that recorded both). `None`: divide by `roles.cycles`.
    pub ratio_cycles: Option<usize>,
    /// The wall-time columns (on-CPU, runnable, blocked nanoseconds), when the recording has
    /// off-CPU data and `--on-cpu-only` was not given (see [`crate::offcpu`]).
    pub wall: Option<cpiflame_profile::WallColumns>,
    /// With [`LoadOptions::lines`] and a perf.data recording: the profile's stacks split by
    /// each frame's source line, in the profile's columns.
    pub lines: Option<std::sync::Arc<SourceLines>>,
    /// The top-down formulas that apply to the columns (perf's event names) on the
    /// recording's CPU (its CPUID, or `--topdown-cpu`); `None` without top-down events or
    /// when they are incomplete (then a note says why).
    pub topdown: Option<Plan>,
    /// Why top-down events give no fractions (a set's events there only in part, a core
    /// without them, files of several sets read together): `report` says it under its
    /// table and as `totals.topdown_why`, the graph in its subtitle (it is a note too).
    pub topdown_why: Option<String>,
    /// The weights are counts, not samples: folded text (a count per line), alone or
    /// among the recordings read together.
    pub counts: bool,
}

impl Loaded {
    /// The column of the event called `name` (perf's name, with or without `:modifiers`);
    /// `flag` names the option that asked, for the error.
    pub fn event_index(&self, name: &str, flag: &'static str) -> Result<usize, LoadError> {
        find_event(&self.profile, name).ok_or_else(|| LoadError::NoSuchEvent {
            flag,
            name: name.to_string(),
            file: self.file.clone(),
            events: EventList::of(&self.profile),
        })
    }

    /// The roles of the profile's columns, as every output takes them (summaries, graphs,
    /// the timeline, source lines): the width is wall time when the recording has the
    /// wall-time columns ([`Loaded::wall`]), else cycles. `None` without a cycles column
    /// (nothing sampled).
    pub fn columns(&self) -> Option<Columns> {
        Some(Columns {
            width: self.wall.map_or(Width::Cycles, Width::Wall),
            cycles: Column(self.roles.cycles?),
            stalls: self.roles.stalls.map(Column),
            instructions: self.roles.instructions.map(Column),
            ratio_cycles: self.ratio_cycles.map(Column),
        })
    }

    /// `report`'s options for this recording: its columns, the top-down formulas (or why
    /// there are none), counts for folded weights and, with `lines`, its source lines (each
    /// function's hottest self line); every row, at the default confidence, until the caller
    /// says otherwise. `None` without a cycles column (nothing sampled).
    pub fn report_options(&self, lines: bool) -> Option<ReportOptions<'_>> {
        Some(ReportOptions {
            lines: self.lines.as_deref().filter(|_| lines),
            topdown: self.topdown.as_ref(),
            topdown_why: self.topdown_why.as_deref(),
            counts: self.counts,
            ..ReportOptions::new(self.columns()?)
        })
    }

    /// The graph's subtitle: the notes, joined; `None` without notes.
    pub fn subtitle(&self) -> Option<String> {
        let lines: Vec<String> = self.notes.iter().map(Note::to_string).collect();
        (!lines.is_empty()).then(|| lines.join(" · "))
    }

    /// The legend of the stall event, when its name says what kind of stall it counts.
    pub fn stall_legend(&self) -> Option<&'static str> {
        let stalls = self.roles.stalls?;
        cpiflame_events::stall_event_legend(&self.profile.events[stalls].name)
    }

    pub fn event_list(&self) -> EventList {
        EventList::of(&self.profile)
    }
}

fn find_event(profile: &Profile, name: &str) -> Option<usize> {
    let base = |s: &str| s.split(':').next().unwrap_or(s).to_string();
    let events = &profile.events;
    events
        .iter()
        .position(|e| e.name == name)
        .or_else(|| events.iter().position(|e| base(&e.name) == base(name)))
}

/// The roles: flags first, then what the recording says, then detection; a plain graph of
/// the first event with samples when no cycles event is found.
fn choose_roles(
    profile: &Profile,
    options: &LoadOptions,
    detected: Roles,
    recorded: &Roles<String>,
    notes: &mut Vec<Note>,
) -> Result<Roles, LoadError> {
    let recorded_index =
        |name: &Option<String>| name.as_deref().and_then(|n| find_event(profile, n));
    let pick = |given: &Option<String>, flag: &'static str, fallback: Option<usize>| match given {
        Some(name) => find_event(profile, name)
            .map(Some)
            .ok_or_else(|| LoadError::NoSuchEvent {
                flag,
                name: name.clone(),
                file: options.file.clone(),
                events: EventList::of(profile),
            }),
        None => Ok(fallback),
    };
    let mut roles = Roles {
        stalls: pick(
            &options.roles.stalls,
            "--stalls",
            recorded_index(&recorded.stalls).or(detected.stalls),
        )?,
        cycles: pick(
            &options.roles.cycles,
            "--cycles",
            recorded_index(&recorded.cycles).or(detected.cycles),
        )?,
        instructions: pick(
            &options.roles.instructions,
            "--instructions",
            detected.instructions,
        )?,
    };
    if roles.cycles.is_none() {
        // No cycles event: draw the first event that has samples, as a plain graph. When it
        // is the only one with samples (`perf script --header` also names perf's `dummy`
        // event, say), there is nothing to choose and nothing to say.
        roles.cycles = (0..profile.events.len()).find(|&e| profile.total(e).samples > 0);
        let sampled = (0..profile.events.len())
            .filter(|&e| profile.total(e).samples > 0)
            .count();
        if sampled > 1 && roles.stalls.is_none() {
            notes.push(Note::NoStallPair {
                events: EventList::of(profile).to_string(),
            });
        }
    }
    if roles.stalls == roles.cycles {
        roles.stalls = None;
    }
    if roles.instructions == roles.cycles || roles.instructions == roles.stalls {
        roles.instructions = None;
    }
    Ok(roles)
}

/// Reads a perf.data file, `perf script` text or a folded file (one or two counts per line),
/// told apart by content: the perf.data magic, then a first line that is a `perf script`
/// sample header (or `perf script --header` comments), then folded text. Warnings (one line
/// each) are pushed to `warnings` as they arise, so they are there even when reading fails
/// later.
pub fn load_any(options: &LoadOptions, warnings: &mut Vec<String>) -> Result<Loaded, LoadError> {
    // One opener for every input: a file or `-` (standard input, spooled), decompressed if
    // it is gzip, zstd or xz. Standard input can be read once: it is opened here only.
    crate::Recording::open(options)?.load(warnings)
}

/// [`load_any`] of an input already opened with `cpiflame_perf_data::open_input` (for callers
/// that look at the bytes first: standard input can be read once).
pub fn load_input(
    options: &LoadOptions,
    input: cpiflame_perf_data::Input,
    warnings: &mut Vec<String>,
) -> Result<Loaded, LoadError> {
    // The kind is decided in one place (magic numbers, then the text heuristics); what no
    // reader recognises goes to the perf.data reader, whose error names the magic found.
    match input.kind() {
        InputKind::PerfScript => Ok(load_perf_script(options, input.bytes(), false, warnings)?.0),
        InputKind::Folded => load_folded(options, input.bytes()),
        _ => {
            let file = PerfData::from_input(input)?;
            load_opened(&file, options, warnings)
        }
    }
}

fn load_folded(options: &LoadOptions, bytes: &[u8]) -> Result<Loaded, LoadError> {
    options.check_text_group_by()?;
    options.check_text_region("folded")?;
    let source = options.file.display().to_string();
    if options.time.is_some() {
        return Err(crate::time::TimeError::NoTimestamps {
            file: source,
            what: "folded text",
        }
        .into());
    }
    let profile = read_folded(bytes, &source)?;
    // Folded files carry names only: roles are detected by name.
    let refs: Vec<EventRef<'_>> = profile
        .events
        .iter()
        .map(|e| EventRef {
            type_: u32::MAX,
            config: 0,
            name: &e.name,
        })
        .collect();
    let detected = detect_roles(&refs, Arch::Other);
    let loaded = finish(
        options,
        profile,
        detected,
        &RecordingMarks::default(),
        None,
        None,
    )?;
    Ok(Loaded {
        counts: true,
        ..loaded
    })
}

/// Reads `perf script` text (see `cpiflame_profile::perf_script` for the layouts taken): one
/// column per event, roots and kernel frames as `options` say. Roles are detected by event
/// name and, where `perf script --header` gave an event's type and config, by encoding too.
///
/// With `timed`, the same pass keeps each sample's time, thread and weight: the table, its
/// stacks indices into the loaded profile's (sorted) stacks, and how many samples had no
/// time and are not in it.
pub(crate) fn load_perf_script(
    options: &LoadOptions,
    bytes: &[u8],
    timed: bool,
    warnings: &mut Vec<String>,
) -> Result<(Loaded, Option<(Timed, u64)>), LoadError> {
    options.check_text_group_by()?;
    options.check_text_region("perf script")?;
    let source = options.file.display().to_string();
    let script_options = PerfScriptOptions {
        pid: options.pid,
        tid: options.tid,
        kernel: options.kernel,
    };
    let read = |keep: &dyn Fn(u64) -> bool| {
        if timed {
            read_perf_script_timed(bytes, &source, script_options, keep)
        } else {
            read_perf_script_in(bytes, &source, script_options, keep)
        }
    };
    let mut ranges = None;
    let mut script = match &options.time {
        None => read(&|_| true)?,
        Some(text) => {
            // Percentages need the first and last sample time: a first read finds them.
            let (first, last) = if TimeRanges::has_percent(text) {
                read_perf_script_with(bytes, &source, script_options)?
                    .span
                    .unwrap_or_default()
            } else {
                (0, 0)
            };
            let times =
                TimeRanges::parse(text, first, last).map_err(crate::time::TimeError::from)?;
            let script = read(&|t| times.contains(t))?;
            let Some((first, last)) = script.span else {
                return Err(crate::time::TimeError::NoTimestamps {
                    file: source,
                    what: "perf script text printed without times",
                }
                .into());
            };
            ranges = Some((times, first, last));
            script
        }
    };
    let refs: Vec<EventRef<'_>> = script
        .profile
        .events
        .iter()
        .zip(&script.header)
        .map(|(e, h)| EventRef {
            // u32::MAX: no encoding known, so only the name counts (as for folded files).
            type_: h.as_ref().map_or(u32::MAX, |h| h.type_),
            config: h.as_ref().map_or(0, |h| h.config),
            name: &e.name,
        })
        .collect();
    // Raw configs mean different events on different architectures: the header's, else
    // this machine's (perf script is most often run where perf record was).
    let arch = script.arch.as_deref().unwrap_or(std::env::consts::ARCH);
    let mut detected = detect_roles(&refs, Arch::from_perf(Some(arch)));
    let wall = script_wall(
        options,
        &mut script,
        &mut detected,
        ranges.as_ref().map(|(times, ..)| times),
    );
    // As for perf.data: a range with wall time and no sample is not empty.
    if let Some((times, first, last)) = &ranges {
        let wall_ns = wall.as_ref().map_or(0, |plan| plan.stats.wall_ns());
        if script.samples == 0 && wall_ns == 0 {
            let e = crate::time::TimeError::nothing_in(
                &options.file,
                options.time.as_deref(),
                times,
                script.left_out,
                (*first, *last),
            );
            return Err(e.into());
        }
    }
    if let Some(plan) = &wall {
        // The same lines as perf.data's plan gives.
        wall_warnings(&plan.stats, &source, warnings);
    }
    // The stacks as read: `finish` sorts them, and the timed samples are found again by
    // their frames.
    let before: Vec<Vec<FrameId>> = match &script.timed {
        Some(_) => script
            .profile
            .stacks
            .iter()
            .map(|s| s.frames.clone())
            .collect(),
        None => Vec::new(),
    };
    let (untimed, timed) = (script.untimed, script.timed);
    let mut loaded = finish(
        options,
        script.profile,
        detected,
        &RecordingMarks::default(),
        None,
        None,
    )?;
    if let Some(plan) = &wall {
        loaded.notes.push(wall_note(&plan.stats).into());
    }
    let timed = timed.map(|mut t| {
        let now: Vec<u32> = before
            .iter()
            .map(|f| loaded.profile.stack_id(f).map_or(u32::MAX, |i| i as u32))
            .collect();
        for s in &mut t.samples {
            s.stack = now[s.stack as usize];
        }
        (t, untimed)
    });
    Ok((loaded, timed))
}

/// The wall-time plan of a `perf script` text (none with `--on-cpu-only` or without
/// off-CPU data), its three columns added to `script`'s profile, and the on-CPU event made
/// the cycles role when nothing else is (as [`load_opened`] does for perf.data).
fn script_wall(
    options: &LoadOptions,
    script: &mut cpiflame_profile::PerfScript,
    detected: &mut cpiflame_events::Roles,
    times: Option<&TimeRanges>,
) -> Option<WallPlan> {
    if options.on_cpu_only || script.thread_events.is_empty() {
        return None;
    }
    let names: Vec<String> = script
        .profile
        .events
        .iter()
        .map(|e| e.name.clone())
        .collect();
    // Text that already carries wall columns (cpiflame's own output read back) keeps them.
    if names.iter().any(|n| n == cpiflame_profile::wall::ON_CPU) {
        return None;
    }
    let base = |s: &str| s.split(':').next().unwrap_or(s).to_string();
    let by_name = |n: &Option<String>| {
        n.as_deref()
            .and_then(|n| names.iter().position(|m| base(m) == base(n)))
    };
    // As `on_cpu_attr`: the cycles role, else the first event that is neither a switch,
    // wakeup or off-CPU event, a scheduler tracepoint nor perf's `dummy`.
    let on_cpu_column = by_name(&options.roles.cycles)
        .or(detected.cycles)
        .or_else(|| {
            names.iter().position(|n| {
                !n.starts_with("sched:")
                    && !matches!(
                        base(n).as_str(),
                        "dummy" | "offcpu-time" | "context-switches" | "cs"
                    )
            })
        });
    let on_cpu: Vec<bool> = (0..names.len()).map(|c| Some(c) == on_cpu_column).collect();
    let timed = script.timed.is_some();
    let plan = WallPlan::of_script(&script.thread_events, &names, &on_cpu, times, timed)?;
    plan.add_to_script(
        &script.thread_events,
        &script.outside_stacks,
        &mut script.profile,
        script.timed.as_mut(),
    );
    if detected.cycles.is_none() {
        detected.cycles = on_cpu_column;
    }
    Some(plan)
}

/// Reads an opened perf.data file: every sample unwound and named, collapsed into a profile.
pub fn load_opened(
    file: &PerfData,
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<Loaded, LoadError> {
    load_walked(file, options, WalkAlso::default(), warnings).map(|w| {
        crate::exit::discard(w.resolver);
        w.loaded
    })
}

/// What a command keeps from the walk that reads a recording, beside its profile: so that
/// it reads the file once.
#[derive(Default)]
pub struct WalkAlso<'v> {
    /// Every sample's time, thread, stack and weights (`timeline`, `render --strip`).
    pub timed: bool,
    /// Every counted sample handed to this too (`annotate`'s instruction sites).
    pub visit: Option<&'v mut dyn SampleVisitor>,
    /// The wall-time plan's stretches of time without a stack or sample, each with its
    /// time ([`WallPlan::placed`] of [`Walked::wall`]: the viewers place them in time).
    pub wall_placed: bool,
}

/// A recording read by [`load_walked`].
pub struct Walked {
    pub loaded: Loaded,
    /// With [`WalkAlso::timed`].
    pub timed: Option<TimedWalk>,
    /// The resolver the walk named frames with: the frames a visitor kept are its.
    pub resolver: Resolver,
    /// The wall-time plan the walk weighed samples by (a recording with off-CPU data).
    pub wall: Option<WallPlan>,
}

/// [`load_opened`], with what `also` asks for from the same walk.
pub fn load_walked(
    file: &PerfData,
    options: &LoadOptions,
    also: WalkAlso<'_>,
    warnings: &mut Vec<String>,
) -> Result<Walked, LoadError> {
    let Walker {
        mut resolver,
        times,
        ..
    } = Walker::new(file, options, warnings)?;
    let names = event_names(file);
    let marks = RecordingMarks::from_cmdline(&file.meta.cmdline);
    // A file without the ARCH feature (a killed recorder) was most likely recorded here.
    let arch = file.meta.arch.as_deref().unwrap_or(std::env::consts::ARCH);
    let hybrid = Hybrid::of(file, &names);
    let (on_cpu_attr, wall) = plan_wall(
        file,
        options,
        &names,
        &marks,
        arch,
        &hybrid,
        also.wall_placed,
    )?;
    let Collapsed {
        profile,
        stats,
        lines,
        timed,
    } = collapse_visiting(
        file,
        &mut resolver,
        CollapseOptions {
            group_by: options.group_by(file)?,
            pid: options.pid,
            tid: options.tid,
            kernel: options.kernel,
            lines: options.lines,
            timed: also.timed,
        },
        wall.as_ref(),
        times.as_ref(),
        also.visit,
    )?;
    let path = options.file.display();
    if let Some(plan) = &wall {
        wall_warnings(&plan.stats, &path.to_string(), warnings);
    }
    if let Some(offset) = stats.cut_short_at {
        warnings.push(format!(
            "{path}: offset {offset:#x}: last record cut short (recorder killed?); ignored"
        ));
    }
    crate::load::naming_warnings(&resolver, warnings);
    let total: u64 = stats.samples.iter().sum();
    // perf writes both LOST records (from the kernel) and a LOST_SAMPLES total at the end;
    // they count the same samples, so the larger one is the loss.
    let lost = stats.lost.max(stats.lost_samples);
    if lost > 0 {
        warnings.push(format!(
            "{path}: the kernel lost {lost} samples of {} (ring buffer full); the graph undercounts",
            total + lost
        ));
    }
    let unwound = resolver.stats.dwarf_unwound;
    let early = resolver.stats.unwind_stopped_early;
    if unwound > 0 && early * 10 > unwound {
        warnings.push(format!(
            "{path}: {early} of {unwound} user stacks were cut short (stack copy too small or no unwind info); record with a larger --call-graph dwarf,SIZE"
        ));
    }
    // A wall-time recording may have time in a range (a thread computing or asleep) and no
    // sample in it: that time is the graph.
    let wall_ns = wall.as_ref().map_or(0, |plan| plan.stats.wall_ns());
    if let (0, 0, Some(times), 1..) = (total, wall_ns, &times, stats.outside_time) {
        return Err(options.nothing_in_time(file, times, stats.outside_time));
    }
    if total == 0 && wall_ns == 0 {
        return Err(LoadError::NoSamples {
            file: options.file.clone(),
        });
    }

    // Per-core-type columns of one event become one (see `hybrid`); the counts before the
    // merge are kept for a colour ratio over fewer core types. The wall-time columns after
    // the events' are set aside while the events' are merged.
    let mut profile = profile;
    let wall_counts: Vec<Vec<Count>> = match &wall {
        Some(_) => profile
            .stacks
            .iter_mut()
            .map(|s| s.counts.split_off(names.len()))
            .collect(),
        None => Vec::new(),
    };
    let wall_columns = if wall.is_some() {
        profile.events.split_off(names.len())
    } else {
        Vec::new()
    };
    let original: Vec<Vec<Count>> = if hybrid.merged() {
        profile.stacks.iter().map(|s| s.counts.clone()).collect()
    } else {
        Vec::new()
    };
    hybrid.apply(&mut profile);
    if hybrid.merged() {
        // Pairs of attrs are not pairs of the merged columns: intervals fall back to the
        // independent-sampling method (docs/uncertainty.md).
        for stack in &mut profile.stacks {
            stack.paired.clear();
        }
    }
    if wall.is_some() {
        profile.events.extend(wall_columns);
        for (stack, counts) in profile.stacks.iter_mut().zip(wall_counts) {
            stack.counts.extend(counts);
        }
    }
    let refs: Vec<EventRef<'_>> = hybrid
        .columns
        .iter()
        .zip(&profile.events)
        .map(|(c, e)| EventRef {
            type_: c.type_,
            config: c.config,
            name: &e.name,
        })
        .collect();
    let mut detected = detect_roles(&refs, Arch::from_perf(Some(arch)));
    if wall.is_some() && detected.cycles.is_none() {
        // The widths' event is the one on-CPU time was spread by, never the switch event.
        detected.cycles = on_cpu_attr;
    }
    let mut loaded = finish(
        options,
        profile,
        detected,
        &marks,
        Some((&hybrid, original)),
        file.meta.cpuid.as_deref(),
    )?;
    if let Some(raw) = lines {
        // The columns as `hybrid` merged them, the wall-time ones after, then the ratio
        // column `finish` may have added: each a sum of the walk's columns.
        let mut sums = hybrid.members();
        if wall.is_some() {
            sums.extend((names.len()..names.len() + 3).map(|c| vec![c]));
        }
        if loaded.ratio_cycles.is_some() {
            if let (Some(cycles), Some(pmus)) =
                (loaded.roles.cycles, hybrid.ratio_pmus_of(loaded.roles))
            {
                sums.push(hybrid.ratio_members(cycles, &pmus));
            }
        }
        loaded.lines = Some(std::sync::Arc::new(in_columns(raw, &sums)));
    }
    if let Some(plan) = &wall {
        // Widths are wall time, not cpu-clock time: the no-PMU note says what it means here.
        for note in &mut loaded.notes {
            if let Note::NoPmu { wall } = note {
                *wall = true;
            }
        }
        loaded.notes.push(wall_note(&plan.stats).into());
    }
    Ok(Walked {
        loaded,
        timed,
        resolver,
        wall,
    })
}

/// The wall-time plan of `file` as `options` ask (none with `--on-cpu-only` or without
/// off-CPU data), and the (merged) column of the event whose samples spread on-CPU time: the
/// one place it is made, for the profile and for pprof's address-keeping walk.
pub fn wall_plan(
    file: &PerfData,
    options: &LoadOptions,
) -> Result<(Option<usize>, Option<WallPlan>), LoadError> {
    let names = event_names(file);
    let marks = RecordingMarks::from_cmdline(&file.meta.cmdline);
    let arch = file.meta.arch.as_deref().unwrap_or(std::env::consts::ARCH);
    let hybrid = Hybrid::of(file, &names);
    plan_wall(file, options, &names, &marks, arch, &hybrid, false)
}

/// [`wall_plan`] with what [`load_opened`] has already worked out of the file; `place`:
/// keep [`WallPlan::placed`].
fn plan_wall(
    file: &PerfData,
    options: &LoadOptions,
    names: &[String],
    marks: &RecordingMarks,
    arch: &str,
    hybrid: &Hybrid,
    place: bool,
) -> Result<(Option<usize>, Option<WallPlan>), LoadError> {
    if options.on_cpu_only {
        return Ok((None, None));
    }
    let on_cpu_attr = on_cpu_attr(file, names, options, marks, arch);
    let column_of = hybrid.column_names(names).1;
    let on_cpu: Vec<bool> = (0..names.len())
        .map(|a| on_cpu_attr.is_some_and(|c| column_of[a] == column_of[c]))
        .collect();
    let times = options.time_ranges(file)?;
    let plan = WallPlan::of_placing(file, &on_cpu, times.as_ref(), place)?;
    if let (Some(_), Some(name)) = (&plan, &options.region) {
        return Err(LoadError::Region(Box::new(
            crate::region::RegionError::WallTime {
                file: options.file.clone(),
                name: name.clone(),
            },
        )));
    }
    if let (Some(plan), Some(_)) = (&plan, &times) {
        if plan.made_up_times() {
            return Err(crate::time::TimeError::NoTimestamps {
                file: options.file.display().to_string(),
                what: "perf's offcpu-time samples carry made-up times; add --on-cpu-only",
            }
            .into());
        }
    }
    Ok((on_cpu_attr.map(|c| column_of[c]), plan))
}

/// The event whose samples spread on-CPU time: the cycles role as flags, the recording's
/// notes or detection choose it, else the first event that is neither a switch, wakeup or
/// off-CPU event nor perf's `dummy`.
fn on_cpu_attr(
    file: &PerfData,
    names: &[String],
    options: &LoadOptions,
    marks: &RecordingMarks,
    arch: &str,
) -> Option<usize> {
    let by_name = |n: &Option<String>| {
        let base = |s: &str| s.split(':').next().unwrap_or(s).to_string();
        n.as_deref()
            .and_then(|n| names.iter().position(|m| base(m) == base(n)))
    };
    let refs: Vec<EventRef<'_>> = file
        .attrs
        .iter()
        .zip(names)
        .map(|(a, name)| EventRef {
            type_: a.type_,
            config: a.config,
            name,
        })
        .collect();
    by_name(&options.roles.cycles)
        .or_else(|| by_name(&marks.roles.cycles))
        .or_else(|| detect_roles(&refs, Arch::from_perf(Some(arch))).cycles)
        .or_else(|| {
            use cpiflame_events::abi::{attr_type, software};
            file.attrs.iter().zip(names).position(|(a, name)| {
                let base = name.split(':').next().unwrap_or(name);
                let software_only = a.type_ == attr_type::SOFTWARE
                    && matches!(
                        a.config,
                        software::CONTEXT_SWITCHES | software::BPF_OUTPUT | software::DUMMY
                    );
                !software_only
                    && a.type_ != attr_type::TRACEPOINT
                    && !matches!(base, "dummy" | "offcpu-time" | "context-switches" | "cs")
            })
        })
}

/// The subtitle's line on where the wall-time split comes from.
fn wall_note(stats: &WallStats) -> String {
    let source = if stats.switch_records {
        "switch records"
    } else if stats.switch_in_estimated {
        "switch-outs, switch-ins estimated"
    } else {
        "off-CPU samples"
    };
    let wakeups = if stats.wakeups { ", wakeups" } else { "" };
    let mut note = format!(
        "{} switches of {} threads ({source}{wakeups})",
        stats.switches, stats.threads
    );
    if stats.off_cpu_without_stack_ns > 0 {
        note.push_str(&format!(
            "; {:.1} ms off-CPU without a switch-out stack: [runnable] and [blocked] under each thread",
            stats.off_cpu_without_stack_ns as f64 / 1e6
        ));
    }
    note
}

/// What the wall-time split could not do, one line each.
fn wall_warnings(stats: &WallStats, path: &str, warnings: &mut Vec<String>) {
    let ms = |ns: u64| ns as f64 / 1e6;
    if stats.switches > 0 && !stats.wakeups {
        warnings.push(format!(
            "{path}: no wakeup events (sched:sched_waking): time a woken thread waited for a CPU counts as blocked"
        ));
    }
    if stats.switch_in_estimated {
        warnings.push(format!(
            "{path}: no switch-in times (record with --switch-events or cpiflame record --off-cpu): off-CPU intervals end at the thread's next sample"
        ));
    }
    if stats.switch_ins_missing > 0 {
        warnings.push(format!(
            "{path}: {} of {} switch-outs have no switch onto their CPU before them (the kernel emitted none): such a thread came on after its wakeup or the CPU's last switch, and one not seen woken is taken as blocked until it left",
            stats.switch_ins_missing, stats.switches
        ));
    }
    // Less than 0.1 ms is not worth a line (a thread's last instants, say).
    if stats.off_cpu_without_stack_ns >= 100_000 {
        warnings.push(format!(
            "{path}: {:.1} ms off-CPU have no switch-out stack (a switch without its sample: not recorded, lost, or sampled at a frequency; record context-switches with -c 1): drawn as [runnable] and [blocked] directly under their threads",
            ms(stats.off_cpu_without_stack_ns)
        ));
    }
    if stats.on_cpu_without_samples_ns >= 100_000 {
        warnings.push(format!(
            "{path}: {:.1} ms on-CPU of threads without an on-CPU sample: drawn as {} directly under their threads",
            ms(stats.on_cpu_without_samples_ns),
            cpiflame_profile::wall::UNSAMPLED_ON_CPU
        ));
    }
}

/// Notes for the subtitle of a hybrid recording whose chosen events were merged across core
/// types, and the column of cycles for the colour ratio when the colour event covers fewer
/// core types than the widths (added to `profile`; `original` is each stack's counts before
/// the merge, in the profile's stack order).
fn hybrid_notes(
    hybrid: &Hybrid,
    profile: &mut Profile,
    original: &[Vec<Count>],
    roles: Roles,
    notes: &mut Vec<String>,
) -> Option<usize> {
    let cycles = roles.cycles?;
    let join = |pmus: &std::collections::BTreeSet<String>| {
        pmus.iter().cloned().collect::<Vec<_>>().join("+")
    };
    let width_pmus = &hybrid.columns.get(cycles)?.pmus;
    if width_pmus.len() > 1 {
        notes.push(format!("widths: cycles of {} cores", join(width_pmus)));
    }
    for (colour, what) in [(roles.instructions, "CPI"), (roles.stalls, "stalls")] {
        let Some(colour) = colour else { continue };
        let Some(pmus) = hybrid.ratio_pmus(cycles, colour) else {
            continue;
        };
        notes.push(format!("{what} from {} only", join(&pmus)));
    }
    // One ratio column: the first colour event decides it (`ratio_cycles_events` finds the
    // same one).
    let pmus = hybrid.ratio_pmus_of(roles)?;
    Some(hybrid.add_ratio_column(profile, original, cycles, &pmus))
}

/// `lines` (in the walk's columns) with each stack's counts in the loaded columns: column
/// `i` the sum of the walk's columns `sums[i]`.
fn in_columns(mut lines: SourceLines, sums: &[Vec<usize>]) -> SourceLines {
    for stack in &mut lines.stacks {
        stack.counts = sums
            .iter()
            .map(|members| {
                let mut c = Count::default();
                for &m in members {
                    c.add(stack.counts.get(m).copied().unwrap_or_default());
                }
                c
            })
            .collect();
    }
    lines
}

fn finish(
    options: &LoadOptions,
    mut profile: Profile,
    detected: Roles,
    marks: &RecordingMarks,
    hybrid: Option<(&Hybrid, Vec<Vec<Count>>)>,
    cpuid: Option<&str>,
) -> Result<Loaded, LoadError> {
    let mut first: Vec<Note> = Vec::new();
    let (topdown, topdown_why) = topdown_plan(options, &profile, cpuid)?;
    first.extend(
        topdown_why
            .iter()
            .map(|why| Note::Text(format!("no top-down breakdown: {why}"))),
    );
    if marks.no_pmu {
        first.push(Note::NoPmu { wall: false });
    }
    // A graph of some of the samples says which.
    if let Some(time) = &options.time {
        first.push(Note::Text(format!("samples of --time {time}")));
    }
    if let Some(region) = &options.region {
        first.push(Note::Text(format!("samples inside region {region}")));
    }
    let mut notes: Vec<String> = Vec::new();
    // Roles chosen at record time (`cpiflame record --stalls --cycles`) stand unless flags
    // here say otherwise.
    let roles = choose_roles(&profile, options, detected, &marks.roles, &mut first)?;
    // Stall events that are not plain back-end stall cycles say what the colour is.
    if let Some(caveat) = roles
        .stalls
        .and_then(|s| cpiflame_events::stall_event_caveat(&profile.events[s].name))
    {
        notes.push(caveat.to_string());
    }
    let ratio_cycles = match hybrid {
        Some((hybrid, original)) => {
            hybrid_notes(hybrid, &mut profile, &original, roles, &mut notes)
        }
        None => None,
    };
    profile.sort();
    // Columns of wall time found by name: a perf.data file's walk, or a text that carries
    // them (`perf script` of such a recording, folded text).
    let wall = if options.on_cpu_only {
        None
    } else {
        WallColumns::of(&profile)
    };
    first.extend(notes.into_iter().map(Note::Text));
    Ok(Loaded {
        file: options.file.clone(),
        profile,
        roles,
        notes: first,
        ratio_cycles,
        wall,
        lines: None,
        topdown,
        topdown_why,
        counts: false,
    })
}

/// The top-down formulas for `profile`'s columns on the CPU `--topdown-cpu` names, else the
/// recording's `cpuid`, else the one the event names imply. An error where the formulas
/// need the model and nothing says it; why there are none where the events are there in
/// part (or on a core without them).
fn topdown_plan(
    options: &LoadOptions,
    profile: &Profile,
    cpuid: Option<&str>,
) -> Result<(Option<Plan>, Option<String>), LoadError> {
    let error = |reason: String| LoadError::Topdown {
        file: options.file.clone(),
        reason,
    };
    let cpu = match &options.topdown_cpu {
        Some(flag) => match Cpu::from_perf_cpuid(flag) {
            Cpu::Unknown => {
                return Err(error(format!(
                    "--topdown-cpu {flag}: not a CPUID as perf writes it \
                     (GenuineIntel,6,143,8, AuthenticAMD,25,17,1 or an Arm MIDR 0x410fd490)"
                )))
            }
            cpu => cpu,
        },
        None => cpuid.map_or(Cpu::Unknown, Cpu::from_perf_cpuid),
    };
    let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
    match plan(&names, &Machine::of(cpu)) {
        Ok(plan) => Ok((Some(plan), None)),
        Err(NoTopdown::NoEvents) => Ok((None, None)),
        Err(e @ NoTopdown::CpuNeeded(_)) => Err(error(format!(
            "{e}: the recording does not say which; give --topdown-cpu CPUID"
        ))),
        Err(e) if options.topdown_cpu.is_some() => Err(error(format!("--topdown-cpu: {e}"))),
        Err(e) => Ok((None, Some(e.to_string()))),
    }
}

/// What the resolver could not name, and what went wrong with the recording's JIT dumps:
/// one warning line each.
pub(crate) fn naming_warnings(resolver: &Resolver, warnings: &mut Vec<String>) {
    for u in resolver.unnamed() {
        warnings.push(format!(
            "{}: {}; {} frames shown as module+0xOFFSET",
            u.path, u.reason, u.frames
        ));
    }
    warnings.extend(resolver.jit_notes().iter().cloned());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--jit-dir`'s folders first, then the recording's `.jit` folder (a `--switch-output`
    /// piece's recording's too), then its own folder; nothing for standard input.
    #[test]
    fn jit_folders_in_order() {
        let dirs = |file: &str, given: &[&str]| {
            LoadOptions {
                file: PathBuf::from(file),
                ..LoadOptions::default()
            }
            .with_jit_dirs(given.iter().map(PathBuf::from).collect())
            .resolve_options()
            .jit_dirs
        };
        let p = |list: &[&str]| list.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(
            dirs("/r/out.data", &["/a", "b"]),
            p(&["/a", "b", "/r/out.data.jit", "/r"])
        );
        assert_eq!(dirs("out.data", &[]), p(&["out.data.jit", "."]));
        assert_eq!(
            dirs("/r/out.data.2026112601471220", &[]),
            p(&["/r/out.data.2026112601471220.jit", "/r/out.data.jit", "/r"])
        );
        // Not perf's 16 digits: no recording's folder.
        assert_eq!(
            dirs("/r/out.data.old", &[]),
            p(&["/r/out.data.old.jit", "/r"])
        );
        assert_eq!(dirs("/r/x.202611", &[]), p(&["/r/x.202611.jit", "/r"]));
        // A folder given twice is looked in once.
        assert_eq!(dirs("/r/out.data", &["/r"]), p(&["/r", "/r/out.data.jit"]));
        assert_eq!(dirs("-", &["/a"]), p(&["/a"]));
        // A --jit-dir that is not a folder is one error naming it.
        let options = LoadOptions::default().with_jit_dirs(vec![PathBuf::from("/nonexistent/j")]);
        let e = options.check_jit_dirs().unwrap_err().to_string();
        assert_eq!(e, "--jit-dir /nonexistent/j: not a folder");
    }

    /// Writes `bytes` to a scratch file and loads it.
    fn load_bytes(name: &str, bytes: &[u8]) -> (Result<Loaded, LoadError>, Vec<String>) {
        let dir = cpiflame_testkit::Dir::new("load");
        let file = dir.path(name);
        std::fs::write(&file, bytes).unwrap();
        let mut warnings = Vec::new();
        let loaded = load_any(
            &LoadOptions {
                file: file.clone(),
                kernel: true,
                ..Default::default()
            },
            &mut warnings,
        );
        (loaded, warnings)
    }

    fn names(l: &Loaded) -> Vec<&str> {
        l.profile.events.iter().map(|e| e.name.as_str()).collect()
    }

    const SCRIPT: &str =
        "app 1/1 1.0: a:\n\t 10 f (/bin/app)\n\napp 1/1 1.1: b:\n\t 10 g (/bin/app)\n";

    #[test]
    fn perf_script_folded_and_perf_data_told_apart() {
        let (l, _) = load_bytes("s.perf", SCRIPT.as_bytes());
        assert_eq!(names(&l.unwrap()), ["a", "b"]);
        let (l, _) = load_bytes("f.folded", b"app;f 3\n");
        assert_eq!(names(&l.unwrap()), ["samples"]);
        let (l, _) = load_bytes("x.data", b"PERFILE2 and then nothing");
        assert!(matches!(l, Err(LoadError::PerfData(_))));
        // A big-endian machine's perf.data: recognised, and refused in one line naming it.
        let mut be = b"2ELIFREP".to_vec();
        be.extend_from_slice(&104u64.to_be_bytes());
        be.resize(104, 0);
        let (l, _) = load_bytes("be.data", &be);
        let e = l.unwrap_err().to_string();
        assert!(
            e.ends_with(
                "be.data: big-endian perf.data (written on a big-endian machine): not supported"
            ),
            "{e}"
        );
        // A perf script text with a bad line later on is still read as one: its error.
        let bad = format!("{SCRIPT}\nnot a header\n");
        let (l, _) = load_bytes("bad.perf", bad.as_bytes());
        let e = l.unwrap_err().to_string();
        assert!(e.ends_with("bad.perf: line 7: not a sample header (expected \"COMM PID/TID [CPU] TIME: [PERIOD] EVENT:\")"), "{e}");
        // Only perf's header comments (a recording without samples): perf script's error.
        let (l, _) = load_bytes(
            "empty.perf",
            b"# ========\n# captured on    : today\n# ========\n#\n",
        );
        assert!(matches!(l, Err(LoadError::PerfScript(_))));
    }

    #[test]
    fn roles_by_name_and_by_the_header_encoding() {
        // By name, as for folded files.
        let text = SCRIPT
            .replace(" a:", " resource_stalls_any:")
            .replace(" b:", " cycles:");
        let (l, _) = load_bytes("named.perf", text.as_bytes());
        let roles = l.unwrap().roles;
        assert_eq!((roles.stalls, roles.cycles), (Some(0), Some(1)));
        // Names that say nothing, raw x86 encodings in the header: unhalted cycles (0x3c) and
        // RESOURCE_STALLS.ANY (0x1a2).
        let header = "\
# ========
# arch : x86_64
# event : name = a, , id = { 1 }, type = 4, size = 136, config = 0x1a2, { sample_period, sample_freq } = 100003
# event : name = b, , id = { 2 }, type = 4, size = 136, config = 0x3c, { sample_period, sample_freq } = 100003
# ========
";
        let (l, _) = load_bytes("raw.perf", format!("{header}{SCRIPT}").as_bytes());
        let l = l.unwrap();
        assert_eq!((l.roles.stalls, l.roles.cycles), (Some(0), Some(1)));
        assert_eq!(l.profile.total(0).period, 100003);
        // Without the header, nothing is recognised: a plain graph of the first event.
        let (l, _) = load_bytes("plain.perf", SCRIPT.as_bytes());
        let l = l.unwrap();
        assert_eq!((l.roles.stalls, l.roles.cycles), (None, Some(0)));
    }

    #[test]
    fn perf_script_cycles_and_instructions_give_the_cpi_roles_and_periods() {
        // What `perf script` prints for a `{cycles,instructions}:S` recording: each member
        // of each leader sample as its own sample, the period its value's delta.
        let text = "\
app 1/1 1.0: 3000 cycles:
\t 10 f (/bin/app)

app 1/1 1.0: 1000 instructions:
\t 10 f (/bin/app)

app 1/1 1.1: 500 cycles:
\t 10 f (/bin/app)

app 1/1 1.1: 1500 instructions:
\t 10 f (/bin/app)

app 1/1 1.2: 700 cycles:
\t 20 g (/bin/app)
";
        let (l, _) = load_bytes("cpi.perf", text.as_bytes());
        let l = l.unwrap();
        assert_eq!(names(&l), ["cycles", "instructions"]);
        assert_eq!((l.roles.cycles, l.roles.instructions), (Some(0), Some(1)));
        let f = l
            .profile
            .stacks
            .iter()
            .find(|s| l.profile.frame(*s.frames.last().unwrap()).name == "f")
            .unwrap();
        let period = |e: usize| f.counts[e].period;
        assert_eq!((period(0), period(1)), (3500, 2500));
        assert_eq!(l.profile.total(0).period, 4200);
    }
}
