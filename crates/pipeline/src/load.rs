//! Reading a recording into a profile with the roles chosen: the part every command that takes
//! a perf.data or folded file shares.

use std::fmt;
use std::path::PathBuf;

use cpiflame_events::{detect_roles, Arch, EventRef, Roles};
use cpiflame_perf_data::{PerfData, ReadError};
use cpiflame_profile::{read_folded, FoldedError, Profile};
use cpiflame_unwind::{Options as ResolveOptions, Resolver};

use crate::collapse::{collapse, event_names, CollapseOptions};
use crate::marks::RecordingMarks;

/// How to read a recording.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    pub file: PathBuf,
    /// `--stalls NAME`: the event that gives the colour, overriding detection.
    pub stalls: Option<String>,
    /// `--cycles NAME`: the event that gives the width, overriding detection.
    pub cycles: Option<String>,
    /// Where to look for the recorded binaries first (`--symfs`).
    pub symfs: Option<PathBuf>,
    /// Keep kernel frames.
    pub kernel: bool,
    /// Root frame `comm-PID`.
    pub pid: bool,
    /// Root frame `comm-PID/TID`.
    pub tid: bool,
}

/// A recording read: its profile (stacks sorted), the event columns chosen for each role,
/// and lines for the graph's subtitle.
#[derive(Debug)]
pub struct Loaded {
    pub file: PathBuf,
    pub profile: Profile,
    pub roles: Roles,
    /// How the roles were chosen, when the reader of the graph should know.
    pub notes: Vec<String>,
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A perf.data file that does not parse (the error names the file and offset).
    #[error(transparent)]
    PerfData(#[from] ReadError),
    /// A folded file that does not parse (the error names the file and line).
    #[error(transparent)]
    Folded(#[from] FoldedError),
    /// A flag named an event the recording does not have.
    #[error("{flag} {name}: {} has no such event (events: {events})", file.display())]
    NoSuchEvent {
        flag: &'static str,
        name: String,
        file: PathBuf,
        events: EventList,
    },
    /// Nothing was sampled.
    #[error("{}: contains no samples", file.display())]
    NoSamples { file: PathBuf },
}

/// The event names of a profile, for messages: `cpu-clock, task-clock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventList(pub Vec<String>);

impl EventList {
    pub fn of(profile: &Profile) -> EventList {
        EventList(profile.events.iter().map(|e| e.name.clone()).collect())
    }
}

impl fmt::Display for EventList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(", "))
    }
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
    recorded: Option<&(String, String)>,
    notes: &mut Vec<String>,
) -> Result<Roles, LoadError> {
    let recorded_index = |pick: fn(&(String, String)) -> &String| {
        recorded.and_then(|r| find_event(profile, pick(r)))
    };
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
            &options.stalls,
            "--stalls",
            recorded_index(|r| &r.0).or(detected.stalls),
        )?,
        cycles: pick(
            &options.cycles,
            "--cycles",
            recorded_index(|r| &r.1).or(detected.cycles),
        )?,
        instructions: detected.instructions,
    };
    if roles.cycles.is_none() {
        // No cycles event: draw the first event that has samples, as a plain graph.
        roles.cycles = (0..profile.events.len()).find(|&e| profile.total(e).samples > 0);
        if profile.events.len() > 1 && roles.stalls.is_none() {
            notes.push(format!(
                "no stall/cycles pair recognised among {}; set --stalls and --cycles",
                EventList::of(profile)
            ));
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

/// Reads a perf.data file or a folded file (one or two counts per line), told apart by the
/// perf.data magic. Warnings (one line each) are pushed to `warnings` as they arise, so they
/// are there even when reading fails later.
pub fn load_any(options: &LoadOptions, warnings: &mut Vec<String>) -> Result<Loaded, LoadError> {
    // One opener for every input: a file or `-` (standard input, spooled), decompressed if
    // it is gzip, zstd or xz. Standard input can be read once: it is opened here only.
    let input = cpiflame_perf_data::open_input(&options.file)?;
    // Enough to see the first line whole: a text file whose first line does not end in a
    // count is not folded, and gets perf.data's error (bad magic).
    let bytes = input.bytes();
    let n = bytes.len().min(4096);
    // The whole file was read: its last line is complete even without a newline.
    let mut probe = bytes[..n].to_vec();
    if n > 0 && n < 4096 && !probe.ends_with(b"\n") {
        probe.push(b'\n');
    }
    if cpiflame_profile::looks_folded(&probe) {
        load_folded(options, input.bytes())
    } else {
        let file = PerfData::from_input(input)?;
        load_opened(&file, options, warnings)
    }
}

fn load_folded(options: &LoadOptions, bytes: &[u8]) -> Result<Loaded, LoadError> {
    let source = options.file.display().to_string();
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
    finish(options, profile, detected, &RecordingMarks::default())
}

/// Reads a perf.data file: every sample unwound and named, collapsed into a profile.
pub fn load_perf_data(
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<Loaded, LoadError> {
    let file = PerfData::open(&options.file)?;
    load_opened(&file, options, warnings)
}

/// Reads an opened perf.data file: every sample unwound and named, collapsed into a profile.
fn load_opened(
    file: &PerfData,
    options: &LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<Loaded, LoadError> {
    warnings.extend(file.warnings.iter().cloned());
    let mut resolver = Resolver::new(
        &file.meta,
        ResolveOptions {
            symfs: options.symfs.clone(),
            ..ResolveOptions::from_env()
        },
    );
    let (profile, stats) = collapse(
        file,
        &mut resolver,
        CollapseOptions {
            pid: options.pid,
            tid: options.tid,
            kernel: options.kernel,
        },
    )?;
    let path = options.file.display();
    if let Some(offset) = stats.cut_short_at {
        warnings.push(format!(
            "{path}: offset {offset:#x}: last record cut short (recorder killed?); ignored"
        ));
    }
    for u in resolver.unnamed() {
        warnings.push(format!(
            "{}: {}; {} frames shown as module+0xOFFSET",
            u.path, u.reason, u.frames
        ));
    }
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
    if total == 0 {
        return Err(LoadError::NoSamples {
            file: options.file.clone(),
        });
    }

    let names = event_names(file);
    let refs: Vec<EventRef<'_>> = file
        .attrs
        .iter()
        .zip(&names)
        .map(|(a, name)| EventRef {
            type_: a.type_,
            config: a.config,
            name,
        })
        .collect();
    // A file without the ARCH feature (a killed recorder) was most likely recorded here.
    let arch = file.meta.arch.as_deref().unwrap_or(std::env::consts::ARCH);
    let detected = detect_roles(&refs, Arch::from_perf(Some(arch)));
    let marks = RecordingMarks::from_cmdline(&file.meta.cmdline);
    finish(options, profile, detected, &marks)
}

fn finish(
    options: &LoadOptions,
    mut profile: Profile,
    detected: Roles,
    marks: &RecordingMarks,
) -> Result<Loaded, LoadError> {
    let mut notes = Vec::new();
    if marks.no_pmu {
        notes.push(
            "recorded without hardware counters (no PMU): widths are cpu-clock time".to_string(),
        );
    }
    // Roles chosen at record time (`cpiflame record --stalls --cycles`) stand unless flags
    // here say otherwise.
    let roles = choose_roles(
        &profile,
        options,
        detected,
        marks.roles.as_ref(),
        &mut notes,
    )?;
    profile.sort();
    Ok(Loaded {
        file: options.file.clone(),
        profile,
        roles,
        notes,
    })
}
