//! The CPI flame graph: width = unhalted cycles, colour = inclusive stall share, or CPI when
//! there is no stall event but there are instructions.

use std::io::{self, BufWriter, Write};

use std::collections::HashMap;

use cpiflame_profile::interval::Interval;
use cpiflame_profile::lines::HotLine;
use cpiflame_profile::{Column, Columns};
use cpiflame_profile::{Count, FrameId, FrameKind, Profile, SourceLines};

use crate::color::{
    cpi_color, stall_color, uncertain_color, warm_color, Rgb, CPI_HIGH, CPI_LOW, STALL_BLUE,
    STALL_MID, STALL_RED,
};
use crate::hot;
use crate::page::{self, write_origin, Legend, Look, Picture, Swatch};
use crate::ratio::{
    cpi, frame_intervals, ipc, too_wide, two_places, write_interval, Colour, UNCERTAIN_LABEL,
};
use crate::text::{ratio, weight_unit, Events, Percent, Thousands};
use crate::tree::{self, CpiWeight, Node, Tree};
use crate::{validate, Options, RenderError};

/// Draws the CPI flame graph of `profile` as SVG.
///
/// The roles of the profile's columns are `columns` (one `cpiflame_profile::Columns`, built
/// once where the recording is read); stall shares and CPIs divide by
/// [`Columns::ratio_denominator`].
///
/// Frame width is the summed sample period of event column `cycles` (unhalted cycles, not
/// samples: in frequency mode or with leader-sampled groups samples carry different periods;
/// with a fixed period the picture is the same as one drawn from samples) in the frame and its
/// children; siblings are ordered by frame name, then module. The colour depends on the
/// columns given:
///
/// * with `stalls`, every frame's colour is its inclusive stall share, `sum(stall period) /
///   sum(cycles period)` over the frame and its children, on the fixed scale of
///   [`stall_color`](crate::stall_color) (red = not stalled, purple = half, blue = all
///   stalled);
/// * without `stalls` but with `instructions`, every frame's colour is its inclusive CPI,
///   `sum(cycles period) / sum(instructions period)`, on the fixed logarithmic scale of
///   [`cpi_color`](crate::cpi_color) (red = CPI 0.25 or less, violet = 1, blue = 4 or more;
///   grey when no instructions landed under the frame); the statistics line gives the
///   overall CPI and IPC, and a legend shows the scale;
/// * with neither, a plain flame graph is drawn, coloured by a hash of the frame name, whose
///   statistics line says there is no stall data.
///
/// Tooltips give cycles samples and events (the summed period), and with instructions the
/// frame's instructions, CPI and IPC. Frames narrower than `opts.min_width` pixels are left
/// out with their children. The output is deterministic and carries its own search and
/// click-to-zoom script.
///
/// Widths are of the cycles whatever [`Columns::width`] says: the wall-time graph is
/// [`render_wall`](crate::render_wall), the top-down picture
/// [`render_topdown`](crate::render_topdown); the caller decides which kind it draws.
pub fn render_cpi<W: Write>(
    profile: &Profile,
    columns: &Columns,
    opts: &Options,
    out: W,
) -> Result<(), RenderError> {
    let cycles = columns.cycles.index();
    let stalls = columns.stalls.map(Column::index);
    let instructions = columns.instructions.map(Column::index);
    let total = validate(profile, columns, opts)?;
    let tree = tree::build_cpi(profile, columns);
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let look = Look::of(opts);
    let colour = match (stalls, instructions) {
        (Some(_), _) => Colour::Stalls,
        (None, Some(_)) => Colour::Cpi,
        (None, None) => Colour::Name,
    };
    let lines = opts.lines.as_deref();
    let hot = lines.map_or_else(Default::default, |l| hot::hot_lines(&tree, l, columns));
    let ratio_cycles = columns.ratio_denominator().index();
    let interval_columns = (stalls, ratio_cycles, instructions);
    let intervals = frame_intervals(profile, &tree, |w| w, colour, interval_columns, opts);
    let picture = Cpi {
        profile,
        confidence: opts.confidence,
        tree,
        lines,
        hot,
        intervals,
        cycles,
        stalls,
        instructions,
        colour,
        total,
        stall_caption: opts.stall_caption.unwrap_or("cycles stalled:"),
        strip: opts.strip.as_deref(),
        counts: opts.counts,
    };
    page::write(&picture, &look, &mut w)?;
    w.flush()?;
    Ok(())
}

