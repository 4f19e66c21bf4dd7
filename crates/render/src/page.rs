//! The page this crate's own pictures are drawn on: title and statistics lines, a colour
//! legend (a gradient bar, swatches, or both), the frames (one `<g class="f">` each, as the
//! embedded script expects), an optional section under the frames, the hover and search
//! lines, and the script.
//!
//! A picture says what differs through [`Picture`]: its tree, each frame's name, fill (a flat
//! colour, or a `<pattern>` of the frame's own written after its label) and tooltip, the
//! statistics line, the legend and the section under the frames.

use std::io::{self, Write};

use cpiflame_profile::{Frame, FrameKind};

use crate::color::Rgb;
use crate::text::{fit_label, Esc, Fixed, CHAR_WIDTH, LABEL_PAD};
use crate::tree::{Node, Tree, Weight};
use crate::wrap::{line_width, wrap, Wrapped};

/// Left and right margin of the frames, in pixels.
pub const XPAD: f64 = 10.0;
/// Vertical distance between two rows of frames; frames are one pixel lower than this.
pub const ROW: u32 = 16;
/// Space below the frames for the hover details line and, under it, the search result line.
pub const FOOTER: u32 = 46;
/// Image background.
pub const BACKGROUND: &str = "#f8f8f6";

/// The script of the SVG: hover details, click-to-zoom, search.
pub const SCRIPT: &str = include_str!("flame.js");

/// The options of the page itself (the fields of [`Options`](crate::Options) and
/// [`DiffOptions`](crate::DiffOptions) that every picture has).
pub(crate) struct Look<'a> {
    pub(crate) title: &'a str,
    pub(crate) subtitle: Option<&'a str>,
    pub(crate) width: u32,
    pub(crate) min_width: f64,
    pub(crate) inverted: bool,
    /// Whether the frames may be formatted on a second thread.
    pub(crate) parallel: bool,
}

