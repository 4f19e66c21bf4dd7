//! `cpiflame record`: chooses the events (this CPU's stall/cycles pair, or what the flags
//! say), records the command or process, and reports what was written and lost.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use cpiflame_events::{
    join_unbraced, resolve_events, resolve_groups, EventGroup, DEFAULT_PERIOD, SYSFS_ROOT,
};
use cpiflame_pipeline::RecordingMarks;
use cpiflame_record::{
    machine, record, CallGraph, Group, Rate, RecordOptions, ResolvedEvent, Target,
};

use crate::Outcome;

#[derive(Args)]
pub struct RecordArgs {
    /// Output file (an existing one is kept as FILE.old).
    #[arg(short, long, default_value = "out.data", value_name = "FILE")]
    output: PathBuf,
    /// Events to sample, perf style: names, rNNNN, pmu/event=..,umask=..,name=../, groups
    /// {a,b} and leader-sampled groups {a,b}:S (repeatable). Events outside braces are
    /// opened as one group per run.
    #[arg(short = 'e', long = "event", value_name = "SPECS")]
    events: Vec<String>,
    /// The stall event (the colour), any spec, software events included.
    #[arg(long, value_name = "SPEC")]
    stalls: Option<String>,
    /// The cycles event (the width), any spec.
    #[arg(long, value_name = "SPEC")]
    cycles: Option<String>,
    /// Also sample instructions, so the graph can show real CPI.
    #[arg(long)]
    with_instructions: bool,
    /// Record this CPU's pair (or --stalls/--cycles) as one leader-sampled group, as perf's
    /// {cycles,stalls,instructions}:S: cycles samples, and each sample reads the stall (and,
    /// with --with-instructions, instruction) counts. Needs a PMU: without one cpu-clock is
    /// recorded alone, as without this flag.
    #[arg(long, alias = "group-sampling", conflicts_with = "events")]
    leader_sampling: bool,
    /// Sample every PERIOD events (all events the same period).
    #[arg(
        short = 'c',
        long = "count",
        value_name = "PERIOD",
        conflicts_with = "freq"
    )]
    period: Option<u64>,
    /// Sample FREQ times a second.
    #[arg(short = 'F', long = "freq", value_name = "FREQ")]
    freq: Option<u64>,
    /// `dwarf[,SIZE]` (default; SIZE bytes of stack per sample), `fp`, or `none`.
    #[arg(long = "call-graph", value_name = "MODE", default_value = "dwarf")]
    call_graph: String,
    /// Attach to a running process (and its threads) instead of running a command.
    #[arg(short, long, value_name = "PID", conflicts_with = "command")]
    pid: Option<i32>,
    /// Stop after this many seconds (a command gets SIGINT, as with Ctrl-C).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Ring buffer pages per CPU (a power of two; shrunk to what the kernel allows).
    #[arg(
        short = 'm',
        long = "mmap-pages",
        value_name = "PAGES",
        default_value_t = 2048
    )]
    mmap_pages: usize,
    /// The command to run and record (put `--` before it if it has flags of its own).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<OsString>,
}

/// The events of one flag's spec list, resolved (PMU types and formats from sysfs).
fn resolve(text: &str, flag: &str) -> Result<Vec<ResolvedEvent>> {
    resolve_events(text, Path::new(SYSFS_ROOT)).with_context(|| flag.to_string())
}

fn one_spec(text: &str, flag: &str) -> Result<ResolvedEvent> {
    match resolve(text, flag)?.as_slice() {
        [event] => Ok(event.clone()),
        _ => bail!("{flag} {text}: give exactly one event"),
    }
}

/// What to record: the events, their kernel groups, whether they are the no-PMU fallback,
/// and lines for the user.
struct Chosen {
    events: Vec<ResolvedEvent>,
    /// The kernel groups, in order (see [`RecordOptions::groups`]).
    groups: Vec<Group>,
    no_pmu: bool,
    notes: Vec<String>,
}

impl Chosen {
    /// All events one group (the stall/cycles pair, as always recorded); `described`: the
    /// user asked for it as a group.
    fn one_group(
        events: Vec<ResolvedEvent>,
        described: bool,
        no_pmu: bool,
        notes: Vec<String>,
    ) -> Chosen {
        Chosen {
            groups: vec![Group {
                len: events.len(),
                described,
            }],
            events,
            no_pmu,
            notes,
        }
    }

    /// `--leader-sampling`: `[stalls, cycles, instructions?]` as one group led by cycles,
    /// every member with `S`, as perf's `{cycles,stalls,instructions}:S` resolves.
    fn leader_sampled(mut events: Vec<ResolvedEvent>, notes: Vec<String>) -> Chosen {
        if events.len() >= 2 {
            events.swap(0, 1);
        }
        for e in &mut events {
            e.sample_read = true;
        }
        Chosen::one_group(events, true, false, notes)
    }
}

