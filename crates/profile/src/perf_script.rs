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
use std::fmt;
use std::io::{self, BufRead, Read};

use crate::profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile};
use crate::timed::{Thread, Timed, TimedSample};

/// The most distinct event names a text may have (perf records a handful).
pub const MAX_EVENTS: usize = 256;

/// The longest line read (1 MiB): far more than any symbol perf prints.
pub const MAX_LINE: usize = 1 << 20;

/// What is wrong with a `perf script` text; see [`PerfScriptError`] for where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerfScriptErrorKind {
    /// Reading the input failed.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    /// A line longer than [`MAX_LINE`].
    #[error("line longer than {} bytes", MAX_LINE)]
    LineTooLong,
    /// A line that is neither a frame, a blank line, a comment nor a sample header.
    #[error("not a sample header (expected \"COMM PID/TID [CPU] TIME: [PERIOD] EVENT:\")")]
    NotAHeader,
    /// A header line with nothing before its pid (or event): no command name for the root.
    #[error("sample header without a command name")]
    NoCommand,
    /// A frame line before the first sample header.
    #[error("frame line outside a sample")]
    FrameOutsideSample,
    /// An indented line in a sample that does not start with a hexadecimal address.
    #[error("not a frame (expected \"ADDRESS SYMBOL (DSO)\")")]
    NotAFrame,
    /// A period larger than `u64::MAX`.
    #[error("period {found} does not fit in 64 bits")]
    PeriodTooLarge { found: String },
    /// The periods of one event, summed over the text so far, exceed `u64::MAX`.
    #[error("the periods of event {event} add up to more than 64 bits")]
    TotalTooLarge { event: String },
    /// The text has no sample at all.
    #[error("no samples")]
    NoSamples,
    /// More distinct event names than [`MAX_EVENTS`].
    #[error("more than {} distinct events", MAX_EVENTS)]
    TooManyEvents,
}

/// An error reading `perf script` text: which input (`source`, the name given to
/// [`read_perf_script`]), which line (1-based; 0 for the whole input) and what is wrong.
///
/// Displays as `SOURCE: line N: WHAT`, or `SOURCE: WHAT` for line 0.
#[derive(Debug)]
pub struct PerfScriptError {
    pub source: String,
    pub line: usize,
    pub kind: PerfScriptErrorKind,
}

impl fmt::Display for PerfScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source, self.kind)
        } else {
            write!(f, "{}: line {}: {}", self.source, self.line, self.kind)
        }
    }
}

impl std::error::Error for PerfScriptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            PerfScriptErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// How to build stacks, as `stackcollapse-perf --pid/--tid` and `cpiflame fold --no-kernel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfScriptOptions {
    /// Root frame `comm-PID`.
    pub pid: bool,
    /// Root frame `comm-PID/TID`.
    pub tid: bool,
    /// Keep kernel frames.
    pub kernel: bool,
}

impl Default for PerfScriptOptions {
    fn default() -> Self {
        PerfScriptOptions {
            pid: false,
            tid: false,
            kernel: true,
        }
    }
}

/// What a `# event :` line of `perf script --header` says about one event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeaderEvent {
    pub name: String,
    /// `type` (perf leaves it out when 0, PERF_TYPE_HARDWARE).
    pub type_: u32,
    /// `config` (perf leaves it out when 0).
    pub config: u64,
    /// `sample_period` when the event was sampled with a fixed period (no `freq = 1`).
    pub fixed_period: Option<u64>,
}