impl<'a> Look<'a> {
    /// The page options of [`Options`](crate::Options).
    pub(crate) fn of(opts: &'a crate::Options) -> Look<'a> {
        Look {
            title: &opts.title,
            subtitle: opts.subtitle.as_deref(),
            width: opts.width,
            min_width: opts.min_width,
            inverted: opts.inverted,
            parallel: !opts.single_threaded,
        }
    }
}

/// A horizontal colour bar under the title, with a caption on its left and labels under it.
pub(crate) struct Legend {
    /// Id of the `<linearGradient>` painting the bar.
    pub(crate) id: &'static str,
    pub(crate) caption: std::borrow::Cow<'static, str>,
    /// Gradient stops: offset in `[0, 1]` along the bar and colour.
    pub(crate) stops: Vec<(f64, Rgb)>,
    /// Labels: position in `[0, 1]` along the bar and text.
    pub(crate) labels: Vec<(f64, String)>,
    /// Length of the bar in pixels.
    pub(crate) bar: f64,
    /// Swatches of flat colours, in a row after the bar (or alone when there are no stops).
    pub(crate) swatches: Vec<Swatch>,
}

/// One square of a legend's row of swatches, labelled on its right.
pub(crate) struct Swatch {
    pub(crate) fill: Rgb,
    /// Colour of horizontal stripes over the fill, as the frames the swatch stands for have.
    pub(crate) stripes: Option<Rgb>,
    pub(crate) label: &'static str,
}

/// What one picture draws on the page.
pub(crate) trait Picture {
    type Frame: Copy;
    type Weight: Weight;
    fn tree(&self) -> &Tree<Self::Frame, Self::Weight>;
    /// The number of width samples across the full width.
    fn total(&self) -> u64;
    /// The label of a frame, and the first line of its tooltip (which the script searches).
    fn name(&self, node: &Node<Self::Frame, Self::Weight>) -> &str;
    fn fill(&self, node: &Node<Self::Frame, Self::Weight>) -> Rgb;
    /// The frame's kind, where the picture knows it: root frames that group processes
    /// (cgroups, threads) are outlined ([`GROUP_OUTLINE`]).
    fn kind(&self, _node: &Node<Self::Frame, Self::Weight>) -> Option<FrameKind> {
        None
    }
    /// The `<title>` text after the name: the name is written by the page.
    fn write_details<O: Write>(
        &self,
        w: &mut O,
        node: &Node<Self::Frame, Self::Weight>,
    ) -> io::Result<()>;
    /// The statistics line under the title.
    fn write_stats<O: Write>(&self, w: &mut O) -> io::Result<()>;
    fn legend(&self, width: u32) -> Option<Legend>;
    /// Whether the frame is painted by a pattern of its own, which [`Picture::write_pattern`]
    /// writes (otherwise its [`Picture::fill`] is a flat colour).
    fn patterned(&self, _node: &Node<Self::Frame, Self::Weight>) -> bool {
        false
    }
    /// Writes the `<pattern>` with id `id` that paints `node`'s rectangle (`height` pixels
    /// high) when [`Picture::patterned`] says so.
    fn write_pattern<O: Write>(
        &self,
        _w: &mut O,
        _id: &str,
        _node: &Node<Self::Frame, Self::Weight>,
        _height: u32,
    ) -> io::Result<()> {
        Ok(())
    }
    /// CSS rules added to the page's own.
    fn style(&self) -> &str {
        ""
    }
    /// Height in pixels of the strip above the frames (0: none).
    fn strip_height(&self) -> u32 {
        0
    }
    /// Writes the strip above the frames, whose top is at `top`.
    fn write_strip<O: Write>(&self, _w: &mut O, _top: u32, _width: u32) -> io::Result<()> {
        Ok(())
    }
    /// Height in pixels of the section under the frames (0: none).
    fn section_height(&self) -> u32 {
        0
    }
    /// Writes the section under the frames, whose top is at `top`.
    fn write_section<O: Write>(&self, _w: &mut O, _top: u32, _width: u32) -> io::Result<()> {
        Ok(())
    }
}

/// Vertical positions of the parts of the image.
struct Layout {
    height: u32,
    /// Baselines of the title's lines.
    title: Vec<u32>,
    /// Baselines of the lines under the title: the statistics line's, then the subtitle's.
    lines: Vec<u32>,
    /// Top of the legend's colour bar, when there is a legend.
    legend: Option<u32>,
    /// Top of the first row of frames.
    frames_top: u32,
    /// Top of the strip above the frames (at `frames_top` when there is none).
    strip_top: u32,
    /// Top of the section under the frames.
    section_top: u32,
    max_depth: u32,
}

/// Font size of the title, in pixels.
pub(crate) const TITLE_PX: f64 = 17.0;
/// Font size of every other text, in pixels.
pub(crate) const TEXT_PX: f64 = 12.0;
/// Baseline distance of the title's lines, and of the lines under it.
const TITLE_LEADING: u32 = 20;
const LEADING: u32 = 18;
/// At most this many lines of title, of statistics and of subtitle; the rest is cut, and
/// the whole text is the tooltip.
pub const MAX_HEADING_LINES: usize = 3;

/// The room of the title's lines in an image `width` pixels wide: the buttons on its row
/// (`Reset Zoom` on the left, `Search` or `Clear search` on the right) and a gap are kept
/// free on both sides, as the title is centred.
pub fn title_room(width: u32) -> f64 {
    f64::from(width) - 2.0 * (XPAD + line_width("Clear search", TEXT_PX) + 8.0)
}

/// The lines at the top of the image, each block fitted to the image's width.
pub(crate) struct Heading {
    /// The title, and its lines.
    title: (String, Wrapped),
    /// The statistics line, and its lines.
    stats: (String, Wrapped),
    /// The subtitle, and its lines.
    subtitle: Option<(String, Wrapped)>,
}

impl Heading {
    fn of<P: Picture>(p: &P, look: &Look) -> io::Result<Heading> {
        let room = f64::from(look.width) - 2.0 * XPAD;
        let block = |text: String, room: f64, px: f64| {
            let lines = wrap(&text, room, px, MAX_HEADING_LINES);
            (text, lines)
        };
        let mut stats = Vec::new();
        p.write_stats(&mut stats)?;
        let stats = String::from_utf8(stats).map_err(io::Error::other)?;
        Ok(Heading {
            title: block(look.title.to_string(), title_room(look.width), TITLE_PX),
            stats: block(stats, room, TEXT_PX),
            subtitle: look.subtitle.map(|s| block(s.to_string(), room, TEXT_PX)),
        })
    }
}

/// Writes the lines of a block of text centred at `mid`, at baselines `ys`: the first
/// `<text>` with `first` attributes, the others with `more`; a block that was cut has the
/// whole text as the last line's tooltip.
fn write_block<O: Write>(
    w: &mut O,
    (text, wrapped): &(String, Wrapped),
    (first, more): (&str, &str),
    mid: f64,
    ys: &[u32],
) -> io::Result<()> {
    let n = wrapped.lines.len();
    for (k, (line, y)) in wrapped.lines.iter().zip(ys).enumerate() {
        let attributes = if k == 0 { first } else { more };
        write!(
            w,
            r#"<text {attributes} x="{mid:.1}" y="{y}">{}"#,
            Esc(line)
        )?;
        if wrapped.cut && k + 1 == n {
            write!(w, "<title>{}</title>", Esc(text))?;
        }
        writeln!(w, "</text>")?;
    }
    Ok(())
}

fn span(look: &Look) -> f64 {
    f64::from(look.width) - 2.0 * XPAD
}

/// Indexes of the nodes that are drawn: at least `min_width` pixels wide (and not empty), and
/// with every ancestor drawn.
fn visible<P: Picture>(p: &P, look: &Look) -> Vec<u32> {
    let scale = span(look) / p.total() as f64;
    let nodes = &p.tree().nodes;
    let mut keep = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        let n = nodes[i].total.width();
        if n == 0 || (n as f64) * scale < look.min_width {
            i = nodes[i].end as usize;
        } else {
            keep.push(i as u32);
            i += 1;
        }
    }
    keep
}

