//! The wall-time plan of `perf script` text: the same [`Walk`] as perf.data's, fed the
//! facts the text prints ([`ThreadEvent`]s: samples with a scheduler tracepoint's arguments,
//! `--show-switch-events` and `--show-task-events` lines) instead of records, so one plan
//! computes both and a recording gives the same split as its text (to the text's time
//! resolution: microseconds unless printed with `--ns`).
//!
//! What the text cannot say: an event's sampling frequency (on-CPU time of threads without
//! switch data comes only from cpu-clock and task-clock periods), and its periods when `-F`
//! leaves `period` out (each sample then weighs 1 in how a thread's on-CPU time is spread).

use foldhash::HashMap;

use cpiflame_profile::timed::{Thread, Timed, TimedSample};
use cpiflame_profile::{wall, Count, EventColumn, FrameId, Profile, SchedArgs, ThreadEvent};

use super::{Source, Walk, WallPlan};
use crate::time::TimeRanges;

impl WallPlan {
    /// The plan of a `perf script` text whose event columns are `names`, from its
    /// `events` (in time order, as `cpiflame_profile::PerfScript::thread_events`); `None`
    /// when the text has no off-CPU data. `on_cpu` says which columns' samples carry on-CPU
    /// weight; `times` clips every interval as [`WallPlan::of_in`] does; `place` keeps the
    /// stretches of time without a stack or sample with their times ([`WallPlan::placed`]).
    pub fn of_script(
        events: &[ThreadEvent],
        names: &[String],
        on_cpu: &[bool],
        times: Option<&TimeRanges>,
        place: bool,
    ) -> Option<WallPlan> {
        let sources: Vec<Source> = names
            .iter()
            .enumerate()
            .map(|(i, n)| source_of_name(n, on_cpu.get(i).copied().unwrap_or(false)))
            .collect();
        let switch_records = events
            .iter()
            .any(|e| matches!(e, ThreadEvent::Switch { .. }));
        let has = |s: Source| sources.contains(&s);
        if !switch_records
            && !has(Source::SwitchStack)
            && !has(Source::SchedSwitch)
            && !has(Source::OffCpuTime)
        {
            return None;
        }
        let mut walk = Walk::new(
            switch_records,
            has(Source::SchedSwitch),
            has(Source::Wakeup),
            times,
        );
        walk.place = place;
        for event in events {
            let source = match *event {
                ThreadEvent::Sample { column, .. } => sources
                    .get(column as usize)
                    .copied()
                    .unwrap_or(Source::Other),
                _ => Source::Other,
            };
            // perf's offcpu-time samples carry a made-up time (after every other).
            if source != Source::OffCpuTime {
                walk.end = walk.end.max(event.time());
                if event.time() > 0 {
                    walk.begin.get_or_insert(event.time());
                }
            }
            match *event {
                ThreadEvent::Sample {
                    time,
                    tid,
                    column,
                    period,
                    sched,
                    cpu,
                    ..
                } => match source {
                    Source::OnCpu => {
                        let ns = if is_clock(&names[column as usize]) {
                            period as f64
                        } else {
                            0.0
                        };
                        walk.on_cpu_at(tid, Some(time), period, ns);
                    }
                    Source::SwitchStack => walk.switch_stack(tid, time),
                    Source::SchedSwitch => {
                        if let Some(SchedArgs::Switch {
                            prev_pid,
                            next_pid,
                            runnable,
                        }) = sched
                        {
                            walk.sched_switch(tid, time, prev_pid, next_pid, runnable, cpu);
                        }
                    }
                    Source::Wakeup => {
                        let woken = match sched {
                            Some(SchedArgs::Wakeup { pid }) => pid,
                            _ => None,
                        };
                        walk.wakeup(time, woken);
                    }
                    Source::OffCpuTime => walk.off_cpu_time(tid, Some(period)),
                    Source::Other => {}
                },
                ThreadEvent::Switch {
                    time,
                    tid,
                    out: true,
                    preempt,
                    ..
                } => walk.switch_out(tid, time, Some(preempt), None),
                ThreadEvent::Switch {
                    time,
                    tid,
                    out: false,
                    ..
                } => {
                    walk.stats.switch_records = true;
                    walk.switch_in(tid, time);
                }
                // perf's records of threads that existed before it are at time 0: the
                // thread is known (as perf.data's walk knows it), no start is taken.
                ThreadEvent::Start { time: 0, tid, .. } => {
                    walk.thread(tid);
                }
                ThreadEvent::Start {
                    time, tid, fork, ..
                } => walk.start(tid, time, fork),
                ThreadEvent::Exit { time, tid } => walk.exit(tid, time),
            }
        }
        Some(walk.finish(names.len(), sources))
    }

