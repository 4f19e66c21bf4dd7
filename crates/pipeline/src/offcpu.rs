//! Wall-clock time of each thread: on a CPU, runnable (waiting for one) or blocked, from the
//! context-switch data of a recording, and where each nanosecond goes in the profile (the
//! three columns of `cpiflame_profile::wall`).
//!
//! What a recording may carry, and what each gives:
//!
//! - **Switch records** (PERF_RECORD_SWITCH / SWITCH_CPU_WIDE, `attr.context_switch`:
//!   `cpiflame record --off-cpu`, `perf record --switch-events`): when each thread left and
//!   re-entered a CPU, and on leaving whether it was still runnable (the PREEMPT flag: the
//!   kernel sets it when the task is still on its run queue) or blocked.
//! - **Switch-out stacks**: a `context-switches` software event sampled at every switch
//!   (its sample is taken as the task leaves), or `sched:sched_switch` tracepoint samples
//!   (whose `prev_state` also says runnable or blocked, and whose `next_pid` says who came
//!   on, in a per-CPU recording). Off-CPU time sits on the stack the thread left with.
//! - **Wakeups** (`sched:sched_waking` or `sched:sched_wakeup` samples, field `pid`): when a
//!   blocked thread was made runnable. Without them, the time a woken thread waited for a
//!   CPU counts as blocked.
//! - perf's own `--off-cpu` output: `offcpu-time` samples whose period is nanoseconds spent
//!   blocked on the sample's stack (no intervals, no runnable time).
//!
//! The walk ([`WallPlan::of`]) reads every record once, in time order, and follows each
//! thread: it is on a CPU from a switch-in to the next switch-out; off from a switch-out to
//! the next switch-in (the end of the recording at the latest), blocked until woken and
//! runnable after, or runnable throughout when preempted. Before its first switch record a
//! thread is runnable from its fork (the kernel queues a new task at once), else, from the
//! recording's first event, on a CPU when that record is a switch-out and off it (blocked,
//! runnable after a wakeup) when a switch-in. A switch-in missing from the file (perf's
//! files lack some under load) is taken at the CPU's last `sched_switch`, as `perf sched
//! timehist` takes it. The idle task (tid 0) and an exiting task's -1 are not followed.
//! A thread's on-CPU time is then spread over its on-CPU samples (of the width event:
//! cycles, or cpu-clock without a PMU) in proportion to their weight, so that the sampled
//! profile decides only how a thread's measured time divides between its stacks. Threads
//! with samples but no switch data get their on-CPU time from the samples themselves
//! (cpu-clock and task-clock periods are nanoseconds; an event sampled at a frequency stands
//! for `1 / frequency` seconds per sample), and none when neither holds.

mod text;

use foldhash::HashMap;

use cpiflame_events::abi::{attr_type, software};
use cpiflame_perf_data::{PerfData, ReadError, RecordKind, Sample, TraceEvent};

use crate::time::TimeRanges;
use crate::weigh::counters::CounterWeights;

/// What a record's event contributes to the wall-time walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Samples taken as a thread leaves a CPU: `context-switches`.
    SwitchStack,
    /// `sched:sched_switch` samples: a switch-out stack with the state it left in.
    SchedSwitch,
    /// `sched:sched_waking` / `sched:sched_wakeup`: the woken thread in field `pid`.
    Wakeup,
    /// perf's `offcpu-time`: period = nanoseconds blocked on the sample's stack.
    OffCpuTime,
    /// Samples of the event whose weight spreads on-CPU time.
    OnCpu,
    /// Nothing for the walk.
    Other,
}

/// Where a recording's wall-clock time goes, sample by sample: made once per recording by
/// [`WallPlan::of`], then consulted by [`SampleWeights`](crate::SampleWeights) as the samples are collapsed.
#[derive(Clone, Debug)]
pub struct WallPlan {
    /// Profile column of on-CPU ns; runnable is the next, blocked the one after.
    pub(crate) first_column: usize,
    sources: Vec<Source>,
    /// Per thread: its on-CPU nanoseconds and the summed weight of its on-CPU samples, over
    /// which the nanoseconds are spread.
    on_cpu: HashMap<i32, (u64, u64)>,
    /// (runnable, blocked) ns of the off-CPU interval that begins with the switch-out
    /// sample of (tid, time): the tid the sample carries, which for a `sched_switch` sample
    /// need not be the `prev_pid` whose interval it is.
    off_cpu: HashMap<(i32, u64), (u64, u64)>,
    /// `--time`: every interval clipped to these ranges.
    times: Option<TimeRanges>,
    /// Per thread, tid order: off-CPU time whose switch-out has no stack.
    without_stack: Vec<StacklessTime>,
    /// Per thread, tid order: on-CPU time of threads without an on-CPU sample to spread it
    /// over.
    unsampled: Vec<UnsampledTime>,
    /// The stretches of time `without_stack` and `unsampled` sum, when asked for.
    placed: Vec<PlacedTime>,
    pub stats: WallStats,
}

/// One thread's on-CPU nanoseconds (from its switch data) with no on-CPU sample of the width
/// event to spread them over: the collapse puts them directly under the thread's root frames
/// as the frame [`cpiflame_profile::wall::UNSAMPLED_ON_CPU`], so that the thread is as wide
/// as its wall time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsampledTime {
    pub tid: i32,
    /// As [`StacklessTime::sample_tid`].
    pub sample_tid: i32,
    /// The thread's process, when a record said (else the tid).
    pub pid: i32,
    pub on_cpu_ns: u64,
    /// The on-CPU intervals (switch-in to switch-out) that added to it.
    pub intervals: u64,
}

