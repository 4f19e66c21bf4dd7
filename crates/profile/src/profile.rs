//! The folded profile: interned frames, and stacks with a count per event column.

use foldhash::HashMap;

/// Index into [`Profile::frames`].
pub type FrameId = u32;

/// Where a frame came from. Kept so renderers can say it in tooltips and so `[k]`-style
/// annotations stay possible without parsing names.
///
/// In JSON (the `kind` field of reports and diffs) it is the lowercase variant name:
/// `"process"`, `"user"`, `"inline"`, `"kernel"`, `"jit"`, `"thread"`, `"cgroup"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameKind {
    /// The root frame: the process (command) name; with `--group-by process`, `cgroup` or
    /// `thread`, the process as `comm [pid]`.
    Process,
    /// A user-space function (or `module+0xOFFSET` when it could not be named).
    User,
    /// A function that the compiler inlined into its caller; shown as its own frame.
    Inline,
    /// A kernel function.
    Kernel,
    /// Code compiled at run time, named from a perf map (`/tmp/perf-PID.map`) or an image
    /// `perf inject --jit` wrote (`jitted-PID-N.so`): stackcollapse-perf's and inferno's
    /// `_[j]` frames.
    Jit,
    /// A thread of the process below it, `comm [tid]` (`--group-by thread`): a root frame
    /// above the process's, not a function.
    Thread,
    /// A cgroup, by its path (`/system.slice/nginx.service`, `/` for the root): the first
    /// root frame with `--group-by cgroup`, not a function.
    Cgroup,
}

impl FrameKind {
    /// Whether frames of this kind say whose the stack is (cgroup, process, thread) rather
    /// than which code ran: the root frames.
    pub fn is_root(self) -> bool {
        matches!(
            self,
            FrameKind::Process | FrameKind::Thread | FrameKind::Cgroup
        )
    }
}

/// One named frame. Two frames are the same frame when all three fields are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// Function name as shown in the graph (demangled), or `module+0xOFFSET`.
    pub name: String,
    /// Short module name (file name of the binary or library, `[kernel.kallsyms]`, `[vdso]`);
    /// empty when unknown (for example frames read from a folded file).
    pub module: String,
    pub kind: FrameKind,
}

/// Samples and summed sample periods of one event for one stack.
///
/// Widths are drawn from `samples`, as FlameGraph does; ratios between events use `period`
/// so that events sampled with different periods (or in frequency mode) compare honestly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub samples: u64,
    pub period: u64,
}

impl Count {
    /// Adds `other`, saturating: periods come from files (a hostile one can claim u64::MAX
    /// per sample), and a sum pinned at the maximum is better than a panic.
    pub fn add(&mut self, other: Count) {
        self.samples = self.samples.saturating_add(other.samples);
        self.period = self.period.saturating_add(other.period);
    }
}

/// One event column of the profile (one attr of the perf.data file, or one count column of a
/// folded file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventColumn {
    /// The name perf shows for the event (`cpu-clock`, `resource_stalls_any`, `r1a2`, ...).
    pub name: String,
}

/// One distinct stack, root first, with one [`Count`] per event column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    pub frames: Vec<FrameId>,
    pub counts: Vec<Count>,
    /// Leader-sampled groups (every sample carries several counters' deltas): for each pair
    /// of columns the stack's samples carried together, the moments of their per-sample
    /// deltas, from which a ratio's interval is computed
    /// ([`interval::paired_ratio_interval`](crate::interval::paired_ratio_interval)). Empty
    /// for independently sampled events and text input.
    pub paired: Vec<PairMoments>,
}

/// The moments of two columns' per-sample deltas in one stack: `moments.sum_a` is column
/// `a`'s, `moments.sum_b` column `b`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairMoments {
    pub a: usize,
    pub b: usize,
    pub moments: PairedMoments,
}

impl Stack {
    /// The moments of the ratio column `numerator` / column `denominator`, when the stack's
    /// samples carried both (swapped into place when kept the other way round).
    pub fn paired_moments(&self, numerator: usize, denominator: usize) -> Option<PairedMoments> {
        self.paired.iter().find_map(|p| {
            let m = p.moments;
            if (p.a, p.b) == (numerator, denominator) {
                Some(m)
            } else if (p.b, p.a) == (numerator, denominator) {
                Some(PairedMoments {
                    sum_a: m.sum_b,
                    sum_b: m.sum_a,
                    sum_aa: m.sum_bb,
                    sum_bb: m.sum_aa,
                    ..m
                })
            } else {
                None
            }
        })
    }
}