fn layout<P: Picture>(
    p: &P,
    look: &Look,
    heading: &Heading,
    visible: &[u32],
    legend: Option<&Legend>,
) -> Layout {
    let max_depth = visible
        .iter()
        .map(|&i| p.tree().nodes[i as usize].depth)
        .max()
        .unwrap_or(0);
    let title: Vec<u32> = (0..heading.title.1.lines.len() as u32)
        .map(|k| 24 + TITLE_LEADING * k)
        .collect();
    let first = title.last().copied().unwrap_or(24) + TITLE_LEADING;
    let count =
        heading.stats.1.lines.len() + heading.subtitle.as_ref().map_or(0, |s| s.1.lines.len());
    let lines: Vec<u32> = (0..count as u32).map(|k| first + LEADING * k).collect();
    let last = lines.last().copied().unwrap_or(24);
    let (legend, frames_top) = if let Some(legend) = legend {
        let bar = last + 12;
        // bar (10 px), labels under it (baseline +23), a gap; rows of swatches that did not
        // fit beside the bar.
        let rows = swatch_rows(legend, look.width);
        let extra = rows.last().map_or(0, |r| r.top);
        (Some(bar), bar + 34 + extra)
    } else {
        (None, last + 14)
    };
    let (strip_top, frames_top) = (frames_top, frames_top + p.strip_height());
    let section_top = frames_top + (max_depth + 1) * ROW;
    let height = section_top + p.section_height() + FOOTER;
    Layout {
        height,
        title,
        lines,
        legend,
        frames_top,
        strip_top,
        section_top,
        max_depth,
    }
}

