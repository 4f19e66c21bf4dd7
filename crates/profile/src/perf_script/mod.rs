//! Reading `perf script` text into a [`Profile`]: the form inferno's and FlameGraph's users
//! keep their data in (`perf script > out.perf`, then `stackcollapse-perf.pl` or
//! `inferno-collapse-perf`).
//!
//! # Format accepted
//!
//! ```text
//! # ========
//! # event : name = cpu-clock, , id = { 11748 }, type = 1, size = 128, { sample_period, sample_freq } = 200, sample_type = IP|TID|TIME|CALLCHAIN|PERIOD, freq = 1, ...
//! # ========
//! #
//! threads 5264/5268 [001]  525.971482594:    5000000 cpu-clock:
//! \t            145f recurse_leaf+0x1f (/tmp/fx/threads)
//! \t            151f inline_helper (inlined)
//! \tffffffff8158c6ae asm_sysvec_apic_timer_interrupt ([kernel.kallsyms])
//! \t           891f4 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)
//!
//!    cpu_mem_bound 23621  1017.255019153: cpu-clock:      559b817d825d memory_bound+0x1d (/tmp/fx/cpu_mem_bound)
//! ```
//!
//! - **Comment lines** (`#` in the first column) are skipped, except the `# event : name = ...`
//!   lines of `perf script --header`: they give each event's `type`, `config` (0 when perf
//!   leaves them out, as it does for zero values) and, when `freq` is not set, its fixed
//!   `sample_period`.
//! - **A sample** starts with a header line: the command name (may contain spaces; perf pads
//!   it on the left when there is no call chain), then in perf's order and each optional:
//!   `PID/TID`, `TID` or `PID`; `[CPU]`; `SECONDS.FRACTION:`; the period (a number); and the
//!   event name with a colon (`cpu-clock:`, `cycles:u:`, `sched:sched_switch:`). That covers
//!   perf's default layout and `-F comm,tid,time,event,ip,sym[,dso]`, `-F +pid`, `-F +period`,
//!   with and without `cpu`. Text after the event is one frame (`ADDR SYMBOL (DSO)`, the form
//!   perf prints without a call chain) when it reads as one, and is otherwise ignored
//!   (tracepoint arguments, other fields).
//! - **Frames** follow, one a line, leaf first, each starting with a tab (or, after a header
//!   without a frame of its own, with spaces): a hexadecimal address, the symbol, and the DSO
//!   in parentheses (which `-F` may leave out). A line without indentation is a frame too when
//!   it has the DSO and is not a sample header (text whose indentation was lost: as
//!   stackcollapse-perf and inferno read it). A blank line, or the next header, ends the
//!   sample. Other indented lines inside a sample (`-F +srcline`'s `  file.c:71`) are
//!   skipped, and so are the side-band lines of `--show-*-events` (`PERF_RECORD_...`).
//! - **Names** are made as `stackcollapse-perf.pl` and `inferno-collapse-perf` make them: a
//!   `+0xOFFSET` is removed; Rust symbols perf left mangled lose their hash and escapes;
//!   argument lists are removed (`foo(int)` → `foo`, keeping `(anonymous namespace)` and Go's
//!   `.(*T)`); `;` becomes `:`; an `[unknown]` symbol is named after its DSO's file name
//!   (`[libc.so.6]`) unless the DSO is `[unknown]` too; for `java` processes a leading `L` of
//!   class names goes. Unlike them, frames whose name starts with `(` are kept (they drop them,
//!   which loses every `(anonymous namespace)::` function), Java's `->` inlining is not split
//!   (it would split C++'s `operator->`), and a frame without a symbol is named as an
//!   `[unknown]` one (they make it a blank name).
//! - **Kinds.** The root frame is the command name with spaces as `_` (`comm-PID` or
//!   `comm-PID/TID` when asked, `?` for a PID the text does not show), [`FrameKind::Process`].
//!   A frame whose DSO is `(inlined)` is [`FrameKind::Inline`]; one whose DSO is a kernel's as
//!   stackcollapse-perf decides (`[...]` other than `[unknown]`, so `[kernel.kallsyms]`,
//!   `[vdso]`, `[nf_conntrack]`; `*.ko`; `vmlinux*`) is [`FrameKind::Kernel`]; the others are
//!   [`FrameKind::User`]. Modules are the DSO's file name.
//! - **Events.** One column per event name, in order of first appearance (the header's
//!   `# event :` lines first, then the samples).
//! - **Counts.** Each sample counts 1 in [`Count::samples`]; its [`Count::period`] is the
//!   period printed on its line, else its event's fixed `sample_period` from the header, else
//!   1 (so that the period is the sample count, as for a recording in frequency mode read
//!   without periods). Periods of one event must add up to at most `u64::MAX`.
//! - A sample without any frame counts for its root frame alone (stackcollapse-perf drops it).
//! - Errors name the source and line. Lines longer than [`MAX_LINE`] are refused, so no input
//!   makes the reader hold more than that beyond what the profile needs.

