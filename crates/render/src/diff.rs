//! The differential CPI flame graph: two runs compared. Width = AFTER's unhalted cycles,
//! colour = change of each frame's inclusive share of its run's unhalted cycles; of wall time
//! instead when both runs have the wall-time columns.

use std::cmp::Ordering;
use std::io::{self, BufWriter, Write};

use cpiflame_profile::{Column, Columns, Count, FrameId, Profile, Stack, WallColumns};

use crate::color::{diff_color, diff_position, Rgb, DIFF_GREW, DIFF_NEUTRAL, DIFF_SHRANK};
use crate::page::{self, write_origin, Legend, Look, Picture, ROW, TEXT_PX, XPAD};
use crate::text::{fit_label_tail, ratio, weight_unit, Esc, Events, Percent, Signed, Thousands};
use crate::tree::{self, add, Leaf, Node, Tree, Weight};
use crate::wall::Ms;
use crate::wrap::wrap;
use crate::{check_look, check_profile, DiffOptions, RenderError};

/// At most this many vanished call paths are listed under the graph.
const GONE_ROWS: usize = 20;
/// Right edge of the share column of the vanished list, from the left margin.
const GONE_SHARE_RIGHT: f64 = 52.0;
/// Left edge of the path column of the vanished list, from the left margin.
const GONE_PATH_LEFT: f64 = 60.0;

/// Draws the differential CPI flame graph of two runs as SVG.
///
/// `before` and `after` may come from different files: frames are matched by *name* along the
/// call path (root first), since modules and frame ids differ between files. Two frames of one
/// run with the same name at the same place in the call tree (the same function in two
/// modules) are therefore one frame here.
///
/// * **Width** of a frame is its unhalted cycles in AFTER (the summed period of column
///   `a_cycles`), children included, as in [`render_cpi`](crate::render_cpi).
/// * **Colour** of every frame, parents included, is the change of the frame's *inclusive*
///   share of its run's unhalted cycles (summed cycles periods): `after_cycles / after_total -
///   before_cycles / before_total`, on the fixed scale of [`diff_color`](crate::diff_color): red = grew, blue
///   = shrank, neutral grey = unchanged, square-root compressed and saturating at ±20
///   percentage points (a legend shows it). A frame new in AFTER grew from 0. So a parent's
///   change is its own (self) change plus the sum of its children's changes, vanished children
///   included.
/// * **Tooltips** give the function, module, both runs' cycles samples and events (summed
///   periods) and shares, the change in percentage points and relative to BEFORE, when both
///   runs have a stall column the frame's inclusive stall share before → after, and when
///   either run has an instructions column the frame's inclusive CPI before → after (`n/a` on a side without instructions there).
/// * **Vanished call paths** (cycles in BEFORE, none in AFTER) have no width, so they
///   are listed under the graph: each maximal vanished subtree with its path and BEFORE share,
///   largest first, at most 20 rows and a line counting the rest.
///
/// The subtitle gives both runs' totals and, when either has a stall column, the overall stall
/// share before → after, and when either has an instructions column, the overall CPI. Search and click-to-zoom work as in the CPI graph (search shares are
/// of AFTER's samples). The output is deterministic.
///
/// Each run's columns are its own `Columns` (`b_columns`, `a_columns`); the ratio cycles of
/// a hybrid run are not used here: CPIs divide by the cycles.
///
/// **Wall time.** When both runs' widths are wall time ([`Width::Wall`](cpiflame_profile::Width::Wall): `cpiflame record
/// --off-cpu` and the other off-CPU recordings), what is measured is wall time, the three columns' summed nanoseconds, in
/// place of cycles: a frame's width is its wall time in AFTER, its colour the change of its
/// inclusive share of its run's wall time (the share `diff`'s summary and gate compare), the
/// vanished call paths those with wall time in BEFORE and none in AFTER. Tooltips then give
/// each run's wall time and share and its on-CPU, runnable and blocked time (inclusive, as
/// `report` gives them), the change in points of wall time, and the cycles samples below; the
/// statistics line adds both runs' wall time. Otherwise the picture is the one above, byte for
/// byte.
pub fn render_diff<W: Write>(
    before: &Profile,
    b_columns: &Columns,
    after: &Profile,
    a_columns: &Columns,
    opts: &DiffOptions,
    out: W,
) -> Result<(), RenderError> {
    let (b_cycles, b_stalls) = (
        b_columns.cycles.index(),
        b_columns.stalls.map(Column::index),
    );
    let (a_cycles, a_stalls) = (
        a_columns.cycles.index(),
        a_columns.stalls.map(Column::index),
    );
    let b_instructions = b_columns.instructions.map(Column::index);
    let a_instructions = a_columns.instructions.map(Column::index);
    check_look(opts.width, opts.min_width)?;
    let side = |side: &'static str| {
        move |e: RenderError| RenderError::DiffSide {
            side,
            error: Box::new(e),
        }
    };
    let count = |p: &Profile, i: Option<usize>| {
        i.filter(|&index| index >= p.events.len())
            .map_or(Ok(()), |index| {
                Err(RenderError::NoSuchEvent {
                    index,
                    count: p.events.len(),
                })
            })
    };
    count(before, b_instructions).map_err(side("BEFORE"))?;
    count(after, a_instructions).map_err(side("AFTER"))?;
    let wall = |p: &Profile, w: Option<WallColumns>| {
        w.into_iter()
            .flat_map(|w| w.all())
            .try_for_each(|column| count(p, Some(column.index())))
    };
    wall(before, b_columns.wall()).map_err(side("BEFORE"))?;
    wall(after, a_columns.wall()).map_err(side("AFTER"))?;
    let (b_wall, a_wall) = match (b_columns.wall(), a_columns.wall()) {
        (Some(b), Some(a)) => (Some(b), Some(a)),
        _ => (None, None),
    };
    let b_total = check_profile(before, b_cycles, b_stalls).map_err(side("BEFORE"))?;
    let a_total = check_profile(after, a_cycles, a_stalls).map_err(side("AFTER"))?;
    let b = Run::new(before, b_cycles, b_stalls, b_instructions, b_wall, b_total);
    let a = Run::new(after, a_cycles, a_stalls, a_instructions, a_wall, a_total);
    let tree = build(&b, &a);
    let gone = gone(&tree);
    let look = Look {
        title: &opts.title,
        subtitle: opts.subtitle.as_deref(),
        width: opts.width,
        min_width: opts.min_width,
        inverted: opts.inverted,
        parallel: !opts.single_threaded,
    };
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let picture = Diff {
        before: b,
        after: a,
        tree,
        gone,
        counts: opts.counts,
    };
    page::write(&picture, &look, &mut w)?;
    w.flush()?;
    Ok(())
}

