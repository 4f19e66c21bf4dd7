//! Rendering: folded profile to SVG.
//!
//! Every picture is one of these:
//!
//! * [`render_cpi`], the CPI flame graph drawn by this crate: frame width is the unhalted
//!   cycles (summed sample periods of the cycles event) that landed in the frame (children
//!   included), frame colour is the share of those cycles that were stalled, on a fixed red
//!   (working) to blue (stalled) scale, or, with cycles and instructions but no stall event,
//!   the frame's CPI on a fixed logarithmic red (0.25) to blue (4) scale. Every frame is
//!   coloured by its *inclusive* numbers, not only leaves.
//! * [`render_wall`], a recording with off-CPU time drawn by wall-clock time: frame width is
//!   on-CPU + runnable + blocked nanoseconds, and every frame is cut into running (red),
//!   stalled (blue), runnable (amber) and blocked (striped grey) segments, with where it was
//!   blocked in its tooltip (`wall.rs` says why it is drawn so).
//! * [`render_classic`], the look of the original CPI flame graphs: a differential flame graph
//!   (`difffolded.pl -n stalls cycles | flamegraph.pl`) drawn with the `inferno` crate.
//! * [`render_diff`], the comparison of two runs: frame width is the AFTER run's unhalted
//!   cycles, frame colour the change of the frame's inclusive share of its run's cycles, on a
//!   fixed blue (shrank) to red (grew) scale; stacks gone in AFTER are listed under the graph.
//!
//! * [`render_topdown`], the top-down picture (a recording of the TMA events,
//!   `cpiflame_profile::topdown`): widths as the CPI graph's, colour the frame's dominant
//!   level-1 category (fixed hues, its share as intensity, level 2 as a shade) or one
//!   category's share on the stall scale ([`TopdownColour`]).
//!
//! One public function per kind; the caller decides which kind a recording is drawn as
//! (`cpiflame_draw`). What the kinds share about ratios and their intervals is in
//! `ratio.rs`, below every kind; the layout, legend and script in `page.rs`; the merged
//! stacks in `tree.rs`.
//! * [`render_mem`], the memory flame graph of load samples: frame width is their summed
//!   latency, frame colour where they were served (L1 red ... remote HITM blue) as the
//!   latency-weighted mean position of their classes on a fixed scale ([`mem_color`]).
//!
//! All write a self-contained SVG (with an embedded script for search and zoom) to any
//! [`Write`](std::io::Write). Output is deterministic: the same profile and options give
//! byte-identical SVG.
//!
//! This crate draws a [`Profile`] and nothing else: it must never read perf.data, unwind or
//! name frames (it does not link the crates that do), nor print; a picture is a function of
//! the profile and the options.

mod classic;
mod color;
mod cpi;
mod diff;
mod hot;
mod mem;
mod page;
mod ratio;
mod strip;
mod text;
mod topdown;
mod tree;
mod wall;
mod wrap;

use std::io;
use std::sync::Arc;

use cpiflame_profile::{Column, Columns, Count, Profile, SourceLines};

pub use classic::render_classic;
pub use color::{
    cpi_color, cpi_position, diff_color, stall_color, topdown_intensity, uncertain_color, Rgb,
    CPI_HIGH, CPI_LOW, DIFF_GREW, DIFF_NEUTRAL, DIFF_SHRANK, DIFF_SPAN, STALL_BLUE, STALL_MID,
    STALL_RED, TOPDOWN_BACKEND, TOPDOWN_BAD_SPECULATION, TOPDOWN_FRONTEND, TOPDOWN_PALE_END,
    TOPDOWN_RETIRING, TOPDOWN_SMT, WALL_BLOCKED, WALL_BLOCKED_STRIPES, WALL_ON_CPU, WALL_RUNNABLE,
};
pub use cpi::render_cpi;
pub use strip::{Strip, StripBucket};
pub use topdown::{render_topdown, topdown_color, TopdownColour, TopdownLook};
pub use wall::render_wall;
pub use wrap::{line_width, LINE_EM};

