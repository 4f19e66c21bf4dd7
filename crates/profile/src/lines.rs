//! Source lines per frame: where inside each frame of a profile's stacks its samples were.
//!
//! A [`SourceLines`] holds the profile's stacks again, split finer: one [`LinedStack`] per
//! distinct (stack, line of every frame), with its own counts in the profile's columns. The
//! line of a frame is the line of the sampled instruction for the leaf, the line of the call
//! for a caller, and for a frame inlined into another the line inside it (its caller, inlined
//! into the same function, gets the line of the inlined call). A frame with no line (kernel,
//! no DWARF) has [`NO_LINE`].
//!
//! The sum of a stack's lined stacks is the stack's counts: the split adds nothing and loses
//! nothing. What the picture and the report do with it: [`HotLine`] ranking (the graph's
//! tooltips, `report --lines`).

use std::collections::HashMap;

use crate::{Column, Columns, Count, Frame, FrameId, Profile};

/// An index into [`SourceLines::lines`].
pub type LineId = u32;

/// A frame without a source line.
pub const NO_LINE: LineId = LineId::MAX;

/// One source line: the file as the debug information names it, and the line number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
}

impl SourceLine {
    /// `dir/file.c:7`: the file's last two path components and the line, short enough for
    /// a tooltip while telling `src/a/mod.rs` from `src/b/mod.rs`.
    pub fn short(&self) -> String {
        format!("{}:{}", short_path(&self.file), self.line)
    }
}

/// The last two components of `path` (all of it when it has fewer).
pub fn short_path(path: &str) -> &str {
    let mut cut = path.len();
    for _ in 0..2 {
        match path[..cut].rfind('/') {
            Some(i) => cut = i,
            None => return path,
        }
    }
    &path[cut + 1..]
}

/// A stack of the profile (frames root first, as [`Stack`](crate::Stack)) with the line of
/// each frame, and the counts of the samples that had exactly those lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinedStack {
    pub frames: Vec<FrameId>,
    /// One per frame: its line, or [`NO_LINE`].
    pub lines: Vec<LineId>,
    /// One per event column of the profile.
    pub counts: Vec<Count>,
}

/// The source lines of a profile's frames (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceLines {
    pub lines: Vec<SourceLine>,
    pub stacks: Vec<LinedStack>,
}

/// One line's weights within a frame or a function: what ranks it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineWeights {
    /// The width column (the one the share is of).
    pub width: Count,
    /// The stall share's numerator and denominator, where the profile has them.
    pub stalls: Count,
    pub ratio_cycles: Count,
}

impl LineWeights {
    pub fn add(&mut self, other: &LineWeights) {
        self.width.add(other.width);
        self.stalls.add(other.stalls);
        self.ratio_cycles.add(other.ratio_cycles);
    }
}

/// A line's place in a frame: its share of the frame's width and its stall share.
#[derive(Clone, Debug, PartialEq)]
pub struct HotLine {
    pub line: LineId,
    pub weights: LineWeights,
    /// Of the frame's (or function's) width column.
    pub share: f64,
    /// Stall period / cycles period of the line's samples; `None` without those columns or
    /// without cycles there.
    pub stall_share: Option<f64>,
}

impl LineWeights {
    /// The weights of `counts` (one per column of the profile) in `columns`' roles: the
    /// width's columns summed, the stalls and what they divide by.
    pub fn of(columns: &Columns, counts: &[Count]) -> LineWeights {
        let at = |c: Option<Column>| {
            c.and_then(|c| counts.get(c.index()))
                .copied()
                .unwrap_or_default()
        };
        let mut width = Count::default();
        for c in columns.width_columns() {
            width.add(at(c));
        }
        let with_stalls = columns.stalls.is_some();
        LineWeights {
            width,
            stalls: if with_stalls {
                at(columns.stalls)
            } else {
                Count::default()
            },
            ratio_cycles: if with_stalls {
                at(Some(columns.ratio_denominator()))
            } else {
                Count::default()
            },
        }
    }
}

/// The `n` lines of `weights` with the most width, most first (ties by line id, which is
/// first-seen order), each with its share of `total` width. Lines without a source line
/// are left out; lines with no width too.
pub fn hottest(
    weights: impl IntoIterator<Item = (LineId, LineWeights)>,
    total: u64,
    columns: &Columns,
    n: usize,
) -> Vec<HotLine> {
    let mut sums: Vec<(LineId, LineWeights)> = Vec::new();
    let mut at: HashMap<LineId, usize> = HashMap::new();
    for (line, w) in weights {
        if line == NO_LINE {
            continue;
        }
        let i = *at.entry(line).or_insert_with(|| {
            sums.push((line, LineWeights::default()));
            sums.len() - 1
        });
        sums[i].1.add(&w);
    }
    sums.retain(|(_, w)| w.width.period > 0);
    sums.sort_by(|a, b| b.1.width.period.cmp(&a.1.width.period).then(a.0.cmp(&b.0)));
    sums.truncate(n);
    sums.into_iter()
        .map(|(line, weights)| HotLine {
            line,
            weights,
            share: if total == 0 {
                0.0
            } else {
                weights.width.period as f64 / total as f64
            },
            stall_share: (columns.stalls.is_some() && weights.ratio_cycles.period > 0)
                .then(|| weights.stalls.period as f64 / weights.ratio_cycles.period as f64),
        })
        .collect()
}

impl SourceLines {
    /// The line with id `id`.
    pub fn line(&self, id: LineId) -> Option<&SourceLine> {
        self.lines.get(id as usize)
    }

