//! Golden SVG tests: a small hand-built profile rendered with fixed options must match
//! `tests/data/*.svg` byte for byte. Run with `CPIFLAME_BLESS=1` to rewrite the expected files
//! after an intended change, and review the diff.

mod common;

use std::path::PathBuf;

use common::{gone_section, parse, render, render_diff_svg, Builder};
use cpiflame_profile::{Column, Columns, Profile};
use cpiflame_render::{DiffOptions, Options};

fn profile() -> Profile {
    Builder::new(&["cpu_clk_unhalted.thread_p", "resource_stalls.any"])
        // 30 cycles, none stalled.
        .stack(
            "bench<1>;main@bench;std::vector<int, std::allocator<int> >::push_back(int const&)@libstdc++.so.6",
            &[(30, 60_000), (0, 0)],
        )
        // 10 cycles, all stalled.
        .stack(
            "bench<1>;main@bench;load \"a&b\" 'c'@lib<x>.so",
            &[(10, 20_000), (5, 20_000)],
        )
        // Half stalled, with an inlined and a kernel frame.
        .stack(
            "bench<1>;main@bench;~compute@bench;!copy_user_generic@[kernel.kallsyms]",
            &[(20, 40_000), (8, 20_000)],
        )
        // main's own samples.
        .stack("bench<1>;main@bench", &[(4, 8_000), (1, 2_000)])
        // Stalls where no cycles sample landed: no width, counted in totals.
        .stack("bench<1>;main@bench;idle@bench", &[(0, 0), (2, 4_000)])
        // A second process.
        .stack("zz_other;spin@libc.so.6", &[(6, 12_000), (1, 1_000)])
        .build()
}

/// `tests/data/NAME` against `actual`, blessed with `CPIFLAME_BLESS=1`
/// ([`cpiflame_testkit::assert_golden`]).
#[track_caller]
fn check(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    cpiflame_testkit::assert_golden(path, actual);
}

fn golden_opts() -> Options {
    Options {
        title: "Golden <CPI> & \"friends\"".into(),
        subtitle: Some("hand-built profile for the golden test".into()),
        width: 800,
        min_width: 0.0,
        inverted: false,
        single_threaded: false,
        stall_caption: None,
        lines: None,
        confidence: None,
        strip: None,
        counts: false,
    }
}

#[test]
fn cpi_graph_matches_golden_file() {
    let svg = render(&profile(), &Columns::new(0, Some(1)), &golden_opts());
    parse(&svg, false);
    check("cpi.svg", &svg);
}

#[test]
fn inverted_cpi_graph_matches_golden_file() {
    let opts = Options {
        inverted: true,
        ..golden_opts()
    };
    let svg = render(&profile(), &Columns::new(0, Some(1)), &opts);
    parse(&svg, true);
    check("cpi-inverted.svg", &svg);
}

#[test]
fn single_event_graph_matches_golden_file() {
    let opts = Options {
        subtitle: None,
        ..golden_opts()
    };
    let svg = render(&profile(), &Columns::new(0, None), &opts);
    parse(&svg, false);
    check("single.svg", &svg);
}

/// The AFTER run of the differential golden test, against [`profile`] as BEFORE: `push_back`
/// grew, the `load` path shrank, `compute` is gone, `parse<&>` is new, and the binary's module
/// name changed (`bench` -> `bench-2`).
fn after_profile() -> Profile {
    Builder::new(&["cpu_clk_unhalted.thread_p", "resource_stalls.any"])
        .stack(
            "bench<1>;main@bench-2;std::vector<int, std::allocator<int> >::push_back(int const&)@libstdc++.so.6",
            &[(50, 100_000), (5, 10_000)],
        )
        .stack(
            "bench<1>;main@bench-2;load \"a&b\" 'c'@lib<x>.so",
            &[(4, 8_000), (4, 8_000)],
        )
        .stack("bench<1>;main@bench-2;parse<&>@bench-2", &[(12, 24_000), (3, 6_000)])
        .stack("bench<1>;main@bench-2", &[(4, 8_000), (0, 0)])
        .stack("zz_other;spin@libc.so.6", &[(10, 20_000), (1, 1_000)])
        .build()
}

#[test]
fn diff_graph_matches_golden_file() {
    let opts = DiffOptions {
        title: "Golden <diff> & \"friends\"".into(),
        subtitle: Some("hand-built profiles for the golden test".into()),
        width: 800,
        min_width: 0.0,
        inverted: false,
        ..DiffOptions::default()
    };
    let svg = render_diff_svg(
        &profile(),
        &Columns::new(0, Some(1)),
        &after_profile(),
        &Columns::new(0, Some(1)),
        &opts,
    );
    let parsed = parse(&svg, false);
    // Widths are summed periods: 80 samples of period 2,000.
    assert_eq!(parsed.one("all").n, 160_000);
    let (_, rows, _) = gone_section(&svg);
    assert_eq!(rows[0].label, "bench<1>;main;compute");
    check("diff.svg", &svg);
}

/// Cycles and instructions, no stall pair: colour is CPI. Samples and periods differ between
/// stacks (frequency mode), so this also pins widths to periods.
#[test]
fn cpi_coloured_graph_matches_golden_file() {
    let p = Builder::new(&["cycles", "instructions"])
        .stack(
            "bench<1>;main@bench;fast@bench",
            &[(40, 80_000), (30, 320_000)],
        )
        .stack(
            "bench<1>;main@bench;slow@bench",
            &[(10, 60_000), (2, 12_000)],
        )
        .stack(
            "bench<1>;main@bench;~mid@bench",
            &[(20, 30_000), (8, 30_000)],
        )
        .stack("bench<1>;main@bench", &[(4, 8_000), (0, 0)])
        .stack("zz_other;spin@libc.so.6", &[(6, 12_000), (0, 0)])
        .build();
    let columns = Columns {
        instructions: Some(Column(1)),
        ..Columns::new(0, None)
    };
    let svg = render(&p, &columns, &golden_opts());
    assert_eq!(parse(&svg, false).one("all").n, 190_000);
    check("cpi-ipc.svg", &svg);
}