/// One of the two runs.
struct Run<'a> {
    profile: &'a Profile,
    cycles: usize,
    stalls: Option<usize>,
    instructions: Option<usize>,
    /// The wall-time columns, when both runs have them (the picture is then of wall time).
    wall: Option<WallColumns>,
    /// Cycles counts of the whole run.
    total: Count,
    /// What the widths and shares are of, over the whole run: cycles period, or wall time.
    size: u64,
}

impl<'a> Run<'a> {
    fn new(
        profile: &'a Profile,
        cycles: usize,
        stalls: Option<usize>,
        instructions: Option<usize>,
        wall: Option<WallColumns>,
        total: Count,
    ) -> Run<'a> {
        let mut run = Run {
            profile,
            cycles,
            stalls,
            instructions,
            wall,
            total,
            size: total.period,
        };
        if wall.is_some() {
            run.size = profile
                .stacks
                .iter()
                .fold(0, |s: u64, stack| s.saturating_add(run.counts(stack).size));
        }
        run
    }

    fn counts(&self, stack: &Stack) -> SideCounts {
        let column = |e: Option<usize>| e.map_or(Count::default(), |e| stack.counts[e]);
        let cycles = stack.counts[self.cycles];
        let wall = self
            .wall
            .map_or([0; 3], |w| w.all().map(|c| c.of(stack).period));
        SideCounts {
            cycles,
            stalls: column(self.stalls),
            instructions: column(self.instructions),
            wall,
            size: match self.wall {
                Some(_) => wall.iter().fold(0, |s: u64, &ns| s.saturating_add(ns)),
                None => cycles.period,
            },
        }
    }
}

