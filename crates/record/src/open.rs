//! Opening the events: the attrs a recording asks for (sample_type, read_format, registers,
//! groups, leader sampling), opened per CPU and thread as kernel groups, enabled when
//! attached; and [`probe`], which opens them once without recording.
//!
//! It must never start the target nor touch the output file.

use std::fs::File;
use std::path::PathBuf;

use cpiflame_counters::event_use::{leader_sampling, spec_bits, Use};
use cpiflame_counters::sys;
use cpiflame_counters::sys::explain_open_error;
use cpiflame_events::{Rate, ResolvedEvent};
use cpiflame_perf_data::abi::{read_format as rf, sample as st, x86_64_regs};
use cpiflame_perf_data::write::attr_flags;
use cpiflame_perf_data::EventAttr;

use crate::{kernel_allowed, CallGraph, MemorySampling, RecordError, RecordOptions, Target};

/// The x86_64 user registers perf samples for DWARF unwinding (all general-purpose ones but
/// the segment registers DS, ES, FS, GS). cpiflame's unwinder needs only IP, SP and BP; the
/// rest (136 bytes a sample) let perf's own unwinder read cpiflame's files too.
pub(crate) const X86_64_UNWIND_REGS: u64 = 0xff0fff;

const _: () = assert!(
    X86_64_UNWIND_REGS & (1 << x86_64_regs::IP) != 0
        && X86_64_UNWIND_REGS & (1 << x86_64_regs::SP) != 0
        && X86_64_UNWIND_REGS & (1 << x86_64_regs::BP) != 0
);

/// The kernel groups of `o.events`: (first event, number of events) each, in order.
pub(crate) fn group_ranges(o: &RecordOptions) -> Result<Vec<(usize, usize)>, RecordError> {
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
pub(crate) fn kernel_has_read_lost() -> bool {
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
pub(crate) fn build_attrs(
    o: &RecordOptions,
    kernel_callchains: bool,
    enable_on_exec: bool,
) -> Result<Vec<EventAttr>, RecordError> {
    let mut attrs = Vec::with_capacity(o.events.len());
    let mut lost = None;
    for (start, len) in group_ranges(o)? {
        let group = &o.events[start..start + len];
        let sampled_by_leader = leader_sampling(group)?;
        let sampler = if sampled_by_leader {
            read_sampler(group)
        } else {
            0
        };
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
                // keeps those sampling too); a `slots` leader of metric events counts.
                if (k > 0 && k != sampler && e.rate.is_none()) || (k == 0 && sampler != 0) {
                    attr.sample_period_or_freq = 0;
                    attr.flags &= !attr_flags::FREQ;
                }
            }
            attrs.push(attr);
        }
    }
    Ok(attrs)
}

/// Which member of a leader-sampled group samples: perf's read-sampler rule
/// (tools/perf/util/record.c `evsel__read_sampler`, x86 `arch_topdown_sample_read`): the
/// second when the leader is Intel's `slots` (config 0x400 on a core PMU) and a `topdown-*`
/// metric event (event 0, umask 0x80-0x87) is in the group, since the kernel refuses a
/// sampling `slots` leader of metric events; else the leader.
pub(crate) fn read_sampler(group: &[ResolvedEvent]) -> usize {
    let core = |e: &ResolvedEvent| !matches!(e.type_, 0 | 1 | 2 | 3 | 5);
    let metric = |e: &ResolvedEvent| {
        core(e) && (0x8000..=0x87ff).contains(&e.config) && e.config & 0xff == 0
    };
    match group {
        [leader, _, ..] if core(leader) && leader.config == 0x400 && group.iter().any(metric) => 1,
        _ => 0,
    }
}

