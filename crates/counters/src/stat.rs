//! Counting events for a whole command, its threads and its children (`cpiflame stat`).
//!
//! Events are opened per CPU on the held child with `inherit` (so every thread and child is
//! counted) and `inherit_stat`, which makes the kernel write a PERF_RECORD_READ with a
//! thread's own counts when it exits: that gives per-thread counts without attaching to each
//! thread. The totals are read with `read()` at the end; the main thread's own counts are the
//! totals less what its threads and children reported.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::time::{Duration, Instant};

use cpiflame_perf_data::abi::{record as rt, sample as st};
use cpiflame_perf_data::write::{attr_flags, EventAttr};
use cpiflame_perf_data::{Endian, RecordKind, RecordView};

use crate::child::{self, ExitStatus};
use crate::event_use::{spec_bits, Unhonoured, Use};
use crate::read::{read_single, Reading, READ_FORMAT};
use crate::ring::Ring;
use crate::sys::{self, explain_open_error, online_cpus};

pub use cpiflame_events::ResolvedEvent;

#[derive(Clone, Debug)]
pub struct StatOptions {
    /// Groups of events: the events of a group are always counted together.
    pub groups: Vec<Vec<ResolvedEvent>>,
    pub command: Vec<OsString>,
}

impl StatOptions {
    /// The command's words as text (invalid UTF-8 replaced), for the printout.
    pub fn command_text(&self) -> Vec<String> {
        let lossy = |a: &OsString| a.to_string_lossy().into_owned();
        self.command.iter().map(lossy).collect()
    }
}

/// Counts of one event, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCount {
    pub value: u64,
    pub time_enabled: u64,
    pub time_running: u64,
}

impl EventCount {
    /// Adds one CPU's reading of a task event. Such an event is enabled while its task runs
    /// anywhere but counts only while it runs on that CPU: counts and running times add up
    /// across CPUs, the enabled time is the same on each (the task's time), so it is not
    /// summed.
    fn add_cpu(&mut self, r: &Reading) {
        self.value = self.value.wrapping_add(r.value);
        self.time_enabled = self.time_enabled.max(r.time_enabled);
        self.time_running = self.time_running.wrapping_add(r.time_running);
    }

    fn sub(&self, other: &EventCount) -> EventCount {
        EventCount {
            value: self.value.saturating_sub(other.value),
            time_enabled: self.time_enabled.saturating_sub(other.time_enabled),
            time_running: self.time_running.saturating_sub(other.time_running),
        }
    }

    /// As a [`Reading`], for its scaling.
    pub fn reading(&self) -> Reading {
        Reading {
            value: self.value,
            time_enabled: self.time_enabled,
            time_running: self.time_running,
            id: 0,
        }
    }
}

/// One thread's own counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadCounts {
    pub pid: i32,
    pub tid: i32,
    /// Its name (comm) when it ended.
    pub comm: String,
    /// One per event, in the order of [`StatReport::events`].
    pub counts: Vec<EventCount>,
}

#[derive(Clone, Debug)]
pub struct StatReport {
    /// Event names, groups flattened.
    pub events: Vec<String>,
    /// Totals over the command and everything it started.
    pub totals: Vec<EventCount>,
    /// Per thread (and child process), main thread first, then by tid.
    pub threads: Vec<ThreadCounts>,
    /// Counts that belong to the threads in `unreported` together (see [`stat`]'s note on
    /// context swaps), when more than one thread wrote no READ record.
    pub unattributed: Option<Vec<EventCount>>,
    /// Threads whose own counts could not be told apart: their sum is `unattributed`.
    pub unreported: Vec<(i32, String)>,
    pub elapsed: Duration,
    pub status: ExitStatus,
}

#[derive(Debug)]
pub enum StatError {
    /// An event would not open; the message says why.
    Open(String),
    /// The command could not run (exit status 127).
    Exec {
        program: String,
        source: std::io::Error,
    },
    Io(String),
    /// An event's spec asks for something a counted event cannot do.
    Unhonoured(Unhonoured),
}

impl From<Unhonoured> for StatError {
    fn from(u: Unhonoured) -> Self {
        StatError::Unhonoured(u)
    }
}