/// One thread's off-CPU nanoseconds whose switch-out has no stack (switch records without
/// `context-switches` samples, CPU-wide switch records, a switch-out sample lost): the
/// collapse puts them directly under the thread's root frames as the frames
/// [`cpiflame_profile::wall::NO_STACK_RUNNABLE`] and [`cpiflame_profile::wall::NO_STACK_BLOCKED`],
/// so that every thread's wall time is in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StacklessTime {
    pub tid: i32,
    /// The tid the thread's samples carry (its root's): the tid, but for a thread seen only
    /// as `sched_switch`'s `prev_pid` in samples that show another (a pid namespace's).
    pub sample_tid: i32,
    /// The thread's process, when a record said (else the tid).
    pub pid: i32,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    /// The off-CPU intervals (or their runnable and blocked parts) that added to each.
    pub runnable_intervals: u64,
    pub blocked_intervals: u64,
}

/// What a plan's weights handed out so far, along the samples in the file's order: each
/// thread's on-CPU weight (the k-th sample gets `ns * W_k / W - ns * W_(k-1) / W`, floors in
/// integers, so a thread's samples sum to its on-CPU time exactly), and the off-CPU
/// intervals already given to a switch-out sample.
#[derive(Default)]
pub(crate) struct Spread {
    on_cpu: HashMap<i32, u64>,
    off_cpu_taken: foldhash::HashSet<(i32, u64)>,
}

/// One stretch of a thread's wall time that the profile has only directly under the thread's
/// root frames, with when it began: an off-CPU interval whose switch-out has no stack (its
/// part of [`StacklessTime`]), or an on-CPU interval of a thread without an on-CPU sample
/// (its part of [`UnsampledTime`]). Kept only when asked for ([`WallPlan::of_placing`]):
/// a viewer that shows time places them by it. A thread's stretches sum to its
/// [`StacklessTime`] and [`UnsampledTime`] exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacedTime {
    pub tid: i32,
    /// As [`StacklessTime::sample_tid`].
    pub sample_tid: i32,
    /// As [`StacklessTime::pid`].
    pub pid: i32,
    /// When it began: the switch-out of an off-CPU interval (blocked time comes first, then
    /// runnable time), the switch-in of an on-CPU one; with `--time`, the first nanosecond of
    /// it inside the ranges. For a thread without switch data, whose on-CPU time its samples
    /// gave, its first sample's time.
    pub start: u64,
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
}

impl PlacedTime {
    /// Its nonzero parts: (offset from the on-CPU column, nanoseconds, the frame the profile
    /// has them on under the thread's roots).
    pub fn parts(&self) -> impl Iterator<Item = (usize, u64, cpiflame_profile::Frame)> {
        [
            (0, self.on_cpu_ns, cpiflame_profile::wall::unsampled_frame()),
            (
                1,
                self.runnable_ns,
                cpiflame_profile::wall::no_stack_frame(true),
            ),
            (
                2,
                self.blocked_ns,
                cpiflame_profile::wall::no_stack_frame(false),
            ),
        ]
        .into_iter()
        .filter(|&(_, ns, _)| ns > 0)
    }
}

/// Totals of the walk, for notes and warnings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WallStats {
    pub threads: usize,
    /// Switch-outs seen.
    pub switches: u64,
    pub on_cpu_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    /// Off-CPU nanoseconds with no switch-out stack to put them on (no switch-out samples,
    /// or one lost): in the profile under their threads ([`StacklessTime`]), and counted in
    /// `runnable_ns` and `blocked_ns` too.
    pub off_cpu_without_stack_ns: u64,
    /// On-CPU nanoseconds of threads that have no on-CPU sample: in the profile under their
    /// threads ([`UnsampledTime`]), and counted in `on_cpu_ns` too.
    pub on_cpu_without_samples_ns: u64,
    /// Off-CPU nanoseconds before a thread's first switch record (from its fork or the
    /// recording's first event): a new thread's wait for its first run (runnable), a thread
    /// seen first coming onto a CPU (blocked, runnable after a wakeup); counted in
    /// `runnable_ns` and `blocked_ns` too.
    pub before_first_switch_ns: u64,
    /// The recording has switch records (switch-in times are exact).
    pub switch_records: bool,
    /// The recording has wakeup samples (blocked and runnable are told apart after a wakeup).
    pub wakeups: bool,
    /// Switch-in times were taken from the thread's next sample (no switch records and no
    /// per-CPU `sched_switch` naming the thread coming on) for more than a tenth of the
    /// switches.
    pub switch_in_estimated: bool,
    /// Switch-outs of threads whose switch onto that CPU is not in the file (see
    /// `Walk::sched_switch`).
    pub switch_ins_missing: u64,
}

impl WallStats {
    /// The wall time the plan gives its threads (in the `--time` ranges, when given).
    pub fn wall_ns(&self) -> u64 {
        self.on_cpu_ns
            .saturating_add(self.runnable_ns)
            .saturating_add(self.blocked_ns)
    }
}