/// The attr of event `e`, the `i`th; `leader`: it leads its group.
pub(crate) fn event_attr(
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
    let off_cpu = o
        .off_cpu
        .as_ref()
        .filter(|off| i == off.switches || off.waking.as_ref().is_some_and(|w| w.index == i));
    let no_exclude = o.memory.is_some_and(|m| m.no_exclude);
    // The off-CPU events are software and tracepoint events: no memory sampling bits.
    if let Some(m) = o.memory.filter(|_| off_cpu.is_none()) {
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
    if o.cgroup_mount.is_some() {
        sample_type |= st::CGROUP;
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
        if o.cgroup_mount.is_some() {
            flags |= attr_flags::CGROUP;
        }
        if o.namespaces {
            flags |= attr_flags::NAMESPACES;
        }
    }
    if o.clockid.is_some() {
        flags |= attr_flags::USE_CLOCKID;
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
    let mut attr = EventAttr {
        type_: e.type_,
        config: e.config,
        config1: e.config1,
        config2: e.config2,
        sample_period_or_freq: period,
        sample_type,
        flags,
        sample_regs_user: regs,
        sample_stack_user: stack,
        clockid: o.clockid.unwrap_or(0),
        name: Some(e.name.clone()),
        ..EventAttr::default()
    };
    if let Some(off) = off_cpu {
        crate::offcpu::adjust_attr(off, i, &mut attr);
    }
    Ok(attr)
}

/// Events opened on every CPU for every thread of the target; one ring buffer per CPU.
pub(crate) struct Opened {
    /// All fds (kept open for the run).
    pub(crate) fds: Vec<File>,
    /// Per CPU: the fd whose buffer the others of that CPU write to.
    pub(crate) ring_fds: Vec<usize>,
    /// (fd, ring fd) pairs to redirect once the rings are mapped: the kernel only accepts
    /// PERF_EVENT_IOC_SET_OUTPUT to an event that already has a buffer.
    pub(crate) redirects: Vec<(usize, usize)>,
    /// Ids per event (for the file header).
    pub(crate) ids: Vec<Vec<u64>>,
    /// Per fd: the index of its event.
    pub(crate) event_of: Vec<usize>,
}

/// `leads[i]`: event `i` starts a kernel group. With `cgroup` (a cgroup's directory), the
/// events are opened per CPU for that cgroup's tasks instead of `threads`. Events
/// `every_process` says are opened once per CPU for every process (pid -1) instead, into
/// the same ring (`--off-cpu`'s wakeup tracepoint).
pub(crate) fn open_all(
    attrs: &[EventAttr],
    names: &[String],
    leads: &[bool],
    threads: &[i32],
    cpus: &[i32],
    cgroup: Option<&File>,
    every_process: &[bool],
) -> Result<Opened, RecordError> {
    let every = |i: usize| every_process.get(i).copied().unwrap_or(false);
    // Per CPU: each thread's events but those opened for every process, then those (once).
    let mut passes: Vec<(i32, bool)> = threads.iter().map(|&t| (t, false)).collect();
    if threads != [-1] && (0..attrs.len()).any(every) {
        passes.push((-1, true));
    }
    let mut opened = Opened {
        fds: Vec::new(),
        ring_fds: Vec::new(),
        redirects: Vec::new(),
        ids: vec![Vec::new(); attrs.len()],
        event_of: Vec::new(),
    };
    for &cpu in cpus {
        let mut ring: Option<usize> = None;
        for &(tid, every_pass) in &passes {
            let mut leader: Option<usize> = None;
            for (i, attr) in attrs.iter().enumerate() {
                if leads.get(i).copied().unwrap_or(i == 0) {
                    leader = None;
                }
                let opens_here = if every_pass {
                    every(i)
                } else {
                    !every(i) || tid == -1
                };
                if !opens_here {
                    continue;
                }
                let group = leader.map(|l| &opened.fds[l]);
                let fd = match cgroup {
                    Some(dir) => sys::open_in_cgroup(attr, dir, cpu, group),
                    None => sys::open(attr, tid, cpu, group),
                }
                .map_err(|e| RecordError::Open(sys::explain_open_error_for(&names[i], tid, &e)))?;
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

/// Enables every opened event (attach mode: no exec enables them). An event that does not
/// enable records nothing, so that is an error, not an empty recording.
pub(crate) fn enable_all(opened: &Opened, names: &[String], pid: i32) -> Result<(), RecordError> {
    for (fd, &event) in opened.fds.iter().zip(&opened.event_of) {
        sys::enable(fd).map_err(|e| {
            let name = names.get(event).map_or("?", String::as_str);
            RecordError::Open(sys::explain_enable_error(name, pid, &e))
        })?;
    }
    Ok(())
}

/// The options of [`probe_sampling`] before its events: one buffer page, no call graph,
/// no side-band extras, no file.
pub(crate) fn probe_options() -> RecordOptions {
    RecordOptions {
        events: Vec::new(),
        groups: Vec::new(),
        sampling: Rate::Period(1_000_000),
        call_graph: CallGraph::None,
        target: Target::Pids(vec![0]),
        output: PathBuf::new(),
        duration: None,
        buffer_pages: 1,
        cmdline: Vec::new(),
        memory: None,
        buildid_cache: None,
        off_cpu: None,
        cpus: None,
        cgroup: None,
        cgroup_mount: None,
        namespaces: false,
        switch_output: None,
        max_files: None,
        clockid: None,
        env: Vec::new(),
    }
}

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
        memory,
        ..probe_options()
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
