//! The CPI flame graph: width = cycles samples, colour = inclusive stall share.

use std::io::{self, BufWriter, Write};

use cpiflame_fold::{Frame, FrameKind, Profile};

use crate::color::{stall_color, warm_color, Rgb, STALL_BLUE, STALL_MID, STALL_RED};
use crate::text::{fit_label, ratio, Esc, Percent, Thousands, CHAR_WIDTH, LABEL_PAD};
use crate::tree::{self, Node, Tree};
use crate::{validate, Options, RenderError};

/// Left and right margin of the frames, in pixels.
const XPAD: f64 = 10.0;
/// Vertical distance between two rows of frames; frames are one pixel lower than this.
const ROW: u32 = 16;
/// Space below the frames for the hover details line and, under it, the search result line.
const FOOTER: u32 = 46;
/// Image background.
const BACKGROUND: &str = "#f8f8f6";

const SCRIPT: &str = include_str!("flame.js");

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
    let tree = tree::build(profile, cycles, stalls, opts.instructions);
    let mut w = BufWriter::with_capacity(1 << 16, out);
    Svg {
        profile,
        tree: &tree,
        cycles,
        stalls,
        opts,
        total,
    }
    .write(&mut w)?;
    w.flush()?;
    Ok(())
}

struct Svg<'a> {
    profile: &'a Profile,
    tree: &'a Tree,
    cycles: usize,
    stalls: Option<usize>,
    opts: &'a Options,
    /// Cycles samples across the full width.
    total: u64,
}

/// Vertical positions of the parts of the image.
struct Layout {
    height: u32,
    /// Baselines of the lines under the title.
    lines: Vec<u32>,
    /// Top of the legend's colour bar, when there is a legend.
    legend: Option<u32>,
    /// Top of the first row of frames.
    frames_top: u32,
    max_depth: u32,
}

