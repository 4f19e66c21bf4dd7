//! What `perf script` text says, as values: its errors, the options of reading it, what a
//! `# event :` line and a scheduler or side-band line say, and the text read. The types the
//! line parsers (`line.rs`) and the reader (`mod.rs`) share, depending on neither.

use std::fmt;
use std::io;

use crate::profile::{FrameId, Profile};
use crate::timed::Timed;

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
/// [`read_perf_script`](super::read_perf_script)), which line (1-based; 0 for the whole input) and what is wrong.
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
    /// Samples read into `profile`, and samples left out by [`read_perf_script_in`](super::read_perf_script_in)'s
    /// `keep_time`.
    pub samples: u64,
    pub left_out: u64,
    /// With [`read_perf_script_timed`](super::read_perf_script_timed), every sample read into `profile` as a
    /// [`TimedSample`](crate::timed::TimedSample) (its stack an index into `profile.stacks` as they are now, before any
    /// [`Profile::sort`]), in time order; `None` from the other readers.
    pub timed: Option<Timed>,
    /// With [`read_perf_script_timed`](super::read_perf_script_timed), the samples read into `profile` whose header has no
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
