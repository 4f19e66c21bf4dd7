//! The walks over a profile: totals, per-function sums, top-down sums.

use crate::columns::{Column, Columns};
use crate::interval::PairedMoments;
use crate::profile::{Count, Frame, FrameId, FrameKind, Profile, Stack};
use crate::ratios::{RatioIntervals, RatioKind};
use crate::topdown::{Breakdown, Plan};
use crate::wall::WallColumns;
use std::collections::HashMap;
use std::hash::Hash;

use super::model::{count, cpi_of, ratio, saturate, share, FrameDiff, FrameSummary, Totals};

/// One stack's counts in the summaries' roles: what totals and per-function sums add up.
struct StackCounts {
    cycles: Count,
    stalls: Count,
    instructions: Count,
    /// The column stall shares and CPIs divide by ([`Columns::ratio_denominator`]).
    ratio: Count,
    /// Leader-sampled groups: the per-sample deltas of (stalls, ratio cycles) and (ratio
    /// cycles, instructions), where the stack has them.
    stall_pair: Option<PairedMoments>,
    cpi_pair: Option<PairedMoments>,
    /// On-CPU, runnable and blocked nanoseconds (zero without the wall-time columns).
    wall: [u64; 3],
}

impl StackCounts {
    fn of(stack: &Stack, columns: &Columns, wall: Option<WallColumns>) -> StackCounts {
        let ratio = columns.ratio_denominator().index();
        let stalls = columns.stalls.map(Column::index);
        let instructions = columns.instructions.map(Column::index);
        StackCounts {
            cycles: columns.cycles.of(stack),
            stalls: stalls.map(|e| count(stack, e)).unwrap_or_default(),
            instructions: instructions.map(|e| count(stack, e)).unwrap_or_default(),
            ratio: count(stack, ratio),
            stall_pair: stalls.and_then(|e| stack.paired_moments(e, ratio)),
            cpi_pair: instructions.and_then(|e| stack.paired_moments(ratio, e)),
            wall: wall.map_or([0; 3], |w| w.all().map(|e| e.of(stack).period)),
        }
    }
}

/// The functions of a profile (its frames merged by a key), numbered in the order their
/// first frame appears, and the one walk every inclusive sum is made by.
pub(super) struct Functions<K> {
    /// Function number of each key.
    index: HashMap<K, usize>,
    /// Function number of each frame id.
    of_frame: Vec<usize>,
    /// The first frame of each function.
    first: Vec<FrameId>,
}

/// What [`Functions::walk`] meets in a stack.
pub(super) enum Met {
    /// The function of the stack's leaf (self sums).
    Leaf(usize),
    /// A frame of the stack and its function; `first`: the first time the function is met
    /// in this stack (inclusive sums count a stack once, however deep it recurses).
    Frame {
        function: usize,
        frame: FrameId,
        first: bool,
    },
}

impl<K: Eq + Hash> Functions<K> {
    /// The functions of `p`, frames with equal `key` being one.
    pub(super) fn of<'p>(p: &'p Profile, key: impl Fn(&'p Frame) -> K) -> Functions<K> {
        let mut index: HashMap<K, usize> = HashMap::new();
        let mut first = Vec::new();
        let of_frame = p
            .frames
            .iter()
            .enumerate()
            .map(|(id, f)| {
                *index.entry(key(f)).or_insert_with(|| {
                    first.push(id as FrameId);
                    first.len() - 1
                })
            })
            .collect();
        Functions {
            index,
            of_frame,
            first,
        }
    }

    /// Each function's key and number.
    pub(super) fn into_keys(self) -> impl Iterator<Item = (K, usize)> {
        self.index.into_iter()
    }

    pub(super) fn len(&self) -> usize {
        self.first.len()
    }

    /// Function `i`'s first frame.
    pub(super) fn first_frame(&self, i: usize) -> FrameId {
        self.first[i]
    }

    /// Walks `p`'s stacks: `values` makes each stack's values (`None`: the stack is left
    /// out), then `met` is told, with the stack and its values, its leaf's function and each
    /// of its frames, root first.
    pub(super) fn walk<S>(
        &self,
        p: &Profile,
        mut values: impl FnMut(&Stack) -> Option<S>,
        mut met: impl FnMut(&Stack, &S, Met),
    ) {
        // The last stack each function was met in: recursion counts a stack once.
        let mut counted_in = vec![usize::MAX; self.len()];
        for (i, stack) in p.stacks.iter().enumerate() {
            let Some(v) = values(stack) else {
                continue;
            };
            if let Some(&k) = stack
                .frames
                .last()
                .and_then(|&f| self.of_frame.get(f as usize))
            {
                met(stack, &v, Met::Leaf(k));
            }
            for &frame in &stack.frames {
                let Some(&function) = self.of_frame.get(frame as usize) else {
                    continue;
                };
                let first = counted_in[function] != i;
                counted_in[function] = i;
                met(
                    stack,
                    &v,
                    Met::Frame {
                        function,
                        frame,
                        first,
                    },
                );
            }
        }
    }
}