/// A folded profile: the result of collapsing every sample of a file.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub events: Vec<EventColumn>,
    pub frames: Vec<Frame>,
    /// Distinct stacks, in no particular order until [`Profile::sort`] is called.
    pub stacks: Vec<Stack>,
    frame_ids: HashMap<Frame, FrameId>,
    stack_ids: HashMap<Vec<FrameId>, usize>,
}

impl Profile {
    pub fn new(events: Vec<EventColumn>) -> Self {
        Profile {
            events,
            ..Default::default()
        }
    }

    /// Returns the id of `frame`, adding it if it is new.
    pub fn intern(&mut self, frame: Frame) -> FrameId {
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = self.frames.len() as FrameId;
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, id);
        id
    }

    /// Adds `count` to `event` for the stack `frames` (root first); returns the stack's
    /// index in [`Profile::stacks`] (until [`Profile::sort`] reorders them).
    pub fn add(&mut self, frames: &[FrameId], event: usize, count: Count) -> usize {
        let index = self.stack_index(frames);
        self.stacks[index].counts[event].add(count);
        index
    }

    /// The index in [`Profile::stacks`] of the stack `frames` (root first), if it has one.
    pub fn stack_id(&self, frames: &[FrameId]) -> Option<usize> {
        self.stack_ids.get(frames).copied()
    }

    /// Adds the moments of one pair of columns' per-sample deltas to the stack `frames`
    /// ([`Stack::paired`]).
    pub fn add_paired(&mut self, frames: &[FrameId], pair: PairMoments) {
        let index = self.stack_index(frames);
        let paired = &mut self.stacks[index].paired;
        match paired.iter_mut().find(|p| (p.a, p.b) == (pair.a, pair.b)) {
            Some(p) => p.moments.add(pair.moments),
            None => paired.push(pair),
        }
    }

    fn stack_index(&mut self, frames: &[FrameId]) -> usize {
        let n_events = self.events.len();
        match self.stack_ids.get(frames) {
            Some(&i) => i,
            None => {
                let i = self.stacks.len();
                self.stacks.push(Stack {
                    frames: frames.to_vec(),
                    counts: vec![Count::default(); n_events],
                    paired: Vec::new(),
                });
                self.stack_ids.insert(frames.to_vec(), i);
                i
            }
        }
    }

    /// The frame with id `id`.
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id as usize]
    }

    /// Total of one event over all stacks.
    pub fn total(&self, event: usize) -> Count {
        let mut total = Count::default();
        for stack in &self.stacks {
            total.add(stack.counts[event]);
        }
        total
    }

    /// Sorts stacks by their frame names, root first, so output does not depend on the order
    /// samples arrived in (same input, byte-identical output).
    pub fn sort(&mut self) {
        // Frames ranked once by name: stacks share long prefixes, and comparing them by rank
        // does not compare the same names again and again. Equal frames get equal ranks,
        // so the order is the one comparing the frames would give.
        let mut by_name: Vec<u32> = (0..self.frames.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| self.frames[a as usize].cmp(&self.frames[b as usize]));
        let mut rank = vec![0u32; self.frames.len()];
        for (i, pair) in by_name.windows(2).enumerate() {
            let same = self.frames[pair[0] as usize] == self.frames[pair[1] as usize];
            rank[pair[1] as usize] = if same {
                rank[pair[0] as usize]
            } else {
                i as u32 + 1
            };
        }
        self.stacks.sort_by(|a, b| {
            let an = a.frames.iter().map(|&f| rank[f as usize]);
            let bn = b.frames.iter().map(|&f| rank[f as usize]);
            an.cmp(bn)
        });
        self.stack_ids.clear();
        for (i, s) in self.stacks.iter().enumerate() {
            self.stack_ids.insert(s.frames.clone(), i);
        }
    }
}

/// Moments of paired per-sample deltas of a leader-sampled group (`{cycles,stalls}:S`): for
/// each sample, `a` is the numerator's delta (stall cycles) and `b` the denominator's
/// (cycles). Addable, so the collapse can keep one per (stack, ratio) and frames sum them.
///
/// The sums are exact integers in `u128`: a delta is at most 2⁶⁴, its square at most 2¹²⁸,
/// so sums of realistic deltas (below 2⁴⁰ per sample) hold 2⁴⁸ samples exactly, and integer
/// sums do not depend on the order samples are added in (the same profile gives the same
/// intervals, byte for byte). Additions saturate, as [`Count::add`] does for a hostile file;
/// [`paired_ratio_interval`](crate::interval::paired_ratio_interval) refuses a saturated accumulator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PairedMoments {
    pub n: u64,
    pub sum_a: u128,
    pub sum_b: u128,
    pub sum_aa: u128,
    pub sum_bb: u128,
    pub sum_ab: u128,
}