/// What a page that draws the CPI graph again in a browser (`cpiflame-timeline`) takes from
/// this crate, so that both draw it alike: the layout constants of the SVG, how its lines
/// are fitted to its width, its script (hover, zoom, search) and the colour scale's
/// washed-out end.
pub mod look {
    pub use crate::color::{PALE, UNCERTAIN_WASH};
    pub use crate::page::{title_room, BACKGROUND, FOOTER, MAX_HEADING_LINES, ROW, SCRIPT, XPAD};
    pub use crate::text::{CHAR_WIDTH, LABEL_PAD};
    pub use crate::wrap::LINE_EM;
    /// The colour of a frame whose ratio is unknown (no cycles, or no instructions).
    pub const UNKNOWN: crate::Rgb = crate::color::UNKNOWN_GREY;
}
pub use diff::render_diff;
pub use mem::{mem_color, mem_position, render_mem, ServedClass, MAX_SERVED_CLASSES};

/// The narrowest image [`render_cpi`], [`render_classic`] and [`render_diff`] accept, in pixels.
pub const MIN_IMAGE_WIDTH: u32 = 200;

/// How to draw the picture. Shared by [`render_cpi`] and [`render_classic`].
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The line at the top of the image.
    pub title: String,
    /// An extra line under the generated statistics line, for example
    /// `"no hardware counters: cpu-clock only"`.
    pub subtitle: Option<String>,
    /// Image width in pixels (at least [`MIN_IMAGE_WIDTH`]).
    pub width: u32,
    /// Frames narrower than this many pixels are left out, together with their children.
    /// This keeps huge profiles light; zooming into a frame does not bring them back.
    pub min_width: f64,
    /// Icicle layout: the root at the top and stacks growing downwards.
    pub inverted: bool,
    /// Write everything on the calling thread (`CPIFLAME_THREADS=1`). Otherwise the frames
    /// of a large graph are formatted on two threads; the bytes are the same either way.
    pub single_threaded: bool,
    /// The stall legend's caption when the stall event is not plain back-end stall cycles
    /// (`"STALL cycles (front + back end):"`); `None`: `"cycles stalled:"`.
    pub stall_caption: Option<&'static str>,
    /// The source line of each frame of the profile's stacks (a perf.data recording's,
    /// `cpiflame_pipeline::Loaded::lines`): the tooltip of every frame at least 1% of the
    /// width then lists its three hottest lines, with their share of the frame and stall
    /// share. The stacks must be the profile's (the same frame ids).
    pub lines: Option<Arc<SourceLines>>,
    /// The confidence of each frame's stall-share (or CPI) interval: tooltips give the
    /// interval, and a frame whose interval is too wide to place it on the colour scale is
    /// drawn washed out, with a legend entry saying so (`cpiflame_profile::interval`).
    /// `None`: no intervals.
    pub confidence: Option<f64>,
    /// The recording's stall share (or CPI) over time, drawn as a strip of buckets above
    /// the frames on the graph's colour scale (`render --strip`). The CPI graph only.
    pub strip: Option<Arc<Strip>>,
    /// The weights are counts of events, not samples (folded text: a count per line): the
    /// statistics line and the frames' tooltips say `counts`, as `report` does.
    pub counts: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            title: "CPI Flame Graph".to_string(),
            subtitle: None,
            width: 1200,
            min_width: 0.1,
            inverted: false,
            single_threaded: false,
            stall_caption: None,
            lines: None,
            confidence: None,
            strip: None,
            counts: false,
        }
    }
}

/// How to draw the differential picture of [`render_diff`]: the fields of [`Options`] that
/// apply to it.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffOptions {
    /// The line at the top of the image.
    pub title: String,
    /// An extra line under the generated statistics line.
    pub subtitle: Option<String>,
    /// Image width in pixels (at least [`MIN_IMAGE_WIDTH`]).
    pub width: u32,
    /// Frames narrower than this many pixels are left out, together with their children.
    pub min_width: f64,
    /// Icicle layout: the root at the top and stacks growing downwards.
    pub inverted: bool,
    /// As [`Options::single_threaded`].
    pub single_threaded: bool,
    /// As [`Options::counts`], of BEFORE and of AFTER.
    pub counts: (bool, bool),
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            title: "Differential CPI Flame Graph".to_string(),
            subtitle: None,
            width: 1200,
            min_width: 0.1,
            inverted: false,
            single_threaded: false,
            counts: (false, false),
        }
    }
}

