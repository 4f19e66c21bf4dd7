//! `render --strip`: the recording's stall share (or CPI) over time, a row of buckets above
//! the CPI graph's frames on the graph's own colour scale, for pictures that show phases in
//! CI artifacts. Without stall or instructions columns the buckets are shaded by samples.

use std::io::{self, Write};

use cpiflame_profile::Count;

use crate::color::{cpi_color, lerp, stall_color, Rgb};
use crate::page::XPAD;
use crate::ratio::Colour;
use crate::text::{ratio, Percent, Thousands};

/// A recording over time: equal buckets from its first sample, each with the summed counts
/// of the graph's columns (`cpiflame_pipeline::timeline` makes it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Strip {
    /// The first bucket's start (the first sample's time) and each bucket's length, in
    /// nanoseconds of the recording's clock.
    pub start_ns: u64,
    pub bucket_ns: u64,
    pub buckets: Vec<StripBucket>,
}

/// One bucket's counts of the graph's cycles, stall and instructions columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StripBucket {
    pub cycles: Count,
    pub stalls: Count,
    pub instructions: Count,
}

/// Height of the strip and its labels, and the gap under them.
pub(crate) const STRIP_HEIGHT: u32 = 40;
const BAR: u32 = 12;

/// The fill of a bucket, `None` for one without cycles.
fn fill(b: &StripBucket, colour: Colour, max_samples: u64) -> Option<Rgb> {
    if b.cycles.samples == 0 {
        return None;
    }
    Some(match colour {
        Colour::Stalls => stall_color(ratio(b.stalls.period, b.cycles.period)),
        Colour::Cpi => {
            cpi_color(ratio(b.cycles.period, b.instructions.period).filter(|&c| c > 0.0))
        }
        Colour::Name => lerp(
            Rgb(255, 255, 255),
            Rgb(90, 90, 90),
            b.cycles.samples as f64 / max_samples.max(1) as f64,
        ),
    })
}

/// Writes the strip with its top at `top` in an image `width` pixels wide.
pub(crate) fn write<O: Write>(
    w: &mut O,
    strip: &Strip,
    colour: Colour,
    top: u32,
    width: u32,
) -> io::Result<()> {
    let span = f64::from(width) - 2.0 * XPAD;
    let n = strip.buckets.len().max(1) as f64;
    let step = span / n;
    let seconds = |ns: u64| ns as f64 / 1e9;
    let what = match colour {
        Colour::Stalls => "stall share",
        Colour::Cpi => "CPI",
        Colour::Name => "samples",
    };
    let max = strip
        .buckets
        .iter()
        .map(|b| b.cycles.samples)
        .max()
        .unwrap_or(0);
    writeln!(
        w,
        r#"<g id="strip" data-start="{}" data-bucket="{}">"#,
        strip.start_ns, strip.bucket_ns
    )?;
    for (i, b) in strip.buckets.iter().enumerate() {
        let Some(fill) = fill(b, colour, max) else {
            continue;
        };
        let from = i as u64 * strip.bucket_ns;
        let value = match colour {
            Colour::Stalls => format!(
                "stalled {}",
                Percent(ratio(b.stalls.period, b.cycles.period), 1)
            ),
            Colour::Cpi => format!(
                "CPI {}",
                crate::ratio::two_places(ratio(b.cycles.period, b.instructions.period))
            ),
            Colour::Name => String::new(),
        };
        writeln!(
            w,
            r#"<rect data-i="{i}" x="{:.2}" y="{top}" width="{:.2}" height="{BAR}" fill="{fill}"><title>{:.3}–{:.3} s: {} samples{}{value}</title></rect>"#,
            XPAD + i as f64 * step,
            step,
            seconds(from),
            seconds(from + strip.bucket_ns),
            Thousands(b.cycles.samples),
            if value.is_empty() { "" } else { ", " },
        )?;
    }
    let end = strip.bucket_ns.saturating_mul(strip.buckets.len() as u64);
    writeln!(
        w,
        r#"<text x="{XPAD}" y="{}">0 s</text><text x="{:.1}" y="{}" text-anchor="middle">{what} over time</text><text x="{:.1}" y="{}" text-anchor="end">{:.1} s</text></g>"#,
        top + BAR + 12,
        f64::from(width) / 2.0,
        top + BAR + 12,
        f64::from(width) - XPAD,
        top + BAR + 12,
        seconds(end),
    )
}
