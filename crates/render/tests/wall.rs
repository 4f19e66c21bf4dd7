//! The wall-time graph (`Options::wall`): widths are wall-clock nanoseconds, every frame is
//! cut into running / stalled / runnable / blocked segments, checked here with exact
//! arithmetic on a hand-built profile whose nanoseconds per state are known.

mod common;

use std::path::PathBuf;

use common::{node_check, opts, parse, render, Builder};
use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
use cpiflame_profile::{Column, Columns, Profile, WallColumns, Width};
use cpiflame_render::{
    render_wall, Options, RenderError, STALL_BLUE, STALL_RED, WALL_BLOCKED, WALL_BLOCKED_STRIPES,
    WALL_ON_CPU, WALL_RUNNABLE,
};

/// cycles, stalls, instructions, then the three wall columns (ns).
fn profile() -> Profile {
    Builder::new(&[
        "cycles",
        "stalls",
        "instructions",
        ON_CPU,
        RUNNABLE,
        BLOCKED,
    ])
    // 4 ms running a quarter stalled, 1 ms waiting for a CPU.
    .stack(
        "app;main;compute",
        &[
            (10, 1000),
            (5, 250),
            (4, 2000),
            (4, 4_000_000),
            (1, 1_000_000),
            (0, 0),
        ],
    )
    // 6 ms blocked on a mutex (kernel frames of a real futex wait).
    .stack(
        "app;main;wait_lock;pthread_mutex_lock@libc.so.6;!futex_wait_queue;!schedule",
        &[(0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (3, 6_000_000)],
    )
    // 3 ms asleep, 0.5 ms runnable after waking.
    .stack(
        "app;main;nap;clock_nanosleep@libc.so.6;!do_nanosleep;!schedule",
        &[(0, 0), (0, 0), (0, 0), (0, 0), (1, 500_000), (1, 3_000_000)],
    )
    // 2 ms reading a pipe.
    .stack(
        "app;main;read_pipe;read@libc.so.6;!pipe_read;!schedule",
        &[(0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (1, 2_000_000)],
    )
    // main's own 1 ms on the CPU, three quarters stalled.
    .stack(
        "app;main",
        &[(2, 400), (1, 300), (1, 100), (1, 1_000_000), (0, 0), (0, 0)],
    )
    // Another thread: 2.5 ms running, never stalled, 2.5 ms waiting for a CPU.
    .stack(
        "app;worker;spin",
        &[
            (5, 500),
            (0, 0),
            (5, 1000),
            (5, 2_500_000),
            (2, 2_500_000),
            (0, 0),
        ],
    )
    .build()
}

/// The wall-time graph of [`profile`]'s columns: cycles 0, `stalls`, wall time 3, 4, 5.
fn wall(stalls: Option<usize>) -> Columns {
    Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(3),
            runnable: Column(4),
            blocked: Column(5),
        }),
        ..Columns::new(0, stalls)
    }
}

/// A frame's segments read back from its pattern: (x, width, fill) in the pattern's units, without
/// the blocked segment's stripes; and the stripes' count.
struct Painted {
    /// `url(#ID)` of the frame's rectangle, or its flat colour.
    fill: String,
    viewbox: String,
    segments: Vec<(u64, u64, String)>,
    stripes: usize,
}

fn painted(svg: &str) -> Vec<(String, Painted)> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed");
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("f"))
        .map(|g| {
            let name = g
                .children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|t| t.text())
                .and_then(|t| t.lines().next())
                .unwrap_or("")
                .to_string();
            let rect = g.children().find(|c| c.has_tag_name("rect")).expect("rect");
            let fill = rect.attribute("fill").expect("fill").to_string();
            let pattern = g.children().find(|c| c.has_tag_name("pattern"));
            let mut p = Painted {
                fill: fill.clone(),
                viewbox: String::new(),
                segments: Vec::new(),
                stripes: 0,
            };
            if let Some(pattern) = pattern {
                assert_eq!(fill, format!("url(#{})", pattern.attribute("id").unwrap()));
                // One tile the size of the rectangle, so the pattern follows it on zoom.
                assert_eq!(pattern.attribute("width"), Some("1"));
                assert_eq!(pattern.attribute("height"), Some("1"));
                assert_eq!(
                    pattern.attribute("patternUnits"),
                    None,
                    "default: bounding box"
                );
                assert_eq!(pattern.attribute("preserveAspectRatio"), Some("none"));
                p.viewbox = pattern.attribute("viewBox").unwrap().to_string();
                for r in pattern.children().filter(|c| c.has_tag_name("rect")) {
                    let num = |a: &str| r.attribute(a).unwrap_or("0").parse::<u64>().unwrap();
                    if r.attribute("y").is_some() {
                        assert_eq!(
                            r.attribute("fill"),
                            Some(&*WALL_BLOCKED_STRIPES.to_string())
                        );
                        p.stripes += 1;
                    } else {
                        p.segments.push((
                            num("x"),
                            num("width"),
                            r.attribute("fill").unwrap().to_string(),
                        ));
                    }
                }
            }
            (name, p)
        })
        .collect()
}

