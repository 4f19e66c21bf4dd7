//! A perf.data file to pprof, with the addresses of every frame.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use cpiflame_perf_data::{PerfData, Sample};
use cpiflame_pipeline::{
    event_columns, load_walked, LoadOptions, SampleVisitor, WalkAlso, Walked, WallPlan,
};
use cpiflame_profile::wall;
use cpiflame_unwind::address::EntryAddress;
use cpiflame_unwind::{FrameKind, FrameRef, MappingInfo, Resolver, SourceLine, StackEntry};

use crate::builder::{hex, Builder, FrameSpec, LabelValue, MappingSpec};
use crate::proto::Profile;
use crate::{events_type, period_unit, samples_type, value, PprofError};

/// A perf.data file to read, and how.
pub struct PerfSource<'a> {
    pub file: &'a PerfData,
    pub options: &'a LoadOptions,
    /// When the recording ended (the file's modification time), for `time_nanos`.
    pub ended: Option<SystemTime>,
}

/// One location as first seen: the frames at one address of one process (kernel: any).
#[derive(Clone, PartialEq, Eq, Hash)]
struct LocationKey {
    /// -1 for kernel addresses.
    pid: i32,
    /// The address and what kind it is: the frames were named, and source lines are looked
    /// up, at its lookup address.
    address: EntryAddress,
    /// Innermost first: inlined functions, then the function.
    frames: Vec<FrameRef>,
}

struct LocationData {
    mapping: Option<MappingInfo>,
    lines: Vec<SourceLine>,
    kernel: bool,
}

/// A location and what is known of it.
type Location = (LocationKey, LocationData);

/// A distinct sample: thread name, process, thread, stack of location indexes (leaf first),
/// cgroup path (when the sample has a cgroup id).
type SampleKey = (Arc<str>, i32, i32, Vec<u32>, Option<Arc<str>>);

/// Every counted sample's stack kept as locations (addresses and their frames), handed
/// by the loader's walk ([`SampleVisitor`]), with its weights per column.
struct AddressWalk {
    keep_kernel: bool,
    /// Each attr's column (hybrid parts: one per event); the wall-time columns follow.
    column_of: Vec<usize>,
    columns: usize,
    location_ids: HashMap<LocationKey, u32>,
    locations: Vec<Location>,
    samples: HashMap<SampleKey, Vec<u64>>,
    stack: Vec<u32>,
    group: Vec<FrameRef>,
    /// The first and last sample's time.
    times: Option<(u64, u64)>,
}

