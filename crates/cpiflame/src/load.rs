//! Reading a recording into a folded profile with the stall and cycles events chosen: the part
//! every command that takes a perf.data file shares. Warnings go to stderr, one line each.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use cpiflame_events::{detect_roles, Arch, EventRef};
use cpiflame_fold::{collapse, event_names, CollapseOptions, Profile};
use cpiflame_perf_data::PerfData;
use cpiflame_unwind::{Options as ResolveOptions, Resolver};

use crate::events::{roles_from_cmdline, NO_PMU_MARK};

pub struct LoadOptions {
    pub file: PathBuf,
    pub stalls: Option<String>,
    pub cycles: Option<String>,
    pub symfs: Option<PathBuf>,
    pub kernel: bool,
    pub pid: bool,
    pub tid: bool,
}

/// Event columns chosen for width and colour.
#[derive(Clone, Copy, Debug, Default)]
pub struct Roles {
    pub stalls: Option<usize>,
    pub cycles: Option<usize>,
    /// Retired instructions, when recorded: CPI per frame in the tooltips.
    pub instructions: Option<usize>,
}

pub struct Loaded {
    pub file: PathBuf,
    pub profile: Profile,
    pub roles: Roles,
    /// Lines for the graph's subtitle (how the roles were chosen when it matters).
    pub notes: Vec<String>,
}

impl Loaded {
    /// The column of the event called `name` (perf's name, with or without `:modifiers`).
    pub fn event_index(&self, name: &str, flag: &str) -> Result<usize> {
        find_event(&self.profile, name).ok_or_else(|| {
            anyhow::anyhow!(
                "{flag} {name}: {} has no such event (events: {})",
                self.file.display(),
                self.event_list()
            )
        })
    }

    pub fn event_list(&self) -> String {
        event_list(&self.profile)
    }
}

