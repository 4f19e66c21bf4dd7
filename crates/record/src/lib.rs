//! Recording: opens the sampled events for a command (or a running process) on every CPU,
//! drains the kernel's ring buffers as they fill, and writes the records into a perf.data file
//! as they come, so memory stays bounded and a killed recorder leaves a readable file.
//!
//! Events are opened per CPU with `inherit`, as `perf record` does, so every thread and child
//! process is followed; the events of one CPU form one kernel group (always scheduled
//! together), or the groups [`RecordOptions::groups`] says, and share one ring buffer.
//! Samples' user stack copies are cut to the bytes in use before they are written.
//!
//! A leader-sampled group (`{a,b}:S`) is opened as perf 6.1 opens it: the leader samples
//! with PERF_SAMPLE_READ and read_format ID|GROUP (|LOST when the kernel has it), so each
//! of its samples carries the counts of every member; the members do not sample (unless
//! their own spec sets a rate); and, as perf does, without `inherit` when the group has more
//! than one event, so such a group follows the command's first thread only.
//!
//! This crate must never leave the recorded command running unrecorded or unreaped.

pub mod machine;
pub mod plan;
mod proc;
pub mod request;
mod spool;
pub mod stat_groups;

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use cpiflame_events::{Rate, ResolvedEvent};
use cpiflame_perf_data::abi::{misc, read_format as rf, record as rt, sample as st, x86_64_regs};
use cpiflame_perf_data::write::{
    attr_flags, finished_round_record, Features, GroupDesc, PerfDataWriter, WriteError, HOST_PID,
};
use cpiflame_perf_data::{
    trim_user_stack_to, BuildIdEntry, Endian, EventAttr, RecordKind, RecordView,
};
use cpiflame_unwind::Resolver;

pub use cpiflame_counters::child::ExitStatus;
pub use cpiflame_counters::event_use::leader_sampling;
use cpiflame_counters::event_use::{spec_bits, Unhonoured, Use};
use cpiflame_counters::sys;
pub use cpiflame_counters::sys::{explain_open_error, online_cpus};
use cpiflame_counters::{child, ring};
use spool::Spool;

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
    /// Attach to this running process and its threads.
    Pid(i32),
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
    /// Show a live "samples, lost" line on stderr when it is a terminal.
    pub status_line: bool,
    /// The command line stored in the file.
    pub cmdline: Vec<String>,
    /// Memory-access sampling (`record --mem`): extra sample_type bits for every event.
    pub memory: Option<MemorySampling>,
    /// perf's build-id cache (`~/.debug`): the kernel's symbols are copied into it once per
    /// kernel, as perf record does, so that naming kernel frames later reads a file instead
    /// of making the kernel generate /proc/kallsyms again. `None`: nothing is written.
    pub buildid_cache: Option<PathBuf>,
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
    /// Samples written, per event.
    pub samples: Vec<u64>,
    /// Samples the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// THROTTLE records: the kernel lowered the rate because sampling took too long.
    pub throttled: u64,
    pub bytes_written: u64,
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

/// The x86_64 user registers perf samples for DWARF unwinding (all general-purpose ones but
/// the segment registers DS, ES, FS, GS). cpiflame's unwinder needs only IP, SP and BP; the
/// rest (136 bytes a sample) let perf's own unwinder read cpiflame's files too.
const X86_64_UNWIND_REGS: u64 = 0xff0fff;
const _: () = assert!(
    X86_64_UNWIND_REGS & (1 << x86_64_regs::IP) != 0
        && X86_64_UNWIND_REGS & (1 << x86_64_regs::SP) != 0
        && X86_64_UNWIND_REGS & (1 << x86_64_regs::BP) != 0
);

/// The kernel groups of `o.events`: (first event, number of events) each, in order.
fn group_ranges(o: &RecordOptions) -> Result<Vec<(usize, usize)>, RecordError> {
    let n = o.events.len();
    if o.groups.is_empty() {
        return Ok(vec![(0, n)]);
    }
    let lens: Vec<usize> = o.groups.iter().map(|g| g.len).collect();
    if lens.contains(&0) || lens.iter().sum::<usize>() != n {
        let sizes: Vec<String> = lens.iter().map(usize::to_string).collect();
        return Err(RecordError::Open(format!(
            "the groups ({} events) do not cover the {n} events",
            sizes.join(" + ")
        )));
    }
    let mut start = 0;
    Ok(lens
        .iter()
        .map(|&len| {
            start += len;
            (start - len, len)
        })
        .collect())
}