impl std::fmt::Display for StatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatError::Open(m) | StatError::Io(m) => write!(f, "{m}"),
            StatError::Unhonoured(u) => write!(f, "{u}"),
            StatError::Exec { program, source } => write!(f, "cannot execute {program}: {source}"),
        }
    }
}

impl std::error::Error for StatError {}

fn attr_for(e: &ResolvedEvent, leader: bool, enable_on_exec: bool) -> Result<EventAttr, StatError> {
    // The spec's own bits (exclusions, precise level, pinned ...), as perf sets them.
    let mut flags = spec_bits(e, Use::Counting, leader)?
        | attr_flags::INHERIT
        | attr_flags::INHERIT_STAT
        | attr_flags::SAMPLE_ID_ALL;
    if leader {
        flags |= attr_flags::DISABLED;
        if enable_on_exec {
            flags |= attr_flags::ENABLE_ON_EXEC;
        }
    }
    if !kernel_allowed() {
        flags |= attr_flags::EXCLUDE_KERNEL;
    }
    Ok(EventAttr {
        type_: e.type_,
        config: e.config,
        config1: e.config1,
        config2: e.config2,
        sample_type: st::IDENTIFIER | st::TID,
        read_format: READ_FORMAT,
        flags,
        name: Some(e.name.clone()),
        ..EventAttr::default()
    })
}

fn kernel_allowed() -> bool {
    sys::kernel_allowed()
}

/// Checks that the groups open on this process (before a command is started).
pub fn probe(groups: &[Vec<ResolvedEvent>]) -> Result<(), StatError> {
    for group in groups {
        let mut leader: Option<File> = None;
        let mut members = Vec::new();
        for e in group {
            let fd = sys::open(
                &attr_for(e, leader.is_none(), false)?,
                0,
                -1,
                leader.as_ref(),
            )
            .map_err(|err| StatError::Open(explain_open_error(&e.name, &err)))?;
            if leader.is_none() {
                leader = Some(fd);
            } else {
                members.push(fd);
            }
        }
    }
    Ok(())
}

/// Runs the command and counts its events: opens them on the held command, starts it,
/// collects the READ records of threads that exit until it ends, reads the totals, and
/// attributes them to threads.
pub fn stat(options: &StatOptions) -> Result<StatReport, StatError> {
    let events: Vec<&ResolvedEvent> = options.groups.iter().flatten().collect();
    let names: Vec<String> = events.iter().map(|e| e.name.clone()).collect();
    let program = options
        .command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !kernel_allowed() {
        if let Some(e) = events.iter().find(|e| e.exclude_user) {
            return Err(StatError::Open(sys::explain_kernel_only(&e.name)));
        }
    }
    let mut held = child::spawn_held(&options.command).map_err(|source| StatError::Exec {
        program: program.clone(),
        source,
    })?;
    let mut opened = open_counters(&options.groups, held.pid)?;

    child::forward_signals(held.pid);
    let started = Instant::now();
    if let Err(source) = held.start() {
        return Err(StatError::Exec { program, source });
    }
    // The command's name until its exec COMM record says otherwise.
    let program_name: String = program
        .rsplit('/')
        .next()
        .unwrap_or("")
        .chars()
        .take(15)
        .collect();
    let mut exits = Exits::default();
    exits.comms.insert(held.pid, program_name.clone());
    let status = loop {
        // SAFETY: a plain sleep between polls of the child.
        unsafe { libc::usleep(20_000) };
        opened.drain(&mut exits);
        if let Some(status) = held.try_wait() {
            break status;
        }
    };
    let elapsed = started.elapsed();
    opened.drain(&mut exits);

    let totals = opened.read_totals(&names)?;
    let attributed = attribute_to_threads(&totals, exits, held.pid, &program_name);
    Ok(StatReport {
        events: names,
        totals,
        threads: attributed.threads,
        unattributed: attributed.unattributed,
        unreported: attributed.unreported,
        elapsed,
        status,
    })
}