/// Totals of `p`'s columns in `columns`' roles, with the intervals at `confidence`.
pub fn totals(p: &Profile, columns: &Columns, confidence: f64) -> Totals {
    let cycles = columns.cycles.index();
    let stalls = columns.stalls.map(Column::index);
    let instructions = columns.instructions.map(Column::index);
    let (mut cs, mut cp, mut ss, mut sp) = (0u128, 0u128, 0u128, 0u128);
    let (mut is, mut ip, mut rs, mut rp) = (0u128, 0u128, 0u128, 0u128);
    let (mut stall_pair, mut cpi_pair) = (PairedMoments::default(), PairedMoments::default());
    let wall_columns = columns.wall();
    let mut wall = [0u128; 3];
    for stack in &p.stacks {
        let v = StackCounts::of(stack, columns, wall_columns);
        for (sum, ns) in wall.iter_mut().zip(v.wall) {
            *sum += u128::from(ns);
        }
        cs += u128::from(v.cycles.samples);
        cp += u128::from(v.cycles.period);
        rs += u128::from(v.ratio.samples);
        rp += u128::from(v.ratio.period);
        if let Some(m) = v.stall_pair {
            stall_pair.add(m);
        }
        if let Some(m) = v.cpi_pair {
            cpi_pair.add(m);
        }
        ss += u128::from(v.stalls.samples);
        sp += u128::from(v.stalls.period);
        is += u128::from(v.instructions.samples);
        ip += u128::from(v.instructions.period);
    }
    let name = |i: usize| p.events.get(i).map(|e| e.name.clone()).unwrap_or_default();
    let c = |samples: u128, period: u128| Count {
        samples: saturate(samples),
        period: saturate(period),
    };
    let (stall_c, ratio_c, instr_c) = (c(ss, sp), c(rs, rp), c(is, ip));
    let mut intervals = RatioIntervals::new(confidence);
    Totals {
        stall_share_interval: stalls.and_then(|_| ratio(sp, rp)).and_then(|_| {
            let i = intervals.as_mut()?.frame(
                stall_c,
                ratio_c,
                stall_c,
                Some(&stall_pair),
                RatioKind::Share,
            )?;
            Some([i.lo, i.hi])
        }),
        cpi_interval: instructions.and_then(|_| cpi_of(rp, ip)).and_then(|_| {
            let i = intervals.as_mut()?.frame(
                ratio_c,
                instr_c,
                ratio_c,
                Some(&cpi_pair),
                RatioKind::Ratio,
            )?;
            Some([i.lo, i.hi])
        }),
        cycles_event: name(cycles),
        stalls_event: stalls.map(name),
        cycles_samples: saturate(cs),
        cycles_period: saturate(cp),
        stall_samples: stalls.map(|_| saturate(ss)),
        stall_period: stalls.map(|_| saturate(sp)),
        stall_share: stalls.and_then(|_| ratio(sp, rp)),
        instructions_event: instructions.map(name),
        instructions_samples: instructions.map(|_| saturate(is)),
        instructions_period: instructions.map(|_| saturate(ip)),
        cpi: instructions.and_then(|_| cpi_of(rp, ip)),
        ipc: instructions.and_then(|_| cpi_of(ip, rp)),
        on_cpu_ns: wall_columns.map(|_| saturate(wall[0])),
        runnable_ns: wall_columns.map(|_| saturate(wall[1])),
        blocked_ns: wall_columns.map(|_| saturate(wall[2])),
        wall_ns: wall_columns.map(|_| saturate(wall.iter().sum())),
    }
}

