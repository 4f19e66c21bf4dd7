//! The driver between reading and drawing: a recording (perf.data from perf or cpiflame, or
//! folded text) becomes a [`Profile`](cpiflame_profile::Profile) with the event of each role
//! chosen (stalls, cycles, instructions) and the warnings a user should see, all as values.
//!
//! - [`collapse`]: every sample of a perf.data file unwound and named (`cpiflame-unwind`) and
//!   counted per distinct stack; [`walk_samples`] for callers that want each sample.
//! - [`Recording`]: the one way in: a recording opened once with the options every command
//!   builds the same way, read as the command needs.
//! - [`load_any`]: perf.data, `perf script` text or folded text, told apart by content, with roles chosen from
//!   flags, from what `cpiflame record` noted in the file ([`RecordingMarks`]), or by
//!   detection (`cpiflame-events`).
//!   Samples of leader-sampled groups weigh each member's column by that member's counter
//!   delta, as perf does; hybrid Intel files get one column per event across core types
//!   (`cycles (cpu_atom+cpu_core)`), see [`Loaded::ratio_cycles`].
//! - [`write_fold`]: `fold`'s folded stacks of a recording read, the columns its roles say.
//! - [`compare`]: runs compared (`diff`, one or several per side), each change's interval,
//!   and `--fail-above`'s gate.
//! - [`collapse_loads`]: the load samples of a memory recording (`record --mem`, `perf mem`)
//!   per stack and per place they were served from (`cpiflame-memaccess`), weighted by
//!   their latency, for `render --mem`.
//! - [`offcpu`]: where each thread's wall-clock time went (on a CPU, runnable, blocked),
//!   from a recording's context-switch data, as three extra columns ([`WallPlan`]).
//! - [`timeline`]: a recording read with the time, thread and stack of each sample
//!   (`cpiflame timeline`, `render --strip`).
//! - [`write_script`]: every sample with its stack in `perf script`'s layout.
//! - [`observe_progress`]: how far the read of a large file has come ([`ReadProgress`]), for
//!   the binary to show; [`show_progress`]: that text ([`ProgressLines`]) written to the
//!   terminal the binary hands it, [`finish_progress`]: the summary at the end.
//!
//! - [`time`]: `--time` ranges ([`time::TimeRanges`]), perf's syntax and meaning, applied to
//!   the samples of every walk; [`region`]: `--region`'s intervals per thread, from the
//!   marker files a recording mapped, applied with them.
//! - [`error_line`]: an error and its causes as the one line the binary prints.
//! - [`options`]: the environment (`CPIFLAME_THREADS`, `CPIFLAME_CACHE_DIR`, `CI`, the caches
//!   under `$HOME`), read once for the whole command.
//!
//! This crate prints nothing and never exits: messages are returned to the binary, which
//! decides how to show them (progress goes only to the stream the binary hands
//! [`show_progress`]).

mod collapse;
pub mod compare;
pub mod exit;
mod fold;
pub mod group;
mod hybrid;
mod load;
mod load_options;
mod marks;
mod memory;
mod merge;
pub mod offcpu;
pub mod options;
mod progress;
mod recording;
pub mod region;
mod script;
pub mod time;
pub mod timeline;
mod walker;
mod weigh;

pub use collapse::{
    collapse, collapse_all, collapse_visiting, collapse_with_wall, event_names, walk_samples,
    walk_samples_in, CollapseOptions, CollapseStats, Collapsed, SampleFilter, SampleVisitor,
    TimedWalk,
};
/// Which event plays which role, as names (flags) or columns (a recording read).
pub use cpiflame_events::Roles;
pub use fold::{write_fold, FoldError};
pub use group::{GroupBy, GroupByError};
pub use hybrid::{event_columns, ratio_cycles_events};
pub use load::{
    load_any, load_input, load_opened, load_walked, wall_plan, Loaded, Note, WalkAlso, Walked,
};
pub use load_options::{jit_dirs_of, EventList, LoadError, LoadOptions};
pub use marks::RecordingMarks;
pub use memory::{collapse_loads, load_loads, LoadProfile, LoadStats, MemoryError};
pub use merge::{input_files, load_all};
pub use offcpu::{PlacedTime, StacklessTime, UnsampledTime, WallPlan, WallStats};
pub use progress::{finish_progress, observe_progress, show_progress, ProgressLines, ReadProgress};
pub use recording::{C2cReportError, Recording};
pub use script::{write_script, ScriptError};
pub use walker::Walker;
pub use weigh::SampleWeights;

/// The error and its causes on one line, each cause once: libraries differ in whether their
/// message already includes the cause's.
pub fn error_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause = Some(error);
    while let Some(e) = cause {
        let text = e.to_string();
        if !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = e.source();
    }
    line
}

#[cfg(test)]
mod error_line_tests {
    use super::error_line;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("outer: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn causes_follow_once_each() {
        let io = || std::io::Error::other("inner");
        assert_eq!(error_line(&Outer(io())), "outer: inner");
        assert_eq!(error_line(&Repeats(io())), "outer: inner");
    }
}