/// One thread as the walk follows it.
#[derive(Default)]
struct Thread {
    /// Its process, once a record said.
    pid: Option<i32>,
    /// The tid its `sched_switch` samples show, when not its own.
    sample_tid: Option<i32>,
    /// (runnable, blocked) ns off the CPU with no switch-out stack, and the intervals that
    /// added to each.
    without_stack: (u64, u64),
    without_stack_intervals: (u64, u64),
    /// When the walk places time ([`Walk::place`]): each off-CPU interval without a
    /// switch-out stack as (start, runnable ns, blocked ns).
    placed_off: Vec<(u64, u64, u64)>,
    /// And each on-CPU interval as (start, ns) while the thread has no on-CPU sample (a
    /// thread with one never needs them).
    placed_on: Vec<(u64, u64)>,
    /// When the thread was first seen (fork, comm, first event).
    start: Option<u64>,
    /// Its fork's or comm's time (not perf's synthesized records at time 0): the thread's
    /// life in the recording begins there rather than at the recording's first event.
    born: Option<u64>,
    /// On-CPU intervals closed.
    on_intervals: u64,
    /// Its first on-CPU sample: without switch-in records, the first time it is known to
    /// run (between its fork and its first run it waits for a CPU, which is not on-CPU time).
    first_sample: Option<u64>,
    /// Its last on-CPU sample.
    last_sample: Option<u64>,
    /// On a CPU since.
    on_since: Option<u64>,
    off: Option<Off>,
    /// The last switch-out stack sample: (the tid it carries, its time), the key of
    /// [`WallPlan::off_cpu`].
    last_stack: Option<(i32, u64)>,
    /// Time of the last switch-in: a stack sample before it belongs to an earlier switch.
    last_in: u64,
    on_cpu_ns: u64,
    /// Summed on-CPU sample weight.
    weight: u64,
    /// On-CPU nanoseconds the samples themselves stand for (for threads without switches).
    sampled_ns: f64,
    switched: bool,
    exited: bool,
}

/// A thread off the CPU.
struct Off {
    since: u64,
    runnable: bool,
    woken: Option<u64>,
    /// The stack sample this interval's time goes to: (the tid it carries, its time).
    stack: Option<(i32, u64)>,
    /// The time before the thread's first switch record (its first run's wait, or its
    /// time off the CPU from the recording's start).
    first: bool,
}

impl Thread {
    /// No switch, on-CPU or off-CPU state known yet.
    fn fresh(&self) -> bool {
        !self.switched && self.off.is_none() && self.on_since.is_none() && !self.exited
    }
}

impl WallPlan {
    /// The plan for `file`, whose profile columns are its events' (`file.attrs.len()` of
    /// them) followed by the three wall columns; `None` when the recording has no off-CPU
    /// data. `on_cpu` says which events' samples carry on-CPU weight (the width event's).
    pub fn of(file: &PerfData, on_cpu: &[bool]) -> Result<Option<WallPlan>, ReadError> {
        WallPlan::of_in(file, on_cpu, None)
    }

    /// [`WallPlan::of`] with every on- and off-CPU interval clipped to `times` (`--time`):
    /// the wall time inside the ranges, on-CPU time spread over the on-CPU samples inside
    /// them, off-CPU time on the switch-out stack its interval began with, even when that
    /// switch-out was before the ranges ([`WallPlan::carries`]).
    pub fn of_in(
        file: &PerfData,
        on_cpu: &[bool],
        times: Option<&TimeRanges>,
    ) -> Result<Option<WallPlan>, ReadError> {
        WallPlan::of_placing(file, on_cpu, times, false)
    }

    /// [`WallPlan::of_in`], keeping with `place` the stretches of time the profile has only
    /// under its threads' roots ([`WallPlan::placed`]): one entry per such interval, so
    /// only for a reader that shows time.
    pub fn of_placing(
        file: &PerfData,
        on_cpu: &[bool],
        times: Option<&TimeRanges>,
        place: bool,
    ) -> Result<Option<WallPlan>, ReadError> {
        let sources: Vec<Source> = (0..file.attrs.len())
            .map(|i| source_of(file, i, on_cpu.get(i).copied().unwrap_or(false)))
            .collect();
        let context_switch = file
            .attrs
            .iter()
            .any(|a| a.flags & cpiflame_perf_data::attr_flags::CONTEXT_SWITCH != 0);
        let has = |s: Source| sources.contains(&s);
        if !context_switch
            && !has(Source::SwitchStack)
            && !has(Source::SchedSwitch)
            && !has(Source::OffCpuTime)
        {
            return Ok(None);
        }
        let trace: Vec<Option<&TraceEvent>> = file
            .attrs
            .iter()
            .map(|a| {
                (a.type_ == attr_type::TRACEPOINT)
                    .then(|| file.trace_events.iter().find(|e| e.id == a.config))
                    .flatten()
            })
            .collect();
        // A switch-out is a record when the file has them, else the stack sample is.
        let mut walk = Walk::new(
            context_switch,
            has(Source::SchedSwitch),
            has(Source::Wakeup),
            times,
        );
        walk.place = place;
        let mut weights = CounterWeights::new(file);
        let (mut out, mut group) = (Vec::new(), Vec::new());
        for record in file.records() {
            let record = record?;
            let fake_time = matches!(&record.kind, RecordKind::Sample(s) if sources[s.attr] == Source::OffCpuTime);
            if let (Some(t), false) = (record.time, fake_time) {
                // perf's offcpu-time samples carry a made-up time (after every other).
                walk.end = walk.end.max(t);
                // The recording's start: its first event of a kind `perf script` text shows
                // too (samples, switches, task events), so both give the same plan.
                let shown = matches!(
                    record.kind,
                    RecordKind::Sample(_)
                        | RecordKind::Switch { .. }
                        | RecordKind::Fork { .. }
                        | RecordKind::Comm { .. }
                        | RecordKind::Exit { .. }
                );
                if shown && t > 0 {
                    walk.begin.get_or_insert(t);
                }
            }
            match &record.kind {
                RecordKind::Sample(s) => {
                    let source = sources[s.attr];
                    if source == Source::OnCpu {
                        out.clear();
                        weights.weights(file, s, &mut out, &mut group);
                        let w = out
                            .iter()
                            .filter(|(e, _)| on_cpu.get(*e).copied().unwrap_or(false))
                            .map(|(_, p)| *p)
                            .sum();
                        let ns = sample_ns(file, s, w);
                        walk.on_cpu_sample(s, w, ns);
                    } else {
                        walk.sample(s, source, trace[s.attr]);
                    }
                }
                RecordKind::Switch {
                    out: true,
                    preempt,
                    task: Some((pid, tid)),
                    ..
                } => {
                    walk.thread(*tid).pid.get_or_insert(*pid);
                    if let Some(t) = record.time {
                        walk.switch_out(*tid, t, Some(*preempt), None);
                    }
                }
                RecordKind::Switch {
                    out: false,
                    task: Some((pid, tid)),
                    ..
                } => {
                    walk.thread(*tid).pid.get_or_insert(*pid);
                    if let Some(t) = record.time {
                        walk.stats.switch_records = true;
                        walk.switch_in(*tid, t);
                    }
                }
                RecordKind::Fork { pid, tid, .. } | RecordKind::Comm { pid, tid, .. } => {
                    walk.thread(*tid).pid.get_or_insert(*pid);
                    // perf synthesizes the records of threads that existed before it started
                    // with time 0: not a start.
                    if let Some(t) = record.time.filter(|&t| t > 0) {
                        let fork = matches!(record.kind, RecordKind::Fork { .. });
                        walk.start(*tid, t, fork);
                    }
                }
                RecordKind::Exit { tid, .. } => {
                    if let Some(t) = record.time {
                        walk.exit(*tid, t);
                    }
                }
                _ => {}
            }
        }
        Ok(Some(walk.finish(file.attrs.len(), sources)))
    }