/// Sums for one function while walking the stacks.
pub(super) struct Agg<'a> {
    pub(super) frame: &'a Frame,
    pub(super) kind: Option<FrameKind>,
    pub(super) self_samples: u128,
    pub(super) total_samples: u128,
    /// Cycles period that landed in the function itself (shares are of cycles, like widths).
    pub(super) self_period: u128,
    pub(super) cycles_period: u128,
    /// The cycles stall shares and CPIs divide by (`Columns::ratio_cycles`, else cycles).
    pub(super) ratio_period: u128,
    pub(super) stall_period: u128,
    pub(super) instructions_period: u128,
    /// Samples of the ratio columns, for the ratios' intervals.
    pub(super) ratio_samples: u128,
    pub(super) stall_samples: u128,
    pub(super) instructions_samples: u128,
    /// Leader-sampled groups: the per-sample deltas of (stalls, ratio cycles) and (ratio
    /// cycles, instructions), where the stacks have them.
    pub(super) stall_pair: PairedMoments,
    pub(super) cpi_pair: PairedMoments,
    /// Nanoseconds on CPU, runnable and blocked (the wall-time columns), when there are any.
    pub(super) wall: [u128; 3],
}

/// The sums of a whole profile that shares are of.
pub(super) struct Whole {
    /// Cycles period: the graph's widths.
    pub(super) cycles: u64,
    /// Wall time, nanoseconds; `None` without the wall-time columns.
    pub(super) wall: Option<u64>,
    /// The stall and ratio-cycles columns' totals (the numerators' mean periods where a
    /// function has no sample of its own).
    pub(super) stall_column: Count,
    pub(super) ratio_column: Count,
}

/// Sums cycles and stall counts (and wall time, when the profile has the wall-time columns)
/// per function, functions being the frames with equal `key`. Returns the functions that
/// appear in a counted stack, in no particular order, and the profile's totals that shares
/// are of.
pub(super) fn aggregate<'a, K: Eq + Hash>(
    p: &'a Profile,
    columns: Columns,
    key: impl Fn(&'a Frame) -> K,
) -> (Vec<Agg<'a>>, Whole) {
    let functions = Functions::of(p, key);
    let mut aggs: Vec<Agg<'a>> = (0..functions.len())
        .map(|i| Agg {
            frame: p.frame(functions.first_frame(i)),
            kind: None,
            self_samples: 0,
            total_samples: 0,
            self_period: 0,
            cycles_period: 0,
            ratio_period: 0,
            stall_period: 0,
            instructions_period: 0,
            ratio_samples: 0,
            stall_samples: 0,
            instructions_samples: 0,
            stall_pair: PairedMoments::default(),
            cpi_pair: PairedMoments::default(),
            wall: [0; 3],
        })
        .collect();
    let mut all_cycles = 0u128;
    let wall_columns = columns.wall();
    let mut all_wall = 0u128;
    let (mut stall_column, mut ratio_column) = (Count::default(), Count::default());
    let values = |stack: &Stack| {
        let v = StackCounts::of(stack, &columns, wall_columns);
        all_cycles += u128::from(v.cycles.period);
        all_wall += v.wall.iter().map(|&x| u128::from(x)).sum::<u128>();
        stall_column.add(v.stalls);
        ratio_column.add(v.ratio);
        // Off-CPU stacks have wall time and no cycles: they count too.
        let zero = Count::default();
        let empty = v.cycles == zero && v.stalls == zero && v.instructions == zero;
        (!(empty && v.wall == [0; 3])).then_some(v)
    };
    functions.walk(p, values, |_, v, met| match met {
        Met::Leaf(k) => {
            aggs[k].self_samples += u128::from(v.cycles.samples);
            aggs[k].self_period += u128::from(v.cycles.period);
        }
        Met::Frame {
            function,
            frame,
            first,
        } => {
            let agg = &mut aggs[function];
            let kind = p.frames[frame as usize].kind;
            agg.kind = Some(agg.kind.map_or(kind, |k| k.min(kind)));
            if !first {
                return;
            }
            agg.total_samples += u128::from(v.cycles.samples);
            agg.cycles_period += u128::from(v.cycles.period);
            agg.ratio_period += u128::from(v.ratio.period);
            agg.stall_period += u128::from(v.stalls.period);
            agg.instructions_period += u128::from(v.instructions.period);
            agg.ratio_samples += u128::from(v.ratio.samples);
            agg.stall_samples += u128::from(v.stalls.samples);
            agg.instructions_samples += u128::from(v.instructions.samples);
            if let Some(m) = v.stall_pair {
                agg.stall_pair.add(m);
            }
            if let Some(m) = v.cpi_pair {
                agg.cpi_pair.add(m);
            }
            for (sum, x) in agg.wall.iter_mut().zip(v.wall) {
                *sum += u128::from(x);
            }
        }
    });
    aggs.retain(|a| a.kind.is_some());
    let whole = Whole {
        cycles: saturate(all_cycles),
        wall: wall_columns.map(|_| saturate(all_wall)),
        stall_column,
        ratio_column,
    };
    (aggs, whole)
}