/// The counters of a stat run, open on the held command.
struct Opened {
    /// fds[event][cpu].
    fds: Vec<Vec<File>>,
    id_to_event: BTreeMap<u64, usize>,
    /// One per CPU, owned by the first event's fd of that CPU.
    rings: Vec<Ring>,
    /// The attr of the ring owners, whose layout (sample_id trailer, read_format) every
    /// record in the rings has.
    ring_attr: EventAttr,
}

/// Opens every group on every CPU for `pid`. The first event of every CPU also carries the
/// ring buffer that receives the READ records of exiting threads (COMM and FORK too, for
/// their names).
fn open_counters(groups: &[Vec<ResolvedEvent>], pid: i32) -> Result<Opened, StatError> {
    let cpus = online_cpus();
    let n_events = groups.iter().map(Vec::len).sum();
    let mut fds: Vec<Vec<File>> = (0..n_events).map(|_| Vec::new()).collect();
    let mut id_to_event: BTreeMap<u64, usize> = BTreeMap::new();
    let mut ring_attr = EventAttr::default();
    let mut index = 0;
    for group in groups {
        for &cpu in &cpus {
            let mut leader: Option<usize> = None;
            for (k, e) in group.iter().enumerate() {
                let mut attr = attr_for(e, k == 0, true)?;
                if index + k == 0 {
                    attr.flags |= attr_flags::COMM | attr_flags::TASK;
                    ring_attr = attr.clone();
                }
                let group_fd = leader.map(|_| &fds[index][fds[index].len() - 1]);
                let fd = sys::open(&attr, pid, cpu, group_fd)
                    .map_err(|err| StatError::Open(explain_open_error(&e.name, &err)))?;
                let id = sys::event_id(&fd)
                    .map_err(|err| StatError::Open(format!("event {}: {err}", e.name)))?;
                id_to_event.insert(id, index + k);
                fds[index + k].push(fd);
                leader.get_or_insert(0);
            }
        }
        index += group.len();
    }
    let mut rings: Vec<Ring> = Vec::new();
    for cpu_index in 0..cpus.len() {
        let ring = Ring::map(&fds[0][cpu_index], 8, 4096)
            .map_err(|e| StatError::Io(format!("cannot map a ring buffer: {e}")))?;
        rings.push(ring);
        for fd in fds.iter().skip(1).map(|per_cpu| &per_cpu[cpu_index]) {
            sys::set_output(fd, &fds[0][cpu_index])
                .map_err(|e| StatError::Io(format!("cannot share a ring buffer: {e}")))?;
        }
    }
    Ok(Opened {
        fds,
        id_to_event,
        rings,
        ring_attr,
    })
}

impl Opened {
    /// Hands every record waiting in the rings to [`Exits::on_record`].
    fn drain(&mut self, exits: &mut Exits) {
        let n_events = self.fds.len();
        for ring in self.rings.iter_mut() {
            ring.drain(|r| exits.on_record(r, &self.ring_attr, &self.id_to_event, n_events));
        }
    }

    /// Each event's total over the command and everything it started, summed over CPUs.
    fn read_totals(&self, names: &[String]) -> Result<Vec<EventCount>, StatError> {
        let mut totals = vec![EventCount::default(); self.fds.len()];
        for (event, per_cpu) in self.fds.iter().enumerate() {
            for fd in per_cpu {
                let r = read_single(fd)
                    .map_err(|e| StatError::Io(format!("reading {}: {e}", names[event])))?;
                totals[event].add_cpu(&r);
            }
        }
        Ok(totals)
    }
}

/// What the rings said about threads as they ended.
#[derive(Default)]
struct Exits {
    /// Per thread that wrote a READ record: (pid, its own counts per event).
    exited: BTreeMap<i32, (i32, Vec<EventCount>)>,
    /// Thread names, from COMM records and inherited at FORK.
    comms: BTreeMap<i32, String>,
}