    /// Each thread's off-CPU time that has no switch-out stack, in tid order.
    pub fn without_stack(&self) -> &[StacklessTime] {
        &self.without_stack
    }

    /// Each thread's on-CPU time that has no on-CPU sample, in tid order.
    pub fn unsampled(&self) -> &[UnsampledTime] {
        &self.unsampled
    }

    /// The stretches of time [`WallPlan::without_stack`] and [`WallPlan::unsampled`] sum, in
    /// time order; empty unless asked for ([`WallPlan::of_placing`]).
    pub fn placed(&self) -> &[PlacedTime] {
        &self.placed
    }

    /// True when the recording has perf's `offcpu-time` samples, whose times are made up
    /// (later than every other record's), so `--time` cannot clip them.
    pub fn made_up_times(&self) -> bool {
        self.sources.contains(&Source::OffCpuTime)
    }

    /// True when `sample` is outside `--time`'s ranges but begins an off-CPU interval with
    /// time inside them: its stack carries that time (and nothing else: see
    /// [`SampleWeights::weights`](crate::SampleWeights::weights)).
    pub fn carries(&self, sample: &Sample<'_>) -> bool {
        let (Some(times), Some(t)) = (&self.times, sample.time) else {
            return false;
        };
        !times.contains(t)
            && matches!(
                self.sources.get(sample.attr),
                Some(Source::SwitchStack | Source::SchedSwitch)
            )
            && self
                .off_cpu
                .get(&(sample.tid.unwrap_or(-1), t))
                .is_some_and(|&(r, b)| r + b > 0)
    }

    /// Pushes the wall-time (column, ns) pairs `sample` adds: on-CPU ns for an on-CPU
    /// sample (`weights`: what the sample adds to the event columns), the off-CPU interval
    /// that begins with a switch-out sample, the period of an `offcpu-time` sample.
    /// `out` holds what the sample adds to the event columns; the wall-time pairs are pushed
    /// after them. `spread`: what was handed out so far (the samples must come in the file's
    /// order; see [`Spread`]).
    pub(crate) fn weights(
        &self,
        sample: &Sample<'_>,
        out: &mut Vec<(usize, u64)>,
        spread: &mut Spread,
    ) {
        let tid = sample.tid.unwrap_or(-1);
        self.weights_at(sample.attr, tid, sample.time, sample.period, out, spread);
    }

    /// [`WallPlan::weights`] of a sample of event (column) `attr` by thread `tid` at `time`
    /// with `period`: the facts it reads, whether from perf.data or `perf script` text.
    fn weights_at(
        &self,
        attr: usize,
        tid: i32,
        time: Option<u64>,
        period: Option<u64>,
        out: &mut Vec<(usize, u64)>,
        spread: &mut Spread,
    ) {
        let on = self.first_column;
        match self.sources.get(attr) {
            Some(Source::OnCpu) => {
                let w: u64 = out
                    .iter()
                    .filter(|(e, _)| self.sources.get(*e) == Some(&Source::OnCpu))
                    .map(|(_, p)| *p)
                    .sum();
                if let Some(&(ns, total)) = self.on_cpu.get(&tid) {
                    let done = spread.on_cpu.entry(tid).or_default();
                    let share = |upto: u64| {
                        (u128::from(ns) * u128::from(upto.min(total)) / u128::from(total)) as u64
                    };
                    let before = share(*done);
                    *done = done.saturating_add(w);
                    out.push((on, share(*done) - before));
                }
            }
            Some(Source::SwitchStack | Source::SchedSwitch) => {
                // An interval goes to the first switch-out sample of its thread and time only:
                // another one at the same time (a second switch event, a repeated record)
                // would count it twice.
                let key = time.map(|t| (tid, t));
                let first = key.is_some_and(|k| spread.off_cpu_taken.insert(k));
                if let Some(&(runnable, blocked)) =
                    key.filter(|_| first).and_then(|k| self.off_cpu.get(&k))
                {
                    if runnable > 0 {
                        out.push((on + 1, runnable));
                    }
                    if blocked > 0 {
                        out.push((on + 2, blocked));
                    }
                }
            }
            Some(Source::OffCpuTime) => {
                out.push((on + 2, period.unwrap_or(0)));
            }
            _ => {}
        }
    }
}

