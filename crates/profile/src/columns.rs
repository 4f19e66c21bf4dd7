//! Which event column of a profile plays which role, once a recording is read: one type,
//! built once where the recording is loaded (`cpiflame_pipeline::Loaded::columns`) and
//! taken as it is by the summaries, the graphs, the timeline and source lines.
//!
//! Event names in flags and in the notes `cpiflame record` leaves stay
//! `cpiflame_events::Roles<String>`; this is their form as column indices of one profile.
//! It must never hold names: a column is an index into [`Profile::events`].

pub use crate::profile::Column;
use crate::profile::Profile;
use crate::wall::WallColumns;

/// What a frame's width measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// The cycles column (unhalted cycles, or cpu-clock time without a PMU).
    Cycles,
    /// Wall-clock time: the on-CPU, runnable and blocked nanoseconds summed (a recording with
    /// off-CPU data, unless `--on-cpu-only`).
    Wall(WallColumns),
}

/// The roles of a profile's columns: widths, and what stall shares and CPIs are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    pub width: Width,
    /// Unhalted cycles (samples, shares of the total, the on-CPU width).
    pub cycles: Column,
    pub stalls: Option<Column>,
    pub instructions: Option<Column>,
    /// The cycles that stall shares and CPIs divide by when it is not `cycles`: a hybrid
    /// file whose stall or instructions event exists on fewer core types than cycles.
    /// Shares of the total stay of `cycles`. Read it through [`Columns::ratio_denominator`].
    pub ratio_cycles: Option<Column>,
}

impl Columns {
    /// Cycles as the width and, optionally, stalls; no instructions.
    pub fn new(cycles: usize, stalls: Option<usize>) -> Columns {
        Columns {
            width: Width::Cycles,
            cycles: Column(cycles),
            stalls: stalls.map(Column),
            instructions: None,
            ratio_cycles: None,
        }
    }

    /// The column stall shares and CPIs divide by: the ratio cycles, else the cycles. The one
    /// place this rule is written.
    pub fn ratio_denominator(&self) -> Column {
        self.ratio_cycles.unwrap_or(self.cycles)
    }

    /// The wall-time columns, when they are the width.
    pub fn wall(&self) -> Option<WallColumns> {
        match self.width {
            Width::Wall(w) => Some(w),
            Width::Cycles => None,
        }
    }

    /// The columns summed for a frame's width: the cycles, or the three wall-time ones.
    pub fn width_columns(&self) -> [Option<Column>; 3] {
        match self.width {
            Width::Cycles => [Some(self.cycles), None, None],
            Width::Wall(w) => [Some(w.on_cpu), Some(w.runnable), Some(w.blocked)],
        }
    }

    /// The first column that is not one of `profile`'s, if any (a caller's columns must be
    /// the profile's).
    pub fn outside(&self, profile: &Profile) -> Option<Column> {
        let count = profile.events.len();
        [
            Some(self.cycles),
            self.stalls,
            self.instructions,
            self.ratio_cycles,
        ]
        .into_iter()
        .chain(self.width_columns())
        .flatten()
        .find(|c| c.0 >= count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_divide_by_the_ratio_cycles_else_the_cycles() {
        let mut c = Columns::new(1, Some(0));
        assert_eq!(c.ratio_denominator(), Column(1));
        c.ratio_cycles = Some(Column(3));
        assert_eq!(c.ratio_denominator(), Column(3));
    }
}
