//! Collapsing a recording: every sample is resolved to a named stack and counted in its
//! event's column. Non-sample records are fed to the resolver first, in time order, so each
//! sample is named with the mappings and thread names of its moment.

use std::collections::HashMap;
use std::sync::Arc;

use cpiflame_perf_data::{PerfData, ReadError, RecordKind, Sample};
use cpiflame_unwind::{FrameRef, Resolver, StackEntry};

use crate::profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile};

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
    let names = event_names(file);
    let mut profile = Profile::new(names.into_iter().map(|name| EventColumn { name }).collect());
    // Resolver frame -> profile frame, filled as frames are first seen.
    let mut frame_map: Vec<Option<FrameId>> = Vec::new();
    let mut roots: HashMap<(Arc<str>, i32, i32), FrameId> = HashMap::new();
    let mut stack: Vec<FrameId> = Vec::new();
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

    let stats = walk_samples(file, resolver, |sample, entries, resolver| {
        let event = sample.attr;
        let pid = sample.pid.unwrap_or(-1);
        let tid = sample.tid.unwrap_or(-1);
        let comm = resolver.thread_name(pid, tid);
        let key = (
            comm.clone(),
            if options.pid || options.tid { pid } else { 0 },
            if options.tid { tid } else { 0 },
        );
        let root = match roots.get(&key) {
            Some(&id) => id,
            None => {
                let name = if options.tid {
                    format!("{comm}-{pid}/{tid}")
                } else if options.pid {
                    format!("{comm}-{pid}")
                } else {
                    comm.to_string()
                };
                let id = profile.intern(Frame {
                    name,
                    module: String::new(),
                    kind: FrameKind::Process,
                });
                roots.insert(key, id);
                id
            }
        };
        stack.clear();
        stack.push(root);
        for entry in entries.iter().rev() {
            let id = profile_frame(&mut profile, &mut frame_map, resolver, entry.frame);
            if !options.kernel && profile.frame(id).kind == FrameKind::Kernel {
                continue;
            }
            stack.push(id);
        }
        let period = sample.period.unwrap_or(fixed_periods[event]);
        profile.add(&stack, event, Count { samples: 1, period });
    })?;
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