    /// Adds the three wall-time columns to `profile` (whose event columns are the plan's
    /// first ones, its stacks as the text was read), each sample of `events` adding what
    /// `WallPlan::weights` gives it, in order; a switch-out sample left out by `--time`
    /// adds its interval's time inside the ranges on its stack from `outside_stacks`. With
    /// `timed` (the text's samples with their times), each weight is also a timed sample at
    /// its sample's time (a switch-out before the ranges: the ranges' first nanosecond after
    /// it), and the stretches of [`WallPlan::placed`] at theirs, as perf.data's walk gives
    /// them to a reader that shows time.
    pub fn add_to_script(
        &self,
        events: &[ThreadEvent],
        outside_stacks: &[Vec<FrameId>],
        profile: &mut Profile,
        mut timed: Option<&mut Timed>,
    ) {
        let mut threads = TimedThreads::new(timed.as_deref());
        profile
            .events
            .extend(
                [wall::ON_CPU, wall::RUNNABLE, wall::BLOCKED].map(|name| EventColumn {
                    name: name.to_string(),
                }),
            );
        for stack in &mut profile.stacks {
            stack.counts.extend([Count::default(); 3]);
        }
        let mut spread = super::Spread::default();
        let mut out = Vec::new();
        for event in events {
            let ThreadEvent::Sample {
                time,
                tid,
                column,
                period,
                stack,
                outside,
                ..
            } = *event
            else {
                continue;
            };
            let stack = match (stack, outside.and_then(|o| outside_stacks.get(o as usize))) {
                (Some(stack), _) => stack,
                (None, Some(frames)) => {
                    // A switch-out before `--time`'s ranges: its stack holds the part of its
                    // interval inside them, and nothing else (as perf.data's `carries`).
                    out.clear();
                    out.push((column as usize, period));
                    self.weights_at(
                        column as usize,
                        tid,
                        Some(time),
                        Some(period),
                        &mut out,
                        &mut spread,
                    );
                    for &(c, ns) in &out[1..] {
                        profile.add(
                            frames,
                            c,
                            Count {
                                samples: 1,
                                period: ns,
                            },
                        );
                    }
                    if let (Some(timed), Some(index)) =
                        (timed.as_deref_mut(), profile.stack_id(frames))
                    {
                        let at = self
                            .times
                            .as_ref()
                            .and_then(|t| t.first_inside(time, u64::MAX))
                            .unwrap_or(time);
                        let thread = threads.of(timed, tid, tid, None);
                        for &(c, ns) in &out[1..] {
                            timed.samples.push(TimedSample {
                                time: at,
                                thread,
                                stack: index as u32,
                                column: c as u32,
                                period: ns,
                            });
                        }
                    }
                    continue;
                }
                (None, None) => continue,
            };
            out.clear();
            out.push((column as usize, period));
            self.weights_at(
                column as usize,
                tid,
                Some(time),
                Some(period),
                &mut out,
                &mut spread,
            );
            let index = stack;
            let Some(stack) = profile.stacks.get_mut(stack as usize) else {
                continue;
            };
            for &(c, ns) in &out[1..] {
                if let Some(count) = stack.counts.get_mut(c) {
                    count.add(Count {
                        samples: 1,
                        period: ns,
                    });
                }
            }
            if let Some(timed) = timed.as_deref_mut() {
                let thread = threads.of(timed, tid, tid, None);
                for &(c, ns) in &out[1..] {
                    timed.samples.push(TimedSample {
                        time,
                        thread,
                        stack: index,
                        column: c as u32,
                        period: ns,
                    });
                }
            }
        }
        self.add_stackless_to_script(events, profile, timed.as_deref_mut(), &mut threads);
        if let Some(timed) = timed {
            // In time order again, as the table is read.
            timed.samples.sort_by_key(|s| s.time);
        }
    }

