//! Every line of text of every picture fits the image (issue 40, item 4): each kind (CPI by
//! stall share and by CPI, wall time, top-down, differential of cycles and of wall time,
//! memory, classic) drawn at 400, 1,200 and 2,000 px with long event names, a long subtitle
//! and a long title, read back, and each `<text>` placed where its anchor puts it with the
//! width the renderer estimates for it: [`LINE_EM`] for the lines across the image, the
//! frame labels' [`CHAR_WIDTH`](cpiflame_render::look::CHAR_WIDTH) (they are fitted to
//! their frames with it). A line the renderer wrapped keeps all of its text; one it cut ends
//! with `..` and carries the whole text as its tooltip. The browser's own measurement of
//! the same pictures, drawn by the binary, is `crates/cpiflame/tests/integration/pictures.rs`.

mod common;

use common::{render_diff_svg, Builder};
use cpiflame_profile::topdown::{plan, Cpu, Machine};
use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
use cpiflame_profile::{Column, Columns, Profile, WallColumns, Width};
use cpiflame_render::{
    look, render_classic, render_cpi, render_mem, render_topdown, render_wall, DiffOptions,
    Options, ServedClass, TopdownColour, TopdownLook, LINE_EM,
};

const WIDTHS: [u32; 3] = [400, 1200, 2000];

/// A title longer than any image's title row at 400 px.
const TITLE: &str = "CPI Flame Graph of the nightly benchmark run on a Sapphire Rapids node";

/// Notes as long as a recording's can be (several, joined as the graph joins them).
const SUBTITLE: &str = "recorded without hardware counters (no PMU): widths are cpu-clock time · \
    samples of --time 1000.000000,1002.000000 · widths: cycles of cpu_core+cpu_atom cores · \
    a_single_very_long_token_without_any_space_in_it_that_must_be_broken_somewhere_to_fit";

/// A leaf with a long C++ name, wide enough to carry much of it as its label.
const LONG_LEAF: &str = "std::vector<std::pair<std::string, std::shared_ptr<Node> >, \
    std::allocator<std::pair<std::string, std::shared_ptr<Node> > > >::emplace_back(Node&&)";

fn options(width: u32) -> Options {
    Options {
        title: TITLE.into(),
        subtitle: Some(SUBTITLE.into()),
        width,
        min_width: 0.0,
        stall_caption: Some("STALL cycles (front + back end):"),
        ..Options::default()
    }
}

/// Cycles, stalls, instructions and the three wall-time columns, with long event names.
fn profile() -> Profile {
    Builder::new(&[
        "cpu_clk_unhalted.thread_p_any_with_a_long_suffix",
        "cycle_activity.stalls_total_with_a_long_suffix",
        "inst_retired.any_p_with_a_long_suffix",
        ON_CPU,
        RUNNABLE,
        BLOCKED,
    ])
    .stack(
        &format!("benchmark;main;run;{LONG_LEAF}"),
        &[
            (9000, 90_000_000),
            (4000, 40_000_000),
            (8000, 80_000_000),
            (9, 9_000_000),
            (1, 1_000_000),
            (2, 2_000_000),
        ],
    )
    .stack(
        "benchmark;main;wait",
        &[
            (1, 10_000),
            (0, 0),
            (1, 5_000),
            (0, 0),
            (0, 0),
            (3, 3_000_000),
        ],
    )
    .build()
}

fn columns(stalls: bool, wall: bool) -> Columns {
    Columns {
        instructions: Some(Column(2)),
        width: match wall {
            true => Width::Wall(WallColumns {
                on_cpu: Column(3),
                runnable: Column(4),
                blocked: Column(5),
            }),
            false => Width::Cycles,
        },
        ..Columns::new(0, stalls.then_some(1))
    }
}

fn svg(draw: impl FnOnce(&mut Vec<u8>) -> Result<(), cpiflame_render::RenderError>) -> String {
    let mut out = Vec::new();
    draw(&mut out).unwrap_or_else(|e| panic!("drawing failed: {e}"));
    String::from_utf8(out).unwrap()
}

/// Golden Cove's level-1 columns: slots, cycles, the four metrics.
fn topdown_profile() -> Profile {
    Builder::new(&[
        "slots",
        "cpu_clk_unhalted.thread_p_any_with_a_long_suffix",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
    ])
    .stack(
        &format!("benchmark;main;{LONG_LEAF}"),
        &[
            (1, 8_000_000),
            (9000, 2_000_000),
            (1, 1_024_000),
            (1, 256_000),
            (1, 512_000),
            (1, 6_208_000),
        ],
    )
    .build()
}

