//! Recording: opens the sampled events for a command (or a running process) on every CPU,
//! drains the kernel's ring buffers as they fill, and writes the records into a perf.data file
//! as they come, so memory stays bounded and a killed recorder leaves a readable file.
//!
//! Events are opened per CPU with `inherit`, as `perf record` does, so every thread and child
//! process is followed; the events of one CPU form one kernel group (always scheduled
//! together), or the groups [`RecordOptions::groups`] says, and share one ring buffer.
//! Samples' user stack copies are cut to the bytes in use before they are written.
//!
//! System-wide (`-a`, `-C`: [`RecordOptions::cpus`], [`system`]) the events are opened per
//! CPU for every process (pid -1) instead; the processes already running are described from
//! `/proc` as for an attached process, then the events are enabled and the command started.
//!
//! A leader-sampled group (`{a,b}:S`) is opened as perf 6.1 opens it: the leader samples
//! with PERF_SAMPLE_READ and read_format ID|GROUP (|LOST when the kernel has it), so each
//! of its samples carries the counts of every member; the members do not sample (unless
//! their own spec sets a rate); and, as perf does, without `inherit` when the group has more
//! than one event, so such a group follows the command's first thread only.
//!
//! `record --off-cpu` ([`offcpu`], [`RecordOptions::off_cpu`]) adds events after the
//! chosen ones, each a group of its own: `context-switches` sampled at every switch (the
//! stack at switch-out) with switch records (`attr.context_switch`: switch-in, switch-out,
//! preempted or not), and `sched:sched_waking` with its raw data where permitted; the
//! tracepoint's format goes into the file's tracing data, and the command line gets
//! [`offcpu::OFF_CPU_MARK`].
//!
//! The steps of [`record`] have a module each: `open` (the attrs and opening them), `rings`
//! (mapping the ring buffers), `drain` (ring buffers into the file while the target runs:
//! its `Decoder` keeps only the scratch of decoding and hands what the records tell to
//! their owners), [`rotate`] (`--switch-output`: one file finished and the next started),
//! and `finish` (reaping, features, report). What the records tell has an owner each:
//! `file_facts` (what the file being written holds, for its feature sections),
//! `side_band` (every live process's names, mappings and counter values, which a new
//! `--switch-output` file starts with) and [`jitfiles`]. What the recorder tells as it goes
//! goes to the callback the binary gives [`record`] ([`Status`]; [`StatusLines`] is its
//! text). This file holds the options, the errors and the session that carries a recording
//! from one step to the next, opened in four named steps, and starts the target.
//!
//! This crate must never leave the recorded command running unrecorded or unreaped, nor
//! rename a `--switch-output` file (or remove one for `--max-files`) before it is finished.

pub mod cgroup;
pub mod clock;
mod container;
mod drain;
mod file_facts;
mod finish;
pub mod jitfiles;
pub mod machine;
mod mounts;
pub mod offcpu;
mod open;
pub mod plan;
mod proc;
pub mod request;
mod rings;
pub mod rotate;
pub mod runtimes;
mod side_band;
mod spool;
pub mod stat_groups;
mod status;
pub mod system;
pub mod topdown;
pub mod tracefs;

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use cpiflame_events::{Rate, ResolvedEvent};
use cpiflame_perf_data::write::{attr_flags, PerfDataWriter, WriteError};
use cpiflame_perf_data::EventAttr;

pub use cpiflame_counters::child::ExitStatus;
pub use cpiflame_counters::event_use::leader_sampling;
use cpiflame_counters::event_use::Unhonoured;
use cpiflame_counters::sys;
pub use cpiflame_counters::sys::{explain_open_error, online_cpus};
use cpiflame_counters::{child, ring};
use spool::Spool;

use drain::{drain_until_done, Decoder};
use finish::finish;
use open::{build_attrs, enable_all, group_ranges, open_all, Opened};
pub use open::{probe, probe_sampling};
use rings::map_rings_reporting;
pub use status::{Status, StatusLines};

/// How call chains are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// User registers and a copy of the top of the user stack, unwound later from DWARF CFI.
    Dwarf {
        stack_size: u32,
    },
    /// The kernel walks frame pointers (`-g`, `--call-graph fp`).
    FramePointer,
    None,
}

impl std::str::FromStr for CallGraph {
    type Err = String;

    /// `--call-graph`'s values: `dwarf[,SIZE]`, `fp`, `none`.
    fn from_str(text: &str) -> Result<CallGraph, String> {
        let mut parts = text.splitn(2, ',');
        match (parts.next(), parts.next()) {
            (Some("dwarf"), None) => Ok(CallGraph::Dwarf {
                stack_size: DEFAULT_STACK_SIZE,
            }),
            (Some("dwarf"), Some(size)) => size
                .parse()
                .ok()
                .filter(|s: &u32| *s > 0 && *s <= 65528 && s % 8 == 0)
                .map(|stack_size| CallGraph::Dwarf { stack_size })
                .ok_or_else(|| {
                    format!("--call-graph {text}: SIZE must be a multiple of 8 from 8 to 65528")
                }),
            (Some("fp"), None) => Ok(CallGraph::FramePointer),
            (Some("none") | Some("no"), None) => Ok(CallGraph::None),
            _ => Err(format!(
                "--call-graph {text}: expected dwarf[,SIZE], fp or none"
            )),
        }
    }
}

/// What to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Run this command (argv) and record it and everything it starts.
    Command(Vec<OsString>),
    /// Attach to these running processes and all their threads (`-p PID[,PID...]`).
    Pids(Vec<i32>),
    /// Attach to these threads only (`-t TID[,TID...]`).
    Tids(Vec<i32>),
    /// No command and no process: every process on [`RecordOptions::cpus`] (`-a`, `-C`),
    /// until `--duration` or Ctrl-C.
    Everything,
}