/// The part `attr` plays in the walk.
fn source_of(file: &PerfData, attr: usize, on_cpu: bool) -> Source {
    let a = &file.attrs[attr];
    let name = a.name.as_deref().unwrap_or("");
    let base = name.split(':').next().unwrap_or(name);
    if a.type_ == attr_type::SOFTWARE && a.config == software::CONTEXT_SWITCHES
        || base == "context-switches"
        || base == "cs"
    {
        return Source::SwitchStack;
    }
    // perf's `--off-cpu` event is a BPF output event named so; other BPF output is not time.
    if name == "offcpu-time" {
        return Source::OffCpuTime;
    }
    if a.type_ == attr_type::TRACEPOINT {
        let event = file.trace_events.iter().find(|e| e.id == a.config);
        let tp = event.map_or(name.to_string(), |e| e.full_name());
        match tp.as_str() {
            "sched:sched_switch" => return Source::SchedSwitch,
            "sched:sched_waking" | "sched:sched_wakeup" => return Source::Wakeup,
            _ => {}
        }
    }
    if on_cpu {
        Source::OnCpu
    } else {
        Source::Other
    }
}

/// Whether `tid` is a thread whose switches are followed: not a CPU's idle task (tid 0, one
/// per CPU, its time the CPU's idle time, as `perf sched timehist` leaves it out) nor an
/// exiting task's -1 (it has left its pid namespace; its thread's exit already ended it).
fn is_thread(tid: i32) -> bool {
    tid > 0
}

/// The on-CPU nanoseconds sample `s` of weight `weight` stands for by itself: its period for
/// cpu-clock and task-clock (nanoseconds), `1 / frequency` for an event sampled at a
/// frequency, else nothing known.
fn sample_ns(file: &PerfData, s: &Sample<'_>, weight: u64) -> f64 {
    let a = &file.attrs[s.attr];
    if a.type_ == attr_type::SOFTWARE
        && (a.config == software::CPU_CLOCK || a.config == software::TASK_CLOCK)
    {
        weight as f64
    } else if a.freq() && a.sample_period_or_freq > 0 {
        1e9 / a.sample_period_or_freq as f64
    } else {
        0.0
    }
}

struct Walk {
    threads: HashMap<i32, Thread>,
    /// Switch-ins taken from a thread's next sample.
    estimated_switch_ins: u64,
    off_cpu: HashMap<(i32, u64), (u64, u64)>,
    stats: WallStats,
    switch_records: bool,
    /// Switch-ins are seen (switch records, or `sched_switch`'s `next_pid`): a new thread's
    /// wait for its first run ends at one.
    switch_ins_known: bool,
    /// The first time seen: the start of the recording.
    begin: Option<u64>,
    /// The latest time seen: the end of the recording.
    end: u64,
    times: Option<TimeRanges>,
    /// `sched_switch`'s `next_pid` switch-ins of threads not known yet: a thread of another
    /// process in a per-thread recording (never seen leaving, so never used), or in a
    /// CPU-wide one a thread whose first switch-out comes later.
    pending_in: HashMap<i32, u64>,
    /// The first wakeup of threads not yet known to be off the CPU: ends the blocked time
    /// before a thread's first switch-in.
    pending_woken: HashMap<i32, u64>,
    /// Per CPU, the time of its last `sched_switch` sample: where a thread leaving that CPU
    /// came on when the switch that brought it is missing from the file (as `perf sched
    /// timehist` takes it).
    cpu_last: HashMap<u32, u64>,
    /// The longest time one on-CPU sample stands for (a clock's period, a frequency's
    /// interval): a thread that ran longer than this has a sample. 0: not known.
    sample_interval_ns: u64,
    /// Keep the stretches of time without a stack or sample with their times
    /// ([`WallPlan::placed`]).
    place: bool,
    /// The recording has wakeup events: a blocked thread not seen woken was not woken.
    wakeups_recorded: bool,
}

impl Walk {
    fn new(
        switch_records: bool,
        sched_switch: bool,
        wakeups: bool,
        times: Option<&TimeRanges>,
    ) -> Walk {
        Walk {
            wakeups_recorded: wakeups,
            threads: HashMap::default(),
            estimated_switch_ins: 0,
            off_cpu: HashMap::default(),
            stats: WallStats::default(),
            switch_records,
            switch_ins_known: switch_records || sched_switch,
            begin: None,
            end: 0,
            times: times.cloned(),
            pending_in: HashMap::default(),
            pending_woken: HashMap::default(),
            cpu_last: HashMap::default(),
            sample_interval_ns: 0,
            place: false,
        }
    }

    /// `tid` forked (`fork`: PERF_RECORD_FORK, the new thread) or named itself at `t`. A new
    /// thread is runnable from its fork (`wake_up_new_task` queues it) to its first
    /// switch-in, when switch-ins are seen: that wait is runnable time without a stack.
    fn start(&mut self, tid: i32, t: u64, fork: bool) {
        // Seen coming onto a CPU (another thread's sched_switch) before it was known: a
        // thread renaming itself (exec) was running, and its life did not begin here.
        if let Some(p) = self.pending_in.remove(&tid).filter(|&p| p <= t) {
            if self.threads.get(&tid).is_none_or(Thread::fresh) {
                self.switch_in(tid, p);
            }
        }
        let switch_ins_known = self.switch_ins_known;
        let th = self.thread(tid);
        th.start.get_or_insert(t);
        th.born.get_or_insert(t);
        if fork && switch_ins_known && th.fresh() {
            th.off = Some(Off {
                since: t,
                runnable: true,
                woken: None,
                stack: None,
                first: true,
            });
        }
    }

