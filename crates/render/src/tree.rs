//! Merging stacks into one call tree, stored flat in pre-order.
//!
//! The builder is shared by every picture this crate draws. What a stack is made of and what it
//! carries is said by the [`Leaf`] it is given as:
//!
//! * the CPI graph merges the stacks of one profile by frame (name, module, kind) and carries
//!   cycles, stall and instructions counts ([`StackLeaf`] of a [`CpiWeight`]);
//! * the differential graph merges the stacks of two profiles by frame *name* along the path
//!   and carries both sides' counts (its leaves live in `diff.rs`).

use std::cmp::Ordering;
use std::collections::HashMap;

use cpiflame_profile::{Column, Columns, Count, FrameId, Profile, Stack};

/// What a node accumulates: a sum of counts, of which one gives the frame's width.
pub(crate) trait Weight: Copy + Default + PartialEq {
    /// `self + other`, saturating.
    fn plus(self, other: Self) -> Self;
    /// Width of the frame in width units (summed cycles periods: unhalted cycles), used to
    /// lay children out from their parent's left edge.
    fn width(&self) -> u64;
}

/// One stack given to [`build`]: frames root first, each with a merge key, and its counts.
pub(crate) trait Leaf {
    /// What a node remembers of the frame(s) merged into it.
    type Frame: Copy;
    type Weight: Weight;
    /// Number of frames.
    fn len(&self) -> usize;
    /// Merge key of the frame at `depth`: frames with equal keys along equal key paths are one
    /// node; siblings are ordered by key.
    fn key(&self, depth: usize) -> u32;
    /// The frame at `depth`.
    fn frame(&self, depth: usize) -> Self::Frame;
    fn weight(&self) -> Self::Weight;
    /// Order of two leaves with the same key path, so that which frame a node keeps does not
    /// depend on the order stacks come in.
    fn tiebreak(&self, _other: &Self) -> Ordering {
        Ordering::Equal
    }
    /// Folds a further frame with the same key into a node's frame. The node keeps the first
    /// frame by default.
    fn merge(_node: &mut Self::Frame, _frame: Self::Frame) {}
}

/// One node of the merged call tree.
#[derive(Clone, Debug)]
pub(crate) struct Node<F, W> {
    /// The frame, or `None` for the synthetic root ("all").
    pub(crate) frame: Option<F>,
    /// 0 for the root, 1 for the process frames, and so on.
    pub(crate) depth: u32,
    /// Index of the parent node (the root is its own parent).
    pub(crate) parent: u32,
    /// One past the index of the node's last descendant: its subtree is `index..end`.
    pub(crate) end: u32,
    /// Offset of the node's left edge, in width units from the left of the graph.
    pub(crate) start: u64,
    /// Counts of the node, children included.
    pub(crate) total: W,
    /// Counts that landed in the node itself, not in a child.
    pub(crate) own: W,
}

/// The merged call tree. `nodes[0]` is the root and holds the counts of all stacks; nodes are
/// in pre-order (every node comes before its children, a subtree is contiguous) and siblings
/// are ordered by key.
#[derive(Debug)]
pub(crate) struct Tree<F, W> {
    pub(crate) nodes: Vec<Node<F, W>>,
}

impl<F, W: Weight> Tree<F, W> {
    /// The root's counts: the sum over every stack given.
    pub(crate) fn root(&self) -> &W {
        &self.nodes[0].total
    }

    /// The index of `node`, which is one of the tree's nodes (the page hands out no other).
    pub(crate) fn index_of(&self, node: &Node<F, W>) -> u32 {
        let base = self.nodes.as_ptr() as usize;
        let at = node as *const Node<F, W> as usize;
        let index = (at - base) / std::mem::size_of::<Node<F, W>>();
        debug_assert!(std::ptr::eq(&self.nodes[index], node));
        index as u32
    }
}