/// Every kind at `width`: (name, SVG).
fn pictures(width: u32) -> Vec<(&'static str, String)> {
    let p = profile();
    let o = options(width);
    let topdown = topdown_profile();
    let names = ["slots", "cycles", "topdown-retiring"];
    let names: Vec<&str> = names
        .into_iter()
        .chain(["topdown-bad-spec", "topdown-fe-bound", "topdown-be-bound"])
        .collect();
    let spr = Machine::of(Cpu::from_perf_cpuid("GenuineIntel,6,143,8"));
    let td = TopdownLook {
        plan: plan(&names, &spr).expect("Golden Cove's formulas"),
        colour: TopdownColour::Dominant,
    };
    let td_columns = Columns::new(1, None);
    let diff = DiffOptions {
        title: TITLE.into(),
        subtitle: Some(SUBTITLE.into()),
        width,
        min_width: 0.0,
        ..DiffOptions::default()
    };
    let classes = [
        ServedClass {
            name: "L1 hit".into(),
            distance: Some(0.0),
        },
        ServedClass {
            name: "local HITM".into(),
            distance: Some(0.5),
        },
        ServedClass {
            name: "remote HITM".into(),
            distance: Some(1.0),
        },
    ];
    vec![
        ("cpi", svg(|w| render_cpi(&p, &columns(true, false), &o, w))),
        (
            "cpi by CPI",
            svg(|w| render_cpi(&p, &columns(false, false), &o, w)),
        ),
        (
            "wall",
            svg(|w| render_wall(&p, &columns(true, true), wall(), &o, w)),
        ),
        (
            "top-down",
            svg(|w| render_topdown(&topdown, &td_columns, &td, &o, w)),
        ),
        (
            "diff",
            svg(|w| {
                let c = columns(true, false);
                w.extend(render_diff_svg(&p, &c, &topdown_like(), &c, &diff).bytes());
                Ok(())
            }),
        ),
        (
            "wall diff",
            svg(|w| {
                let c = columns(true, true);
                w.extend(render_diff_svg(&p, &c, &topdown_like(), &c, &diff).bytes());
                Ok(())
            }),
        ),
        ("memory", svg(|w| render_mem(&memory(), &classes, &o, w))),
        (
            "classic",
            svg(|w| render_classic(&p, &columns(true, false), &o, w)),
        ),
    ]
}

fn wall() -> WallColumns {
    WallColumns {
        on_cpu: Column(3),
        runnable: Column(4),
        blocked: Column(5),
    }
}

/// A later run for the differential graphs: [`profile`] with the long leaf gone (listed
/// under the graph) and a new one.
fn topdown_like() -> Profile {
    Builder::new(&[
        "cpu_clk_unhalted.thread_p_any_with_a_long_suffix",
        "cycle_activity.stalls_total_with_a_long_suffix",
        "inst_retired.any_p_with_a_long_suffix",
        ON_CPU,
        RUNNABLE,
        BLOCKED,
    ])
    .stack(
        "benchmark;main;run;replacement_of_the_long_leaf",
        &[
            (5000, 50_000_000),
            (1000, 10_000_000),
            (8000, 80_000_000),
            (5, 5_000_000),
            (1, 1_000_000),
            (1, 1_000_000),
        ],
    )
    .stack(
        "benchmark;main;wait",
        &[
            (1, 10_000),
            (0, 0),
            (1, 5_000),
            (0, 0),
            (0, 0),
            (3, 3_000_000),
        ],
    )
    .build()
}

/// Loads of three served-from classes, their latency as the period.
fn memory() -> Profile {
    Builder::new(&["L1 hit", "local HITM", "remote HITM"])
        .stack(
            &format!("benchmark;main;{LONG_LEAF}"),
            &[(60, 600), (10, 1_000), (40, 4_400)],
        )
        .build()
}

/// One `<text>` as drawn: its text, and where the estimate puts its left and right ends.
#[derive(Debug)]
struct Placed {
    text: String,
    left: f64,
    right: f64,
}

/// The `<text>` elements of `svg` (image `width` wide) with their estimated extents. The
/// classic picture's frame labels are left out: inferno's script writes them in the
/// browser, measuring the font.
fn placed(svg: &str, width: u32) -> Vec<Placed> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(svg, options).expect("well-formed SVG");
    let width = f64::from(width);
    let mut out = Vec::new();
    for t in doc.descendants().filter(|n| n.has_tag_name("text")) {
        let text: String = t
            .children()
            .filter(|c| c.is_text())
            .filter_map(|c| c.text())
            .collect();
        if text.trim().is_empty() {
            continue;
        }
        let in_frames = t
            .ancestors()
            .any(|a| a.attribute("id") == Some("frames") || a.attribute("class") == Some("f"));
        let id = t.attribute("id");
        let class = t.attribute("class").unwrap_or("");
        let style = t.attribute("style").unwrap_or("");
        let px = if id == Some("title") || style.contains("font-size: 17px") {
            17.0
        } else {
            12.0
        };
        // Frame labels are fitted with the labels' estimate; every other line with LINE_EM.
        let em = if in_frames {
            look::CHAR_WIDTH / 12.0
        } else {
            LINE_EM
        };
        let w = text.chars().count() as f64 * px * em;
        let x = t.attribute("x").expect("x");
        let x = match x.strip_suffix('%') {
            Some(p) => p.parse::<f64>().unwrap() / 100.0 * width,
            None => x.parse::<f64>().unwrap(),
        };
        let middle = t.attribute("text-anchor") == Some("middle")
            || class.split(' ').any(|c| c == "sub")
            || id == Some("title")
            || id == Some("subtitle");
        let end = t.attribute("text-anchor") == Some("end") || id == Some("search");
        let (left, right) = if middle {
            (x - w / 2.0, x + w / 2.0)
        } else if end {
            (x - w, x)
        } else {
            (x, x + w)
        };
        out.push(Placed { text, left, right });
    }
    out
}

