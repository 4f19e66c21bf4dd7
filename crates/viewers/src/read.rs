//! A recording read into [`Recorded`]: perf.data through the loader's walk (once, with the
//! address of every frame, and the wall-time plan's stretches of time without a stack or
//! sample, each at its time), `perf script` text with its samples' times, folded text as one
//! untimed sample per stack and column.

use std::collections::HashMap;

use cpiflame_perf_data::{InputKind, PerfData, Sample as PerfSample};
use cpiflame_pipeline::timeline::read_timed;
use cpiflame_pipeline::{
    event_columns, load_walked, Loaded, PlacedTime, Recording, SampleVisitor, WalkAlso,
};
use cpiflame_profile::timed::Timed;
use cpiflame_profile::{wall, FrameKind, WallColumns};
use cpiflame_unwind::address::EntryAddress;
use cpiflame_unwind::{
    FrameKind as UnwindKind, FrameRef, MappingInfo, Resolver, SourceLine, StackEntry,
};

use crate::{Address, Frame, Lib, Recorded, Sample, Thread, ViewerError};

/// Reads an opened recording for a viewer. Warnings are pushed as they arise.
pub fn read(recording: Recording<'_>, warnings: &mut Vec<String>) -> Result<Recorded, ViewerError> {
    let options = recording.options();
    match recording.kind() {
        InputKind::Folded => Ok(from_profile(recording.load(warnings)?, None)),
        InputKind::PerfScript => {
            // The timed reader opens the file itself: standard input cannot be read twice.
            if options.file.as_os_str() == "-" {
                return Err(ViewerError::Stdin(
                    "perf script text on standard input: give it as a file to export it".into(),
                ));
            }
            drop(recording);
            let timed = read_timed(options, warnings)?;
            Ok(from_profile(timed.loaded, Some(timed.timed)))
        }
        _ => {
            let file = recording.perf_data()?;
            from_perf_data(&file, options, warnings)
        }
    }
}

/// Text input: the profile's frames (no addresses, no lines), and the samples' times when
/// the text has them (`perf script`), else one sample per stack and column (folded).
fn from_profile(loaded: Loaded, timed: Option<Timed>) -> Recorded {
    let profile = &loaded.profile;
    let wall = loaded.wall;
    let mut columns: Vec<String> = profile.events.iter().map(|e| e.name.clone()).collect();
    // A ratio column `finish` adds after the others is no column of the samples.
    columns.truncate(columns_in_samples(&loaded));
    let mut frame_ids: HashMap<u32, u32> = HashMap::new();
    let mut frames = Vec::new();
    let mut stacks = Vec::with_capacity(profile.stacks.len());
    let mut roots = Vec::with_capacity(profile.stacks.len());
    for stack in &profile.stacks {
        let mut ids = Vec::with_capacity(stack.frames.len());
        let mut root = String::new();
        for &id in &stack.frames {
            let frame = profile.frame(id);
            if frame.kind.is_root() {
                if root.is_empty() {
                    root = frame.name.clone();
                }
                continue;
            }
            let index = *frame_ids.entry(id).or_insert_with(|| {
                frames.push(Frame {
                    name: frame.name.clone(),
                    module: frame.module.clone(),
                    kind: frame.kind,
                    file: None,
                    line: None,
                    address: None,
                });
                (frames.len() - 1) as u32
            });
            ids.push(index);
        }
        stacks.push(ids);
        roots.push(root);
    }
    let mut threads = Vec::new();
    let mut samples = Vec::new();
    let is_timed = timed.is_some();
    match timed {
        Some(timed) => {
            threads = timed
                .threads
                .iter()
                .map(|t| Thread {
                    pid: t.pid,
                    tid: t.tid,
                    name: t.comm.clone(),
                    process: t.comm.clone(),
                    first: 0,
                    last: 0,
                })
                .collect();
            samples = timed
                .samples
                .iter()
                .filter(|s| (s.column as usize) < columns.len())
                .map(|s| Sample {
                    time: s.time,
                    thread: s.thread,
                    stack: s.stack,
                    column: s.column,
                    weight: s.period,
                })
                .collect();
        }
        None => {
            // Folded: a "thread" per root frame (the command), no times.
            let mut thread_of: HashMap<&str, u32> = HashMap::new();
            for (index, (stack, root)) in profile.stacks.iter().zip(&roots).enumerate() {
                let thread = *thread_of.entry(root).or_insert_with(|| {
                    threads.push(Thread {
                        name: root.clone(),
                        process: root.clone(),
                        ..Thread::default()
                    });
                    (threads.len() - 1) as u32
                });
                for (column, count) in stack.counts.iter().enumerate().take(columns.len()) {
                    if count.period > 0 {
                        samples.push(Sample {
                            time: 0,
                            thread,
                            stack: index as u32,
                            column: column as u32,
                            weight: count.period,
                        });
                    }
                }
            }
        }
    }
    let mut recorded = Recorded {
        file: loaded.file.clone(),
        columns,
        roles: loaded.roles,
        wall,
        threads,
        frames,
        libs: Vec::new(),
        stacks,
        samples,
        timed: is_timed,
        time_ranges: Vec::new(),
        notes: loaded.notes.iter().map(ToString::to_string).collect(),
    };
    recorded.finish();
    recorded
}

