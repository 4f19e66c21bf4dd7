//! The wall-time CPI flame graph: [`render_wall`].
//!
//! Frame width is wall-clock time: the nanoseconds of the profile's three wall-time columns
//! (on-CPU, runnable, blocked; `cpiflame_profile::wall`) in the frame and its children. Each
//! frame's rectangle is cut, left to right, into segments in proportion to the time its
//! threads spent in each state:
//!
//! 1. on the CPU, split by the frame's inclusive stall share into **running** (red) and
//!    **stalled** (blue) when there is a stall column: `stalled = on-CPU × stall period /
//!    cycles period`, rounded to the nanosecond, the share that colours the on-CPU graph's
//!    frame; with instructions but no stalls one **on-CPU** segment coloured by the frame's CPI
//!    on the CPI scale; with neither one teal **on-CPU** segment;
//! 2. **runnable**, waiting for a CPU (amber);
//! 3. **blocked**, off the CPU and not runnable (pale grey with horizontal stripes).
//!
//! Why segments rather than one blended colour: the question a wall-time graph answers is
//! "how much of this frame's time was spent doing what", and lengths side by side are read
//! far more exactly than a mixture of hues; the on-CPU part keeps the stall scale's red and
//! blue, so the graph reads like the on-CPU one where threads run, and the off-CPU states
//! read apart from it by lightness and texture, not only hue (see `color.rs`).
//!
//! Each frame keeps the one `<rect>` and `<text>` the embedded script moves on zoom and
//! recolours on search; the rectangle is painted by a `<pattern>` of its own, written after
//! the label, whose `viewBox` spans a million units across (segment edges are rounded to a
//! millionth of the frame) and the frame's height down, so the segments follow the rectangle
//! wherever the script places it. A frame in one state that is not blocked is painted flat. The script is
//! the same as every other picture's.
//!
//! Tooltips give the frame's wall time and its four states (ms and share of the frame), the
//! top places its blocked time was spent in ([`WaitReason`]: the kind of wait and the
//! function that tells), and the on-CPU graph's counts.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufWriter, Write};

use cpiflame_profile::interval::Interval;
use cpiflame_profile::lines::HotLine;
use cpiflame_profile::wall::{self, WaitReason, WallColumns};
use cpiflame_profile::{Column, Columns, Width};
use cpiflame_profile::{FrameId, FrameKind, Profile, SourceLines};

use crate::color::{
    cpi_color, uncertain_color, Rgb, CPI_HIGH, CPI_LOW, STALL_BLUE, STALL_MID, STALL_RED,
    WALL_BLOCKED, WALL_BLOCKED_STRIPES, WALL_ON_CPU, WALL_RUNNABLE,
};
use crate::hot;
use crate::page::{self, write_origin, Legend, Look, Picture, Swatch};
use crate::ratio::{cpi, ipc, too_wide, two_places, write_interval, Colour, UNCERTAIN_LABEL};
use crate::text::{ratio, weight_unit, Esc, Events, Percent, Thousands};
use crate::tree::{self, Node, Tree, WallWeight, Weight};
use crate::{check_look, check_profile, Options, RenderError};

/// The legend's words for the frames of off-CPU time without a switch-out stack.
const NO_STACK_RUNNABLE_LABEL: &str = "[runnable]: runnable, no switch-out stack";
const NO_STACK_BLOCKED_LABEL: &str = "[blocked]: blocked, no switch-out stack";
/// The legend's words for the frame of on-CPU time of a thread without an on-CPU sample.
const UNSAMPLED_LABEL: &str = "[on-CPU, not sampled]: on a CPU, no sample of where";

/// How many places a frame's blocked time was spent in are named in its tooltip.
const TOP_REASONS: usize = 3;

/// A state of wall-clock time, as a frame's segment shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// On the CPU, not stalled.
    Running,
    /// On the CPU, stalled.
    Stalled,
    /// On the CPU, not split (no stall column, or no cycles to split by).
    OnCpu,
    /// Ready to run, waiting for a CPU.
    Runnable,
    /// Off the CPU and not runnable.
    Blocked,
}

/// One segment of a frame's rectangle: its state, colour and length in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) state: State,
    pub(crate) fill: Rgb,
    pub(crate) len: u64,
}