#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The events, as their specs resolved them; the first leads each CPU's group.
    pub events: Vec<ResolvedEvent>,
    /// The kernel groups of [`RecordOptions::events`], in order (their lengths summing to
    /// the number of events); empty: all of them one group. A group whose leader has `S` is
    /// leader-sampled ([`leader_sampling`]).
    pub groups: Vec<Group>,
    /// How often to sample an event whose spec sets no rate.
    pub sampling: Rate,
    pub call_graph: CallGraph,
    pub target: Target,
    pub output: PathBuf,
    /// Stop after this long (a command gets SIGINT, as with Ctrl-C).
    pub duration: Option<Duration>,
    /// Ring buffer size per CPU, in pages (a power of two); shrunk to what the kernel allows.
    pub buffer_pages: usize,
    /// The command line stored in the file.
    pub cmdline: Vec<String>,
    /// Memory-access sampling (`record --mem`): extra sample_type bits for every event.
    pub memory: Option<MemorySampling>,
    /// perf's build-id cache (`~/.debug`): the kernel's symbols are copied into it once per
    /// kernel, as perf record does, so that naming kernel frames later reads a file instead
    /// of making the kernel generate /proc/kallsyms again. `None`: nothing is written.
    pub buildid_cache: Option<PathBuf>,
    /// `record --off-cpu`: which of [`RecordOptions::events`] are the off-CPU ones
    /// ([`offcpu`]); `None` without the flag.
    pub off_cpu: Option<offcpu::OffCpu>,
    /// System-wide (`-a`, `-C LIST`): the events are opened on these CPUs for every process
    /// (pid -1) rather than on the target's threads; `None`: per thread, on every CPU.
    pub cpus: Option<Vec<i32>>,
    /// `--switch-output`: the recording is cut into files that each stand alone
    /// ([`rotate`]); `None`: one file.
    pub switch_output: Option<rotate::SwitchOutput>,
    /// `--switch-max-files`/`--max-files`: with [`RecordOptions::switch_output`], only the
    /// newest this many finished files are kept.
    pub max_files: Option<usize>,
    /// `--cgroup` (system-wide only): the cgroup's directory; the events count the tasks of
    /// that cgroup only (PERF_FLAG_PID_CGROUP).
    pub cgroup: Option<PathBuf>,
    /// The cgroup hierarchy's mount ([`cgroup::find_mount`]): samples carry their task's
    /// cgroup id (PERF_SAMPLE_CGROUP), new cgroups are recorded (`attr.cgroup`) and those
    /// already there are written at the start (PERF_RECORD_CGROUP), as perf's
    /// `--all-cgroups` does. `None`: no cgroup ids.
    pub cgroup_mount: Option<PathBuf>,
    /// Namespaces of every task (`attr.namespaces`, and PERF_RECORD_NAMESPACES of the
    /// processes already running), as perf's `--namespaces` records them.
    pub namespaces: bool,
    /// `-k CLOCK`: the clock of every event's sample times (`attr.clockid`, with
    /// `use_clockid`); `None`: the kernel's perf clock ([`clock`]).
    pub clockid: Option<i32>,
    /// Variables set in the command's environment over the recorder's (`--jit`:
    /// [`runtimes`]); a recording without a command has none.
    pub env: Vec<(OsString, OsString)>,
}

/// What `record --mem` adds to every event's attr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemorySampling {
    /// sample_type bits (ADDR, DATA_SRC, WEIGHT or WEIGHT_STRUCT, PHYS_ADDR).
    pub sample_type: u64,
    /// The PMU refuses exclude bits (AMD IBS): kernel samples are kept rather than
    /// excluded where kernel call chains are not allowed.
    pub no_exclude: bool,
}

/// One kernel group of [`RecordOptions::events`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// How many events, the next ones in order.
    pub len: usize,
    /// A group the user asked for (`{...}`, `--leader-sampling`): described in the file's
    /// GROUP_DESC feature, as perf describes its groups, when it has more than one event.
    /// cpiflame's own grouping of events given outside braces is not (perf opens those
    /// alone, and describing them would change how `perf report` shows them).
    pub described: bool,
}

/// Default user stack copy per sample. perf's 8192 bytes cut stacks with large frames short
/// (the `threads bigframe` fixture needs 32 KiB); copies are trimmed to the bytes in use
/// before they reach the file, so a larger copy costs ring-buffer room, not file size.
pub const DEFAULT_STACK_SIZE: u32 = 32768;

/// What happened, for the end-of-run report.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// How the command ended (`None` when attached to a process).
    pub status: Option<ExitStatus>,
    /// The recorder stopped the command itself (SIGINT at `duration`): its status is the
    /// planned stop's, not a failure of its own.
    pub stopped_at_duration: bool,
    /// Samples written, per event.
    pub samples: Vec<u64>,
    /// Samples the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// THROTTLE records: the kernel lowered the rate because sampling took too long.
    pub throttled: u64,
    pub bytes_written: u64,
    /// With `--switch-output`: the files finished (those `--max-files` removed included)...
    pub files_written: usize,
    /// ...and those left, oldest first.
    pub files: Vec<PathBuf>,
    /// Ring buffer pages per CPU actually used.
    pub buffer_pages: usize,
    /// Whether kernel call chains were recorded (perf_event_paranoid may forbid them).
    pub kernel_callchains: bool,
    /// Whether the recorder could raise its scheduling priority above the command's (see
    /// `raise_priority`); without it a command with more runnable threads than CPUs can
    /// starve the recorder and samples are lost.
    pub priority_raised: bool,
    /// Lines worth telling the user (each stands alone).
    pub warnings: Vec<String>,
    /// The JIT dumps and perf maps kept beside the output ([`jitfiles`]).
    pub jit: jitfiles::Kept,
}

