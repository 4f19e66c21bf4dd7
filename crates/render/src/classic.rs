//! The classic CPI flame graph: a normalised differential flame graph drawn by inferno, as
//! `difffolded.pl -n stalls.folded cycles.folded | flamegraph.pl` draws it.

use std::io::{BufWriter, Write};

use cpiflame_profile::{write_folded, Column, Columns, Profile};
use inferno::differential;
use inferno::flamegraph::{self, Direction};

use crate::page::{title_room, TEXT_PX, TITLE_PX};
use crate::text::{weight_unit, Esc, Thousands};
use crate::wrap::{wrap, LINE_EM};
use crate::{validate, Options, RenderError};

/// Left plus right margin inferno leaves around the frames, in pixels.
const INFERNO_XPAD: f64 = 20.0;

/// Draws the classic differential CPI flame graph of `profile` with inferno.
///
/// The stall column is the "before" profile and the cycles column the "after" profile, and the
/// stall counts are first scaled so that both totals match (`difffolded.pl -n`). So frame width
/// is cycles samples, a red frame ran more than it stalled relative to the whole profile, and a
/// blue frame stalled more. Unlike [`render_cpi`](crate::render_cpi) the colour reflects each
/// frame's *self* difference only. With `stalls == None` a plain inferno flame graph of `cycles`
/// is drawn.
///
/// `opts.min_width` is in pixels, as for `render_cpi`; it is converted to the percentage of the
/// frame area that inferno expects. Colours of non-differential frames are hashed from the
/// name (inferno's `deterministic` option), so output is byte-identical for identical input.
pub fn render_classic<W: Write>(
    profile: &Profile,
    columns: &Columns,
    opts: &Options,
    out: W,
) -> Result<(), RenderError> {
    let total = validate(profile, columns, opts)?;
    let cycles = columns.cycles.index();
    let stalls = columns.stalls.map(Column::index);
    let cycles_event = &profile.events[cycles].name;

    let (folded, explanation) = match stalls {
        Some(s) => {
            let mut before = Vec::new();
            write_folded(profile, s, &mut before)?;
            let mut after = Vec::new();
            write_folded(profile, cycles, &mut after)?;
            let mut pair = Vec::new();
            let diff_opts = differential::Options {
                normalize: true,
                strip_hex: false,
            };
            differential::from_readers(diff_opts, &before[..], &after[..], &mut pair)?;
            let explanation = format!(
                "width: {} {} of {cycles_event} · red: more cycles than stalls ({}, normalised), blue: more stalls",
                Thousands(total.samples),
                weight_unit(opts.counts),
                profile.events[s].name
            );
            (pair, explanation)
        }
        None => {
            let mut single = Vec::new();
            write_folded(profile, cycles, &mut single)?;
            let explanation = format!(
                "{}: {} {} · no stall data for this file",
                cycles_event,
                Thousands(total.samples),
                weight_unit(opts.counts)
            );
            (single, explanation)
        }
    };
    // Frame names are Rust strings, so this is UTF-8; lossy conversion only guards the type.
    let text = String::from_utf8_lossy(&folded);
    // inferno's differential output comes in hash-map order: sort for a stable merge.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();

    // inferno writes the title and subtitle on one line each: cut to the image's width,
    // with the whole text as a tooltip, as this crate's own pages do.
    let subtitle = match &opts.subtitle {
        Some(extra) => format!("{explanation} · {extra}"),
        None => explanation,
    };
    let room = f64::from(opts.width) - INFERNO_XPAD;
    let fitted_title = wrap(&opts.title, title_room(opts.width), TITLE_PX, 1);
    let fitted_subtitle = wrap(&subtitle, room, TEXT_PX, 1);
    let mut inferno_opts = flamegraph::Options::default();
    inferno_opts.title = fitted_title.lines[0].clone();
    inferno_opts.subtitle = Some(fitted_subtitle.lines[0].clone());
    inferno_opts.image_width = Some(opts.width as usize);
    inferno_opts.min_width = opts.min_width * 100.0 / (f64::from(opts.width) - INFERNO_XPAD);
    inferno_opts.direction = if opts.inverted {
        Direction::Inverted
    } else {
        Direction::Straight
    };
    // inferno fits the labels it writes with this advance and puts them 3 px into their
    // frames: FlameGraph's 0.59 em let a long label in the last frame pass the image's edge.
    inferno_opts.font_width = LINE_EM;
    // Its tooltips name the weights as the subtitle does.
    inferno_opts.count_name = weight_unit(opts.counts).to_string();
    inferno_opts.deterministic = true;
    inferno_opts.no_sort = true;

    let mut svg = Vec::new();
    flamegraph::from_lines(&mut inferno_opts, lines, &mut svg)?;
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let tooltips = [
        (r#"<text id="title""#, fitted_title.cut, &opts.title),
        (r#"<text id="subtitle""#, fitted_subtitle.cut, &subtitle),
    ];
    let mut at = 0;
    for (element, cut, text) in tooltips {
        if !cut {
            continue;
        }
        // Before the end of the element's first (and only) text: inferno's attributes and
        // text hold no `</text>`, its escaping turns `<` into `&lt;`.
        let Some(end) = find(&svg[at..], element.as_bytes())
            .and_then(|start| find(&svg[at + start..], b"</text>").map(|end| at + start + end))
        else {
            continue;
        };
        w.write_all(&svg[at..end])?;
        write!(w, "<title>{}</title>", Esc(text))?;
        at = end;
    }
    w.write_all(&svg[at..])?;
    w.flush()?;
    Ok(())
}

/// The offset of the first `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