/// Whether the kernel knows PERF_FORMAT_LOST (5.17 and later), which perf 6.1 adds to
/// read_format whenever it can: a self-counting software event is opened with it to see.
fn kernel_has_read_lost() -> bool {
    let attr = EventAttr {
        type_: 1,
        read_format: rf::LOST,
        flags: attr_flags::DISABLED | attr_flags::EXCLUDE_KERNEL | attr_flags::EXCLUDE_HV,
        ..EventAttr::default()
    };
    sys::open(&attr, 0, -1, None).is_ok()
}

/// The attrs to open, in order; the first also asks for the side-band records (mmap, comm,
/// fork/exit), as perf does, so they are not written once per event. Each group's leader is
/// opened disabled (enabled on exec); in a leader-sampled group, set as perf's
/// `evsel__config` and `evsel__config_leader_sampling` set it, every member reads the group
/// into the leader's samples and only the leader samples.
fn build_attrs(
    o: &RecordOptions,
    kernel_callchains: bool,
    enable_on_exec: bool,
) -> Result<Vec<EventAttr>, RecordError> {
    let mut attrs = Vec::with_capacity(o.events.len());
    let mut lost = None;
    for (start, len) in group_ranges(o)? {
        let group = &o.events[start..start + len];
        let sampled_by_leader = leader_sampling(group)?;
        let read_format = if sampled_by_leader {
            let lost = *lost.get_or_insert_with(kernel_has_read_lost);
            rf::ID | if len > 1 { rf::GROUP } else { 0 } | if lost { rf::LOST } else { 0 }
        } else {
            0
        };
        for (k, e) in group.iter().enumerate() {
            let i = start + k;
            let mut attr = event_attr(o, e, i, k == 0, kernel_callchains, enable_on_exec)?;
            if sampled_by_leader {
                attr.sample_type |= st::READ;
                attr.read_format = read_format;
                if len > 1 {
                    attr.flags &= !attr_flags::INHERIT;
                }
                // Members are counted, not sampled, unless their own spec sets a rate (perf
                // keeps those sampling too).
                if k > 0 && e.rate.is_none() {
                    attr.sample_period_or_freq = 0;
                    attr.flags &= !attr_flags::FREQ;
                }
            }
            attrs.push(attr);
        }
    }
    Ok(attrs)
}

/// The attr of event `e`, the `i`th; `leader`: it leads its group.
fn event_attr(
    o: &RecordOptions,
    e: &ResolvedEvent,
    i: usize,
    leader: bool,
    kernel_callchains: bool,
    enable_on_exec: bool,
) -> Result<EventAttr, RecordError> {
    let mut sample_type = st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::PERIOD;
    // The spec's own bits (exclusions, precise level, pinned, freq ...), as perf sets
    // them for the same spec.
    let mut flags =
        spec_bits(e, Use::Sampling, leader)? | attr_flags::INHERIT | attr_flags::SAMPLE_ID_ALL;
    match o.call_graph {
        CallGraph::Dwarf { .. } => {
            sample_type |= st::REGS_USER | st::STACK_USER;
            if kernel_callchains {
                sample_type |= st::CALLCHAIN;
                flags |= attr_flags::EXCLUDE_CALLCHAIN_USER;
            }
        }
        CallGraph::FramePointer => sample_type |= st::CALLCHAIN,
        CallGraph::None => {}
    }
    let no_exclude = o.memory.is_some_and(|m| m.no_exclude);
    if let Some(m) = o.memory {
        sample_type |= m.sample_type;
        // `-d`: data mappings too, so data addresses can be told by mapping.
        flags |= attr_flags::MMAP_DATA;
    }
    if leader {
        // A member follows its leader; a leader enabled before the exec would sample the
        // recorder's own child first.
        flags |= attr_flags::DISABLED;
        if enable_on_exec {
            flags |= attr_flags::ENABLE_ON_EXEC;
        }
    }
    if i == 0 {
        // MMAP_DATA: perf's unwinder finds `.eh_frame_hdr` through the read-only
        // mappings of a binary, which the kernel reports only as data mappings.
        flags |= attr_flags::MMAP
            | attr_flags::MMAP_DATA
            | attr_flags::MMAP2
            | attr_flags::COMM
            | attr_flags::COMM_EXEC
            | attr_flags::TASK;
    }
    if !kernel_callchains && !no_exclude {
        flags |= attr_flags::EXCLUDE_KERNEL;
    }
    let period = match e.rate_or(o.sampling) {
        Rate::Period(p) => p,
        Rate::Frequency(f) => {
            flags |= attr_flags::FREQ;
            f
        }
    };
    let (regs, stack) = match o.call_graph {
        CallGraph::Dwarf { stack_size } => (X86_64_UNWIND_REGS, stack_size),
        _ => (0, 0),
    };
    Ok(EventAttr {
        type_: e.type_,
        config: e.config,
        config1: e.config1,
        config2: e.config2,
        sample_period_or_freq: period,
        sample_type,
        flags,
        sample_regs_user: regs,
        sample_stack_user: stack,
        name: Some(e.name.clone()),
        ..EventAttr::default()
    })
}