/// The number of the profile's columns that samples weigh: the events' and the wall-time
/// ones, not a ratio column added after them.
fn columns_in_samples(loaded: &Loaded) -> usize {
    let n = loaded.profile.events.len();
    match loaded.ratio_cycles {
        Some(c) if c + 1 == n => n - 1,
        _ => n,
    }
}

/// One place of a stack as first seen: the frames at one address of one process (kernel:
/// any), innermost first, and what is known of the address.
#[derive(Clone, PartialEq, Eq, Hash)]
struct LocationKey {
    /// -1 for kernel addresses.
    pid: i32,
    address: EntryAddress,
    frames: Vec<FrameRef>,
}

struct LocationData {
    mapping: Option<MappingInfo>,
    lines: Vec<SourceLine>,
}

/// The loader's walk, keeping every counted sample's time, thread and stack of locations.
struct Walk {
    keep_kernel: bool,
    /// Each attr's column; the wall-time columns follow the events'.
    column_of: Vec<usize>,
    columns: usize,
    locations: Vec<(LocationKey, LocationData)>,
    location_ids: HashMap<LocationKey, u32>,
    /// Each stack's locations, leaf first.
    stacks: Vec<Vec<u32>>,
    stack_ids: HashMap<Vec<u32>, u32>,
    threads: Vec<(i32, i32)>,
    thread_ids: HashMap<(i32, i32), u32>,
    samples: Vec<Sample>,
    stack: Vec<u32>,
    group: Vec<FrameRef>,
}

impl SampleVisitor for Walk {
    fn visit(
        &mut self,
        sample: &PerfSample<'_>,
        entries: &[StackEntry],
        resolver: &Resolver,
        weights: &[(usize, u64)],
    ) {
        let pid = sample.pid.unwrap_or(-1);
        let tid = sample.tid.unwrap_or(-1);
        self.stack.clear();
        self.group.clear();
        for entry in entries {
            let kind = resolver.frame(entry.frame).kind;
            if kind == UnwindKind::Kernel && !self.keep_kernel {
                continue;
            }
            self.group.push(entry.frame);
            // Inlined frames come before the frame they were inlined into, at its address.
            if kind == UnwindKind::Inline {
                continue;
            }
            let kernel = kind == UnwindKind::Kernel;
            let key = LocationKey {
                pid: if kernel { -1 } else { pid },
                address: entry.address,
                frames: std::mem::take(&mut self.group),
            };
            let index = match self.location_ids.get(&key) {
                Some(&i) => i,
                None => {
                    let data = match entry.address {
                        EntryAddress::User(frame) if !kernel => LocationData {
                            mapping: resolver.mapping_at(pid, frame.address()),
                            lines: resolver.source_lines(pid, frame),
                        },
                        _ => LocationData {
                            mapping: None,
                            lines: Vec::new(),
                        },
                    };
                    let i = self.locations.len() as u32;
                    self.location_ids.insert(key.clone(), i);
                    self.locations.push((key, data));
                    i
                }
            };
            self.stack.push(index);
        }
        let stack = match self.stack_ids.get(&self.stack) {
            Some(&s) => s,
            None => {
                let s = self.stacks.len() as u32;
                self.stacks.push(self.stack.clone());
                self.stack_ids.insert(self.stack.clone(), s);
                s
            }
        };
        let thread = *self.thread_ids.entry((pid, tid)).or_insert_with(|| {
            self.threads.push((pid, tid));
            (self.threads.len() - 1) as u32
        });
        let time = sample.time.unwrap_or(0);
        for &(event, weight) in weights {
            // The wall-time columns come after the events' (merged) columns.
            let column = match self.column_of.get(event) {
                Some(&c) => c,
                None => self.columns + (event - self.column_of.len()),
            };
            self.samples.push(Sample {
                time,
                thread,
                stack,
                column: column as u32,
                weight,
            });
        }
    }
}

/// The frames, their ids and the stacks of a recording being read, to add to.
struct Interned<'a> {
    frames: &'a mut Vec<Frame>,
    ids: &'a mut HashMap<Frame, u32>,
    stacks: &'a mut Vec<Vec<u32>>,
}