/// Width of a frame's pattern in its own units: segment edges are placed to a millionth of
/// the frame, well under a pixel at any zoom. (Nanoseconds themselves would be exact, but
/// browsers lose patterns whose `viewBox` spans tens of billions of units.)
pub(crate) const PATTERN_UNITS: u64 = 1_000_000;

/// `ns` of a frame `n` ns wide in pattern units, rounded half up.
pub(crate) fn pattern_units(ns: u64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let (ns, n) = (u128::from(ns.min(n)), u128::from(n));
    ((ns * u128::from(PATTERN_UNITS) + n / 2) / n) as u64
}

/// On-CPU nanoseconds split into (running, stalled) by the stall share `stalls / cycles`
/// (clamped to 1), rounded half up to the nanosecond; `None` without cycles to divide by.
pub(crate) fn split_on_cpu(on_cpu: u64, stalls: u64, cycles: u64) -> Option<(u64, u64)> {
    if cycles == 0 {
        return None;
    }
    let stalls = u128::from(stalls.min(cycles));
    let cycles = u128::from(cycles);
    let stalled = ((u128::from(on_cpu) * stalls + cycles / 2) / cycles) as u64;
    Some((on_cpu - stalled, stalled))
}

/// The segments of a frame with counts `w`, left to right, leaving out empty ones; their
/// lengths sum to the frame's width.
pub(crate) fn segments(w: &WallWeight, colour: Colour) -> Vec<Segment> {
    let on = w.on_cpu.period;
    let seg = |state, fill, len| Segment { state, fill, len };
    let mut v = Vec::with_capacity(4);
    match colour {
        Colour::Stalls => match split_on_cpu(on, w.cpi.stalls.period, w.cpi.ratio_cycles.period) {
            Some((running, stalled)) => {
                v.push(seg(State::Running, STALL_RED, running));
                v.push(seg(State::Stalled, STALL_BLUE, stalled));
            }
            None => v.push(seg(State::OnCpu, WALL_ON_CPU, on)),
        },
        Colour::Cpi => v.push(seg(State::OnCpu, cpi_color(cpi(&w.cpi)), on)),
        Colour::Name => v.push(seg(State::OnCpu, WALL_ON_CPU, on)),
    }
    v.push(seg(State::Runnable, WALL_RUNNABLE, w.runnable.period));
    v.push(seg(State::Blocked, WALL_BLOCKED, w.blocked.period));
    v.retain(|s| s.len > 0);
    v
}

/// Nanoseconds shown as milliseconds with three significant digits (`123 ms`, `12.3 ms`,
/// `1.23 ms`, `0.0123 ms`), with `,` between thousands above 1000 ms (`12,345 ms`).
pub(crate) struct Ms(pub(crate) u64);

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 as f64 / 1e6;
        if self.0 == 0 {
            f.write_str("0 ms")
        } else if ms >= 999.5 {
            write!(f, "{} ms", Thousands((self.0 + 500_000) / 1_000_000))
        } else {
            // Three significant digits, at most six decimals (a nanosecond); one decimal
            // fewer when rounding carried into a new digit (99.96 → 100.0 → 100).
            let magnitude = ms.log10().floor() as i32;
            let mut decimals = (2 - magnitude).clamp(0, 6) as usize;
            let mut text = format!("{ms:.decimals$}");
            if decimals > 0
                && text
                    .parse::<f64>()
                    .is_ok_and(|v| v >= 10f64.powi(magnitude + 1))
            {
                decimals -= 1;
                text = format!("{ms:.decimals$}");
            }
            write!(f, "{text} ms")
        }
    }
}

