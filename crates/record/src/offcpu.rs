//! `record --off-cpu`: what is recorded besides the on-CPU events so that a thread's wall time
//! can be split into running, runnable (waiting for a CPU) and blocked.
//!
//! - `context-switches` (PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES), sampled at
//!   every switch (period 1) with the on-CPU events' sample_type (stack and all): the kernel
//!   counts it in `perf_event_task_sched_out`, as the task leaves the CPU, so its sample holds
//!   the stack the task blocked in (`futex_wait`, `pipe_read`, `do_nanosleep` ...). Without
//!   kernel samples (perf_event_paranoid 2 as a user) the kernel drops these samples (they are
//!   taken in kernel mode and the event excludes the kernel), and the switch records below
//!   are all there is.
//! - `attr.context_switch` on that event: PERF_RECORD_SWITCH records as the task leaves and
//!   re-enters a CPU. The kernel sets PERF_RECORD_MISC_SWITCH_OUT_PREEMPT on a switch-out when
//!   the task is still on the run queue (`perf_event_switch` in kernel/events/core.c: `if
//!   (!sched_in && current->on_rq)`, since Linux 5.14's "sched,perf,kvm: Fix preemption
//!   condition"; before, `task->state == TASK_RUNNING`): it was preempted, so its time until
//!   the switch-in is runnable, not blocked. That needs no privilege.
//! - `sched:sched_waking` with PERF_SAMPLE_RAW: its time splits a blocked thread's off-CPU
//!   time into blocked (until woken) and runnable (woken, waiting for a CPU); the wakee is
//!   the raw data's `pid` field, the sample's own tid is the waker's (any task, or the idle
//!   task when an interrupt wakes it). It is opened **on every CPU for every process**
//!   (pid -1) where permitted, so every wakeup of a recorded thread is seen whoever made it:
//!   its timer, an interrupt, an unrecorded process. The recorder keeps only the samples
//!   whose wakee is a recorded thread (the target's threads and those the FORK records add,
//!   [`WakeeFilter`]); the rest are dropped as they are drained, so the file holds the
//!   recording's own wakeups. A per-task event sees only the wakeups its task makes: the
//!   tracepoints pass `__perf_task(p)` (include/trace/events/sched.h), which should deliver
//!   the event to the woken task's own events too, but measured on Linux 6.18 it does not
//!   (`perf record -e sched:sched_waking -- pingpong wake 30` has no sample of the main
//!   thread's 30 nanosleep wakeups). So where a CPU-wide event may not be opened
//!   (perf_event_paranoid above 0 without CAP_PERFMON) it falls back to per task and
//!   inherited, with one line saying what that loses ([`PER_TASK_LOST`]). System-wide
//!   recordings open every event per CPU anyway and keep every wakeup.
//!   PERF_SAMPLE_RAW on a tracepoint needs perf_event_paranoid -1 or CAP_PERFMON, and its id
//!   is read from tracefs: when either is missing it is left out, with one line saying what
//!   that costs ([`WAKING_LOST`]). Its
//!   format file and tracefs's headers go into the file's tracing data, which `perf script`
//!   needs to print its fields.
//!
//! The recording is also marked [`OFF_CPU_MARK`] in its command line (the mechanism of the
//! roles notes), though a reader can tell the same from the events and records alone.

use std::io;
use std::path::{Path, PathBuf};

use cpiflame_counters::sys;
use cpiflame_events::abi::{attr_type, sample as st};
use cpiflame_events::{Rate, ResolvedEvent};
use cpiflame_perf_data::write::{attr_flags, EventAttr, TracingData};

use crate::Group;

/// The word added to the kept command line of a recording made with `--off-cpu`.
pub const OFF_CPU_MARK: &str = "[cpiflame: off-cpu]";

/// The switch event's name (perf's).
pub const SWITCH_EVENT: &str = "context-switches";

/// The wakeup tracepoint's name (perf's).
pub const WAKING_EVENT: &str = "sched:sched_waking";