use std::collections::HashMap;
use std::io::{BufRead, Read};

use crate::profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile};
use crate::timed::{Thread, Timed, TimedSample};

mod detect;
mod line;
mod model;

pub use detect::{looks_like_perf_script, perf_script_without_event};
use line::*;
pub use model::{
    HeaderEvent, PerfScript, PerfScriptError, PerfScriptErrorKind, PerfScriptOptions, SchedArgs,
    ThreadEvent, MAX_EVENTS, MAX_LINE,
};

/// Reads `perf script` text (see the [module docs](self)) into a profile, with kernel frames
/// and `comm` roots. `source` names the input in errors.
pub fn read_perf_script(input: impl BufRead, source: &str) -> Result<Profile, PerfScriptError> {
    read_perf_script_with(input, source, PerfScriptOptions::default()).map(|s| s.profile)
}

/// One sample being read.
struct Open {
    line: usize,
    root: FrameId,
    event: usize,
    period: Option<u64>,
    /// Leaf first, as printed.
    frames: Vec<FrameId>,
    /// The header carried a frame of its own: the no-call-chain layout, where the next line
    /// indented by spaces is the next sample's padded header.
    inline_frame: bool,
    /// The sample's time, in nanoseconds.
    time: Option<u64>,
    /// The sample's thread in [`Reader::timed`]'s threads, when the reader keeps times.
    thread: u32,
    /// The thread id as printed (-1 when not shown).
    tid: i32,
    /// A scheduler tracepoint's arguments.
    sched: Option<SchedArgs>,
    /// The CPU, when shown.
    cpu: Option<u32>,
}

struct Reader<'k> {
    keep_time: &'k dyn Fn(u64) -> bool,
    span: Option<(u64, u64)>,
    left_out: u64,
    options: PerfScriptOptions,
    profile: Profile,
    header: Vec<Option<HeaderEvent>>,
    events: HashMap<String, usize>,
    totals: Vec<u64>,
    roots: HashMap<String, FrameId>,
    /// Frames by DSO and symbol as printed (see [`Reader::frame`]).
    frames: HashMap<String, FrameId>,
    /// The same for `java` processes, whose names are tidied differently.
    java_frames: HashMap<String, FrameId>,
    key: String,
    stack: Vec<FrameId>,
    samples: u64,
    /// Each sample's time, thread, stack and weight, when asked for.
    timed: Option<Timed>,
    /// Threads of `timed` by (pid, tid) as printed (-1 for one the text does not show).
    threads: HashMap<(i32, i32), u32>,
    untimed: u64,
    thread_events: Vec<ThreadEvent>,
    outside_stacks: Vec<Vec<FrameId>>,
    /// A line or event that says the text has off-CPU data was seen.
    off_cpu_data: bool,
}