/// Draws the wall-time graph of `profile` as SVG (a recording with off-CPU time; see the
/// module documentation for why it is drawn so): frame width is wall-clock time, the
/// nanoseconds of the three columns of `wall`, and every frame is cut into segments by
/// state: running (red) and stalled (blue) on the stall scale (the on-CPU time split by the
/// frame's inclusive stall share), or one on-CPU segment on the CPI scale (no stalls,
/// instructions) or teal (neither); runnable (amber); blocked (pale grey, striped).
/// Tooltips give the four times and the top places the frame's blocked time was spent in
/// ([`WaitReason`](cpiflame_profile::wall::WaitReason)); the statistics line the totals. The
/// on-CPU columns of `columns` need no samples: only wall time must be non-zero.
pub fn render_wall<W: Write>(
    profile: &Profile,
    columns: &Columns,
    wall: WallColumns,
    opts: &Options,
    out: W,
) -> Result<(), RenderError> {
    check_look(opts.width, opts.min_width)?;
    let count = profile.events.len();
    for index in [
        columns.instructions.map(Column::index),
        columns.ratio_cycles.map(Column::index),
    ]
    .into_iter()
    .flatten()
    .chain(wall.all().map(Column::index))
    {
        if index >= count {
            return Err(RenderError::NoSuchEvent { index, count });
        }
    }
    let columns = Columns {
        width: Width::Wall(wall),
        ..*columns
    };
    // The on-CPU columns need not have samples: width is wall time here.
    match check_profile(
        profile,
        columns.cycles.index(),
        columns.stalls.map(Column::index),
    ) {
        Ok(_) | Err(RenderError::NoSamples { .. }) => {}
        Err(e) => return Err(e),
    }
    let colour = match (columns.stalls, columns.instructions) {
        (Some(_), _) => Colour::Stalls,
        (None, Some(_)) => Colour::Cpi,
        (None, None) => Colour::Name,
    };
    let mut reasons = Reasons::default();
    let mut blocked_at = Vec::new();
    let tree = tree::build_wall(profile, &columns, wall.all(), |stack, node| {
        let ns = wall.blocked.of(stack).period;
        // Time without a stack (`[blocked]`) has no place it waited in to name.
        let no_stack = stack
            .frames
            .last()
            .is_some_and(|&id| wall::is_no_stack(profile.frame(id)));
        if ns > 0 && !no_stack {
            let reason = WaitReason::of(stack.frames.iter().map(|&id| profile.frame(id)));
            blocked_at.push((node, reasons.intern(reason), ns));
        }
    });
    let total = tree.root().width();
    if total == 0 {
        return Err(RenderError::NoSamples {
            event: profile.events[wall.on_cpu.index()].name.clone(),
        });
    }
    // Pre-order: a frame's subtree is a range of nodes, so its stacks' blocked time is a range
    // of this list.
    blocked_at.sort_unstable();
    let lines = opts.lines.as_deref();
    let hot = lines.map_or_else(Default::default, |l| hot::hot_lines(&tree, l, &columns));
    let interval_columns = (
        columns.stalls.map(Column::index),
        columns.ratio_denominator().index(),
        columns.instructions.map(Column::index),
    );
    let intervals =
        crate::ratio::frame_intervals(profile, &tree, |w| &w.cpi, colour, interval_columns, opts);
    let picture = Wall {
        profile,
        tree,
        lines,
        hot,
        intervals,
        confidence: opts.confidence,
        columns,
        colour,
        counts: opts.counts,
        total,
        reasons: reasons.list,
        blocked_at,
    };
    let look = Look::of(opts);
    let mut w = BufWriter::with_capacity(1 << 16, out);
    page::write(&picture, &look, &mut w)?;
    w.flush()?;
    Ok(())
}

/// Distinct wait reasons, numbered in order of first appearance.
#[derive(Default)]
struct Reasons<'a> {
    list: Vec<WaitReason<'a>>,
    index: HashMap<WaitReason<'a>, u32>,
}

impl<'a> Reasons<'a> {
    fn intern(&mut self, r: WaitReason<'a>) -> u32 {
        *self.index.entry(r).or_insert_with(|| {
            self.list.push(r);
            (self.list.len() - 1) as u32
        })
    }
}

pub(crate) struct Wall<'a> {
    profile: &'a Profile,
    tree: Tree<FrameId, WallWeight>,
    lines: Option<&'a SourceLines>,
    /// The hottest lines of wide frames, by node index.
    hot: HashMap<u32, Vec<HotLine>>,
    /// Each drawn node's interval of its stall share (or CPI), with intervals asked for.
    intervals: Vec<Option<Interval>>,
    confidence: Option<f64>,
    columns: Columns,
    colour: Colour,
    /// See [`Options::counts`](crate::Options::counts).
    counts: bool,
    /// Wall nanoseconds of the whole profile: the full width.
    total: u64,
    reasons: Vec<WaitReason<'a>>,
    /// (node the stack ended in, reason, blocked ns), sorted.
    blocked_at: Vec<(u32, u32, u64)>,
}