impl Interned<'_> {
    /// The stack of `frame` alone.
    fn stack_of(&mut self, frame: cpiflame_profile::Frame) -> u32 {
        let frame = Frame {
            name: frame.name,
            module: frame.module,
            kind: frame.kind,
            file: None,
            line: None,
            address: None,
        };
        let next = self.frames.len() as u32;
        let id = *self.ids.entry(frame.clone()).or_insert_with(|| {
            self.frames.push(frame);
            next
        });
        match self.stacks.iter().position(|s| s[..] == [id]) {
            Some(s) => s as u32,
            None => {
                self.stacks.push(vec![id]);
                (self.stacks.len() - 1) as u32
            }
        }
    }
}

impl Walk {
    /// The wall time the profile has directly under a thread's root frames (off-CPU time
    /// whose switch-out has no stack, on-CPU time of a thread without an on-CPU sample),
    /// each stretch of it a sample at the time it began, weighing its nanoseconds in its
    /// column, on the one frame the graph shows there: `[blocked]`, `[runnable]` or
    /// `[on-CPU, not sampled]`. Its thread is the one whose samples carry its tid (as the
    /// collapse finds its root), else a thread of its own.
    fn add_placed(&mut self, placed: &[PlacedTime], columns: WallColumns, frames: &mut Interned) {
        if placed.is_empty() {
            return;
        }
        let mut by_tid: HashMap<i32, u32> = HashMap::new();
        for (i, &(_, tid)) in self.threads.iter().enumerate() {
            by_tid.entry(tid).or_insert(i as u32);
        }
        // On-CPU, runnable, blocked: made when first used.
        let mut stacks: [Option<u32>; 3] = [None; 3];
        for p in placed {
            let thread = match self
                .thread_ids
                .get(&(p.pid, p.sample_tid))
                .or_else(|| by_tid.get(&p.sample_tid))
            {
                Some(&t) => t,
                None => *self.thread_ids.entry((p.pid, p.tid)).or_insert_with(|| {
                    self.threads.push((p.pid, p.tid));
                    (self.threads.len() - 1) as u32
                }),
            };
            let parts = [p.on_cpu_ns, p.runnable_ns, p.blocked_ns];
            for (part, (column, weight)) in columns.all().into_iter().zip(parts).enumerate() {
                if weight > 0 {
                    let stack = *stacks[part].get_or_insert_with(|| {
                        frames.stack_of(match part {
                            0 => wall::unsampled_frame(),
                            p => wall::no_stack_frame(p == 1),
                        })
                    });
                    self.samples.push(Sample {
                        time: p.start,
                        thread,
                        stack,
                        column: column.index() as u32,
                        weight,
                    });
                }
            }
        }
    }
}

