//! The CPI flame graph: width = cycles samples, colour = inclusive stall share.

use std::io::{self, BufWriter, Write};

use cpiflame_profile::{FrameId, Profile};

use crate::color::{stall_color, warm_color, Rgb, STALL_BLUE, STALL_MID, STALL_RED};
use crate::page::{self, write_origin, Legend, Look, Picture};
use crate::text::{ratio, Esc, Percent, Thousands};
use crate::tree::{self, CpiWeight, Node, Tree};
use crate::{validate, Options, RenderError};

/// Draws the CPI flame graph of `profile` as SVG.
///
/// Frame width is the number of samples of event column `cycles` in the frame and its
/// children; siblings are ordered by frame name, then module. Every frame's colour is its
/// inclusive stall share, `sum(stall period) / sum(cycles period)` over the frame and its
/// children, on the fixed scale of [`stall_color`](crate::stall_color) (red = not stalled,
/// purple = half, blue = all stalled). With `stalls == None` a plain flame graph is drawn,
/// coloured by a hash of the frame name, whose subtitle says there is no stall data.
///
/// Frames narrower than `opts.min_width` pixels are left out with their children. The output is
/// deterministic and carries its own search and click-to-zoom script.
pub fn render_cpi<W: Write>(
    profile: &Profile,
    cycles: usize,
    stalls: Option<usize>,
    opts: &Options,
    out: W,
) -> Result<(), RenderError> {
    let total = validate(profile, cycles, stalls, opts)?;
    let tree = tree::build_cpi(profile, cycles, stalls, opts.instructions);
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let look = Look {
        title: &opts.title,
        subtitle: opts.subtitle.as_deref(),
        width: opts.width,
        min_width: opts.min_width,
        inverted: opts.inverted,
    };
    let picture = Cpi {
        profile,
        tree,
        cycles,
        stalls,
        instructions: opts.instructions,
        total,
    };
    page::write(&picture, &look, &mut w)?;
    w.flush()?;
    Ok(())
}

struct Cpi<'a> {
    profile: &'a Profile,
    tree: Tree<FrameId, CpiWeight>,
    cycles: usize,
    stalls: Option<usize>,
    instructions: Option<usize>,
    /// Cycles samples across the full width.
    total: u64,
}

type CpiNode = Node<FrameId, CpiWeight>;

impl Picture for Cpi<'_> {
    type Frame = FrameId;
    type Weight = CpiWeight;

    fn tree(&self) -> &Tree<FrameId, CpiWeight> {
        &self.tree
    }

    fn total(&self) -> u64 {
        self.total
    }

    fn name(&self, node: &CpiNode) -> &str {
        node.frame
            .map_or("all", |id| self.profile.frame(id).name.as_str())
    }

    fn fill(&self, node: &CpiNode) -> Rgb {
        if self.stalls.is_some() {
            stall_color(ratio(node.total.stalls.period, node.total.cycles.period))
        } else {
            warm_color(self.name(node))
        }
    }

    /// The statistics line: totals of the whole profile.
    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()> {
        let cycles_event = &self.profile.events[self.cycles].name;
        match self.stalls {
            Some(s) => {
                let all = self.tree.root();
                write!(
                    w,
                    "cycles: {} samples (event {}) · stalled: {} (event {})",
                    Thousands(self.total),
                    Esc(cycles_event),
                    Percent(ratio(all.stalls.period, all.cycles.period), 1),
                    Esc(&self.profile.events[s].name)
                )
            }
            None => write!(
                w,
                "{}: {} samples · no stall data for this file, so colours only tell frames apart",
                Esc(cycles_event),
                Thousands(self.total)
            ),
        }
    }

    fn legend(&self, width: u32) -> Option<Legend> {
        self.stalls?;
        let width = f64::from(width);
        Some(Legend {
            id: "stall-scale",
            caption: "cycles stalled:",
            stops: vec![(0.0, STALL_RED), (0.5, STALL_MID), (1.0, STALL_BLUE)],
            labels: vec![
                (0.0, "0%".into()),
                (0.5, "50%".into()),
                (1.0, "100%".into()),
            ],
            bar: if width >= 600.0 { 200.0 } else { width / 3.0 },
        })
    }

    /// The `<title>` text after the name (the script reads the name back from the first line):
    /// where the frame comes from, then its counts.
    fn write_details<O: Write>(&self, w: &mut O, node: &CpiNode) -> io::Result<()> {
        if let Some(id) = node.frame {
            write_origin(w, self.profile.frame(id))?;
        }
        let c = &node.total;
        let share = Percent(ratio(c.cycles.samples, self.total), 2);
        let samples = Thousands(c.cycles.samples);
        match self.stalls {
            Some(_) => write!(
                w,
                "\ncycles: {samples} samples ({share} of all)\nstalls: {} samples · stalled: {} of cycles",
                Thousands(c.stalls.samples),
                Percent(ratio(c.stalls.period, c.cycles.period), 1)
            )?,
            None => write!(w, "\nsamples: {samples} ({share})")?,
        }
        if self.instructions.is_some() {
            // CPI from summed periods: cycles counted per instruction retired in this frame.
            match c.instructions.period {
                0 => write!(w, "\ninstructions: none sampled")?,
                n => write!(
                    w,
                    "\ninstructions: {} samples · CPI: {:.2}",
                    Thousands(c.instructions.samples),
                    c.cycles.period as f64 / n as f64
                )?,
            }
        }
        Ok(())
    }
}