    fn thread(&mut self, tid: i32) -> &mut Thread {
        self.threads.entry(tid).or_default()
    }

    /// The nanoseconds from `a` to `b` that count: those in `--time`'s ranges.
    fn clip(&self, a: u64, b: u64) -> u64 {
        match &self.times {
            Some(t) => t.overlap(a, b),
            None => b.saturating_sub(a),
        }
    }

    /// Adds the part inside `--time` of `tid`'s on-CPU interval from `since` to `t`.
    fn on_cpu_interval(&mut self, tid: i32, since: u64, t: u64) {
        let on = self.clip(since, t);
        let start = self.first_inside(since, t);
        let place = self.place;
        let th = self.thread(tid);
        th.on_cpu_ns = th.on_cpu_ns.saturating_add(on);
        th.on_intervals += 1;
        if let (true, 0, Some(start), 1..) = (place, th.weight, start, on) {
            th.placed_on.push((start, on));
        }
    }

    /// Where the part of the interval from `a` to `b` inside `--time` begins.
    fn first_inside(&self, a: u64, b: u64) -> Option<u64> {
        match &self.times {
            Some(t) => t.first_inside(a, b),
            None => Some(a),
        }
    }

    fn on_cpu_sample(&mut self, s: &Sample<'_>, weight: u64, ns: f64) {
        self.on_cpu_at(s.tid.unwrap_or(-1), s.time, weight, ns);
    }

    fn on_cpu_at(&mut self, tid: i32, time: Option<u64>, weight: u64, ns: f64) {
        if let Some(t) = time {
            // Running now: a thread seen off the CPU without a switch-in record came back.
            if !self.switch_records && self.thread(tid).off.is_some() {
                self.estimated_switch_ins += 1;
                self.switch_in(tid, t);
            }
            let th = self.thread(tid);
            th.start.get_or_insert(t);
            th.first_sample.get_or_insert(t);
            th.last_sample = Some(t);
        }
        if ns > 0.0 {
            self.sample_interval_ns = self.sample_interval_ns.max(ns as u64);
        }
        // Only the samples inside `--time` share out the thread's on-CPU time.
        if self
            .times
            .as_ref()
            .is_some_and(|r| !r.contains(time.unwrap_or(0)))
        {
            return;
        }
        let th = self.thread(tid);
        th.weight = th.weight.saturating_add(weight);
        th.sampled_ns += ns;
        if th.weight > 0 && !th.placed_on.is_empty() {
            th.placed_on = Vec::new();
        }
    }

    fn sample(&mut self, s: &Sample<'_>, source: Source, trace: Option<&TraceEvent>) {
        let (Some(t), tid) = (s.time, s.tid.unwrap_or(-1)) else {
            return;
        };
        if let (Some(pid), Source::SwitchStack) = (s.pid, source) {
            self.thread(tid).pid.get_or_insert(pid);
        }
        match source {
            Source::SwitchStack => self.switch_stack(tid, t),
            Source::SchedSwitch => {
                let (Some(raw), Some(trace)) = (s.raw, trace) else {
                    return;
                };
                let prev = trace.int(raw, "prev_pid").map(|v| v as i32);
                let next = trace.int(raw, "next_pid").map(|v| v as i32);
                // R (0) and R+ (preempted, TASK_REPORT_MAX above the state bits) are runnable.
                let runnable = trace.int(raw, "prev_state").map(|v| v & 0xff == 0);
                self.sched_switch(tid, t, prev, next, runnable, s.cpu);
            }
            Source::Wakeup => {
                let woken = s.raw.zip(trace).and_then(|(raw, tr)| tr.int(raw, "pid"));
                self.wakeup(t, woken.map(|w| w as i32));
            }
            Source::OffCpuTime => self.off_cpu_time(tid, s.period),
            Source::OnCpu | Source::Other => {}
        }
    }

    /// A switch-out stack sample (`context-switches`) of `tid` at `t`.
    fn switch_stack(&mut self, tid: i32, t: u64) {
        let th = self.thread(tid);
        th.start.get_or_insert(t);
        th.last_stack = Some((tid, t));
        if !self.switch_records {
            // No records: the sample is the switch-out, its state unknown.
            self.switch_out(tid, t, None, Some((tid, t)));
        }
    }