/// Why recording failed. Each message names the event, file or command at fault.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// perf_event_open refused an event; the message says why and what to change.
    #[error("{0}")]
    Open(String),
    /// An event's spec asks for something a sampled event cannot do.
    #[error(transparent)]
    Unhonoured(#[from] Unhonoured),
    /// The command could not be executed (exit status 127).
    #[error("cannot execute {program}: {source}")]
    Exec { program: String, source: io::Error },
    /// The output file could not be created.
    #[error("{path}: {error}")]
    Output { path: PathBuf, error: io::Error },
    /// The start of the output file (header, attrs, synthesized records) could not be
    /// written.
    #[error("{path}: {error}")]
    Write { path: PathBuf, error: WriteError },
    /// Writing failed mid-run (disk full, quota, I/O error): recording stopped, the command
    /// was stopped and reaped, and the file keeps the records that reached it; `what` says
    /// how much.
    #[error("{path}: {error}; {what}")]
    WriteFailed {
        path: PathBuf,
        error: WriteError,
        what: String,
        /// How the command ended (it was stopped with SIGTERM, or had ended already).
        status: Option<ExitStatus>,
    },
    /// Mapping a ring buffer failed even at its smallest size.
    #[error("cannot map a ring buffer: {0} (kernel.perf_event_mlock_kb and `ulimit -l` limit it)")]
    Mmap(io::Error),
    /// Attaching to a process failed.
    #[error("process {pid}: {error}")]
    Attach { pid: i32, error: io::Error },
}

/// Creates the output file: an existing one is kept as FILE.old (as perf does); the new one is
/// created fresh with mode 0600, never through a link planted at its path.
fn create_output(path: &Path) -> Result<File, RecordError> {
    let err = |source| RecordError::Output {
        path: path.to_path_buf(),
        error: source,
    };
    if std::fs::symlink_metadata(path).is_ok() {
        let mut old = path.as_os_str().to_owned();
        old.push(".old");
        std::fs::rename(path, &old).map_err(err)?;
    }
    OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(err)
}

/// Raises the recorder's scheduling priority by `levels` nice levels (to -20 at most) when it
/// may (root, CAP_SYS_NICE or RLIMIT_NICE). Samples are lost when the recorder does not drain
/// the ring buffers in time, and a command with more runnable threads than there are CPUs
/// gives each of them as much CPU as the recorder: 64 threads on 2 CPUs leave it 3% of a CPU,
/// and both perf and cpiflame then lose most samples. With the higher priority it runs when
/// it has records to drain; it takes no more CPU than the records cost. See
/// [`PRIORITY_LEVELS`] for how many. Called after the command is forked (and only affects
/// this thread), so the command's priority is its own.
fn raise_priority(levels: i32) -> bool {
    // SAFETY: getpriority/setpriority on the calling thread; errno is reset first because
    // -1 is also a valid priority.
    unsafe {
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS as _, 0);
        if now == -1 && *libc::__errno_location() != 0 {
            return false;
        }
        let want = (now - levels).max(-20);
        want < now && libc::setpriority(libc::PRIO_PROCESS as _, 0, want) == 0
    }
}

/// How far [`raise_priority`] raises the recorder: (recording what it was given, recording the
/// whole machine). Recording a command, its processes or threads, twenty levels: the swarm
/// test (115 runnable tasks on 2 CPUs) loses nothing, where ten lost 4% of its samples in
/// one of the suite's runs under load and five lost half. System-wide (`-a`, `-C`), ten: the
/// other programs there are what is measured, and with twenty they ran at 0.93x their rate
/// under `perf record -a` on a busy machine (1.00x at ten).
const PRIORITY_LEVELS: (i32, i32) = (20, 10);

/// Kernel samples and call chains need perf_event_paranoid <= 1, or root.
fn kernel_allowed() -> bool {
    sys::kernel_allowed()
}

