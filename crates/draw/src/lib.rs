//! A recording read, drawn: the [`Look`] a user asks for (title, size, layout) completed with
//! what the recording says (the subtitle of its notes, its instructions and ratio columns,
//! the stall legend, the served-from classes of a memory recording) into
//! `cpiflame-render`'s options, and the picture written. The binary chooses the look from its
//! flags; the choices that come from the recording are made here, once for `render` and
//! `diff`; [`page`] does the same for the timeline page and `render --strip`.
//!
//! Apart from `cpiflame-pipeline` so that the commands that read without drawing (`fold`,
//! `report`, `annotate`, `convert`) do not link the SVG and page writers.
//!
//! Never reads, weighs or names anything of a recording (that is `cpiflame-pipeline`'s), and
//! never prints: pictures go to the writer the binary hands in.

pub mod page;

use std::io::Write;
use std::path::PathBuf;

use cpiflame_profile::topdown::Category;
use cpiflame_profile::{Columns, Measure, WallColumns, Width};

use cpiflame_render::{DiffOptions, Options, RenderError, ServedClass, TopdownColour, TopdownLook};

use cpiflame_pipeline::compare::Comparison;
use cpiflame_pipeline::{LoadProfile, Loaded, Note};

/// The title of each kind of picture unless the user gives one (`--title`): what the
/// picture is, as the kind is decided here.
pub mod titles {
    /// The CPI graph's (and `--classic`'s).
    pub const CPI: &str = "CPI Flame Graph";
    /// The wall-time graph's (a recording with off-CPU time).
    pub const WALL: &str = "Wall-Time Flame Graph";
    /// The top-down picture's.
    pub const TOPDOWN: &str = "Top-Down Flame Graph";
    /// The memory graph's (`render --mem`).
    pub const MEMORY: &str = "Memory Load Flame Graph";
    /// `diff`'s picture of cycles.
    pub const DIFF: &str = "Differential CPI Flame Graph";
    /// `diff`'s picture of wall time (both runs with off-CPU time).
    pub const WALL_DIFF: &str = "Differential Wall-Time Flame Graph";
    /// The timeline page's.
    pub const TIMELINE: &str = "CPI Timeline";
    /// The timeline page's of a recording with off-CPU time (its heat map and graph are of
    /// wall time).
    pub const WALL_TIMELINE: &str = "Wall-Time Timeline";
}

/// What the user chooses about a picture (flags and environment); the rest comes from the
/// recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Look {
    /// The line at the top of the image; `None`: the kind of picture's ([`titles`]).
    pub title: Option<String>,
    /// Image width in pixels.
    pub width: u32,
    /// Frames narrower than this many pixels are left out.
    pub min_width: f64,
    /// Icicle layout: the root at the top.
    pub inverted: bool,
    /// Write everything on the calling thread (`CPIFLAME_THREADS=1`).
    pub single_threaded: bool,
    /// The confidence of the CPI graph's intervals (`--confidence`); `None`: none drawn.
    pub confidence: Option<f64>,
    /// `--topdown-color CATEGORY`: a recording with top-down events drawn with that
    /// category's share on the stall scale (also in place of the wall-time graph); `None`:
    /// each frame's dominant category.
    pub topdown_colour: Option<String>,
}

impl Look {
    /// Render's options with this look and `title` unless the look has one, nothing from a
    /// recording yet.
    fn options(self, title: &str) -> Options {
        Options {
            title: self.title.unwrap_or_else(|| title.to_string()),
            width: self.width,
            min_width: self.min_width,
            inverted: self.inverted,
            single_threaded: self.single_threaded,
            confidence: self.confidence,
            ..Options::default()
        }
    }
}

/// A recording without a cycles column: nothing gives the widths.
#[derive(Debug, thiserror::Error)]
#[error("{}: no samples to draw", file.display())]
pub struct NothingToDraw {
    pub file: PathBuf,
}

/// Why a recording's graph cannot be drawn as asked (see [`Graph::of`]).
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error(transparent)]
    NothingToDraw(#[from] NothingToDraw),
    /// `--topdown-color` names no category of the recording's formulas, or the recording
    /// has none: the flag's one line.
    #[error("--topdown-color {given}: {reason}")]
    TopdownColour { given: String, reason: String },
}