/// Events opened on every CPU for every thread of the target; one ring buffer per CPU.
struct Opened {
    /// All fds (kept open for the run).
    fds: Vec<File>,
    /// Per CPU: the fd whose buffer the others of that CPU write to.
    ring_fds: Vec<usize>,
    /// (fd, ring fd) pairs to redirect once the rings are mapped: the kernel only accepts
    /// PERF_EVENT_IOC_SET_OUTPUT to an event that already has a buffer.
    redirects: Vec<(usize, usize)>,
    /// Ids per event (for the file header).
    ids: Vec<Vec<u64>>,
    /// Per fd: the index of its event.
    event_of: Vec<usize>,
}

/// `leads[i]`: event `i` starts a kernel group.
fn open_all(
    attrs: &[EventAttr],
    names: &[String],
    leads: &[bool],
    threads: &[i32],
    cpus: &[i32],
) -> Result<Opened, RecordError> {
    let mut opened = Opened {
        fds: Vec::new(),
        ring_fds: Vec::new(),
        redirects: Vec::new(),
        ids: vec![Vec::new(); attrs.len()],
        event_of: Vec::new(),
    };
    for &cpu in cpus {
        let mut ring: Option<usize> = None;
        for &tid in threads {
            let mut leader: Option<usize> = None;
            for (i, attr) in attrs.iter().enumerate() {
                if leads.get(i).copied().unwrap_or(i == 0) {
                    leader = None;
                }
                let group = leader.map(|l| &opened.fds[l]);
                let fd = sys::open(attr, tid, cpu, group).map_err(|e| {
                    RecordError::Open(sys::explain_open_error_for(&names[i], tid, &e))
                })?;
                let id = sys::event_id(&fd)
                    .map_err(|e| RecordError::Open(format!("event {}: {e}", names[i])))?;
                opened.ids[i].push(id);
                opened.fds.push(fd);
                opened.event_of.push(i);
                let index = opened.fds.len() - 1;
                leader.get_or_insert(index);
                match ring {
                    None => ring = Some(index),
                    Some(r) => opened.redirects.push((index, r)),
                }
            }
        }
        if let Some(r) = ring {
            opened.ring_fds.push(r);
        }
    }
    Ok(opened)
}

/// The smallest ring (in pages) that holds two of the largest samples: the stack copy, the
/// registers, a kernel call chain of up to 127 entries and the fixed fields fit in the stack
/// size plus 4 KiB. The kernel drops every sample that does not fit in the whole ring.
fn least_ring_pages(call_graph: CallGraph) -> usize {
    let stack = match call_graph {
        CallGraph::Dwarf { stack_size } => stack_size as usize,
        _ => 0,
    };
    (2 * (stack + 4096)).div_ceil(4096).next_power_of_two()
}

