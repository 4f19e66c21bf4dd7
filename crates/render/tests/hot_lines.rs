//! The hottest source lines in the tooltips of wide frames: exact shares from a profile whose
//! lines are known by construction.

mod common;

use std::sync::Arc;

use common::{opts, parse, render, Builder};
use cpiflame_profile::lines::{LinedStack, SourceLine, NO_LINE};
use cpiflame_profile::{Columns, Count, Profile, SourceLines, WallColumns, Width};
use cpiflame_render::Options;

fn line(file: &str, line: u32) -> SourceLine {
    SourceLine {
        file: file.to_string(),
        line,
    }
}

fn c(samples: u64, period: u64) -> Count {
    Count { samples, period }
}

/// `app;main;hot` and `app;main;cold`, cycles and stalls, split by lines: main calls hot at
/// /src/app/main.c:10 and cold at main.c:11; hot's samples are on hot.c:7 (70 cycles, 56
/// stalled), hot.c:8 (20, 2) and hot.c:9 (10, 0), plus 5 cycles without a line; cold's 3
/// cycles on cold.c:2 (under 1% of the graph: no lines shown).
fn profile() -> (Profile, SourceLines) {
    let mut b = Builder::new(&["cycles", "stalls"]);
    b.stack("app;main;hot", &[(105, 105), (58, 58)]);
    b.stack("app;main;cold", &[(3, 3), (0, 0)]);
    b.stack("app;main", &[(400, 400), (0, 0)]);
    let p = b.build();
    let id = |name: &str| p.frames.iter().position(|f| f.name == name).unwrap() as u32;
    let (app, main, hot, cold) = (id("app"), id("main"), id("hot"), id("cold"));
    let lines = SourceLines {
        lines: vec![
            line("/src/app/main.c", 10),
            line("/src/app/main.c", 11),
            line("/src/app/hot.c", 7),
            line("/src/app/hot.c", 8),
            line("/src/app/hot.c", 9),
            line("/src/app/cold.c", 2),
            line("/src/app/main.c", 3),
        ],
        stacks: vec![
            lined(&[app, main, hot], &[NO_LINE, 0, 2], [c(70, 70), c(56, 56)]),
            lined(&[app, main, hot], &[NO_LINE, 0, 3], [c(20, 20), c(2, 2)]),
            lined(&[app, main, hot], &[NO_LINE, 0, 4], [c(10, 10), c(0, 0)]),
            lined(
                &[app, main, hot],
                &[NO_LINE, 0, NO_LINE],
                [c(5, 5), c(0, 0)],
            ),
            lined(&[app, main, cold], &[NO_LINE, 1, 5], [c(3, 3), c(0, 0)]),
            lined(&[app, main], &[NO_LINE, 6], [c(400, 400), c(0, 0)]),
        ],
    };
    (p, lines)
}

fn lined(frames: &[u32], lines: &[u32], counts: [Count; 2]) -> LinedStack {
    LinedStack {
        frames: frames.to_vec(),
        lines: lines.to_vec(),
        counts: counts.to_vec(),
    }
}

fn hottest(title: &str) -> Vec<&str> {
    match title.split_once("\nhottest lines:\n") {
        Some((_, rest)) => rest.lines().map(str::trim).collect(),
        None => Vec::new(),
    }
}

#[test]
fn wide_frames_list_their_three_hottest_lines_with_exact_shares() {
    let (p, lines) = profile();
    let svg = render(
        &p,
        &Columns::new(0, Some(1)),
        &Options {
            lines: Some(Arc::new(lines)),
            ..opts()
        },
    );
    let parsed = parse(&svg, false);
    // hot: 105 cycles; 70/105 = 67%, 56/70 stalled = 80%; 20/105 = 19%, 2/20 = 10%; 10/105
    // = 10%, none stalled. The 5 cycles without a line are not a line.
    assert_eq!(
        hottest(&parsed.one("hot").title),
        [
            "app/hot.c:7  67%  stalled 80%",
            "app/hot.c:8  19%  stalled 10%",
            "app/hot.c:9  10%  stalled 0%"
        ]
    );
    // main: its own line 3 (400 of 508), then the calls: hot at line 10 (105), cold at 11
    // (3: under 1%, still main's line).
    assert_eq!(
        hottest(&parsed.one("main").title),
        [
            "app/main.c:3  79%  stalled 0%",
            "app/main.c:10  21%  stalled 55%",
            "app/main.c:11  1%  stalled 0%"
        ]
    );
    // cold is 3 of 508 cycles: too thin for lines.
    assert_eq!(hottest(&parsed.one("cold").title), Vec::<&str>::new());
    // The process frame has no line.
    assert_eq!(hottest(&parsed.one("app").title), Vec::<&str>::new());
}

