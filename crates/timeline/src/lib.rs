//! `cpiflame timeline`: one self-contained HTML page of a recording over time. A
//! FlameScope-style heat map (`id="heatmap"`: columns are seconds, rows the position within
//! the second) shaded by samples (or wall time) and coloured by each cell's stall share or
//! CPI on the CPI graph's scale; a range dragged on it is drawn as the CPI flame graph of
//! that range (`id="flamegraph"`), with the SVG's layout rules, colours and script (hover,
//! zoom, search), and shown as the `--time` argument that selects it on the command line.
//!
//! The page carries its data compactly ([`encode`]): the frames and stacks once, and per
//! cell the (thread, stack) pairs with their counts, as variable-length integers in base64;
//! the page's script sums the selected cells into a call tree and lays it out as
//! `cpiflame-render` does (`timeline.js`). The colour scale and layout constants come from
//! `cpiflame_render` (one source of truth).
//!
//! This crate draws a profile and its per-sample table (`cpiflame_profile::timed`) and
//! nothing else: it must never read perf.data, unwind or name frames, nor print.

mod encode;

use std::io::{self, Write};

use cpiflame_profile::timed::Timed;
use cpiflame_profile::{Column, Columns, Profile};
use cpiflame_render::look;
use cpiflame_render::{stall_color, Rgb, CPI_HIGH, CPI_LOW, STALL_BLUE, STALL_MID, STALL_RED};

pub use encode::{encode, Encoded, ValueColumn};

/// FlameScope's default: 50 rows per second (20 ms each).
pub const DEFAULT_ROWS: u32 = 50;

/// How to draw the page: the flame graph's options as `render` takes them (title, subtitle,
/// width, minimum width, icicle, instructions column, wall-time columns, stall caption;
/// no intervals, source lines or strip: the page draws none), and the heat map's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub graph: cpiflame_render::Options,
    /// Rows per second; a divisor of 1,000,000, so that every cell starts on a whole
    /// microsecond (the `--time` text has six decimals).
    pub rows: u32,
    /// The regions the recorded program marked, drawn as bands over the heat map; none
    /// leaves the page as it was without them.
    pub regions: Vec<Region>,
}

/// One region's intervals, as its marker files have them: (thread, start, end), in
/// nanoseconds on the samples' clock, inclusive.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Region {
    pub name: String,
    pub intervals: Vec<(i32, u64, u64)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            graph: cpiflame_render::Options {
                title: "CPI Timeline".to_string(),
                ..cpiflame_render::Options::default()
            },
            rows: DEFAULT_ROWS,
            regions: Vec::new(),
        }
    }
}

/// Why the page could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error("no timed samples of event `{0}`: there is nothing to draw")]
    NoSamples(String),
    #[error("rows per second {0} must divide 1000000 (cells start on whole microseconds)")]
    BadRows(u32),
    #[error("image width {0} px is too small: it must be at least {min} px", min = cpiflame_render::MIN_IMAGE_WIDTH)]
    WidthTooSmall(u32),
    #[error("minimum frame width {0} px must be a finite number that is not negative")]
    BadMinWidth(f64),
    #[error("event column {index} does not exist: the profile has {count} event column(s)")]
    NoSuchEvent { index: usize, count: usize },
    #[error("writing the page failed: {0}")]
    Io(#[from] io::Error),
}

/// `--rows`'s parser: a number of rows per second that divides 1,000,000.
pub fn parse_rows(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(rows) if rows > 0 && 1_000_000 % rows == 0 => Ok(rows),
        _ => Err(format!(
            "`{text}` is not a number of rows per second that divides 1000000 (cells start on whole microseconds), such as 50 or 100"
        )),
    }
}

const TEMPLATE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("timeline.js");
/// The regions' bands and legend: part of the page's script only when there are regions,
/// so that a page without them is byte for byte the page as it was before regions.
const BANDS: &str = include_str!("bands.js");
/// Where [`BANDS`] goes in [`SCRIPT`] (after the heat map's code, before the times'), and
/// where the heat map calls it (after the cells, before the axes' labels).
const BANDS_AT: &str = "  // ---- times: the --time text ----\n";
const DRAW_BANDS_AT: &str =
    "    ctx.fillStyle = \"#000000\";\n    ctx.font = \"10px monospace\";\n";

/// [`SCRIPT`] with [`BANDS`] spliced in.
fn with_bands() -> String {
    assert_eq!(
        SCRIPT.matches(BANDS_AT).count(),
        1,
        "timeline.js has one times section"
    );
    assert_eq!(
        SCRIPT.matches(DRAW_BANDS_AT).count(),
        1,
        "timeline.js labels its axes once"
    );
    SCRIPT
        .replace(BANDS_AT, &format!("{BANDS}{BANDS_AT}"))
        .replace(DRAW_BANDS_AT, &format!("    drawBands();\n{DRAW_BANDS_AT}"))
}