#[test]
fn every_line_of_every_picture_fits_its_width() {
    for width in WIDTHS {
        for (kind, svg) in pictures(width) {
            let lines = placed(&svg, width);
            assert!(lines.len() > 5, "{kind} at {width}: {lines:?}");
            for line in &lines {
                assert!(
                    line.left >= 0.0 && line.right <= f64::from(width),
                    "{kind} at {width} px: {:?} from {:.1} to {:.1} px does not fit",
                    line.text,
                    line.left,
                    line.right
                );
            }
        }
    }
}

/// The labels under a legend's bar do not run into each other (the memory graph's three
/// classes on a 133 px bar at 400 px did).
#[test]
fn legend_labels_keep_apart() {
    for width in WIDTHS {
        for (kind, svg) in pictures(width) {
            let options = roxmltree::ParsingOptions {
                allow_dtd: true,
                ..Default::default()
            };
            let doc = roxmltree::Document::parse_with_options(&svg, options).unwrap();
            let Some(legend) = doc
                .descendants()
                .find(|n| n.attribute("id") == Some("legend"))
            else {
                continue;
            };
            let mut labels: Vec<(f64, f64, &str)> = legend
                .children()
                .filter(|n| n.attribute("text-anchor") == Some("middle"))
                .map(|n| {
                    let text = n.text().unwrap();
                    let x: f64 = n.attribute("x").unwrap().parse().unwrap();
                    let half = text.chars().count() as f64 * 12.0 * LINE_EM / 2.0;
                    (x - half, x + half, text)
                })
                .collect();
            labels.sort_by(|a, b| a.0.total_cmp(&b.0));
            for pair in labels.windows(2) {
                assert!(
                    pair[0].1 <= pair[1].0,
                    "{kind} at {width} px: {pair:?} overlap"
                );
            }
        }
    }
}

/// The title, statistics and subtitle blocks: every line wrapped keeps its text (the lines
/// joined are the whole), a block cut ends with `..` and has the whole text as a tooltip.
#[test]
fn wrapped_lines_keep_their_text_and_cut_ones_carry_it_in_a_tooltip() {
    for width in WIDTHS {
        let svg = svg(|w| render_cpi(&profile(), &columns(true, false), &options(width), w));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let texts: Vec<roxmltree::Node> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .collect();
        let tooltip = |n: &roxmltree::Node| {
            n.children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|c| c.text())
                .map(str::to_string)
        };
        // The title: its lines up to the statistics line.
        let title_end = texts
            .iter()
            .position(|n| n.attribute("id") == Some("subtitle"))
            .unwrap();
        let title: Vec<&str> = texts[..title_end]
            .iter()
            .map(|n| n.text().unwrap())
            .collect();
        match tooltip(&texts[title_end - 1]) {
            Some(whole) => {
                assert_eq!(whole, TITLE, "{width}");
                assert!(title.last().unwrap().ends_with(".."), "{width}: {title:?}");
            }
            None => assert_eq!(title.join(" "), TITLE, "{width}"),
        }
        // The subtitle: the lines of class `sub` after the statistics line's, until the
        // buttons.
        let buttons = texts
            .iter()
            .position(|n| n.attribute("id") == Some("reset"))
            .unwrap();
        let block: Vec<&roxmltree::Node> = texts[title_end..buttons].iter().collect();
        let last = block.last().unwrap();
        let subtitle_lines: Vec<&str> = block
            .iter()
            .map(|n| n.text().unwrap())
            .skip_while(|l| !l.starts_with("recorded without"))
            .collect();
        assert!(!subtitle_lines.is_empty(), "{width}: {block:?}");
        match tooltip(last) {
            Some(whole) => {
                assert_eq!(whole, SUBTITLE, "{width}");
                assert!(subtitle_lines.last().unwrap().ends_with(".."));
                assert!(subtitle_lines.len() <= look::MAX_HEADING_LINES);
            }
            None => {
                // Words broken across lines (the long token) join without a space.
                let joined = subtitle_lines.join(" ");
                let squeeze = |s: &str| s.replace(' ', "");
                assert_eq!(squeeze(&joined), squeeze(SUBTITLE), "{width}");
            }
        }
        if width == 2000 {
            assert_eq!(title, [TITLE], "one line at 2,000 px");
        }
        if width == 400 {
            assert!(title.len() > 1, "wrapped at 400 px: {title:?}");
        }
    }
}