/// Counts of one run in one node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SideCounts {
    cycles: Count,
    /// Zero when the run has no stall column.
    stalls: Count,
    /// Zero when the run has no instructions column.
    instructions: Count,
    /// Nanoseconds on a CPU, runnable and blocked; zeros unless the picture is of wall time.
    wall: [u64; 3],
    /// What widths and shares are of: the cycles period, or the wall time (`wall`'s sum).
    size: u64,
}

impl SideCounts {
    fn plus(self, other: Self) -> Self {
        let ns = |i: usize| self.wall[i].saturating_add(other.wall[i]);
        SideCounts {
            cycles: add(self.cycles, other.cycles),
            stalls: add(self.stalls, other.stalls),
            instructions: add(self.instructions, other.instructions),
            wall: [ns(0), ns(1), ns(2)],
            size: self.size.saturating_add(other.size),
        }
    }

    /// Inclusive stall share: stall period per cycles period.
    fn stall_share(&self) -> Option<f64> {
        ratio(self.stalls.period, self.cycles.period)
    }

    /// Inclusive CPI: cycles period per instructions period.
    fn cpi(&self) -> Option<f64> {
        ratio(self.cycles.period, self.instructions.period)
    }
}

/// What a node of the differential tree accumulates: both runs' counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct DiffWeight {
    before: SideCounts,
    after: SideCounts,
}

impl Weight for DiffWeight {
    fn plus(self, other: Self) -> Self {
        DiffWeight {
            before: self.before.plus(other.before),
            after: self.after.plus(other.after),
        }
    }

    /// Widths come from AFTER: its unhalted cycles, or its wall time.
    fn width(&self) -> u64 {
        self.after.size
    }
}

/// The frames merged into one node, one of each run when it has one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sides {
    before: Option<FrameId>,
    after: Option<FrameId>,
}

/// A stack of either run. Frames merge by name, on one scale for both runs.
struct DiffLeaf<'a> {
    frames: &'a [FrameId],
    /// Name rank of each frame id of this stack's run (shared scale).
    names: &'a [u32],
    /// (name, module, kind) rank of each frame id of this stack's run.
    fine: &'a [u32],
    after: bool,
    weight: DiffWeight,
}

