//! What each sample adds to which profile column: the counters' weights
//! ([`counters`]) and, for a recording with off-CPU data, the wall-time columns of its
//! [`WallPlan`]. One weighing for fold, the graphs, pprof, annotate and timeline, so their
//! sums agree by construction.
//!
//! The wall plan is built over the counters' weights alone (it spreads a thread's on-CPU
//! time over its samples by them), so `offcpu` depends on `counters` and this module on
//! `offcpu`, never the other way round.

pub(crate) mod counters;

use cpiflame_perf_data::{PerfData, Sample};

use crate::offcpu::{Spread, WallPlan};
use counters::CounterWeights;

/// What each sample adds to which event column, as [`collapse`](crate::collapse) counts
/// it: shared with other outputs (pprof) so that their weights are the folded output's
/// exactly.
pub struct SampleWeights {
    counters: CounterWeights,
    wall: Option<WallPlan>,
    /// On-CPU weight per thread so far, for the wall plan's exact spread.
    wall_spread: Spread,
    /// The last sample's counter deltas when it carried a group's values, zeros included.
    group: Vec<(usize, u64)>,
}

impl SampleWeights {
    pub fn new(file: &PerfData) -> SampleWeights {
        SampleWeights {
            counters: CounterWeights::new(file),
            wall: None,
            wall_spread: Default::default(),
            group: Vec::new(),
        }
    }

    /// These weights with the wall-time columns of `wall` added (see [`WallPlan`]).
    pub fn with_wall(mut self, wall: Option<WallPlan>) -> SampleWeights {
        self.wall = wall;
        self
    }

    /// The (event column, delta) of every counter value the last sample given to
    /// [`SampleWeights::weights`] carried, zero deltas included: the per-sample deltas of a
    /// leader-sampled group, which a ratio's interval needs in pairs. Empty for a sample
    /// without counter values.
    pub fn group(&self) -> &[(usize, u64)] {
        &self.group
    }

    /// Moves past `sample`, left out (`--time`): a group's counter values are kept, so the
    /// next sample's deltas start from them, as perf's do (it computes them before it skips).
    pub fn pass(&mut self, file: &PerfData, sample: &Sample<'_>) {
        self.counters.pass(file, sample);
    }

    /// Replaces `out` with the (event column, period) pairs `sample` adds, one sample each:
    /// its own period in its event's column, or one delta per counter value it carries
    /// (see [`collapse`](crate::collapse)). Feed every sample of the file in order: deltas
    /// are kept.
    pub fn weights(&mut self, file: &PerfData, sample: &Sample<'_>, out: &mut Vec<(usize, u64)>) {
        out.clear();
        self.group.clear();
        if let Some(wall) = self.wall.as_ref().filter(|w| w.carries(sample)) {
            // Outside `--time`, carrying off-CPU time into it: that time only.
            self.counters.weights(file, sample, out, &mut self.group);
            out.clear();
            self.group.clear();
            wall.weights(sample, out, &mut self.wall_spread);
            return;
        }
        self.counters.weights(file, sample, out, &mut self.group);
        if let Some(wall) = &self.wall {
            wall.weights(sample, out, &mut self.wall_spread);
        }
    }
}
