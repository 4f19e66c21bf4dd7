//! What every kind of picture shares about ratios: what a frame's colour says ([`Colour`]),
//! CPI and IPC of a frame's weights, the interval of each drawn frame's ratio and whether it
//! is too wide to place on the colour scale, and how numbers and intervals are written.
//!
//! It must never draw: the kinds (`cpi`, `wall`, `topdown`, `strip`) draw, each over this.

use std::io::{self, Write};
use std::ops::Range;

use cpiflame_profile::interval::{Interval, PairedMoments, STALL_COLOUR_WIDTH};
use cpiflame_profile::ratios::{RatioIntervals, RatioKind};
use cpiflame_profile::{FrameId, Profile};

use crate::color::cpi_position;
use crate::text::{ratio, Percent};
use crate::tree::{CpiWeight, Tree, Weight};
use crate::Options;

/// What a frame's colour says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Colour {
    /// The inclusive stall share.
    Stalls,
    /// The inclusive CPI (no stall column, an instructions column).
    Cpi,
    /// Nothing: a hash of the name tells frames apart.
    Name,
}

/// Cycles per instruction from summed periods; `None` (unknown) without instructions or
/// without cycles (instructions alone are a sampling artefact, not an infinitely fast frame).
pub(crate) fn cpi(c: &CpiWeight) -> Option<f64> {
    ratio(c.ratio_cycles.period, c.instructions.period).filter(|&cpi| cpi > 0.0)
}

/// Instructions per cycle, `1 / cpi`; `None` when the CPI is unknown.
pub(crate) fn ipc(c: &CpiWeight) -> Option<f64> {
    cpi(c).map(|cpi| 1.0 / cpi)
}

/// `1.23`, or `n/a`.
pub(crate) fn two_places(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"))
}

/// The legend's entry for washed-out frames.
pub(crate) const UNCERTAIN_LABEL: &str = "too few samples to place on the scale";

/// Whether a frame's interval of the ratio `colour` shows is too wide to place it on the
/// colour scale: wider than a quarter of the stall scale, or than one of the CPI scale's four
/// octaves. No interval (none asked for, or no samples to make one of): not washed out.
pub(crate) fn too_wide(colour: Colour, interval: Option<&Interval>) -> bool {
    let Some(interval) = interval else {
        return false;
    };
    match colour {
        Colour::Stalls => interval.too_wide_for_stall_colour(),
        Colour::Cpi => {
            let at = |cpi: f64| cpi_position(cpi).unwrap_or(0.0);
            !interval.hi.is_finite() || at(interval.hi) - at(interval.lo) > STALL_COLOUR_WIDTH
        }
        Colour::Name => false,
    }
}

/// Each node's interval of the ratio `colour` shows, at `opts.confidence` (none without
/// one, or for a graph coloured by name). Only for nodes wide enough to be drawn: a graph of
/// a million stacks has far more nodes than it draws. A leader-sampled group's nodes get the
/// interval of their per-sample deltas ([`paired_moments`]), others that of independently
/// sampled events.
pub(crate) fn frame_intervals<W: Weight + Sync>(
    profile: &Profile,
    tree: &Tree<FrameId, W>,
    cpi: impl Fn(&W) -> &CpiWeight + Sync,
    colour: Colour,
    columns: (Option<usize>, usize, Option<usize>),
    opts: &Options,
) -> Vec<Option<Interval>> {
    let Some(mut intervals) = opts.confidence.and_then(RatioIntervals::new) else {
        return Vec::new();
    };
    let all = *cpi(tree.root());
    let drawn = tree.drawn(opts.width, opts.min_width);
    let (stalls, ratio_cycles, instructions) = columns;
    let pair = match colour {
        Colour::Stalls => stalls.map(|s| (s, ratio_cycles)),
        Colour::Cpi => instructions.map(|i| (ratio_cycles, i)),
        Colour::Name => None,
    };
    let paired = pair.map_or_else(Vec::new, |(a, b)| {
        paired_moments(profile, tree, a, b, &drawn)
    });
    // A node's interval depends on its counts alone, so the nodes can be split between
    // threads (each with its own memo) and give the same intervals.
    let of_nodes = |range: Range<usize>, intervals: &mut RatioIntervals| {
        range
            .map(|i| {
                if !drawn[i] {
                    return None;
                }
                let c = cpi(&tree.nodes[i].total);
                let (num, den, column) = match colour {
                    Colour::Stalls => (c.stalls, c.ratio_cycles, all.stalls),
                    Colour::Cpi => (c.ratio_cycles, c.instructions, all.ratio_cycles),
                    Colour::Name => return None,
                };
                let kind = match colour {
                    Colour::Stalls => RatioKind::Share,
                    _ => RatioKind::Ratio,
                };
                intervals.frame(num, den, column, paired.get(i), kind)
            })
            .collect::<Vec<_>>()
    };
    let n = tree.nodes.len();
    if opts.single_threaded || n < PARALLEL_NODES {
        return of_nodes(0..n, &mut intervals);
    }
    std::thread::scope(|scope| {
        let mut second = intervals.clone();
        let later = scope.spawn(move || of_nodes(n / 2..n, &mut second));
        let mut all = of_nodes(0..n / 2, &mut intervals);
        match later.join() {
            Ok(later) => all.extend(later),
            Err(panic) => std::panic::resume_unwind(panic),
        }
        all
    })
}

/// Nodes from which [`frame_intervals`] pays for a second thread (a large program's graph has
/// tens of thousands; each interval is a root search over incomplete beta functions).
const PARALLEL_NODES: usize = 4096;

/// ` (95% interval LO to HI)`, the ends shown by `show` (an unbounded one `∞`).
pub(crate) fn write_interval<O: Write>(
    w: &mut O,
    confidence: f64,
    i: &Interval,
    show: impl Fn(f64) -> String,
) -> io::Result<()> {
    let hi = if i.hi.is_finite() {
        show(i.hi)
    } else {
        "∞".to_string()
    };
    write!(
        w,
        " ({}% interval {} to {})",
        Percent(Some(confidence), 0)
            .to_string()
            .trim_end_matches('%'),
        show(i.lo),
        hi
    )
}

/// Each drawn node's sum of its stacks' moments of columns (`a`, `b`), by node index;
/// empty when no stack has them (independently sampled events).
fn paired_moments<W: Weight>(
    profile: &Profile,
    tree: &Tree<FrameId, W>,
    a: usize,
    b: usize,
    drawn: &[bool],
) -> Vec<PairedMoments> {
    if profile.stacks.iter().all(|s| s.paired.is_empty()) {
        return Vec::new();
    }
    let paths = tree.paths(|i| drawn[i]);
    let mut sums = vec![PairedMoments::default(); tree.nodes.len()];
    for stack in &profile.stacks {
        let Some(m) = stack.paired_moments(a, b) else {
            continue;
        };
        sums[0].add(m);
        paths.descend(&stack.frames, |_, node| sums[node as usize].add(m));
    }
    sums
}
