//! Folded text's weights are counts, not samples (`Options::counts`, `DiffOptions::counts`):
//! every frame's tooltip says `counts` where a recording's says `samples`, as the statistics
//! line does, in each picture (CPI in its three colourings, wall time, top-down, memory,
//! differential with its vanished list, inferno's classic graph); the same pictures of
//! samples say `samples` throughout. Each tooltip's number is the frame's exact count.

mod common;

use common::{diff_opts, gone_section, opts, parse, render, render_diff_svg, Builder, Parsed};
use cpiflame_profile::topdown::{plan, Cpu, Machine};
use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
use cpiflame_profile::{Column, Columns, Profile, WallColumns, Width};
use cpiflame_render::{
    render_classic, render_mem, render_topdown, DiffOptions, Options, ServedClass, TopdownColour,
    TopdownLook,
};

fn with_counts(counts: bool) -> Options {
    Options { counts, ..opts() }
}

/// The unit a picture names its weights by, and the one it must not use.
fn units(counts: bool) -> (&'static str, &'static str) {
    if counts {
        ("counts", "samples")
    } else {
        ("samples", "counts")
    }
}

/// Every frame's tooltip and the statistics line of `svg` name the weights `counts` (or
/// `samples`) and never the other; `frame`'s tooltip holds `line` exactly.
#[track_caller]
fn check(what: &str, svg: &Parsed, counts: bool, frame: &str, line: &str) {
    let (unit, not) = units(counts);
    assert!(!svg.frames.is_empty(), "{what}: no frames");
    for f in &svg.frames {
        assert!(!f.title.contains(not), "{what}: {}: {:?}", f.name, f.title);
    }
    let stats = svg.texts.join("\n");
    assert!(
        stats.contains(unit) && !stats.contains(not),
        "{what}: {stats}"
    );
    let title = &svg.one(frame).title;
    assert!(
        title.lines().any(|l| l == line),
        "{what}: {frame}: {line:?} not in {title:?}"
    );
}

#[test]
fn cpi_graph_tooltips_name_the_weights_as_the_statistics_line_does() {
    // Stalls: cycles (7 counts, 70 events) and stalls; CPI: cycles and instructions; by
    // name: cycles alone.
    let stalls = Builder::new(&["cycles", "stalls"])
        .stack("app;main;work", &[(7, 70), (3, 30)])
        .stack("app;main", &[(3, 30), (1, 10)])
        .build();
    let cpi = Builder::new(&["cycles", "instructions"])
        .stack("app;main;work", &[(7, 70), (5, 50)])
        .stack("app;main", &[(3, 30), (2, 20)])
        .build();
    let cpi_columns = Columns {
        instructions: Some(Column(1)),
        ..Columns::new(0, None)
    };
    for counts in [true, false] {
        let u = units(counts).0;
        let svg = parse(
            &render(&stalls, &Columns::new(0, Some(1)), &with_counts(counts)),
            false,
        );
        let line = format!("cycles: 7 {u}, 70 events (70.00% of all)");
        check("stalls", &svg, counts, "work", &line);
        let stall_line = format!("stalls: 3 {u} · stalled: 42.9% of cycles");
        check("stalls", &svg, counts, "work", &stall_line);
        let svg = parse(&render(&cpi, &cpi_columns, &with_counts(counts)), false);
        check("cpi", &svg, counts, "work", &line);
        let instructions = format!("instructions: 5 {u}, 50 events");
        check("cpi", &svg, counts, "work", &instructions);
        let svg = parse(
            &render(&stalls, &Columns::new(0, None), &with_counts(counts)),
            false,
        );
        check(
            "name",
            &svg,
            counts,
            "work",
            &format!("{u}: 7, 70 events (70.00%)"),
        );
    }
}

#[test]
fn wall_graph_tooltips_name_the_on_cpu_weights_so() {
    let p = Builder::new(&["cycles", ON_CPU, RUNNABLE, BLOCKED])
        .stack("app;main;work", &[(4, 40), (1, 4_000_000), (0, 0), (0, 0)])
        .stack("app;main;wait", &[(0, 0), (0, 0), (0, 0), (1, 6_000_000)])
        .build();
    let columns = Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(1),
            runnable: Column(2),
            blocked: Column(3),
        }),
        ..Columns::new(0, None)
    };
    for counts in [true, false] {
        let svg = parse(&render(&p, &columns, &with_counts(counts)), false);
        let (unit, not) = units(counts);
        // The statistics line is of wall time (milliseconds): only the tooltips say.
        for f in &svg.frames {
            assert!(!f.title.contains(not), "{}: {:?}", f.name, f.title);
        }
        let title = &svg.one("work").title;
        let line = format!("cycles: 4 {unit}, 40 events");
        assert!(title.lines().any(|l| l == line), "{title:?}");
    }
}