/// Maps one ring buffer per CPU, halving the size until the kernel accepts it.
fn map_rings(opened: &Opened, pages: usize) -> Result<(Vec<ring::Ring>, usize), RecordError> {
    let page = 4096;
    let mut pages = pages.max(1).next_power_of_two();
    loop {
        let mut rings = Vec::new();
        let mut failed = None;
        for &r in &opened.ring_fds {
            match ring::Ring::map(&opened.fds[r], pages, page) {
                Ok(ring) => rings.push(ring),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            None => {
                for &(fd, ring) in &opened.redirects {
                    sys::set_output(&opened.fds[fd], &opened.fds[ring]).map_err(|e| {
                        RecordError::Open(format!("cannot share a ring buffer between events: {e}"))
                    })?;
                }
                return Ok((rings, pages));
            }
            Some(e) if pages > 8 => {
                let _ = e;
                pages /= 2;
            }
            Some(e) => return Err(RecordError::Mmap(e)),
        }
    }
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

/// Raises the recorder's scheduling priority by 20 nice levels (to -20 at most) when it may
/// (root, CAP_SYS_NICE or RLIMIT_NICE). Samples are lost when the recorder does not drain the
/// ring buffers in time, and a command with more runnable threads than there are CPUs gives
/// each of them as much CPU as the recorder: 64 threads on 2 CPUs leave it 3% of a CPU, and
/// both perf and cpiflame then lose most samples. With the higher priority it runs when it
/// has records to drain; it takes no more CPU than the records cost. Called after the
/// command is forked (and only affects this thread), so the command's priority is its own.
fn raise_priority() -> bool {
    // SAFETY: getpriority/setpriority on the calling thread; errno is reset first because
    // -1 is also a valid priority.
    unsafe {
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS as _, 0);
        if now == -1 && *libc::__errno_location() != 0 {
            return false;
        }
        let want = (now - 20).max(-20);
        want < now && libc::setpriority(libc::PRIO_PROCESS as _, 0, want) == 0
    }
}

/// Kernel samples and call chains need perf_event_paranoid <= 1, or root.
fn kernel_allowed() -> bool {
    sys::kernel_allowed()
}

/// Records the target into `options.output`: opens the events and maps their rings, starts
/// (or attaches to) the target, drains the rings into the file until it ends, and finishes
/// the file.
pub fn record(options: &RecordOptions) -> Result<Report, RecordError> {
    let mut report = Report::default();
    let mut session = open_session(options, &mut report)?;
    start_target(options, &mut session)?;
    let mut drain = Drain::new(&session.attrs, options.call_graph);
    let started = Instant::now();
    let outcome = drain_until_done(options, &mut session, &mut drain, &mut report);
    finish(options, session, &drain, outcome, started.elapsed(), report)
}

/// What a recording holds from opening its events to finishing its file.
struct Session {
    /// The command, held until [`start_target`]; `None` when attached to a process.
    child: Option<child::Child>,
    /// The threads the events are opened on (the command's pid, or the process's threads).
    threads: Vec<i32>,
    /// The attrs as opened, with their ids.
    attrs: Vec<EventAttr>,
    opened: Opened,
    rings: Vec<ring::Ring>,
    writer: PerfDataWriter<Spool>,
}

/// Checks what may be recorded, gets the target (a held child, or the threads of a running
/// process), opens the events on it, maps the rings and starts the output file.
fn open_session(options: &RecordOptions, report: &mut Report) -> Result<Session, RecordError> {
    let kernel_callchains = kernel_allowed();
    report.kernel_callchains = kernel_callchains;
    if !kernel_callchains {
        report.warnings.push(format!(
            "kernel.perf_event_paranoid is {}: recording user space only (no kernel frames); `sysctl kernel.perf_event_paranoid=1` allows them",
            sys::paranoid().map_or("?".into(), |p| p.to_string())
        ));
        // Kernel space is excluded for every event: one of kernel space only would count nothing.
        if let Some(e) = options.events.iter().find(|e| e.exclude_user) {
            return Err(RecordError::Open(sys::explain_kernel_only(&e.name)));
        }
    }
    let names: Vec<String> = options.events.iter().map(|e| e.name.clone()).collect();
    let cpus = online_cpus();

    let (child, threads) = match &options.target {
        Target::Command(argv) => {
            let c = child::spawn_held(argv).map_err(|source| RecordError::Exec {
                program: argv
                    .first()
                    .map(|a| a.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                source,
            })?;
            let pid = c.pid;
            (Some(c), vec![pid])
        }
        Target::Pid(pid) => (
            None,
            proc::threads(*pid).map_err(|error| RecordError::Attach { pid: *pid, error })?,
        ),
    };
    // After the fork: the command keeps the priority it was started with.
    report.priority_raised = raise_priority();
    let mut attrs = build_attrs(options, kernel_callchains, child.is_some())?;
    let mut leads = vec![false; attrs.len()];
    for (start, _) in group_ranges(options)? {
        leads[start] = true;
    }
    let opened = open_all(&attrs, &names, &leads, &threads, &cpus)?;
    for (attr, ids) in attrs.iter_mut().zip(&opened.ids) {
        attr.ids = ids.clone();
    }
    let rings = map_rings_reporting(options, &opened, report)?;

    let file = create_output(&options.output)?;
    let out_err = |error| RecordError::Write {
        path: options.output.clone(),
        error,
    };
    let mut writer = PerfDataWriter::new(Spool::new(file), attrs.clone()).map_err(out_err)?;
    report.samples = vec![0; attrs.len()];
    if kernel_callchains {
        // perf names kernel frames through this record, as it synthesizes it for itself.
        if let Some(record) = proc::kernel_mmap(&attrs[0], options.buildid_cache.as_deref()) {
            writer.write_record(&record).map_err(out_err)?;
        }
    }
    Ok(Session {
        child,
        threads,
        attrs,
        opened,
        rings,
        writer,
    })
}

/// Maps the rings at the size asked for (at least what two samples need), and says so in
/// the report when the size had to change.
fn map_rings_reporting(
    options: &RecordOptions,
    opened: &Opened,
    report: &mut Report,
) -> Result<Vec<ring::Ring>, RecordError> {
    let asked = options.buffer_pages.max(1).next_power_of_two();
    let least = least_ring_pages(options.call_graph);
    if asked < least {
        report.warnings.push(format!(
            "-m {}: a ring buffer of {} KiB cannot hold two samples with {}; using {least} pages",
            options.buffer_pages,
            asked * 4,
            match options.call_graph {
                CallGraph::Dwarf { stack_size } => format!("--call-graph dwarf,{stack_size}"),
                _ => "call chains".to_string(),
            }
        ));
    }
    let (rings, pages) = map_rings(opened, asked.max(least))?;
    report.buffer_pages = pages;
    if pages < asked.max(least) {
        report.warnings.push(format!(
            "ring buffers limited to {} KiB per CPU (kernel.perf_event_mlock_kb is {}); raise it if samples are lost",
            pages * 4,
            sys::mlock_kb().map_or("?".into(), |k| k.to_string())
        ));
    }
    Ok(rings)
}

/// Lets the held command exec (its events are enabled on exec), or, attached to a process,
/// writes the COMM and MMAP2 records of what it already is and enables the events.
fn start_target(options: &RecordOptions, session: &mut Session) -> Result<(), RecordError> {
    match &mut session.child {
        Some(c) => {
            child::forward_signals(c.pid);
            if let Err(source) = c.start() {
                let _ = std::fs::remove_file(&options.output);
                let program = match &options.target {
                    Target::Command(argv) => argv[0].to_string_lossy().into_owned(),
                    Target::Pid(_) => String::new(),
                };
                return Err(RecordError::Exec { program, source });
            }
        }
        None => {
            child::forward_signals(0);
            let pid = session.threads[0];
            for record in proc::synthesize(pid, &session.attrs[0])
                .map_err(|error| RecordError::Attach { pid, error })?
            {
                session
                    .writer
                    .write_record(&record)
                    .map_err(|error| RecordError::Write {
                        path: options.output.clone(),
                        error,
                    })?;
            }
            let names: Vec<String> = options.events.iter().map(|e| e.name.clone()).collect();
            enable_all(&session.opened, &names, pid)?;
        }
    }
    Ok(())
}

/// Enables every opened event (attach mode: no exec enables them). An event that does not
/// enable records nothing, so that is an error, not an empty recording.
fn enable_all(opened: &Opened, names: &[String], pid: i32) -> Result<(), RecordError> {
    for (fd, &event) in opened.fds.iter().zip(&opened.event_of) {
        sys::enable(fd).map_err(|e| {
            let name = names.get(event).map_or("?", String::as_str);
            RecordError::Open(sys::explain_enable_error(name, pid, &e))
        })?;
    }
    Ok(())
}

/// Drains the rings into the file until the target ends (or the time is up); returns the
/// first write error, which stops the recording.
fn drain_until_done(
    options: &RecordOptions,
    session: &mut Session,
    state: &mut Drain,
    report: &mut Report,
) -> Result<(), WriteError> {
    let started = Instant::now();
    let deadline = options.duration.map(|d| started + d);
    let show_status = options.status_line && io::stderr().is_terminal();
    let mut last_status = Instant::now();
    let mut stop_sent = false;
    let mut poll_fds: Vec<libc::pollfd> = session
        .opened
        .ring_fds
        .iter()
        .map(|&r| libc::pollfd {
            fd: session.opened.fds[r].as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let outcome = 'recording: {
        loop {
            // SAFETY: poll on fds we own, for at most 100 ms.
            unsafe { libc::poll(poll_fds.as_mut_ptr(), poll_fds.len() as _, 100) };
            let done = match &mut session.child {
                Some(c) => c.try_wait().is_some(),
                None => {
                    child::STOP.load(std::sync::atomic::Ordering::SeqCst)
                        || !Path::new(&format!("/proc/{}", session.threads[0])).exists()
                }
            };
            if let Err(e) = drain_round(&mut session.rings, &mut session.writer, state, report) {
                break 'recording Err(e);
            }
            if show_status && last_status.elapsed() >= Duration::from_millis(250) {
                last_status = Instant::now();
                eprint!(
                    "\r[ cpiflame record: {} samples, {} lost ]",
                    report.samples.iter().sum::<u64>(),
                    report.lost
                );
            }
            if done {
                break;
            }
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    match &session.child {
                        Some(c) if !stop_sent => {
                            c.kill(libc::SIGINT);
                            stop_sent = true;
                        }
                        Some(_) => {}
                        None => break,
                    }
                }
            }
        }
        // Whatever the kernel wrote after the last poll.
        drain_round(&mut session.rings, &mut session.writer, state, report)
    };
    if show_status {
        eprintln!();
    }
    outcome
}

/// Reaps the command, writes the feature sections and the final header; after a write error
/// (`outcome`), cuts the file back to its last whole record and says what it keeps.
fn finish(
    options: &RecordOptions,
    session: Session,
    state: &Drain,
    outcome: Result<(), WriteError>,
    elapsed: Duration,
    mut report: Report,
) -> Result<Report, RecordError> {
    let Session {
        mut child,
        attrs,
        opened,
        rings,
        writer,
        ..
    } = session;
    // A command is never left running unrecorded: after a write error it is stopped, as
    // perf does (SIGTERM; SIGKILL when it is still there after a grace period), and reaped.
    report.status = child.as_mut().map(|c| match outcome {
        Ok(()) => c.wait(),
        Err(_) => c.terminate(STOP_GRACE),
    });
    drop(rings);
    drop(opened);

    let mut features = Features::from_host(options.cmdline.clone());
    features.perf_version = Some(format!("cpiflame {}", env!("CARGO_PKG_VERSION")));
    features.build_ids = build_ids(&state.mapped);
    features.groups = group_descs(options);
    if let (Some(first), Ok(())) = (state.first_time, &outcome) {
        // (After a write error the file ends earlier than the last sample drained.)
        features.sample_time = Some((first, state.last_time));
    }
    report.bytes_written = writer.bytes_written();
    let data_offset = writer.data_offset();
    let data_end = data_offset + writer.bytes_written();
    let spool = writer.get_ref();
    let closed = spool.close(&attrs, &features, data_offset, data_end);
    let secs = elapsed.as_secs_f64();
    let finishing = |source| WriteError::Io {
        what: "the end of the file",
        source,
    };
    let (error, when) = match outcome {
        Err(e) => (e, format!("recording stopped after {secs:.1} s")),
        Ok(()) => (
            match (&closed, spool.take_error()) {
                (Ok(c), _) if c.complete && c.features => return Ok(report),
                (_, Some(e)) => finishing(e),
                (Err(_), None) => finishing(io::Error::other("cannot finish the file")),
                (Ok(_), None) => finishing(io::Error::other("cannot write the feature sections")),
            },
            format!("the recording ended after {secs:.1} s, then finishing the file failed"),
        ),
    };
    drop(writer);
    let mut what = vec![when];
    match (&options.target, report.status) {
        (Target::Pid(pid), _) => what.push(format!("process {pid} is no longer recorded")),
        (_, Some(ExitStatus::Signaled(libc::SIGTERM))) => {
            what.push("the command was ended with SIGTERM".into())
        }
        (_, Some(ExitStatus::Signaled(libc::SIGKILL))) => what.push(format!(
            "the command was killed (it ignored SIGTERM for {} s)",
            STOP_GRACE.as_secs()
        )),
        (_, Some(status)) => what.push(format!("the command ended with status {}", status.code())),
        (_, None) => {}
    }
    match closed {
        Ok(c) => what.push(format!(
            "the file keeps the {} samples written before ({:.1} MB{}; render, fold and perf read it)",
            c.samples,
            c.data_size as f64 / 1e6,
            if c.features { "" } else { ", no feature sections: no room" },
        )),
        Err(e) => {
            let _ = std::fs::remove_file(&options.output);
            what.push(format!("nothing readable was written ({e}); the file was removed"));
        }
    }
    Err(RecordError::WriteFailed {
        path: options.output.clone(),
        error,
        what: what.join("; "),
        status: report.status,
    })
}

/// The GROUP_DESC entries of the groups the user asked for.
fn group_descs(options: &RecordOptions) -> Vec<GroupDesc> {
    let mut start = 0;
    let mut descs = Vec::new();
    for g in &options.groups {
        if g.described && g.len > 1 {
            descs.push(GroupDesc {
                name: None,
                leader: start as u32,
                members: g.len as u32,
            });
        }
        start += g.len;
    }
    descs
}

/// How long a command stopped after a write error has to end before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Drains every ring and ends the round; the first write error stops the recording.
fn drain_round(
    rings: &mut [ring::Ring],
    writer: &mut PerfDataWriter<Spool>,
    state: &mut Drain,
    report: &mut Report,
) -> Result<(), WriteError> {
    if drain_all(rings, writer, state, report)? > 0 {
        writer.write_record(&finished_round_record())?;
    }
    Ok(())
}

/// What draining keeps between rounds.
struct Drain {
    by_id: HashMap<u64, usize>,
    /// Records of the current pass, and their (time, offset, length): kept to reuse.
    arena: Vec<u8>,
    index: Vec<(u64, usize, usize)>,
    unwinder: Option<Resolver>,
    /// The attrs as opened. Their sample_types differ at most in READ, which comes after
    /// every field a side-band record's sample_id trailer or a time lookup reads; side-band
    /// records come from the first.
    attrs: Vec<EventAttr>,
    trimmed: Vec<u8>,
    /// Files mapped executable (for their build ids at the end).
    mapped: BTreeSet<Vec<u8>>,
    first_time: Option<u64>,
    last_time: u64,
}

impl Drain {
    fn new(attrs: &[EventAttr], call_graph: CallGraph) -> Drain {
        // With DWARF call chains, samples are unwound as they come (unwinding only, no
        // names) to learn how much of each stack copy the unwinder reads; only that much is
        // kept.
        let unwinder = matches!(call_graph, CallGraph::Dwarf { .. }).then(|| {
            Resolver::new(
                &cpiflame_perf_data::Meta::default(),
                cpiflame_unwind::Options {
                    unwind_only: true,
                    ..cpiflame_unwind::Options::default()
                },
            )
        });
        Drain {
            by_id: attrs
                .iter()
                .enumerate()
                .flat_map(|(i, a)| a.ids.iter().map(move |&id| (id, i)))
                .collect(),
            arena: Vec::new(),
            index: Vec::new(),
            unwinder,
            attrs: attrs.to_vec(),
            trimmed: Vec::new(),
            mapped: BTreeSet::new(),
            first_time: None,
            last_time: 0,
        }
    }
}

/// Drains every ring buffer into the file; returns the records written.
fn drain_all(
    rings: &mut [ring::Ring],
    writer: &mut PerfDataWriter<Spool>,
    state: &mut Drain,
    report: &mut Report,
) -> Result<u64, WriteError> {
    // Every ring's records of this pass, copied out and then handled in time order, so the
    // record-time unwinder sees a thread's mappings before its samples even when the kernel
    // put them in different CPUs' buffers (as the reader will, which sorts the same way).
    let mut arena = std::mem::take(&mut state.arena);
    let mut index = std::mem::take(&mut state.index);
    arena.clear();
    index.clear();
    let mut last_time = 0;
    let layout = &state.attrs[0];
    for ring in rings.iter_mut() {
        if ring.pending() == 0 {
            continue;
        }
        ring.drain(|record| {
            let time = RecordView::parse(record, Endian::NATIVE)
                .and_then(|view| view.time(layout))
                .unwrap_or(last_time);
            last_time = time;
            index.push((time, arena.len(), record.len()));
            arena.extend_from_slice(record);
        });
    }
    index.sort_by_key(|&(time, at, _)| (time, at));
    let mut result = Ok(());
    for &(_, at, len) in &index {
        result = write_one(&arena[at..at + len], writer, state, report);
        if result.is_err() {
            break;
        }
    }
    let written = index.len() as u64;
    state.arena = arena;
    state.index = index;
    result.map(|()| written)
}

/// Writes one drained record, counting what the report counts and feeding the unwinder;
/// samples go out with their user stack copy trimmed to what the unwinder read.
fn write_one(
    record: &[u8],
    writer: &mut PerfDataWriter<Spool>,
    state: &mut Drain,
    report: &mut Report,
) -> Result<(), WriteError> {
    let Some(view) = RecordView::parse(record, Endian::NATIVE) else {
        // Not a whole record: the writer says why.
        return writer.write_record(record);
    };
    match view.record_type {
        rt::SAMPLE => {
            let trimmed = on_sample(&view, record, state, report);
            writer.get_ref().note_samples(report.samples.iter().sum());
            if let Some(trimmed) = trimmed {
                return writer.write_record(trimmed);
            }
        }
        rt::LOST => {
            if let Ok(RecordKind::Lost { lost, .. }) = view.side_band(&state.attrs[0]) {
                report.lost += lost;
            }
        }
        rt::THROTTLE => report.throttled += 1,
        rt::MMAP | rt::MMAP2 | rt::COMM | rt::FORK | rt::EXIT => {
            let kind = view.side_band(&state.attrs[0]);
            if let (Some(unwinder), Ok(kind)) = (&mut state.unwinder, &kind) {
                unwinder.observe(kind);
            }
            if let (rt::MMAP2, Ok(RecordKind::Mmap(m))) = (view.record_type, &kind) {
                // Executable mappings of files, for their build ids at the end.
                if m.executable && m.path.starts_with(b"/") {
                    state.mapped.insert(m.path.to_vec());
                }
            }
        }
        _ => {}
    }
    writer.write_record(record)
}

/// Counts a sample and notes its time; returns the sample with its stack copy trimmed to
/// what the unwinder read, when there is something to trim.
fn on_sample<'a>(
    view: &RecordView<'_>,
    record: &[u8],
    state: &'a mut Drain,
    report: &mut Report,
) -> Option<&'a [u8]> {
    // Every attr has PERF_SAMPLE_IDENTIFIER, so the id comes first whatever the layout; the
    // event's own attr then reads the rest (a leader-sampled group's samples carry READ
    // values that others' do not).
    let event = view
        .body
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_ne_bytes)
        .and_then(|id| state.by_id.get(&id).copied())
        .unwrap_or(0);
    let sample = view.sample(event, &state.attrs[event]).ok();
    report.samples[event] += 1;
    if let Some(t) = sample.and_then(|s| s.time) {
        state.first_time.get_or_insert(t);
        state.last_time = state.last_time.max(t);
    }
    let limit = match (&mut state.unwinder, sample) {
        (Some(unwinder), Some(sample)) => unwinder.user_stack_extent(&sample),
        _ => None,
    };
    let trimmed = trim_user_stack_to(
        record,
        &state.attrs[event],
        Endian::NATIVE,
        limit.unwrap_or(usize::MAX),
        &mut state.trimmed,
    );
    trimmed.then_some(&state.trimmed[..])
}