struct Cpi<'a> {
    profile: &'a Profile,
    confidence: Option<f64>,
    tree: Tree<FrameId, CpiWeight>,
    lines: Option<&'a SourceLines>,
    /// The hottest lines of wide frames, by node index.
    hot: HashMap<u32, Vec<HotLine>>,
    /// Each node's interval of the ratio its colour shows (stall share or CPI), with
    /// intervals asked for; empty otherwise.
    intervals: Vec<Option<Interval>>,
    cycles: usize,
    stalls: Option<usize>,
    instructions: Option<usize>,
    colour: Colour,
    /// Cycles counts of the whole profile; the period spans the full width.
    total: Count,
    stall_caption: &'static str,
    strip: Option<&'a crate::Strip>,
    /// See [`Options::counts`].
    counts: bool,
}

type CpiNode = Node<FrameId, CpiWeight>;

impl Cpi<'_> {
    fn uncertain(&self, node: &CpiNode) -> bool {
        self.uncertain_at(self.tree.index_of(node) as usize)
    }

    /// Whether node `i`'s interval is too wide to place it on the colour scale: wider than
    /// a quarter of the stall scale, or than one of the CPI scale's four octaves.
    fn uncertain_at(&self, i: usize) -> bool {
        self.intervals
            .get(i)
            .is_some_and(|interval| too_wide(self.colour, interval.as_ref()))
    }

    /// `, 95% interval LO–HI` after the ratio the colour shows, and a line saying the frame
    /// is drawn washed out when it is.
    fn write_interval<O: Write>(
        &self,
        w: &mut O,
        node: &CpiNode,
        show: impl Fn(f64) -> String,
    ) -> io::Result<()> {
        let (Some(confidence), Some(Some(i))) = (
            self.confidence,
            self.intervals.get(self.tree.index_of(node) as usize),
        ) else {
            return Ok(());
        };
        write_interval(w, confidence, i, show)?;
        if self.uncertain(node) {
            write!(w, "\n{UNCERTAIN_LABEL}: drawn washed out")?;
        }
        Ok(())
    }
}