impl Svg<'_> {
    fn span(&self) -> f64 {
        f64::from(self.opts.width) - 2.0 * XPAD
    }

    fn name(&self, node: &Node) -> &str {
        node.frame
            .map_or("all", |id| self.profile.frame(id).name.as_str())
    }

    /// Indexes of the nodes that are drawn: at least `min_width` pixels wide (and not empty),
    /// and with every ancestor drawn.
    fn visible(&self) -> Vec<u32> {
        let scale = self.span() / self.total as f64;
        let nodes = &self.tree.nodes;
        let mut keep = Vec::new();
        let mut i = 0;
        while i < nodes.len() {
            let n = nodes[i].cycles.samples;
            if n == 0 || (n as f64) * scale < self.opts.min_width {
                i = nodes[i].end as usize;
            } else {
                keep.push(i as u32);
                i += 1;
            }
        }
        keep
    }

    fn layout(&self, visible: &[u32]) -> Layout {
        let max_depth = visible
            .iter()
            .map(|&i| self.tree.nodes[i as usize].depth)
            .max()
            .unwrap_or(0);
        let mut lines = vec![44];
        if self.opts.subtitle.is_some() {
            lines.push(62);
        }
        let last = lines.last().copied().unwrap_or(24);
        let (legend, frames_top) = if self.stalls.is_some() {
            let bar = last + 12;
            // bar (10 px), labels under it (baseline +23), a gap.
            (Some(bar), bar + 34)
        } else {
            (None, last + 14)
        };
        let height = frames_top + (max_depth + 1) * ROW + FOOTER;
        Layout {
            height,
            lines,
            legend,
            frames_top,
            max_depth,
        }
    }

    fn write<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let visible = self.visible();
        let layout = self.layout(&visible);
        let width = self.opts.width;
        let height = layout.height;
        let mid = f64::from(width) / 2.0;

        writeln!(
            w,
            r#"<?xml version="1.0" encoding="UTF-8" standalone="no"?>"#
        )?;
        writeln!(
            w,
            r#"<svg version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">"#
        )?;
        writeln!(
            w,
            "<style>\
text {{ font-family: monospace; font-size: 12px; fill: #000000; }}\n\
#title {{ font-size: 17px; text-anchor: middle; }}\n\
.sub {{ text-anchor: middle; }}\n\
.ui {{ cursor: pointer; }}\n\
.ui:hover {{ text-decoration: underline; }}\n\
#frames .f {{ cursor: pointer; }}\n\
#frames .f text {{ pointer-events: none; }}\n\
#frames .f:hover rect {{ stroke: #000000; stroke-width: 0.5; }}\n\
#frames .anc {{ opacity: 0.5; }}\n\
</style>"
        )?;
        if self.stalls.is_some() {
            writeln!(
                w,
                r##"<defs><linearGradient id="stall-scale" x1="0" y1="0" x2="1" y2="0"><stop offset="0" stop-color="{STALL_RED}"/><stop offset="0.5" stop-color="{STALL_MID}"/><stop offset="1" stop-color="{STALL_BLUE}"/></linearGradient></defs>"##
            )?;
        }
        writeln!(
            w,
            r#"<rect x="0" y="0" width="{width}" height="{height}" fill="{BACKGROUND}"/>"#
        )?;
        writeln!(
            w,
            r#"<text id="title" x="{mid:.1}" y="24">{}</text>"#,
            Esc(&self.opts.title)
        )?;
        let mut lines = layout.lines.iter();
        if let Some(y) = lines.next() {
            write!(
                w,
                r#"<text id="subtitle" class="sub" x="{mid:.1}" y="{y}">"#
            )?;
            self.write_stats(w)?;
            writeln!(w, "</text>")?;
        }
        if let (Some(y), Some(sub)) = (lines.next(), &self.opts.subtitle) {
            writeln!(
                w,
                r#"<text class="sub" x="{mid:.1}" y="{y}">{}</text>"#,
                Esc(sub)
            )?;
        }
        writeln!(
            w,
            r#"<text id="reset" class="ui" x="{XPAD}" y="24" visibility="hidden">Reset Zoom</text>"#
        )?;
        writeln!(
            w,
            r#"<text id="search" class="ui" x="{:.1}" y="24" text-anchor="end">Search</text>"#,
            f64::from(width) - XPAD
        )?;
        if let Some(top) = layout.legend {
            self.write_legend(w, top)?;
        }

        let span = self.span();
        let scale = span / self.total as f64;
        writeln!(
            w,
            r#"<g id="frames" data-total="{}" data-span="{span:.1}" data-xpad="{XPAD:.1}" data-char="{CHAR_WIDTH:.2}" data-pad="{LABEL_PAD:.1}" data-inverted="{}">"#,
            self.total,
            u8::from(self.opts.inverted)
        )?;
        for &i in &visible {
            let node = &self.tree.nodes[i as usize];
            let row = if self.opts.inverted {
                node.depth
            } else {
                layout.max_depth - node.depth
            };
            let y = layout.frames_top + row * ROW;
            let x = XPAD + node.start as f64 * scale;
            let fw = node.cycles.samples as f64 * scale;
            let name = self.name(node);
            write!(
                w,
                r#"<g class="f" data-s="{}" data-n="{}"><title>"#,
                node.start, node.cycles.samples
            )?;
            self.write_tooltip(w, node)?;
            writeln!(
                w,
                r#"</title><rect x="{x:.2}" y="{y}" width="{fw:.2}" height="{}" fill="{}"/><text x="{:.2}" y="{}">{}</text></g>"#,
                ROW - 1,
                self.color(node),
                x + LABEL_PAD,
                y + 11,
                fit_label(name, fw)
            )?;
        }
        writeln!(w, "</g>")?;
        writeln!(
            w,
            r#"<text id="details" x="{XPAD}" y="{}"> </text>"#,
            height - 28
        )?;
        writeln!(
            w,
            r#"<text id="matched" x="{:.1}" y="{}" text-anchor="end"> </text>"#,
            f64::from(width) - XPAD,
            height - 10
        )?;
        writeln!(w, "<script type=\"text/ecmascript\"><![CDATA[")?;
        w.write_all(SCRIPT.as_bytes())?;
        writeln!(w, "]]></script>")?;
        writeln!(w, "</svg>")?;
        Ok(())
    }

    fn color(&self, node: &Node) -> Rgb {
        if self.stalls.is_some() {
            stall_color(ratio(node.stalls.period, node.cycles.period))
        } else {
            warm_color(self.name(node))
        }
    }

    /// The statistics line: totals of the whole profile.
    fn write_stats<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let cycles_event = &self.profile.events[self.cycles].name;
        match self.stalls {
            Some(s) => {
                let all = &self.tree.nodes[0];
                write!(
                    w,
                    "cycles: {} samples (event {}) · stalled: {} (event {})",
                    Thousands(self.total),
                    Esc(cycles_event),
                    Percent(ratio(self.tree.total_stalls.period, all.cycles.period), 1),
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

    fn write_legend<W: Write>(&self, w: &mut W, top: u32) -> io::Result<()> {
        let width = f64::from(self.opts.width);
        let bar = if width >= 600.0 { 200.0 } else { width / 3.0 };
        let x0 = (width - bar) / 2.0;
        let labels = top + 23;
        writeln!(
            w,
            r#"<g id="legend"><text x="{:.1}" y="{}" text-anchor="end">cycles stalled:</text><rect x="{x0:.1}" y="{top}" width="{bar:.1}" height="10" fill="url(#stall-scale)"/><text x="{x0:.1}" y="{labels}" text-anchor="middle">0%</text><text x="{:.1}" y="{labels}" text-anchor="middle">50%</text><text x="{:.1}" y="{labels}" text-anchor="middle">100%</text></g>"#,
            x0 - 8.0,
            top + 10,
            x0 + bar / 2.0,
            x0 + bar,
        )
    }

    /// The `<title>` text: the name on the first line (the script reads it back from there),
    /// then where the frame comes from, then its counts.
    fn write_tooltip<W: Write>(&self, w: &mut W, node: &Node) -> io::Result<()> {
        write!(w, "{}", Esc(self.name(node)))?;
        if let Some(id) = node.frame {
            write_origin(w, self.profile.frame(id))?;
        }
        let share = Percent(ratio(node.cycles.samples, self.total), 2);
        let samples = Thousands(node.cycles.samples);
        match self.stalls {
            Some(_) => write!(
                w,
                "\ncycles: {samples} samples ({share} of all)\nstalls: {} samples · stalled: {} of cycles",
                Thousands(node.stalls.samples),
                Percent(ratio(node.stalls.period, node.cycles.period), 1)
            )?,
            None => write!(w, "\nsamples: {samples} ({share})")?,
        }
        if self.opts.instructions.is_some() {
            // CPI from summed periods: cycles counted per instruction retired in this frame.
            match node.instructions.period {
                0 => write!(w, "\ninstructions: none sampled")?,
                n => write!(
                    w,
                    "\ninstructions: {} samples · CPI: {:.2}",
                    Thousands(node.instructions.samples),
                    node.cycles.period as f64 / n as f64
                )?,
            }
        }
        Ok(())
    }
}

/// The tooltip line saying which module a frame is in, and whether it is inlined, in the
/// kernel or the process itself.
fn write_origin<W: Write>(w: &mut W, frame: &Frame) -> io::Result<()> {
    let kind = match frame.kind {
        FrameKind::Process => "process",
        FrameKind::User => "",
        FrameKind::Inline => "inlined",
        FrameKind::Kernel => "kernel",
    };
    match (frame.module.is_empty(), kind.is_empty()) {
        (true, true) => Ok(()),
        (true, false) => write!(w, "\n({kind})"),
        (false, true) => write!(w, "\nmodule: {}", Esc(&frame.module)),
        (false, false) => write!(w, "\nmodule: {} ({kind})", Esc(&frame.module)),
    }
}