fn one<'a>(all: &'a [(String, Painted)], name: &str) -> &'a Painted {
    let v: Vec<&Painted> = all
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, p)| p)
        .collect();
    assert_eq!(v.len(), 1, "one frame named {name}");
    v[0]
}

/// Segments given in nanoseconds of a frame `n` ns wide, in the pattern's units: a million
/// across, each edge rounded to the nearest.
fn units(n: u64, ns: Vec<(u64, u64, String)>) -> Vec<(u64, u64, String)> {
    let edge = |x: u64| ((x as f64) * 1e6 / n as f64).round() as u64;
    ns.into_iter()
        .map(|(x, len, fill)| (edge(x), edge(x + len) - edge(x), fill))
        .collect()
}

fn hex(c: cpiflame_render::Rgb) -> String {
    c.to_string()
}

#[test]
fn frames_are_as_wide_as_their_wall_time_and_cut_into_their_states() {
    let svg = render(&profile(), &wall(Some(1)), &opts());
    let drawn = parse(&svg, false);
    // Widths are wall nanoseconds: 22.5 ms in all.
    let all = drawn.one("all");
    assert_eq!((all.s, all.n), (0, 22_500_000));
    let main = drawn.one("main");
    // main: 5 ms on the CPU, 1.5 ms runnable, 11 ms blocked.
    assert_eq!((main.s, main.n), (0, 17_500_000));
    assert_eq!(drawn.one("worker").n, 5_000_000);
    assert_eq!(drawn.one("wait_lock").n, 6_000_000);
    // Pixels: 1180 px for 22.5 ms.
    assert!(
        (main.width - 1180.0 * 17.5 / 22.5).abs() < 0.006,
        "{}",
        main.width
    );

    let p = painted(&svg);
    let (red, blue, amber, grey) = (
        hex(STALL_RED),
        hex(STALL_BLUE),
        hex(WALL_RUNNABLE),
        hex(WALL_BLOCKED),
    );
    // main's stall share is inclusive: (250 + 300) / (1000 + 400) of its 5 ms on the CPU,
    // 1,964,285.71 ns, rounded to 1,964,286 stalled.
    let m = one(&p, "main");
    assert_eq!(m.viewbox, "0 0 1000000 15");
    // Edges at 173,469.37, 285,714.29 and 371,428.57 millionths of the frame.
    assert_eq!(
        m.segments,
        vec![
            (0, 173_469, red.clone()),
            (173_469, 112_245, blue.clone()),
            (285_714, 85_715, amber.clone()),
            (371_429, 628_571, grey.clone()),
        ]
    );
    assert_eq!(
        m.segments,
        units(
            17_500_000,
            vec![
                (0, 3_035_714, red.clone()),
                (3_035_714, 1_964_286, blue.clone()),
                (5_000_000, 1_500_000, amber.clone()),
                (6_500_000, 11_000_000, grey.clone()),
            ]
        )
    );
    // Stripes 2 px high every 4 px from y = 2 over the 15 px frame: at 2, 6, 10.
    assert_eq!(m.stripes, 3);
    // compute: a quarter of 4 ms stalled, then 1 ms runnable; nothing blocked, no stripes.
    let c = one(&p, "compute");
    assert_eq!(
        c.segments,
        units(
            5_000_000,
            vec![
                (0, 3_000_000, red.clone()),
                (3_000_000, 1_000_000, blue.clone()),
                (4_000_000, 1_000_000, amber.clone()),
            ]
        )
    );
    assert_eq!(c.stripes, 0);
    // spin never stalled: no blue segment at all.
    assert_eq!(
        one(&p, "spin").segments,
        vec![(0, 500_000, red.clone()), (500_000, 500_000, amber.clone())]
    );
    // The root: 7.5 ms on the CPU at (250 + 300 + 0) / 1900 stalled = 2,171,052.63 ns.
    assert_eq!(
        one(&p, "all").segments,
        units(
            22_500_000,
            vec![
                (0, 5_328_947, red),
                (5_328_947, 2_171_053, blue),
                (7_500_000, 4_000_000, amber),
                (11_500_000, 11_000_000, grey.clone()),
            ]
        )
    );
    // Blocked only: still a pattern, for the stripes; nap is asleep then runnable.
    let lock = one(&p, "wait_lock");
    assert_eq!(lock.segments, vec![(0, 1_000_000, grey)]);
    assert_eq!(lock.stripes, 3);
    assert_eq!(
        one(&p, "nap")
            .segments
            .iter()
            .map(|s| s.1)
            .collect::<Vec<_>>(),
        // 0.5 ms of 3.5 ms runnable: 142,857.14 millionths.
        vec![142_857, 857_143]
    );
    // Every segment list covers its frame exactly (frames and patterns come in one order).
    assert_eq!(p.len(), drawn.frames.len());
    for ((name, f), frame) in p.iter().zip(&drawn.frames) {
        if f.segments.is_empty() {
            continue;
        }
        assert!(frame.n > 0);
        assert_eq!(f.viewbox, "0 0 1000000 15", "{name}");
        let mut x = 0;
        for s in &f.segments {
            assert_eq!(s.0, x, "{name}: segments touch");
            x += s.1;
        }
        assert_eq!(x, 1_000_000, "{name}: segments fill the frame");
    }
}