/// Why a picture could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// An event column index is outside [`Profile::events`].
    #[error("event column {index} does not exist: the profile has {count} event column(s)")]
    NoSuchEvent { index: usize, count: usize },
    /// The event that gives frame widths has no samples (or only samples of period 0), so
    /// there is nothing to draw.
    #[error("no samples of event `{event}` in the profile: there is nothing to draw")]
    NoSamples { event: String },
    /// [`Options::width`] is below [`MIN_IMAGE_WIDTH`].
    #[error("image width {0} px is too small: it must be at least {MIN_IMAGE_WIDTH} px")]
    WidthTooSmall(u32),
    /// [`Options::min_width`] is negative, NaN or infinite.
    #[error("minimum frame width {0} px must be a finite number that is not negative")]
    BadMinWidth(f64),
    /// The profile breaks its own invariants (a stack with too few counts, or a frame id
    /// outside the frame table).
    #[error("malformed profile: {0}")]
    MalformedProfile(String),
    /// One of the two profiles given to [`render_diff`] is at fault: `side` is `BEFORE` or
    /// `AFTER`, `error` says what is wrong with it.
    #[error("{side} profile: {error}")]
    DiffSide {
        side: &'static str,
        error: Box<RenderError>,
    },
    /// Writing the SVG (or, for [`render_classic`], preparing inferno's input) failed.
    #[error("writing the SVG failed: {0}")]
    Io(#[from] io::Error),
}

/// Checks options and event indexes shared by [`render_cpi`] and [`render_classic`]; returns
/// the totals of the `cycles` column.
fn validate(profile: &Profile, columns: &Columns, opts: &Options) -> Result<Count, RenderError> {
    check_look(opts.width, opts.min_width)?;
    let count = profile.events.len();
    for index in [columns.instructions, columns.ratio_cycles]
        .into_iter()
        .flatten()
        .map(Column::index)
    {
        if index >= count {
            return Err(RenderError::NoSuchEvent { index, count });
        }
    }
    check_profile(
        profile,
        columns.cycles.index(),
        columns.stalls.map(Column::index),
    )
}

/// Checks the image width and minimum frame width.
fn check_look(width: u32, min_width: f64) -> Result<(), RenderError> {
    if width < MIN_IMAGE_WIDTH {
        return Err(RenderError::WidthTooSmall(width));
    }
    if !min_width.is_finite() || min_width < 0.0 {
        return Err(RenderError::BadMinWidth(min_width));
    }
    Ok(())
}

/// Checks event indexes and the profile's invariants; returns the totals of the `cycles`
/// column, whose period (the full width of the picture) must not be zero.
fn check_profile(
    profile: &Profile,
    cycles: usize,
    stalls: Option<usize>,
) -> Result<Count, RenderError> {
    let count = profile.events.len();
    for index in std::iter::once(cycles).chain(stalls) {
        if index >= count {
            return Err(RenderError::NoSuchEvent { index, count });
        }
    }
    let n_frames = profile.frames.len();
    let mut total = Count::default();
    for (i, stack) in profile.stacks.iter().enumerate() {
        if stack.counts.len() < count {
            return Err(RenderError::MalformedProfile(format!(
                "stack {i} has {} count(s) but the profile has {count} event column(s)",
                stack.counts.len()
            )));
        }
        if let Some(&id) = stack.frames.iter().find(|&&id| id as usize >= n_frames) {
            return Err(RenderError::MalformedProfile(format!(
                "stack {i} refers to frame {id} but there are only {n_frames} frame(s)"
            )));
        }
        total = tree::add(total, stack.counts[cycles]);
    }
    // Widths are periods: a column of samples that all carry period 0 has nothing to draw.
    if total.samples == 0 || total.period == 0 {
        return Err(RenderError::NoSamples {
            event: profile.events[cycles].name.clone(),
        });
    }
    Ok(total)
}