/// A `perf script` text read: the profile (one column per event) and, for each column, what
/// the header said about the event, if it said anything.
#[derive(Debug)]
pub struct PerfScript {
    pub profile: Profile,
    /// One entry per event column of `profile`.
    pub header: Vec<Option<HeaderEvent>>,
    /// The recording machine's architecture (`# arch : x86_64`), when the header gives it.
    pub arch: Option<String>,
    /// The first and last sample time printed (nanoseconds; microseconds as perf script
    /// prints them by default, times 1000), `None` when no sample header has a time.
    pub span: Option<(u64, u64)>,
    /// Samples read into `profile`, and samples left out by [`read_perf_script_in`]'s
    /// `keep_time`.
    pub samples: u64,
    pub left_out: u64,
    /// With [`read_perf_script_timed`], every sample read into `profile` as a
    /// [`TimedSample`] (its stack an index into `profile.stacks` as they are now, before any
    /// [`Profile::sort`]), in time order; `None` from the other readers.
    pub timed: Option<Timed>,
    /// With [`read_perf_script_timed`], the samples read into `profile` whose header has no
    /// time (text printed without perf script's `time` field): they are not in `timed`.
    pub untimed: u64,
    /// What the text says about when its threads ran, in time order, for the wall-time plan
    /// (`cpiflame_pipeline`'s `offcpu`): every timed sample (those `keep_time` left out of
    /// `profile` too, without a stack), the `--show-switch-events` and `--show-task-events`
    /// lines. Empty when the text has no sign of off-CPU data (no scheduler tracepoint,
    /// switch line, `context-switches` or `offcpu-time` sample).
    pub thread_events: Vec<ThreadEvent>,
    /// The stacks (root first, as `profile`'s would be) of switch-out samples
    /// (`sched:sched_switch`, `context-switches`) that `keep_time` left out of `profile`:
    /// an off-CPU interval that begins before `--time`'s ranges and lasts into them is put on
    /// its stack, as for perf.data ([`ThreadEvent::Sample`]'s `outside`).
    pub outside_stacks: Vec<Vec<FrameId>>,
}

/// What a sample of a scheduler tracepoint says, read from its printed arguments (the
/// fields perf.data's raw record holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedArgs {
    /// `sched:sched_switch`: `prev_pid`, `next_pid`, and whether `prev_state` is runnable
    /// (`R`, or old kernels' `R+` for a preempted task).
    Switch {
        prev_pid: Option<i32>,
        next_pid: Option<i32>,
        runnable: Option<bool>,
    },
    /// `sched:sched_wakeup` / `sched:sched_waking`: the woken thread (`pid`).
    Wakeup { pid: Option<i32> },
}

/// One timed line of a `perf script` text as the wall-time plan reads it: the same facts
/// perf.data's samples and PERF_RECORD_SWITCH / FORK / COMM / EXIT records carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadEvent {
    /// A sample of event `column`, thread `tid` (-1 when the text does not show it), its
    /// period as counted in the profile, its stack (an index into `profile.stacks` as read,
    /// before any [`Profile::sort`]; `None` when `keep_time` left it out), for a
    /// scheduler tracepoint its arguments, and its CPU when the text shows it.
    Sample {
        time: u64,
        tid: i32,
        column: u32,
        period: u64,
        stack: Option<u32>,
        sched: Option<SchedArgs>,
        cpu: Option<u32>,
        /// A switch-out sample `keep_time` left out: its stack in
        /// [`PerfScript::outside_stacks`].
        outside: Option<u32>,
    },
    /// `PERF_RECORD_SWITCH` / `PERF_RECORD_SWITCH_CPU_WIDE` `IN` or `OUT` (`preempt`: the
    /// task was still runnable) of thread `tid`; `root`: the root frame its line's header
    /// gives the thread (where its off-CPU time without a stack goes), when it reads.
    Switch {
        time: u64,
        tid: i32,
        out: bool,
        preempt: bool,
        root: Option<FrameId>,
    },
    /// `PERF_RECORD_FORK` (the new thread: `fork`) or `PERF_RECORD_COMM` of thread `tid`;
    /// `root`: the thread's root frame (its comm then, the fork's parent's for a fork), when
    /// the line reads.
    Start {
        time: u64,
        tid: i32,
        fork: bool,
        root: Option<FrameId>,
    },
    /// `PERF_RECORD_EXIT` of thread `tid`.
    Exit { time: u64, tid: i32 },
}