fn event_list(profile: &Profile) -> String {
    profile
        .events
        .iter()
        .map(|e| e.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn find_event(profile: &Profile, name: &str) -> Option<usize> {
    let base = |s: &str| s.split(':').next().unwrap_or(s).to_string();
    let events = &profile.events;
    events
        .iter()
        .position(|e| e.name == name)
        .or_else(|| events.iter().position(|e| base(&e.name) == base(name)))
}

fn warn(msg: impl std::fmt::Display) {
    eprintln!("cpiflame: warning: {msg}");
}

/// The roles: flags first, then what the recording says, then detection; a plain graph of
/// the first event with samples when no cycles event is found.
fn choose_roles(
    profile: &Profile,
    options: &LoadOptions,
    detected: cpiflame_events::Roles,
    recorded: (Option<usize>, Option<usize>),
    samples: &[u64],
    notes: &mut Vec<String>,
) -> Result<Roles> {
    let path = options.file.display();
    let pick =
        |given: &Option<String>, flag: &str, fallback: Option<usize>| -> Result<Option<usize>> {
            match given {
                Some(name) => match find_event(profile, name) {
                    Some(i) => Ok(Some(i)),
                    None => bail!(
                        "{flag} {name}: {path} has no such event (events: {})",
                        event_list(profile)
                    ),
                },
                None => Ok(fallback),
            }
        };
    let mut roles = Roles {
        stalls: pick(&options.stalls, "--stalls", recorded.0.or(detected.stalls))?,
        cycles: pick(&options.cycles, "--cycles", recorded.1.or(detected.cycles))?,
        instructions: detected.instructions,
    };
    if roles.cycles.is_none() {
        // No cycles event: draw the first event that has samples, as a plain graph.
        roles.cycles = samples.iter().position(|&n| n > 0);
        if profile.events.len() > 1 && roles.stalls.is_none() {
            notes.push(format!(
                "no stall/cycles pair recognised among {}; set --stalls and --cycles",
                event_list(profile)
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
/// perf.data magic.
pub fn load_any(options: &LoadOptions) -> Result<Loaded> {
    // Enough to see the first line whole: a text file whose first line does not end in a
    // count is not folded, and gets perf.data's error (bad magic).
    let mut head = [0u8; 4096];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(&options.file)
            .with_context(|| format!("{}", options.file.display()))?;
        f.read(&mut head)
            .with_context(|| format!("{}", options.file.display()))?
    };
    // The whole file was read: its last line is complete even without a newline.
    let mut probe = head[..n].to_vec();
    if n > 0 && n < head.len() && !probe.ends_with(b"\n") {
        probe.push(b'\n');
    }
    if !cpiflame_fold::looks_folded(&probe) {
        return load(options);
    }
    let source = options.file.display().to_string();
    let file = std::fs::File::open(&options.file).with_context(|| source.clone())?;
    let profile = cpiflame_fold::read_folded(std::io::BufReader::new(file), &source)?;
    let names: Vec<&str> = profile.events.iter().map(|e| e.name.as_str()).collect();
    let refs: Vec<EventRef<'_>> = names
        .iter()
        .map(|name| EventRef {
            type_: u32::MAX,
            config: 0,
            name,
        })
        .collect();
    let detected = detect_roles(&refs, Arch::Other);
    let samples: Vec<u64> = (0..profile.events.len())
        .map(|e| profile.total(e).samples)
        .collect();
    let mut notes = Vec::new();
    let roles = choose_roles(
        &profile,
        options,
        detected,
        (None, None),
        &samples,
        &mut notes,
    )?;
    Ok(Loaded {
        file: options.file.clone(),
        profile: {
            let mut p = profile;
            p.sort();
            p
        },
        roles,
        notes,
    })
}

pub fn load(options: &LoadOptions) -> Result<Loaded> {
    let file = PerfData::open(&options.file)?;
    for w in &file.warnings {
        warn(w);
    }
    let mut resolver = Resolver::new(
        &file.meta,
        ResolveOptions {
            symfs: options.symfs.clone(),
            ..ResolveOptions::from_env()
        },
    );
    let (profile, stats) = collapse(
        &file,
        &mut resolver,
        CollapseOptions {
            pid: options.pid,
            tid: options.tid,
            kernel: options.kernel,
        },
    )?;
    let path = options.file.display();
    if let Some(offset) = stats.cut_short_at {
        warn(format_args!(
            "{path}: offset {offset:#x}: last record cut short (recorder killed?); ignored"
        ));
    }
    for u in resolver.unnamed() {
        warn(format_args!(
            "{}: {}; {} frames shown as module+0xOFFSET",
            u.path, u.reason, u.frames
        ));
    }
    let total: u64 = stats.samples.iter().sum();
    // perf writes both LOST records (from the kernel) and a LOST_SAMPLES total at the end;
    // they count the same samples, so the larger one is the loss.
    let lost = stats.lost.max(stats.lost_samples);
    if lost > 0 {
        warn(format_args!(
            "{path}: the kernel lost {lost} samples of {} (ring buffer full); the graph undercounts",
            total + lost
        ));
    }
    let unwound = resolver.stats.dwarf_unwound;
    let early = resolver.stats.unwind_stopped_early;
    if unwound > 0 && early * 10 > unwound {
        warn(format_args!(
            "{path}: {early} of {unwound} user stacks were cut short (stack copy too small or no unwind info); record with a larger --call-graph dwarf,SIZE"
        ));
    }
    if total == 0 {
        bail!("{path}: contains no samples");
    }

    let names = event_names(&file);
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
    // Roles chosen at record time (`cpiflame record --stalls --cycles`) stand unless flags
    // here say otherwise.
    let recorded = match roles_from_cmdline(&file.meta.cmdline) {
        Some((s, c)) => (find_event(&profile, &s), find_event(&profile, &c)),
        None => (None, None),
    };
    let mut notes = Vec::new();
    if file.meta.cmdline.iter().any(|a| a == NO_PMU_MARK) {
        notes.push(
            "recorded without hardware counters (no PMU): widths are cpu-clock time".to_string(),
        );
    }
    let roles = choose_roles(
        &profile,
        options,
        detected,
        recorded,
        &stats.samples,
        &mut notes,
    )?;
    Ok(Loaded {
        file: options.file.clone(),
        profile: {
            let mut p = profile;
            p.sort();
            p
        },
        roles,
        notes,
    })
}