/// Records the target into `options.output`: opens the events and maps their rings, starts
/// (or attaches to) the target, drains the rings into the file until it ends, and finishes
/// the file. What it tells as it goes is handed to `status`.
pub fn record(
    options: &RecordOptions,
    status: &mut dyn FnMut(Status<'_>),
) -> Result<Report, RecordError> {
    let mut report = Report::default();
    let mut session = open_session(options, &mut report)?;
    let rotating = session.rotating.is_some();
    let mut drain = Decoder::new(&session.attrs, options.call_graph, rotating);
    drain.facts.clock = session.clock;
    drain.wakees = session.wakees.take();
    // Before the command starts: the files already in the current directory are the user's.
    let node_told = options.env.iter().any(|(name, _)| name == "NODE_OPTIONS");
    drain.jit = jitfiles::JitFiles::start(&options.output, rotating, node_told);
    start_target(options, &mut session, &mut drain, &mut report)?;
    let started = Instant::now();
    let outcome = drain_until_done(options, &mut session, &mut drain, &mut report, status);
    finish(
        options,
        session,
        &mut drain,
        outcome,
        started.elapsed(),
        report,
        status,
    )
}

/// What a recording holds from opening its events to finishing its file.
struct Session {
    /// The command, held until [`start_target`]; `None` when attached to a process.
    child: Option<child::Child>,
    /// Attached: the processes to describe from `/proc` (those of the threads of `-t`).
    processes: Vec<i32>,
    /// Attached: the recording ends when none of these (pids of `-p`, tids of `-t`) is left.
    watched: Vec<i32>,
    /// The attrs as opened, with their ids.
    attrs: Vec<EventAttr>,
    opened: Opened,
    rings: Vec<ring::Ring>,
    writer: PerfDataWriter<Spool>,
    /// With `--switch-output`: the files so far and when to switch.
    rotating: Option<rotate::Rotating>,
    /// The clock's resolution and the instant read on it and the wall clock before the
    /// events were opened (every file's CLOCKID and CLOCK_DATA); `None` on the perf clock.
    clock: Option<(Option<u64>, cpiflame_perf_data::ClockData)>,
    /// `--off-cpu` with the wakeup tracepoint opened for every process: which of its
    /// samples to keep, starting from the target's threads.
    wakees: Option<offcpu::WakeeFilter>,
}

/// Per event: opened once per CPU for every process rather than on the target's threads
/// (`--off-cpu`'s wakeup tracepoint, where permitted).
fn every_process_events(options: &RecordOptions) -> Vec<bool> {
    let every = options
        .off_cpu
        .as_ref()
        .and_then(|off| off.waking.as_ref())
        .filter(|w| w.every_process)
        .map(|w| w.index);
    (0..options.events.len())
        .map(|i| Some(i) == every)
        .collect()
}

/// Opens a recording in four steps: what the kernel allows ([`kernel_permission`]), the
/// target held ([`hold_target`]), its events opened and their rings mapped
/// ([`open_events`]), the output file started ([`start_file`]).
fn open_session(options: &RecordOptions, report: &mut Report) -> Result<Session, RecordError> {
    let kernel_callchains = kernel_permission(options, report)?;
    // Read before the events are opened, as perf reads it.
    let clock = clock::reference(options.clockid);
    let held = hold_target(options)?;
    // After the fork: the command keeps the priority it was started with.
    let levels = match options.cpus {
        None => PRIORITY_LEVELS.0,
        Some(_) => PRIORITY_LEVELS.1,
    };
    report.priority_raised = raise_priority(levels);
    let (attrs, opened, rings) = open_events(options, &held, kernel_callchains, report)?;
    // Before the file exists: SIGUSR2 must not end a recording that switches on it.
    let rotating = rotate::Rotating::new(options);
    let (writer, start) = start_file(options, &attrs, kernel_callchains)?;
    report.samples = vec![0; attrs.len()];
    let wakees = options
        .off_cpu
        .as_ref()
        .and_then(|off| offcpu::WakeeFilter::new(off, &held.threads));
    Ok(Session {
        wakees,
        clock,
        rotating: rotating.map(|r| r.starting_with(start)),
        child: held.child,
        processes: held.processes,
        watched: held.watched,
        attrs,
        opened,
        rings,
        writer,
    })
}

/// Whether kernel samples and call chains may be recorded; without, the one line saying so,
/// and an error for an event of kernel space only (it would count nothing).
fn kernel_permission(options: &RecordOptions, report: &mut Report) -> Result<bool, RecordError> {
    let kernel_callchains = kernel_allowed();
    report.kernel_callchains = kernel_callchains;
    if !kernel_callchains {
        report.warnings.push(format!(
            "kernel.perf_event_paranoid is {}: recording user space only (no kernel frames); `sysctl kernel.perf_event_paranoid=1` allows them",
            sys::paranoid().map_or("?".into(), |p| p.to_string())
        ));
        if let Some(e) = options.events.iter().find(|e| e.exclude_user) {
            return Err(RecordError::Open(sys::explain_kernel_only(&e.name)));
        }
    }
    Ok(kernel_callchains)
}

/// The target, before anything of it is recorded.
struct HeldTarget {
    /// The command, forked and held before its exec; `None` when attached or system-wide.
    child: Option<child::Child>,
    /// The threads the events are opened on (pid -1: every process, system-wide).
    threads: Vec<i32>,
    /// Attached: the processes to describe from `/proc` (those of the threads of `-t`).
    processes: Vec<i32>,
    /// Attached: the recording ends when none of these (pids of `-p`, tids of `-t`) is left.
    watched: Vec<i32>,
}

/// Forks the command and holds it before its exec, or lists the threads of the processes
/// (or the threads) to attach to.
fn hold_target(options: &RecordOptions) -> Result<HeldTarget, RecordError> {
    let (child, threads) = match &options.target {
        Target::Command(argv) => {
            let c = child::spawn_held_with_env(argv, &options.env).map_err(|source| {
                RecordError::Exec {
                    program: argv
                        .first()
                        .map(|a| a.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    source,
                }
            })?;
            let pid = c.pid;
            (Some(c), vec![pid])
        }
        Target::Pids(pids) => {
            let mut threads = Vec::new();
            for &pid in pids {
                threads.extend(
                    proc::threads(pid).map_err(|error| RecordError::Attach { pid, error })?,
                );
            }
            (None, threads)
        }
        Target::Tids(tids) => (None, tids.clone()),
        Target::Everything => (None, Vec::new()),
    };
    let (processes, watched) = match &options.target {
        Target::Pids(pids) => (pids.clone(), pids.clone()),
        Target::Tids(tids) => {
            let mut pids = Vec::new();
            for &tid in tids {
                pids.push(
                    proc::process_of(tid)
                        .map_err(|error| RecordError::Attach { pid: tid, error })?,
                );
            }
            pids.sort_unstable();
            pids.dedup();
            (pids, tids.clone())
        }
        Target::Command(_) | Target::Everything => (Vec::new(), Vec::new()),
    };
    // System-wide: one event per CPU for every process (pid -1), the command included.
    let threads = if options.cpus.is_some() {
        vec![-1]
    } else {
        threads
    };
    Ok(HeldTarget {
        child,
        threads,
        processes,
        watched,
    })
}

/// Opens the events on the held target's threads (or every process) on every CPU, with
/// their ids, and maps their rings. What the kernel refuses of the extras (namespaces,
/// cgroup ids) is left out with one line; a clock only software events may use is named in
/// the error.
fn open_events(
    options: &RecordOptions,
    held: &HeldTarget,
    kernel_callchains: bool,
    report: &mut Report,
) -> Result<(Vec<EventAttr>, Opened, Vec<ring::Ring>), RecordError> {
    let names: Vec<String> = options.events.iter().map(|e| e.name.clone()).collect();
    let cpus = options.cpus.clone().unwrap_or_else(online_cpus);
    // A CPU-wide event is not tied to the command's exec: it is enabled once the processes
    // already running are written, before the command starts.
    let enable_on_exec = held.child.is_some() && options.cpus.is_none();
    let mut leads = vec![false; options.events.len()];
    for (start, _) in group_ranges(options)? {
        leads[start] = true;
    }
    let cgroup = options
        .cgroup
        .as_ref()
        .map(|dir| {
            File::open(dir)
                .map_err(|e| RecordError::Open(format!("--cgroup {}: {e}", dir.display())))
        })
        .transpose()?;
    let every_process = every_process_events(options);
    let open = |o: &RecordOptions| -> Result<_, RecordError> {
        let attrs = build_attrs(o, kernel_callchains, enable_on_exec)?;
        let opened = open_all(
            &attrs,
            &names,
            &leads,
            &held.threads,
            &cpus,
            cgroup.as_ref(),
            &every_process,
        )?;
        Ok((attrs, opened))
    };
    let opened = match open(options) {
        Ok(opened) => Ok(opened),
        // A user without CAP_PERFMON (`attr.namespaces` needs it), or a kernel without
        // PERF_SAMPLE_CGROUP (before 5.7): recorded without what was refused, said once.
        Err(e) => {
            match cgroup::without_extras(options)
                .into_iter()
                .find_map(|(o, dropped)| Some((open(&o).ok()?, dropped)))
            {
                Some((opened, dropped)) => {
                    report.warnings.push(dropped);
                    Ok(opened)
                }
                None => Err(e),
            }
        }
    };
    // A clock the kernel lets only software events use (`-k realtime`) is the likely cause.
    let (mut attrs, opened) =
        opened.map_err(|e| match (e, clock::refused_line(options.clockid)) {
            (RecordError::Open(why), Some(line)) => RecordError::Open(format!("{why}; {line}")),
            (e, _) => e,
        })?;
    for (attr, ids) in attrs.iter_mut().zip(&opened.ids) {
        attr.ids = ids.clone();
    }
    let rings = map_rings_reporting(options, &opened, report)?;
    Ok((attrs, opened, rings))
}

/// Creates the output file and writes what it starts with: the header and attrs, the
/// kernel image's MMAP record (perf names kernel frames through it), the cgroups there now;
/// all of it on disk at once, so a recorder killed from then on leaves a file that reads.
/// Also returns those first records (every `--switch-output` file starts with them).
fn start_file(
    options: &RecordOptions,
    attrs: &[EventAttr],
    kernel_callchains: bool,
) -> Result<(PerfDataWriter<Spool>, Vec<Vec<u8>>), RecordError> {
    let file = create_output(&options.output)?;
    let out_err = |error| RecordError::Write {
        path: options.output.clone(),
        error,
    };
    let mut writer = PerfDataWriter::new(Spool::new(file), attrs.to_vec()).map_err(out_err)?;
    let kernel = kernel_callchains
        .then(|| proc::kernel_mmap(&attrs[0], options.buildid_cache.as_deref()))
        .flatten();
    if let Some(record) = &kernel {
        writer.write_record(record).map_err(out_err)?;
    }
    let mut start: Vec<Vec<u8>> = kernel.into_iter().collect();
    // The cgroups there now (those made later the kernel records): their ids' paths.
    if let Some(mount) = options
        .cgroup_mount
        .as_ref()
        .filter(|_| attrs[0].flags & attr_flags::CGROUP != 0)
    {
        for record in cgroup::synthesize(mount, &attrs[0]) {
            writer.write_record(&record).map_err(out_err)?;
            start.push(record);
        }
    }
    // The drain loop flushes the records at a bounded interval from here on.
    writer.get_ref().flush_now().map_err(|source| {
        out_err(WriteError::Io {
            what: "the header and attrs",
            source,
        })
    })?;
    Ok((writer, start))
}

/// Lets the held command exec (its events are enabled on exec), or, attached to a process,
/// writes the COMM and MMAP2 records of what it already is and enables the events.
/// System-wide, every running process is written so, the events enabled, and then the
/// command (if any) started.
fn start_target(
    options: &RecordOptions,
    session: &mut Session,
    drain: &mut Decoder,
    report: &mut Report,
) -> Result<(), RecordError> {
    if options.cpus.is_some() {
        let write_err = |error| RecordError::Write {
            path: options.output.clone(),
            error,
        };
        for pid in proc::processes() {
            // A process that ended since /proc was listed has nothing left to describe.
            let Ok(mut records) = proc::synthesize(pid, &session.attrs[0]) else {
                continue;
            };
            if session.attrs[0].flags & attr_flags::NAMESPACES != 0 {
                records.extend(proc::namespaces(pid, &session.attrs[0]).unwrap_or_default());
            }
            for record in records {
                drain::write_one(&record, &mut session.writer, drain, report).map_err(write_err)?;
            }
        }
        let names: Vec<String> = options.events.iter().map(|e| e.name.clone()).collect();
        enable_all(&session.opened, &names, -1)?;
        if session.child.is_none() {
            child::forward_signals(0);
            return Ok(());
        }
    }
    match &mut session.child {
        Some(c) => {
            child::forward_signals(c.pid);
            // Events opened for every process have no exec to enable them: enabled now,
            // before the command runs (what they see of others is filtered as drained).
            let every = every_process_events(options);
            for (fd, &event) in session.opened.fds.iter().zip(&session.opened.event_of) {
                if every[event] {
                    sys::enable(fd).map_err(|e| {
                        RecordError::Open(sys::explain_enable_error(
                            &options.events[event].name,
                            c.pid,
                            &e,
                        ))
                    })?;
                }
            }
            if let Err(source) = c.start() {
                let _ = std::fs::remove_file(&options.output);
                let program = match &options.target {
                    Target::Command(argv) => argv[0].to_string_lossy().into_owned(),
                    _ => String::new(),
                };
                return Err(RecordError::Exec { program, source });
            }
        }
        None => {
            child::forward_signals(0);
            for &pid in &session.processes {
                for record in proc::synthesize(pid, &session.attrs[0])
                    .map_err(|error| RecordError::Attach { pid, error })?
                {
                    // As drained records are: the record-time unwinder learns the process's
                    // mappings (so its samples' stack copies are trimmed too), and its files'
                    // build ids are kept.
                    drain::write_one(&record, &mut session.writer, drain, report).map_err(
                        |error| RecordError::Write {
                            path: options.output.clone(),
                            error,
                        },
                    )?;
                }
            }
            let names: Vec<String> = options.events.iter().map(|e| e.name.clone()).collect();
            let pid = session.processes.first().copied().unwrap_or(-1);
            enable_all(&session.opened, &names, pid)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file_facts::group_descs;
    use cpiflame_perf_data::abi::{read_format as rf, sample as st};
    use cpiflame_perf_data::write::{attr_flags, GroupDesc};
    use std::collections::HashMap;

    /// An fd that is not a perf event makes PERF_EVENT_IOC_ENABLE fail (ENOTTY): the
    /// recording must stop with the event named, not go on recording nothing.
    #[test]
    fn a_failed_enable_is_an_error_naming_the_event() {
        let file = |path: &str| File::open(path).unwrap();
        let opened = Opened {
            fds: vec![file("/dev/null"), file("/dev/null")],
            ring_fds: vec![0],
            redirects: Vec::new(),
            ids: vec![vec![1], vec![2]],
            event_of: vec![0, 1],
        };
        let names = ["cpu-clock".to_string(), "page-faults".to_string()];
        let e = enable_all(&opened, &names, 1234).unwrap_err();
        let message = e.to_string();
        assert!(matches!(e, RecordError::Open(_)), "{message}");
        assert!(message.contains("event cpu-clock"), "{message}");
        assert!(message.contains("process 1234"), "{message}");
        assert!(message.contains("ENOTTY"), "{message}");
        assert!(!message.contains("os error"), "{message}");
    }

    fn options(spec: &str, groups: &[(usize, bool)]) -> RecordOptions {
        RecordOptions {
            events: cpiflame_events::parse_events(spec)
                .unwrap()
                .iter()
                .map(|e| e.resolve(0))
                .collect(),
            groups: groups
                .iter()
                .map(|&(len, described)| Group { len, described })
                .collect(),
            sampling: Rate::Period(250_000),
            call_graph: CallGraph::Dwarf { stack_size: 8192 },
            ..crate::open::probe_options()
        }
    }

    /// `record --topdown` on Ice Lake and later: `{slots,cycles,topdown-*}:S` opens as perf's
    /// read-sampler rule and topdown.txt say: slots counts (period 0), the second member
    /// samples, the metrics count, every member reads the group.
    #[test]
    fn a_slots_leader_of_metric_events_lets_the_second_member_sample() {
        let spec = "{cpu/event=0x00,umask=0x4,name=slots/,cpu/event=0x3c,name=cycles/,\
                    cpu/event=0x00,umask=0x80,name=topdown-retiring/}:S";
        // The core PMU's type, as `cpu`'s sysfs type (4) gives it.
        let on_cpu = |spec: &str, groups: &[(usize, bool)]| RecordOptions {
            events: cpiflame_events::parse_events(spec)
                .unwrap()
                .iter()
                .map(|e| e.resolve(4))
                .collect(),
            ..options(spec, groups)
        };
        let attrs = build_attrs(&on_cpu(spec, &[(3, true)]), true, true).unwrap();
        let periods: Vec<u64> = attrs.iter().map(|a| a.sample_period_or_freq).collect();
        assert_eq!(periods, [0, 250_000, 0]);
        for a in &attrs {
            assert_ne!(a.sample_type & st::READ, 0);
            assert_eq!(a.read_format & !rf::LOST, rf::ID | rf::GROUP);
        }
        assert_eq!((attrs[0].config, attrs[2].config), (0x400, 0x8000));
        // Without a metric event slots may sample, as perf keeps `{slots,branches}:S`.
        let o = on_cpu(
            "{cpu/event=0x00,umask=0x4,name=slots/,cpu/event=0xc4,name=branches/}:S",
            &[(2, true)],
        );
        let periods: Vec<u64> = build_attrs(&o, true, true)
            .unwrap()
            .iter()
            .map(|a| a.sample_period_or_freq)
            .collect();
        assert_eq!(periods, [250_000, 0]);
    }

    /// What perf 6.1 writes for `{cpu-clock,task-clock}:S,page-faults` (`perf evlist -v`):
    /// the group reads, only its leader samples, neither inherits; page-faults is a group
    /// of its own, led (disabled, enabled on exec) and inherited.
    #[test]
    fn a_leader_sampled_group_is_opened_as_perf_opens_it() {
        let o = options(
            "{cpu-clock,task-clock}:S,page-faults",
            &[(2, true), (1, false)],
        );
        let attrs = build_attrs(&o, true, true).unwrap();
        let [leader, member, faults] = &attrs[..] else {
            panic!("{attrs:?}");
        };
        for a in [leader, member] {
            assert_ne!(a.sample_type & st::READ, 0);
            assert_eq!(a.read_format & !rf::LOST, rf::ID | rf::GROUP);
            assert_eq!(a.flags & attr_flags::INHERIT, 0);
        }
        assert_eq!(leader.sample_period_or_freq, 250_000);
        assert_eq!(member.sample_period_or_freq, 0);
        assert_eq!(member.flags & (attr_flags::DISABLED | attr_flags::FREQ), 0);
        assert_eq!(faults.sample_type & st::READ, 0);
        assert_eq!(faults.read_format, 0);
        for a in [leader, faults] {
            let on = attr_flags::DISABLED | attr_flags::ENABLE_ON_EXEC;
            assert_eq!(a.flags & on, on, "{a:?}");
        }
        assert_ne!(faults.flags & attr_flags::INHERIT, 0);
        assert_eq!(
            faults.flags & attr_flags::MMAP,
            0,
            "side-band from the first only"
        );
        assert_eq!(
            group_descs(&o),
            [GroupDesc {
                name: None,
                leader: 0,
                members: 2
            }]
        );

        // A lone `a:S` reads only itself (no GROUP) and keeps inherit, as in perf.
        let attrs = build_attrs(&options("cpu-clock:S", &[(1, false)]), true, true).unwrap();
        assert_eq!(attrs[0].read_format & !rf::LOST, rf::ID);
        assert_ne!(attrs[0].flags & attr_flags::INHERIT, 0);

        // S on a member only, and groups that do not cover the events, are refused.
        let e =
            build_attrs(&options("cpu-clock,task-clock:S", &[(2, true)]), true, true).unwrap_err();
        assert!(e.to_string().contains("S on a group member"), "{e}");
        let e =
            build_attrs(&options("cpu-clock,task-clock", &[(1, false)]), true, true).unwrap_err();
        assert!(e.to_string().contains("do not cover"), "{e}");
    }

    /// `--off-cpu`'s events as opened: context-switches with the on-CPU events' sample_type,
    /// a sample at every switch, switch records, its stack copy capped; sched:sched_waking
    /// with its raw data and no stack; each its own group (led, enabled on exec), inherited,
    /// without side-band records of their own.
    #[test]
    fn off_cpu_attrs() {
        use offcpu::{FoundTracepoint, SWITCH_STACK_SIZE};
        let mut o = options("cpu-clock", &[]);
        o.call_graph = CallGraph::Dwarf { stack_size: 32768 };
        let found = FoundTracepoint {
            id: 317,
            tracing: Default::default(),
        };
        o.off_cpu = Some(offcpu::add_events(
            &mut o.events,
            &mut o.groups,
            Some((found.clone(), offcpu::WakingScope::PerTask)),
        ));
        let attrs = build_attrs(&o, true, true).unwrap();
        let [clock, switches, waking] = &attrs[..] else {
            panic!("{attrs:?}");
        };
        assert_eq!(switches.sample_type, clock.sample_type);
        assert_eq!(
            (
                switches.type_,
                switches.config,
                switches.sample_period_or_freq
            ),
            (1, 3, 1)
        );
        assert_ne!(switches.flags & attr_flags::CONTEXT_SWITCH, 0);
        assert_eq!(clock.flags & attr_flags::CONTEXT_SWITCH, 0);
        assert_eq!(switches.sample_stack_user, SWITCH_STACK_SIZE);
        assert_eq!(clock.sample_stack_user, 32768);
        assert_eq!(
            waking.sample_type,
            st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::RAW
        );
        assert_eq!(
            (waking.type_, waking.config, waking.sample_period_or_freq),
            (2, 317, 1)
        );
        assert_eq!((waking.sample_regs_user, waking.sample_stack_user), (0, 0));
        assert_eq!(waking.flags & attr_flags::FREQ, 0);
        for a in &attrs {
            let on = attr_flags::INHERIT | attr_flags::SAMPLE_ID_ALL | attr_flags::DISABLED;
            assert_eq!(a.flags & on, on, "{a:?}");
        }
        for a in [switches, waking] {
            assert_ne!(a.flags & attr_flags::ENABLE_ON_EXEC, 0);
            assert_eq!(a.flags & (attr_flags::MMAP | attr_flags::COMM), 0);
        }
        // A smaller copy asked for is kept.
        o.call_graph = CallGraph::Dwarf { stack_size: 2048 };
        let attrs = build_attrs(&o, true, true).unwrap();
        assert_eq!(attrs[1].sample_stack_user, 2048);

        // Opened for every process: the same sample, not inherited, not enabled by the
        // exec (the recorder enables it), and only it.
        let mut o = options("cpu-clock", &[]);
        o.off_cpu = Some(offcpu::add_events(
            &mut o.events,
            &mut o.groups,
            Some((found, offcpu::WakingScope::EveryProcess)),
        ));
        assert_eq!(every_process_events(&o), [false, false, true]);
        let attrs = build_attrs(&o, true, true).unwrap();
        let waking = &attrs[2];
        assert_eq!(waking.sample_type, offcpu::WAKING_SAMPLE_TYPE);
        assert_eq!(
            waking.flags & (attr_flags::INHERIT | attr_flags::ENABLE_ON_EXEC),
            0
        );
        assert_ne!(waking.flags & attr_flags::DISABLED, 0);
        for a in &attrs[..2] {
            let on = attr_flags::INHERIT | attr_flags::ENABLE_ON_EXEC;
            assert_eq!(a.flags & on, on, "{a:?}");
        }
    }

    /// `-k mono` (the default): every event opened, the off-CPU ones included, times its
    /// samples on CLOCK_MONOTONIC, as `perf record -k mono` sets `use_clockid` and
    /// `clockid`; `-k perf` leaves both unset.
    #[test]
    fn every_attr_carries_the_clock() {
        let mut o = options("cpu-clock,page-faults", &[]);
        o.off_cpu = Some(offcpu::add_events(&mut o.events, &mut o.groups, None));
        o.clockid = Some(clock::MONOTONIC);
        let attrs = build_attrs(&o, true, true).unwrap();
        assert_eq!(attrs.len(), 3);
        for a in &attrs {
            assert_ne!(a.flags & attr_flags::USE_CLOCKID, 0, "{a:?}");
            assert_eq!(a.clockid, 1, "{a:?}");
        }
        o.clockid = None;
        for a in build_attrs(&o, true, true).unwrap() {
            assert_eq!((a.flags & attr_flags::USE_CLOCKID, a.clockid), (0, 0));
        }
    }

    /// `record --mem`'s options for a preset read from fake sysfs files.
    fn memory_options(cpu: &str, pmus: &[(&str, &str)], files: &[(&str, &str)]) -> RecordOptions {
        memory_options_with(cpu, pmus, files, Default::default())
    }

    /// The same with `record --mem`'s flags.
    fn memory_options_with(
        cpu: &str,
        pmus: &[(&str, &str)],
        files: &[(&str, &str)],
        mem: cpiflame_events::memory::MemOptions,
    ) -> RecordOptions {
        use cpiflame_events::memory::memory_presets;
        let cpu = cpiflame_events::parse_cpuinfo(cpu).unwrap();
        let pmus = cpiflame_events::Pmus::from_entries(pmus.iter().map(|(n, t)| (*n, Some(*t))));
        let files: HashMap<String, String> = files
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let found = memory_presets(&cpu, &pmus, &|p| files.get(p).cloned(), mem);
        let m = machine::MemoryEvents::of(&found.presets[0]);
        RecordOptions {
            events: m.events,
            groups: m.groups,
            memory: Some(m.sampling),
            sampling: Rate::Frequency(4000),
            ..options("cpu-clock", &[])
        }
    }

    const SKYLAKE: &str = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 94\n";
    const ZEN3: &str = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 33\n";
    const ALDER_LAKE: &str = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 151\n";

    /// The recorder's part of the sample_type (IDENTIFIER where perf has ID) and the memory
    /// bits perf mem sets (`-d`: ADDR, DATA_SRC; `-W` on x86: WEIGHT_STRUCT), with DWARF
    /// call chains as every recording has them.
    const MEM_SAMPLE_TYPE: u64 = st::IDENTIFIER
        | st::IP
        | st::TID
        | st::TIME
        | st::ADDR
        | st::CPU
        | st::PERIOD
        | st::REGS_USER
        | st::STACK_USER
        | st::CALLCHAIN
        | st::DATA_SRC
        | st::WEIGHT_STRUCT;

    fn precise(a: &EventAttr) -> u64 {
        (a.flags & attr_flags::PRECISE_IP_MASK) >> attr_flags::PRECISE_IP_SHIFT
    }

    /// `perf mem record` on Skylake opens `cpu/mem-loads,ldlat=30/P` and
    /// `cpu/mem-stores/P`: type 4, config 0x1cd with config1 30 and config 0x82d0,
    /// precise_ip 3, at 4000 samples a second, each on its own.
    #[test]
    fn skylake_memory_attrs_are_perf_mems() {
        let o = memory_options(
            SKYLAKE,
            &[("cpu", "4")],
            &[
                ("cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
                ("cpu/events/mem-stores", "event=0xd0,umask=0x82"),
                ("cpu/caps/max_precise", "3"),
            ],
        );
        let attrs = build_attrs(&o, true, true).unwrap();
        let [loads, stores] = &attrs[..] else {
            panic!("{attrs:?}");
        };
        assert_eq!((loads.type_, loads.config, loads.config1), (4, 0x1cd, 30));
        assert_eq!(
            (stores.type_, stores.config, stores.config1),
            (4, 0x82d0, 0)
        );
        for a in [loads, stores] {
            assert_eq!(precise(a), 3);
            assert_eq!(a.sample_type, MEM_SAMPLE_TYPE);
            assert_eq!(a.sample_period_or_freq, 4000);
            let on = attr_flags::FREQ
                | attr_flags::MMAP_DATA
                | attr_flags::DISABLED
                | attr_flags::EXCLUDE_GUEST;
            assert_eq!(a.flags & on, on, "{a:?}");
        }
        assert!(group_descs(&o).is_empty());
    }

    /// Alder Lake's P-cores: `{cpu_core/mem-loads-aux/,cpu_core/mem-loads,ldlat=30/}:P`
    /// (the aux event leads, as the kernel demands) and `cpu_core/mem-stores/P`
    /// (`event=0xcd,umask=0x2`, the kernel's mem_st_adl for the big cores), on cpu_core's
    /// own type.
    #[test]
    fn alder_lake_memory_attrs_group_the_aux_event_first() {
        let o = memory_options(
            ALDER_LAKE,
            &[("cpu_core", "8"), ("cpu_atom", "10")],
            &[
                ("cpu_core/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
                ("cpu_core/events/mem-loads-aux", "event=0x03,umask=0x82"),
                ("cpu_core/events/mem-stores", "event=0xcd,umask=0x2"),
                ("cpu_core/caps/max_precise", "3"),
            ],
        );
        let attrs = build_attrs(&o, true, true).unwrap();
        let got: Vec<(u32, u64, u64, u64)> = attrs
            .iter()
            .map(|a| (a.type_, a.config, a.config1, precise(a)))
            .collect();
        assert_eq!(
            got,
            [(8, 0x8203, 0, 3), (8, 0x1cd, 30, 3), (8, 0x2cd, 0, 3)]
        );
        assert!(attrs.iter().all(|a| a.sample_type == MEM_SAMPLE_TYPE));
        assert_ne!(attrs[0].flags & attr_flags::DISABLED, 0);
        assert_eq!(attrs[1].flags & attr_flags::DISABLED, 0, "a member follows");
        assert_eq!(
            group_descs(&o),
            [GroupDesc {
                name: None,
                leader: 0,
                members: 2
            }]
        );
    }

    /// AMD: `ibs_op//` on its dynamic type, config 0, not precise, and no exclude bit even
    /// where kernel call chains are not allowed (IBS refuses them all).
    #[test]
    fn amd_ibs_op_attrs_have_no_exclude_bits() {
        let o = memory_options(ZEN3, &[("cpu", "4"), ("ibs_op", "11")], &[]);
        let attrs = build_attrs(&o, false, true).unwrap();
        let [op] = &attrs[..] else {
            panic!("{attrs:?}");
        };
        assert_eq!((op.type_, op.config, precise(op)), (11, 0, 0));
        let excludes = attr_flags::EXCLUDE_USER
            | attr_flags::EXCLUDE_KERNEL
            | attr_flags::EXCLUDE_HV
            | attr_flags::EXCLUDE_IDLE
            | attr_flags::EXCLUDE_HOST
            | attr_flags::EXCLUDE_GUEST;
        assert_eq!(op.flags & excludes, 0);
        assert_eq!(op.sample_type, MEM_SAMPLE_TYPE & !st::CALLCHAIN);
    }

    /// Zen 5 with `--ldlat 256`: `perf mem record --ldlat 256`'s `ibs_op/ldlat=256/`, type
    /// of ibs_op, config 0, config1 256 (the kernel's `format/ldlat` = `config1:0-11`), no
    /// exclude bits, not precise.
    #[test]
    fn amd_zen5_ldlat_is_config1_of_ibs_op() {
        let o = memory_options_with(
            "vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 68\n",
            &[("cpu", "4"), ("ibs_op", "11")],
            &[("ibs_op/format/ldlat", "config1:0-11")],
            cpiflame_events::memory::MemOptions {
                ldlat: Some(256),
                phys_addr: false,
            },
        );
        let attrs = build_attrs(&o, false, true).unwrap();
        let [op] = &attrs[..] else {
            panic!("{attrs:?}");
        };
        assert_eq!(
            (op.type_, op.config, op.config1, op.config2, precise(op)),
            (11, 0, 256, 0, 0)
        );
        let excludes = attr_flags::EXCLUDE_USER
            | attr_flags::EXCLUDE_KERNEL
            | attr_flags::EXCLUDE_HV
            | attr_flags::EXCLUDE_IDLE
            | attr_flags::EXCLUDE_HOST
            | attr_flags::EXCLUDE_GUEST;
        assert_eq!(op.flags & excludes, 0);
    }
}
