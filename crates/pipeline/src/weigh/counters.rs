//! How much a sample weighs in each counter's column, wall time aside: its own period (a
//! fixed one, 1 in frequency mode, when it carries none), or the increase of every counter
//! value it carries (a leader-sampled group's, PERF_SAMPLE_READ).
//!
//! It must never weigh a sample by anything but the file's own counts.

use foldhash::HashMap;

use cpiflame_perf_data::abi::sample as st;
use cpiflame_perf_data::{attr_flags, PerfData, RecordKind, Sample};

/// The counters' weights of samples: fed every sample of a file in order (deltas are kept).
pub(crate) struct CounterWeights {
    /// Each event's weight for a sample without a period: its fixed period, 1 in
    /// frequency mode.
    fixed_periods: Vec<u64>,
    read_deltas: ReadDeltas,
}

impl CounterWeights {
    pub(crate) fn new(file: &PerfData) -> CounterWeights {
        let fixed_periods = file
            .attrs
            .iter()
            .map(|a| {
                if a.freq() {
                    1
                } else {
                    a.sample_period_or_freq.max(1)
                }
            })
            .collect();
        CounterWeights {
            fixed_periods,
            read_deltas: ReadDeltas::new(file),
        }
    }

    /// Pushes to `out` the (event column, period) pairs `sample` adds: its own period in its
    /// event's column, or one delta per counter value it carries (`group` gets those
    /// deltas, zeros included).
    pub(crate) fn weights(
        &mut self,
        file: &PerfData,
        sample: &Sample<'_>,
        out: &mut Vec<(usize, u64)>,
        group: &mut Vec<(usize, u64)>,
    ) {
        if !self.read_deltas.weights(file, sample, out, group) {
            let fixed = self.fixed_periods.get(sample.attr).copied().unwrap_or(1);
            out.push((sample.attr, sample.period.unwrap_or(fixed)));
        }
    }

    /// Moves past `sample`, left out: a group's counter values are kept, so the next
    /// sample's deltas start from them.
    pub(crate) fn pass(&mut self, file: &PerfData, sample: &Sample<'_>) {
        let (mut out, mut group) = (Vec::new(), Vec::new());
        self.read_deltas.weights(file, sample, &mut out, &mut group);
    }
}

/// The weights of samples that carry counter values (PERF_SAMPLE_READ), as perf computes them
/// (`deliver_sample_value` in tools/perf/util/session.c): each value read, leader included,
/// weighs its event's column by its increase since the previous value of the same counter
/// id, kept per thread when the sampling event is inherited (then one id counts for many
/// threads, each with its own count). A value that did not increase adds nothing, as perf
/// delivers no sample for it: a member's `samples` is the number of leader samples in which
/// it moved, the count `perf script` and `perf report` show for it.
struct ReadDeltas {
    /// Which event each counter id belongs to.
    id_to_attr: HashMap<u64, usize>,
    /// The last value of each (counter id, thread): thread -1 when kept per id only.
    last: HashMap<(u64, i32), u64>,
}

impl ReadDeltas {
    fn new(file: &PerfData) -> ReadDeltas {
        let mut id_to_attr = HashMap::default();
        for (i, a) in file.attrs.iter().enumerate() {
            for &id in &a.ids {
                id_to_attr.entry(id).or_insert(i);
            }
        }
        let mut deltas = ReadDeltas {
            id_to_attr,
            last: HashMap::default(),
        };
        deltas.start_from_reads(file);
        deltas
    }

    /// The counter values the file starts from: the PERF_RECORD_READs before its first
    /// sample, which `record --switch-output` writes at the start of every file after the
    /// first (the last values the file before it carried, `crates/record/src/rotate.rs`).
    /// They are kept as each counter's last value, keyed as samples key it, so that the
    /// first sample's delta is its increase since the file before, not its count since the
    /// counters were enabled. A file without them starts from zero, as perf's do.
    fn start_from_reads(&mut self, file: &PerfData) {
        if !file.attrs.iter().any(|a| a.sample_type & st::READ != 0) {
            return;
        }
        for record in file.records_in_file_order() {
            // A bad record is the walk's error to report.
            let Ok(record) = record else { break };
            let read = match (&record.kind, record.attr) {
                (RecordKind::Sample(_), _) => break,
                (RecordKind::Read(read), Some(attr)) => (read, &file.attrs[attr]),
                _ => continue,
            };
            let (read, attr) = read;
            let thread = if per_thread(attr) { read.tid } else { -1 };
            for (value, id) in read.values.values() {
                if let Some(id) = id.filter(|id| self.id_to_attr.contains_key(id)) {
                    self.last.insert((id, thread), value);
                }
            }
        }
    }

    /// Pushes (event, delta) for each counter value `sample` carries; false when it carries
    /// none that can be matched to an event (no PERF_SAMPLE_READ, or values without ids or
    /// with ids of no event: perf drops those samples; here they keep their own period, so
    /// that a file written without PERF_FORMAT_ID still draws).
    fn weights(
        &mut self,
        file: &PerfData,
        sample: &Sample<'_>,
        out: &mut Vec<(usize, u64)>,
        group: &mut Vec<(usize, u64)>,
    ) -> bool {
        let Some(read) = sample.read else {
            return false;
        };
        let attr = &file.attrs[sample.attr];
        let thread = match sample.tid {
            Some(tid) if per_thread(attr) => tid,
            _ => -1,
        };
        let mut matched = false;
        for (value, id) in read.values() {
            let Some(id) = id else { continue };
            let Some(&event) = self.id_to_attr.get(&id) else {
                continue;
            };
            matched = true;
            // First value of a counter: since zero. perf subtracts modulo 2^64 too.
            let last = self.last.entry((id, thread)).or_insert(0);
            let delta = value.wrapping_sub(*last);
            *last = value;
            group.push((event, delta));
            if delta != 0 {
                out.push((event, delta));
            }
        }
        matched
    }
}

/// Whether the values of event `attr`'s counters are kept per thread: perf's
/// `perf_evsel__attr_has_per_thread_sample_period`: an inherited event's id is shared by the
/// threads it was inherited into, each with its own count (known when samples carry TID).
fn per_thread(attr: &cpiflame_perf_data::EventAttr) -> bool {
    attr.flags & attr_flags::INHERIT != 0 && attr.sample_type & st::TID != 0
}