impl SampleVisitor for AddressWalk {
    fn visit(
        &mut self,
        sample: &Sample<'_>,
        entries: &[StackEntry],
        resolver: &Resolver,
        weights: &[(usize, u64)],
    ) {
        if let Some(t) = sample.time {
            self.times = Some(self.times.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
        let pid = sample.pid.unwrap_or(-1);
        let tid = sample.tid.unwrap_or(-1);
        self.stack.clear();
        self.group.clear();
        for entry in entries {
            let kind = resolver.frame(entry.frame).kind;
            if kind == FrameKind::Kernel && !self.keep_kernel {
                continue;
            }
            self.group.push(entry.frame);
            // Inlined frames come before the frame they were inlined into, at its address.
            if kind == FrameKind::Inline {
                continue;
            }
            let kernel = kind == FrameKind::Kernel;
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
                            kernel,
                        },
                        _ => LocationData {
                            mapping: None,
                            lines: Vec::new(),
                            kernel,
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
        let cgroup = sample.cgroup.map(|id| {
            resolver
                .cgroup_path(id)
                .unwrap_or_else(|| format!("[unknown cgroup {id:#x}]").into())
        });
        let key = (
            resolver.thread_name(pid, tid),
            pid,
            tid,
            self.stack.clone(),
            cgroup,
        );
        let values = self.samples.entry(key).or_default();
        for &(event, period) in weights {
            // The wall-time columns come after the events' (merged) columns.
            let column = match self.column_of.get(event) {
                Some(&c) => c,
                None => self.columns + (event - self.column_of.len()),
            };
            if values.len() < 2 * (column + 1) {
                values.resize(2 * (column + 1), 0);
            }
            values[2 * column] = values[2 * column].saturating_add(1);
            values[2 * column + 1] = values[2 * column + 1].saturating_add(period);
        }
    }
}

/// The profile of `source`, read once: the loader's walk (which chooses the roles, as `fold`
/// does) hands every sample it counts, weighed as the profile weighs it, to a walk that keeps
/// its stack as addresses.
pub fn from_perf_data(
    source: &PerfSource<'_>,
    warnings: &mut Vec<String>,
) -> Result<Profile, PprofError> {
    let file = source.file;
    // The columns `fold` gives: on hybrid parts one event opened per core type is one.
    let (mut names, column_of) = event_columns(file);
    let mut walk = AddressWalk {
        keep_kernel: source.options.kernel,
        column_of,
        columns: names.len(),
        location_ids: HashMap::new(),
        locations: Vec::new(),
        samples: HashMap::new(),
        stack: Vec::new(),
        group: Vec::new(),
        times: None,
    };
    let also = WalkAlso {
        visit: Some(&mut walk),
        ..WalkAlso::default()
    };
    let Walked {
        loaded,
        resolver,
        wall: plan,
        ..
    } = load_walked(file, source.options, also, warnings)?;
    // Off-CPU time: the three wall-time columns after the events', as the profile has them.
    if loaded.wall.is_some() {
        names.extend([wall::ON_CPU, wall::RUNNABLE, wall::BLOCKED].map(String::from));
    }
    let AddressWalk {
        column_of,
        locations,
        mut samples,
        times,
        ..
    } = walk;
    for values in samples.values_mut() {
        values.resize(2 * names.len(), 0);
    }
    let (locations, samples) = merge_by_final_names(&resolver, locations, samples);

    let mut b = Builder::new();
    for name in &names {
        b.sample_type(&samples_type(name), "count");
        b.sample_type(&events_type(name), period_unit(name));
    }
    if let Some((cycles, name)) = loaded.roles.cycles.and_then(|c| Some((c, names.get(c)?))) {
        b.default_sample_type(&events_type(name));
        // The period of the cycles column's first event (on hybrid parts each core type's
        // event has the same rate).
        let first = column_of.iter().position(|&c| c == cycles).unwrap_or(0);
        let attr = &file.attrs[first];
        // A fixed period; in frequency mode each sample has its own, and there is none.
        let period = if attr.freq() {
            0
        } else {
            value(attr.sample_period_or_freq)
        };
        b.period(name, period_unit(name), period);
    }
    let meta = &file.meta;
    if !meta.cmdline.is_empty() {
        b.comment(&format!("perf-command:{}", meta.cmdline.join(" ")));
    }
    if let Some(host) = &meta.hostname {
        b.comment(&format!("host:{host}"));
    }
    if let Some(cpu) = &meta.cpu_desc {
        b.comment(&format!("cpu:{cpu}"));
    }
    if let Some(version) = &meta.perf_version {
        b.comment(&format!("perf-version:{version}"));
    }
    let duration = times.map_or(0, |(first, last)| last - first);
    // The first sample's wall-clock time where the recording has CLOCK_DATA (`perf record
    // -k`); else the file's modification time less the duration, an estimate.
    let start = match (meta.clock_data, times) {
        (Some(clock), Some((first, _))) => value(clock.wall_clock_of(first)),
        _ => source
            .ended
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |t| {
                value(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
                    .saturating_sub(value(duration))
            }),
    };
    b.times(start, value(duration));

    // The kernel's mapping spans the kernel addresses sampled: the recording does not say
    // where the kernel's text is (perf's kernel mmap record gives it only for perf's files).
    let kernel_range = locations
        .iter()
        .filter(|(_, d)| d.kernel)
        .map(|(k, _)| k.address.address().0)
        .fold(None, |r: Option<(u64, u64)>, a| {
            Some(r.map_or((a, a), |(lo, hi)| (lo.min(a), hi.max(a))))
        });
    let kernel_mapping = kernel_range.map(|(lo, hi)| MappingSpec {
        start: lo,
        limit: hi.saturating_add(1),
        file_offset: 0,
        filename: "[kernel.kallsyms]".to_string(),
        build_id: resolver.kernel_build_id().map(hex).unwrap_or_default(),
        named: true,
        lines: false,
    });
    // pprof takes the first mapping for the program (`File:` in its reports): the
    // executable of the process with the most samples, found by its name (comm is the
    // executable's file name, cut to 15 bytes).
    let mut per_pid: HashMap<i32, u64> = HashMap::new();
    for ((_, pid, _, _, _), values) in &samples {
        *per_pid.entry(*pid).or_default() += values.iter().sum::<u64>();
    }
    if let Some((&pid, _)) = per_pid.iter().max_by_key(|(&pid, &n)| (n, -pid)) {
        let comm = resolver.thread_name(pid, pid);
        let main = locations.iter().find_map(|(k, d)| {
            let m = d.mapping.as_ref().filter(|_| k.pid == pid)?;
            let base = m.path.rsplit('/').next().unwrap_or(&m.path);
            (!comm.is_empty() && base.starts_with(&*comm)).then_some(m)
        });
        if let Some(m) = main {
            b.mapping(&user_mapping(m));
        }
    }
    let mut ids = Vec::with_capacity(locations.len());
    let mut frames = Vec::new();
    for (key, data) in &locations {
        let mapping_id = if data.kernel {
            kernel_mapping.as_ref().map_or(0, |m| b.mapping(m))
        } else {
            data.mapping
                .as_ref()
                .map_or(0, |m| b.mapping(&user_mapping(m)))
        };
        // Lines pair with frames only when DWARF named every frame there.
        let lines = (data.lines.len() == key.frames.len()).then_some(&data.lines);
        frames.clear();
        for (i, &frame) in key.frames.iter().enumerate() {
            let line = lines.map(|l| &l[i]);
            frames.push(FrameSpec {
                name: resolver.frame(frame).name.to_string(),
                filename: line.and_then(|l| l.file.clone()).unwrap_or_default(),
                line: line.and_then(|l| l.line).map_or(0, i64::from),
            });
        }
        ids.push(b.location(mapping_id, key.address.address().0, &frames));
    }
    for ((thread, pid, tid, stack, cgroup), values) in samples {
        let mut labels = vec![
            ("thread", LabelValue::Str(thread.to_string())),
            ("pid", LabelValue::Num(i64::from(pid))),
            ("tid", LabelValue::Num(i64::from(tid))),
        ];
        if let Some(cgroup) = cgroup {
            labels.push(("cgroup", LabelValue::Str(cgroup.to_string())));
        }
        // `--region`: every sample kept is inside the region, which profiles of several
        // regions merged (Pyroscope, `pprof -tags`) tell apart by.
        if let Some(region) = &source.options.region {
            labels.push(("region", LabelValue::Str(region.clone())));
        }
        b.sample(
            stack.iter().map(|&i| ids[i as usize]).collect(),
            values.into_iter().map(value).collect(),
            &labels,
        );
    }
    if let (Some(plan), true) = (&plan, loaded.wall.is_some()) {
        add_time_without_stack(&mut b, plan, &resolver, names.len() - 3, names.len());
    }
    Ok(b.finish())
}

/// The wall time the graph has only under a thread's root (off-CPU time whose switch-out has
/// no stack, on-CPU time of a thread without a sample) as samples of one location each, the
/// graph's frame (`[runnable]`, `[blocked]`, `[on-CPU, not sampled]`), labelled with their
/// thread: each thread's wall-time totals are then the graph's. `first_wall` is the on-CPU
/// column (runnable and blocked follow it), `columns` how many there are.
fn add_time_without_stack(
    b: &mut Builder,
    plan: &WallPlan,
    resolver: &Resolver,
    first_wall: usize,
    columns: usize,
) {
    let mut locations: HashMap<&str, u64> = HashMap::new();
    let mut add = |b: &mut Builder,
                   frame: &'static str,
                   pid: i32,
                   tid: i32,
                   at: usize,
                   intervals: u64,
                   ns: u64| {
        if ns == 0 {
            return;
        }
        let location = *locations.entry(frame).or_insert_with(|| {
            let spec = FrameSpec {
                name: frame.to_string(),
                filename: String::new(),
                line: 0,
            };
            b.location(0, 0, &[spec])
        });
        let mut values = vec![0i64; 2 * columns];
        values[2 * at] = value(intervals);
        values[2 * at + 1] = value(ns);
        let labels = [
            (
                "thread",
                LabelValue::Str(resolver.thread_name(pid, tid).to_string()),
            ),
            ("pid", LabelValue::Num(i64::from(pid))),
            ("tid", LabelValue::Num(i64::from(tid))),
        ];
        b.sample(vec![location], values, &labels);
    };
    for s in plan.without_stack() {
        let (runnable, blocked) = (first_wall + 1, first_wall + 2);
        let (pid, tid) = (s.pid, s.sample_tid);
        add(
            b,
            wall::NO_STACK_RUNNABLE,
            pid,
            tid,
            runnable,
            s.runnable_intervals,
            s.runnable_ns,
        );
        add(
            b,
            wall::NO_STACK_BLOCKED,
            pid,
            tid,
            blocked,
            s.blocked_intervals,
            s.blocked_ns,
        );
    }
    for u in plan.unsampled() {
        let (pid, tid) = (u.pid, u.sample_tid);
        add(
            b,
            wall::UNSAMPLED_ON_CPU,
            pid,
            tid,
            first_wall,
            u.intervals,
            u.on_cpu_ns,
        );
    }
}

/// The locations and samples with locations that are the same once every frame has its
/// final name made one. A kernel frame seen before the kernel symbols were read (they load on
/// another thread) has a frame of its own per address until then, where one seen later shares
/// its function's: merged here, the output does not depend on when the symbols arrived, and
/// is the same as from one thread. Locations keep the order of their first appearance; the
/// samples are sorted by stack.
fn merge_by_final_names(
    resolver: &Resolver,
    locations: Vec<Location>,
    samples: HashMap<SampleKey, Vec<u64>>,
) -> (Vec<Location>, Vec<(SampleKey, Vec<u64>)>) {
    type Named = (i32, EntryAddress, Vec<(Arc<str>, Arc<str>, FrameKind)>);
    let mut first: HashMap<Named, u32> = HashMap::new();
    let mut kept = Vec::with_capacity(locations.len());
    let mut merged_into = Vec::with_capacity(locations.len());
    for (key, data) in locations {
        let frames = key
            .frames
            .iter()
            .map(|&f| {
                let info = resolver.frame(f);
                (info.name.clone(), info.module.clone(), info.kind)
            })
            .collect();
        let named = (key.pid, key.address, frames);
        let index = *first.entry(named).or_insert_with(|| {
            kept.push((key, data));
            (kept.len() - 1) as u32
        });
        merged_into.push(index);
    }
    let mut merged: std::collections::BTreeMap<SampleKey, Vec<u64>> = Default::default();
    for ((thread, pid, tid, stack, cgroup), values) in samples {
        let stack = stack.iter().map(|&i| merged_into[i as usize]).collect();
        let sum = merged
            .entry((thread, pid, tid, stack, cgroup))
            .or_insert_with(|| vec![0; values.len()]);
        for (sum, v) in sum.iter_mut().zip(values) {
            *sum = sum.saturating_add(v);
        }
    }
    (kept, merged.into_iter().collect())
}

fn user_mapping(m: &MappingInfo) -> MappingSpec {
    MappingSpec {
        start: m.start,
        limit: m.limit,
        file_offset: m.file_offset,
        filename: m.path.to_string(),
        build_id: m.build_id.as_deref().map(hex).unwrap_or_default(),
        named: true,
        lines: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::path::Path;
    use std::sync::{Condvar, Mutex};

    use cpiflame_perf_data::abi::{callchain, misc, sample};
    use cpiflame_perf_data::write::{sample_record, EventAttr, SampleFields};
    use cpiflame_perf_data::{parse_sample_record, Endian, Meta};
    use cpiflame_unwind::address::Avma;
    use cpiflame_unwind::{Machine, Options, SharedBytes, Source, StackEntry};

    /// A machine whose /proc/kallsyms can be held back: reading it waits until `open`.
    struct HeldKallsyms {
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl HeldKallsyms {
        fn release(&self) {
            *self.open.lock().unwrap() = true;
            self.opened.notify_all();
        }
    }

    impl Source for HeldKallsyms {
        fn map(&self, _: &Path) -> io::Result<SharedBytes> {
            Err(io::ErrorKind::NotFound.into())
        }
        fn read_text(&self, path: &Path) -> io::Result<String> {
            if path != Path::new("/proc/kallsyms") {
                return Err(io::ErrorKind::NotFound.into());
            }
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.opened.wait(open).unwrap();
            }
            Ok("ffffffff81000000 T _text\nffffffff81000100 t one_function\nffffffff81000200 t next_function\n".into())
        }
        fn vdso(&self) -> Option<SharedBytes> {
            None
        }
        fn machine(&self) -> Machine {
            Machine {
                hostname: Some("here".into()),
                os_release: Some("6.1".into()),
                kernel_build_id: None,
            }
        }
    }

    /// The kernel entries of a sample whose call chain is `chain` (markers included).
    fn kernel_entries(resolver: &mut Resolver, chain: &[u64]) -> Vec<StackEntry> {
        let attr = EventAttr {
            sample_type: sample::IP | sample::TID | sample::CALLCHAIN,
            ..EventAttr::default()
        };
        let fields = SampleFields {
            ip: chain[1],
            pid: 7,
            tid: 7,
            callchain: chain.to_vec(),
            misc: misc::KERNEL,
            ..SampleFields::default()
        };
        let record = sample_record(&attr, &fields).unwrap();
        let sample = parse_sample_record(&record, 0, &attr, Endian::Little).unwrap();
        let mut entries = Vec::new();
        resolver.resolve(&sample, &mut entries);
        entries
    }

    /// Kernel frames handed out before the kernel symbols are read are one per address, and
    /// two addresses of one function get one frame once the symbols are read: locations made
    /// of such frames (here both keyed at one address, the contract `merge_by_final_names`
    /// keeps) merge into what one thread, which reads the symbols first, makes.
    #[test]
    fn frames_named_late_merge_into_the_locations_of_frames_named_at_once() {
        const X: u64 = 0xffff_ffff_8100_0150;
        let meta = Meta {
            hostname: Some("here".into()),
            os_release: Some("6.1".into()),
            ..Meta::default()
        };
        let locations_of = |single_threaded: bool| {
            let source = Arc::new(HeldKallsyms {
                open: Mutex::new(single_threaded),
                opened: Condvar::new(),
            });
            let options = Options {
                single_threaded,
                ..Options::default()
            };
            let mut resolver = Resolver::with_source(&meta, options, source.clone());
            let first = kernel_entries(&mut resolver, &[callchain::KERNEL, X]);
            let second = kernel_entries(&mut resolver, &[callchain::KERNEL, X + 1]);
            source.release();
            resolver.finish_names();
            let key = |e: &StackEntry| LocationKey {
                pid: -1,
                address: EntryAddress::Kernel(Avma(X)),
                frames: vec![e.frame],
            };
            let data = || LocationData {
                mapping: None,
                lines: Vec::new(),
                kernel: true,
            };
            let mut locations: Vec<(LocationKey, LocationData)> = Vec::new();
            let mut index_of =
                |e: &StackEntry| match locations.iter().position(|(k, _)| *k == key(e)) {
                    Some(i) => i as u32,
                    None => {
                        locations.push((key(e), data()));
                        locations.len() as u32 - 1
                    }
                };
            let a = vec![index_of(&first[0])];
            let b = vec![index_of(&second[0])];
            let thread: Arc<str> = "t".into();
            // Added up per stack as the walk adds them.
            let mut samples: HashMap<SampleKey, Vec<u64>> = HashMap::new();
            for (stack, values) in [(a, [1, 10]), (b, [2, 20])] {
                let sum = samples
                    .entry((thread.clone(), 7, 7, stack, None))
                    .or_insert_with(|| vec![0, 0]);
                sum.iter_mut().zip(values).for_each(|(s, v)| *s += v);
            }
            let before = locations.len();
            let (locations, samples) = merge_by_final_names(&resolver, locations, samples);
            let named: Vec<(u64, Vec<String>)> = locations
                .iter()
                .map(|(k, _)| {
                    let names = k.frames.iter().map(|&f| resolver.frame(f).name.to_string());
                    (k.address.address().0, names.collect())
                })
                .collect();
            let stacks: Vec<(Vec<u32>, Vec<u64>)> = samples
                .into_iter()
                .map(|((_, _, _, s, _), v)| (s, v))
                .collect();
            (before, named, stacks)
        };
        let (one_before, one, one_stacks) = locations_of(true);
        let (many_before, many, many_stacks) = locations_of(false);
        // Read first: one frame for both addresses. Read late: two until merged.
        assert_eq!(one_before, 1);
        assert_eq!(many_before, 2);
        assert_eq!(one, many);
        assert_eq!(one, [(X, vec!["one_function".to_string()])]);
        assert_eq!(one_stacks, many_stacks);
        assert_eq!(one_stacks, [(vec![0], vec![3, 30])]);
    }
}