impl Reader<'_> {
    fn event(&mut self, name: &str) -> Result<usize, PerfScriptErrorKind> {
        if let Some(&i) = self.events.get(name) {
            return Ok(i);
        }
        let i = self.profile.events.len();
        // Every stack holds a count per event: without a bound, text naming a new event on
        // every line would need events × stacks counts (a 162 KB file took 304 MB).
        if i >= MAX_EVENTS {
            return Err(PerfScriptErrorKind::TooManyEvents);
        }
        self.profile.events.push(EventColumn {
            name: name.to_string(),
        });
        // Stacks already counted need a count for the new column.
        for stack in &mut self.profile.stacks {
            stack.counts.push(Count::default());
        }
        self.header.push(None);
        self.totals.push(0);
        self.events.insert(name.to_string(), i);
        Ok(i)
    }

    fn header_event(&mut self, event: HeaderEvent) -> Result<(), PerfScriptErrorKind> {
        let i = self.event(&event.name)?;
        if self.header[i].is_none() {
            self.header[i] = Some(event);
        }
        Ok(())
    }

    fn root(&mut self, header: &Header<'_>) -> FrameId {
        let comm = header.comm.replace(' ', "_");
        let name = if self.options.tid {
            format!("{comm}-{}/{}", header.pid.unwrap_or("?"), header.tid)
        } else if self.options.pid {
            format!("{comm}-{}", header.pid.unwrap_or("?"))
        } else {
            comm
        };
        if let Some(&id) = self.roots.get(&name) {
            return id;
        }
        let id = self.profile.intern(Frame {
            name: name.clone(),
            module: String::new(),
            kind: FrameKind::Process,
        });
        self.roots.insert(name, id);
        id
    }

    /// The index of the header's thread in `timed`'s threads (0 when times are not kept).
    fn thread(&mut self, header: &Header<'_>) -> u32 {
        let Some(timed) = self.timed.as_mut() else {
            return 0;
        };
        // perf prints -1 for an id it does not know; the text may not show one at all.
        let id = |s: Option<&str>| s.and_then(|s| s.parse::<i32>().ok()).unwrap_or(-1);
        let key = (id(header.pid), id(Some(header.tid)));
        *self.threads.entry(key).or_insert_with(|| {
            timed.threads.push(Thread {
                pid: key.0,
                tid: key.1,
                comm: header.comm.to_string(),
            });
            (timed.threads.len() - 1) as u32
        })
    }

    fn frame(&mut self, text: &ScriptFrame<'_>, java: bool) -> FrameId {
        let cache = if java {
            &mut self.java_frames
        } else {
            &mut self.frames
        };
        // The key is the DSO and symbol as printed, joined by a newline (which no line
        // holds), built in a reused buffer: a frame seen before costs no allocation.
        self.key.clear();
        self.key.push_str(text.dso);
        self.key.push('\n');
        self.key.push_str(text.symbol);
        if let Some(&id) = cache.get(self.key.as_str()) {
            return id;
        }
        let id = self.profile.intern(make_frame(text.symbol, text.dso, java));
        cache.insert(self.key.clone(), id);
        id
    }

    /// The profile stack of `open` into `stack`: its root, then its frames root first
    /// (kernel frames only when the options keep them).
    fn stack_of(&self, open: &Open, stack: &mut Vec<FrameId>) {
        stack.clear();
        stack.push(open.root);
        for &f in open.frames.iter().rev() {
            if !self.options.kernel && self.profile.frame(f).kind == FrameKind::Kernel {
                continue;
            }
            stack.push(f);
        }
    }

    fn finish(&mut self, open: Open) -> Result<(), (usize, PerfScriptErrorKind)> {
        let fixed = self.header[open.event]
            .as_ref()
            .and_then(|h| h.fixed_period);
        let period = open.period.or(fixed).unwrap_or(1);
        if let Some(t) = open.time {
            self.span = Some(self.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            if !(self.keep_time)(t) {
                self.left_out += 1;
                let name = &self.profile.events[open.event].name;
                let switch_out = name == "sched:sched_switch"
                    || matches!(
                        name.split(':').next().unwrap_or(""),
                        "context-switches" | "cs"
                    );
                let outside = switch_out.then(|| {
                    let mut stack = Vec::new();
                    self.stack_of(&open, &mut stack);
                    self.outside_stacks.push(stack);
                    (self.outside_stacks.len() - 1) as u32
                });
                self.thread_events.push(ThreadEvent::Sample {
                    time: t,
                    tid: open.tid,
                    column: open.event as u32,
                    period,
                    stack: None,
                    sched: open.sched,
                    cpu: open.cpu,
                    outside,
                });
                return Ok(());
            }
        }
        let total = &mut self.totals[open.event];
        *total = total.checked_add(period).ok_or_else(|| {
            (
                open.line,
                PerfScriptErrorKind::TotalTooLarge {
                    event: self.profile.events[open.event].name.clone(),
                },
            )
        })?;
        let mut stack = std::mem::take(&mut self.stack);
        self.stack_of(&open, &mut stack);
        let index = self
            .profile
            .add(&stack, open.event, Count { samples: 1, period });
        self.stack = stack;
        self.samples += 1;
        if let Some(time) = open.time {
            self.thread_events.push(ThreadEvent::Sample {
                time,
                tid: open.tid,
                column: open.event as u32,
                period,
                stack: Some(index as u32),
                sched: open.sched,
                cpu: open.cpu,
                outside: None,
            });
        }
        if let Some(timed) = self.timed.as_mut() {
            match open.time {
                Some(time) => timed.samples.push(TimedSample {
                    time,
                    thread: open.thread,
                    stack: index as u32,
                    column: open.event as u32,
                    period,
                }),
                None => self.untimed += 1,
            }
        }
        Ok(())
    }
}