#[test]
fn without_a_stall_column_the_on_cpu_part_is_one_segment() {
    // Instructions but no stalls: the on-CPU segment is on the CPI scale. compute: 1000
    // cycles / 2000 instructions = CPI 0.5, a quarter of the way from red to blue.
    let c = Columns {
        instructions: Some(Column(2)),
        ..wall(None)
    };
    let svg = render(&profile(), &c, &opts());
    let p = painted(&svg);
    let cpi_half = cpiflame_render::cpi_color(Some(0.5)).to_string();
    assert_eq!(
        one(&p, "compute").segments,
        vec![
            (0, 800_000, cpi_half),
            (800_000, 200_000, hex(WALL_RUNNABLE))
        ]
    );
    let drawn = parse(&svg, false);
    assert!(drawn.texts.iter().any(|t| t == "on-CPU, CPI (log scale):"));
    assert!(
        drawn.subtitle.ends_with(" · CPI 0.61"),
        "{}",
        drawn.subtitle
    );
    // Neither: teal, which claims nothing about stalls; a frame wholly on the CPU is flat.
    let svg = render(&profile(), &wall(None), &opts());
    let p = painted(&svg);
    assert_eq!(one(&p, "compute").segments[0].2, hex(WALL_ON_CPU));
    let drawn = parse(&svg, false);
    assert!(drawn.texts.iter().any(|t| t == "on-CPU"));
    let flat = Builder::new(&["cycles", ON_CPU, RUNNABLE, BLOCKED])
        .stack("app;busy", &[(1, 10), (1, 7), (0, 0), (0, 0)])
        .build();
    let c = Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(1),
            runnable: Column(2),
            blocked: Column(3),
        }),
        ..Columns::new(0, None)
    };
    let p = painted(&render(&flat, &c, &opts()));
    assert_eq!(one(&p, "busy").fill, hex(WALL_ON_CPU));
    assert!(one(&p, "busy").segments.is_empty());
}

#[test]
fn tooltips_give_the_four_times_and_where_the_frame_was_blocked() {
    let svg = render(&profile(), &wall(Some(1)), &opts());
    let drawn = parse(&svg, false);
    let main = &drawn.one("main").title;
    assert_eq!(
        main,
        "main\n\
         wall: 17.5 ms (77.78% of all)\n\
         running: 3.04 ms (17.3%)\n\
         stalled: 1.96 ms (11.2%)\n\
         runnable: 1.50 ms (8.6%)\n\
         blocked: 11.0 ms (62.9%)\n\
         blocked in lock/futex (futex_wait_queue): 6.00 ms (55% of blocked)\n\
         blocked in sleep (do_nanosleep): 3.00 ms (27% of blocked)\n\
         blocked in pipe/socket/poll (pipe_read): 2.00 ms (18% of blocked)\n\
         cycles: 12 samples, 1.40 k events · stalled: 39.3% of cycles"
    );
    let spin = &drawn.one("spin").title;
    assert!(spin.contains("\nrunning: 2.50 ms (50.0%)\nstalled: 0 ms (0.0%)\nrunnable: 2.50 ms (50.0%)\nblocked: 0 ms (0.0%)\ncycles:"), "{spin}");
    // The statistics line: the totals.
    assert_eq!(
        drawn.subtitle,
        "wall: 22.5 ms · on-CPU: 7.50 ms (33.3%) · runnable: 4.00 ms (17.8%) · blocked: 11.0 ms (48.9%) · stalled: 28.9% of cycles"
    );
    // The legend names the four states.
    for label in ["wall time:", "running", "stalled", "runnable", "blocked"] {
        assert!(drawn.texts.iter().any(|t| t == label), "legend {label}");
    }
}