impl Leaf for DiffLeaf<'_> {
    type Frame = Sides;
    type Weight = DiffWeight;

    fn len(&self) -> usize {
        self.frames.len()
    }

    fn key(&self, depth: usize) -> u32 {
        self.names[self.frames[depth] as usize]
    }

    fn frame(&self, depth: usize) -> Sides {
        let id = Some(self.frames[depth]);
        if self.after {
            Sides {
                before: None,
                after: id,
            }
        } else {
            Sides {
                before: id,
                after: None,
            }
        }
    }

    fn weight(&self) -> DiffWeight {
        self.weight
    }

    /// BEFORE's stacks first, then by (name, module, kind) within a run: a node keeps, of each
    /// run, the frame of the first such stack through it, whatever order stacks came in.
    fn tiebreak(&self, other: &Self) -> Ordering {
        self.after.cmp(&other.after).then_with(|| {
            let key = |l: &Self, i: usize| l.fine[l.frames[i] as usize];
            (0..self.frames.len())
                .map(|i| key(self, i).cmp(&key(other, i)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    }

    fn merge(node: &mut Sides, frame: Sides) {
        node.before = node.before.or(frame.before);
        node.after = node.after.or(frame.after);
    }
}

/// Merges both runs' stacks into one tree, by frame name along the path.
fn build(b: &Run, a: &Run) -> Tree<Sides, DiffWeight> {
    let names = tree::name_ranks(&[b.profile, a.profile]);
    let fine = [tree::frame_ranks(b.profile), tree::frame_ranks(a.profile)];
    let mut leaves = Vec::with_capacity(b.profile.stacks.len() + a.profile.stacks.len());
    for (i, run) in [b, a].into_iter().enumerate() {
        let after = i == 1;
        for stack in &run.profile.stacks {
            let counts = run.counts(stack);
            leaves.push(DiffLeaf {
                frames: &stack.frames,
                names: &names[i],
                fine: &fine[i],
                after,
                weight: if after {
                    DiffWeight {
                        before: SideCounts::default(),
                        after: counts,
                    }
                } else {
                    DiffWeight {
                        before: counts,
                        after: SideCounts::default(),
                    }
                },
            });
        }
    }
    tree::build(leaves)
}

/// The roots of the vanished subtrees: nodes with cycles (or wall time) in BEFORE and none in
/// AFTER (summed periods: AFTER has no width for them) whose parent has some in AFTER.
/// Largest BEFORE share first, then in tree order.
fn gone(tree: &Tree<Sides, DiffWeight>) -> Vec<u32> {
    let nodes = &tree.nodes;
    let mut gone: Vec<u32> = (1..nodes.len())
        .filter(|&i| {
            let n = &nodes[i].total;
            n.after.size == 0
                && n.before.size > 0
                && nodes[nodes[i].parent as usize].total.after.size > 0
        })
        .map(|i| i as u32)
        .collect();
    gone.sort_by(|&x, &y| {
        let cycles = |i: u32| nodes[i as usize].total.before.size;
        cycles(y).cmp(&cycles(x)).then(x.cmp(&y))
    });
    gone
}

/// `1.23`, or `n/a`.
fn two_places(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"))
}

struct Diff<'a> {
    before: Run<'a>,
    after: Run<'a>,
    tree: Tree<Sides, DiffWeight>,
    /// See [`gone`].
    gone: Vec<u32>,
    /// See [`DiffOptions::counts`].
    counts: (bool, bool),
}

type DiffNode = Node<Sides, DiffWeight>;

impl Diff<'_> {
    /// Inclusive shares of the node's run totals of unhalted cycles (or wall time): (before,
    /// after).
    fn shares(&self, node: &DiffNode) -> (f64, f64) {
        (
            node.total.before.size as f64 / self.before.size as f64,
            node.total.after.size as f64 / self.after.size as f64,
        )
    }

    /// What BEFORE's and AFTER's weights count: `samples`, or `counts` for folded text
    /// ([`DiffOptions::counts`]).
    fn units(&self) -> (&'static str, &'static str) {
        (weight_unit(self.counts.0), weight_unit(self.counts.1))
    }

    /// Whether the picture is of wall time.
    fn of_wall(&self) -> bool {
        self.after.wall.is_some()
    }

    fn any_instructions(&self) -> bool {
        self.before.instructions.is_some() || self.after.instructions.is_some()
    }

    fn both_stalls(&self) -> bool {
        self.before.stalls.is_some() && self.after.stalls.is_some()
    }

    /// The frame names from the process frame down to `index`, joined by `;`.
    fn path(&self, index: u32) -> String {
        let mut names = Vec::new();
        let mut i = index as usize;
        while i != 0 {
            names.push(self.name(&self.tree.nodes[i]));
            i = self.tree.nodes[i].parent as usize;
        }
        names.reverse();
        names.join(";")
    }

    fn gone_lines(&self) -> u32 {
        let rows = self.gone.len().min(GONE_ROWS);
        let more = usize::from(self.gone.len() > GONE_ROWS);
        (1 + rows + more) as u32
    }
}

impl Picture for Diff<'_> {
    type Frame = Sides;
    type Weight = DiffWeight;

    fn tree(&self) -> &Tree<Sides, DiffWeight> {
        &self.tree
    }

    fn total(&self) -> u64 {
        self.after.size
    }

    fn name(&self, node: &DiffNode) -> &str {
        let frame = node.frame.and_then(|s| {
            s.after
                .map(|id| self.after.profile.frame(id))
                .or_else(|| s.before.map(|id| self.before.profile.frame(id)))
        });
        frame.map_or("all", |f| f.name.as_str())
    }

    fn fill(&self, node: &DiffNode) -> Rgb {
        let (b, a) = self.shares(node);
        diff_color(a - b)
    }

    fn write_details<O: Write>(&self, w: &mut O, node: &DiffNode) -> io::Result<()> {
        let sides = node.frame.unwrap_or_default();
        let b_frame = sides.before.map(|id| self.before.profile.frame(id));
        let a_frame = sides.after.map(|id| self.after.profile.frame(id));
        if let Some(f) = a_frame.or(b_frame) {
            write_origin(w, f)?;
        }
        if let (Some(b), Some(a)) = (b_frame, a_frame) {
            if b.module != a.module && !b.module.is_empty() {
                write!(w, "\nmodule in BEFORE: {}", Esc(&b.module))?;
            }
        }
        let t = &node.total;
        let (bs, as_) = self.shares(node);
        if self.of_wall() {
            for (run, c, share) in [("before", &t.before, bs), ("after", &t.after, as_)] {
                write!(
                    w,
                    "\n{run}: wall {} ({}): on-CPU {}, runnable {}, blocked {}",
                    Ms(c.size),
                    Percent(Some(share), 2),
                    Ms(c.wall[0]),
                    Ms(c.wall[1]),
                    Ms(c.wall[2]),
                )?;
            }
            let (before, after) = (
                Thousands(t.before.cycles.samples),
                Thousands(t.after.cycles.samples),
            );
            match self.units() {
                (b, a) if b == a => write!(w, "\ncycles {b}: {before} → {after}")?,
                (b, a) => write!(w, "\ncycles: {before} {b} → {after} {a}")?,
            }
            write!(
                w,
                "\nchange: {} points of wall time (",
                Signed((as_ - bs) * 100.0, 2),
            )?;
        } else {
            write!(
                w,
                "\nbefore: {} {}, {} cycles ({})\nafter: {} {}, {} cycles ({})\nchange: {} points (",
                Thousands(t.before.cycles.samples),
                self.units().0,
                Events(t.before.cycles.period),
                Percent(Some(bs), 2),
                Thousands(t.after.cycles.samples),
                self.units().1,
                Events(t.after.cycles.period),
                Percent(Some(as_), 2),
                Signed((as_ - bs) * 100.0, 2),
            )?;
        }
        if t.before.size == 0 {
            write!(w, "new in AFTER)")?;
        } else {
            write!(w, "{}% relative)", Signed((as_ / bs - 1.0) * 100.0, 1))?;
        }
        if self.both_stalls() {
            let (b, a) = (t.before.stall_share(), t.after.stall_share());
            write!(
                w,
                "\nstalled: {} → {} of cycles",
                Percent(b, 1),
                Percent(a, 1)
            )?;
            if let (Some(b), Some(a)) = (b, a) {
                write!(w, " ({} points)", Signed((a - b) * 100.0, 1))?;
            }
        }
        if self.any_instructions() {
            let cpi = |run: &Run, c: &SideCounts| run.instructions.and_then(|_| c.cpi());
            write!(
                w,
                "\nCPI: {} → {}",
                two_places(cpi(&self.before, &t.before)),
                two_places(cpi(&self.after, &t.after))
            )?;
        }
        Ok(())
    }

    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()> {
        let b_event = &self.before.profile.events[self.before.cycles].name;
        let a_event = &self.after.profile.events[self.after.cycles].name;
        write!(
            w,
            "before: {} {} · after: {} {} (",
            Thousands(self.before.total.samples),
            weight_unit(self.counts.0),
            Thousands(self.after.total.samples),
            weight_unit(self.counts.1)
        )?;
        if b_event == a_event {
            write!(w, "event {})", a_event)?;
        } else {
            write!(w, "events {} → {})", b_event, a_event)?;
        }
        if self.of_wall() {
            write!(
                w,
                " · wall time: {} → {} (widths and colours)",
                Ms(self.before.size),
                Ms(self.after.size)
            )?;
        }
        if self.before.stalls.is_some() || self.after.stalls.is_some() {
            let share =
                |run: &Run, counts: &SideCounts| run.stalls.and_then(|_| counts.stall_share());
            let root = self.tree.root();
            write!(
                w,
                " · stalled: {} → {}",
                Percent(share(&self.before, &root.before), 1),
                Percent(share(&self.after, &root.after), 1)
            )?;
        }
        if self.any_instructions() {
            let cpi = |run: &Run, c: &SideCounts| run.instructions.and_then(|_| c.cpi());
            let root = self.tree.root();
            write!(
                w,
                " · CPI: {} → {}",
                two_places(cpi(&self.before, &root.before)),
                two_places(cpi(&self.after, &root.after))
            )?;
        }
        Ok(())
    }

    fn legend(&self, width: u32) -> Option<Legend> {
        let width = f64::from(width);
        let bar = if width >= 900.0 { 300.0 } else { width / 3.0 };
        // Labels at their places on the square-root scale; the intermediate ones only where
        // the bar is long enough to keep them apart.
        let points: &[i32] = if bar >= 240.0 {
            &[-20, -10, -5, -1, 0, 1, 5, 10, 20]
        } else {
            &[-20, 0, 20]
        };
        let labels = points
            .iter()
            .map(|&p| {
                let at = (diff_position(f64::from(p) / 100.0) + 1.0) / 2.0;
                let text = if p > 0 {
                    format!("+{p}")
                } else {
                    p.to_string()
                };
                (at, text)
            })
            .collect();
        Some(Legend {
            id: "diff-scale",
            caption: if self.of_wall() {
                "wall-time share change (points):".into()
            } else {
                "share change (points):".into()
            },
            stops: vec![(0.0, DIFF_SHRANK), (0.5, DIFF_NEUTRAL), (1.0, DIFF_GREW)],
            labels,
            bar,
            swatches: Vec::new(),
        })
    }

    fn style(&self) -> &str {
        "#frames .f rect { stroke: #f8f8f6; stroke-width: 0.5; }\n#gone .h { font-weight: bold; }\n"
    }

    fn section_height(&self) -> u32 {
        14 + ROW * self.gone_lines()
    }

    /// The list of vanished call paths: a heading, then one row per path (share, path), then
    /// how many more there are.
    fn write_section<O: Write>(&self, w: &mut O, top: u32, width: u32) -> io::Result<()> {
        let nodes = &self.tree.nodes;
        let b_total = self.before.size;
        // Shares of BEFORE's unhalted cycles (or wall time), as the frames' shares are.
        let before_of = |i: u32| nodes[i as usize].total.before.size;
        let share = |cycles: u64| Percent(ratio(cycles, b_total), 2);
        let what = if self.of_wall() {
            "wall time".to_string()
        } else {
            format!("cycles {}", self.units().0)
        };
        let all: u64 = self
            .gone
            .iter()
            .fold(0u64, |s, &i| s.saturating_add(before_of(i)));
        writeln!(w, r#"<g id="gone">"#)?;
        let mut y = top + 24;
        let heading = if self.gone.is_empty() {
            format!("Gone in AFTER: none (every call path of BEFORE still has {what})")
        } else {
            format!(
                "Gone in AFTER: {} call path(s) with {what} in BEFORE and none in AFTER, {} of BEFORE:",
                self.gone.len(),
                share(all)
            )
        };
        // One line (the section's height is known before the width): cut, with the whole
        // heading as its tooltip, where it does not fit.
        let fitted = wrap(&heading, f64::from(width) - 2.0 * XPAD, TEXT_PX, 1);
        write!(
            w,
            r#"<text class="h" x="{XPAD}" y="{y}">{}"#,
            Esc(&fitted.lines[0])
        )?;
        if fitted.cut {
            write!(w, "<title>{}</title>", Esc(&heading))?;
        }
        writeln!(w, "</text>")?;
        // Lines of text, unlike frame labels, run to the image's edge: fitted with the 0.61 em
        // advance of the common monospace fonts (DejaVu Sans Mono, Liberation Mono: 0.60 em)
        // rather than FlameGraph's 0.59 estimate, which let a long path run past the edge.
        let path_width = (f64::from(width) - 2.0 * XPAD - GONE_PATH_LEFT) * 0.59 / 0.61;
        for &i in self.gone.iter().take(GONE_ROWS) {
            y += ROW;
            let path = self.path(i);
            let node = &nodes[i as usize];
            write!(w, r#"<g class="gone-row"><title>{}"#, Esc(&path))?;
            if let Some(id) = node.frame.and_then(|s| s.before) {
                write_origin(w, self.before.profile.frame(id))?;
            }
            let before = &node.total.before;
            if self.of_wall() {
                write!(
                    w,
                    "\nbefore: wall {} ({}): on-CPU {}, runnable {}, blocked {}\nafter: no wall time",
                    Ms(before.size),
                    share(before.size),
                    Ms(before.wall[0]),
                    Ms(before.wall[1]),
                    Ms(before.wall[2]),
                )?;
            } else {
                write!(
                    w,
                    "\nbefore: {} {}, {} cycles ({})\nafter: no cycles {}",
                    Thousands(before.cycles.samples),
                    self.units().0,
                    Events(before_of(i)),
                    share(before_of(i)),
                    self.units().1
                )?;
            }
            if self.before.stalls.is_some() {
                write!(
                    w,
                    "\nstalled in BEFORE: {} of cycles",
                    Percent(node.total.before.stall_share(), 1)
                )?;
            }
            writeln!(
                w,
                r#"</title><text x="{:.1}" y="{y}" text-anchor="end">{}</text><text x="{:.1}" y="{y}">{}</text></g>"#,
                XPAD + GONE_SHARE_RIGHT,
                share(before_of(i)),
                XPAD + GONE_PATH_LEFT,
                fit_label_tail(&path, path_width)
            )?;
        }
        if self.gone.len() > GONE_ROWS {
            y += ROW;
            let rest = &self.gone[GONE_ROWS..];
            let cycles = rest
                .iter()
                .fold(0u64, |s, &i| s.saturating_add(before_of(i)));
            writeln!(
                w,
                r#"<text x="{:.1}" y="{y}">+{} more, {} of BEFORE together</text>"#,
                XPAD + GONE_PATH_LEFT,
                rest.len(),
                share(cycles)
            )?;
        }
        writeln!(w, "</g>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_profile::{EventColumn, Frame, FrameKind};

    /// A pseudo-random profile over a few names (xorshift, fixed seed).
    fn random_profile(seed: u64, module: &str) -> Profile {
        let mut p = Profile::new(vec![EventColumn {
            name: "cycles".into(),
        }]);
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let names = ["main", "a", "b", "c", "d"];
        for _ in 0..300 {
            let depth = 1 + next() % 5;
            let frames: Vec<FrameId> = (0..depth)
                .map(|d| {
                    p.intern(Frame {
                        name: if d == 0 {
                            "app".into()
                        } else {
                            names[(next() % 5) as usize].into()
                        },
                        module: module.into(),
                        kind: FrameKind::User,
                    })
                })
                .collect();
            let n = next() % 7;
            p.add(
                &frames,
                0,
                Count {
                    samples: n,
                    period: n,
                },
            );
        }
        p
    }

    #[test]
    fn every_change_is_its_own_plus_its_childrens() {
        let before = random_profile(0x1234_5678, "v1");
        let after = random_profile(0x9abc_def0, "v2");
        let run = |profile, total| Run::new(profile, 0, None, None, None, total);
        let (b, a) = (run(&before, before.total(0)), run(&after, after.total(0)));
        let tree = build(&b, &a);
        let (bt, at) = (b.total.period as f64, a.total.period as f64);
        let change =
            |w: &DiffWeight| w.after.cycles.period as f64 / at - w.before.cycles.period as f64 / bt;
        let nodes = &tree.nodes;
        assert_eq!(change(&nodes[0].total), 0.0);
        let mut gone = 0;
        for (i, node) in nodes.iter().enumerate() {
            let children: f64 = nodes
                .iter()
                .enumerate()
                .filter(|&(j, c)| j != i && c.parent as usize == i)
                .map(|(_, c)| change(&c.total))
                .sum();
            let expected = change(&node.own) + children;
            assert!(
                (change(&node.total) - expected).abs() < 1e-12,
                "node {i}: {} != {expected}",
                change(&node.total)
            );
            if node.total.after.cycles.samples == 0 && node.total.before.cycles.samples > 0 {
                gone += 1;
            }
        }
        // The seeds give both new and vanished paths, so both kinds were checked.
        assert!(gone > 0);
        assert!(nodes
            .iter()
            .any(|n| n.total.before.cycles.samples == 0 && n.total.after.cycles.samples > 0));
        // Matched by name although the modules differ: one process frame.
        assert_eq!(nodes.iter().filter(|n| n.depth == 1).count(), 1);
    }
}