/// Reads `perf script` text with `options`; the profile and what the header said about each
/// event (for choosing roles by encoding).
pub fn read_perf_script_with(
    input: impl BufRead,
    source: &str,
    options: PerfScriptOptions,
) -> Result<PerfScript, PerfScriptError> {
    read_perf_script_in(input, source, options, &|_| true)
}

/// [`read_perf_script_with`] of the samples whose time (in nanoseconds) `keep_time` keeps
/// (`--time`); samples printed without a time are kept. Unlike [`read_perf_script_with`],
/// a text whose samples are all left out is not an error: [`PerfScript::samples`] is 0.
pub fn read_perf_script_in(
    input: impl BufRead,
    source: &str,
    options: PerfScriptOptions,
    keep_time: &dyn Fn(u64) -> bool,
) -> Result<PerfScript, PerfScriptError> {
    read(input, source, options, keep_time, false)
}

/// [`read_perf_script_in`] that also keeps every sample it reads into the profile with its
/// time, thread and weight ([`PerfScript::timed`]), in the same pass: the table's sums are
/// the profile's counts exactly, but for the samples printed without a time
/// ([`PerfScript::untimed`]). Threads are (pid, tid) as printed, -1 for an id the text
/// does not show (perf script's default fields show the tid only), named by the comm of
/// their first sample.
pub fn read_perf_script_timed(
    input: impl BufRead,
    source: &str,
    options: PerfScriptOptions,
    keep_time: &dyn Fn(u64) -> bool,
) -> Result<PerfScript, PerfScriptError> {
    read(input, source, options, keep_time, true)
}