    /// A `sched:sched_switch` sample of `tid` at `t` on `cpu`, with its `prev_pid`,
    /// `next_pid` and whether `prev_state` was runnable.
    fn sched_switch(
        &mut self,
        tid: i32,
        t: u64,
        prev: Option<i32>,
        next: Option<i32>,
        runnable: Option<bool>,
        cpu: Option<u32>,
    ) {
        let prev = prev.unwrap_or(tid);
        // The switch that brought `prev` onto this CPU is missing (the kernel here emits no
        // `sched_switch` for some switches, most of them an idle CPU's to a thread a timer
        // woke, whose wakeup is missing too; ftrace misses the same): it came on after the
        // CPU's last switch seen (as `perf sched timehist` takes it), after it left (it may
        // have left another CPU since), and after its wakeup if one was seen. A thread that
        // left blocked and was not seen woken is taken as blocked until it left again: nothing
        // shows it ran (timehist gives it the idle CPU's time; a sleeper then looks busy),
        // where the recording has wakeup events.
        // When on-CPU time is sampled and none of its samples fell since, it ran less than
        // one sample's interval: the CPU's last switch may be long before.
        let tprev = cpu.and_then(|c| self.cpu_last.insert(c, t));
        if let (Some(tprev), false) = (tprev, self.switch_records) {
            let interval = self.sample_interval_ns;
            let wakeups = self.wakeups_recorded;
            let came_on = |th: Option<&Thread>| {
                let off = th.and_then(|th| th.off.as_ref());
                if wakeups && off.is_some_and(|o| !o.runnable && o.woken.is_none()) {
                    return t;
                }
                let left = off.map_or(0, |o| o.since);
                let woken = off.and_then(|o| o.woken).unwrap_or(0);
                let unsampled = th.is_none_or(|th| th.last_sample.is_none_or(|s| s <= tprev));
                let mut on = tprev.max(left).max(woken);
                if interval > 0 && unsampled {
                    on = on.max(t.saturating_sub(interval));
                }
                on.min(t)
            };
            match self.threads.get(&prev) {
                Some(th) if th.off.is_some() => {
                    let on = came_on(Some(th));
                    self.stats.switch_ins_missing += 1;
                    self.pending_in.insert(prev, on);
                }
                Some(th) if !th.fresh() => {}
                th => {
                    let on = came_on(th);
                    self.pending_in.entry(prev).or_insert(on);
                }
            }
        }
        // An exiting thread's last switch shows tid -1 (it has left its pid namespace):
        // not a tid its samples carry.
        if prev != tid && tid > 0 {
            self.thread(prev).sample_tid = Some(tid);
        }
        // The interval is the prev_pid's, its stack the sample's: it is found again by the
        // sample's own tid and time (see `WallPlan::weights`).
        self.thread(prev).last_stack = Some((tid, t));
        if !self.switch_records {
            self.switch_out(prev, t, runnable, Some((tid, t)));
            if let Some(next) = next.filter(|&n| n != 0) {
                if self.threads.contains_key(&next) {
                    self.switch_in(next, t);
                } else {
                    self.pending_in.insert(next, t);
                }
            }
        }
    }

    /// A wakeup sample at `t` of thread `woken` (field `pid`).
    fn wakeup(&mut self, t: u64, woken: Option<i32>) {
        self.stats.wakeups = true;
        let Some(woken) = woken else {
            return;
        };
        match self.threads.get_mut(&woken) {
            Some(th) if th.off.is_some() => {
                if let Some(off) = &mut th.off {
                    if !off.runnable && off.woken.is_none() {
                        off.woken = Some(t);
                    }
                }
            }
            Some(th) if !th.fresh() => {}
            _ => {
                self.pending_woken.entry(woken).or_insert(t);
            }
        }
    }

    /// perf's `offcpu-time` sample of `tid`: `period` ns blocked.
    fn off_cpu_time(&mut self, tid: i32, period: Option<u64>) {
        self.stats.blocked_ns = self.stats.blocked_ns.saturating_add(period.unwrap_or(0));
        self.thread(tid);
    }

    /// `tid` left the CPU at `t`; `runnable`: still runnable (None: unknown, taken as
    /// blocked); `stack`: the sample the interval goes to (else the last stack sample since
    /// the thread last came on).
    fn switch_out(&mut self, tid: i32, t: u64, runnable: Option<bool>, stack: Option<(i32, u64)>) {
        if !is_thread(tid) {
            return;
        }
        let th = self.threads.entry(tid).or_default();
        if th.exited {
            return;
        }
        let fresh = th.fresh();
        let pending = self.pending_in.remove(&tid).filter(|&p| {
            p <= t && th.off.as_ref().is_none_or(|o| o.since <= p) && th.born.is_none_or(|b| b <= p)
        });
        if fresh {
            if let Some(p) = pending {
                // Seen coming on (another thread's sched_switch) before it was known.
                self.switch_in(tid, p);
            }
        } else if self.threads.get(&tid).is_some_and(|th| th.off.is_some()) {
            // Two switch-outs in a row (a lost switch-in): the interval ends at the
            // switch-in seen, else here.
            self.switch_in(tid, pending.unwrap_or(t));
        }
        let begin = self.begin;
        let th = self.threads.entry(tid).or_default();
        // On since its switch-in; for the first switch-out without one, since it started:
        // with switch records a thread whose first record is a switch-out was on a CPU from
        // its fork (or comm) or the recording's start; without them, since its first sample.
        let first_run = if self.switch_records {
            th.born.or(begin)
        } else {
            th.first_sample
        };
        let since = th.on_since.take().or(first_run).unwrap_or(t);
        self.on_cpu_interval(tid, since, t);
        let th = self.threads.entry(tid).or_default();
        th.start.get_or_insert(t);
        th.switched = true;
        let stack = stack.or(th.last_stack.filter(|&(_, s)| s >= th.last_in));
        th.off = Some(Off {
            since: t,
            runnable: runnable.unwrap_or(false),
            woken: None,
            stack,
            first: false,
        });
        self.stats.switches += 1;
    }

    /// `tid` came onto a CPU at `t`. A thread's first switch-in without a switch before it
    /// (and no fork, whose wait is already runnable) ends its time off the CPU since it
    /// started or the recording did: blocked, runnable from a wakeup when one was seen.
    fn switch_in(&mut self, tid: i32, t: u64) {
        if !is_thread(tid) {
            return;
        }
        let begin = self.begin;
        let woken = self.pending_woken.remove(&tid);
        let switch_ins_known = self.switch_ins_known;
        let th = self.threads.entry(tid).or_default();
        if th.exited {
            return;
        }
        if th.fresh() && switch_ins_known {
            if let Some(since) = th.born.or(begin).filter(|&b| b < t) {
                th.off = Some(Off {
                    since,
                    runnable: false,
                    woken: woken.filter(|&w| w >= since && w <= t),
                    stack: None,
                    first: true,
                });
            }
        }
        th.switched = true;
        th.start.get_or_insert(t);
        th.last_in = t;
        if let Some(off) = th.off.take() {
            self.close_off(tid, off, t);
        }
        let th = self.threads.entry(tid).or_default();
        th.on_since = Some(t);
    }

