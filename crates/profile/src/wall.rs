//! Wall-clock time in a profile: where a thread's time went when it was not only on a CPU.
//!
//! A recording with off-CPU data (`cpiflame record --off-cpu`, `perf record --switch-events`,
//! `sched:sched_switch` samples, perf's `offcpu-time` event) is collapsed with three extra
//! event columns whose periods are nanoseconds of wall-clock time:
//!
//! - [`ON_CPU`]: time the thread ran on a CPU, spread over its on-CPU samples' stacks in
//!   proportion to their weight (cycles, or cpu-clock without a PMU);
//! - [`RUNNABLE`]: time the thread was ready to run but waiting for a CPU (preempted, or woken
//!   and not yet running), on the stack it had when it left the CPU;
//! - [`BLOCKED`]: time the thread was blocked (sleeping, waiting for I/O or a lock, a page
//!   fault's read) until it was woken, on the stack it had when it left the CPU.
//!
//! A column's `samples` count the samples (on-CPU) or off-CPU intervals that added to it. The
//! three columns sum to the threads' wall-clock time over the recording (each thread counted
//! for the time it existed), so a frame's wall time is the sum of its three periods.

use crate::Profile;

/// Name of the column of on-CPU nanoseconds.
pub const ON_CPU: &str = "on-cpu-time";
/// Name of the column of nanoseconds runnable but not running (waiting for a CPU).
pub const RUNNABLE: &str = "runnable-time";
/// Name of the column of nanoseconds blocked (off the CPU and not runnable).
pub const BLOCKED: &str = "blocked-time";

/// The event columns of a profile that hold wall-clock time (indices into
/// [`Profile::events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallColumns {
    pub on_cpu: usize,
    pub runnable: usize,
    pub blocked: usize,
}

impl WallColumns {
    /// The wall-time columns of `profile`, found by name; `None` unless all three are there.
    pub fn of(profile: &Profile) -> Option<WallColumns> {
        let find = |name: &str| profile.events.iter().position(|e| e.name == name);
        Some(WallColumns {
            on_cpu: find(ON_CPU)?,
            runnable: find(RUNNABLE)?,
            blocked: find(BLOCKED)?,
        })
    }

    /// The three columns, on-CPU first.
    pub fn all(&self) -> [usize; 3] {
        [self.on_cpu, self.runnable, self.blocked]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventColumn;

    fn profile(names: &[&str]) -> Profile {
        Profile::new(
            names
                .iter()
                .map(|n| EventColumn {
                    name: n.to_string(),
                })
                .collect(),
        )
    }

    #[test]
    fn found_by_name_only_when_all_three_are_there() {
        let p = profile(&["cpu-clock", BLOCKED, "context-switches", ON_CPU, RUNNABLE]);
        assert_eq!(
            WallColumns::of(&p),
            Some(WallColumns {
                on_cpu: 3,
                runnable: 4,
                blocked: 1
            })
        );
        assert_eq!(
            WallColumns::of(&profile(&["cpu-clock", ON_CPU, BLOCKED])),
            None
        );
    }
}