fn read(
    mut input: impl BufRead,
    source: &str,
    options: PerfScriptOptions,
    keep_time: &dyn Fn(u64) -> bool,
    timed: bool,
) -> Result<PerfScript, PerfScriptError> {
    let err = |line: usize, kind: PerfScriptErrorKind| PerfScriptError {
        source: source.to_string(),
        line,
        kind,
    };
    let mut r = Reader {
        keep_time,
        span: None,
        left_out: 0,
        options,
        profile: Profile::default(),
        header: Vec::new(),
        events: HashMap::new(),
        totals: Vec::new(),
        roots: HashMap::new(),
        frames: HashMap::new(),
        java_frames: HashMap::new(),
        key: String::new(),
        stack: Vec::new(),
        samples: 0,
        timed: timed.then(Timed::default),
        threads: HashMap::new(),
        untimed: 0,
        thread_events: Vec::new(),
        outside_stacks: Vec::new(),
        off_cpu_data: false,
    };
    let mut open: Option<Open> = None;
    let mut arch = None;
    let mut buf: Vec<u8> = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let read = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(line_no + 1, PerfScriptErrorKind::Io(e)))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        if buf.len() > MAX_LINE {
            return Err(err(line_no, PerfScriptErrorKind::LineTooLong));
        }
        // Symbols are whatever bytes the binaries held: read them as inferno does, with
        // invalid UTF-8 replaced rather than refused.
        let text = String::from_utf8_lossy(&buf);
        let line = text.trim_end_matches(['\n', '\r']);
        if line.starts_with('#') {
            if let Some(event) = parse_header_event(line) {
                r.header_event(event).map_err(|k| err(line_no, k))?;
            } else if let Some(a) = line.strip_prefix("# arch : ") {
                arch.get_or_insert_with(|| a.trim().to_string());
            }
            continue;
        }
        if line.trim().is_empty() {
            if let Some(o) = open.take() {
                r.finish(o).map_err(|(l, k)| err(l, k))?;
            }
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let frame_expected = open.as_ref().is_some_and(|o| !o.inline_frame);
        // A tab always starts a frame; spaces start one inside a sample with a call chain,
        // and otherwise start a padded header (`perf script` without a call chain). Inside a
        // sample with a call chain, a line without indentation is a frame too when it has a
        // frame's form with its DSO (`4005d6 main (/tmp/app)`) and is not a sample header:
        // stackcollapse-perf reads a line as a frame whatever its indentation once the
        // header patterns have failed, and inferno reads every line up to the blank one
        // after a header as a frame, its indentation trimmed.
        let unindented_frame = !indented
            && frame_expected
            && parse_frame(line).is_some_and(|f| !f.dso.is_empty())
            && !is_side_band(line)
            && parse_header(line).is_err();
        // A side-band line printed with padded fields (`-F` without a call chain) is not a
        // frame of the sample before it.
        if line.starts_with('\t')
            || (indented && frame_expected && parse_frame(line).is_some() && !is_side_band(line))
            || unindented_frame
        {
            let Some(o) = open.as_mut() else {
                return Err(err(line_no, PerfScriptErrorKind::FrameOutsideSample));
            };
            let frame =
                parse_frame(line).ok_or_else(|| err(line_no, PerfScriptErrorKind::NotAFrame))?;
            let java = r.profile.frame(o.root).name.starts_with("java");
            o.frames.push(r.frame(&frame, java));
            continue;
        }
        if let Some(o) = open
            .as_mut()
            .filter(|_| indented && parse_header(line).is_err() && !is_side_band(line))
        {
            // Per-frame extras of `-F +srcline` (`  threads.c:71`) and the like: skipped, as
            // inferno and stackcollapse-perf skip lines they do not understand in a stack.
            // With srcline perf moves an inlined frame's `(inlined)` to the end of this line.
            if line.trim_end().ends_with(" (inlined)") {
                if let Some(last) = o.frames.last_mut() {
                    let f = r.profile.frame(*last);
                    if f.kind == FrameKind::User && f.module.is_empty() {
                        let inlined = Frame {
                            name: f.name.clone(),
                            module: String::new(),
                            kind: FrameKind::Inline,
                        };
                        *last = r.profile.intern(inlined);
                    }
                }
            }
            continue;
        }
        if let Some(o) = open.take() {
            r.finish(o).map_err(|(l, k)| err(l, k))?;
        }
        if is_side_band(line) {
            // `--show-mmap-events` and friends: not samples. Switches, forks, comms and
            // exits are kept for the wall-time plan.
            if let Some(mut event) = parse_side_band(line) {
                match &mut event {
                    ThreadEvent::Switch { root, .. } => {
                        // The thread's root frame, as its samples' headers would give it.
                        *root = side_band_header(line).map(|h| r.root(&h));
                    }
                    ThreadEvent::Start {
                        root, fork: false, ..
                    } => {
                        // A COMM line's header is the thread's own, but for perf's records
                        // of threads that existed before it (at time 0, header tid 0): the
                        // ids in `COMM:PID/TID`.
                        *root = side_band_header(line).map(|h| {
                            let ids = line
                                .split_whitespace()
                                .last()
                                .and_then(|l| l.rsplit_once(':'))
                                .and_then(|(_, ids)| ids.split_once('/'));
                            match ids {
                                Some((pid, tid)) => r.root(&Header {
                                    pid: Some(pid),
                                    tid,
                                    ..h
                                }),
                                None => r.root(&h),
                            }
                        });
                    }
                    ThreadEvent::Start {
                        root, fork: true, ..
                    } => {
                        // A FORK line's header is the parent's: the child has its comm, and
                        // the ids in `PERF_RECORD_FORK(PID:TID)`.
                        *root = side_band_header(line).and_then(|h| {
                            let ids = line.split_once("PERF_RECORD_FORK(")?.1;
                            let (pid, tid) = ids.split_once(')')?.0.split_once(':')?;
                            Some(r.root(&Header {
                                pid: Some(pid),
                                tid,
                                ..h
                            }))
                        });
                    }
                    _ => {}
                }
                r.off_cpu_data |= matches!(event, ThreadEvent::Switch { .. });
                r.thread_events.push(event);
            }
            continue;
        }
        let header = parse_header(line).map_err(|k| err(line_no, k))?;
        let event = r.event(header.event).map_err(|k| err(line_no, k))?;
        let root = r.root(&header);
        let thread = r.thread(&header);
        let sched = sched_args(header.event, header.rest.unwrap_or(""));
        r.off_cpu_data |= sched.is_some()
            || matches!(
                header.event.split(':').next().unwrap_or(""),
                "offcpu-time" | "context-switches" | "cs"
            );
        let mut o = Open {
            line: line_no,
            root,
            event,
            period: header.period,
            frames: Vec::new(),
            inline_frame: false,
            time: header.time,
            thread,
            tid: header.tid.parse().unwrap_or(-1),
            sched,
            cpu: header.cpu,
        };
        if let Some(frame) = header.rest.and_then(parse_frame) {
            let java = r.profile.frame(root).name.starts_with("java");
            o.frames.push(r.frame(&frame, java));
            o.inline_frame = true;
        }
        open = Some(o);
    }
    if let Some(o) = open.take() {
        r.finish(o).map_err(|(l, k)| err(l, k))?;
    }
    if r.samples == 0 && r.left_out == 0 {
        return Err(err(0, PerfScriptErrorKind::NoSamples));
    }
    let mut timed = r.timed;
    if let Some(t) = timed.as_mut() {
        // perf script prints samples in time order; text put together otherwise is sorted
        // (stably: a group's entries keep their order).
        t.samples.sort_by_key(|s| s.time);
    }
    let mut thread_events = r.thread_events;
    if r.off_cpu_data {
        thread_events.sort_by_key(ThreadEvent::time);
    } else {
        thread_events = Vec::new();
    }
    Ok(PerfScript {
        thread_events,
        outside_stacks: r.outside_stacks,
        timed,
        untimed: r.untimed,
        profile: r.profile,
        header: r.header,
        arch,
        span: r.span,
        samples: r.samples,
        left_out: r.left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(line: &str) -> Header<'_> {
        parse_header(line).unwrap()
    }

    #[test]
    fn header_layouts() {
        let h = header("sh 10452  2129.247684:    5000000  cpu-clock: ");
        assert_eq!(
            (h.comm, h.pid, h.tid, h.period, h.event, h.rest),
            ("sh", None, "10452", Some(5000000), "cpu-clock", None)
        );
        let h = header("V8 WorkerThread 24636/25607 [000] 94564.109216: cycles:u: ");
        assert_eq!(
            (h.comm, h.pid, h.tid, h.period, h.event),
            ("V8 WorkerThread", Some("24636"), "25607", None, "cycles:u")
        );
        let h = header("sh 10452  cpu-clock: ");
        assert_eq!((h.comm, h.tid, h.event), ("sh", "10452", "cpu-clock"));
        let h = header("kworker/0:1 77 [1] 5.5: sched:sched_switch: prev_comm=x prev_pid=1");
        assert_eq!((h.comm, h.event), ("kworker/0:1", "sched:sched_switch"));
        assert_eq!(h.rest, Some("prev_comm=x prev_pid=1"));
        let h = header(
            "   cpu_mem_bound 23621/23621  1017.255019153: cpu-clock:      559b817d825d memory_bound+0x1d (/tmp/x)",
        );
        assert_eq!(h.comm, "cpu_mem_bound");
        assert_eq!(
            parse_frame(h.rest.unwrap()),
            Some(ScriptFrame {
                symbol: "memory_bound+0x1d",
                dso: "/tmp/x"
            })
        );
        let h = header("worker 2 123/124 1.5: 10 cpu-clock:");
        assert_eq!((h.comm, h.tid, h.period), ("worker 2", "124", Some(10)));
        assert!(matches!(
            parse_header("demo;main;f 12"),
            Err(PerfScriptErrorKind::NotAHeader)
        ));
        assert!(matches!(
            parse_header("   cpu-clock: "),
            Err(PerfScriptErrorKind::NoCommand)
        ));
    }

    #[test]
    fn names_as_inferno_makes_them() {
        let f = make_frame("foo+0x1c", "/usr/lib/libfoo.so", false);
        assert_eq!((f.name.as_str(), f.module.as_str()), ("foo", "libfoo.so"));
        assert_eq!(
            make_frame("[unknown]", "/usr/bin/dash", false).name,
            "[dash]"
        );
        assert_eq!(
            make_frame("[unknown]", "[unknown]", false).name,
            "[unknown]"
        );
        let k = make_frame("[unknown]", "[kernel.kallsyms]", false);
        assert_eq!(
            (k.name.as_str(), k.kind),
            ("[[kernel.kallsyms]]", FrameKind::Kernel)
        );
        assert_eq!(make_frame("f(int, char)", "x", false).name, "f");
        assert_eq!(
            make_frame("(anonymous namespace)::g()", "x", false).name,
            "(anonymous namespace)::g"
        );
        assert_eq!(
            make_frame("main::{lambda(unsigned long)#1}::operator()", "x", false).name,
            "main::{lambda(unsigned long)#1}::operator"
        );
        assert_eq!(
            make_frame("net/http.(*Client).Do", "x", false).name,
            "net/http.(*Client).Do"
        );
        assert_eq!(make_frame("a;b", "x", false).name, "a:b");
        assert_eq!(
            make_frame(
                "_$LT$std..fs..ReadDir$u20$as$u20$core..iter..Iterator$GT$::next::hc14f1750ca79129b",
                "x",
                false
            )
            .name,
            "<std::fs::ReadDir as core::iter::Iterator>::next"
        );
        assert_eq!(
            make_frame("Ljava/lang/Foo;::bar", "x", true).name,
            "java/lang/Foo:::bar"
        );
        assert_eq!(make_frame("inl", "inlined", false).kind, FrameKind::Inline);
        assert_eq!(
            make_frame("x", "/lib/modules/a/b.ko", false).kind,
            FrameKind::Kernel
        );
        assert_eq!(make_frame("", "/bin/x", false).name, "[x]");
    }

    #[test]
    fn header_events() {
        let e = parse_header_event(
            "# event : name = task-clock, , id = { 11750, 11751 }, type = 1, size = 128, config = 0x1, { sample_period, sample_freq } = 200, sample_type = IP|TID, freq = 1, sample_id_all = 1",
        )
        .unwrap();
        assert_eq!(
            e,
            HeaderEvent {
                name: "task-clock".into(),
                type_: 1,
                config: 1,
                fixed_period: None
            }
        );
        let e = parse_header_event(
            "# event : name = cpu/event=0x3c,umask=0x0/, , id = { 1 }, type = 4 (cpu), size = 136, config = 0x3c, { sample_period, sample_freq } = 100003, sample_type = IP|TID",
        )
        .unwrap();
        assert_eq!(e.name, "cpu/event=0x3c,umask=0x0/");
        assert_eq!((e.type_, e.config, e.fixed_period), (4, 0x3c, Some(100003)));
        let e = parse_header_event(
            "# event : name = cycles, , id = { 5 }, type = 0 (PERF_TYPE_HARDWARE), size = 136, config = 0, { sample_period, sample_freq } = 4000, freq = 1",
        )
        .unwrap();
        assert_eq!((e.type_, e.config, e.fixed_period), (0, 0, None));
        assert_eq!(parse_header_event("# hostname : vm"), None);
    }

    /// The timed reader keeps every sample it adds to the profile, with its time, thread
    /// and weight: per stack and column the table sums to the profile's counts; samples left
    /// out by time are in neither, and samples without a time are counted, not kept.
    #[test]
    fn timed_samples_sum_to_the_profile() {
        let text = "# event : name = cycles, , id = { 1 }, type = 0, size = 136, { sample_period, sample_freq } = 1000\n\
            app 10/11 1.000001: cycles: \n\t 1 f (/bin/app)\n\t 2 main (/bin/app)\n\n\
            app 10/12 1.5: 7 task-clock: \n\t 2 main (/bin/app)\n\n\
            app 10/11 2.000000001: cycles: \n\t 1 f (/bin/app)\n\t 2 main (/bin/app)\n\n\
            app 10/11 0.9: cycles: \n\t 2 main (/bin/app)\n\n";
        let keep = |t: u64| t >= 1_000_000_000;
        let s = read_perf_script_timed(text.as_bytes(), "t", PerfScriptOptions::default(), &keep)
            .unwrap();
        let timed = s.timed.unwrap();
        assert_eq!((s.samples, s.left_out, s.untimed), (3, 1, 0));
        let times: Vec<u64> = timed.samples.iter().map(|t| t.time).collect();
        assert_eq!(times, [1_000_001_000, 1_500_000_000, 2_000_000_001]);
        let threads: Vec<(i32, i32, &str)> = timed
            .threads
            .iter()
            .map(|t| (t.pid, t.tid, t.comm.as_str()))
            .collect();
        assert_eq!(threads, [(10, 11, "app"), (10, 12, "app")]);
        let mut sums = vec![vec![Count::default(); s.profile.events.len()]; s.profile.stacks.len()];
        for t in &timed.samples {
            sums[t.stack as usize][t.column as usize].add(Count {
                samples: 1,
                period: t.period,
            });
        }
        let counts: Vec<Vec<Count>> = s.profile.stacks.iter().map(|s| s.counts.clone()).collect();
        assert_eq!(sums, counts);
        assert_eq!(timed.samples[0].period, 1000);
        assert_eq!(timed.samples[1].period, 7);

        let untimed = "app 11 cycles: \n\t 1 f (/bin/app)\n\n";
        let s = read_perf_script_timed(
            untimed.as_bytes(),
            "t",
            PerfScriptOptions::default(),
            &|_| true,
        )
        .unwrap();
        assert_eq!((s.samples, s.untimed), (1, 1));
        let timed = s.timed.unwrap();
        assert!(timed.samples.is_empty());
        assert_eq!((timed.threads[0].pid, timed.threads[0].tid), (-1, 11));
        assert!(
            read_perf_script_with(untimed.as_bytes(), "t", PerfScriptOptions::default())
                .unwrap()
                .timed
                .is_none()
        );
    }

    /// perf's `-F comm,tid,ip,sym` and `-F comm,tid,time,ip,sym` (real output, perf 6.1):
    /// named; with the event, or as folded stacks, not.
    #[test]
    fn perf_script_without_its_event_field() {
        let no_event = "sh  1456 \n\t           1462a handle_amd\n\t               0 [unknown]\n";
        assert_eq!(
            perf_script_without_event(no_event.as_bytes()),
            Some("sh  1456")
        );
        let timed = "# comment\n\nsh  1456  1295.260481: \n\tffffffff815a3303 filemap_map_pages\n";
        assert_eq!(
            perf_script_without_event(timed.as_bytes()),
            Some("sh  1456  1295.260481:")
        );
        let comm_with_space =
            "kworker/0:1 H  17/17 [000] \n\t ffffffff81000c82 x ([kernel.kallsyms])\n";
        assert_eq!(
            perf_script_without_event(comm_with_space.as_bytes()),
            Some("kworker/0:1 H  17/17 [000]")
        );
        for other in [
            "sh  1456 cpu-clock: \n\t           1462a handle_amd\n",
            "sh;main 1456\nsh;work 3\n",
            "sh  1456 \n",
            "sh  1456 extra\n\t 1462a handle_amd\n",
            "",
        ] {
            assert_eq!(
                perf_script_without_event(other.as_bytes()),
                None,
                "{other:?}"
            );
        }
    }
}