/// The flame graph of a recording read, ready to be written (see [`Graph::of`]).
pub struct Graph<'a> {
    loaded: &'a Loaded,
    /// The recording's columns, the width as drawn (wall time or cycles).
    columns: Columns,
    /// Which picture: decided here once, drawn by its own function of render.
    kind: Kind,
    /// Render's options (`timeline` adds the strip).
    options: Options,
}

/// The kind of picture a recording is drawn as.
#[derive(Clone, Debug)]
enum Kind {
    /// FlameGraph's differential colouring, drawn with inferno (`render --classic`).
    Classic,
    /// The CPI graph (stall share, else CPI, else by name).
    Cpi,
    /// Widths and segments of wall time (a recording with off-CPU time).
    Wall(WallColumns),
    /// The top-down picture (a recording with a complete set of TMA events).
    Topdown(TopdownLook),
}

impl<'a> Graph<'a> {
    /// The CPI flame graph of `loaded` (`classic`: FlameGraph's differential picture of
    /// stalls against cycles, drawn with inferno) with `look`; the subtitle, instructions and
    /// ratio columns and the stall legend are the recording's. A recording with top-down
    /// events ([`Loaded::topdown`]) is drawn as the top-down picture, its subtitle naming the
    /// formula set and its approximation, except a wall-time recording without
    /// `look.topdown_colour` (the wall-time graph, as before). An error without a cycles
    /// column, or for a `--topdown-color` the formulas do not have, before anything is
    /// written.
    pub fn of(loaded: &'a Loaded, classic: bool, look: Look) -> Result<Graph<'a>, GraphError> {
        Graph::drawn(loaded, classic, look, true)
    }

    /// [`Graph::of`] with the CPI graph's colours whatever the recording holds: the picture
    /// `timeline`'s page and `render --strip` draw (their heat map and strip are of the
    /// stall share or CPI).
    pub fn cpi(loaded: &'a Loaded, look: Look) -> Result<Graph<'a>, GraphError> {
        Graph::drawn(loaded, false, look, false)
    }

    fn drawn(
        loaded: &'a Loaded,
        classic: bool,
        look: Look,
        topdown: bool,
    ) -> Result<Graph<'a>, GraphError> {
        let Some(columns) = loaded.columns() else {
            return Err(NothingToDraw {
                file: loaded.file.clone(),
            }
            .into());
        };
        let topdown = match topdown {
            true => topdown_look(loaded, look.topdown_colour.as_deref())?,
            false => None,
        };
        // --topdown-color draws the on-CPU top-down picture of a wall-time recording too.
        let wall = loaded.wall.filter(|_| look.topdown_colour.is_none());
        let subtitle = match (&topdown, wall) {
            (Some(t), None) if !classic => {
                // The colour is the categories': that no stall/cycles pair was found is
                // beside the point here.
                let notes = loaded
                    .notes
                    .iter()
                    .filter(|n| !matches!(n, Note::NoStallPair { .. }))
                    .map(Note::to_string);
                let set = &t.plan.set;
                let lines = [format!("top-down: {}", set.name())]
                    .into_iter()
                    .chain(set.approximation().map(str::to_string))
                    .chain(notes);
                Some(lines.collect::<Vec<_>>().join(" · "))
            }
            _ => loaded.subtitle(),
        };
        let columns = Columns {
            width: wall.map_or(Width::Cycles, Width::Wall),
            ..columns
        };
        // Wall time wins over top-down (unless --topdown-color asked for the on-CPU picture,
        // which took the wall away above).
        let kind = match (classic, wall, topdown) {
            (true, _, _) => Kind::Classic,
            (false, Some(wall), _) => Kind::Wall(wall),
            (false, None, Some(topdown)) => Kind::Topdown(topdown),
            (false, None, None) => Kind::Cpi,
        };
        let title = match kind {
            Kind::Classic | Kind::Cpi => titles::CPI,
            Kind::Wall(_) => titles::WALL,
            Kind::Topdown(_) => titles::TOPDOWN,
        };
        let options = Options {
            subtitle,
            stall_caption: loaded.stall_legend(),
            lines: loaded.lines.clone(),
            counts: loaded.counts,
            ..look.options(title)
        };
        Ok(Graph {
            loaded,
            columns,
            kind,
            options,
        })
    }
}

/// The top-down look of `loaded` with `--topdown-color` `colour` (`None`: the dominant
/// category): `None` without top-down formulas, an error for a colour the formulas do not
/// have or without them.
fn topdown_look(loaded: &Loaded, colour: Option<&str>) -> Result<Option<TopdownLook>, GraphError> {
    let Some(plan) = &loaded.topdown else {
        return match colour {
            Some(given) => Err(GraphError::TopdownColour {
                given: given.to_string(),
                reason: format!(
                    "{} has no complete set of top-down events",
                    loaded.file.display()
                ),
            }),
            None => Ok(None),
        };
    };
    let colour = match colour {
        Some(given) => TopdownColour::Category(Category::parse(given, plan).map_err(|reason| {
            GraphError::TopdownColour {
                given: given.to_string(),
                reason,
            }
        })?),
        None => TopdownColour::Dominant,
    };
    Ok(Some(TopdownLook {
        plan: plan.clone(),
        colour,
    }))
}

impl Graph<'_> {
    /// Writes the SVG to `out`.
    pub fn write(&self, out: &mut dyn Write) -> Result<(), RenderError> {
        let (profile, columns, options) = (&self.loaded.profile, &self.columns, &self.options);
        match &self.kind {
            Kind::Classic => cpiflame_render::render_classic(profile, columns, options, out),
            Kind::Cpi => cpiflame_render::render_cpi(profile, columns, options, out),
            Kind::Wall(wall) => cpiflame_render::render_wall(profile, columns, *wall, options, out),
            Kind::Topdown(look) => {
                cpiflame_render::render_topdown(profile, columns, look, options, out)
            }
        }
    }
}