/// What is lost without [`WAKING_EVENT`], told once.
pub const WAKING_LOST: &str = "time after a wakeup waiting for a CPU counts as blocked";

/// What a per-task wakeup event loses, told once when a CPU-wide one may not be opened.
pub const PER_TASK_LOST: &str = "wakeups by timers, interrupts and unrecorded processes are not seen, and a thread's time after them waiting for a CPU counts as blocked";

/// `PERF_COUNT_SW_CONTEXT_SWITCHES`.
const SW_CONTEXT_SWITCHES: u64 = 3;

/// The off-CPU events of a recording: indices into [`RecordOptions::events`](crate::RecordOptions::events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpu {
    /// The `context-switches` event, which also carries `context_switch`.
    pub switches: usize,
    /// The `sched:sched_waking` event, when it may be recorded.
    pub waking: Option<Waking>,
}

/// `sched:sched_waking` as found in tracefs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waking {
    /// Its index in the events.
    pub index: usize,
    /// Its tracepoint id (the attr's config).
    pub id: u64,
    /// What the file's tracing data holds for it.
    pub tracing: TracingData,
    /// Opened on every CPU for every process (pid -1, not inherited) rather than per task:
    /// its samples are kept only for the recorded threads ([`WakeeFilter`]).
    pub every_process: bool,
}

/// Where the wakeup tracepoint is opened, as [`decide_every_process`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakingScope {
    /// On every CPU for every process, its samples filtered by wakee.
    EveryProcess,
    /// Per task, inherited: the wakeups the recorded threads make.
    PerTask,
    /// The recording is system-wide: every event is opened per CPU already.
    SystemWide,
}

/// The tracepoint as read from a tracefs mount: id and tracing data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundTracepoint {
    pub id: u64,
    pub tracing: TracingData,
}

/// Reads `sched:sched_waking`'s id, its format and tracefs's headers from the tracefs mounted
/// at `root` ([`crate::tracefs::find_or_mount`]); `Err` names the file that could not be read.
pub fn find_waking(root: &Path) -> Result<FoundTracepoint, String> {
    let events = root.join("events");
    let read =
        |p: PathBuf| read_tracefs(&p).map_err(|e| format!("{}: {}", p.display(), io_words(&e)));
    let id_path = events.join("sched/sched_waking/id");
    let text = read(id_path.clone())?;
    let text = String::from_utf8_lossy(&text);
    let Ok(id) = text.trim().parse() else {
        return Err(format!(
            "{}: not a tracepoint id: {:?}",
            id_path.display(),
            text.trim()
        ));
    };
    Ok(FoundTracepoint {
        id,
        tracing: TracingData {
            page_size: page_size(),
            header_page: read(events.join("header_page"))?,
            header_event: read(events.join("header_event"))?,
            systems: vec![(
                "sched".into(),
                vec![read(events.join("sched/sched_waking/format"))?],
            )],
        },
    })
}

/// Reads a tracefs file whole. Not `std::fs::read`: its first read asks for 32 bytes, and
/// tracefs's `header_page` and `header_event` answer a short read with the start of the text
/// and then end of file (the kernel makes the text anew for each read), so it would get 32
/// bytes of 205. One large read gets them whole; format files (seq_file) read on as usual.
fn read_tracefs(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn io_words(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotFound => "No such file".into(),
        _ => e.to_string(),
    }
}

fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(n).unwrap_or(4096)
}

/// Whether `sched:sched_waking` may be recorded: found in tracefs (`found`), and a per-task
/// event sampling its raw data opens here (`probe`, given its id). `Err`: the one line to tell
/// the user, saying why and what is lost.
pub fn decide_waking(
    found: Result<FoundTracepoint, String>,
    probe: impl FnOnce(u64) -> io::Result<()>,
) -> Result<FoundTracepoint, String> {
    let lost =
        |why: String| format!("--off-cpu: {WAKING_EVENT} not recorded ({why}): {WAKING_LOST}");
    let found = found.map_err(lost)?;
    match probe(found.id) {
        Ok(()) => Ok(found),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) => {
            Err(lost(format!(
                "its raw data needs kernel.perf_event_paranoid -1 or CAP_PERFMON; it is {}",
                sys::paranoid().map_or("?".into(), |p| p.to_string())
            )))
        }
        Err(e) => Err(lost(sys::explain_open_error(WAKING_EVENT, &e))),
    }
}

