//! Collapsing a recording: every sample is resolved to a named stack and counted in its
//! event's column. Non-sample records are fed to the resolver first, in time order, so each
//! sample is named with the mappings and thread names of its moment.

use std::collections::HashMap;
use std::sync::Arc;

use cpiflame_perf_data::{PerfData, ReadError, RecordKind, Sample};
use cpiflame_unwind::{FrameRef, Resolver, StackEntry};

use cpiflame_profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile};

/// What goes into the root frame, as `stackcollapse-perf --pid/--tid` do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollapseOptions {
    /// Root frame `comm-PID`.
    pub pid: bool,
    /// Root frame `comm-PID/TID`.
    pub tid: bool,
    /// Keep kernel frames (on by default in the CLI, as perf shows them).
    pub kernel: bool,
}

/// What the reader and the kernel reported besides samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollapseStats {
    /// Samples per event column.
    pub samples: Vec<u64>,
    /// Records the kernel dropped (PERF_RECORD_LOST) and samples (LOST_SAMPLES).
    pub lost: u64,
    pub lost_samples: u64,
    /// THROTTLE records: the kernel lowered the sample rate.
    pub throttled: u64,
    /// Offset of a record cut short at the end of a file whose data size was 0.
    pub cut_short_at: Option<u64>,
}

/// The name perf shows for each event of `file`.
pub fn event_names(file: &PerfData) -> Vec<String> {
    file.attrs
        .iter()
        .map(|a| {
            a.name
                .clone()
                .unwrap_or_else(|| cpiflame_events::default_name(a.type_, a.config))
        })
        .collect()
}

/// Reads every record of `file` in time order, feeds non-sample records to `resolver`, and
/// calls `on_sample` with each sample and its resolved stack (leaf first).
///
/// Kernel frames may carry provisional names while the kernel symbols are still being read;
/// call [`Resolver::finish_names`] first when the callback reads names.
pub fn walk_samples(
    file: &PerfData,
    resolver: &mut Resolver,
    mut on_sample: impl FnMut(&Sample<'_>, &[StackEntry], &Resolver),
) -> Result<CollapseStats, ReadError> {
    let mut stats = CollapseStats {
        samples: vec![0; file.attrs.len()],
        ..Default::default()
    };
    let mut entries: Vec<StackEntry> = Vec::new();
    let mut records = file.records();
    for record in records.by_ref() {
        let record = record?;
        let sample = match &record.kind {
            RecordKind::Sample(s) => s,
            RecordKind::Lost { lost, .. } => {
                stats.lost += lost;
                continue;
            }
            RecordKind::LostSamples { lost } => {
                stats.lost_samples += lost;
                continue;
            }
            RecordKind::Throttle {
                throttled: true, ..
            } => {
                stats.throttled += 1;
                continue;
            }
            other => {
                resolver.observe(other);
                continue;
            }
        };
        stats.samples[sample.attr] += 1;
        resolver.resolve(sample, &mut entries);
        on_sample(sample, &entries, resolver);
    }
    stats.cut_short_at = records.cut_short_at;
    Ok(stats)
}

/// Reads every record of `file`, resolving samples with `resolver`, into a profile with one
/// column per event of the file (in the file's order).
pub fn collapse(
    file: &PerfData,
    resolver: &mut Resolver,
    options: CollapseOptions,
) -> Result<(Profile, CollapseStats), ReadError> {
    let n_events = file.attrs.len();
    let fixed_periods: Vec<u64> = file
        .attrs
        .iter()
        .map(|a| {
            if a.freq() {
                1
            } else {
                a.sample_period_or_freq.max(1)
            }
        })
        .collect();
    // Stacks are first counted by resolver frame ids, which are cheap to hash and final
    // only once every name is (kernel names arrive late); they become named profile frames
    // at the end, where stacks that turn out to have the same names merge.
    let mut roots: Vec<String> = Vec::new();
    let mut root_ids: HashMap<(Arc<str>, i32, i32), u32> = HashMap::new();
    let mut raw: HashMap<Vec<u32>, Vec<Count>> = HashMap::new();
    let mut key: Vec<u32> = Vec::new();

    let stats = walk_samples(file, resolver, |sample, entries, resolver| {
        let pid = sample.pid.unwrap_or(-1);
        let tid = sample.tid.unwrap_or(-1);
        let comm = resolver.thread_name(pid, tid);
        let root_key = (
            comm,
            if options.pid || options.tid { pid } else { 0 },
            if options.tid { tid } else { 0 },
        );
        let root = match root_ids.get(&root_key) {
            Some(&id) => id,
            None => {
                let (comm, pid, tid) = &root_key;
                roots.push(if options.tid {
                    format!("{comm}-{pid}/{tid}")
                } else if options.pid {
                    format!("{comm}-{pid}")
                } else {
                    comm.to_string()
                });
                let id = (roots.len() - 1) as u32;
                root_ids.insert(root_key, id);
                id
            }
        };
        key.clear();
        key.push(root);
        key.extend(entries.iter().map(|e| e.frame));
        let count = Count {
            samples: 1,
            period: sample.period.unwrap_or(fixed_periods[sample.attr]),
        };
        match raw.get_mut(key.as_slice()) {
            Some(counts) => counts[sample.attr].add(count),
            None => {
                let mut counts = vec![Count::default(); n_events];
                counts[sample.attr] = count;
                raw.insert(key.clone(), counts);
            }
        }
    })?;
    resolver.finish_names();

    let mut profile = Profile::new(
        event_names(file)
            .into_iter()
            .map(|name| EventColumn { name })
            .collect(),
    );
    let root_frames: Vec<FrameId> = roots
        .into_iter()
        .map(|name| {
            profile.intern(Frame {
                name,
                module: String::new(),
                kind: FrameKind::Process,
            })
        })
        .collect();
    let mut frame_map: Vec<Option<FrameId>> = Vec::new();
    let mut stack: Vec<FrameId> = Vec::new();
    for (key, counts) in raw {
        stack.clear();
        stack.push(root_frames[key[0] as usize]);
        for &frame in key[1..].iter().rev() {
            let id = profile_frame(&mut profile, &mut frame_map, resolver, frame);
            if !options.kernel && profile.frame(id).kind == FrameKind::Kernel {
                continue;
            }
            stack.push(id);
        }
        for (event, count) in counts.into_iter().enumerate() {
            if count.samples > 0 {
                profile.add(&stack, event, count);
            }
        }
    }
    Ok((profile, stats))
}

fn profile_frame(
    profile: &mut Profile,
    map: &mut Vec<Option<FrameId>>,
    resolver: &Resolver,
    frame: FrameRef,
) -> FrameId {
    let i = frame as usize;
    if i >= map.len() {
        map.resize(i + 1, None);
    }
    if let Some(id) = map[i] {
        return id;
    }
    let info = resolver.frame(frame);
    let kind = match info.kind {
        cpiflame_unwind::FrameKind::User => FrameKind::User,
        cpiflame_unwind::FrameKind::Inline => FrameKind::Inline,
        cpiflame_unwind::FrameKind::Kernel => FrameKind::Kernel,
    };
    let id = profile.intern(Frame {
        name: info.name.to_string(),
        module: info.module.to_string(),
        kind,
    });
    map[i] = Some(id);
    id
}