/// Writes the memory flame graph (`render --mem`) of `loads` with `look`: one colour class
/// per served-from column, the subtitle saying what was left out, titled
/// [`titles::MEMORY`] unless the look has a title.
pub fn write_memory_graph(
    loads: &LoadProfile,
    look: Look,
    out: &mut dyn Write,
) -> Result<(), RenderError> {
    let classes: Vec<ServedClass> = loads
        .classes
        .iter()
        .map(|c| ServedClass {
            name: c.name().to_string(),
            distance: c.distance(),
        })
        .collect();
    let options = Options {
        subtitle: Some(loads.subtitle()),
        ..look.options(titles::MEMORY)
    };
    cpiflame_render::render_mem(&loads.profile, &classes, &options, out)
}

/// Writes the differential flame graph (`diff`) of `runs` with `look`: widths from the later
/// run, colour by the change of each frame, CPI before and after where both runs have
/// instructions. Of wall time when the summary's shares are ([`Measure::WallTime`]: both
/// first runs have the wall-time columns), so the picture shows the changes the summary and
/// the gate compare; else of cycles. Titled by which ([`titles::WALL_DIFF`],
/// [`titles::DIFF`]) unless the look has a title.
pub fn write_diff_graph(
    runs: &Comparison,
    look: Look,
    out: &mut dyn Write,
) -> Result<(), RenderError> {
    // Of wall time when the summary's shares are; the ratio cycles are not drawn here.
    let columns = |c: &Columns| Columns {
        width: match runs.measure {
            Measure::WallTime => c.width,
            Measure::Cycles => Width::Cycles,
        },
        ratio_cycles: None,
        ..*c
    };
    let title = match runs.measure {
        Measure::WallTime => titles::WALL_DIFF,
        Measure::Cycles => titles::DIFF,
    };
    let options = DiffOptions {
        title: look.title.unwrap_or_else(|| title.to_string()),
        subtitle: None,
        width: look.width,
        min_width: look.min_width,
        inverted: look.inverted,
        single_threaded: look.single_threaded,
        counts: (runs.before.counts, runs.after.counts),
    };
    cpiflame_render::render_diff(
        &runs.before.profile,
        &columns(&runs.before_columns),
        &runs.after.profile,
        &columns(&runs.after_columns),
        &options,
        out,
    )
}