#[test]
fn more_places_than_shown_are_summed() {
    let mut b = Builder::new(&["cycles", ON_CPU, RUNNABLE, BLOCKED]);
    b.stack("app;main", &[(1, 1), (1, 1_000_000), (0, 0), (0, 0)]);
    for (i, leaf) in [
        "!do_nanosleep",
        "!pipe_read",
        "!futex_wait_queue",
        "!ep_poll",
        "!do_wait",
    ]
    .iter()
    .enumerate()
    {
        let ns = 1_000_000 * (i as u64 + 1);
        b.stack(
            &format!("app;main;f{i};{leaf}"),
            &[(0, 0), (0, 0), (0, 0), (1, ns)],
        );
    }
    let c = Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(1),
            runnable: Column(2),
            blocked: Column(3),
        }),
        ..Columns::new(0, None)
    };
    let drawn = parse(&render(&b.build(), &c, &opts()), false);
    let title = &drawn.one("main").title;
    assert!(
        title.contains(
            "\nblocked in other (do_wait): 5.00 ms (33% of blocked)\n\
             blocked in pipe/socket/poll (ep_poll): 4.00 ms (27% of blocked)\n\
             blocked in lock/futex (futex_wait_queue): 3.00 ms (20% of blocked)\n\
             blocked in 2 other places: 3.00 ms\n"
        ),
        "{title}"
    );
}

#[test]
fn without_wall_the_on_cpu_graph_is_drawn_byte_for_byte() {
    // The same profile without its wall columns, and with them but `wall: None`.
    let p = profile();
    let mut bare = Builder::new(&["cycles", "stalls", "instructions"]);
    bare.stack("app;main;compute", &[(10, 1000), (5, 250), (4, 2000)])
        .stack("app;main", &[(2, 400), (1, 300), (1, 100)])
        .stack("app;worker;spin", &[(5, 500), (0, 0), (5, 1000)]);
    let bare = bare.build();
    for instructions in [None, Some(Column(2))] {
        let c = Columns {
            instructions,
            ..Columns::new(0, Some(1))
        };
        assert_eq!(render(&p, &c, &opts()), render(&bare, &c, &opts()));
    }
}

#[test]
fn output_is_deterministic_and_the_same_on_one_thread() {
    let p = profile();
    let a = render(&p, &wall(Some(1)), &opts());
    assert_eq!(a, render(&p, &wall(Some(1)), &opts()));
    let one_thread = Options {
        single_threaded: true,
        ..opts()
    };
    assert_eq!(a, render(&p, &wall(Some(1)), &one_thread));
}

#[test]
fn the_script_is_the_on_cpu_graphs_and_finds_each_frames_rectangle_and_label() {
    let p = profile();
    let svg = render(&p, &wall(Some(1)), &opts());
    let wall = parse(&svg, false);
    let on_cpu = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert_eq!(wall.script, on_cpu.script);
    node_check(&wall.script, "wall");
    // The script moves and recolours `getElementsByTagName("rect")[0]` and reads `text`[0]:
    // in document order that must be the frame's own rectangle and label, before the
    // pattern's rectangles.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    for g in doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("f"))
    {
        let first_rect = g.descendants().find(|n| n.has_tag_name("rect")).unwrap();
        assert_eq!(first_rect.parent(), Some(g));
        let first_text = g.descendants().find(|n| n.has_tag_name("text")).unwrap();
        assert_eq!(first_text.parent(), Some(g));
        assert!(first_rect.attribute("fill").is_some());
    }
    // Hovering outlines the rectangle, not the segments.
    assert!(
        svg.contains("#frames .f pattern rect, #frames .f:hover pattern rect { stroke: none; }")
    );
}

