//! Merging a profile's stacks into one call tree, stored flat in pre-order.

use std::cmp::Ordering;

use cpiflame_fold::{Count, FrameId, Profile};

/// One node of the merged call tree.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// The frame, or `None` for the synthetic root ("all").
    pub(crate) frame: Option<FrameId>,
    /// 0 for the root, 1 for the process frames, and so on.
    pub(crate) depth: u32,
    /// Index of the parent node (the root is its own parent).
    pub(crate) parent: u32,
    /// One past the index of the node's last descendant: its subtree is `index..end`.
    pub(crate) end: u32,
    /// Offset of the node's left edge, in cycles samples from the left of the graph.
    pub(crate) start: u64,
    /// Cycles counts of the node, children included.
    pub(crate) cycles: Count,
    /// Stall counts of the node, children included (zero when there is no stall event).
    pub(crate) stalls: Count,
    /// Cycles samples that landed in the node itself, not in a child.
    pub(crate) self_cycles: u64,
    /// Instructions counts of the node, children included (zero without that event).
    pub(crate) instructions: Count,
}

/// The merged call tree. `nodes[0]` is the root; nodes are in pre-order (every node comes
/// before its children, a subtree is contiguous) and siblings are ordered by frame name, then
/// module, then kind.
#[derive(Debug)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
    /// Stall counts of all stacks, including stacks with no cycles samples.
    pub(crate) total_stalls: Count,
}

fn add(a: Count, b: Count) -> Count {
    Count {
        samples: a.samples.saturating_add(b.samples),
        period: a.period.saturating_add(b.period),
    }
}

/// Builds the call tree of `cycles` (and `stalls`) counts. Frame ids must be valid (checked by
/// the caller). Stacks with neither cycles nor stall samples or periods are skipped.
pub(crate) fn build(
    profile: &Profile,
    cycles: usize,
    stalls: Option<usize>,
    instructions: Option<usize>,
) -> Tree {
    // Rank every frame by (name, module, kind); equal frames (which interning normally
    // prevents) share a rank, so they merge into one node.
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

    let stall_of = |s: &cpiflame_fold::Stack| stalls.map_or(Count::default(), |e| s.counts[e]);
    let instructions_of =
        |s: &cpiflame_fold::Stack| instructions.map_or(Count::default(), |e| s.counts[e]);
    let mut stacks: Vec<&cpiflame_fold::Stack> = profile
        .stacks
        .iter()
        .filter(|s| s.counts[cycles] != Count::default() || stall_of(s) != Count::default())
        .collect();
    // Sorting the stacks by their rank sequences makes a depth-first walk: building nodes in
    // this order gives pre-order with sorted siblings.
    let key = |s: &cpiflame_fold::Stack, i: usize| rank[s.frames[i] as usize];
    stacks.sort_unstable_by(|a, b| {
        let n = a.frames.len().min(b.frames.len());
        for i in 0..n {
            match key(a, i).cmp(&key(b, i)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        a.frames.len().cmp(&b.frames.len())
    });

    let mut nodes = vec![Node {
        frame: None,
        depth: 0,
        parent: 0,
        end: 1,
        start: 0,
        cycles: Count::default(),
        stalls: Count::default(),
        self_cycles: 0,
        instructions: Count::default(),
    }];
    let mut total_stalls = Count::default();
    // path[d] = node index of the frame at depth d+1 of the previous stack.
    let mut path: Vec<u32> = Vec::new();
    let mut prev: Option<&cpiflame_fold::Stack> = None;
    for stack in stacks {
        let common = match prev {
            Some(p) => p
                .frames
                .iter()
                .zip(&stack.frames)
                .take_while(|(&a, &b)| rank[a as usize] == rank[b as usize])
                .count(),
            None => 0,
        };
        path.truncate(common);
        for &id in &stack.frames[common..] {
            let parent = path.last().copied().unwrap_or(0);
            let index = nodes.len() as u32;
            nodes.push(Node {
                frame: Some(id),
                depth: path.len() as u32 + 1,
                parent,
                end: index + 1,
                start: 0,
                cycles: Count::default(),
                stalls: Count::default(),
                self_cycles: 0,
                instructions: Count::default(),
            });
            path.push(index);
        }
        let leaf = &mut nodes[path.last().copied().unwrap_or(0) as usize];
        let c = stack.counts[cycles];
        let st = stall_of(stack);
        leaf.cycles = add(leaf.cycles, c);
        leaf.self_cycles = leaf.self_cycles.saturating_add(c.samples);
        leaf.stalls = add(leaf.stalls, st);
        leaf.instructions = add(leaf.instructions, instructions_of(stack));
        total_stalls = add(total_stalls, st);
        prev = Some(stack);
    }

    // Children come after their parent: a backwards pass makes every count inclusive and
    // finds where each subtree ends.
    for i in (1..nodes.len()).rev() {
        let n = &nodes[i];
        let (cycles, stalls, end, parent) = (n.cycles, n.stalls, n.end, n.parent as usize);
        let instructions = n.instructions;
        let p = &mut nodes[parent];
        p.cycles = add(p.cycles, cycles);
        p.stalls = add(p.stalls, stalls);
        p.instructions = add(p.instructions, instructions);
        p.end = p.end.max(end);
    }
    // A forwards pass lays children out left to right from their parent's left edge; the
    // parent's self samples are the space left over on the right.
    let mut cursor: Vec<u64> = vec![0; nodes.len()];
    for i in 1..nodes.len() {
        let p = nodes[i].parent as usize;
        let start = cursor[p];
        cursor[p] = start.saturating_add(nodes[i].cycles.samples);
        nodes[i].start = start;
        cursor[i] = start;
    }

    Tree {
        nodes,
        total_stalls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_fold::{EventColumn, Frame, FrameKind};

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
        let t = build(&p, 0, Some(1), None);
        let names: Vec<(&str, u32, u64, u64)> = t
            .nodes
            .iter()
            .map(|n| {
                (
                    n.frame.map_or("all", |f| p.frame(f).name.as_str()),
                    n.depth,
                    n.start,
                    n.cycles.samples,
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
        assert_eq!(t.nodes[2].self_cycles, 3);
        assert_eq!(t.nodes[0].end, 7);
        assert_eq!(t.nodes[2].end, 4);
        assert_eq!(t.nodes[5].end, 7);
        assert_eq!(t.nodes[0].stalls.samples, 11);
        assert_eq!(t.total_stalls.samples, 11);
        assert_eq!(t.nodes[5].stalls.samples, 7);
    }
}