impl PairedMoments {
    /// Adds one sample's deltas.
    pub fn push(&mut self, a: u64, b: u64) {
        let (a, b) = (u128::from(a), u128::from(b));
        self.add(PairedMoments {
            n: 1,
            sum_a: a,
            sum_b: b,
            sum_aa: a * a,
            sum_bb: b * b,
            sum_ab: a * b,
        });
    }

    /// Adds another accumulator (a child stack's, another thread's), saturating.
    pub fn add(&mut self, other: PairedMoments) {
        self.n = self.n.saturating_add(other.n);
        self.sum_a = self.sum_a.saturating_add(other.sum_a);
        self.sum_b = self.sum_b.saturating_add(other.sum_b);
        self.sum_aa = self.sum_aa.saturating_add(other.sum_aa);
        self.sum_bb = self.sum_bb.saturating_add(other.sum_bb);
        self.sum_ab = self.sum_ab.saturating_add(other.sum_ab);
    }

    /// Whether any sum hit its maximum (its value is then unknown).
    pub fn saturated(&self) -> bool {
        self.n == u64::MAX
            || [
                self.sum_a,
                self.sum_b,
                self.sum_aa,
                self.sum_bb,
                self.sum_ab,
            ]
            .contains(&u128::MAX)
    }

    /// The ratio `sum_a / sum_b`, if `sum_b > 0`.
    pub fn ratio(&self) -> Option<f64> {
        (self.sum_b > 0).then(|| self.sum_a as f64 / self.sum_b as f64)
    }
}

/// An index into [`Profile::events`], typed so that it is not mixed up with frame ids, stack
/// indices or counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Column(pub usize);

impl Column {
    /// The index as a plain `usize`.
    pub fn index(self) -> usize {
        self.0
    }

    /// This column's count in `stack`; zero for a column the stack does not have.
    pub fn of(self, stack: &Stack) -> Count {
        stack.counts.get(self.0).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str, module: &str, kind: FrameKind) -> Frame {
        Frame {
            name: name.into(),
            module: module.into(),
            kind,
        }
    }

    /// Stacks end up ordered by their frames (name, then module, then kind), root first,
    /// whatever order the frames were interned in; a duplicate of a frame in the table
    /// orders as the frame does.
    #[test]
    fn stacks_sorted_by_frames_root_first() {
        let mut p = Profile::new(vec![EventColumn {
            name: "cpu-clock".into(),
        }]);
        let c = p.intern(frame("c", "", FrameKind::User));
        let a_lib = p.intern(frame("a", "lib.so", FrameKind::User));
        let a = p.intern(frame("a", "", FrameKind::User));
        let b_kernel = p.intern(frame("b", "", FrameKind::Kernel));
        let b = p.intern(frame("b", "", FrameKind::User));
        // The same frame twice in the table (the table is public).
        p.frames.push(frame("b", "", FrameKind::User));
        let b_again = (p.frames.len() - 1) as FrameId;
        let one = Count {
            samples: 1,
            period: 1,
        };
        let stacks: [&[FrameId]; 11] = [
            &[b, c, c],
            &[c, a],
            &[a_lib],
            &[b_again, c],
            &[a, c, b],
            &[a],
            &[b_kernel],
            &[b, a],
            &[a, c],
            &[a, b_kernel, c],
            &[b_again, a, a],
        ];
        for s in stacks {
            p.add(s, 0, one);
        }
        p.sort();
        let names: Vec<String> = p
            .stacks
            .iter()
            .map(|s| {
                s.frames
                    .iter()
                    .map(|&f| {
                        let f = p.frame(f);
                        format!("{}/{}/{:?}", f.name, f.module, f.kind)
                    })
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .collect();
        // Kind orders User before Kernel (declaration order); "" before "lib.so"; a
        // shorter stack before its extensions. `b` and its duplicate order as one frame,
        // whichever of them comes first.
        assert_eq!(
            names,
            [
                "a//User",
                "a//User;b//Kernel;c//User",
                "a//User;c//User",
                "a//User;c//User;b//User",
                "a/lib.so/User",
                "b//User;a//User",
                "b//User;a//User;a//User",
                "b//User;c//User",
                "b//User;c//User;c//User",
                "b//Kernel",
                "c//User;a//User",
            ]
        );
    }
}