#[test]
fn bad_wall_columns_and_empty_wall_time_are_errors() {
    let p = profile();
    let c = Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(3),
            runnable: Column(4),
            blocked: Column(9),
        }),
        ..Columns::new(0, Some(1))
    };
    let mut out = Vec::new();
    assert!(matches!(
        render_wall(&p, &c, c.wall().unwrap(), &opts(), &mut out),
        Err(RenderError::NoSuchEvent { index: 9, count: 6 })
    ));
    // Wall columns with nothing in them: nothing to draw, said by the on-CPU column's name.
    let empty = Builder::new(&["cycles", ON_CPU, RUNNABLE, BLOCKED])
        .stack("app;main", &[(1, 10), (0, 0), (0, 0), (0, 0)])
        .build();
    let c = Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(1),
            runnable: Column(2),
            blocked: Column(3),
        }),
        ..Columns::new(0, None)
    };
    match render_wall(&empty, &c, c.wall().unwrap(), &opts(), &mut out) {
        Err(RenderError::NoSamples { event }) => assert_eq!(event, ON_CPU),
        other => panic!("{other:?}"),
    }
    assert!(out.is_empty(), "nothing is written when validation fails");
    // Blocked time only, with no cycles sample at all, is drawn.
    let blocked = Builder::new(&["cycles", ON_CPU, RUNNABLE, BLOCKED])
        .stack("app;main;!do_nanosleep", &[(0, 0), (0, 0), (0, 0), (1, 10)])
        .build();
    assert_eq!(
        parse(&render(&blocked, &c, &opts()), false).one("all").n,
        10
    );
}

#[test]
fn wall_graph_matches_golden_file() {
    let o = Options {
        title: "Wall-time golden".into(),
        subtitle: Some("hand-built profile with off-CPU time".into()),
        width: 900,
        ..opts()
    };
    let svg = render(&profile(), &wall(Some(1)), &o);
    parse(&svg, false);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/wall.svg");
    cpiflame_testkit::assert_golden(path, &svg);
}