fn choose_events(args: &RecordArgs) -> Result<Chosen> {
    let mut notes = Vec::new();
    let instructions = || one_spec("instructions", "--with-instructions");
    let pair = |events: Vec<ResolvedEvent>, notes| {
        if args.leader_sampling {
            Chosen::leader_sampled(events, notes)
        } else {
            Chosen::one_group(events, false, false, notes)
        }
    };
    if args.stalls.is_some() || args.cycles.is_some() {
        let (Some(s), Some(c)) = (&args.stalls, &args.cycles) else {
            bail!("--stalls and --cycles go together (give both, or -e, or neither for this CPU's pair)");
        };
        let mut events = vec![one_spec(s, "--stalls")?, one_spec(c, "--cycles")?];
        if args.with_instructions {
            events.push(instructions()?);
        }
        return Ok(pair(events, notes));
    }
    if !args.events.is_empty() {
        let mut groups: Vec<EventGroup> = Vec::new();
        for text in &args.events {
            groups.extend(resolve_groups(text, Path::new(SYSFS_ROOT)).context("-e")?);
        }
        if args.with_instructions {
            groups.push(EventGroup {
                events: vec![instructions()?],
                braced: false,
            });
        }
        let groups = join_unbraced(groups);
        return Ok(Chosen {
            groups: groups
                .iter()
                .map(|g| Group {
                    len: g.events.len(),
                    described: g.braced,
                })
                .collect(),
            events: groups.into_iter().flat_map(|g| g.events).collect(),
            no_pmu: false,
            notes,
        });
    }
    match machine::default_pair(args.with_instructions)? {
        Some((events, why)) => {
            notes.push(format!(
                "recording {why}{}",
                if args.leader_sampling {
                    ", as one group sampled by its cycles event"
                } else {
                    ""
                }
            ));
            Ok(pair(events, notes))
        }
        None => {
            notes.push(format!(
                "no hardware stall/cycle counters here (no PMU, as in most VMs): recording cpu-clock alone{}; the graph shows time without stall colours",
                if args.leader_sampling {
                    " (--leader-sampling has no group to sample)"
                } else {
                    ""
                }
            ));
            Ok(Chosen::one_group(
                vec![one_spec("cpu-clock", "default")?],
                false,
                true,
                notes,
            ))
        }
    }
}

/// Records the command; its exit status is the [`Outcome`].
pub fn record_command(args: RecordArgs) -> Result<Outcome> {
    let target = match (args.pid, args.command.is_empty()) {
        (Some(pid), true) => Target::Pid(pid),
        (None, false) => Target::Command(args.command.clone()),
        (Some(_), false) => bail!("-p and a command exclude each other"),
        (None, true) => {
            bail!("nothing to record: give a command (cpiflame record ./app) or -p PID")
        }
    };
    let call_graph: CallGraph = args.call_graph.parse().map_err(anyhow::Error::msg)?;
    let Chosen {
        events,
        groups,
        no_pmu,
        notes,
    } = choose_events(&args)?;
    let explicit_roles = args.stalls.is_some() && args.cycles.is_some();
    for n in &notes {
        eprintln!("cpiflame: {n}");
    }
    let hardware = events.iter().any(|e| e.type_ != 1);
    let sampling = match (args.period, args.freq) {
        (Some(p), _) => Rate::Period(p),
        (None, Some(f)) => Rate::Frequency(f),
        // One fixed period for the pair, so stall and cycle samples compare (the recipe of
        // the original CPI flame graphs).
        (None, None) if hardware => Rate::Period(DEFAULT_PERIOD),
        // A software clock counts nanoseconds: every 250 us is 4 kHz, perf's default rate.
        (None, None) => Rate::Period(250_000),
    };
    let mut cmdline: Vec<String> = std::env::args().collect();
    let marks = RecordingMarks {
        no_pmu,
        // (stalls, cycles): leader sampling put cycles first.
        roles: explicit_roles.then(|| {
            let (stalls, cycles) = if args.leader_sampling { (1, 0) } else { (0, 1) };
            (events[stalls].name.clone(), events[cycles].name.clone())
        }),
    };
    cmdline.extend(marks.to_words());
    let options = RecordOptions {
        events,
        groups,
        sampling,
        call_graph,
        target,
        output: args.output.clone(),
        duration: args.duration.map(Duration::from_secs_f64),
        buffer_pages: args.mmap_pages,
        status_line: true,
        cmdline,
    };
    let report = record(&options)?;
    for w in &report.warnings {
        eprintln!("cpiflame: warning: {w}");
    }
    let samples: u64 = report.samples.iter().sum();
    // A member of a leader-sampled group has no samples of its own: its counts are in the
    // leader's.
    let mut read_by = vec![None; options.events.len()];
    let mut start = 0;
    for g in &options.groups {
        let group = options.events.get(start..start + g.len).unwrap_or_default();
        if let Some(leader) = group.first().filter(|l| l.sample_read) {
            for (k, e) in group.iter().enumerate().skip(1) {
                if e.rate.is_none() {
                    read_by[start + k] = Some(&leader.name);
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
    eprintln!(
        "cpiflame: wrote {}: {samples} samples ({}), {:.1} MB",
        args.output.display(),
        per_event.join(", "),
        report.bytes_written as f64 / 1e6
    );
    if report.lost > 0 {
        let total = samples + report.lost;
        eprintln!(
            "cpiflame: warning: lost {} of {total} samples ({:.1}%): the ring buffer filled faster than it was drained; use a lower -F (or larger -c), or more -m pages{}",
            report.lost,
            report.lost as f64 * 100.0 / total as f64,
            if report.priority_raised {
                ""
            } else {
                " (as root, cpiflame also raises its own priority to drain them in time)"
            }
        );
    }
    if report.throttled > 0 {
        eprintln!(
            "cpiflame: warning: the kernel throttled sampling {} times (kernel.perf_event_max_sample_rate); use a lower rate",
            report.throttled
        );
    }
    Ok(match report.status {
        Some(status) => Outcome::Command(status.code()),
        None => Outcome::Done,
    })
}