/// Writes the whole SVG of picture `p`.
pub(crate) fn write<P: Picture + Sync, O: Write>(p: &P, look: &Look, w: &mut O) -> io::Result<()> {
    let visible = visible(p, look);
    let legend = p.legend(look.width);
    let heading = Heading::of(p, look)?;
    let layout = layout(p, look, &heading, &visible, legend.as_ref());
    let width = look.width;
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
{}#frames .f:hover rect {{ stroke: #000000; stroke-width: 0.5; }}\n\
#frames .anc {{ opacity: 0.5; }}\n\
</style>",
        p.style()
    )?;
    if let Some(legend) = legend.as_ref().filter(|l| !l.stops.is_empty()) {
        write!(
            w,
            r#"<defs><linearGradient id="{}" x1="0" y1="0" x2="1" y2="0">"#,
            legend.id
        )?;
        for (offset, color) in &legend.stops {
            write!(w, r#"<stop offset="{offset}" stop-color="{color}"/>"#)?;
        }
        writeln!(w, "</linearGradient></defs>")?;
    }
    writeln!(
        w,
        r#"<rect x="0" y="0" width="{width}" height="{height}" fill="{BACKGROUND}"/>"#
    )?;
    let title_more = format!(r#"class="sub" style="font-size: {TITLE_PX}px""#);
    write_block(
        w,
        &heading.title,
        (r#"id="title""#, &title_more),
        mid,
        &layout.title,
    )?;
    let (stats_lines, sub_lines) = layout.lines.split_at(heading.stats.1.lines.len());
    write_block(
        w,
        &heading.stats,
        (r#"id="subtitle" class="sub""#, r#"class="sub""#),
        mid,
        stats_lines,
    )?;
    if let Some(subtitle) = &heading.subtitle {
        let sub = r#"class="sub""#;
        write_block(w, subtitle, (sub, sub), mid, sub_lines)?;
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
    if let (Some(top), Some(legend)) = (layout.legend, &legend) {
        write_legend(w, legend, top, width)?;
    }

    if p.strip_height() > 0 {
        p.write_strip(w, layout.strip_top, width)?;
    }
    let span = span(look);
    let total = p.total();
    let scale = span / total as f64;
    writeln!(
        w,
        r#"<g id="frames" data-total="{total}" data-span="{span:.1}" data-xpad="{XPAD:.1}" data-char="{CHAR_WIDTH:.2}" data-pad="{LABEL_PAD:.1}" data-inverted="{}">"#,
        u8::from(look.inverted)
    )?;
    let frames = Frames {
        p,
        look,
        layout: &layout,
        scale,
    };
    frames.write_all(&visible, w)?;
    writeln!(w, "</g>")?;
    if p.section_height() > 0 {
        p.write_section(w, layout.section_top, width)?;
    }
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

/// Frames formatted per chunk: one thread writes the even chunks straight out while a
/// second formats the odd ones, which are then written in their place. The text of a large
/// graph (tens of thousands of frames, megabytes) is most of the time its drawing takes.
const FRAMES_PER_CHUNK: usize = 2048;

/// What writing a frame needs.
struct Frames<'a, P> {
    p: &'a P,
    look: &'a Look<'a>,
    layout: &'a Layout,
    /// Pixels per width unit.
    scale: f64,
}

impl<P: Picture + Sync> Frames<'_, P> {
    /// Writes the frames `visible`, in order, to `w`.
    fn write_all<O: Write>(&self, visible: &[u32], w: &mut O) -> io::Result<()> {
        if !self.look.parallel || visible.len() < 2 * FRAMES_PER_CHUNK {
            return visible.iter().try_for_each(|&i| self.write_one(i, w));
        }
        let chunks: Vec<&[u32]> = visible.chunks(FRAMES_PER_CHUNK).collect();
        std::thread::scope(|scope| {
            // One formatted chunk waits while the next is formatted: memory stays bounded.
            let (done, formatted) = std::sync::mpsc::sync_channel::<io::Result<Vec<u8>>>(1);
            let odd = chunks.iter().skip(1).step_by(2);
            scope.spawn(move || {
                let mut capacity = 0;
                for chunk in odd {
                    let mut text = Vec::with_capacity(capacity);
                    let result = chunk.iter().try_for_each(|&i| self.write_one(i, &mut text));
                    capacity = capacity.max(text.len());
                    // A closed channel: the writer stopped on an error of its own.
                    if done.send(result.map(|()| text)).is_err() {
                        break;
                    }
                }
            });
            for (k, chunk) in chunks.iter().enumerate() {
                if k % 2 == 0 {
                    chunk.iter().try_for_each(|&i| self.write_one(i, w))?;
                } else {
                    let text = formatted.recv().map_err(io::Error::other)??;
                    w.write_all(&text)?;
                }
            }
            Ok(())
        })
    }

    /// Writes node `i`: its group, tooltip, rectangle and label.
    fn write_one<O: Write>(&self, i: u32, w: &mut O) -> io::Result<()> {
        let (p, look, layout) = (self.p, self.look, self.layout);
        let node = &p.tree().nodes[i as usize];
        let row = if look.inverted {
            node.depth
        } else {
            layout.max_depth - node.depth
        };
        let y = layout.frames_top + row * ROW;
        let n = node.total.width();
        let x = XPAD + node.start as f64 * self.scale;
        let fw = n as f64 * self.scale;
        let name = p.name(node);
        write!(
            w,
            r#"<g class="f" data-s="{}" data-n="{n}"><title>{}"#,
            node.start,
            Esc(name)
        )?;
        p.write_details(w, node)?;
        if p.patterned(node) {
            // The pattern comes after the frame's own rectangle and label, which the script
            // finds as the group's first <rect> and <text>.
            let id = format!("w{i}");
            write!(
                w,
                r#"</title><rect x="{}" y="{y}" width="{}" height="{}" fill="url(#{id})"/><text x="{}" y="{}">{}</text>"#,
                Fixed(x, 2),
                Fixed(fw, 2),
                ROW - 1,
                Fixed(x + LABEL_PAD, 2),
                y + 11,
                fit_label(name, fw)
            )?;
            p.write_pattern(w, &id, node, ROW - 1)?;
            return writeln!(w, "</g>");
        }
        let outline = match p.kind(node) {
            Some(FrameKind::Cgroup | FrameKind::Thread) => GROUP_OUTLINE,
            _ => "",
        };
        writeln!(
            w,
            r#"</title><rect x="{}" y="{y}" width="{}" height="{}" fill="{}"{outline}/><text x="{}" y="{}">{}</text></g>"#,
            Fixed(x, 2),
            Fixed(fw, 2),
            ROW - 1,
            p.fill(node),
            Fixed(x + LABEL_PAD, 2),
            y + 11,
            fit_label(name, fw)
        )
    }
}

/// The outline of a cgroup's or a thread's frame (`--group-by`): filled like any frame (its
/// stall share or CPI is the group's), but not a function, and drawn so.
pub(crate) const GROUP_OUTLINE: &str =
    r##" stroke="#303030" stroke-width="1" stroke-dasharray="4 2""##;

/// Pixels from a swatch's left edge to the next one's, for a label of `label` characters:
/// the square, a gap, the label and a wider gap.
fn swatch_advance(label: &str) -> f64 {
    SWATCH + 4.0 + label.chars().count() as f64 * CHAR_WIDTH + 14.0
}

/// Side of a legend swatch, in pixels.
const SWATCH: f64 = 10.0;

/// One row of a legend with swatches: its top below the legend's, its left edge, and the
/// swatches in it (a range of [`Legend::swatches`]). The first row also holds the caption and
/// the bar.
struct SwatchRow {
    top: u32,
    left: f64,
    swatches: std::ops::Range<usize>,
}

/// The rows of a legend with swatches in an image `width` pixels wide: caption, bar (when
/// there are stops) and as many swatches as fit on the first row, the others in further rows
/// under it, each row centred. Empty without swatches.
fn swatch_rows(legend: &Legend, width: u32) -> Vec<SwatchRow> {
    if legend.swatches.is_empty() {
        return Vec::new();
    }
    let room = f64::from(width) - 2.0 * XPAD;
    let caption = legend.caption.chars().count() as f64 * CHAR_WIDTH + 8.0;
    let bar = if legend.stops.is_empty() {
        0.0
    } else {
        legend.bar + 24.0
    };
    let mut rows = Vec::new();
    // Width of the row so far, and of the gap after its last item.
    let (mut used, mut gap) = (caption + bar, if bar > 0.0 { 24.0 } else { 8.0 });
    let mut first = 0;
    for (i, s) in legend.swatches.iter().enumerate() {
        let advance = swatch_advance(s.label);
        // A row holds at least one swatch, except the first, which holds the caption.
        if used + advance - 14.0 > room && (i > first || rows.is_empty()) {
            rows.push((first..i, used - gap));
            first = i;
            used = 0.0;
        }
        used += advance;
        gap = 14.0;
    }
    rows.push((first..legend.swatches.len(), used - gap));
    let after_first = if bar > 0.0 { 30 } else { 16 };
    rows.into_iter()
        .enumerate()
        .map(|(k, (swatches, row))| SwatchRow {
            top: match k {
                0 => 0,
                k => after_first + 16 * (k as u32 - 1),
            },
            left: ((f64::from(width) - row) / 2.0).max(XPAD),
            swatches,
        })
        .collect()
}

/// A legend with swatches: caption, the bar (when there are stops) with its labels under
/// it, then the swatches, centred together on one row, or in more when they do not fit.
fn write_swatch_legend<O: Write>(
    w: &mut O,
    legend: &Legend,
    top: u32,
    width: u32,
) -> io::Result<()> {
    let rows = swatch_rows(legend, width);
    let caption = legend.caption.chars().count() as f64 * CHAR_WIDTH;
    let x0 = rows[0].left + caption + 8.0;
    write!(
        w,
        r#"<g id="legend"><text x="{:.1}" y="{}" text-anchor="end">{}</text>"#,
        x0 - 8.0,
        top + 10,
        Esc(&legend.caption)
    )?;
    let mut x = x0;
    if !legend.stops.is_empty() {
        write!(
            w,
            r#"<rect x="{x0:.1}" y="{top}" width="{:.1}" height="10" fill="url(#{})"/>"#,
            legend.bar, legend.id
        )?;
        for (at, label) in apart(&legend.labels, legend.bar) {
            write!(
                w,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
                x0 + legend.bar * at,
                top + 23,
                Esc(label)
            )?;
        }
        x += legend.bar + 24.0;
    }
    for (k, row) in rows.iter().enumerate() {
        let top = top + row.top;
        if k > 0 {
            x = row.left;
        }
        for s in &legend.swatches[row.swatches.clone()] {
            write!(
                w,
                r#"<rect x="{x:.1}" y="{top}" width="{SWATCH}" height="{SWATCH}" fill="{}"/>"#,
                s.fill
            )?;
            if let Some(stripes) = s.stripes {
                for dy in [2, 6] {
                    write!(
                        w,
                        r#"<rect x="{x:.1}" y="{}" width="{SWATCH}" height="2" fill="{stripes}"/>"#,
                        top + dy
                    )?;
                }
            }
            write!(
                w,
                r#"<text x="{:.1}" y="{}">{}</text>"#,
                x + SWATCH + 4.0,
                top + 10,
                Esc(s.label)
            )?;
            x += swatch_advance(s.label);
        }
    }
    writeln!(w, "</g>")
}

/// The left edge and length of a legend's bar without swatches: centred, unless its caption
/// (on its left) or its last label (centred on its right end) would then pass the margin,
/// when it moves right or gets shorter.
fn bar_place(legend: &Legend, width: u32) -> (f64, f64) {
    let width = f64::from(width);
    let centred = (width - legend.bar) / 2.0;
    let x0 = centred.max(XPAD + line_width(&legend.caption, TEXT_PX) + 8.0);
    let last = legend
        .labels
        .last()
        .map_or(0.0, |(_, label)| line_width(label, TEXT_PX) / 2.0);
    let bar = legend.bar.min(width - XPAD - last - x0).max(10.0);
    (x0, bar)
}

fn write_legend<O: Write>(w: &mut O, legend: &Legend, top: u32, width: u32) -> io::Result<()> {
    if !legend.swatches.is_empty() {
        return write_swatch_legend(w, legend, top, width);
    }
    let (x0, bar) = bar_place(legend, width);
    let labels = top + 23;
    write!(
        w,
        r#"<g id="legend"><text x="{:.1}" y="{}" text-anchor="end">{}</text><rect x="{x0:.1}" y="{top}" width="{bar:.1}" height="10" fill="url(#{})"/>"#,
        x0 - 8.0,
        top + 10,
        Esc(&legend.caption),
        legend.id
    )?;
    for (at, label) in apart(&legend.labels, bar) {
        write!(
            w,
            r#"<text x="{:.1}" y="{labels}" text-anchor="middle">{}</text>"#,
            x0 + bar * at,
            Esc(label)
        )?;
    }
    writeln!(w, "</g>")
}

/// The labels of a bar `bar` pixels long that do not run into each other: both ends', and
/// each one between that keeps a gap to the one before it and to the last.
fn apart(labels: &[(f64, String)], bar: f64) -> Vec<&(f64, String)> {
    let extent = |(at, label): &(f64, String)| {
        let half = line_width(label, TEXT_PX) / 2.0;
        (bar * at - half, bar * at + half)
    };
    let Some(last) = labels.last() else {
        return Vec::new();
    };
    let mut shown: Vec<&(f64, String)> = Vec::new();
    for (k, label) in labels.iter().enumerate() {
        let (left, right) = extent(label);
        let clear_before = shown.last().is_none_or(|l| extent(l).1 + 4.0 <= left);
        let clear_after = k + 1 == labels.len() || right + 4.0 <= extent(last).0;
        if k == 0 || k + 1 == labels.len() || (clear_before && clear_after) {
            shown.push(label);
        }
    }
    shown
}

/// The tooltip line saying which module a frame is in, and whether it is inlined, in the
/// kernel or the process itself.
pub(crate) fn write_origin<W: Write>(w: &mut W, frame: &Frame) -> io::Result<()> {
    let kind = match frame.kind {
        FrameKind::Process => "process",
        FrameKind::User => "",
        FrameKind::Inline => "inlined",
        FrameKind::Kernel => "kernel",
        FrameKind::Jit => "jit",
        FrameKind::Thread => "thread",
        FrameKind::Cgroup => "cgroup",
    };
    match (frame.module.is_empty(), kind.is_empty()) {
        (true, true) => Ok(()),
        (true, false) => write!(w, "\n({kind})"),
        (false, true) => write!(w, "\nmodule: {}", Esc(&frame.module)),
        (false, false) => write!(w, "\nmodule: {} ({kind})", Esc(&frame.module)),
    }
}