impl Picture for Cpi<'_> {
    type Frame = FrameId;
    type Weight = CpiWeight;

    fn tree(&self) -> &Tree<FrameId, CpiWeight> {
        &self.tree
    }

    fn strip_height(&self) -> u32 {
        self.strip.map_or(0, |_| crate::strip::STRIP_HEIGHT)
    }

    fn write_strip<O: Write>(&self, w: &mut O, top: u32, width: u32) -> io::Result<()> {
        match self.strip {
            Some(strip) => crate::strip::write(w, strip, self.colour, top, width),
            None => Ok(()),
        }
    }

    fn total(&self) -> u64 {
        self.total.period
    }

    fn name(&self, node: &CpiNode) -> &str {
        node.frame
            .map_or("all", |id| self.profile.frame(id).name.as_str())
    }

    fn kind(&self, node: &CpiNode) -> Option<FrameKind> {
        node.frame.map(|id| self.profile.frame(id).kind)
    }

    fn fill(&self, node: &CpiNode) -> Rgb {
        let colour = match self.colour {
            Colour::Stalls => stall_color(ratio(
                node.total.stalls.period,
                node.total.ratio_cycles.period,
            )),
            Colour::Cpi => cpi_color(cpi(&node.total)),
            Colour::Name => warm_color(self.name(node)),
        };
        if self.uncertain(node) {
            uncertain_color(colour)
        } else {
            colour
        }
    }

    /// The statistics line: totals of the whole profile.
    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()> {
        let cycles_event = &self.profile.events[self.cycles].name;
        let all = self.tree.root();
        let unit = weight_unit(self.counts);
        match (self.stalls, self.instructions) {
            (Some(s), _) => write!(
                w,
                "cycles: {} {unit} (event {}) · stalled: {} (event {})",
                Thousands(self.total.samples),
                cycles_event,
                Percent(ratio(all.stalls.period, all.ratio_cycles.period), 1),
                &self.profile.events[s].name
            ),
            (None, Some(i)) => write!(
                w,
                // CPI first, and the event names as the labels of their counts: the line is
                // centred and must fit narrow images.
                "CPI {} · IPC {} · {}: {} {unit}, {} events · {}: {} events",
                two_places(cpi(all)),
                two_places(ipc(all)),
                cycles_event,
                Thousands(self.total.samples),
                Events(all.cycles.period),
                &self.profile.events[i].name,
                Events(all.instructions.period),
            ),
            (None, None) => write!(
                w,
                "{}: {} {unit} · no stall data for this file, so colours only tell frames apart",
                cycles_event,
                Thousands(self.total.samples)
            ),
        }
    }

    fn legend(&self, width: u32) -> Option<Legend> {
        let width = f64::from(width);
        let bar = if width >= 600.0 { 200.0 } else { width / 3.0 };
        let stops = vec![(0.0, STALL_RED), (0.5, STALL_MID), (1.0, STALL_BLUE)];
        // Washed-out frames get a legend entry when the graph has any.
        let swatches = if (0..self.tree.nodes.len()).any(|i| self.uncertain_at(i)) {
            vec![Swatch {
                fill: uncertain_color(STALL_MID),
                stripes: None,
                label: UNCERTAIN_LABEL,
            }]
        } else {
            Vec::new()
        };
        match self.colour {
            Colour::Stalls => Some(Legend {
                id: "stall-scale",
                caption: self.stall_caption.into(),
                stops,
                labels: vec![
                    (0.0, "0%".into()),
                    (0.5, "50%".into()),
                    (1.0, "100%".into()),
                ],
                bar,
                swatches,
            }),
            Colour::Cpi => Some(Legend {
                id: "cpi-scale",
                caption: "CPI (log scale):".into(),
                stops,
                // One label per octave; the ends say that the scale saturates there.
                labels: vec![
                    (0.0, format!("≤{CPI_LOW}")),
                    (0.25, "0.5".into()),
                    (0.5, "1".into()),
                    (0.75, "2".into()),
                    (1.0, format!("≥{CPI_HIGH}")),
                ],
                bar,
                swatches,
            }),
            Colour::Name => None,
        }
    }

    /// The `<title>` text after the name (the script reads the name back from the first line):
    /// where the frame comes from, then its counts.
    fn write_details<O: Write>(&self, w: &mut O, node: &CpiNode) -> io::Result<()> {
        if let Some(id) = node.frame {
            write_origin(w, self.profile.frame(id))?;
        }
        let c = &node.total;
        // Shares are of the width: unhalted cycles.
        let share = Percent(ratio(c.cycles.period, self.total.period), 2);
        let samples = Thousands(c.cycles.samples);
        let events = Events(c.cycles.period);
        let unit = weight_unit(self.counts);
        match self.colour {
            Colour::Stalls => {
                write!(
                    w,
                    "\ncycles: {samples} {unit}, {events} events ({share} of all)\nstalls: {} {unit} · stalled: {} of cycles",
                    Thousands(c.stalls.samples),
                    Percent(ratio(c.stalls.period, c.ratio_cycles.period), 1)
                )?;
                self.write_interval(w, node, |v| Percent(Some(v), 1).to_string())?;
            }
            Colour::Cpi => write!(
                w,
                "\ncycles: {samples} {unit}, {events} events ({share} of all)"
            )?,
            Colour::Name => write!(w, "\n{unit}: {samples}, {events} events ({share})")?,
        }
        if self.instructions.is_some() {
            // CPI and IPC from summed periods: cycles counted per instruction retired in this
            // frame, children included.
            match c.instructions.period {
                0 => write!(w, "\ninstructions: none sampled · CPI: n/a")?,
                n => {
                    write!(
                        w,
                        "\ninstructions: {} {unit}, {} events\nCPI: {} · IPC: {}",
                        Thousands(c.instructions.samples),
                        Events(n),
                        two_places(cpi(c)),
                        two_places(ipc(c)),
                    )?;
                    if self.colour == Colour::Cpi {
                        self.write_interval(w, node, |v| two_places(Some(v)))?;
                    }
                }
            }
        }
        if let (Some(lines), Some(hot)) = (self.lines, self.hot.get(&self.tree.index_of(node))) {
            hot::write_hot_lines(w, hot, lines)?;
        }
        Ok(())
    }
}