/// Writes the timeline page of `profile` and its per-sample table `timed` (whose stacks are
/// indexes into `profile.stacks`): widths and colours from `columns`, as
/// [`render_cpi`](cpiflame_render::render_cpi) draws them.
pub fn write_timeline<W: Write>(
    profile: &Profile,
    columns: &Columns,
    timed: &Timed,
    options: &Options,
    mut out: W,
) -> Result<(), TimelineError> {
    let (opts, rows) = (&options.graph, options.rows);
    if opts.width < cpiflame_render::MIN_IMAGE_WIDTH {
        return Err(TimelineError::WidthTooSmall(opts.width));
    }
    if !opts.min_width.is_finite() || opts.min_width < 0.0 {
        return Err(TimelineError::BadMinWidth(opts.min_width));
    }
    if rows == 0 || 1_000_000 % rows != 0 {
        return Err(TimelineError::BadRows(rows));
    }
    let count = profile.events.len();
    let wall = columns.wall().map(|w| w.all());
    let all = [Some(columns.cycles), columns.stalls, columns.instructions]
        .into_iter()
        .flatten()
        .chain(wall.into_iter().flatten())
        .map(Column::index);
    for index in all {
        if index >= count {
            return Err(TimelineError::NoSuchEvent { index, count });
        }
    }
    let encoded = encode(profile, columns, timed, rows).ok_or_else(|| {
        TimelineError::NoSamples(profile.events[columns.cycles.index()].name.clone())
    })?;
    let mut data = page_data(profile, columns, opts, rows, &encoded);
    if !options.regions.is_empty() {
        data.pop();
        data.push_str(&regions_data(&options.regions, encoded.cells.origin));
        data.push('}');
    }
    let (head, tail) = TEMPLATE
        .split_once("/*DATA*/")
        .expect("the template has a data slot");
    let (middle, end) = tail
        .split_once("/*FLAME*/")
        .expect("the template has a script slot");
    let (middle2, end) = end
        .split_once("/*SCRIPT*/")
        .expect("the template has a script slot");
    out.write_all(
        head.replace("{{TITLE}}", &html_escape(&opts.title))
            .as_bytes(),
    )?;
    out.write_all(data.as_bytes())?;
    out.write_all(middle.as_bytes())?;
    out.write_all(look::SCRIPT.replace("</", "<\\/").as_bytes())?;
    out.write_all(middle2.as_bytes())?;
    if options.regions.is_empty() {
        out.write_all(SCRIPT.as_bytes())?;
    } else {
        out.write_all(with_bands().as_bytes())?;
    }
    out.write_all(end.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The page's data: a JSON object (with `</` escaped, as it sits in a `<script>`).
fn page_data(
    profile: &Profile,
    columns: &Columns,
    opts: &cpiflame_render::Options,
    rows: u32,
    e: &Encoded,
) -> String {
    let colour = match (columns.stalls, columns.instructions) {
        (Some(_), _) => "stalls",
        (None, Some(_)) => "cpi",
        (None, None) => "name",
    };
    let event = |c: Option<Column>| {
        c.map_or("null".to_string(), |c| {
            json_str(&profile.events[c.index()].name)
        })
    };
    let rgb = |c: Rgb| format!("[{},{},{}]", c.0, c.1, c.2);
    let frames: Vec<String> = e
        .frames
        .iter()
        .map(|f| {
            let kind = match f.kind {
                cpiflame_profile::FrameKind::Process => "process",
                cpiflame_profile::FrameKind::User => "",
                cpiflame_profile::FrameKind::Inline => "inlined",
                cpiflame_profile::FrameKind::Kernel => "kernel",
                cpiflame_profile::FrameKind::Jit => "jit",
                cpiflame_profile::FrameKind::Thread => "thread",
                cpiflame_profile::FrameKind::Cgroup => "cgroup",
            };
            format!("[{},{},\"{kind}\"]", json_str(&f.name), json_str(&f.module))
        })
        .collect();
    let threads: Vec<String> = e
        .threads
        .iter()
        .map(|t| format!("[{},{},{}]", t.pid, t.tid, json_str(&t.comm)))
        .collect();
    let values: Vec<String> = e
        .values
        .iter()
        .map(|v| format!("[\"{}\",{}]", v.role, v.unit))
        .collect();
    format!(
        concat!(
            "{{\"title\":{title},\"subtitle\":{subtitle},\"width\":{width},\"minWidth\":{min_width},\"inverted\":{inverted},",
            "\"rows\":{rows},\"columns\":{columns},\"origin\":{origin},\"colour\":\"{colour}\",",
            "\"wall\":{wall},\"cyclesEvent\":{cycles},\"stallsEvent\":{stalls},",
            "\"instructionsEvent\":{instructions},\"stallCaption\":{caption},",
            "\"scale\":{{\"red\":{red},\"mid\":{mid},\"blue\":{blue},\"unknown\":{unknown},",
            "\"pale\":{pale},\"wash\":{wash},\"cpiLow\":{cpi_low},\"cpiHigh\":{cpi_high},",
            "\"uncertainWidth\":{uncertain}}},",
            "\"look\":{{\"xpad\":{xpad},\"row\":{row},\"charWidth\":{char_width},",
            "\"lineEm\":{line_em},\"titleRoom\":{title_room},\"maxLines\":{max_lines},",
            "\"labelPad\":{label_pad},\"footer\":{footer},\"background\":\"{background}\"}},",
            "\"values\":[{values}],\"frames\":[{frames}],\"threads\":[{threads}],",
            "\"stacks\":\"{stacks}\",\"cells\":\"{cells}\"}}"
        ),
        colour = colour,
        title = json_str(&opts.title),
        subtitle = opts.subtitle.as_deref().map_or("null".to_string(), json_str),
        width = opts.width,
        min_width = opts.min_width,
        inverted = opts.inverted,
        rows = rows,
        columns = e.cells.columns,
        origin = e.cells.origin / cpiflame_profile::timed::NS_PER_SEC,
        wall = columns.wall().is_some(),
        cycles = event(Some(columns.cycles)),
        stalls = event(columns.stalls),
        instructions = event(columns.instructions),
        caption = json_str(opts.stall_caption.unwrap_or("cycles stalled:")),
        red = rgb(STALL_RED),
        mid = rgb(STALL_MID),
        blue = rgb(STALL_BLUE),
        unknown = rgb(stall_color(None)),
        pale = rgb(look::PALE),
        wash = look::UNCERTAIN_WASH,
        cpi_low = CPI_LOW,
        cpi_high = CPI_HIGH,
        uncertain = cpiflame_profile::interval::STALL_COLOUR_WIDTH,
        xpad = look::XPAD,
        row = look::ROW,
        char_width = look::CHAR_WIDTH,
        line_em = look::LINE_EM,
        title_room = look::title_room(opts.width),
        max_lines = look::MAX_HEADING_LINES,
        label_pad = look::LABEL_PAD,
        footer = look::FOOTER,
        background = look::BACKGROUND,
        values = values.join(","),
        frames = frames.join(","),
        threads = threads.join(","),
        stacks = e.stacks,
        cells = e.cell_data,
    )
}

/// `,"regions":[...]`: per region (sorted by name, as its colour is picked), its name and
/// its intervals as `[thread, start, end]`, in nanoseconds since `origin` (the heat map's
/// first column), which may be before it.
fn regions_data(regions: &[Region], origin: u64) -> String {
    let mut sorted: Vec<&Region> = regions.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let since = |t: u64| i128::from(t) - i128::from(origin);
    let list: Vec<String> = sorted
        .iter()
        .map(|r| {
            let intervals: Vec<String> = r
                .intervals
                .iter()
                .map(|&(tid, s, e)| format!("[{tid},{},{}]", since(s), since(e)))
                .collect();
            format!(
                "{{\"name\":{},\"intervals\":[{}]}}",
                json_str(&r.name),
                intervals.join(",")
            )
        })
        .collect();
    format!(",\"regions\":[{}]", list.join(","))
}

/// `s` as a JSON string, with `<` escaped so that no `</script>` can close the page's script.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '<' => out.push_str("\\u003c"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bands_script_splices_into_the_page_script() {
        let script = with_bands();
        assert_eq!(
            script.len(),
            SCRIPT.len() + BANDS.len() + "    drawBands();\n".len()
        );
        let bands = script.find("function drawBands()").unwrap();
        let call = script.find("    drawBands();\n").unwrap();
        let times = script.find(BANDS_AT).unwrap();
        assert!(call < bands && bands < times);
        assert!(script[..call].contains("function drawHeatmap()"));
    }

    #[test]
    fn regions_data_is_sorted_by_name_and_relative_to_the_origin() {
        let regions = [
            Region {
                name: "pixel".into(),
                intervals: vec![(7, 2_000_000_100, 2_000_000_200)],
            },
            Region {
                name: "<frame>".into(),
                intervals: vec![(8, 999_999_999, 3_000_000_000), (7, 1, 2)],
            },
        ];
        assert_eq!(
            regions_data(&regions, 1_000_000_000),
            ",\"regions\":[{\"name\":\"\\u003cframe>\",\"intervals\":[[8,-1,2000000000],[7,-999999999,-999999998]]},{\"name\":\"pixel\",\"intervals\":[[7,1000000100,1000000200]]}]"
        );
    }

    #[test]
    fn json_strings_cannot_close_the_script() {
        assert_eq!(
            json_str("a\"b\\c</script>\n"),
            "\"a\\\"b\\\\c\\u003c/script>\\u000a\""
        );
    }
}