impl<W: Weight> Tree<FrameId, W> {
    /// Per node, whether it may be drawn at `width` pixels for the whole tree: at least
    /// `min_width` pixels wide (the image is a little wider than the frames' span, so a
    /// node this wide or wider may be drawn). The one mask of what the kinds compute their
    /// per-node extras for (intervals, top-down sums): a graph of a million stacks has far
    /// more nodes than it draws.
    pub(crate) fn drawn(&self, width: u32, min_width: f64) -> Vec<bool> {
        let px_per_unit = f64::from(width) / self.root().width().max(1) as f64;
        self.nodes
            .iter()
            .map(|n| (n.total.width() as f64) * px_per_unit >= min_width)
            .collect()
    }

    /// The nodes `keep` says (by index) as the paths a stack walks down ([`Paths::descend`]).
    pub(crate) fn paths(&self, keep: impl Fn(usize) -> bool) -> Paths {
        let mut child = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate().skip(1) {
            if let (Some(frame), true) = (node.frame, keep(i)) {
                child.insert((node.parent, frame), i as u32);
            }
        }
        Paths { child }
    }
}

/// Some of a tree's nodes, by (parent, frame): the ones a stack is walked down.
pub(crate) struct Paths {
    child: HashMap<(u32, FrameId), u32>,
}

impl Paths {
    /// Calls `visit(depth, node)` for each kept node the stack of `frames` (root first)
    /// passes through, the root excluded; stops at its first frame without a kept node
    /// (its children are narrower still, so not kept either).
    pub(crate) fn descend(&self, frames: &[FrameId], mut visit: impl FnMut(usize, u32)) {
        let mut node = 0u32;
        for (depth, &frame) in frames.iter().enumerate() {
            let Some(&next) = self.child.get(&(node, frame)) else {
                break;
            };
            visit(depth, next);
            node = next;
        }
    }
}

/// `a + b` per field, saturating.
pub(crate) fn add(a: Count, b: Count) -> Count {
    Count {
        samples: a.samples.saturating_add(b.samples),
        period: a.period.saturating_add(b.period),
    }
}

/// Builds the call tree of `leaves`. Leaves whose weight is zero are skipped.
pub(crate) fn build<L: Leaf>(leaves: Vec<L>) -> Tree<L::Frame, L::Weight> {
    build_with(leaves, |_, _| {})
}