/// Build ids of the files that were mapped executable, and of the running kernel.
fn build_ids(mapped: &BTreeSet<Vec<u8>>) -> Vec<BuildIdEntry> {
    use object::Object;
    let mut entries = Vec::new();
    for path in mapped {
        let p = Path::new(std::ffi::OsStr::from_bytes(path));
        let Ok(data) = std::fs::read(p) else { continue };
        let Ok(file) = object::File::parse(&*data) else {
            continue;
        };
        if let Ok(Some(id)) = file.build_id() {
            entries.push(BuildIdEntry {
                pid: HOST_PID,
                misc: misc::USER,
                build_id: id.to_vec(),
                path: path.clone(),
            });
        }
    }
    if let Some(id) = proc::kernel_build_id() {
        entries.push(BuildIdEntry {
            pid: HOST_PID,
            misc: misc::KERNEL,
            build_id: id,
            path: b"[kernel.kallsyms]".to_vec(),
        });
    }
    entries
}

use std::os::unix::ffi::OsStrExt;

/// Checks that `events` open here, as one group on this process, without recording.
pub fn probe(events: &[ResolvedEvent]) -> Result<(), RecordError> {
    probe_sampling(events, None)
}

/// [`probe`], with the sample_type bits of memory sampling (the kernel checks some of them:
/// a load-latency event sampling DATA_SRC needs its auxiliary event as leader).
pub fn probe_sampling(
    events: &[ResolvedEvent],
    memory: Option<MemorySampling>,
) -> Result<(), RecordError> {
    let options = RecordOptions {
        events: events.to_vec(),
        groups: Vec::new(),
        sampling: Rate::Period(1_000_000),
        call_graph: CallGraph::None,
        target: Target::Pid(0),
        output: PathBuf::new(),
        duration: None,
        buffer_pages: 1,
        status_line: false,
        cmdline: Vec::new(),
        memory,
        buildid_cache: None,
    };
    let attrs = build_attrs(&options, kernel_allowed(), false)?;
    let names: Vec<String> = events.iter().map(|e| e.name.clone()).collect();
    let mut leader: Option<File> = None;
    let mut fds = Vec::new();
    for (attr, name) in attrs.iter().zip(&names) {
        let fd = sys::open(attr, 0, -1, leader.as_ref())
            .map_err(|e| RecordError::Open(explain_open_error(name, &e)))?;
        if leader.is_none() {
            leader = Some(fd);
        } else {
            fds.push(fd);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
            target: Target::Pid(0),
            output: PathBuf::new(),
            duration: None,
            buffer_pages: 1,
            status_line: false,
            cmdline: Vec::new(),
            memory: None,
            buildid_cache: None,
        }
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