impl ThreadEvent {
    pub fn time(&self) -> u64 {
        match *self {
            ThreadEvent::Sample { time, .. }
            | ThreadEvent::Switch { time, .. }
            | ThreadEvent::Start { time, .. }
            | ThreadEvent::Exit { time, .. } => time,
        }
    }
}

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

/// A sample header line, parsed.
#[derive(Debug, PartialEq, Eq)]
struct Header<'a> {
    comm: &'a str,
    pid: Option<&'a str>,
    /// The thread id (or, with `-F pid` alone, the process id: the text cannot tell).
    tid: &'a str,
    /// The time in nanoseconds (`1234.567890:` is 1234567890000).
    time: Option<u64>,
    /// The CPU (`[003]`), when shown.
    cpu: Option<u32>,
    period: Option<u64>,
    event: &'a str,
    /// Text after the event, if any.
    rest: Option<&'a str>,
}

/// Whitespace-separated tokens with their byte offsets. Any Unicode whitespace separates, as
/// the comm before the first token is trimmed of it: a comm is never blank.
fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    line.char_indices()
        .chain(std::iter::once((line.len(), ' ')))
        .filter_map(move |(i, c)| {
            if c.is_whitespace() {
                start.take().map(|s| (s, &line[s..i]))
            } else {
                start.get_or_insert(i);
                None
            }
        })
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `PID/TID`, `TID` or `PID` (perf prints -1 for an unknown one).
fn pid_tid(tok: &str) -> Option<(Option<&str>, &str)> {
    let id = |s: &str| all_digits(s.strip_prefix('-').unwrap_or(s));
    match tok.split_once('/') {
        Some((p, t)) if id(p) && id(t) => Some((Some(p), t)),
        Some(_) => None,
        None if id(tok) => Some((None, tok)),
        None => None,
    }
}

fn is_cpu(tok: &str) -> bool {
    tok.strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .is_some_and(all_digits)
}

fn is_time(tok: &str) -> bool {
    tok.strip_suffix(':')
        .and_then(|t| t.split_once('.'))
        .is_some_and(|(s, f)| all_digits(s) && all_digits(f))
}

/// A time token (`1234.567890:`, see [`is_time`]) in nanoseconds; `None` when it does not
/// fit (more than 9 decimals, or too large).
fn time_ns(tok: &str) -> Option<u64> {
    let (s, f) = tok.strip_suffix(':')?.split_once('.')?;
    if f.len() > 9 {
        return None;
    }
    let nanos: u64 = format!("{f:0<9}").parse().ok()?;
    s.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

/// A side-band event line of `--show-task-events`, `--show-mmap-events`, ...:
/// `threads 25775  2389.785204: PERF_RECORD_COMM exec: threads:25775/25775`.
fn is_side_band(line: &str) -> bool {
    tokens(line)
        .take(8)
        .any(|(_, t)| t.starts_with("PERF_RECORD_"))
}

/// The header of a side-band line, `COMM [PID/]TID [CPU] TIME: PERF_RECORD_...`, as far as a
/// root frame needs it (comm, pid, tid); `None` when it does not read so.
fn side_band_header(line: &str) -> Option<Header<'_>> {
    let toks: Vec<(usize, &str)> = tokens(line).take(16).collect();
    let at = toks
        .iter()
        .position(|(_, t)| t.starts_with("PERF_RECORD_"))?;
    // The thread: the last `PID/TID` or number before the time.
    let before_time = &toks[..at.checked_sub(1)?];
    let i = before_time
        .iter()
        .rposition(|(_, t)| pid_tid(t).is_some())?;
    let (pid, tid) = pid_tid(before_time[i].1)?;
    let comm = line[..before_time[i].0].trim();
    (!comm.is_empty()).then_some(Header {
        comm,
        pid,
        tid,
        time: None,
        cpu: None,
        period: None,
        event: toks[at].1,
        rest: None,
    })
}