#[test]
fn top_down_tooltips_name_the_cycles_weights_so() {
    // Golden Cove's level 1: slots, cycles, then the four metrics.
    let names = [
        "slots",
        "cycles",
        "topdown-retiring",
        "topdown-bad-spec",
        "topdown-fe-bound",
        "topdown-be-bound",
    ];
    let p = Builder::new(&names)
        .stack(
            "app;main;hot",
            &[(1, 64), (6, 600), (1, 16), (1, 16), (1, 16), (1, 16)],
        )
        .build();
    let plan = plan(
        &names,
        &Machine::of(Cpu::from_perf_cpuid("GenuineIntel,6,143,8")),
    )
    .unwrap();
    let look = TopdownLook {
        plan,
        colour: TopdownColour::Dominant,
    };
    for counts in [true, false] {
        let mut out = Vec::new();
        render_topdown(
            &p,
            &Columns::new(1, None),
            &look,
            &with_counts(counts),
            &mut out,
        )
        .unwrap();
        let svg = parse(&String::from_utf8(out).unwrap(), false);
        let line = format!("cycles: 6 {}, 600 events (100.00% of all)", units(counts).0);
        check("top-down", &svg, counts, "hot", &line);
    }
}

#[test]
fn memory_graph_tooltips_name_the_loads_so() {
    let p = Builder::new(&["L1", "RAM"])
        .stack("app;main;scan", &[(4, 40), (1, 300)])
        .build();
    let classes = [("L1", 0.0), ("RAM", 1.0)].map(|(name, d)| ServedClass {
        name: name.into(),
        distance: Some(d),
    });
    for counts in [true, false] {
        let mut out = Vec::new();
        render_mem(&p, &classes, &with_counts(counts), &mut out).unwrap();
        let svg = parse(&String::from_utf8(out).unwrap(), false);
        let line = format!(
            "loads: 5 {}, 340 cycles of latency (100.00% of all), mean 68.0",
            units(counts).0
        );
        check("memory", &svg, counts, "scan", &line);
    }
}

#[test]
fn differential_tooltips_and_the_vanished_list_name_each_runs_weights() {
    let before = Builder::new(&["cycles"])
        .stack("app;main;work", &[(6, 60)])
        .stack("app;main;old", &[(2, 20)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;main;work", &[(9, 90)])
        .build();
    let columns = Columns::new(0, None);
    for counts in [true, false] {
        let u = units(counts).0;
        let opts = DiffOptions {
            counts: (counts, counts),
            ..diff_opts()
        };
        let text = render_diff_svg(&before, &columns, &after, &columns, &opts);
        let svg = parse(&text, false);
        check(
            "diff",
            &svg,
            counts,
            "work",
            &format!("before: 6 {u}, 60 cycles (75.00%)"),
        );
        check(
            "diff",
            &svg,
            counts,
            "work",
            &format!("after: 9 {u}, 90 cycles (100.00%)"),
        );
        let (heading, rows, _) = gone_section(&text);
        assert!(
            heading.contains(&format!("with cycles {u} in BEFORE")),
            "{heading}"
        );
        let title = &rows[0].title;
        assert!(
            title.contains(&format!(
                "before: 2 {u}, 20 cycles (25.00%)\nafter: no cycles {u}"
            )),
            "{title}"
        );
    }
    // Folded BEFORE, recorded AFTER: each side says its own.
    let opts = DiffOptions {
        counts: (true, false),
        ..diff_opts()
    };
    let svg = parse(
        &render_diff_svg(&before, &columns, &after, &columns, &opts),
        false,
    );
    let title = &svg.one("work").title;
    assert!(
        title.contains("before: 6 counts, 60 cycles (75.00%)\nafter: 9 samples, 90 cycles"),
        "{title}"
    );
}

#[test]
fn wall_differential_tooltips_name_each_runs_cycles_weights() {
    let run = |on: u64| -> Profile {
        Builder::new(&["cycles", ON_CPU, RUNNABLE, BLOCKED])
            .stack("app;main;work", &[(3, 30), (1, on), (0, 0), (0, 0)])
            .build()
    };
    let columns = Columns {
        width: Width::Wall(WallColumns {
            on_cpu: Column(1),
            runnable: Column(2),
            blocked: Column(3),
        }),
        ..Columns::new(0, None)
    };
    for (sides, line) in [
        ((true, true), "cycles counts: 3 → 3"),
        ((false, false), "cycles samples: 3 → 3"),
        ((true, false), "cycles: 3 counts → 3 samples"),
    ] {
        let opts = DiffOptions {
            counts: sides,
            ..diff_opts()
        };
        let svg = parse(
            &render_diff_svg(&run(1_000_000), &columns, &run(2_000_000), &columns, &opts),
            false,
        );
        let title = &svg.one("work").title;
        assert!(title.lines().any(|l| l == line), "{sides:?}: {title:?}");
    }
}

#[test]
fn classic_tooltips_name_the_weights_as_its_subtitle_does() {
    let p = Builder::new(&["cycles"])
        .stack("app;main;work", &[(7, 7)])
        .stack("app;main", &[(3, 3)])
        .build();
    for counts in [true, false] {
        let (unit, not) = units(counts);
        let mut out = Vec::new();
        render_classic(&p, &Columns::new(0, None), &with_counts(counts), &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(
            svg.contains(&format!("<title>work (7 {unit}, 70.00%)</title>")),
            "{svg}"
        );
        // The tooltips and the subtitle (inferno's own markup has `total_samples`).
        for text in svg
            .split("<title>")
            .skip(1)
            .chain(svg.split("subtitle").skip(1))
        {
            let text = &text[..text.find('<').unwrap_or(text.len())];
            assert!(!text.contains(not), "{text}");
        }
    }
}