impl Exits {
    /// Handles one record of a stat ring buffer: READ (a thread's counts at exit), FORK and
    /// COMM (its name).
    fn on_record(
        &mut self,
        record: &[u8],
        attr: &EventAttr,
        id_to_event: &BTreeMap<u64, usize>,
        n_events: usize,
    ) {
        let Some(view) = RecordView::parse(record, Endian::NATIVE) else {
            return;
        };
        if view.record_type == rt::READ {
            let Ok(read) = view.read(attr) else {
                return;
            };
            // READ_FORMAT without GROUP: one value, with its id.
            let Some(&(value, Some(id))) = read.values.values().first() else {
                return;
            };
            let Some(&event) = id_to_event.get(&id) else {
                return;
            };
            let reading = Reading {
                value,
                time_enabled: read.values.time_enabled.unwrap_or(0),
                time_running: read.values.time_running.unwrap_or(0),
                id,
            };
            let entry = self
                .exited
                .entry(read.tid)
                .or_insert_with(|| (read.pid, vec![EventCount::default(); n_events]));
            entry.1[event].add_cpu(&reading);
            return;
        }
        match view.side_band(attr) {
            Ok(RecordKind::Fork { tid, ptid, .. }) => {
                // A new thread or process starts with its parent's name.
                let name = self.comms.get(&ptid).cloned().unwrap_or_default();
                self.comms.entry(tid).or_insert(name);
            }
            Ok(RecordKind::Comm { tid, name, .. }) => {
                self.comms
                    .insert(tid, String::from_utf8_lossy(name).into_owned());
            }
            _ => {}
        }
    }
}

/// The per-thread part of a [`StatReport`].
struct Attributed {
    threads: Vec<ThreadCounts>,
    unattributed: Option<Vec<EventCount>>,
    unreported: Vec<(i32, String)>,
}

/// Per-thread counts come from the READ records threads write when they exit; the main
/// thread's are what the totals leave. Except: the kernel swaps the perf contexts of a
/// parent and its inherited clone on a context switch (an optimization; inherit_stat keeps
/// each task's counts with the task), and then the main thread exits holding the clone,
/// writing a READ with its own counts, while the thread that got the original context
/// writes none. The totals minus every READ are then that thread's.
fn attribute_to_threads(
    totals: &[EventCount],
    exits: Exits,
    main_tid: i32,
    program_name: &str,
) -> Attributed {
    let Exits { mut exited, comms } = exits;
    let mut remainder = totals.to_vec();
    for counts in exited.values().map(|(_, c)| c) {
        for (m, c) in remainder.iter_mut().zip(counts) {
            *m = m.sub(c);
        }
    }
    let main_read = exited.remove(&main_tid).map(|(_, c)| c);
    let comm_of = |tid: &i32| {
        comms
            .get(tid)
            .cloned()
            .unwrap_or_else(|| program_name.to_string())
    };
    let silent: Vec<(i32, String)> = comms
        .iter()
        .filter(|(tid, _)| **tid != main_tid && !exited.contains_key(tid))
        .map(|(tid, comm)| (*tid, comm.clone()))
        .collect();
    let mut threads = Vec::new();
    let mut unattributed = None;
    let mut unreported = Vec::new();
    match main_read {
        None => threads.push(ThreadCounts {
            pid: main_tid,
            tid: main_tid,
            comm: comm_of(&main_tid),
            counts: remainder,
        }),
        Some(own) => {
            threads.push(ThreadCounts {
                pid: main_tid,
                tid: main_tid,
                comm: comm_of(&main_tid),
                counts: own,
            });
            match silent.as_slice() {
                [(tid, comm)] => threads.push(ThreadCounts {
                    pid: main_tid,
                    tid: *tid,
                    comm: comm.clone(),
                    counts: remainder,
                }),
                _ => {
                    unattributed = Some(remainder);
                    unreported = silent;
                }
            }
        }
    }
    for (tid, (pid, counts)) in exited {
        threads.push(ThreadCounts {
            pid,
            tid,
            comm: comm_of(&tid),
            counts,
        });
    }
    threads[1..].sort_by_key(|t| t.tid);
    Attributed {
        threads,
        unattributed,
        unreported,
    }
}

/// perf stat's derived lines, from totals by role.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Derived {
    pub ipc: Option<f64>,
    pub cpi: Option<f64>,
    pub stall_share: Option<f64>,
    pub branch_miss_rate: Option<f64>,
    /// Misses (cache or branch) per thousand instructions.
    pub cache_mpki: Option<f64>,
    pub branch_mpki: Option<f64>,
}