/// The event a side-band line of `--show-switch-events` or `--show-task-events` stands for:
/// `COMM TID TIME: PERF_RECORD_SWITCH[_CPU_WIDE] IN|OUT [preempt] ...`,
/// `PERF_RECORD_FORK(PID:TID):(PPID:PTID)` (the new thread), `PERF_RECORD_EXIT(PID:TID):...`,
/// `PERF_RECORD_COMM[ exec]: COMM:PID/TID`; `None` for other lines, switch and exit lines
/// without a time and lines that do not read so. perf's synthesized FORK and COMM records of
/// threads that existed before it started are printed at time 0: they are kept at time 0
/// (the thread and its root are known from them; no start is taken from them, as perf.data's
/// plan takes none).
fn parse_side_band(line: &str) -> Option<ThreadEvent> {
    let toks: Vec<&str> = tokens(line).map(|(_, t)| t).take(16).collect();
    let at = toks.iter().position(|t| t.starts_with("PERF_RECORD_"))?;
    let time = time_ns(toks.get(at.checked_sub(1)?)?)?;
    let tid_of = |t: &str| pid_tid(t).and_then(|(_, tid)| tid.parse::<i32>().ok());
    let tid = toks[..at - 1].iter().rev().find_map(|t| tid_of(t));
    let record = toks[at];
    let after = &toks[at + 1..];
    let id_pair = |s: &str| -> Option<i32> {
        // `(PID:TID)` right after the record's name.
        let inner = s.split_once('(')?.1.split_once(')')?.0;
        inner.split_once(':')?.1.parse().ok()
    };
    // A switch or exit at time 0 is no fact; FORK and COMM lines at 0 are kept (the wall
    // plan knows the thread and its root from them, as perf.data's records, but takes no
    // start from them).
    if time == 0
        && !(record.starts_with("PERF_RECORD_FORK(") || record.starts_with("PERF_RECORD_COMM"))
    {
        return None;
    }
    match record {
        "PERF_RECORD_SWITCH" | "PERF_RECORD_SWITCH_CPU_WIDE" => {
            let out = match after.first() {
                Some(&"OUT") => true,
                Some(&"IN") => false,
                _ => return None,
            };
            Some(ThreadEvent::Switch {
                time,
                tid: tid?,
                out,
                preempt: out && after.get(1) == Some(&"preempt"),
                root: None,
            })
        }
        r if r.starts_with("PERF_RECORD_FORK(") => Some(ThreadEvent::Start {
            time,
            tid: id_pair(r)?,
            fork: true,
            root: None,
        }),
        r if r.starts_with("PERF_RECORD_EXIT(") => Some(ThreadEvent::Exit {
            time,
            tid: id_pair(r)?,
        }),
        "PERF_RECORD_COMM" | "PERF_RECORD_COMM:" => {
            // `COMM:PID/TID`, the last token (a comm may hold spaces and colons).
            let last = after.last()?;
            let ids = last.rsplit_once(':')?.1;
            Some(ThreadEvent::Start {
                time,
                tid: tid_of(ids)?,
                fork: false,
                root: None,
            })
        }
        _ => None,
    }
}