/// [`build`], telling `on_leaf` the index of the node each leaf (stack) ended in.
pub(crate) fn build_with<L: Leaf>(
    mut leaves: Vec<L>,
    mut on_leaf: impl FnMut(&L, u32),
) -> Tree<L::Frame, L::Weight> {
    leaves.retain(|l| l.weight() != L::Weight::default());
    // Sorting the stacks by their key sequences makes a depth-first walk: building nodes in
    // this order gives pre-order with sorted siblings.
    leaves.sort_unstable_by(|a, b| {
        let n = a.len().min(b.len());
        for i in 0..n {
            match a.key(i).cmp(&b.key(i)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        a.len().cmp(&b.len()).then_with(|| a.tiebreak(b))
    });

    let mut nodes = vec![Node {
        frame: None,
        depth: 0,
        parent: 0,
        end: 1,
        start: 0,
        total: L::Weight::default(),
        own: L::Weight::default(),
    }];
    // path[d] = node index of the frame at depth d+1 of the previous stack.
    let mut path: Vec<u32> = Vec::new();
    let mut prev: Option<&L> = None;
    for leaf in &leaves {
        let common = match prev {
            Some(p) => (0..p.len().min(leaf.len()))
                .take_while(|&i| p.key(i) == leaf.key(i))
                .count(),
            None => 0,
        };
        path.truncate(common);
        for (i, &index) in path.iter().enumerate() {
            if let Some(frame) = &mut nodes[index as usize].frame {
                L::merge(frame, leaf.frame(i));
            }
        }
        for i in common..leaf.len() {
            let parent = path.last().copied().unwrap_or(0);
            let index = nodes.len() as u32;
            nodes.push(Node {
                frame: Some(leaf.frame(i)),
                depth: path.len() as u32 + 1,
                parent,
                end: index + 1,
                start: 0,
                total: L::Weight::default(),
                own: L::Weight::default(),
            });
            path.push(index);
        }
        let at = path.last().copied().unwrap_or(0);
        on_leaf(leaf, at);
        let node = &mut nodes[at as usize];
        let w = leaf.weight();
        node.total = node.total.plus(w);
        node.own = node.own.plus(w);
        prev = Some(leaf);
    }

    // Children come after their parent: a backwards pass makes every count inclusive and
    // finds where each subtree ends.
    for i in (1..nodes.len()).rev() {
        let (total, end, parent) = (nodes[i].total, nodes[i].end, nodes[i].parent as usize);
        let p = &mut nodes[parent];
        p.total = p.total.plus(total);
        p.end = p.end.max(end);
    }
    // A forwards pass lays children out left to right from their parent's left edge; the
    // parent's own width is the space left over on the right.
    let mut cursor: Vec<u64> = vec![0; nodes.len()];
    for i in 1..nodes.len() {
        let p = nodes[i].parent as usize;
        let start = cursor[p];
        cursor[p] = start.saturating_add(nodes[i].total.width());
        nodes[i].start = start;
        cursor[i] = start;
    }

    Tree { nodes }
}

/// Ranks every frame of `profile` by (name, module, kind): `ranks[id]`. Equal frames (which
/// interning normally prevents) share a rank.
pub(crate) fn frame_ranks(profile: &Profile) -> Vec<u32> {
    let mut order: Vec<FrameId> = (0..profile.frames.len() as FrameId).collect();
    order.sort_unstable_by(|&a, &b| profile.frame(a).cmp(profile.frame(b)));
    let mut rank = vec![0u32; profile.frames.len()];
    let mut r = 0u32;
    for (i, &id) in order.iter().enumerate() {
        if i > 0 && profile.frame(order[i - 1]) != profile.frame(id) {
            r += 1;
        }
        rank[id as usize] = r;
    }
    rank
}

/// Ranks the frames of several profiles by name alone, on one scale: `ranks[p][id]` of frame
/// `id` of `profiles[p]`. Frames with the same name, in any of the profiles, share a rank.
pub(crate) fn name_ranks(profiles: &[&Profile]) -> Vec<Vec<u32>> {
    let mut names: Vec<&str> = profiles
        .iter()
        .flat_map(|p| p.frames.iter().map(|f| f.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    profiles
        .iter()
        .map(|p| {
            p.frames
                .iter()
                .map(|f| names.binary_search(&f.name.as_str()).unwrap_or(0) as u32)
                .collect()
        })
        .collect()
}

/// What a node of the CPI graph accumulates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpiWeight {
    /// Cycles counts: the period is the width (unhalted cycles, not samples: in frequency
    /// mode or a leader-sampled group samples carry different periods) and the denominator of
    /// the stall share and the CPI.
    pub(crate) cycles: Count,
    /// The cycles the stall share and the CPI divide by: `cycles`, except on hybrid files
    /// whose stall or instructions event was recorded on fewer core types than cycles, where
    /// it is the cycles of those core types only (`Columns::ratio_cycles`).
    pub(crate) ratio_cycles: Count,
    /// Stall counts (zero when there is no stall event).
    pub(crate) stalls: Count,
    /// Instructions counts (zero without that event).
    pub(crate) instructions: Count,
}

impl Weight for CpiWeight {
    fn plus(self, other: Self) -> Self {
        CpiWeight {
            cycles: add(self.cycles, other.cycles),
            ratio_cycles: add(self.ratio_cycles, other.ratio_cycles),
            stalls: add(self.stalls, other.stalls),
            instructions: add(self.instructions, other.instructions),
        }
    }

    fn width(&self) -> u64 {
        self.cycles.period
    }
}

/// A stack of a graph whose frames merge when their (name, module, kind) are equal (their
/// rank in `ranks`), with the weight its kind gives it: the CPI graph's, the wall-time
/// graph's, the memory graph's.
pub(crate) struct StackLeaf<'s, 'r, W> {
    pub(crate) stack: &'s Stack,
    pub(crate) ranks: &'r [u32],
    pub(crate) weight: W,
}

impl<W: Weight + Copy> Leaf for StackLeaf<'_, '_, W> {
    type Frame = FrameId;
    type Weight = W;

    fn len(&self) -> usize {
        self.stack.frames.len()
    }

    fn key(&self, depth: usize) -> u32 {
        self.ranks[self.stack.frames[depth] as usize]
    }

    fn frame(&self, depth: usize) -> FrameId {
        self.stack.frames[depth]
    }

    fn weight(&self) -> W {
        self.weight
    }
}

/// Builds the CPI call tree of `cycles` (and `stalls`, `instructions`) counts. Frame ids must
/// be valid (checked by the caller). Stacks with no cycles, stall or instructions counts are
/// skipped; stacks with stall or instructions counts but no cycles are kept (no width, but
/// counted in their ancestors: when cycles and instructions are sampled independently, the
/// instructions that landed where no cycles sample did still belong to the ancestors' CPI).
pub(crate) fn build_cpi(profile: &Profile, columns: &Columns) -> Tree<FrameId, CpiWeight> {
    let ranks = frame_ranks(profile);
    let cycles = columns.cycles.index();
    let ratio_cycles = columns.ratio_denominator().index();
    let stalls = columns.stalls.map(Column::index);
    let instructions = columns.instructions.map(Column::index);
    let count = |s: &Stack, e: Option<usize>| e.map_or(Count::default(), |e| s.counts[e]);
    let leaves = profile
        .stacks
        .iter()
        .filter(|s| {
            s.counts[cycles] != Count::default()
                || count(s, stalls) != Count::default()
                || count(s, instructions) != Count::default()
        })
        .map(|stack| StackLeaf {
            stack,
            ranks: &ranks,
            weight: CpiWeight {
                cycles: stack.counts[cycles],
                ratio_cycles: stack.counts[ratio_cycles],
                stalls: count(stack, stalls),
                instructions: count(stack, instructions),
            },
        })
        .collect();
    build(leaves)
}

/// What a node of the wall-time graph accumulates: the CPI graph's counts (for the split of
/// on-CPU time and the tooltips) and the three wall-time columns, whose summed periods
/// (nanoseconds) are the width.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WallWeight {
    pub(crate) cpi: CpiWeight,
    pub(crate) on_cpu: Count,
    pub(crate) runnable: Count,
    pub(crate) blocked: Count,
}

impl Weight for WallWeight {
    fn plus(self, other: Self) -> Self {
        WallWeight {
            cpi: self.cpi.plus(other.cpi),
            on_cpu: add(self.on_cpu, other.on_cpu),
            runnable: add(self.runnable, other.runnable),
            blocked: add(self.blocked, other.blocked),
        }
    }

    fn width(&self) -> u64 {
        self.on_cpu
            .period
            .saturating_add(self.runnable.period)
            .saturating_add(self.blocked.period)
    }
}

/// Builds the wall-time call tree: the CPI graph's counts (as [`build_cpi`]) and the
/// `wall` columns of every stack; `on_leaf` is told which node each stack ended in.
pub(crate) fn build_wall<'a>(
    profile: &'a Profile,
    columns: &Columns,
    wall: [Column; 3],
    mut on_leaf: impl FnMut(&'a Stack, u32),
) -> Tree<FrameId, WallWeight> {
    let ranks = frame_ranks(profile);
    let cycles = columns.cycles.index();
    let ratio_cycles = columns.ratio_denominator().index();
    let stalls = columns.stalls.map(Column::index);
    let instructions = columns.instructions.map(Column::index);
    let count = |s: &Stack, e: Option<usize>| e.map_or(Count::default(), |e| s.counts[e]);
    let leaves = profile
        .stacks
        .iter()
        .map(|stack| StackLeaf {
            stack,
            ranks: &ranks,
            weight: WallWeight {
                cpi: CpiWeight {
                    cycles: stack.counts[cycles],
                    ratio_cycles: stack.counts[ratio_cycles],
                    stalls: count(stack, stalls),
                    instructions: count(stack, instructions),
                },
                on_cpu: wall[0].of(stack),
                runnable: wall[1].of(stack),
                blocked: wall[2].of(stack),
            },
        })
        .collect();
    build_with(leaves, |leaf: &StackLeaf<'a, '_, WallWeight>, at| {
        on_leaf(leaf.stack, at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_profile::{EventColumn, Frame, FrameKind};

    fn frame(name: &str, module: &str) -> Frame {
        Frame {
            name: name.into(),
            module: module.into(),
            kind: FrameKind::User,
        }
    }

    fn count(samples: u64) -> Count {
        Count {
            samples,
            period: samples * 10,
        }
    }

    #[test]
    fn merges_sorts_and_lays_out_in_preorder() {
        let mut p = Profile::new(vec![
            EventColumn { name: "c".into() },
            EventColumn { name: "s".into() },
        ]);
        let app = p.intern(frame("app", ""));
        let z = p.intern(frame("z", ""));
        let a2 = p.intern(frame("a", "m2"));
        let a1 = p.intern(frame("a", "m1"));
        let leaf = p.intern(frame("leaf", ""));
        p.add(&[app, z], 0, count(5));
        p.add(&[app, a2], 0, count(1));
        p.add(&[app, a1, leaf], 0, count(2));
        p.add(&[app, a1], 0, count(3));
        p.add(&[app, a1, leaf], 1, count(4));
        // Stalls only: no width, but counted.
        p.add(&[app, z, leaf], 1, count(7));
        let t = build_cpi(&p, &Columns::new(0, Some(1)));
        let names: Vec<(&str, u32, u64, u64)> = t
            .nodes
            .iter()
            .map(|n| {
                (
                    n.frame.map_or("all", |f| p.frame(f).name.as_str()),
                    n.depth,
                    // Widths are periods, 10 per sample here.
                    n.start / 10,
                    n.total.cycles.period / 10,
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("all", 0, 0, 11),
                ("app", 1, 0, 11),
                ("a", 2, 0, 5),
                ("leaf", 3, 0, 2),
                ("a", 3 - 1, 5, 1),
                ("z", 2, 6, 5),
                ("leaf", 3, 6, 0),
            ]
        );
        assert_eq!(p.frame(t.nodes[2].frame.unwrap()).module, "m1");
        assert_eq!(t.nodes[2].own.cycles.samples, 3);
        assert_eq!(t.nodes[0].end, 7);
        assert_eq!(t.nodes[2].end, 4);
        assert_eq!(t.nodes[5].end, 7);
        assert_eq!(t.nodes[0].total.stalls.samples, 11);
        assert_eq!(t.root().stalls.samples, 11);
        assert_eq!(t.nodes[5].total.stalls.samples, 7);
    }

    #[test]
    fn name_ranks_share_one_scale_across_profiles() {
        let mut a = Profile::new(vec![EventColumn { name: "c".into() }]);
        let mut b = Profile::new(vec![EventColumn { name: "c".into() }]);
        a.intern(frame("main", "v1"));
        a.intern(frame("zeta", ""));
        b.intern(frame("alpha", ""));
        b.intern(frame("main", "v2"));
        let r = name_ranks(&[&a, &b]);
        assert_eq!(r, vec![vec![1, 2], vec![0, 1]]);
    }
}