/// A perf.data file, read once by the loader's walk.
fn from_perf_data(
    file: &PerfData,
    options: &cpiflame_pipeline::LoadOptions,
    warnings: &mut Vec<String>,
) -> Result<Recorded, ViewerError> {
    let (mut columns, column_of) = event_columns(file);
    let mut walk = Walk {
        keep_kernel: options.kernel,
        column_of,
        columns: columns.len(),
        locations: Vec::new(),
        location_ids: HashMap::new(),
        stacks: Vec::new(),
        stack_ids: HashMap::new(),
        threads: Vec::new(),
        thread_ids: HashMap::new(),
        samples: Vec::new(),
        stack: Vec::new(),
        group: Vec::new(),
    };
    let also = WalkAlso {
        visit: Some(&mut walk),
        wall_placed: true,
        ..WalkAlso::default()
    };
    let walked = load_walked(file, options, also, warnings)?;
    let (loaded, resolver, plan) = (walked.loaded, walked.resolver, walked.wall);
    if loaded.wall.is_some() {
        columns.extend([wall::ON_CPU, wall::RUNNABLE, wall::BLOCKED].map(String::from));
    }
    let times = file
        .attrs
        .iter()
        .any(|a| a.sample_type & cpiflame_perf_data::abi::sample::TIME != 0);

    // Frames: each location's, outermost first, named now that every name is final.
    let mut libs: Vec<Lib> = Vec::new();
    let mut lib_ids: HashMap<(String, Option<Vec<u8>>), u32> = HashMap::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut frame_ids: HashMap<Frame, u32> = HashMap::new();
    let mut location_frames: Vec<Vec<u32>> = Vec::with_capacity(walk.locations.len());
    for (key, data) in &walk.locations {
        let outer = key.frames.last().map(|&f| resolver.frame(f).kind);
        // An address in a file's mapping, of user code: a library and an offset in it.
        let place = match (&data.mapping, key.address, outer) {
            (Some(m), EntryAddress::User(frame), Some(UnwindKind::User))
                if m.path.starts_with('/') && !m.path.starts_with("//") =>
            {
                let lib_key = (m.path.to_string(), m.build_id.clone());
                let lib = *lib_ids.entry(lib_key).or_insert_with(|| {
                    libs.push(Lib {
                        name: m.path.rsplit('/').next().unwrap_or(&m.path).to_string(),
                        path: m.path.to_string(),
                        build_id: m.build_id.clone(),
                    });
                    (libs.len() - 1) as u32
                });
                let relative = frame
                    .lookup()
                    .0
                    .wrapping_sub(m.start)
                    .wrapping_add(m.file_offset);
                let return_address = matches!(
                    frame,
                    cpiflame_unwind::address::StackFrame::ReturnAddress(_)
                );
                Some((lib, relative, return_address))
            }
            _ => None,
        };
        // Lines pair with frames only when DWARF named every frame there.
        let lines = (data.lines.len() == key.frames.len()).then_some(&data.lines);
        let n = key.frames.len();
        let mut ids = Vec::with_capacity(n);
        for (i, &f) in key.frames.iter().enumerate().rev() {
            let info = resolver.frame(f);
            let line = lines.map(|l| &l[i]);
            let frame = Frame {
                name: info.name.to_string(),
                module: info.module.to_string(),
                kind: profile_kind(info.kind),
                file: line.and_then(|l| l.file.clone()),
                line: line.and_then(|l| l.line),
                address: place.map(|(lib, relative, return_address)| Address {
                    lib,
                    relative,
                    return_address,
                    inline_depth: u16::try_from(n - 1 - i).unwrap_or(u16::MAX),
                }),
            };
            let id = *frame_ids.entry(frame.clone()).or_insert_with(|| {
                frames.push(frame);
                (frames.len() - 1) as u32
            });
            ids.push(id);
        }
        location_frames.push(ids);
    }
    let mut stacks: Vec<Vec<u32>> = walk
        .stacks
        .iter()
        .map(|locations| {
            locations
                .iter()
                .rev()
                .flat_map(|&l| location_frames[l as usize].iter().copied())
                .collect()
        })
        .collect();
    if let (Some(plan), Some(columns)) = (&plan, loaded.wall) {
        let mut frames = Interned {
            frames: &mut frames,
            ids: &mut frame_ids,
            stacks: &mut stacks,
        };
        walk.add_placed(plan.placed(), columns, &mut frames);
    }
    let threads = walk
        .threads
        .iter()
        .map(|&(pid, tid)| Thread {
            pid,
            tid,
            name: resolver.thread_name(pid, tid).to_string(),
            process: resolver.process_name(pid, tid).to_string(),
            first: 0,
            last: 0,
        })
        .collect();
    let notes: Vec<String> = loaded.notes.iter().map(ToString::to_string).collect();
    let time_ranges = match options.time_ranges(file)? {
        Some(ranges) => {
            let first = walk.samples.iter().map(|s| s.time).min().unwrap_or(0);
            let last = walk.samples.iter().map(|s| s.time).max().unwrap_or(0);
            ranges
                .ranges()
                .iter()
                .map(|r| {
                    let start = if r.start == 0 { first } else { r.start };
                    let end = if r.end == 0 { last } else { r.end };
                    (start, end.max(start))
                })
                .collect()
        }
        None => Vec::new(),
    };
    let mut recorded = Recorded {
        file: options.file.clone(),
        columns,
        roles: loaded.roles,
        wall: loaded.wall,
        threads,
        frames,
        libs,
        stacks,
        samples: walk.samples,
        timed: times,
        time_ranges,
        notes,
    };
    recorded.finish();
    Ok(recorded)
}

impl Recorded {
    /// Samples in time order (a stable sort: untimed ones keep their order), and each
    /// thread's first and last sample.
    fn finish(&mut self) {
        if self.timed {
            self.samples.sort_by_key(|s| s.time);
        }
        let mut seen = vec![false; self.threads.len()];
        for s in &self.samples {
            let Some(t) = self.threads.get_mut(s.thread as usize) else {
                continue;
            };
            if !seen[s.thread as usize] {
                seen[s.thread as usize] = true;
                t.first = s.time;
            }
            t.first = t.first.min(s.time);
            t.last = t.last.max(s.time);
        }
    }
}

/// The profile's kind of a resolver frame.
fn profile_kind(kind: UnwindKind) -> FrameKind {
    match kind {
        UnwindKind::User => FrameKind::User,
        UnwindKind::Inline => FrameKind::Inline,
        UnwindKind::Kernel => FrameKind::Kernel,
        UnwindKind::Jit => FrameKind::Jit,
    }
}