    /// The hottest line of every function of `profile` by self weight (the samples whose
    /// leaf it is), functions being frames merged by `key` (as `report` merges them), the
    /// share of the function's self width in `profile` (samples without a line count in
    /// the width, not in any line). `None` keys are left out.
    pub fn hottest_self<K: std::hash::Hash + Eq + Clone>(
        &self,
        profile: &Profile,
        columns: &Columns,
        key: impl Fn(&Frame) -> Option<K>,
    ) -> HashMap<K, HotLine> {
        let key_of: Vec<Option<K>> = profile.frames.iter().map(&key).collect();
        let leaf_key = |frames: &[FrameId]| {
            frames
                .last()
                .and_then(|&f| key_of.get(f as usize).cloned().flatten())
        };
        let mut widths: HashMap<K, u64> = HashMap::new();
        for stack in &profile.stacks {
            if let Some(k) = leaf_key(&stack.frames) {
                let w = widths.entry(k).or_default();
                *w = w.saturating_add(LineWeights::of(columns, &stack.counts).width.period);
            }
        }
        let mut weights: HashMap<K, Vec<(LineId, LineWeights)>> = HashMap::new();
        for stack in &self.stacks {
            if let Some(k) = leaf_key(&stack.frames) {
                let line = stack.lines.last().copied().unwrap_or(NO_LINE);
                weights
                    .entry(k)
                    .or_default()
                    .push((line, LineWeights::of(columns, &stack.counts)));
            }
        }
        weights
            .into_iter()
            .filter_map(|(k, w)| {
                let total = widths.get(&k).copied().unwrap_or(0);
                let hot = hottest(w, total, columns, 1).into_iter().next()?;
                Some((k, hot))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(period: u64) -> Count {
        Count { samples: 1, period }
    }

    #[test]
    fn short_paths_keep_the_last_two_components() {
        assert_eq!(short_path("/src/app/hot.c"), "app/hot.c");
        assert_eq!(short_path("app/hot.c"), "app/hot.c");
        assert_eq!(short_path("hot.c"), "hot.c");
        assert_eq!(
            SourceLine {
                file: "/a/b/src/x/mod.rs".into(),
                line: 12
            }
            .short(),
            "x/mod.rs:12"
        );
    }

    #[test]
    fn the_hottest_lines_rank_by_width_and_give_exact_shares() {
        let columns = Columns::new(0, Some(1));
        let w = |c: u64, s: u64| LineWeights::of(&columns, &[count(c), count(s)]);
        let hot = hottest(
            [
                (3, w(10, 5)),
                (1, w(30, 3)),
                (3, w(20, 1)),
                (NO_LINE, w(40, 0)),
                (2, w(0, 9)),
            ],
            100,
            &columns,
            3,
        );
        assert_eq!(hot.len(), 2, "{hot:?}");
        // Line 1 (30) and line 3 (10 + 20) tie at 30: the lower id first.
        assert_eq!((hot[0].line, hot[0].share), (1, 0.3));
        assert_eq!(hot[0].stall_share, Some(0.1));
        assert_eq!((hot[1].line, hot[1].share), (3, 0.3));
        assert_eq!(hot[1].stall_share, Some(0.2));
    }

    #[test]
    fn without_stall_columns_there_is_no_stall_share() {
        let columns = Columns::new(0, None);
        let hot = hottest(
            [(0, LineWeights::of(&columns, &[count(5)]))],
            5,
            &columns,
            3,
        );
        assert_eq!(hot[0].stall_share, None);
        assert_eq!(hot[0].share, 1.0);
    }

    #[test]
    fn self_lines_are_those_of_stacks_ending_in_the_function() {
        let columns = Columns::new(0, None);
        let mut profile = Profile::new(vec![crate::EventColumn {
            name: "cycles".into(),
        }]);
        let frame = |name: &str| Frame {
            name: name.into(),
            module: "app".into(),
            kind: crate::FrameKind::User,
        };
        let (app, main, f) = (
            profile.intern(Frame {
                kind: crate::FrameKind::Process,
                ..frame("app")
            }),
            profile.intern(frame("main")),
            profile.intern(frame("f")),
        );
        profile.add(&[app, main, f], 0, count(7));
        // main's self weight: 3 on line 2, 1 without a line.
        profile.add(&[app, main], 0, count(4));
        let at = |line| SourceLine {
            file: "a.c".into(),
            line,
        };
        let lines = SourceLines {
            lines: vec![at(1), at(2)],
            stacks: vec![
                // main calls f at line 1 (f's self weight is not main's).
                LinedStack {
                    frames: vec![app, main, f],
                    lines: vec![NO_LINE, 0, 1],
                    counts: vec![count(7)],
                },
                LinedStack {
                    frames: vec![app, main],
                    lines: vec![NO_LINE, 1],
                    counts: vec![count(3)],
                },
                LinedStack {
                    frames: vec![app, main],
                    lines: vec![NO_LINE, NO_LINE],
                    counts: vec![count(1)],
                },
            ],
        };
        let hot = lines.hottest_self(&profile, &columns, |f| {
            (f.kind != crate::FrameKind::Process).then(|| f.name.clone())
        });
        assert_eq!(hot.len(), 2, "{hot:?}");
        assert_eq!((hot["main"].line, hot["main"].share), (1, 0.75));
        assert_eq!((hot["f"].line, hot["f"].share), (1, 1.0));
        assert_eq!(hot["f"].weights.width.period, 7);
    }
}