    fn exit(&mut self, tid: i32, t: u64) {
        if let Some(since) = self.thread(tid).on_since.take() {
            self.on_cpu_interval(tid, since, t);
        }
        let th = self.threads.entry(tid).or_default();
        th.exited = true;
        if let Some(off) = th.off.take() {
            self.close_off(tid, off, t);
        }
    }

    /// Ends the off-CPU interval `off` of `tid` at `t` and puts its time on its stack.
    fn close_off(&mut self, tid: i32, off: Off, t: u64) {
        let total = self.clip(off.since, t);
        let (runnable, blocked) = if off.runnable {
            (total, 0)
        } else {
            match off.woken {
                Some(w) => {
                    let w = w.clamp(off.since, t);
                    (self.clip(w, t), self.clip(off.since, w))
                }
                None => (0, total),
            }
        };
        if off.first {
            self.stats.before_first_switch_ns =
                self.stats.before_first_switch_ns.saturating_add(total);
        }
        let start = match (self.place, off.stack) {
            (true, None) => self.first_inside(off.since, t),
            _ => None,
        };
        let e = match off.stack {
            Some(stack) => self.off_cpu.entry(stack).or_default(),
            None => {
                self.stats.off_cpu_without_stack_ns =
                    self.stats.off_cpu_without_stack_ns.saturating_add(total);
                let th = self.threads.entry(tid).or_default();
                if let (Some(start), 1..) = (start, total) {
                    th.placed_off.push((start, runnable, blocked));
                }
                th.without_stack_intervals.0 += u64::from(runnable > 0);
                th.without_stack_intervals.1 += u64::from(blocked > 0);
                &mut th.without_stack
            }
        };
        e.0 = e.0.saturating_add(runnable);
        e.1 = e.1.saturating_add(blocked);
        self.stats.runnable_ns = self.stats.runnable_ns.saturating_add(runnable);
        self.stats.blocked_ns = self.stats.blocked_ns.saturating_add(blocked);
    }

    fn finish(mut self, columns: usize, sources: Vec<Source>) -> WallPlan {
        let end = self.end;
        let tids: Vec<i32> = self.threads.keys().copied().collect();
        for tid in tids {
            let th = self.threads.get_mut(&tid).expect("listed");
            if th.exited {
                continue;
            }
            if let Some(off) = th.off.take() {
                self.close_off(tid, off, end);
            } else if let Some(since) = th.on_since.take() {
                self.on_cpu_interval(tid, since, end);
            }
        }
        let mut spread = HashMap::default();
        let mut unsampled = Vec::new();
        let mut placed = Vec::new();
        for (&tid, th) in &self.threads {
            let at = |start, on_cpu_ns, runnable_ns, blocked_ns| PlacedTime {
                tid,
                sample_tid: th.sample_tid.unwrap_or(tid),
                pid: th.pid.unwrap_or(tid),
                start,
                on_cpu_ns,
                runnable_ns,
                blocked_ns,
            };
            placed.extend(th.placed_off.iter().map(|&(s, r, b)| at(s, 0, r, b)));
            let on_cpu = if th.switched {
                th.on_cpu_ns as f64
            } else {
                th.sampled_ns
            };
            let ns = on_cpu.round() as u64;
            self.stats.on_cpu_ns = self.stats.on_cpu_ns.saturating_add(ns);
            if th.weight > 0 {
                spread.insert(tid, (ns, th.weight));
            } else if ns > 0 {
                self.stats.on_cpu_without_samples_ns =
                    self.stats.on_cpu_without_samples_ns.saturating_add(ns);
                unsampled.push(UnsampledTime {
                    tid,
                    sample_tid: th.sample_tid.unwrap_or(tid),
                    pid: th.pid.unwrap_or(tid),
                    on_cpu_ns: ns,
                    intervals: th.on_intervals.max(1),
                });
                if self.place {
                    if th.switched {
                        placed.extend(th.placed_on.iter().map(|&(s, on)| at(s, on, 0, 0)));
                    } else {
                        let start = th.first_sample.or(th.start).unwrap_or(0);
                        placed.push(at(start, ns, 0, 0));
                    }
                }
            }
        }
        unsampled.sort_unstable_by_key(|u| u.tid);
        placed.sort_unstable_by_key(|p| (p.start, p.tid));
        let mut without_stack: Vec<StacklessTime> = self
            .threads
            .iter()
            .filter(|(_, th)| th.without_stack != (0, 0))
            .map(|(&tid, th)| StacklessTime {
                tid,
                sample_tid: th.sample_tid.unwrap_or(tid),
                pid: th.pid.unwrap_or(tid),
                runnable_ns: th.without_stack.0,
                blocked_ns: th.without_stack.1,
                runnable_intervals: th.without_stack_intervals.0,
                blocked_intervals: th.without_stack_intervals.1,
            })
            .collect();
        without_stack.sort_unstable_by_key(|s| s.tid);
        self.stats.threads = self.threads.len();
        self.stats.switch_in_estimated = self.estimated_switch_ins * 10 > self.stats.switches;
        WallPlan {
            first_column: columns,
            sources,
            on_cpu: spread,
            off_cpu: self.off_cpu,
            times: self.times,
            without_stack,
            unsampled,
            placed,
            stats: self.stats,
        }
    }
}