type WallNode = Node<FrameId, WallWeight>;

impl Wall<'_> {
    /// Whether node `i`'s on-CPU ratio is too uncertain for the colour scale (as in the
    /// on-CPU graph): its running/stalled split or CPI segment is then drawn washed out.
    fn uncertain_at(&self, i: usize) -> bool {
        self.intervals
            .get(i)
            .is_some_and(|interval| too_wide(self.colour, interval.as_ref()))
    }

    /// The frame's segments, the on-CPU ones washed out where the frame is uncertain: their
    /// split (or CPI) is what the interval is of, while its off-CPU time is traced, not sampled.
    fn segments_of(&self, node: &WallNode) -> Vec<Segment> {
        let mut v = segments(&node.total, self.colour);
        if self.uncertain_at(self.tree.index_of(node) as usize) {
            for s in &mut v {
                if matches!(s.state, State::Running | State::Stalled)
                    || (s.state == State::OnCpu && self.colour == Colour::Cpi)
                {
                    s.fill = uncertain_color(s.fill);
                }
            }
        }
        v
    }

    /// The places a frame's blocked time was spent in, most first: (reason index, ns).
    fn blocked_in(&self, node: &WallNode) -> Vec<(u32, u64)> {
        let nodes = &self.tree.nodes;
        let index = self.tree.index_of(node);
        let first = self.blocked_at.partition_point(|&(n, _, _)| n < index);
        let last = self
            .blocked_at
            .partition_point(|&(n, _, _)| n < nodes[index as usize].end);
        let mut sums: Vec<(u32, u64)> = Vec::new();
        for &(_, reason, ns) in &self.blocked_at[first..last] {
            match sums.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, sum)) => *sum = sum.saturating_add(ns),
                None => sums.push((reason, ns)),
            }
        }
        sums.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        sums
    }
}