#[test]
fn without_lines_the_tooltips_are_unchanged() {
    let (p, lines) = profile();
    let plain = render(&p, &Columns::new(0, Some(1)), &opts());
    assert!(!plain.contains("hottest lines"));
    // With lines, only the tooltips change.
    let with = render(
        &p,
        &Columns::new(0, Some(1)),
        &Options {
            lines: Some(Arc::new(lines)),
            ..opts()
        },
    );
    let strip = |svg: &str| {
        let mut out = String::new();
        for part in svg.split("\nhottest lines:") {
            let end = part.find("</title>").map_or(0, |i| i);
            if out.is_empty() {
                out.push_str(part);
            } else {
                out.push_str(&part[end..]);
            }
        }
        out
    };
    assert_eq!(strip(&with), plain);
}

#[test]
fn without_a_stall_column_lines_have_no_stall_share() {
    let (p, lines) = profile();
    let svg = render(
        &p,
        &Columns::new(0, None),
        &Options {
            lines: Some(Arc::new(lines)),
            ..opts()
        },
    );
    assert_eq!(
        hottest(&parse(&svg, false).one("hot").title),
        ["app/hot.c:7  67%", "app/hot.c:8  19%", "app/hot.c:9  10%"]
    );
}

#[test]
fn the_wall_time_graph_ranks_lines_by_wall_time() {
    // Columns: cycles, stalls, on-CPU, runnable, blocked ns. main sleeps at main.c:20 for
    // 600 ns and computes at main.c:21 for 400 ns.
    let mut b = Builder::new(&[
        "cycles",
        "stalls",
        cpiflame_profile::wall::ON_CPU,
        cpiflame_profile::wall::RUNNABLE,
        cpiflame_profile::wall::BLOCKED,
    ]);
    b.stack("app;main", &[(4, 400), (0, 0), (4, 400), (0, 0), (1, 600)]);
    let p = b.build();
    let id = |name: &str| p.frames.iter().position(|f| f.name == name).unwrap() as u32;
    let (app, main) = (id("app"), id("main"));
    let n = Count::default();
    let lines = SourceLines {
        lines: vec![line("main.c", 20), line("main.c", 21)],
        stacks: vec![
            LinedStack {
                frames: vec![app, main],
                lines: vec![NO_LINE, 0],
                counts: vec![n, n, n, n, c(1, 600)],
            },
            LinedStack {
                frames: vec![app, main],
                lines: vec![NO_LINE, 1],
                counts: vec![c(4, 400), n, c(4, 400), n, n],
            },
        ],
    };
    let wall = WallColumns::of(&p).expect("wall columns");
    let svg = render(
        &p,
        &Columns {
            width: Width::Wall(wall),
            ..Columns::new(0, Some(1))
        },
        &Options {
            lines: Some(Arc::new(lines)),
            ..opts()
        },
    );
    assert_eq!(
        hottest(&parse(&svg, false).one("main").title),
        ["main.c:20  60%", "main.c:21  40%  stalled 0%"]
    );
}

#[test]
fn a_line_under_half_a_percent_reads_less_than_one_percent_in_well_formed_xml() {
    // hot: 997 cycles on hot.c:7, 3 on hot.c:9 (0.3%).
    let mut b = Builder::new(&["cycles", "stalls"]);
    b.stack("app;main;hot", &[(1000, 1000), (0, 0)]);
    let p = b.build();
    let id = |name: &str| p.frames.iter().position(|f| f.name == name).unwrap() as u32;
    let frames = [id("app"), id("main"), id("hot")];
    let lines = SourceLines {
        lines: vec![line("hot.c", 7), line("hot.c", 9)],
        stacks: vec![
            lined(&frames, &[NO_LINE, NO_LINE, 0], [c(997, 997), c(0, 0)]),
            lined(&frames, &[NO_LINE, NO_LINE, 1], [c(3, 3), c(0, 0)]),
        ],
    };
    let svg = render(
        &p,
        &Columns::new(0, Some(1)),
        &Options {
            lines: Some(Arc::new(lines)),
            ..opts()
        },
    );
    assert!(svg.contains("hot.c:9  &lt;1%"), "escaped in the SVG");
    // `parse` reads the SVG as XML and the titles as text.
    assert_eq!(
        hottest(&parse(&svg, false).one("hot").title),
        ["hot.c:7  100%  stalled 0%", "hot.c:9  <1%  stalled 0%"]
    );
}