/// The arguments of a scheduler tracepoint sample that the wall-time plan reads, from the
/// text after its event name: perf's `key=value` form (`prev_comm=a prev_pid=1 prev_prio=120
/// prev_state=S ==> next_comm=b next_pid=2 next_prio=120`; `comm=a pid=1 prio=120
/// target_cpu=000`), and libtraceevent's sched plugin form of `sched_switch`
/// (`a:1 [120] S ==> b:2 [120]`).
fn sched_args(event: &str, rest: &str) -> Option<SchedArgs> {
    let field = |key: &str| {
        rest.split_whitespace()
            .find_map(|t| t.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
    };
    let int = |v: Option<&str>| v.and_then(|v| v.parse::<i32>().ok());
    // R, and R+ (old kernels: preempted, still on the run queue) are runnable.
    let runnable = |state: &str| state == "R" || state == "R+";
    match event {
        "sched:sched_switch" => {
            if field("prev_pid").is_some() || field("next_pid").is_some() {
                return Some(SchedArgs::Switch {
                    prev_pid: int(field("prev_pid")),
                    next_pid: int(field("next_pid")),
                    runnable: field("prev_state").map(runnable),
                });
            }
            let (prev, next) = rest.split_once("==>")?;
            let prev: Vec<&str> = prev.split_whitespace().collect();
            let id = |t: &str| t.rsplit_once(':').and_then(|(_, p)| p.parse::<i32>().ok());
            let [.., who, _prio, state] = prev[..] else {
                return None;
            };
            let next_pid = next.split_whitespace().next().and_then(id);
            Some(SchedArgs::Switch {
                prev_pid: id(who),
                next_pid,
                runnable: Some(runnable(state)),
            })
        }
        "sched:sched_wakeup" | "sched:sched_waking" => Some(SchedArgs::Wakeup {
            pid: int(field("pid")),
        }),
        _ => None,
    }
}

/// Parses a sample header; see the module docs for the fields.
fn parse_header(line: &str) -> Result<Header<'_>, PerfScriptErrorKind> {
    let toks: Vec<(usize, &str)> = tokens(line).take(64).collect();
    // The comm may hold spaces and numbers: try each place it could end, first first.
    for start in 1..toks.len() {
        if let Some(h) = fields_from(line, &toks, start)? {
            return Ok(h);
        }
    }
    if !toks.is_empty() && fields_from(line, &toks, 0)?.is_some() {
        return Err(PerfScriptErrorKind::NoCommand);
    }
    Err(PerfScriptErrorKind::NotAHeader)
}

/// The fields after a comm made of `toks[..start]`, if they read as a header.
fn fields_from<'a>(
    line: &'a str,
    toks: &[(usize, &'a str)],
    start: usize,
) -> Result<Option<Header<'a>>, PerfScriptErrorKind> {
    let mut i = start;
    let mut pid = None;
    let mut tid = "?";
    if let Some((p, t)) = toks.get(i).and_then(|&(_, t)| pid_tid(t)) {
        // A lone number right before the event is the period, not a pid, when a time
        // stands between: handled by trying the next shape below.
        pid = p;
        tid = t;
        i += 1;
    }
    let mut cpu = None;
    if let Some(&(_, t)) = toks.get(i).filter(|&&(_, t)| is_cpu(t)) {
        cpu = t[1..t.len() - 1].parse().ok();
        i += 1;
    }
    let mut time = None;
    if let Some(&(_, t)) = toks.get(i).filter(|&&(_, t)| is_time(t)) {
        time = time_ns(t);
        i += 1;
    }
    let mut period = None;
    if let Some(&(_, t)) = toks.get(i) {
        if all_digits(t) {
            period = Some(
                t.parse::<u64>()
                    .map_err(|_| PerfScriptErrorKind::PeriodTooLarge {
                        found: t.to_string(),
                    })?,
            );
            i += 1;
        }
    }
    let Some(&(at, event)) = toks.get(i) else {
        return Ok(None);
    };
    // A time belongs after the comm: a comm holding one means the fields were misread.
    if toks[..start].iter().any(|&(_, t)| is_time(t)) {
        return Ok(None);
    }
    let Some(event) = event.strip_suffix(':') else {
        return Ok(None);
    };
    // An event name is a word: not empty, not a time, not something else's field.
    if event.is_empty()
        || event.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || event.contains(['(', ')'])
    {
        return Ok(None);
    }
    // Empty only for start 0 (the caller refuses it): every token is non-blank.
    let comm = line[..toks[start].0].trim();
    let rest = line[at + event.len() + 1..].trim();
    Ok(Some(Header {
        comm,
        pid,
        tid,
        time,
        cpu,
        period,
        event,
        rest: (!rest.is_empty()).then_some(rest),
    }))
}