/// Where to open the wakeup tracepoint (id `id`): on every CPU when `probe_every_process`
/// (which opens it once for pid -1 on CPU 0) succeeds, unless the recording is system-wide;
/// else per task, with the one line to tell the user (why, and [`PER_TASK_LOST`]).
pub fn decide_every_process(
    id: u64,
    system_wide: bool,
    probe_every_process: impl FnOnce(u64) -> io::Result<()>,
) -> (WakingScope, Option<String>) {
    if system_wide {
        return (WakingScope::SystemWide, None);
    }
    match probe_every_process(id) {
        Ok(()) => (WakingScope::EveryProcess, None),
        Err(e) => {
            let why = if matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) {
                format!(
                    "a CPU-wide event needs kernel.perf_event_paranoid 0 or less, or CAP_PERFMON; it is {}",
                    sys::paranoid().map_or("?".into(), |p| p.to_string())
                )
            } else {
                sys::explain_open_error(WAKING_EVENT, &e)
            };
            let line = format!(
                "--off-cpu: {WAKING_EVENT} recorded per task only ({why}): {PER_TASK_LOST}"
            );
            (WakingScope::PerTask, Some(line))
        }
    }
}

/// Opens `sched:sched_waking` (id `id`) on CPU 0 for every process as the recording would,
/// and closes it.
pub fn probe_waking_every_process(id: u64) -> io::Result<()> {
    let mut attr = waking_attr(id);
    attr.flags &= !attr_flags::INHERIT;
    sys::open(&attr, -1, 0, None).map(drop)
}

/// The recorded threads whose wakeups a CPU-wide wakeup event keeps: the target's threads,
/// and every thread a FORK record adds. A sample is read with the tracepoint's own format
/// (the `pid` field, the wakee). FORK records reach the recorder before the new thread's
/// first wakeup: a new task's first wakeup is `sched_wakeup_new`, not `sched_waking`, and
/// the drain handles each pass's records in time order.
#[derive(Clone, Debug)]
pub struct WakeeFilter {
    /// The wakeup event's index.
    pub event: usize,
    format: cpiflame_perf_data::TraceEvent,
    recorded: std::collections::HashSet<i32>,
}

impl WakeeFilter {
    /// The filter of `off`'s wakeup event when it is opened for every process, starting
    /// from `threads`; `None` when every wakeup is to be kept (or none is recorded).
    pub fn new(off: &OffCpu, threads: &[i32]) -> Option<WakeeFilter> {
        let waking = off.waking.as_ref().filter(|w| w.every_process)?;
        let format = waking
            .tracing
            .systems
            .iter()
            .find_map(|(system, formats)| {
                formats
                    .iter()
                    .find_map(|f| cpiflame_perf_data::TraceEvent::from_format(system, f))
            })?;
        // Without a `pid` field nothing could be kept: keep everything rather than lose it.
        format.field("pid")?;
        Some(WakeeFilter {
            event: waking.index,
            format,
            recorded: threads.iter().copied().filter(|&t| t > 0).collect(),
        })
    }

    /// A thread the recording follows from now on.
    pub fn add(&mut self, tid: i32) {
        self.recorded.insert(tid);
    }

    /// Whether a wakeup sample with raw data `raw` wakes a recorded thread.
    pub fn keeps(&self, raw: &[u8]) -> bool {
        self.format
            .int(raw, "pid")
            .is_some_and(|pid| self.recorded.contains(&(pid as i32)))
    }
}

