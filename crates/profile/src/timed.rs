//! When each sample was taken: the per-sample table behind `cpiflame timeline`'s heat map
//! and `render --strip`. A [`Profile`](crate::Profile) sums a whole run; this keeps, for every
//! sample, its time, thread and stack (an index into the profile's stacks), so that any time
//! range can be summed again.

/// One weight a sample added: `period` to event column `column` of profile stack `stack`,
/// at `time` (nanoseconds, the recording's clock), on thread `thread` (an index into
/// [`Timed::threads`]). A sample carrying several counter values (a leader-sampled group)
/// or wall-time columns is several entries with the same time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedSample {
    pub time: u64,
    pub thread: u32,
    pub stack: u32,
    pub column: u32,
    pub period: u64,
}

/// A thread of the recording, as the samples name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thread {
    pub pid: i32,
    pub tid: i32,
    /// The thread's name (comm) when its first sample was taken.
    pub comm: String,
}

/// The samples of a recording in time order, with the threads they name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timed {
    pub samples: Vec<TimedSample>,
    pub threads: Vec<Thread>,
}

/// Nanoseconds in a second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// FlameScope's cells: columns are whole seconds of the clock (from the second of the first
/// sample), rows the position within the second in `rows` equal slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cells {
    /// The first column's second, in nanoseconds (a whole second).
    pub origin: u64,
    pub rows: u32,
    pub columns: u32,
}

impl Cells {
    /// The cells covering `first..=last` (nanoseconds), `rows` per second (at least 1).
    pub fn new(first: u64, last: u64, rows: u32) -> Cells {
        let origin = first - first % NS_PER_SEC;
        let columns = ((last.max(first) - origin) / NS_PER_SEC + 1) as u32;
        Cells {
            origin,
            rows: rows.max(1),
            columns,
        }
    }

    /// The cell of time `ns` as (column, row); `None` outside the columns.
    pub fn of(&self, ns: u64) -> Option<(u32, u32)> {
        let since = ns.checked_sub(self.origin)?;
        let column = since / NS_PER_SEC;
        if column >= u64::from(self.columns) {
            return None;
        }
        let row = (since % NS_PER_SEC) * u64::from(self.rows) / NS_PER_SEC;
        Some((column as u32, row as u32))
    }

    /// The time at which cell (`column`, `row`) starts, in nanoseconds: the first instant
    /// [`Cells::of`] puts in it.
    pub fn start(&self, column: u32, row: u32) -> u64 {
        let within = (u64::from(row) * NS_PER_SEC).div_ceil(u64::from(self.rows));
        self.origin + u64::from(column) * NS_PER_SEC + within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_flamescope_seconds_and_slices() {
        let c = Cells::new(12_345_678_901, 14_000_000_000, 50);
        assert_eq!(c.origin, 12_000_000_000);
        assert_eq!(c.columns, 3);
        assert_eq!(c.of(12_345_678_901), Some((0, 17)));
        assert_eq!(c.of(13_999_999_999), Some((1, 49)));
        assert_eq!(c.of(14_000_000_000), Some((2, 0)));
        assert_eq!(c.of(15_000_000_000), None);
        assert_eq!(c.of(11_999_999_999), None);
        assert_eq!(c.start(1, 17), 13_340_000_000);
        // Every cell's start is the first instant in it, for rows that do not divide a second.
        let odd = Cells::new(0, 0, 7);
        for row in 0..7 {
            let s = odd.start(0, row);
            assert_eq!(odd.of(s), Some((0, row)));
            if s > 0 {
                assert_ne!(odd.of(s - 1), Some((0, row)));
            }
        }
    }
}