    /// Off-CPU time without a switch-out stack, as `[runnable]` and `[blocked]` directly
    /// under its thread's root frame, and on-CPU time without a sample as
    /// `[on-CPU, not sampled]` (its last sample's, else its last switch line's, else its last
    /// COMM or FORK line's), as the
    /// perf.data collapse adds it. A thread the text gives no root for keeps the
    /// time in the plan's totals and its warning only.
    fn add_stackless_to_script(
        &self,
        events: &[ThreadEvent],
        profile: &mut Profile,
        timed: Option<&mut Timed>,
        threads: &mut TimedThreads,
    ) {
        if self.without_stack().is_empty() && self.unsampled().is_empty() {
            return;
        }
        // As the perf.data collapse: the root of the thread's last sample, else (a thread
        // without one) its last name, here its last switch line's.
        let mut sampled: HashMap<i32, cpiflame_profile::FrameId> = HashMap::default();
        let mut switched: HashMap<i32, cpiflame_profile::FrameId> = HashMap::default();
        let mut started: HashMap<i32, cpiflame_profile::FrameId> = HashMap::default();
        for event in events {
            match *event {
                ThreadEvent::Sample {
                    tid,
                    stack: Some(stack),
                    ..
                } => {
                    let root = profile.stacks.get(stack as usize);
                    if let Some(&root) = root.and_then(|s| s.frames.first()) {
                        sampled.insert(tid, root);
                    }
                }
                ThreadEvent::Switch {
                    tid,
                    root: Some(root),
                    ..
                } => {
                    switched.insert(tid, root);
                }
                ThreadEvent::Start {
                    tid,
                    root: Some(root),
                    ..
                } => {
                    started.insert(tid, root);
                }
                _ => {}
            }
        }
        let on_cpu = profile.events.len() - 3;
        for s in self.without_stack() {
            let Some(&root) = sampled
                .get(&s.sample_tid)
                .or_else(|| switched.get(&s.tid))
                .or_else(|| started.get(&s.tid))
            else {
                continue;
            };
            for (runnable, column, period, samples) in [
                (true, on_cpu + 1, s.runnable_ns, s.runnable_intervals),
                (false, on_cpu + 2, s.blocked_ns, s.blocked_intervals),
            ] {
                if period == 0 {
                    continue;
                }
                let frame = profile.intern(wall::no_stack_frame(runnable));
                let count = Count {
                    samples: samples.max(1),
                    period,
                };
                profile.add(&[root, frame], column, count);
            }
        }
        for u in self.unsampled() {
            let Some(&root) = sampled
                .get(&u.sample_tid)
                .or_else(|| switched.get(&u.tid))
                .or_else(|| started.get(&u.tid))
            else {
                continue;
            };
            let frame = profile.intern(wall::unsampled_frame());
            let count = Count {
                samples: u.intervals,
                period: u.on_cpu_ns,
            };
            profile.add(&[root, frame], on_cpu, count);
        }
        let Some(timed) = timed else { return };
        // Each stretch at its time, on the stack the totals above went to.
        for p in self.placed() {
            let Some(&root) = sampled
                .get(&p.sample_tid)
                .or_else(|| switched.get(&p.tid))
                .or_else(|| started.get(&p.tid))
            else {
                continue;
            };
            for (offset, ns, frame) in p.parts() {
                let column = on_cpu + offset;
                let frame = profile.intern(frame);
                let Some(stack) = profile.stack_id(&[root, frame]) else {
                    continue;
                };
                let comm = &profile.frame(root).name;
                let thread = threads.of(timed, p.sample_tid, p.pid, Some(comm));
                timed.samples.push(TimedSample {
                    time: p.start,
                    thread,
                    stack: stack as u32,
                    column: column as u32,
                    period: ns,
                });
            }
        }
    }
}

/// The timed table's thread of a tid: the first of its threads with that tid, else one
/// added (a thread the text shows only in switch lines).
struct TimedThreads(HashMap<i32, u32>);

impl TimedThreads {
    fn new(timed: Option<&Timed>) -> TimedThreads {
        let mut of = HashMap::default();
        for (i, t) in timed.map_or(&[][..], |t| &t.threads[..]).iter().enumerate() {
            of.entry(t.tid).or_insert(i as u32);
        }
        TimedThreads(of)
    }

    fn of(&mut self, timed: &mut Timed, tid: i32, pid: i32, comm: Option<&str>) -> u32 {
        *self.0.entry(tid).or_insert_with(|| {
            timed.threads.push(Thread {
                pid,
                tid,
                comm: comm.unwrap_or_default().to_string(),
            });
            (timed.threads.len() - 1) as u32
        })
    }
}

/// The part an event named `name` plays in the walk, as [`super::source_of`] decides it
/// for a perf.data attr (by name alone: text has no type or config to go by).
fn source_of_name(name: &str, on_cpu: bool) -> Source {
    let base = name.split(':').next().unwrap_or(name);
    match name {
        _ if base == "context-switches" || base == "cs" => Source::SwitchStack,
        "offcpu-time" => Source::OffCpuTime,
        "sched:sched_switch" => Source::SchedSwitch,
        "sched:sched_waking" | "sched:sched_wakeup" => Source::Wakeup,
        _ if on_cpu => Source::OnCpu,
        _ => Source::Other,
    }
}

/// cpu-clock and task-clock, whose periods are nanoseconds.
fn is_clock(name: &str) -> bool {
    matches!(
        name.split(':').next().unwrap_or(name),
        "cpu-clock" | "task-clock"
    )
}