/// What to tell the user when kernel samples are not allowed: the kernel takes the switch
/// samples in kernel mode, so an event excluding the kernel gets none of them (the switch
/// records still come).
pub fn user_only_line(kernel_allowed: bool) -> Option<String> {
    (!kernel_allowed).then(|| {
        format!(
            "--off-cpu: kernel.perf_event_paranoid is {}: context switches are recorded without the stack they happen in (only kernel samples have it)",
            sys::paranoid().map_or("?".into(), |p| p.to_string())
        )
    })
}

/// Opens `sched:sched_waking` (id `id`) on this thread as the recording would, and closes it.
pub fn probe_waking(id: u64) -> io::Result<()> {
    let attr = waking_attr(id);
    sys::open(&attr, 0, -1, None).map(drop)
}

/// The attr of the wakeup tracepoint: its raw data, IP, thread, time and CPU, no stack; one
/// sample per wakeup, inherited.
fn waking_attr(id: u64) -> EventAttr {
    EventAttr {
        type_: attr_type::TRACEPOINT,
        config: id,
        sample_period_or_freq: 1,
        sample_type: WAKING_SAMPLE_TYPE,
        flags: attr_flags::DISABLED | attr_flags::INHERIT | attr_flags::SAMPLE_ID_ALL,
        name: Some(WAKING_EVENT.into()),
        ..EventAttr::default()
    }
}

/// The user stack copied with each switch sample, at most: perf's default copy. A thread
/// switching 100,000 times a second with the on-CPU events' 32 KiB copies would push 3 GB a
/// second through the ring buffers, most of it lost before the recorder could drain it; a
/// thread blocks in a system call, whose user frames above it rarely need more.
pub const SWITCH_STACK_SIZE: u32 = 8192;

/// What a wakeup sample holds. The IP (the tracepoint's caller in the kernel) is of no use
/// to the wall plan, but perf's own tracepoint samples carry it, and `perf script -F ...,ip`
/// (the off-CPU flame graph recipes) refuses a file whose events lack it.
pub const WAKING_SAMPLE_TYPE: u64 =
    st::IDENTIFIER | st::IP | st::TID | st::TIME | st::CPU | st::RAW;

/// Appends the off-CPU events to a plan's `events` (each a group of its own, after `groups`,
/// which are made explicit first): `context-switches`, then `sched:sched_waking` when
/// `waking` found it.
pub fn add_events(
    events: &mut Vec<ResolvedEvent>,
    groups: &mut Vec<Group>,
    waking: Option<(FoundTracepoint, WakingScope)>,
) -> OffCpu {
    if groups.is_empty() && !events.is_empty() {
        groups.push(Group {
            len: events.len(),
            described: false,
        });
    }
    let switches = ResolvedEvent {
        type_: attr_type::SOFTWARE,
        config: SW_CONTEXT_SWITCHES,
        config1: 0,
        config2: 0,
        rate: Some(Rate::Period(1)),
        precise_ip: 0,
        exclude_user: false,
        exclude_kernel: false,
        exclude_hv: false,
        exclude_host: false,
        exclude_guest: true,
        exclude_idle: false,
        sample_read: false,
        pinned: false,
        exclusive: false,
        name: SWITCH_EVENT.into(),
    };
    let mut push = |e: ResolvedEvent| {
        events.push(e);
        groups.push(Group {
            len: 1,
            described: false,
        });
        events.len() - 1
    };
    let switches_at = push(switches.clone());
    let waking = waking.map(|(w, scope)| Waking {
        index: push(ResolvedEvent {
            type_: attr_type::TRACEPOINT,
            config: w.id,
            name: WAKING_EVENT.into(),
            ..switches
        }),
        id: w.id,
        tracing: w.tracing,
        every_process: scope == WakingScope::EveryProcess,
    });
    OffCpu {
        switches: switches_at,
        waking,
    }
}

