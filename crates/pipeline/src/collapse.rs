//! Collapsing a recording: every sample is resolved to a named stack and counted in its
//! event's column. Non-sample records are fed to the resolver first, in time order, so each
//! sample is named with the mappings and thread names of its moment.

use foldhash::HashMap;

use std::ops::Range;
use std::sync::mpsc;

use cpiflame_perf_data::{PerfData, ReadError, Record, RecordKind, Sample};
use cpiflame_unwind::address::EntryAddress;
use cpiflame_unwind::address::StackFrame;
use cpiflame_unwind::{
    CodeAddress, CodeFile, CodeSite, FrameRef, JitCodeRef, Resolver, StackEntry,
};

use crate::progress::Meter;

use cpiflame_profile::interval::PairedMoments;
use cpiflame_profile::lines::{LineId, LinedStack, SourceLine, NO_LINE};
use cpiflame_profile::timed::{Thread, Timed, TimedSample};
use cpiflame_profile::{
    wall, Count, EventColumn, Frame, FrameId, FrameKind, PairMoments, Profile, SourceLines,
};

use crate::group::{GroupBy, Roots};
use crate::offcpu::{PlacedTime, StacklessTime, UnsampledTime, WallPlan};
use crate::time::TimeRanges;
use crate::weigh::SampleWeights;

/// What goes into the root frames (`group_by`; with [`GroupBy::Comm`], `pid` and `tid` as
/// `stackcollapse-perf --pid/--tid` do), and which frames are kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollapseOptions {
    /// The root frames: cgroup, process, thread or comm (see [`crate::group`]).
    pub group_by: GroupBy,
    /// Comm root frame `comm-PID`.
    pub pid: bool,
    /// Comm root frame `comm-PID/TID`.
    pub tid: bool,
    /// Keep kernel frames (on by default in the CLI, as perf shows them).
    pub kernel: bool,
    /// Keep the source line of every frame ([`Collapsed::lines`]).
    pub lines: bool,
    /// Keep every sample's time, thread, stack and weights ([`Collapsed::timed`]).
    pub timed: bool,
}

/// A collapsed recording.
#[derive(Debug)]
pub struct Collapsed {
    pub profile: Profile,
    pub stats: CollapseStats,
    /// With [`CollapseOptions::lines`]: the profile's stacks split by the source line of each
    /// frame, in the same columns.
    pub lines: Option<SourceLines>,
    /// With [`CollapseOptions::timed`]: every sample's time, thread and weights, each with
    /// its stack's frames in [`Collapsed::profile`].
    pub timed: Option<TimedWalk>,
}

/// Every weighed sample of the walk, in the walk's columns (the file's attrs, then the
/// wall-time columns), each naming its stack by an index into `stacks`.
#[derive(Debug, Default)]
pub struct TimedWalk {
    /// `stack` indexes `stacks`; `column` is the walk's column.
    pub timed: Timed,
    /// The frames of each stack the samples name, in [`Collapsed::profile`].
    pub stacks: Vec<Vec<FrameId>>,
}

impl TimedWalk {
    /// Each stretch of wall time the profile has only under a thread's roots, as samples at
    /// the time it began, on the stack (roots, then `[blocked]`, `[runnable]` or `[on-CPU, not
    /// sampled]`) the profile has it on; `on_cpu` is the walk's on-CPU column.
    fn add_placed(&mut self, placed: &[(u32, PlacedTime)], names: &mut Names<'_>, on_cpu: usize) {
        let mut stack_ids: HashMap<Vec<FrameId>, u32> = HashMap::default();
        for &(root, p) in placed {
            let thread = match self
                .timed
                .threads
                .iter()
                .position(|t| t.tid == p.sample_tid)
            {
                Some(i) => i as u32,
                None => {
                    let comm = names.resolver.thread_name(p.pid, p.sample_tid).to_string();
                    self.timed.threads.push(Thread {
                        pid: p.pid,
                        tid: p.sample_tid,
                        comm,
                    });
                    (self.timed.threads.len() - 1) as u32
                }
            };
            for (offset, ns, frame) in p.parts() {
                let column = on_cpu + offset;
                let mut frames = names.roots[root as usize].clone();
                frames.push(names.profile.intern(frame));
                let stacks = &mut self.stacks;
                let stack = *stack_ids.entry(frames.clone()).or_insert_with(|| {
                    stacks.push(frames);
                    (stacks.len() - 1) as u32
                });
                self.timed.samples.push(TimedSample {
                    time: p.start,
                    thread,
                    stack,
                    column: column as u32,
                    period: ns,
                });
            }
        }
        // In time order again, as the table is read.
        self.timed.samples.sort_by_key(|s| s.time);
    }
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
    /// Samples outside `--time`'s ranges (not in `samples`).
    pub outside_time: u64,
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
///
/// Unless the resolver is single-threaded ([`Resolver::parallel`]), records are read and user
/// stacks unwound on another thread, by an unwind-only twin of `resolver` (a
/// [`cpiflame_unwind::Unwinder`]); the callback sees the same samples, in the same order,
/// with the same stacks.
pub fn walk_samples(
    file: &PerfData,
    resolver: &mut Resolver,
    mut on_sample: impl FnMut(&Sample<'_>, &[StackEntry], &Resolver),
) -> Result<CollapseStats, ReadError> {
    walk_samples_in(file, resolver, None, |sample, entries, resolver| {
        if let Some(entries) = entries {
            on_sample(sample, entries, resolver);
        }
    })
}

/// Which samples a walk hands on with their stacks (`--time`): those in the ranges, and
/// those outside whose off-CPU interval carries wall time into them ([`WallPlan::carries`]).
#[derive(Clone, Copy)]
pub struct SampleFilter<'a> {
    pub times: &'a TimeRanges,
    pub wall: Option<&'a WallPlan>,
}

impl<'a> SampleFilter<'a> {
    /// The filter of `times` (none without), with `wall`'s carried samples.
    pub fn new(times: Option<&'a TimeRanges>, wall: Option<&'a WallPlan>) -> Option<Self> {
        times.map(|times| SampleFilter { times, wall })
    }

