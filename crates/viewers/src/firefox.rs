//! The Firefox Profiler's processed profile format, written with `fxprof-processed-profile`
//! (the crate samply writes it with).
//!
//! What maps to what:
//!
//! - Processes and threads as the samples name them (pid, tid, comm), each from its first
//!   sample to its last.
//! - A sample per sample of the width event (the cycles role; on-CPU nanoseconds in a
//!   wall-time recording), at its time, its weight the sample's period (the processed
//!   format's weights are 32-bit: a larger one is several samples at the same time).
//! - Frames: user code in a file's mapping is an address in its library (the library's
//!   name, path, build id as code id and debug id, as samply writes them), named by a symbol
//!   table of the addresses sampled; inlined functions, kernel, JIT and unmapped frames are
//!   labels. The crate has no column for source lines or inline depth, so they are filled in
//!   after it serialises (`frameTable.line`, `frameTable.inlineDepth`, `funcTable.fileName`),
//!   for each frame where cpiflame knows them and they are the same for every use of it.
//! - Stall data as categories: each sample is "Stalled" (blue) or "Running" (red), chosen
//!   so that the share of its stack's samples marked stalled is the stack's stall share
//!   (stall cycles over cycles over the whole recording, the ratio the CPI graph colours by):
//!   the activity graph shows the stall share over time. Without a stall event, "On CPU".
//! - Counter tracks per process: the cycles, stall and instructions events' counts at their
//!   samples' times; CPI (cycles per instruction in each of up to 100 slices of a thread's
//!   time) as a marker graph track per thread.
//! - Off-CPU time of a wall-time recording: a sample at the switch-out with the stack the
//!   thread left with, no CPU time and weight the nanoseconds off the CPU (category
//!   "Blocked" or "Runnable"), as samply's own off-CPU samples; and "Blocked" / "Runnable"
//!   interval markers (blocked first: a thread waits, is woken, then waits for a CPU).
//!   Off-CPU time whose switch-out has no stack is the same, on the one frame the CPI graph
//!   puts it on under the thread (`[blocked]`, `[runnable]`); on-CPU time of a thread
//!   without an on-CPU sample is a sample at each switch-in on `[on-CPU, not sampled]`
//!   (category "Running" or "On CPU"). Each thread's samples then weigh its wall time.
//! - Each `--time` range an interval marker on every thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use fxprof_processed_profile::debugid::DebugId;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CategoryPairHandle, CounterHandle, CpuDelta, Frame as FxFrame,
    FrameFlags, FrameInfo, LibraryHandle, LibraryInfo, MarkerFieldFlags, MarkerFieldFormat,
    MarkerGraphType, MarkerTiming, ProcessHandle, Profile, ReferenceTimestamp, SamplingInterval,
    StaticSchemaMarker, StaticSchemaMarkerField, StaticSchemaMarkerGraph, StringHandle, Symbol,
    SymbolTable, ThreadHandle, Timestamp,
};
use serde_json::Value;

use crate::{Recorded, Sample, ViewerError};

/// How the profile is written.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The wall-clock time of the first sample (the profile's start), when known.
    pub started: Option<SystemTime>,
}

/// The processed profile of `recorded`, as JSON. Fails only on a recording without sample
/// times (folded text), or when the writer's own output is not what it must be.
pub fn write(recorded: &Recorded, options: &Options) -> Result<Vec<u8>, ViewerError> {
    if !recorded.timed {
        return Err(ViewerError::NoTimes {
            file: recorded.file.clone(),
            why: "no time per sample (folded text, or perf.data recorded without times): the Firefox Profiler places samples in time; use --to speedscope or --to pprof".into(),
        });
    }
    let mut builder = Builder::new(recorded, options);
    builder.add_samples();
    builder.add_cpi();
    builder.add_time_ranges();
    let Builder {
        profile,
        frame_notes,
        ..
    } = builder;
    let mut json = serde_json::to_value(&profile)
        .map_err(|e| ViewerError::Internal(format!("firefox profile: {e}")))?;
    frame_notes.fill_in(&mut json)?;
    serde_json::to_vec(&json).map_err(|e| ViewerError::Internal(format!("firefox profile: {e}")))
}

/// The categories samples are put in.
struct Categories {
    running: CategoryHandle,
    stalled: Option<CategoryHandle>,
    blocked: CategoryHandle,
    runnable: CategoryHandle,
}