impl Picture for Wall<'_> {
    type Frame = FrameId;
    type Weight = WallWeight;

    fn tree(&self) -> &Tree<FrameId, WallWeight> {
        &self.tree
    }

    fn total(&self) -> u64 {
        self.total
    }

    fn name(&self, node: &WallNode) -> &str {
        node.frame
            .map_or("all", |id| self.profile.frame(id).name.as_str())
    }

    fn kind(&self, node: &WallNode) -> Option<FrameKind> {
        node.frame.map(|id| self.profile.frame(id).kind)
    }

    fn fill(&self, node: &WallNode) -> Rgb {
        self.segments_of(node)
            .first()
            .map_or(WALL_BLOCKED, |s| s.fill)
    }

    fn patterned(&self, node: &WallNode) -> bool {
        let s = self.segments_of(node);
        s.len() > 1 || s.iter().any(|s| s.state == State::Blocked)
    }

    fn write_pattern<O: Write>(
        &self,
        w: &mut O,
        id: &str,
        node: &WallNode,
        height: u32,
    ) -> io::Result<()> {
        let n = node.total.width();
        write!(
            w,
            r#"<pattern id="{id}" width="1" height="1" viewBox="0 0 {PATTERN_UNITS} {height}" preserveAspectRatio="none">"#
        )?;
        let mut ns = 0u64;
        let mut x = 0u64;
        for s in self.segments_of(node) {
            // Edges are rounded once each, so segments touch and the last ends at the edge.
            ns += s.len;
            let end = pattern_units(ns, n);
            let width = end - x;
            write!(
                w,
                r#"<rect x="{x}" width="{width}" height="{height}" fill="{}"/>"#,
                s.fill
            )?;
            if s.state == State::Blocked {
                // Stripes two pixels high, four apart, clear of the frame's top and bottom.
                for y in (2..height.saturating_sub(2)).step_by(4) {
                    write!(
                        w,
                        r#"<rect x="{x}" y="{y}" width="{width}" height="2" fill="{WALL_BLOCKED_STRIPES}"/>"#
                    )?;
                }
            }
            x = end;
        }
        write!(w, "</pattern>")
    }

    fn style(&self) -> &str {
        // A hairline of background between frames: striped blocked siblings would otherwise
        // run into one. The outlines (this one and the hover one) are for the frame's
        // rectangle, not the segments inside its pattern.
        "#frames .f rect { stroke: #f8f8f6; stroke-width: 0.5; }\n\
         #frames .f pattern rect, #frames .f:hover pattern rect { stroke: none; }\n"
    }

    /// Totals of the whole profile: wall time and its three parts.
    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()> {
        let all = self.tree.root();
        let part = |ns: u64| Percent(ratio(ns, self.total), 1);
        write!(
            w,
            "wall: {} · on-CPU: {} ({}) · runnable: {} ({}) · blocked: {} ({})",
            Ms(self.total),
            Ms(all.on_cpu.period),
            part(all.on_cpu.period),
            Ms(all.runnable.period),
            part(all.runnable.period),
            Ms(all.blocked.period),
            part(all.blocked.period),
        )?;
        match self.colour {
            Colour::Stalls => write!(
                w,
                " · stalled: {} of cycles",
                Percent(ratio(all.cpi.stalls.period, all.cpi.ratio_cycles.period), 1)
            ),
            Colour::Cpi => write!(w, " · CPI {}", two_places(cpi(&all.cpi))),
            Colour::Name => Ok(()),
        }
    }

    fn legend(&self, width: u32) -> Option<Legend> {
        let width = f64::from(width);
        let swatch = |fill, label| Swatch {
            fill,
            stripes: None,
            label,
        };
        let runnable = swatch(WALL_RUNNABLE, "runnable");
        let blocked = Swatch {
            stripes: Some(WALL_BLOCKED_STRIPES),
            ..swatch(WALL_BLOCKED, "blocked")
        };
        // Washed-out on-CPU parts get a legend entry when the graph has any.
        let washed = (0..self.tree.nodes.len())
            .any(|i| self.uncertain_at(i))
            .then(|| swatch(uncertain_color(STALL_MID), UNCERTAIN_LABEL));
        let mut legend = match self.colour {
            Colour::Stalls => Legend {
                id: "wall-states",
                caption: "wall time:".into(),
                stops: Vec::new(),
                labels: Vec::new(),
                bar: 0.0,
                swatches: vec![
                    swatch(STALL_RED, "running"),
                    swatch(STALL_BLUE, "stalled"),
                    runnable,
                    blocked,
                ],
            },
            Colour::Cpi => Legend {
                id: "cpi-scale",
                caption: "on-CPU, CPI (log scale):".into(),
                stops: vec![(0.0, STALL_RED), (0.5, STALL_MID), (1.0, STALL_BLUE)],
                labels: vec![
                    (0.0, format!("≤{CPI_LOW}")),
                    (0.25, "0.5".into()),
                    (0.5, "1".into()),
                    (0.75, "2".into()),
                    (1.0, format!("≥{CPI_HIGH}")),
                ],
                bar: if width >= 600.0 { 200.0 } else { width / 3.0 },
                swatches: vec![runnable, blocked],
            },
            Colour::Name => Legend {
                id: "wall-states",
                caption: "wall time:".into(),
                stops: Vec::new(),
                labels: Vec::new(),
                bar: 0.0,
                swatches: vec![swatch(WALL_ON_CPU, "on-CPU"), runnable, blocked],
            },
        };
        legend.swatches.extend(washed);
        // Off-CPU time without a switch-out stack, drawn directly under its thread: the legend
        // says what those frames are when the graph has any.
        let (mut runnable_no_stack, mut blocked_no_stack) = (false, false);
        let mut unsampled = false;
        for node in &self.tree.nodes {
            if let Some(frame) = node.frame.map(|id| self.profile.frame(id)) {
                unsampled |= wall::is_unsampled(frame);
                if wall::is_no_stack(frame) {
                    let runnable = frame.name == wall::NO_STACK_RUNNABLE;
                    runnable_no_stack |= runnable;
                    blocked_no_stack |= !runnable;
                }
            }
        }
        if runnable_no_stack {
            legend
                .swatches
                .push(swatch(WALL_RUNNABLE, NO_STACK_RUNNABLE_LABEL));
        }
        if blocked_no_stack {
            legend.swatches.push(Swatch {
                stripes: Some(WALL_BLOCKED_STRIPES),
                ..swatch(WALL_BLOCKED, NO_STACK_BLOCKED_LABEL)
            });
        }
        if unsampled {
            legend.swatches.push(swatch(WALL_ON_CPU, UNSAMPLED_LABEL));
        }
        Some(legend)
    }

    /// The `<title>` text after the name: origin, wall time and its states, where it was
    /// blocked, then the on-CPU counts.
    fn write_details<O: Write>(&self, w: &mut O, node: &WallNode) -> io::Result<()> {
        if let Some(id) = node.frame {
            let frame = self.profile.frame(id);
            write_origin(w, frame)?;
            if wall::is_no_stack(frame) {
                write!(
                    w,
                    "\nthe thread's off-CPU time whose switch-out has no stack: not where it waited"
                )?;
            }
            if wall::is_unsampled(frame) {
                write!(
                    w,
                    "\nthe thread's on-CPU time (from its switches) with no on-CPU sample: not where it ran"
                )?;
            }
        }
        let c = &node.total;
        let wall = c.width();
        let part = |ns: u64| Percent(ratio(ns, wall), 1);
        write!(
            w,
            "\nwall: {} ({} of all)",
            Ms(wall),
            Percent(ratio(wall, self.total), 2)
        )?;
        let on = c.on_cpu.period;
        match (
            self.colour,
            split_on_cpu(on, c.cpi.stalls.period, c.cpi.ratio_cycles.period),
        ) {
            (Colour::Stalls, Some((running, stalled))) => write!(
                w,
                "\nrunning: {} ({})\nstalled: {} ({})",
                Ms(running),
                part(running),
                Ms(stalled),
                part(stalled)
            )?,
            _ => write!(w, "\non-CPU: {} ({})", Ms(on), part(on))?,
        }
        write!(
            w,
            "\nrunnable: {} ({})\nblocked: {} ({})",
            Ms(c.runnable.period),
            part(c.runnable.period),
            Ms(c.blocked.period),
            part(c.blocked.period)
        )?;
        let places = self.blocked_in(node);
        for &(reason, ns) in places.iter().take(TOP_REASONS) {
            let r = &self.reasons[reason as usize];
            write!(w, "\nblocked in {}", r.kind.label())?;
            if let Some(by) = r.by {
                write!(w, " ({})", Esc(by))?;
            }
            write!(
                w,
                ": {} ({} of blocked)",
                Ms(ns),
                Percent(ratio(ns, c.blocked.period), 0)
            )?;
        }
        if places.len() > TOP_REASONS {
            let rest: u64 = places[TOP_REASONS..].iter().map(|&(_, ns)| ns).sum();
            write!(
                w,
                "\nblocked in {} other places: {}",
                places.len() - TOP_REASONS,
                Ms(rest)
            )?;
        }
        // The on-CPU graph's numbers: samples of the cycles event, the stall share, CPI.
        let cycles = &self.profile.events[self.columns.cycles.index()].name;
        write!(
            w,
            "\n{}: {} {}, {} events",
            Esc(cycles),
            Thousands(c.cpi.cycles.samples),
            weight_unit(self.counts),
            Events(c.cpi.cycles.period)
        )?;
        let index = self.tree.index_of(node) as usize;
        let interval = match (self.confidence, self.intervals.get(index)) {
            (Some(confidence), Some(Some(i))) => Some((confidence, i)),
            _ => None,
        };
        if self.colour == Colour::Stalls {
            write!(
                w,
                " · stalled: {} of cycles",
                Percent(ratio(c.cpi.stalls.period, c.cpi.ratio_cycles.period), 1)
            )?;
            if let Some((confidence, i)) = interval {
                write_interval(w, confidence, i, |v| Percent(Some(v), 1).to_string())?;
            }
        }
        if self.columns.instructions.is_some() && c.cpi.instructions.period > 0 {
            write!(
                w,
                "\nCPI: {} · IPC: {}",
                two_places(cpi(&c.cpi)),
                two_places(ipc(&c.cpi))
            )?;
            if let (Colour::Cpi, Some((confidence, i))) = (self.colour, interval) {
                write_interval(w, confidence, i, |v| two_places(Some(v)))?;
            }
        }
        if interval.is_some() && self.uncertain_at(index) {
            write!(w, "\n{UNCERTAIN_LABEL}: on-CPU part drawn washed out")?;
        }
        if let (Some(lines), Some(hot)) = (self.lines, self.hot.get(&self.tree.index_of(node))) {
            hot::write_hot_lines(w, hot, lines)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_profile::Count;

    fn ns(period: u64) -> Count {
        Count { samples: 1, period }
    }

    #[test]
    fn on_cpu_time_is_split_by_the_stall_share_to_the_nanosecond() {
        // 1/3 of 10 ns stalled: 3.33 rounds to 3; 2/3: 6.67 rounds to 7.
        assert_eq!(split_on_cpu(10, 1, 3), Some((7, 3)));
        assert_eq!(split_on_cpu(10, 2, 3), Some((3, 7)));
        // Half a nanosecond rounds up.
        assert_eq!(split_on_cpu(1, 1, 2), Some((0, 1)));
        // More stalls than cycles (sampling noise) is all stalled, not more.
        assert_eq!(split_on_cpu(10, 9, 3), Some((0, 10)));
        assert_eq!(split_on_cpu(10, 0, 3), Some((10, 0)));
        assert_eq!(split_on_cpu(10, 5, 0), None);
        // No overflow at the ends of u64.
        assert_eq!(
            split_on_cpu(u64::MAX, u64::MAX - 1, u64::MAX),
            Some((1, u64::MAX - 1))
        );
    }

    #[test]
    fn pattern_edges_are_millionths_of_the_frame_rounded() {
        assert_eq!(pattern_units(0, 7), 0);
        assert_eq!(pattern_units(7, 7), PATTERN_UNITS);
        // 1/3 = 333,333.33; 2/3 = 666,666.67; 1/8 = 125,000 exactly; half up.
        assert_eq!(pattern_units(1, 3), 333_333);
        assert_eq!(pattern_units(2, 3), 666_667);
        assert_eq!(pattern_units(1, 8), 125_000);
        assert_eq!(pattern_units(1, 2_000_000), 1);
        assert_eq!(pattern_units(5, 0), 0);
        // Huge frames (hours of wall time in ns) do not overflow.
        assert_eq!(pattern_units(u64::MAX / 2, u64::MAX), 500_000);
    }

    #[test]
    fn segments_follow_the_colour_and_leave_out_empty_states() {
        let mut w = WallWeight {
            on_cpu: ns(1000),
            runnable: ns(0),
            blocked: ns(500),
            ..WallWeight::default()
        };
        w.cpi.ratio_cycles = ns(40);
        w.cpi.stalls = ns(10);
        let lens = |colour| -> Vec<(State, u64)> {
            segments(&w, colour)
                .iter()
                .map(|s| (s.state, s.len))
                .collect()
        };
        assert_eq!(
            lens(Colour::Stalls),
            vec![
                (State::Running, 750),
                (State::Stalled, 250),
                (State::Blocked, 500)
            ]
        );
        assert_eq!(
            lens(Colour::Name),
            vec![(State::OnCpu, 1000), (State::Blocked, 500)]
        );
        // No instructions: the CPI is unknown, grey as in the on-CPU graph.
        let cpi = segments(&w, Colour::Cpi);
        assert_eq!(cpi[0].fill, cpi_color(None));
        // Stalls but no cycles to divide by: on-CPU, not split.
        w.cpi.ratio_cycles = ns(0);
        assert_eq!(
            segments(&w, Colour::Stalls)[0],
            Segment {
                state: State::OnCpu,
                fill: WALL_ON_CPU,
                len: 1000
            }
        );
    }

    #[test]
    fn milliseconds_have_three_significant_digits() {
        let cases = [
            (0, "0 ms"),
            (1, "0.000001 ms"),
            (12_345, "0.0123 ms"),
            (500_000, "0.500 ms"),
            (999_999, "1.00 ms"),
            (1_234_567, "1.23 ms"),
            (12_345_678, "12.3 ms"),
            (99_960_000, "100 ms"),
            (123_456_789, "123 ms"),
            (999_400_000, "999 ms"),
            (999_600_000, "1,000 ms"),
            (12_345_678_901, "12,346 ms"),
        ];
        for (ns, text) in cases {
            assert_eq!(Ms(ns).to_string(), text, "{ns} ns");
        }
    }
}