/// What `--off-cpu` changes in event `i`'s attr, built like the on-CPU events': the switch
/// event asks for switch records too; the wakeup tracepoint samples its raw data only.
pub(crate) fn adjust_attr(off: &OffCpu, i: usize, attr: &mut EventAttr) {
    if i == off.switches {
        attr.flags |= attr_flags::CONTEXT_SWITCH;
        if attr.sample_stack_user > SWITCH_STACK_SIZE {
            attr.sample_stack_user = SWITCH_STACK_SIZE;
        }
    }
    if let Some(w) = off.waking.as_ref().filter(|w| w.index == i) {
        attr.sample_type = WAKING_SAMPLE_TYPE;
        attr.sample_regs_user = 0;
        attr.sample_stack_user = 0;
        attr.flags &= !(attr_flags::EXCLUDE_CALLCHAIN_USER | attr_flags::FREQ);
        if w.every_process {
            // Not tied to a task: nothing to inherit, and no exec of its own to enable it
            // (the recorder enables it as the command starts).
            attr.flags &= !(attr_flags::INHERIT | attr_flags::ENABLE_ON_EXEC);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracefs(dir: &Path) {
        let events = dir.join("events");
        std::fs::create_dir_all(events.join("sched/sched_waking")).unwrap();
        std::fs::write(events.join("sched/sched_waking/id"), "317\n").unwrap();
        std::fs::write(
            events.join("sched/sched_waking/format"),
            "name: sched_waking\nID: 317\nformat:\n",
        )
        .unwrap();
        std::fs::write(events.join("header_page"), "page").unwrap();
        std::fs::write(events.join("header_event"), "event").unwrap();
    }

    #[test]
    fn the_tracepoint_is_read_from_tracefs_or_the_missing_file_named() {
        let dir = cpiflame_testkit::Dir::new("offcpu-tracefs");
        let good = dir.path("good");
        tracefs(&good);
        let found = find_waking(&good).unwrap();
        assert_eq!(found.id, 317);
        assert_eq!(found.tracing.header_page, b"page");
        assert_eq!(found.tracing.systems[0].0, "sched");
        assert_eq!(
            found.tracing.systems[0].1[0],
            b"name: sched_waking\nID: 317\nformat:\n"
        );
        std::fs::remove_file(good.join("events/header_event")).unwrap();
        let e = find_waking(&good).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}: No such file",
                good.join("events/header_event").display()
            )
        );
        let e = find_waking(&dir.path("missing")).unwrap_err();
        assert!(
            e.ends_with("events/sched/sched_waking/id: No such file"),
            "{e}"
        );
    }

    /// Not permitted: one line naming the event, why, and what is lost; permitted: kept.
    #[test]
    fn the_decision_says_why_and_what_is_lost() {
        let found = || {
            Ok(FoundTracepoint {
                id: 317,
                tracing: TracingData::default(),
            })
        };
        let denied = decide_waking(found(), |_| Err(io::Error::from_raw_os_error(libc::EACCES)))
            .unwrap_err();
        assert!(denied.starts_with("--off-cpu: sched:sched_waking not recorded (its raw data needs kernel.perf_event_paranoid -1 or CAP_PERFMON; it is "), "{denied}");
        assert!(denied.ends_with(WAKING_LOST), "{denied}");
        assert!(!denied.contains('\n'));
        let unmounted = decide_waking(Err("tracefs is not mounted, and mounting it at /sys/kernel/tracing: needs root or CAP_SYS_ADMIN".into()), |_| {
            panic!("no probe without an id")
        })
        .unwrap_err();
        assert_eq!(
            unmounted,
            format!("--off-cpu: sched:sched_waking not recorded (tracefs is not mounted, and mounting it at /sys/kernel/tracing: needs root or CAP_SYS_ADMIN): {WAKING_LOST}")
        );
        let mut probed = None;
        let kept = decide_waking(found(), |id| {
            probed = Some(id);
            Ok(())
        });
        assert_eq!(kept.unwrap().id, 317);
        assert_eq!(probed, Some(317));
    }

    /// On every CPU where that opens; per task, with one line saying why and what is lost,
    /// where it does not; system-wide recordings are left as they are (no probe).
    #[test]
    fn the_wakeups_are_opened_for_every_process_where_permitted() {
        let (scope, line) = decide_every_process(317, true, |_| panic!("no probe"));
        assert_eq!((scope, line), (WakingScope::SystemWide, None));
        let mut probed = None;
        let (scope, line) = decide_every_process(317, false, |id| {
            probed = Some(id);
            Ok(())
        });
        assert_eq!(
            (scope, line, probed),
            (WakingScope::EveryProcess, None, Some(317))
        );
        let (scope, line) = decide_every_process(317, false, |_| {
            Err(io::Error::from_raw_os_error(libc::EACCES))
        });
        assert_eq!(scope, WakingScope::PerTask);
        let line = line.unwrap();
        assert!(
            line.starts_with("--off-cpu: sched:sched_waking recorded per task only (a CPU-wide event needs kernel.perf_event_paranoid 0 or less, or CAP_PERFMON; it is "),
            "{line}"
        );
        assert!(
            line.ends_with(PER_TASK_LOST) && !line.contains('\n'),
            "{line}"
        );
    }

    /// Linux 6.18's sched_waking format: the wakee in `pid` at offset 24.
    const WAKING_FORMAT: &[u8] = b"name: sched_waking\nID: 375\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";

    fn raw_waking(wakee: i32) -> Vec<u8> {
        let mut raw = vec![0u8; 36];
        raw[24..28].copy_from_slice(&wakee.to_ne_bytes());
        raw
    }

    /// A CPU-wide wakeup event's samples are kept when they wake a thread of the target or
    /// one forked since, and dropped otherwise; per task (or without a `pid` field to read)
    /// there is no filter, and everything is kept.
    #[test]
    fn only_the_wakeups_of_recorded_threads_are_kept() {
        let off = |every_process: bool, format: &[u8]| OffCpu {
            switches: 1,
            waking: Some(Waking {
                index: 2,
                id: 375,
                tracing: TracingData {
                    systems: vec![("sched".into(), vec![format.to_vec()])],
                    ..TracingData::default()
                },
                every_process,
            }),
        };
        let mut filter = WakeeFilter::new(&off(true, WAKING_FORMAT), &[100, -1]).unwrap();
        assert_eq!(filter.event, 2);
        assert!(filter.keeps(&raw_waking(100)));
        assert!(!filter.keeps(&raw_waking(101)));
        assert!(!filter.keeps(&raw_waking(-1)));
        assert!(!filter.keeps(&raw_waking(100)[..26]), "cut short");
        filter.add(101);
        assert!(filter.keeps(&raw_waking(101)));
        assert!(WakeeFilter::new(&off(false, WAKING_FORMAT), &[100]).is_none());
        let no_pid = b"name: sched_waking\nID: 375\nformat:\n";
        assert!(WakeeFilter::new(&off(true, no_pid), &[100]).is_none());
    }

    /// The events go after the plan's, one group each, and the plan's own grouping is kept.
    #[test]
    fn the_events_are_appended_as_groups_of_their_own() {
        let mut events =
            vec![cpiflame_events::resolve_event("cpu-clock", Path::new("/nonexistent")).unwrap()];
        let mut groups = Vec::new();
        let off = add_events(
            &mut events,
            &mut groups,
            Some((
                FoundTracepoint {
                    id: 317,
                    tracing: TracingData::default(),
                },
                WakingScope::EveryProcess,
            )),
        );
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["cpu-clock", SWITCH_EVENT, WAKING_EVENT]);
        assert_eq!(groups.iter().map(|g| g.len).collect::<Vec<_>>(), [1, 1, 1]);
        assert_eq!(off.switches, 1);
        assert_eq!(
            off.waking
                .as_ref()
                .map(|w| (w.index, w.id, w.every_process)),
            Some((2, 317, true))
        );
        assert_eq!((events[1].type_, events[1].config), (1, 3));
        assert_eq!((events[2].type_, events[2].config), (2, 317));
    }
}