/// Derived ratios from scaled counts (each `None` when an operand is missing or zero).
pub fn derive(
    cycles: Option<u64>,
    instructions: Option<u64>,
    stalls: Option<u64>,
    branches: Option<u64>,
    branch_misses: Option<u64>,
    cache_misses: Option<u64>,
) -> Derived {
    let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if b > 0 => Some(a as f64 / b as f64),
        _ => None,
    };
    Derived {
        ipc: ratio(instructions, cycles),
        cpi: ratio(cycles, instructions),
        stall_share: ratio(stalls, cycles),
        branch_miss_rate: ratio(branch_misses, branches),
        cache_mpki: ratio(cache_misses, instructions).map(|r| r * 1000.0),
        branch_mpki: ratio(branch_misses, instructions).map(|r| r * 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ratios_from_exact_counts() {
        let d = derive(
            Some(2000),
            Some(1000),
            Some(500),
            Some(200),
            Some(10),
            Some(3),
        );
        assert_eq!(d.ipc, Some(0.5));
        assert_eq!(d.cpi, Some(2.0));
        assert_eq!(d.stall_share, Some(0.25));
        assert_eq!(d.branch_miss_rate, Some(0.05));
        assert_eq!(d.cache_mpki, Some(3.0));
        assert_eq!(d.branch_mpki, Some(10.0));
        let none = derive(Some(0), None, None, Some(0), Some(1), None);
        assert_eq!(none, Derived::default());
    }

    #[test]
    fn main_thread_is_totals_less_reported_threads() {
        let total = EventCount {
            value: 100,
            time_enabled: 50,
            time_running: 50,
        };
        let child = EventCount {
            value: 30,
            time_enabled: 20,
            time_running: 20,
        };
        assert_eq!(
            total.sub(&child),
            EventCount {
                value: 70,
                time_enabled: 30,
                time_running: 30
            }
        );
    }

    #[test]
    fn exit_records_give_thread_counts_and_names() {
        use cpiflame_perf_data::write::{
            comm_record, fork_record, read_record, ReadValue, ReadValues, SampleId,
        };
        let event = cpiflame_events::parse_event("task-clock")
            .unwrap()
            .resolve(0);
        let attr = attr_for(&event, true, true).unwrap();
        let ids = BTreeMap::from([(42u64, 0usize)]);
        let sid = SampleId {
            pid: 7,
            tid: 8,
            id: 42,
            ..SampleId::default()
        };
        let mut exits = Exits::default();
        exits.comms.insert(7, "app".into());
        let records = [
            fork_record(&attr, 7, 7, 8, 7, 0, &sid).unwrap(),
            read_record(
                &attr,
                7,
                8,
                &ReadValues {
                    time_enabled: 100,
                    time_running: 50,
                    values: vec![ReadValue {
                        value: 1234,
                        id: 42,
                        lost: 0,
                    }],
                },
                &sid,
            )
            .unwrap(),
            // A READ of an id that is none of ours is ignored.
            read_record(
                &attr,
                7,
                9,
                &ReadValues {
                    time_enabled: 1,
                    time_running: 1,
                    values: vec![ReadValue {
                        value: 1,
                        id: 43,
                        lost: 0,
                    }],
                },
                &sid,
            )
            .unwrap(),
        ];
        for r in &records {
            exits.on_record(r, &attr, &ids, 1);
        }
        assert_eq!(exits.comms[&8], "app", "a new thread has its parent's name");
        exits.on_record(
            &comm_record(&attr, 7, 8, "worker", false, &sid).unwrap(),
            &attr,
            &ids,
            1,
        );
        assert_eq!(exits.comms[&8], "worker");
        assert_eq!(
            exits.exited.into_iter().collect::<Vec<_>>(),
            [(
                8,
                (
                    7,
                    vec![EventCount {
                        value: 1234,
                        time_enabled: 100,
                        time_running: 50
                    }]
                )
            )]
        );
    }
}