#[cfg(test)]
mod thread_event_tests {
    use super::*;

    #[test]
    fn switch_and_task_lines_are_read_with_and_without_padded_fields() {
        let out = "compute 10979 14948.167811: PERF_RECORD_SWITCH OUT preempt";
        assert_eq!(
            parse_side_band(out),
            Some(ThreadEvent::Switch {
                time: 14_948_167_811_000,
                tid: 10979,
                out: true,
                preempt: true,
                root: None,
            })
        );
        let wide = "  offcpu  6567/6577  [001] 1.000000001: PERF_RECORD_SWITCH_CPU_WIDE IN  prev pid/tid:  6567/6567";
        assert_eq!(
            parse_side_band(wide),
            Some(ThreadEvent::Switch {
                time: 1_000_000_001,
                tid: 6577,
                out: false,
                preempt: false,
                root: None,
            })
        );
        let fork = "offcpu 10977 2.5: PERF_RECORD_FORK(10977:10979):(10977:10977)";
        assert_eq!(
            parse_side_band(fork),
            Some(ThreadEvent::Start {
                time: 2_500_000_000,
                tid: 10979,
                fork: true,
                root: None,
            })
        );
        let exit = "reader 10889 3.0: PERF_RECORD_EXIT(10884:10889):(10880:10880)";
        assert_eq!(
            parse_side_band(exit),
            Some(ThreadEvent::Exit {
                time: 3_000_000_000,
                tid: 10889
            })
        );
        let comm = "compute 6577 4.0: PERF_RECORD_COMM: compute:6567/6577";
        assert_eq!(
            parse_side_band(comm),
            Some(ThreadEvent::Start {
                time: 4_000_000_000,
                tid: 6577,
                fork: false,
                root: None,
            })
        );
        // perf's synthesized records of threads alive before it started: kept at time 0
        // (the wall plan takes no start from them); a switch at time 0 is not.
        assert_eq!(
            parse_side_band("perf-exec 0 0.000000: PERF_RECORD_COMM: perf-exec:1/1"),
            Some(ThreadEvent::Start {
                time: 0,
                tid: 1,
                fork: false,
                root: None,
            })
        );
        assert_eq!(
            parse_side_band("a 1/1 0.000000: PERF_RECORD_SWITCH OUT preempt"),
            None
        );
        assert_eq!(
            parse_side_band("a 1 1.0: PERF_RECORD_MMAP2 1/1: [0x1(0x2) @ 0 00:00 0 0]: r-xp /x"),
            None
        );
    }

    #[test]
    fn sched_arguments_in_both_printed_forms() {
        let kv = "prev_comm=a b prev_pid=7 prev_prio=120 prev_state=R+ ==> next_comm=c next_pid=9 next_prio=120";
        assert_eq!(
            sched_args("sched:sched_switch", kv),
            Some(SchedArgs::Switch {
                prev_pid: Some(7),
                next_pid: Some(9),
                runnable: Some(true)
            })
        );
        let plugin = "a b:7 [120] S ==> swapper/0:0 [120]";
        assert_eq!(
            sched_args("sched:sched_switch", plugin),
            Some(SchedArgs::Switch {
                prev_pid: Some(7),
                next_pid: Some(0),
                runnable: Some(false)
            })
        );
        assert_eq!(
            sched_args(
                "sched:sched_waking",
                "comm=rcu_preempt pid=15 prio=120 target_cpu=000"
            ),
            Some(SchedArgs::Wakeup { pid: Some(15) })
        );
        assert_eq!(sched_args("cpu-clock", "prev_pid=1"), None);
    }
}