struct Builder<'a> {
    recorded: &'a Recorded,
    profile: Profile,
    /// The earliest time (samples, `--time` ranges): the profile's zero.
    zero: u64,
    threads: Vec<ThreadHandle>,
    processes: Vec<ProcessHandle>,
    /// Each thread's index into `processes`.
    process_of_thread: Vec<usize>,
    libs: Vec<LibraryHandle>,
    categories: Categories,
    /// Per process: (cycles, stalls, instructions) counters.
    counters: HashMap<usize, [Option<CounterHandle>; 3]>,
    frame_notes: FrameNotes,
}

impl<'a> Builder<'a> {
    fn new(recorded: &'a Recorded, options: &Options) -> Builder<'a> {
        let zero = recorded
            .samples
            .iter()
            .map(|s| s.time)
            .chain(recorded.time_ranges.iter().map(|r| r.0))
            .min()
            .unwrap_or(0);
        let started = options.started.unwrap_or(SystemTime::UNIX_EPOCH);
        let name = recorded
            .file
            .file_name()
            .map_or_else(|| "-".into(), |n| n.to_string_lossy());
        let mut profile = Profile::new(
            &format!("cpiflame: {name}"),
            ReferenceTimestamp::from_system_time(started),
            SamplingInterval::from_nanos(sampling_interval(recorded)),
        );
        profile.set_os_name("Linux");
        // Every frame is named here (labels, or addresses in a symbol table): nothing for
        // the profiler to look up.
        profile.set_symbolicated(true);
        let categories = Categories {
            running: if recorded.roles.stalls.is_some() {
                profile.add_category("Running", CategoryColor::Red)
            } else {
                profile.add_category("On CPU", CategoryColor::Yellow)
            },
            stalled: recorded
                .roles
                .stalls
                .map(|_| profile.add_category("Stalled", CategoryColor::Blue)),
            blocked: profile.add_category("Blocked", CategoryColor::Transparent),
            runnable: profile.add_category("Runnable", CategoryColor::DarkGray),
        };

        // Processes, then their threads, each from its first sample to its last.
        let mut process_of: HashMap<i32, usize> = HashMap::new();
        let mut processes = Vec::new();
        let mut bounds: Vec<(u64, u64)> = Vec::new();
        for t in &recorded.threads {
            let p = *process_of.entry(t.pid).or_insert_with(|| {
                bounds.push((t.first, t.last));
                let handle = profile.add_process(
                    &t.process,
                    u32::try_from(t.pid).unwrap_or(0),
                    timestamp(t.first, zero),
                );
                processes.push(handle);
                processes.len() - 1
            });
            bounds[p] = (bounds[p].0.min(t.first), bounds[p].1.max(t.last));
        }
        for (&p, &(first, last)) in processes.iter().zip(&bounds) {
            profile.set_process_start_time(p, timestamp(first, zero));
            profile.set_process_end_time(p, timestamp(last, zero));
        }
        let mut threads = Vec::with_capacity(recorded.threads.len());
        for t in &recorded.threads {
            let process = processes[process_of[&t.pid]];
            let handle = profile.add_thread(
                process,
                u32::try_from(t.tid).unwrap_or(0),
                timestamp(t.first, zero),
                t.tid == t.pid,
            );
            profile.set_thread_name(handle, &t.name);
            profile.set_thread_end_time(handle, timestamp(t.last, zero));
            threads.push(handle);
        }

        // Libraries with the symbols of the addresses sampled in them.
        let mut named_addresses: Vec<HashMap<u32, String>> =
            vec![HashMap::new(); recorded.libs.len()];
        for frame in &recorded.frames {
            if let Some((lib, relative)) = address_frame(frame) {
                if let Some(names) = named_addresses.get_mut(lib as usize) {
                    names.entry(relative).or_insert_with(|| frame.name.clone());
                }
            }
        }
        let libs = recorded
            .libs
            .iter()
            .zip(&named_addresses)
            .map(|(lib, names)| {
                let symbols = names
                    .iter()
                    .map(|(&address, name)| Symbol {
                        address,
                        size: Some(1),
                        name: name.clone(),
                    })
                    .collect();
                profile.add_lib(LibraryInfo {
                    name: lib.name.clone(),
                    debug_name: lib.name.clone(),
                    path: lib.path.clone(),
                    debug_path: lib.path.clone(),
                    debug_id: lib.build_id.as_deref().map_or_else(DebugId::nil, debug_id),
                    code_id: lib.build_id.as_deref().map(hex),
                    arch: None,
                    symbol_table: Some(Arc::new(SymbolTable::new(symbols))),
                })
            })
            .collect();
        let heaviest = heaviest_thread(recorded);
        if let Some(&t) = heaviest.and_then(|t| threads.get(t)) {
            profile.add_initial_selected_thread(t);
        }
        Builder {
            recorded,
            profile,
            zero,
            threads,
            process_of_thread: recorded
                .threads
                .iter()
                .map(|t| process_of[&t.pid])
                .collect(),
            processes,
            libs,
            categories,
            counters: HashMap::new(),
            frame_notes: FrameNotes::new(recorded),
        }
    }

    /// The stack of `stack` in thread `thread`, every frame in `category`.
    fn stack(
        &mut self,
        thread: ThreadHandle,
        stack: u32,
        category: CategoryHandle,
    ) -> Option<fxprof_processed_profile::StackHandle> {
        let frames = self.recorded.stacks.get(stack as usize)?;
        let category: CategoryPairHandle = category.into();
        let n = frames.len();
        let infos: Vec<FrameInfo> = frames
            .iter()
            .enumerate()
            .filter_map(|(i, &f)| {
                let frame = self.recorded.frames.get(f as usize)?;
                let fx = match address_frame(frame) {
                    Some((lib, relative)) => {
                        let handle = *self.libs.get(lib as usize)?;
                        let leaf = i + 1 == n;
                        match frame.address {
                            Some(a) if leaf && !a.return_address => {
                                FxFrame::RelativeAddressFromInstructionPointer(handle, relative)
                            }
                            _ => {
                                FxFrame::RelativeAddressFromAdjustedReturnAddress(handle, relative)
                            }
                        }
                    }
                    None => FxFrame::Label(self.profile.intern_string(&frame.name)),
                };
                Some(FrameInfo {
                    frame: fx,
                    category_pair: category,
                    flags: FrameFlags::empty(),
                })
            })
            .collect();
        self.profile.intern_stack_frames(thread, infos.into_iter())
    }

    fn add_samples(&mut self) {
        let recorded = self.recorded;
        let shares = recorded.stall_shares();
        // Per stack: how much stall share its samples so far were given minus how many were
        // marked stalled (error diffusion: the marked share follows the stack's share).
        let mut owed = vec![0.0f64; recorded.stacks.len()];
        let (on_cpu, runnable, blocked) = match recorded.wall {
            Some(w) => (
                Some(w.on_cpu.index() as u32),
                Some(w.runnable.index() as u32),
                Some(w.blocked.index() as u32),
            ),
            None => (recorded.roles.cycles.map(|c| c as u32), None, None),
        };
        // A switch-out's blocked time, which its runnable time follows (by thread and time:
        // an interval without a switch-out stack has its two parts on two frames).
        let mut blocked_at: HashMap<(u32, u64), u64> = HashMap::new();
        if let Some(b) = blocked {
            for s in recorded.samples.iter().filter(|s| s.column == b) {
                blocked_at.insert((s.thread, s.time), s.weight);
            }
        }
        let mut last_on_cpu: Vec<Option<u64>> = vec![None; recorded.threads.len()];
        let interval = sampling_interval(recorded);
        let roles = [
            recorded.roles.cycles,
            recorded.roles.stalls,
            recorded.roles.instructions,
        ];
        for s in &recorded.samples {
            let Some(&thread) = self.threads.get(s.thread as usize) else {
                continue;
            };
            let time = timestamp(s.time, self.zero);
            if Some(s.column) == on_cpu {
                let stalled = match (&shares, self.categories.stalled) {
                    (Some(shares), Some(stalled)) => {
                        let i = s.stack as usize;
                        match (shares.get(i), owed.get_mut(i)) {
                            (Some(&share), Some(owed)) => {
                                *owed += share;
                                (*owed >= 0.5).then(|| {
                                    *owed -= 1.0;
                                    stalled
                                })
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let category = stalled.unwrap_or(self.categories.running);
                let stack = self.stack(thread, s.stack, category);
                // CPU time: the on-CPU nanoseconds of a wall-time recording, else the time
                // since the thread's last sample (it ran in between, as far as sampling knows).
                let since =
                    last_on_cpu[s.thread as usize].map_or(interval, |t| s.time.saturating_sub(t));
                last_on_cpu[s.thread as usize] = Some(s.time);
                let cpu = if recorded.wall.is_some() {
                    s.weight.min(since)
                } else {
                    since
                };
                self.add_weighted(thread, time, stack, CpuDelta::from_nanos(cpu), s.weight);
            } else if Some(s.column) == runnable || Some(s.column) == blocked {
                let is_blocked = Some(s.column) == blocked;
                let category = if is_blocked {
                    self.categories.blocked
                } else {
                    self.categories.runnable
                };
                let stack = self.stack(thread, s.stack, category);
                self.add_weighted(thread, time, stack, CpuDelta::ZERO, s.weight);
                // Blocked first, then runnable until the switch-in.
                let start = if is_blocked {
                    s.time
                } else {
                    let b = blocked_at.get(&(s.thread, s.time)).copied();
                    s.time.saturating_add(b.unwrap_or(0))
                };
                let end = start.saturating_add(s.weight);
                let name =
                    self.profile
                        .intern_string(if is_blocked { "Blocked" } else { "Runnable" });
                let marker = WaitMarker { name, category };
                let timing =
                    MarkerTiming::Interval(timestamp(start, self.zero), timestamp(end, self.zero));
                let handle = self.profile.add_marker(thread, timing, marker);
                self.profile.set_marker_stack(thread, handle, stack);
            }
            // The counters: the roles' events at their samples' times.
            for (role, &column) in roles.iter().enumerate() {
                if column.map(|c| c as u32) == Some(s.column) {
                    if let Some(counter) = self.counter(s, role) {
                        self.profile
                            .add_counter_sample(counter, time, s.weight as f64, 1);
                    }
                }
            }
        }
    }

    /// A sample of `weight`, as several at the same time when it exceeds the format's
    /// 32-bit weights (the first carries the CPU time); at most [`MAX_PARTS`] of them, a
    /// larger weight (more than 39 hours of nanoseconds in one sample: a corrupt period)
    /// saturating there.
    fn add_weighted(
        &mut self,
        thread: ThreadHandle,
        time: Timestamp,
        stack: Option<fxprof_processed_profile::StackHandle>,
        cpu: CpuDelta,
        weight: u64,
    ) {
        let mut left = weight.min(MAX_PARTS * i32::MAX as u64);
        let mut cpu = Some(cpu);
        loop {
            let part = left.min(i32::MAX as u64);
            left -= part;
            let delta = cpu.take().unwrap_or(CpuDelta::ZERO);
            self.profile
                .add_sample(thread, time, stack, delta, part as i32);
            if left == 0 {
                break;
            }
        }
    }

    /// The counter of `role` (0 cycles, 1 stalls, 2 instructions) of `sample`'s process.
    fn counter(&mut self, sample: &Sample, role: usize) -> Option<CounterHandle> {
        let process_index = *self.process_of_thread.get(sample.thread as usize)?;
        let process = *self.processes.get(process_index)?;
        let column = [
            self.recorded.roles.cycles,
            self.recorded.roles.stalls,
            self.recorded.roles.instructions,
        ][role]?;
        let event = self.recorded.columns.get(column)?.clone();
        let slot = self.counters.entry(process_index).or_default();
        if let Some(handle) = slot[role] {
            return Some(handle);
        }
        let (name, description) = match role {
            0 => ("cycles", "cycles (the width event)"),
            1 => ("stall cycles", "stall cycles (the colour event)"),
            _ => ("instructions", "instructions retired"),
        };
        let handle = self.profile.add_counter(
            process,
            name,
            "CPU",
            &format!("{description}: {event}, summed over the samples"),
        );
        self.profile.set_counter_color(
            handle,
            [
                fxprof_processed_profile::GraphColor::Red,
                fxprof_processed_profile::GraphColor::Blue,
                fxprof_processed_profile::GraphColor::Green,
            ][role],
        );
        slot[role] = Some(handle);
        Some(handle)
    }

    /// CPI per thread over time: cycles over instructions in up to 100 equal slices of the
    /// thread's samples' time, as interval markers drawn as a line graph.
    fn add_cpi(&mut self) {
        let recorded = self.recorded;
        let (Some(cycles), Some(instructions)) =
            (recorded.roles.cycles, recorded.roles.instructions)
        else {
            return;
        };
        const SLICES: u64 = 100;
        let name = self.profile.intern_string("CPI");
        for (index, t) in recorded.threads.iter().enumerate() {
            let span = t.last.saturating_sub(t.first);
            let width = (span / SLICES).max(1);
            let mut sums = vec![(0u64, 0u64); (span / width + 1) as usize];
            for s in recorded
                .samples
                .iter()
                .filter(|s| s.thread as usize == index)
            {
                let slice = (s.time.saturating_sub(t.first) / width) as usize;
                let Some(sum) = sums.get_mut(slice) else {
                    continue;
                };
                if s.column as usize == cycles {
                    sum.0 = sum.0.saturating_add(s.weight);
                }
                if s.column as usize == instructions {
                    sum.1 = sum.1.saturating_add(s.weight);
                }
            }
            let Some(&thread) = self.threads.get(index) else {
                continue;
            };
            for (slice, &(c, i)) in sums.iter().enumerate() {
                if i == 0 {
                    continue;
                }
                let start = t.first + slice as u64 * width;
                let timing = MarkerTiming::Interval(
                    timestamp(start, self.zero),
                    timestamp(start + width, self.zero),
                );
                let marker = CpiMarker {
                    name,
                    cpi: c as f64 / i as f64,
                };
                self.profile.add_marker(thread, timing, marker);
            }
        }
    }

    /// Each `--time` range as an interval marker on every thread.
    fn add_time_ranges(&mut self) {
        let name = self.profile.intern_string("--time range");
        for &(start, end) in &self.recorded.time_ranges {
            for &thread in &self.threads {
                let timing =
                    MarkerTiming::Interval(timestamp(start, self.zero), timestamp(end, self.zero));
                self.profile.add_marker(
                    thread,
                    timing,
                    WaitMarker {
                        name,
                        category: CategoryHandle::OTHER,
                    },
                );
            }
        }
    }
}

/// The most samples one sample's weight is split into.
const MAX_PARTS: u64 = 1 << 16;

/// A frame's library and relative address, when it is written as an address: the
/// function at an address (not an inlined one) that fits the format's 32 bits.
fn address_frame(frame: &crate::Frame) -> Option<(u32, u32)> {
    let a = frame.address?;
    if a.inline_depth != 0 {
        return None;
    }
    Some((a.lib, u32::try_from(a.relative).ok()?))
}

/// `time` (ns of the samples' clock) as the profile's, from `zero`.
fn timestamp(time: u64, zero: u64) -> Timestamp {
    Timestamp::from_nanos_since_reference(time.saturating_sub(zero))
}

/// The usual gap between a thread's samples of the width event: the median over threads of
/// (span / samples), 1 ms when there is none.
fn sampling_interval(recorded: &Recorded) -> u64 {
    let width = recorded.width_columns();
    let mut per_thread: HashMap<u32, (u64, u64, u64)> = HashMap::new();
    for s in recorded
        .samples
        .iter()
        .filter(|s| width.first() == Some(&s.column))
    {
        let e = per_thread.entry(s.thread).or_insert((s.time, s.time, 0));
        e.0 = e.0.min(s.time);
        e.1 = e.1.max(s.time);
        e.2 += 1;
    }
    let mut gaps: Vec<u64> = per_thread
        .values()
        .filter(|(_, _, n)| *n > 1)
        .map(|(first, last, n)| (last - first) / (n - 1))
        .filter(|&g| g > 0)
        .collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or(1_000_000)
}

/// The thread with the most weight in the width columns.
fn heaviest_thread(recorded: &Recorded) -> Option<usize> {
    let width = recorded.width_columns();
    let mut sums = vec![0u64; recorded.threads.len()];
    for s in &recorded.samples {
        if width.contains(&s.column) {
            if let Some(sum) = sums.get_mut(s.thread as usize) {
                *sum = sum.saturating_add(s.weight);
            }
        }
    }
    (0..sums.len()).max_by_key(|&i| (sums[i], std::cmp::Reverse(i)))
}

/// An ELF build id as the debug id samply gives it: its first 16 bytes (zero-padded) read
/// as a little-endian GUID, age 0.
pub fn debug_id(build_id: &[u8]) -> DebugId {
    let mut guid = [0u8; 16];
    let n = build_id.len().min(16);
    guid[..n].copy_from_slice(&build_id[..n]);
    DebugId::from_guid_age(&guid, 0).unwrap_or_else(|_| DebugId::nil())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A marker that is only a name and a category (waiting time, `--time` ranges).
struct WaitMarker {
    name: StringHandle,
    category: CategoryHandle,
}

impl StaticSchemaMarker for WaitMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "cpiflame-interval";
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[];

    fn name(&self, _: &mut Profile) -> StringHandle {
        self.name
    }
    fn category(&self, _: &mut Profile) -> CategoryHandle {
        self.category
    }
    fn string_field_value(&self, _: u32) -> StringHandle {
        self.name
    }
    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// Cycles per instruction over an interval, drawn as a line graph track.
struct CpiMarker {
    name: StringHandle,
    cpi: f64,
}

impl StaticSchemaMarker for CpiMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "cpiflame-cpi";
    const CHART_LABEL: Option<&'static str> = Some("CPI {marker.data.cpi}");
    const DESCRIPTION: Option<&'static str> =
        Some("cycles per instruction of the thread's samples in the interval");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[StaticSchemaMarkerField {
        key: "cpi",
        label: "CPI",
        format: MarkerFieldFormat::Decimal,
        flags: MarkerFieldFlags::SEARCHABLE,
    }];
    const GRAPHS: &'static [StaticSchemaMarkerGraph] = &[StaticSchemaMarkerGraph {
        key: "cpi",
        graph_type: MarkerGraphType::Line,
        color: Some(fxprof_processed_profile::GraphColor::Orange),
    }];

    fn name(&self, _: &mut Profile) -> StringHandle {
        self.name
    }
    fn category(&self, _: &mut Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }
    fn string_field_value(&self, _: u32) -> StringHandle {
        self.name
    }
    fn number_field_value(&self, _: u32) -> f64 {
        self.cpi
    }
}

/// One value a frame column takes for every use of a frame, or none when uses differ.
#[derive(Clone, Debug, PartialEq)]
enum Agreed<T> {
    One(T),
    Differ,
}

impl<T: PartialEq> Agreed<T> {
    fn add(slot: &mut Option<Agreed<T>>, value: T) {
        match slot {
            None => *slot = Some(Agreed::One(value)),
            Some(Agreed::One(v)) if *v == value => {}
            Some(_) => *slot = Some(Agreed::Differ),
        }
    }
    fn get(slot: &Option<Agreed<T>>) -> Option<&T> {
        match slot {
            Some(Agreed::One(v)) => Some(v),
            _ => None,
        }
    }
}

/// What the crate has no column for, per frame as the profile names it: an address frame
/// by (library path, relative address), a label by its name.
#[derive(Default)]
struct Note {
    file: Option<Agreed<Option<String>>>,
    line: Option<Agreed<Option<u32>>>,
    inline_depth: Option<Agreed<u16>>,
    address: Option<Agreed<u32>>,
}

struct FrameNotes {
    addresses: HashMap<(String, u32), Note>,
    labels: HashMap<String, Note>,
}

impl FrameNotes {
    fn new(recorded: &Recorded) -> FrameNotes {
        let mut notes = FrameNotes {
            addresses: HashMap::new(),
            labels: HashMap::new(),
        };
        for frame in &recorded.frames {
            let note = match address_frame(frame) {
                Some((lib, relative)) => {
                    let Some(lib) = recorded.libs.get(lib as usize) else {
                        continue;
                    };
                    notes
                        .addresses
                        .entry((lib.path.clone(), relative))
                        .or_default()
                }
                None => {
                    let note = notes.labels.entry(frame.name.clone()).or_default();
                    let place = frame
                        .address
                        .and_then(|a| Some((a.inline_depth, u32::try_from(a.relative).ok()?)));
                    match place {
                        Some((depth, relative)) => {
                            Agreed::add(&mut note.inline_depth, depth);
                            Agreed::add(&mut note.address, relative);
                        }
                        None => {
                            Agreed::add(&mut note.inline_depth, 0);
                            note.address = Some(Agreed::Differ);
                        }
                    }
                    note
                }
            };
            Agreed::add(&mut note.file, frame.file.clone());
            Agreed::add(&mut note.line, frame.line);
        }
        notes
    }

    /// Fills `frameTable.line`, `frameTable.inlineDepth` (and an inlined frame's address)
    /// and `funcTable.fileName` of every thread of the serialised `profile`.
    fn fill_in(&self, profile: &mut Value) -> Result<(), ViewerError> {
        let bad = |what: &str| ViewerError::Internal(format!("firefox profile: {what}"));
        let lib_paths: Vec<String> = profile["libs"]
            .as_array()
            .ok_or_else(|| bad("no libs"))?
            .iter()
            .map(|l| l["path"].as_str().unwrap_or_default().to_string())
            .collect();
        let threads = profile["threads"]
            .as_array_mut()
            .ok_or_else(|| bad("no threads"))?;
        for thread in threads {
            let strings: Vec<String> = thread["stringArray"]
                .as_array()
                .ok_or_else(|| bad("no stringArray"))?
                .iter()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect();
            let mut string_ids: HashMap<String, usize> = strings
                .iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), i))
                .collect();
            let mut added: Vec<String> = Vec::new();
            let mut string_index = |s: &str| -> usize {
                let next = strings.len() + added.len();
                *string_ids.entry(s.to_string()).or_insert_with(|| {
                    added.push(s.to_string());
                    next
                })
            };
            let resource_libs: Vec<Option<usize>> = thread["resourceTable"]["lib"]
                .as_array()
                .ok_or_else(|| bad("no resourceTable.lib"))?
                .iter()
                .map(|l| l.as_u64().map(|l| l as usize))
                .collect();
            let func_names: Vec<usize> = column(&thread["funcTable"]["name"])?;
            let func_resources: Vec<i64> = thread["funcTable"]["resource"]
                .as_array()
                .ok_or_else(|| bad("no funcTable.resource"))?
                .iter()
                .map(|r| r.as_i64().unwrap_or(-1))
                .collect();
            let frame_funcs: Vec<usize> = column(&thread["frameTable"]["func"])?;
            let frame_addresses: Vec<i64> = thread["frameTable"]["address"]
                .as_array()
                .ok_or_else(|| bad("no frameTable.address"))?
                .iter()
                .map(|a| a.as_i64().unwrap_or(-1))
                .collect();
            let n_frames = frame_funcs.len();
            let mut lines = vec![Value::Null; n_frames];
            let mut depths = vec![Value::from(0); n_frames];
            let mut addresses: Vec<Value> = frame_addresses.iter().map(|&a| a.into()).collect();
            let mut func_files = vec![Value::Null; func_names.len()];
            for frame in 0..n_frames {
                let func = frame_funcs[frame];
                let (Some(&name), Some(&resource)) =
                    (func_names.get(func), func_resources.get(func))
                else {
                    return Err(bad("a frame's func out of range"));
                };
                let lib = usize::try_from(resource)
                    .ok()
                    .and_then(|r| resource_libs.get(r).copied().flatten())
                    .and_then(|l| lib_paths.get(l));
                let note = match (lib, u32::try_from(frame_addresses[frame])) {
                    (Some(path), Ok(address)) => self.addresses.get(&(path.clone(), address)),
                    _ => strings.get(name).and_then(|n| self.labels.get(n)),
                };
                let Some(note) = note else { continue };
                if let Some(Some(line)) = Agreed::get(&note.line) {
                    lines[frame] = (*line).into();
                }
                if let Some(&depth) = Agreed::get(&note.inline_depth) {
                    if let Some(&address) = Agreed::get(&note.address) {
                        depths[frame] = depth.into();
                        addresses[frame] = address.into();
                    }
                }
                if let Some(Some(file)) = Agreed::get(&note.file) {
                    func_files[func] = string_index(file).into();
                }
            }
            thread["frameTable"]["line"] = lines.into();
            thread["frameTable"]["inlineDepth"] = depths.into();
            thread["frameTable"]["address"] = addresses.into();
            thread["funcTable"]["fileName"] = func_files.into();
            if let Some(array) = thread["stringArray"].as_array_mut() {
                array.extend(added.into_iter().map(Value::from));
            }
        }
        Ok(())
    }
}

/// A column of indexes.
fn column(value: &Value) -> Result<Vec<usize>, ViewerError> {
    value
        .as_array()
        .ok_or_else(|| ViewerError::Internal("firefox profile: a table column is missing".into()))?
        .iter()
        .map(|v| {
            v.as_u64().map(|v| v as usize).ok_or_else(|| {
                ViewerError::Internal("firefox profile: a column holds a non-index".into())
            })
        })
        .collect()
}