/// One frame as printed: `ADDR SYMBOL (DSO)`; `dso` is empty when the line has none.
#[derive(Debug, PartialEq, Eq)]
struct ScriptFrame<'a> {
    symbol: &'a str,
    dso: &'a str,
}

fn parse_frame(line: &str) -> Option<ScriptFrame<'_>> {
    let text = line.trim();
    let (addr, rest) = match text.split_once([' ', '\t']) {
        Some((a, r)) => (a, r.trim()),
        None => (text, ""),
    };
    let hex = addr.strip_prefix("0x").unwrap_or(addr);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match dso_group_start(rest) {
        Some(open) => Some(ScriptFrame {
            symbol: rest[..open].trim_end(),
            dso: &rest[open + 1..rest.len() - 1],
        }),
        None => Some(ScriptFrame {
            symbol: rest,
            dso: "",
        }),
    }
}

/// Byte offset of the `(` opening the parenthesised group that ends `s`, matching nested
/// parentheses (`(/tmp/x (deleted))`); it must start `s` or follow a space.
fn dso_group_start(s: &str) -> Option<usize> {
    if !s.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate().rev() {
        match b {
            b')' => depth += 1,
            b'(' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (i == 0 || s.as_bytes()[i - 1] == b' ').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A kernel DSO, as stackcollapse-perf and inferno decide it.
fn is_kernel_dso(dso: &str) -> bool {
    let vmlinux = dso.rfind("vmlinux").is_some_and(|i| {
        dso[i..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    });
    (dso.starts_with('[') || dso.ends_with(".ko") || vmlinux) && dso != "[unknown]"
}

/// A DSO of code compiled at run time, as inferno's perf collapser decides it for `_[j]`: a
/// perf map (`/tmp/perf-PID.map`, which stackcollapse-perf.pl's `--jit` also takes) or an
/// image `perf inject --jit` wrote (`.../jitted-PID-N.so`).
fn is_jit_dso(dso: &str) -> bool {
    (dso.starts_with("/tmp/perf-") && dso.ends_with(".map"))
        || (dso.contains("/jitted-") && dso.ends_with(".so"))
}

/// The named frame for a printed symbol and DSO (see the module docs for the rules).
fn make_frame(symbol: &str, dso: &str, java: bool) -> Frame {
    let mut name = strip_offset(symbol).trim();
    if name.is_empty() {
        name = "[unknown]";
    }
    let base = dso.rsplit('/').next().unwrap_or(dso);
    let mut name = if name == "[unknown]" && !dso.is_empty() && dso != "[unknown]" {
        format!("[{base}]")
    } else {
        let fixed = fix_rust_symbol(name);
        tidy_generic(&fixed)
    };
    if java && name.starts_with('L') && name.contains('/') {
        name.remove(0);
    }
    if name.is_empty() {
        // `(int)` tidied to nothing: keep a name the folded text can hold.
        name = "[unknown]".to_string();
    }
    let kind = if dso == "inlined" {
        FrameKind::Inline
    } else if is_kernel_dso(dso) {
        FrameKind::Kernel
    } else if is_jit_dso(dso) {
        FrameKind::Jit
    } else {
        FrameKind::User
    };
    Frame {
        name,
        module: if kind == FrameKind::Inline {
            String::new()
        } else {
            base.to_string()
        },
        kind,
    }
}

/// Removes perf's `+0xOFFSET` (`symoff`).
fn strip_offset(symbol: &str) -> &str {
    match symbol.rfind("+0x") {
        Some(at) if symbol[at + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => &symbol[..at],
        _ => symbol,
    }
}

/// Removes an argument list (`foo(int, char)` → `foo`) and turns `;` (the folded separator)
/// into `:`, as inferno's collapsers do: only a top-level `(`, and not Go's `.(` or C++'s
/// `(anonymous namespace)`.
fn tidy_generic(func: &str) -> String {
    let mut depth = 0i64;
    let mut last_dot = None;
    let mut end = func.len();
    for (i, c) in func.char_indices() {
        match c {
            '<' | '{' | '[' => depth += 1,
            '>' | '}' | ']' | ')' => depth -= 1,
            '(' => {
                if depth == 0
                    && last_dot != Some(i)
                    && !func[i..].starts_with("(anonymous namespace)")
                {
                    end = i;
                    break;
                }
                depth += 1;
            }
            '.' => last_dot = Some(i + 1),
            _ => {}
        }
    }
    func[..end].replace(';', ":")
}

/// A Rust legacy symbol perf left partly mangled (`foo..bar::h0123456789abcdef`): without
/// its hash, `..` as `::` and `$LT$`-style escapes decoded, as inferno does. Anything else
/// is returned as it is.
fn fix_rust_symbol(symbol: &str) -> std::borrow::Cow<'_, str> {
    const HASH: usize = 17;
    let b = symbol.as_bytes();
    if b.len() < HASH
        || b[b.len() - HASH] != b'h'
        || !b[b.len() - HASH + 1..].iter().all(u8::is_ascii_hexdigit)
    {
        return symbol.into();
    }
    let mut rest = &symbol[..symbol.len() - HASH];
    rest = rest.strip_suffix("::").unwrap_or(rest);
    if rest.starts_with("_$") {
        rest = &rest[1..];
    }
    const ESCAPES: [(&str, &str); 19] = [
        ("$SP$", "@"),
        ("$BP$", "*"),
        ("$RF$", "&"),
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$LP$", "("),
        ("$RP$", ")"),
        ("$C$", ","),
        ("$u7e$", "~"),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u3d$", "="),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u3b$", ";"),
        ("$u2b$", "+"),
        ("$u21$", "!"),
    ];
    let mut out = String::with_capacity(rest.len());
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("..") {
            out.push_str("::");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('.') {
            out.push('.');
            rest = r;
        } else if rest.starts_with('$') {
            let escape = ESCAPES
                .iter()
                .chain(&[("$u22$", "\"")])
                .find(|(from, _)| rest.starts_with(from));
            match escape {
                Some((from, to)) => {
                    out.push_str(to);
                    rest = &rest[from.len()..];
                }
                None => {
                    out.push_str(rest);
                    break;
                }
            }
        } else {
            let at = rest.find(['$', '.']).unwrap_or(rest.len());
            out.push_str(&rest[..at]);
            rest = &rest[at..];
        }
    }
    out.into()
}

/// Parses `# event : name = NAME, , id = { ... }, type = T (...), config = C, { sample_period,
/// sample_freq } = N, ..., freq = 1, ...`; `None` for other comment lines.
fn parse_header_event(line: &str) -> Option<HeaderEvent> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("event")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix("name = ")?;
    // The name may hold commas (`cpu/event=0x3c,umask=0/`): it ends where the next known
    // field starts.
    let end = [", id = ", ", , id = ", ", type = ", ", size = "]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
        .unwrap_or(rest.len());
    let name = rest[..end].trim().trim_end_matches(',').trim();
    if name.is_empty() {
        return None;
    }
    let mut event = HeaderEvent {
        name: name.to_string(),
        ..HeaderEvent::default()
    };
    let mut period = None;
    let mut freq = false;
    // The other fields, split at the commas outside braces (`id = { 1, 2 }`,
    // `{ sample_period, sample_freq } = 4000`).
    let mut depth = 0i32;
    let mut from = 0;
    let fields = &rest[end..];
    let mut items = Vec::new();
    for (i, c) in fields.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&fields[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items.push(&fields[from..]);
    let number = |v: &str| -> Option<u64> {
        let v = v.split_whitespace().next()?;
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    };
    for item in items {
        let Some((key, value)) = item.split_once(" = ") else {
            continue;
        };
        match key.trim() {
            "type" => event.type_ = number(value).and_then(|v| u32::try_from(v).ok())?,
            "config" => event.config = number(value)?,
            "{ sample_period, sample_freq }" | "sample_period" => period = number(value),
            "freq" => freq = number(value).is_some_and(|v| v != 0),
            _ => {}
        }
    }
    event.fixed_period = if freq {
        None
    } else {
        period.filter(|&p| p > 0)
    };
    Some(event)
}

/// The first sample line of `perf script` text printed without the event field (`-F
/// comm,tid,ip,sym`: `sh  1456`, optionally with `[CPU]` and a time, then tab-indented
/// frames), which the reader does not take: without the event a sample line cannot be told
/// from a frame or a folded line (`sh 1456` reads as a stack with its count). `None` for
/// anything else, perf script text that has its event included.
pub fn perf_script_without_event(first_bytes: &[u8]) -> Option<&str> {
    let text = match std::str::from_utf8(first_bytes) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&first_bytes[..e.valid_up_to()]).ok()?,
    };
    let mut lines = text
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .skip_while(|l| l.starts_with('#') || l.trim().is_empty());
    let (header, next) = (lines.next()?, lines.next()?);
    if !next.starts_with('\t') || parse_frame(next).is_none() || parse_header(header).is_ok() {
        return None;
    }
    // COMM (one or more words), then PID/TID or TID, [CPU] and a time if there, and no more.
    let toks: Vec<&str> = tokens(header).take(64).map(|(_, t)| t).collect();
    let fields = |rest: &[&str]| {
        let mut rest = rest.iter().peekable();
        let id = rest.next().is_some_and(|t| pid_tid(t).is_some());
        rest.next_if(|t| is_cpu(t));
        rest.next_if(|t| is_time(t));
        id && rest.next().is_none()
    };
    (1..toks.len())
        .any(|start| fields(&toks[start..]))
        .then_some(header.trim())
}

/// A cheap guess, from the first bytes of a file (a few KiB), whether it is `perf script`
/// text: the `perf script` half of `cpiflame_perf_data::InputKind::detect`, which decides an
/// input's kind (magic numbers first) and is what readers are chosen by.
///
/// True when the first line that is not blank or a comment is a complete sample header
/// (`COMM PID/TID TIME: EVENT:` in any of the layouts the reader takes), and the line after
/// it, when the bytes hold it, is a frame, a blank line or another header. When the bytes
/// hold only comments, true when they are `perf script --header`'s (`# ========`,
/// `# event : `); side-band lines (`PERF_RECORD_MMAP`, ...) are passed over, and fill the
/// bytes only in `perf script` text. False for empty input, binary data (perf.data's header
/// holds NUL bytes) and folded text.
pub fn looks_like_perf_script(first_bytes: &[u8]) -> bool {
    let text = match std::str::from_utf8(first_bytes) {
        Ok(t) => t,
        // A character cut off at the end is fine; a symbol with bad bytes is not worth
        // guessing over here.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&first_bytes[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return false,
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return false;
    }
    let mut perf_comments = false;
    let mut side_band = false;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let complete = lines.peek().is_some();
        let line = line.trim_end_matches('\r');
        if line.starts_with('#') {
            perf_comments |= line.starts_with("# ========") || line.starts_with("# event : ");
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if complete && is_side_band(line) {
            side_band = true;
            continue;
        }
        if !complete && side_band {
            // `--show-mmap-events` can print many side-band lines before the first sample.
            return true;
        }
        if !complete || parse_header(line).is_err() {
            return false;
        }
        let Some(next) = lines.next() else {
            return true;
        };
        let next = next.trim_end_matches('\r');
        // A sample without a call chain (a tracepoint's) may be followed by a side-band
        // line (`--show-task-events`' COMM of the exec that comes next).
        return lines.peek().is_none()
            || next.trim().is_empty()
            || next.starts_with('\t')
            || parse_frame(next).is_some()
            || parse_header(next).is_ok()
            || is_side_band(next);
    }
    perf_comments
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