    fn inside(&self, sample: &Sample<'_>) -> bool {
        self.times.keeps(sample.time.unwrap_or(0), sample.tid)
    }

    fn keeps(&self, sample: &Sample<'_>) -> bool {
        self.inside(sample) || self.wall.is_some_and(|w| w.carries(sample))
    }
}

/// [`walk_samples`] of the samples `filter` keeps (all with `None`): a sample left out is
/// neither unwound nor named, and is handed to `on_sample` without a stack (`None`), so
/// that what is kept across samples (a group's counter values) moves past it as perf's
/// does; [`CollapseStats::samples`] counts the samples inside the ranges, `outside_time`
/// the others.
pub fn walk_samples_in(
    file: &PerfData,
    resolver: &mut Resolver,
    filter: Option<SampleFilter<'_>>,
    mut on_sample: impl FnMut(&Sample<'_>, Option<&[StackEntry]>, &Resolver),
) -> Result<CollapseStats, ReadError> {
    let mut walk = Walk {
        stats: CollapseStats {
            samples: vec![0; file.attrs.len()],
            ..Default::default()
        },
        entries: Vec::new(),
        meter: Meter::new(file.path().to_path_buf(), file.data_range()),
        filter,
    };
    if resolver.parallel() {
        return walk_on_two_threads(file, resolver, walk, on_sample);
    }
    let mut records = file.records_on_one_thread();
    for record in records.by_ref() {
        walk.record(&record?, None, resolver, &mut on_sample);
    }
    walk.stats.cut_short_at = records.cut_short_at;
    Ok(walk.finish())
}

/// The state of one walk over the records, fed in time order.
struct Walk<'f> {
    stats: CollapseStats,
    entries: Vec<StackEntry>,
    meter: Meter,
    /// `--time`: the samples walked.
    filter: Option<SampleFilter<'f>>,
}

impl Walk<'_> {
    /// Counts `record`, feeds it to `resolver`, and hands a sample's stack to `on_sample`.
    /// `unwound`: the sample's user stack as a twin unwound it (see [`walk_on_two_threads`]);
    /// `None` to unwind it here.
    fn record(
        &mut self,
        record: &Record<'_>,
        unwound: Option<Option<&[StackFrame]>>,
        resolver: &mut Resolver,
        on_sample: &mut impl FnMut(&Sample<'_>, Option<&[StackEntry]>, &Resolver),
    ) {
        let stats = &mut self.stats;
        self.meter
            .record(record.offset, matches!(record.kind, RecordKind::Sample(_)));
        let sample = match &record.kind {
            RecordKind::Sample(s) => s,
            RecordKind::Lost { lost, .. } => {
                stats.lost += lost;
                return;
            }
            RecordKind::LostSamples { lost } => {
                stats.lost_samples += lost;
                return;
            }
            RecordKind::Throttle {
                throttled: true, ..
            } => {
                stats.throttled += 1;
                return;
            }
            other => {
                resolver.observe(other);
                return;
            }
        };
        match self.filter {
            Some(f) if !f.inside(sample) => {
                stats.outside_time += 1;
                if !f.keeps(sample) {
                    on_sample(sample, None, resolver);
                    return;
                }
            }
            _ => stats.samples[sample.attr] += 1,
        }
        match unwound {
            None => resolver.resolve(sample, &mut self.entries),
            Some(user) => resolver.resolve_unwound(sample, user, &mut self.entries),
        }
        on_sample(sample, Some(&self.entries), resolver);
    }

    fn finish(self) -> CollapseStats {
        self.meter.finish(self.stats.samples.iter().sum());
        self.stats
    }
}

/// Records (with their samples' user stacks unwound) handed from the reading thread to the
/// naming one.
#[derive(Default)]
struct Batch<'a> {
    records: Vec<(Record<'a>, Option<Range<usize>>)>,
    /// The user frames of the batch's samples, innermost first.
    frames: Vec<StackFrame>,
    error: Option<ReadError>,
    /// No record of this batch or of those after it lies below this offset: once the batch
    /// is taken up, the pages below can go.
    floor: u64,
}

/// Records per batch: enough that handing over costs little, few enough that the naming
/// thread starts early.
const BATCH: usize = 64;

/// [`walk_samples`] on two threads: one reads the records and unwinds user stacks with a
/// twin of `resolver` that sees the same records; this one names the stacks and calls
/// `on_sample`, in the same order and with the same stacks as on one thread.
fn walk_on_two_threads(
    file: &PerfData,
    resolver: &mut Resolver,
    mut walk: Walk<'_>,
    mut on_sample: impl FnMut(&Sample<'_>, Option<&[StackEntry]>, &Resolver),
) -> Result<CollapseStats, ReadError> {
    let recipe = resolver.twin_recipe();
    let filter = walk.filter;
    std::thread::scope(|scope| {
        let (full, filled) = mpsc::sync_channel::<Batch<'_>>(1);
        let (empty, emptied) = mpsc::channel::<Batch<'_>>();
        let reader = scope.spawn(move || {
            let mut twin = recipe.make();
            let mut records = file.records();
            // Pages are released behind the naming thread, which reads the records last.
            records.keep_pages();
            let mut batch = Batch::default();
            while let Some(record) = records.next() {
                let record = match record {
                    Ok(r) => r,
                    Err(e) => {
                        batch.error = Some(e);
                        break;
                    }
                };
                let user = match &record.kind {
                    // Samples outside `--time` are not unwound.
                    RecordKind::Sample(s) if filter.is_some_and(|f| !f.keeps(s)) => None,
                    RecordKind::Sample(s) => {
                        let start = batch.frames.len();
                        twin.unwind_user_stack(s, &mut batch.frames)
                            .then_some(start..batch.frames.len())
                    }
                    other => {
                        twin.observe(other);
                        None
                    }
                };
                batch.records.push((record, user));
                if batch.records.len() >= BATCH {
                    batch.floor = batch
                        .records
                        .iter()
                        .map(|(r, _)| r.offset)
                        .fold(records.unread_from(), u64::min);
                    let sent =
                        std::mem::replace(&mut batch, emptied.try_recv().unwrap_or_default());
                    if full.send(sent).is_err() {
                        // The naming thread stopped on an error of its own.
                        break;
                    }
                    batch.records.clear();
                    batch.frames.clear();
                }
            }
            batch.floor = 0;
            let _ = full.send(batch);
            (twin.stats.clone(), records.cut_short_at)
        });
        let mut error = None;
        let mut released_to = 0;
        for batch in filled {
            // In steps of 1 MiB or more: each release flushes the TLB of every core.
            if batch.floor >= released_to + (1 << 20) {
                file.release_pages(released_to..batch.floor);
                released_to = batch.floor;
            }
            for (record, user) in &batch.records {
                let unwound = match (&record.kind, user) {
                    (RecordKind::Sample(_), Some(range)) => {
                        Some(Some(&batch.frames[range.clone()]))
                    }
                    (RecordKind::Sample(_), None) => Some(None),
                    _ => None,
                };
                walk.record(record, unwound, resolver, &mut on_sample);
            }
            if let Some(e) = batch.error {
                error = Some(e);
                break;
            }
            let _ = empty.send(Batch {
                records: batch.records,
                frames: batch.frames,
                error: None,
                floor: 0,
            });
        }
        let (twin_stats, cut_short_at) = match reader.join() {
            Ok(done) => done,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        if let Some(e) = error {
            return Err(e);
        }
        resolver.add_unwind_stats(&twin_stats);
        walk.stats.cut_short_at = cut_short_at;
        Ok(walk.finish())
    })
}

/// Reads every record of `file`, resolving samples with `resolver`, into a profile with one
/// column per event of the file (in the file's order).
///
/// Each sample adds to its stack a [`Count`] of one sample and its weight: its own period
/// (PERF_SAMPLE_PERIOD, else the attr's fixed period, else 1 in frequency mode), or, for a
/// sample carrying counter values (PERF_SAMPLE_READ, e.g. a `{cycles,instructions}:S`
/// leader), one count per counter value in that counter's event column, weighted by the
/// value's increase since the previous value of the same counter (per thread when the
/// event is inherited), as perf computes it; a member's `samples` are the leader samples in
/// which it moved.
pub fn collapse(
    file: &PerfData,
    resolver: &mut Resolver,
    options: CollapseOptions,
) -> Result<(Profile, CollapseStats), ReadError> {
    collapse_with_wall(file, resolver, options, None)
}

/// [`collapse`], with the three wall-time columns of `wall` after the events' columns
/// (`cpiflame_profile::wall`) when there is a plan.
pub fn collapse_with_wall(
    file: &PerfData,
    resolver: &mut Resolver,
    options: CollapseOptions,
    wall: Option<&WallPlan>,
) -> Result<(Profile, CollapseStats), ReadError> {
    collapse_all(file, resolver, options, wall, None).map(|c| (c.profile, c.stats))
}

/// [`collapse_with_wall`], with the source lines when `options.lines` asks for them.
pub fn collapse_all(
    file: &PerfData,
    resolver: &mut Resolver,
    options: CollapseOptions,
    wall: Option<&WallPlan>,
    times: Option<&TimeRanges>,
) -> Result<Collapsed, ReadError> {
    collapse_visiting(file, resolver, options, wall, times, None)
}

/// A consumer of the collapse's walk beside the profile (`annotate`'s instruction sites):
/// each sample the profile counts, with its stack and the weights the collapse gave it.
pub trait SampleVisitor {
    /// `weights`: (column, weight) in the walk's columns (the file's attrs, then the
    /// wall-time columns), as the profile adds them.
    fn visit(
        &mut self,
        sample: &Sample<'_>,
        entries: &[StackEntry],
        resolver: &Resolver,
        weights: &[(usize, u64)],
    );
}

/// [`collapse_all`], handing every counted sample to `visit` too: one read of the file for
/// the profile and what `visit` keeps.
pub fn collapse_visiting(
    file: &PerfData,
    resolver: &mut Resolver,
    options: CollapseOptions,
    wall: Option<&WallPlan>,
    times: Option<&TimeRanges>,
    mut visit: Option<&mut dyn SampleVisitor>,
) -> Result<Collapsed, ReadError> {
    let mut columns = event_names(file);
    if wall.is_some() {
        columns.extend([wall::ON_CPU, wall::RUNNABLE, wall::BLOCKED].map(String::from));
    }
    let n_events = columns.len();
    // Stacks are first counted by resolver frame ids, which are cheap to hash and final
    // only once every name is (kernel names arrive late); they become named profile frames
    // at the end, where stacks that turn out to have the same names merge.
    let mut roots = Roots::new(options.group_by, options.pid, options.tid);
    let mut raw: HashMap<Vec<u32>, RawStack> = HashMap::default();
    let mut key: Vec<u32> = Vec::new();
    let mut sample_weights = SampleWeights::new(file).with_wall(wall.cloned());
    let mut weights: Vec<(usize, u64)> = Vec::new();

    // With `options.timed`: each raw stack's index among the timed stacks, the threads.
    let mut timed = options.timed.then(TimedWalk::default);
    let mut thread_ids: HashMap<(i32, i32), u32> = HashMap::default();

    let mut caller_sites = CallerSites::default();
    // Each thread's root as its last sample had it: the root of its time without a stack.
    let mut thread_roots: HashMap<i32, u32> = HashMap::default();
    let filter = SampleFilter::new(times, wall);
    let stats = walk_samples_in(file, resolver, filter, |sample, entries, resolver| {
        let Some(entries) = entries else {
            sample_weights.pass(file, sample);
            return;
        };
        let pid = sample.pid.unwrap_or(-1);
        let root = roots.of(sample, resolver);
        if wall.is_some() {
            thread_roots.insert(sample.tid.unwrap_or(-1), root);
        }
        key.clear();
        key.push(root);
        key.extend(entries.iter().map(|e| e.frame));
        sample_weights.weights(file, sample, &mut weights);
        if !raw.contains_key(key.as_slice()) {
            let id = raw.len() as u32;
            raw.insert(
                key.clone(),
                RawStack {
                    id,
                    counts: vec![Count::default(); n_events],
                    sites: None,
                    paired: Vec::new(),
                },
            );
        }
        let Some(stack) = raw.get_mut(key.as_slice()) else {
            return;
        };
        for &(event, period) in &weights {
            stack.counts[event].add(Count { samples: 1, period });
        }
        add_pairs(&mut stack.paired, sample_weights.group());
        if let Some(visit) = visit.as_deref_mut() {
            visit.visit(sample, entries, resolver, &weights);
        }
        if let Some(timed) = &mut timed {
            let index = stack.id;
            let (pid, tid) = (pid, sample.tid.unwrap_or(-1));
            let thread = *thread_ids.entry((pid, tid)).or_insert_with(|| {
                timed.timed.threads.push(Thread {
                    pid,
                    tid,
                    comm: resolver.thread_name(pid, tid).to_string(),
                });
                (timed.timed.threads.len() - 1) as u32
            });
            let time = sample.time.unwrap_or(0);
            timed
                .timed
                .samples
                .extend(weights.iter().map(|&(column, period)| TimedSample {
                    time,
                    thread,
                    stack: index,
                    column: column as u32,
                    period,
                }));
        }
        if options.lines {
            stack.sites.get_or_insert_with(Default::default).add(
                &mut caller_sites,
                pid,
                entries,
                &weights,
                n_events,
            );
        }
    })?;
    // Off-CPU time whose switch-out has no stack goes directly under its thread's roots.
    let stackless: Vec<(u32, StacklessTime)> = wall
        .map(|w| w.without_stack())
        .unwrap_or_default()
        .iter()
        .map(|s| {
            let root = match thread_roots.get(&s.sample_tid) {
                Some(&root) => root,
                None => roots.of_thread(s.pid, s.tid, None, resolver),
            };
            (root, *s)
        })
        .collect();
    // So does on-CPU time of threads without an on-CPU sample.
    let unsampled: Vec<(u32, UnsampledTime)> = wall
        .map(|w| w.unsampled())
        .unwrap_or_default()
        .iter()
        .map(|u| {
            let root = match thread_roots.get(&u.sample_tid) {
                Some(&root) => root,
                None => roots.of_thread(u.pid, u.tid, None, resolver),
            };
            (root, *u)
        })
        .collect();
    // With the timed walk, the stretches of both at their times (a timeline shows them).
    let placed: Vec<(u32, PlacedTime)> = match (&timed, wall) {
        (Some(_), Some(w)) => w
            .placed()
            .iter()
            .map(|p| {
                let root = match thread_roots.get(&p.sample_tid) {
                    Some(&root) => root,
                    None => roots.of_thread(p.pid, p.tid, None, resolver),
                };
                (root, *p)
            })
            .collect(),
        _ => Vec::new(),
    };
    resolver.finish_names();

    let mut names = Names::new(
        columns
            .into_iter()
            .map(|name| EventColumn { name })
            .collect(),
        roots.into_chains(),
        resolver,
        options.kernel,
    );
    let mut lines = options.lines.then(LineNames::default);
    let mut stack = Vec::new();
    if let Some(timed) = &mut timed {
        timed.stacks = vec![Vec::new(); raw.len()];
    }
    for (key, raw) in raw {
        names.stack_of(&key, &mut stack);
        if let Some(timed) = &mut timed {
            timed.stacks[raw.id as usize].clone_from(&stack);
        }
        if let (Some(lines), Some(sites)) = (&mut lines, &raw.sites) {
            lines.add(&stack, &key, sites, &caller_sites, &mut names);
        }
        names.add_counts(&stack, raw.counts);
        for pair in raw.paired {
            names.profile.add_paired(&stack, pair);
        }
    }
    if let Some(wall) = wall {
        for (root, s) in stackless {
            names.add_without_stack(root, wall.first_column, &s);
        }
        for (root, u) in unsampled {
            let mut stack = names.roots[root as usize].clone();
            stack.push(names.profile.intern(wall::unsampled_frame()));
            let count = Count {
                samples: u.intervals,
                period: u.on_cpu_ns,
            };
            names.profile.add(&stack, wall.first_column, count);
        }
        if let Some(timed) = &mut timed {
            timed.add_placed(&placed, &mut names, wall.first_column);
        }
    }
    let lines = lines.map(LineNames::finish);
    Ok(Collapsed {
        profile: names.profile,
        stats,
        lines,
        timed,
    })
}

/// One stack (by resolver frames) while the records are walked: its counts and, when lines
/// are kept, where its samples were.
struct RawStack {
    /// Its order of first sample: the index [`TimedWalk`] names it by.
    id: u32,
    counts: Vec<Count>,
    sites: Option<StackSites>,
    /// Leader-sampled groups' per-sample deltas, by pair of columns.
    paired: Vec<PairMoments>,
}

/// Adds one sample's group deltas (see [`SampleWeights::group`]) to `paired`, a pair of
/// columns at a time.
fn add_pairs(paired: &mut Vec<PairMoments>, group: &[(usize, u64)]) {
    for (i, &(a, da)) in group.iter().enumerate() {
        for &(b, db) in &group[i + 1..] {
            if a == b {
                continue;
            }
            let mut one = PairedMoments::default();
            one.push(da, db);
            match paired.iter_mut().find(|p| (p.a, p.b) == (a, b)) {
                Some(p) => p.moments.add(one),
                None => paired.push(PairMoments { a, b, moments: one }),
            }
        }
    }
}

/// Where the samples of one stack were: the code of each frame (as the namer found it). A
/// stack's callers are nearly always at one list of return addresses and its leaf at many
/// addresses, so the callers are kept once per distinct list and the leaves by address under
/// it: a sample costs a comparison and a lookup, not a hash of its whole stack.
#[derive(Default)]
struct StackSites {
    callers: Vec<Callers>,
}

/// Every distinct (address, code) of a caller frame, kept once: stacks of deep programs
/// share most of their callers, and a frame held as an index costs 4 bytes instead of the
/// pair's 40 (rustc's deep stacks: 7.8 MiB of 44 MiB peak RSS before, `docs/benchmarks.md`).
/// Interning the exact pair changes nothing a stack remembers.
#[derive(Default)]
struct CallerSites {
    list: Vec<(EntryAddress, Option<CodeSite>)>,
    index: HashMap<(EntryAddress, Option<CodeSite>), u32>,
}

impl CallerSites {
    fn intern(&mut self, site: (EntryAddress, Option<CodeSite>)) -> u32 {
        *self.index.entry(site).or_insert_with(|| {
            self.list.push(site);
            (self.list.len() - 1) as u32
        })
    }

    fn get(&self, i: u32) -> (EntryAddress, Option<CodeSite>) {
        self.list[i as usize]
    }
}

/// One process's caller frames of a stack (the frames after the leaf's inline chain).
struct Callers {
    pid: i32,
    /// Each caller frame's address and code ([`CallerSites`]' index), leaf side first.
    sites: Box<[u32]>,
    leaves: Vec<LeafSite>,
    /// The leaves by address once there are more than [`LEAVES_SEARCHED`]: most caller
    /// lists have a few leaves, and a map for each cost more than the lists themselves.
    leaf_index: Option<HashMap<u64, usize>>,
}

/// Up to this many leaves of a caller list are searched in order.
const LEAVES_SEARCHED: usize = 8;

struct LeafSite {
    /// The leaf's address in the process (what the leaves are told apart by).
    address: u64,
    /// The leaf's code; the frames of its inline chain are at depths 0, 1, ...
    code: Option<CodeAddress>,
    counts: Vec<Count>,
}

/// Which images (and JIT functions) have source lines, asked once each.
#[derive(Default)]
struct HasLines {
    images: Vec<Option<bool>>,
    jit: HashMap<JitCodeRef, bool>,
}

impl HasLines {
    fn file(&mut self, file: CodeFile, resolver: &Resolver) -> bool {
        match file {
            CodeFile::Image(image) => {
                if image >= self.images.len() {
                    self.images.resize(image + 1, None);
                }
                *self.images[image].get_or_insert_with(|| resolver.has_source_lines(file))
            }
            CodeFile::Jit(jit) => *self
                .jit
                .entry(jit)
                .or_insert_with(|| resolver.has_source_lines(file)),
        }
    }
}

/// How many entries from the leaf are its inline chain at one address (at least 1).
fn leaf_chain(entries: &[StackEntry]) -> usize {
    let mut n = 1;
    while n < entries.len()
        && entries[n].address == entries[0].address
        && entries[n]
            .code
            .is_some_and(|c| usize::from(c.inline_depth) == n)
    {
        n += 1;
    }
    n
}

impl StackSites {
    fn add(
        &mut self,
        table: &mut CallerSites,
        pid: i32,
        entries: &[StackEntry],
        weights: &[(usize, u64)],
        n_events: usize,
    ) {
        // A sample without frames still counts (on the root alone).
        let chain = if entries.is_empty() {
            0
        } else {
            leaf_chain(entries)
        };
        let callers = &entries[chain..];
        let same = |c: &Callers| {
            c.pid == pid
                && c.sites.len() == callers.len()
                && c.sites
                    .iter()
                    .zip(callers)
                    .all(|(&i, e)| table.get(i).0 == e.address)
        };
        let at = match self.callers.iter().position(same) {
            Some(i) => i,
            None => {
                self.callers.push(Callers {
                    pid,
                    sites: callers
                        .iter()
                        .map(|e| table.intern((e.address, e.code)))
                        .collect(),
                    leaves: Vec::new(),
                    leaf_index: None,
                });
                self.callers.len() - 1
            }
        };
        let c = &mut self.callers[at];
        let leaf = entries.first().map_or(0, |e| e.address.lookup().0);
        let found = match &c.leaf_index {
            Some(index) => index.get(&leaf).copied(),
            None => c.leaves.iter().position(|l| l.address == leaf),
        };
        let i = match found {
            Some(i) => i,
            None => {
                c.leaves.push(LeafSite {
                    address: leaf,
                    code: entries.first().and_then(|e| e.code).map(|c| c.code),
                    counts: vec![Count::default(); n_events],
                });
                let i = c.leaves.len() - 1;
                match &mut c.leaf_index {
                    Some(index) => {
                        index.insert(leaf, i);
                    }
                    None if c.leaves.len() > LEAVES_SEARCHED => {
                        c.leaf_index = Some(
                            c.leaves
                                .iter()
                                .enumerate()
                                .map(|(i, l)| (l.address, i))
                                .collect(),
                        );
                    }
                    None => {}
                }
                i
            }
        };
        let counts = &mut c.leaves[i].counts;
        for &(event, period) in weights {
            counts[event].add(Count { samples: 1, period });
        }
    }
}

/// The stacks' sites named: profile frames and source lines, the lines read from the debug
/// information once per code address; leaves whose lines are the same merge.
#[derive(Default)]
struct LineNames {
    out: SourceLines,
    ids: HashMap<SourceLine, LineId>,
    at_code: HashMap<CodeAddress, Vec<LineId>>,
    has_lines: HasLines,
}

impl LineNames {
    /// Adds the lined stacks of `sites`, whose stack has resolver frames `key` (root, then
    /// leaf first) and profile frames `stack` (root first). A stack no frame of which has a
    /// line adds nothing: it has nothing to show.
    fn add(
        &mut self,
        stack: &[FrameId],
        key: &[u32],
        sites: &StackSites,
        table: &CallerSites,
        names: &mut Names<'_>,
    ) {
        let frames = &key[1..];
        // Which resolver frames are in the profile's stack (kernel frames may be left out).
        let kept: Vec<bool> = frames.iter().map(|&f| names.frame(f).is_some()).collect();
        let first = self.out.stacks.len();
        let mut any = false;
        let mut merged: HashMap<Vec<LineId>, usize> = HashMap::default();
        for c in &sites.callers {
            let chain = frames.len() - c.sites.len();
            let callers: Vec<LineId> = c
                .sites
                .iter()
                .map(|&i| {
                    table
                        .get(i)
                        .1
                        .map_or(NO_LINE, |s| self.line(names, s.code, s.inline_depth))
                })
                .collect();
            any |= callers.iter().any(|&l| l != NO_LINE);
            // Leaves whose inline chains are on the same lines merge.
            merged.clear();
            for leaf in &c.leaves {
                let leaf_lines: Vec<LineId> = (0..chain)
                    .map(|depth| {
                        leaf.code
                            .map_or(NO_LINE, |code| self.line(names, code, depth as u16))
                    })
                    .collect();
                any |= leaf_lines.iter().any(|&l| l != NO_LINE);
                if let Some(&i) = merged.get(&leaf_lines) {
                    for (a, &b) in self.out.stacks[i].counts.iter_mut().zip(&leaf.counts) {
                        a.add(b);
                    }
                    continue;
                }
                // Root first, the root frames (cgroup, process, thread) without a line.
                let mut lines = vec![NO_LINE; names.roots[key[0] as usize].len()];
                for i in (0..frames.len()).rev() {
                    if kept[i] {
                        lines.push(if i < chain {
                            leaf_lines[i]
                        } else {
                            callers[i - chain]
                        });
                    }
                }
                merged.insert(leaf_lines, self.out.stacks.len());
                self.out.stacks.push(LinedStack {
                    frames: stack.to_vec(),
                    lines,
                    counts: leaf.counts.clone(),
                });
            }
        }
        if !any {
            self.out.stacks.truncate(first);
        }
    }

    /// The line of the frame `depth` inlined frames out at `code`.
    fn line(&mut self, names: &Names<'_>, code: CodeAddress, depth: u16) -> LineId {
        // Most frames of a large program are in files without DWARF: known without a lookup.
        if !self.has_lines.file(code.file, names.resolver) {
            return NO_LINE;
        }
        let ids = &mut self.ids;
        let chain = self.at_code.entry(code).or_insert_with(|| {
            names
                .resolver
                .source_line_chain(code)
                .into_iter()
                .map(|l| match (l.file, l.line) {
                    (Some(file), Some(line)) => {
                        let next = ids.len() as LineId;
                        *ids.entry(SourceLine { file, line }).or_insert(next)
                    }
                    _ => NO_LINE,
                })
                .collect()
        });
        chain.get(depth as usize).copied().unwrap_or(NO_LINE)
    }

    fn finish(mut self) -> SourceLines {
        let mut lines = vec![
            SourceLine {
                file: String::new(),
                line: 0,
            };
            self.ids.len()
        ];
        for (line, id) in self.ids {
            lines[id as usize] = line;
        }
        self.out.lines = lines;
        self.out
    }
}

/// The profile of stacks counted by resolver frame ids, made once every name is final: `raw`
/// maps (an index into `roots`, then frames leaf first) to one count per column of
/// `columns`. Stacks whose names turn out equal merge; kernel frames are left out unless
/// `kernel`.
pub(crate) fn named_profile(
    columns: Vec<EventColumn>,
    roots: Vec<Vec<Frame>>,
    raw: impl IntoIterator<Item = (Vec<u32>, Vec<Count>)>,
    resolver: &Resolver,
    kernel: bool,
) -> Profile {
    let mut names = Names::new(columns, roots, resolver, kernel);
    names.add_stacks(raw);
    names.profile
}

/// Resolver frames made profile frames, once each.
pub(crate) struct Names<'a> {
    pub(crate) profile: Profile,
    /// Each root id's root frames, root first.
    roots: Vec<Vec<FrameId>>,
    map: Vec<Option<FrameId>>,
    resolver: &'a Resolver,
    kernel: bool,
}

impl<'a> Names<'a> {
    pub(crate) fn new(
        columns: Vec<EventColumn>,
        roots: Vec<Vec<Frame>>,
        resolver: &'a Resolver,
        kernel: bool,
    ) -> Names<'a> {
        let mut profile = Profile::new(columns);
        let roots = roots
            .into_iter()
            .map(|chain| chain.into_iter().map(|f| profile.intern(f)).collect())
            .collect();
        Names {
            profile,
            roots,
            map: Vec::new(),
            resolver,
            kernel,
        }
    }

    /// The profile frame of resolver frame `frame`; `None` for a kernel frame left out.
    fn frame(&mut self, frame: FrameRef) -> Option<FrameId> {
        let id = profile_frame(&mut self.profile, &mut self.map, self.resolver, frame);
        (self.kernel || self.profile.frame(id).kind != FrameKind::Kernel).then_some(id)
    }

    fn add_stacks(&mut self, raw: impl IntoIterator<Item = (Vec<u32>, Vec<Count>)>) {
        let mut stack: Vec<FrameId> = Vec::new();
        for (key, counts) in raw {
            self.stack_of(&key, &mut stack);
            self.add_counts(&stack, counts);
        }
    }

    /// The profile stack (root first) of `key` (a root, then resolver frames leaf first).
    pub(crate) fn stack_of(&mut self, key: &[u32], stack: &mut Vec<FrameId>) {
        stack.clear();
        stack.extend_from_slice(&self.roots[key[0] as usize]);
        for &frame in key[1..].iter().rev() {
            if let Some(id) = self.frame(frame) {
                stack.push(id);
            }
        }
    }

    /// Adds `s`, a thread's off-CPU time without a stack, under root `root` as the frames
    /// `[runnable]` and `[blocked]` (`cpiflame_profile::wall::no_stack_frame`), in the wall
    /// columns from `on_cpu` (on-CPU, runnable, blocked).
    fn add_without_stack(&mut self, root: u32, on_cpu: usize, s: &StacklessTime) {
        for (runnable, column, period, samples) in [
            (true, on_cpu + 1, s.runnable_ns, s.runnable_intervals),
            (false, on_cpu + 2, s.blocked_ns, s.blocked_intervals),
        ] {
            if period == 0 {
                continue;
            }
            let mut stack = self.roots[root as usize].clone();
            stack.push(self.profile.intern(wall::no_stack_frame(runnable)));
            let count = Count {
                samples: samples.max(1),
                period,
            };
            self.profile.add(&stack, column, count);
        }
    }

    fn add_counts(&mut self, stack: &[FrameId], counts: Vec<Count>) {
        for (event, count) in counts.into_iter().enumerate() {
            if count.samples > 0 {
                self.profile.add(stack, event, count);
            }
        }
    }
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
        cpiflame_unwind::FrameKind::Jit => FrameKind::Jit,
    };
    let id = profile.intern(Frame {
        name: info.name.to_string(),
        module: info.module.to_string(),
        kind,
    });
    map[i] = Some(id);
    id
}