impl Agg<'_> {
    pub(super) fn kind(&self) -> FrameKind {
        self.kind.unwrap_or(self.frame.kind)
    }

    pub(super) fn stall_share(&self, stalls: Option<Column>) -> Option<f64> {
        stalls.and_then(|_| ratio(self.stall_period, self.ratio_period))
    }

    pub(super) fn cpi(&self, instructions: Option<Column>) -> Option<f64> {
        instructions.and_then(|_| cpi_of(self.ratio_period, self.instructions_period))
    }

    pub(super) fn ipc(&self, instructions: Option<Column>) -> Option<f64> {
        self.cpi(instructions).map(|cpi| 1.0 / cpi)
    }

    pub(super) fn count(samples: u128, period: u128) -> Count {
        Count {
            samples: saturate(samples),
            period: saturate(period),
        }
    }

    pub(super) fn stall_share_interval(
        &self,
        stalls: Option<Column>,
        whole: &Whole,
        intervals: &mut Option<RatioIntervals>,
    ) -> Option<[f64; 2]> {
        self.stall_share(stalls)?;
        let i = intervals.as_mut()?.frame(
            Self::count(self.stall_samples, self.stall_period),
            Self::count(self.ratio_samples, self.ratio_period),
            whole.stall_column,
            Some(&self.stall_pair),
            RatioKind::Share,
        )?;
        Some([i.lo, i.hi])
    }

    pub(super) fn cpi_interval(
        &self,
        instructions: Option<Column>,
        whole: &Whole,
        intervals: &mut Option<RatioIntervals>,
    ) -> Option<[f64; 2]> {
        self.cpi(instructions)?;
        let i = intervals.as_mut()?.frame(
            Self::count(self.ratio_samples, self.ratio_period),
            Self::count(self.instructions_samples, self.instructions_period),
            whole.ratio_column,
            Some(&self.cpi_pair),
            RatioKind::Ratio,
        )?;
        Some([i.lo, i.hi])
    }

    /// Inclusive wall time, nanoseconds.
    pub(super) fn wall_ns(&self) -> u64 {
        saturate(self.wall.iter().sum())
    }
}

/// What sets a root frame (a process, thread or cgroup: not a function) apart from functions
/// of the same name, and from roots of other kinds: its kind; `None` for functions, whose
/// kinds merge (see [`FrameSummary::kind`]).
pub(super) fn root_kind(f: &Frame) -> Option<FrameKind> {
    f.kind.is_root().then_some(f.kind)
}

/// Every function of `p` with its self and total cycles samples, shares, inclusive stall
/// share, CPI and IPC (see the [module docs](super) for the definitions), in `columns`'
/// roles (a column the profile does not have counts as zero), the stall shares' and CPIs'
/// intervals at `confidence`.
///
/// Sorted by total samples (descending), then self samples (descending), then name, module
/// and kind, so the order is deterministic; when the profile has the wall-time columns, by
/// inclusive wall time (descending) first, and each function has its wall times and share.
/// Process frames are included.
pub fn top_frames(p: &Profile, columns: &Columns, confidence: f64) -> Vec<FrameSummary> {
    let columns = *columns;
    let (stalls, instructions) = (columns.stalls, columns.instructions);
    let (aggs, whole) = aggregate(p, columns, |f| {
        (root_kind(f), f.name.as_str(), f.module.as_str())
    });
    let all = whole.cycles;
    let wall = |part: u128| whole.wall.map(|_| saturate(part));
    // Thousands of functions: the fast form of `interval::ratio_interval`, as the graph's.
    let mut intervals = RatioIntervals::new(confidence);
    let mut out: Vec<FrameSummary> = aggs
        .iter()
        .map(|a| {
            let self_samples = saturate(a.self_samples);
            let total_samples = saturate(a.total_samples);
            FrameSummary {
                name: a.frame.name.clone(),
                module: a.frame.module.clone(),
                kind: a.kind(),
                self_samples,
                total_samples,
                self_share: share(saturate(a.self_period), all),
                total_share: share(saturate(a.cycles_period), all),
                stall_share: a.stall_share(stalls),
                cpi: a.cpi(instructions),
                ipc: a.ipc(instructions),
                stall_share_interval: a.stall_share_interval(stalls, &whole, &mut intervals),
                cpi_interval: a.cpi_interval(instructions, &whole, &mut intervals),
                on_cpu_ns: wall(a.wall[0]),
                runnable_ns: wall(a.wall[1]),
                blocked_ns: wall(a.wall[2]),
                wall_ns: wall(a.wall.iter().sum()),
                wall_share: whole.wall.map(|all| share(a.wall_ns(), all)),
                hottest_line: None,
                topdown: None,
                self_topdown: None,
            }
        })
        .collect();
    // With wall time, the functions where most of it went come first (the order the reader
    // of an off-CPU profile expects); `wall_ns` is `None` for all or for none.
    out.sort_by(|a, b| {
        b.wall_ns
            .cmp(&a.wall_ns)
            .then(b.total_samples.cmp(&a.total_samples))
            .then(b.self_samples.cmp(&a.self_samples))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.module.cmp(&b.module))
            .then(a.kind.cmp(&b.kind))
    });
    out
}