/// The legend's rectangles: (x, y, width, fill).
fn legend_rects(svg: &str) -> Vec<(f64, f64, f64, String)> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let legend = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("legend"))
        .expect("legend");
    let num = |n: roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
    legend
        .children()
        .filter(|n| n.has_tag_name("rect"))
        .map(|r| {
            (
                num(r, "x"),
                num(r, "y"),
                num(r, "width"),
                r.attribute("fill").unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_legend_keeps_to_one_row_when_it_fits_and_wraps_when_not() {
    let runnable = hex(WALL_RUNNABLE);
    for (width, wraps) in [(1200, false), (400, true)] {
        let o = Options { width, ..opts() };
        let c = Columns {
            instructions: Some(Column(2)),
            ..wall(None)
        };
        let svg = render(&profile(), &c, &o);
        let rects = legend_rects(&svg);
        // The CPI bar first, then the runnable and blocked swatches (the blocked one striped).
        assert_eq!(rects[0].3, "url(#cpi-scale)");
        assert_eq!(rects[1].3, runnable);
        assert_eq!(rects[2].3, hex(WALL_BLOCKED));
        assert_eq!(rects.len(), 5, "two stripes over the blocked swatch");
        let bar_y = rects[0].1;
        let swatch_y = rects[1].1;
        if wraps {
            // Under the bar's labels, and the frames moved down as far.
            assert_eq!(swatch_y, bar_y + 30.0);
        } else {
            assert_eq!(swatch_y, bar_y);
        }
        for r in &rects {
            assert!(
                r.0 >= 10.0 && r.0 + r.2 <= f64::from(width) - 10.0,
                "{r:?} in {width}"
            );
        }
        let drawn = parse(&svg, false);
        let top = drawn.frames.iter().map(|f| f.y).fold(f64::MAX, f64::min);
        assert!(top >= swatch_y + 20.0, "frames start under the legend");
    }
}

/// A JavaScript string literal.
fn js(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Runs the SVG's own script under node over a small DOM built from the SVG's elements, then
/// `actions` (JavaScript, with `click(name)`, `search(term)` and `dump()` defined), and
/// returns what it printed; `None` without node (after `cpiflame_testkit::unavailable`).
fn run_script(svg: &str, actions: &str) -> Option<String> {
    let has_node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_node {
        cpiflame_testkit::unavailable("running the embedded script needs `node`, not on PATH");
        return None;
    }
    let doc = roxmltree::Document::parse(svg).unwrap();
    // Every element, in document order: [tag, parent index, attributes, own text].
    let elements: Vec<roxmltree::Node> = doc.descendants().filter(|n| n.is_element()).collect();
    let index_of = |n: roxmltree::Node| elements.iter().position(|e| *e == n);
    let mut table = String::from("[");
    for e in &elements {
        let parent = e.parent().and_then(index_of).map_or(-1, |i| i as i64);
        let attrs: Vec<String> = e
            .attributes()
            .map(|a| format!("[{}, {}]", js(a.name()), js(a.value())))
            .collect();
        let text = if e.has_tag_name("script") {
            ""
        } else {
            e.text().unwrap_or("")
        };
        table.push_str(&format!(
            "[{}, {parent}, [{}], {}],\n",
            js(e.tag_name().name()),
            attrs.join(", "),
            js(text)
        ));
    }
    table.push(']');
    let script = doc
        .descendants()
        .find(|n| n.has_tag_name("script"))
        .and_then(|n| n.text())
        .unwrap();
    let harness = format!(
        r##"
"use strict";
var table = {table};
function El(tag, parent) {{
  this.tagName = tag; this.parentNode = parent; this.children = []; this.attrs = {{}};
  this.text = ""; this.listeners = {{}};
  var self = this;
  this.classList = {{
    add: function (c) {{ var l = self.classes(); if (l.indexOf(c) < 0) l.push(c); self.attrs["class"] = l.join(" "); }},
    remove: function (c) {{ self.attrs["class"] = self.classes().filter(function (x) {{ return x !== c; }}).join(" "); }}
  }};
}}
El.prototype.classes = function () {{ return (this.attrs["class"] || "").split(" ").filter(Boolean); }};
El.prototype.getAttribute = function (a) {{ return a in this.attrs ? this.attrs[a] : null; }};
El.prototype.setAttribute = function (a, v) {{ this.attrs[a] = String(v); }};
El.prototype.removeAttribute = function (a) {{ delete this.attrs[a]; }};
El.prototype.hasAttribute = function (a) {{ return a in this.attrs; }};
// What a browser measures of a line of 12 px monospace text (0.6 em a character).
El.prototype.getComputedTextLength = function () {{ return Array.from(this.textContent).length * 7.2; }};
El.prototype.addEventListener = function (t, f) {{ (this.listeners[t] = this.listeners[t] || []).push(f); }};
El.prototype.getElementsByTagName = function (tag) {{
  var out = [];
  (function walk(e) {{ e.children.forEach(function (c) {{ if (c.tagName === tag) out.push(c); walk(c); }}); }})(this);
  return out;
}};
Object.defineProperty(El.prototype, "textContent", {{
  get: function () {{ return this.text + this.children.map(function (c) {{ return c.textContent; }}).join(""); }},
  set: function (v) {{ this.text = String(v); this.children = []; }}
}});
var all = [];
table.forEach(function (row) {{
  var parent = row[1] >= 0 ? all[row[1]] : null;
  var e = new El(row[0], parent);
  row[2].forEach(function (a) {{ e.attrs[a[0]] = a[1]; }});
  e.text = row[3];
  if (parent) parent.children.push(e);
  all.push(e);
}});
var document = new El("#document", null);
document.getElementById = function (id) {{ return all.filter(function (e) {{ return e.attrs.id === id; }})[0] || null; }};
function fire(target, type, e) {{
  e = e || {{}}; e.target = target; e.preventDefault = function () {{}};
  for (var n = target; n; n = n.parentNode) (n.listeners[type] || []).forEach(function (f) {{ f(e); }});
  (document.listeners[type] || []).forEach(function (f) {{ f(e); }});
}}
var answer = null;
var prompt = function () {{ return answer; }};
var alert = function (m) {{ throw new Error("alert: " + m); }};
{script}
function frame(name) {{
  return all.filter(function (g) {{
    return g.attrs["class"] !== undefined && g.hasAttribute("data-s") &&
      g.getElementsByTagName("title")[0].textContent.split("\n")[0] === name;
  }})[0];
}}
function click(name) {{ fire(frame(name).getElementsByTagName("rect")[0], "click"); }}
function search(term) {{ answer = term; fire(document.getElementById("search"), "click"); }}
function dump() {{
  all.filter(function (g) {{ return g.tagName === "g" && g.hasAttribute("data-s"); }}).forEach(function (g) {{
    var r = g.getElementsByTagName("rect")[0];
    console.log([g.getElementsByTagName("title")[0].textContent.split("\n")[0], r.attrs.x, r.attrs.width,
      r.attrs.fill, g.attrs.display || "", g.classes().join(" ")].join("\t"));
  }});
  console.log("matched\t" + document.getElementById("matched").textContent);
}}
{actions}
"##
    );
    let path = std::env::temp_dir().join(format!(
        "cpiflame-render-wall-run-{}.js",
        std::process::id()
    ));
    std::fs::write(&path, harness).expect("write harness");
    let out = std::process::Command::new("node")
        .arg(&path)
        .output()
        .expect("run node");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "node failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// `dump()` lines: name → (x, width, fill, display, class).
fn dumped(text: &str) -> Vec<(String, [String; 5])> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 6).then(|| {
                (
                    f[0].to_string(),
                    [f[1], f[2], f[3], f[4], f[5]].map(str::to_string),
                )
            })
        })
        .collect()
}

#[test]
fn zoom_and_search_move_and_recolour_the_patterned_frames() {
    let svg = render(&profile(), &wall(Some(1)), &opts());
    let Some(out) = run_script(
        &svg,
        r#"click("main"); dump(); console.log("--"); search("nap|sched"); dump(); console.log("--"); search(""); fire(document.getElementById("search"), "click"); fire(document.getElementById("reset"), "click"); dump();"#,
    ) else {
        return;
    };
    let parts: Vec<&str> = out.split("--\n").collect();
    assert_eq!(parts.len(), 3, "{out}");
    let before = parse(&svg, false);
    let fills: Vec<(String, String)> = painted(&svg)
        .into_iter()
        .map(|(name, p)| (name, p.fill))
        .collect();

    // Zoomed into main (17.5 of 22.5 ms): it spans the 1180 px, its children are scaled by
    // 22.5 / 17.5, its ancestors stretched and faded, worker hidden; fills untouched, so
    // every pattern (in its rectangle's own units) follows.
    let zoomed = dumped(parts[0]);
    let get = |v: &[(String, [String; 5])], name: &str| -> [String; 5] {
        v.iter().find(|(n, _)| n == name).unwrap().1.clone()
    };
    assert_eq!(
        get(&zoomed, "main")[..2],
        ["10.00".to_string(), "1180.00".to_string()]
    );
    let nap = before.one("nap");
    let k = 1180.0 / 17_500_000.0;
    assert_eq!(
        get(&zoomed, "nap")[0],
        format!("{:.2}", 10.0 + nap.s as f64 * k)
    );
    assert_eq!(get(&zoomed, "nap")[1], format!("{:.2}", nap.n as f64 * k));
    assert_eq!(get(&zoomed, "all")[4], "f anc");
    assert_eq!(get(&zoomed, "worker")[3], "none");
    assert_eq!(zoomed.len(), fills.len());
    for ((name, fill), (_, v)) in fills.iter().zip(&zoomed) {
        assert_eq!(&v[2], fill, "{name}");
    }
    assert!(
        fills
            .iter()
            .filter(|(_, f)| f.starts_with("url(#w"))
            .count()
            > 10
    );

    // Search: matches painted whole in the search colour; the share is of wall time, nested
    // matches once: nap (3.5 ms, its schedule inside it) and the other two schedule frames
    // (2 and 6 ms), 11.5 of 22.5 ms.
    let searched = dumped(parts[1]);
    for (name, v) in &searched {
        let hit = name == "nap" || name == "schedule";
        assert_eq!(v[2] == "#e600e6", hit, "{name}");
    }
    assert!(
        parts[1].contains("matched\tMatched /nap|sched/: 4 frame(s), 51.11% of the width"),
        "{}",
        parts[1]
    );

    // Cleared and reset: every frame back where and as it was drawn.
    let reset = dumped(parts[2]);
    for (f, (name, v)) in before.frames.iter().zip(&reset) {
        assert_eq!(&f.name, name);
        assert_eq!(v[0], format!("{:.2}", f.x), "{name}");
        assert_eq!(v[1], format!("{:.2}", f.width), "{name}");
        assert_eq!(v[2], f.fill, "{name}");
        assert_eq!(v[3], "", "{name}");
    }
}

/// Issue 20's washing in the wall graph: a frame whose stall share's interval is too wide for
/// the scale has its running and stalled segments washed out (the interval is of that split),
/// its blocked segment (traced time, no sampling) drawn as ever; a well-sampled frame and the
/// graph without intervals are unchanged; the legend and the tooltip say so.
#[test]
fn uncertain_frames_have_their_on_cpu_segments_washed_out() {
    use cpiflame_render::uncertain_color;
    // hot: 2,000 cycles samples, 800 stalled (confident); thin: 20, 6 stalled (its interval
    // spans more than a quarter of the scale, as crates/render/tests/uncertainty.rs checks).
    // Both 4 ms on the CPU and 2 ms blocked.
    let p = Builder::new(&[
        "cycles",
        "stalls",
        "instructions",
        ON_CPU,
        RUNNABLE,
        BLOCKED,
    ])
    .stack(
        "app;main;hot",
        &[
            (2000, 2_000_000),
            (800, 800_000),
            (0, 0),
            (4, 4_000_000),
            (0, 0),
            (1, 2_000_000),
        ],
    )
    .stack(
        "app;main;thin",
        &[
            (20, 20_000),
            (6, 6_000),
            (0, 0),
            (4, 4_000_000),
            (0, 0),
            (1, 2_000_000),
        ],
    )
    .build();
    let washed = |c| hex(uncertain_color(c));
    let with = Options {
        confidence: Some(0.95),
        ..opts()
    };
    let svg = render(&p, &wall(Some(1)), &with);
    let all = painted(&svg);
    let fills = |name| -> Vec<String> {
        one(&all, name)
            .segments
            .iter()
            .map(|s| s.2.clone())
            .collect()
    };
    assert_eq!(
        fills("hot"),
        [hex(STALL_RED), hex(STALL_BLUE), hex(WALL_BLOCKED)]
    );
    assert_eq!(
        fills("thin"),
        [washed(STALL_RED), washed(STALL_BLUE), hex(WALL_BLOCKED)]
    );
    let titles = parse(&svg, false);
    assert!(titles
        .one("thin")
        .title
        .contains("on-CPU part drawn washed out"));
    assert!(!titles.one("hot").title.contains("washed out"));
    assert!(svg.contains("too few samples to place on the scale"));

    // Without intervals nothing is washed out and the legend has no such entry.
    let svg = render(&p, &wall(Some(1)), &opts());
    let all = painted(&svg);
    assert_eq!(
        one(&all, "thin")
            .segments
            .iter()
            .map(|s| s.2.clone())
            .collect::<Vec<_>>(),
        [hex(STALL_RED), hex(STALL_BLUE), hex(WALL_BLOCKED)]
    );
    assert!(!svg.contains("too few samples"));
}

/// Issue 37: a thread's on-CPU time without a sample (`[on-CPU, not sampled]` directly under
/// its root) and its off-CPU time without a stack are named in the legend, and their
/// tooltips say what they are; the thread is as wide as its three columns.
#[test]
fn frames_of_time_without_a_stack_or_sample_are_named_in_legend_and_tooltips() {
    let p = Builder::new(&[
        "cycles",
        "stalls",
        "instructions",
        ON_CPU,
        RUNNABLE,
        BLOCKED,
    ])
    .stack(
        "app;main",
        &[(2, 400), (1, 300), (1, 100), (1, 1_000_000), (0, 0), (0, 0)],
    )
    .stack(
        "quiet;[on-CPU, not sampled]",
        &[(0, 0), (0, 0), (0, 0), (2, 3_000_000), (0, 0), (0, 0)],
    )
    .stack(
        "quiet;[blocked]",
        &[(0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (1, 2_000_000)],
    )
    .build();
    let svg = render(&p, &wall(Some(1)), &opts());
    assert!(
        svg.contains("[on-CPU, not sampled]: on a CPU, no sample of where"),
        "legend"
    );
    assert!(
        svg.contains("[blocked]: blocked, no switch-out stack"),
        "legend"
    );
    assert!(
        svg.contains("with no on-CPU sample: not where it ran"),
        "the frame's tooltip"
    );
    assert!(
        svg.contains("no stack: not where it waited"),
        "the frame's tooltip"
    );
    // quiet: 3 ms on-CPU + 2 ms blocked = 5 ms of the 6 ms.
    assert!(svg.contains("5.00 ms"), "quiet's wall time");
}