/// Each function's top-down fractions under `plan` ([`FrameSummary::topdown`] and
/// `self_topdown`), `frames` from [`top_frames`] of `p`: every column's deltas summed over
/// the function's stacks first (each stack once for the inclusive sums), then the formulas
/// applied to the sums. Returns the whole profile's fractions.
pub fn add_topdown(p: &Profile, plan: &Plan, frames: &mut [FrameSummary]) -> Option<Breakdown> {
    let (sums, all) = column_sums(p, |f| (root_kind(f), f.name.as_str(), f.module.as_str()));
    for f in frames.iter_mut() {
        let root = f.kind.is_root().then_some(f.kind);
        let Some(s) = sums.get(&(root, f.name.as_str(), f.module.as_str())) else {
            continue;
        };
        f.topdown = Some(plan.apply(&s.total));
        f.self_topdown = Some(plan.apply(&s.leaf));
    }
    plan.apply(&all)
}

/// Each function's inclusive top-down fractions in before and after
/// ([`FrameDiff::topdown_before`], `topdown_after`), functions keyed as
/// [`diff_frames`](super::diff_frames)
/// matches them (process or not, and the name): the summed deltas of the stacks containing
/// the function (each once) under each side's plan, as [`add_topdown`](super::add_topdown) sums
/// them; `None`
/// inside where a side has nothing to apply them to (the function is not there, or has no
/// slots). `diffs` from [`diff_runs`](super::diff_runs) or [`diff_frames`](super::diff_frames) of
/// the same two profiles.
/// Returns the two profiles' whole fractions.
pub fn add_diff_topdown(
    before: (&Profile, &Plan),
    after: (&Profile, &Plan),
    diffs: &mut [FrameDiff],
) -> (Option<Breakdown>, Option<Breakdown>) {
    let key = |f: &Frame| (root_kind(f), f.name.clone());
    let (b_sums, b_all) = column_sums(before.0, key);
    let (a_sums, a_all) = column_sums(after.0, key);
    for d in diffs.iter_mut() {
        let k = (d.kind.is_root().then_some(d.kind), d.name.clone());
        let side = |sums: &HashMap<_, FrameSums>, plan: &Plan| {
            Some(sums.get(&k).and_then(|s| plan.apply(&s.total)))
        };
        d.topdown_before = side(&b_sums, before.1);
        d.topdown_after = side(&a_sums, after.1);
    }
    (before.1.apply(&b_all), after.1.apply(&a_all))
}

/// A function's sums of every column: of the stacks with it as the leaf, and of the stacks
/// containing it (each once).
#[derive(Default)]
pub(super) struct FrameSums {
    pub(super) leaf: Vec<u64>,
    pub(super) total: Vec<u64>,
}

/// Every column's periods summed per function (`key` of its frames), leaf and inclusive,
/// and over the whole profile.
pub(super) fn column_sums<'p, K: Hash + Eq>(
    p: &'p Profile,
    key: impl Fn(&'p Frame) -> K,
) -> (HashMap<K, FrameSums>, Vec<u64>) {
    let n = p.events.len();
    let functions = Functions::of(p, key);
    let mut sums: Vec<FrameSums> = (0..functions.len())
        .map(|_| FrameSums {
            leaf: vec![0; n],
            total: vec![0; n],
        })
        .collect();
    let mut all = vec![0u64; n];
    let add = |sums: &mut [u64], stack: &Stack| {
        for (sum, c) in sums.iter_mut().zip(&stack.counts) {
            *sum = sum.saturating_add(c.period);
        }
    };
    let values = |stack: &Stack| {
        add(&mut all, stack);
        Some(())
    };
    functions.walk(p, values, |stack, _, met| match met {
        Met::Leaf(k) => add(&mut sums[k].leaf, stack),
        Met::Frame {
            function,
            first: true,
            ..
        } => add(&mut sums[function].total, stack),
        Met::Frame { .. } => {}
    });
    let by_key = functions
        .into_keys()
        .map(|(k, i)| (k, std::mem::take(&mut sums[i])))
        .collect();
    (by_key, all)
}
