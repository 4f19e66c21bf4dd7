//! Exact-arithmetic and behaviour tests of `render_cpi`, reading its own SVG back.

mod common;

use common::{opts, parse, render, Builder};
use cpiflame_profile::{Column, Columns};
use cpiflame_render::{
    cpi_color, cpi_position, render_cpi, stall_color, Options, RenderError, STALL_BLUE, STALL_RED,
};

/// cycles = event 0, stalls = event 1; counts are (samples, period).
fn two_children() -> cpiflame_profile::Profile {
    Builder::new(&["cycles", "stalls"])
        // A: 10 cycles, all stalled.
        .stack("app;parent;A", &[(10, 1000), (10, 1000)])
        // B: 30 cycles, none stalled.
        .stack("app;parent;B", &[(30, 3000), (0, 0)])
        // parent itself: 5 cycles, none stalled.
        .stack("app;parent", &[(5, 500), (0, 0)])
        .build()
}

#[test]
fn parent_width_is_children_plus_self_and_children_are_packed_from_the_left() {
    let p = two_children();
    let svg = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    let all = svg.one("all");
    let app = svg.one("app");
    let parent = svg.one("parent");
    let (a, b) = (svg.one("A"), svg.one("B"));
    // Widths are summed cycles periods (100 per sample here).
    assert_eq!(
        (all.n, app.n, parent.n, a.n, b.n),
        (4500, 4500, 4500, 1000, 3000)
    );
    // parent = children (1000 + 3000) + self (500).
    let kids: u64 = svg.children(parent).iter().map(|f| f.n).sum();
    assert_eq!(parent.n, kids + 500);
    // Children sorted by name, laid out from the parent's left edge.
    assert_eq!((a.s, b.s), (parent.s, parent.s + 1000));
    // Pixel geometry follows the arithmetic: 1180 px for 45 samples of one fixed period.
    let px = 1180.0 / 45.0;
    assert!((all.width - 1180.0).abs() < 0.006);
    assert!((b.x - (10.0 + 10.0 * px)).abs() < 0.006);
    assert!((b.width - 30.0 * px).abs() < 0.006);
    for f in &svg.frames {
        let kids: u64 = svg.children(f).iter().map(|c| c.n).sum();
        assert!(kids <= f.n, "{} narrower than its children", f.name);
    }
}

#[test]
fn colours_are_inclusive_stall_shares_on_the_fixed_scale() {
    let p = two_children();
    let svg = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert_eq!(svg.one("A").fill, STALL_BLUE.to_string());
    assert_eq!(svg.one("A").fill, "#4682f0");
    assert_eq!(svg.one("B").fill, STALL_RED.to_string());
    assert_eq!(svg.one("B").fill, "#ee5046");
    // parent: 1000 stalled of 4500 cycles (its own 500 included) = 22.2%.
    assert_eq!(
        svg.one("parent").fill,
        stall_color(Some(1000.0 / 4500.0)).to_string()
    );
    assert!(svg.one("parent").title.contains("stalled: 22.2% of cycles"));

    // Without the parent's self samples: exactly the brief's 25% example.
    let p = Builder::new(&["cycles", "stalls"])
        .stack("app;parent;A", &[(10, 1000), (10, 1000)])
        .stack("app;parent;B", &[(30, 3000), (0, 0)])
        .build();
    let svg = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    let parent = svg.one("parent");
    assert_eq!(parent.fill, stall_color(Some(0.25)).to_string());
    assert_eq!(parent.fill, "#cf5a8c");
    assert!(parent.title.contains("stalled: 25.0% of cycles"));
    assert!(parent
        .title
        .contains("cycles: 40 samples, 4.00 k events (100.00% of all)"));
    assert!(svg.one("A").title.contains("stalls: 10 samples"));
}

#[test]
fn shares_above_one_are_clamped_for_colour_but_shown() {
    let p = Builder::new(&["cycles", "stalls"])
        .stack("app;hot", &[(10, 100), (20, 150)])
        .build();
    let svg = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    let hot = svg.one("hot");
    assert_eq!(hot.fill, STALL_BLUE.to_string());
    assert!(
        hot.title.contains("stalled: 150.0% of cycles"),
        "{}",
        hot.title
    );
}

#[test]
fn stalls_without_cycles_have_no_width_but_count_in_totals() {
    let p = Builder::new(&["cycles", "stalls"])
        .stack("app;work", &[(100, 1000), (0, 0)])
        .stack("app;wait", &[(0, 0), (40, 500)])
        .build();
    let svg = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert!(svg.named("wait").is_empty());
    assert_eq!(svg.one("all").n, 1000);
    assert_eq!(
        svg.subtitle,
        "cycles: 100 samples (event cycles) · stalled: 50.0% (event stalls)"
    );
    // The process frame contains the stall-only stack: 500 / 1000.
    assert!(svg.one("app").title.contains("stalled: 50.0% of cycles"));
    assert!(svg.one("work").title.contains("stalled: 0.0% of cycles"));
}

#[test]
fn subtitle_formats_totals_and_adds_the_callers_line() {
    let p = Builder::new(&["cpu_clk_unhalted_thread_p", "resource_stalls_any"])
        .stack("app;f", &[(12_345, 123_450), (100, 47_157)])
        .build();
    let o = Options {
        subtitle: Some("no hardware <counters>".into()),
        ..opts()
    };
    let raw = render(&p, &Columns::new(0, Some(1)), &o);
    let svg = parse(&raw, false);
    assert_eq!(
        svg.subtitle,
        "cycles: 12,345 samples (event cpu_clk_unhalted_thread_p) · stalled: 38.2% (event resource_stalls_any)"
    );
    assert!(svg.texts.iter().any(|t| t == "no hardware <counters>"));
    assert!(raw.contains("no hardware &lt;counters&gt;"));
    // The legend: gradient bar with three labels.
    assert!(raw.contains(r#"fill="url(#stall-scale)""#));
    for label in ["0%", "50%", "100%"] {
        assert!(svg.texts.iter().any(|t| t == label), "legend label {label}");
    }
}

#[test]
fn min_width_drops_narrow_frames_with_their_children() {
    let p = Builder::new(&["cycles", "stalls"])
        .stack("app;big", &[(9_999, 9_999), (0, 0)])
        .stack("app;tiny;tinier", &[(1, 1), (0, 0)])
        .build();
    // 1 sample of 10,000 over 1,180 px = 0.118 px.
    let kept = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert_eq!(kept.one("tiny").n, 1);
    assert_eq!(kept.one("tinier").n, 1);
    let o = Options {
        min_width: 0.2,
        ..opts()
    };
    let dropped = parse(&render(&p, &Columns::new(0, Some(1)), &o), false);
    assert!(dropped.named("tiny").is_empty());
    assert!(dropped.named("tinier").is_empty());
    assert_eq!(dropped.one("big").n, 9_999);
    // Totals still count what is not drawn.
    assert_eq!(dropped.one("all").n, 10_000);
    // The default (0.1 px) keeps a 0.118 px frame.
    let default = parse(
        &render(&p, &Columns::new(0, Some(1)), &Options::default()),
        false,
    );
    assert_eq!(default.one("tinier").n, 1);
}

#[test]
fn inverted_puts_the_root_on_top() {
    let p = two_children();
    let o = Options {
        inverted: true,
        ..opts()
    };
    let icicle = parse(&render(&p, &Columns::new(0, Some(1)), &o), true);
    let flame = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    // Icicle: every child is below its parent; flame: above.
    assert!(icicle.one("all").y < icicle.one("app").y);
    assert!(icicle.one("parent").y < icicle.one("A").y);
    assert!(flame.one("all").y > flame.one("app").y);
    assert!(flame.one("parent").y > flame.one("A").y);
    assert_eq!(icicle.one("A").depth, 3);
    assert_eq!(flame.one("A").depth, 3);
    // Same frames, same widths and colours.
    for (a, b) in icicle.frames.iter().zip(&flame.frames) {
        assert_eq!((&a.name, a.s, a.n, &a.fill), (&b.name, b.s, b.n, &b.fill));
    }
}

#[test]
fn output_is_deterministic_and_independent_of_input_order() {
    let stacks: [(&str, [(u64, u64); 2]); 5] = [
        ("app;main;b", [(3, 30), (1, 10)]),
        ("app;main;a", [(4, 40), (4, 40)]),
        ("app;main", [(2, 20), (0, 0)]),
        ("other;x@libx.so", [(7, 70), (2, 20)]),
        ("app;main;a;deep", [(1, 10), (0, 0)]),
    ];
    let mut fwd = Builder::new(&["cycles", "stalls"]);
    for (s, c) in &stacks {
        fwd.stack(s, c);
    }
    let mut rev = Builder::new(&["cycles", "stalls"]);
    for (s, c) in stacks.iter().rev() {
        rev.stack(s, c);
    }
    let (fwd, rev) = (fwd.build(), rev.build());
    let once = render(&fwd, &Columns::new(0, Some(1)), &opts());
    assert_eq!(once, render(&fwd, &Columns::new(0, Some(1)), &opts()));
    assert_eq!(once, render(&rev, &Columns::new(0, Some(1)), &opts()));
    let single = render(&fwd, &Columns::new(0, None), &opts());
    assert_eq!(single, render(&rev, &Columns::new(0, None), &opts()));
}

#[test]
fn same_name_in_two_modules_stays_two_frames_ordered_by_module() {
    let p = Builder::new(&["cycles"])
        .stack("app;f@zlib.so", &[(1, 1)])
        .stack("app;f@alib.so", &[(2, 2)])
        .build();
    let svg = parse(&render(&p, &Columns::new(0, None), &opts()), false);
    let fs = svg.named("f");
    assert_eq!(fs.len(), 2);
    assert!(fs[0].title.contains("module: alib.so") && fs[0].s == 0 && fs[0].n == 2);
    assert!(fs[1].title.contains("module: zlib.so") && fs[1].s == 2);
}

#[test]
fn single_event_mode_is_a_plain_flame_graph() {
    let p = Builder::new(&["cpu-clock"])
        .stack("app;main;work", &[(3, 3_000_000)])
        .stack("app;main", &[(1, 1_000_000)])
        .build();
    let raw = render(&p, &Columns::new(0, None), &opts());
    let svg = parse(&raw, false);
    assert_eq!(
        svg.subtitle,
        "cpu-clock: 4 samples · no stall data for this file, so colours only tell frames apart"
    );
    assert!(!raw.contains("stall-scale"), "no legend without stalls");
    let work = svg.one("work");
    assert_eq!(work.title, "work\nsamples: 3, 3.00 M events (75.00%)");
    // Warm, name-hashed colours: red-dominant, and the same name gives the same colour.
    let rgb = |hex: &str| -> (u8, u8, u8) {
        let v = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex");
        (v(1), v(3), v(5))
    };
    for f in &svg.frames {
        let (r, g, b) = rgb(&f.fill);
        assert!(
            r >= 210 && g <= 210 && b <= 70,
            "{} is not warm: {}",
            f.name,
            f.fill
        );
    }
    let again = parse(
        &render(
            &Builder::new(&["e"]).stack("x;work", &[(1, 1)]).build(),
            &Columns::new(0, None),
            &opts(),
        ),
        false,
    );
    assert_eq!(again.one("work").fill, work.fill);
}

#[test]
fn names_are_escaped_everywhere() {
    let nasty = r#"operator<<(std::ostream&, Foo<"a", 'b'> const&)"#;
    let p = Builder::new(&["c<y>cles", "st&lls"])
        .stack(&format!("a&b;{nasty}@lib<x>.so"), &[(5, 5), (1, 1)])
        .build();
    let o = Options {
        title: "Title <&> \"q\"".into(),
        ..opts()
    };
    let raw = render(&p, &Columns::new(0, Some(1)), &o);
    let svg = parse(&raw, false);
    let f = svg.one(nasty);
    assert!(f.title.contains("module: lib<x>.so"));
    assert!(svg.texts.iter().any(|t| t == "Title <&> \"q\""));
    assert!(svg.subtitle.contains("(event c<y>cles)") && svg.subtitle.contains("(event st&lls)"));
    assert!(svg.one("a&b").label.starts_with("a&b"));
    assert!(!raw.contains(nasty));
}

#[test]
fn labels_are_truncated_to_fit() {
    let long = "a_really_long_function_name_that_cannot_fit_in_a_narrow_frame";
    let p = Builder::new(&["c"])
        .stack(&format!("app;{long}"), &[(1, 1)])
        .stack("app;wide", &[(99, 99)])
        .build();
    let svg = parse(&render(&p, &Columns::new(0, None), &opts()), false);
    let f = svg.one(long);
    // 11.8 px: (11.8 - 6) / 7.08 < 1 character: no label at all.
    assert_eq!(f.label, "");
    let o = Options {
        width: 4000,
        ..opts()
    };
    let svg = parse(&render(&p, &Columns::new(0, None), &o), false);
    let f = svg.one(long);
    // 39.8 px: 4 characters fit, so 2 and "..".
    assert_eq!(f.label, "a_..");
    assert_eq!(svg.one("wide").label, "wide");
    assert_eq!(svg.one("all").label, "all");
}

#[test]
fn errors_are_typed_and_explained() {
    let p = two_children();
    let mut out = Vec::new();
    let err = |r: Result<(), RenderError>| match r {
        Err(e) => e,
        Ok(()) => panic!("expected an error"),
    };
    let e = err(render_cpi(&p, &Columns::new(0, Some(2)), &opts(), &mut out));
    assert!(matches!(e, RenderError::NoSuchEvent { index: 2, count: 2 }));
    assert_eq!(
        e.to_string(),
        "event column 2 does not exist: the profile has 2 event column(s)"
    );
    let empty = Builder::new(&["cycles"]).build();
    let e = err(render_cpi(
        &empty,
        &Columns::new(0, None),
        &opts(),
        &mut out,
    ));
    assert_eq!(
        e.to_string(),
        "no samples of event `cycles` in the profile: there is nothing to draw"
    );
    let o = Options {
        width: 10,
        ..opts()
    };
    let e = err(render_cpi(&p, &Columns::new(0, None), &o, &mut out));
    assert!(matches!(e, RenderError::WidthTooSmall(10)));
    let o = Options {
        min_width: f64::NAN,
        ..opts()
    };
    assert!(matches!(
        err(render_cpi(&p, &Columns::new(0, None), &o, &mut out)),
        RenderError::BadMinWidth(_)
    ));
    assert!(out.is_empty(), "nothing is written when validation fails");
}

#[test]
fn embedded_script_parses_with_node() {
    let p = two_children();
    let svg = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert!(svg.script.contains("function zoom"));
    let has_node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_node {
        cpiflame_testkit::unavailable(
            "the JavaScript syntax check needs `node`, which is not on PATH",
        );
        return;
    }
    let path = std::env::temp_dir().join(format!("cpiflame-render-{}.js", std::process::id()));
    std::fs::write(&path, &svg.script).expect("write script");
    let out = std::process::Command::new("node")
        .arg("--check")
        .arg(&path)
        .output()
        .expect("run node");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "node --check failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn instructions_give_each_frame_its_cpi() {
    // cycles, stalls, instructions: A retires 500 instructions in 1000 cycles (CPI 2),
    // B 3000 in 3000 (CPI 1); parent with its own 500 cycles and 0 instructions: 4500/3500.
    let p = Builder::new(&["cycles", "stalls", "instructions"])
        .stack("app;parent;A", &[(10, 1000), (10, 1000), (5, 500)])
        .stack("app;parent;B", &[(30, 3000), (0, 0), (30, 3000)])
        .stack("app;parent", &[(5, 500), (0, 0), (0, 0)])
        .build();
    let c = Columns {
        instructions: Some(Column(2)),
        ..Columns::new(0, Some(1))
    };
    let svg = parse(&render(&p, &c, &opts()), false);
    assert!(
        svg.one("A").title.contains("CPI: 2.00"),
        "{}",
        svg.one("A").title
    );
    assert!(svg.one("B").title.contains("CPI: 1.00"));
    assert!(svg
        .one("parent")
        .title
        .contains(&format!("CPI: {:.2}", 4500.0 / 3500.0)));
    // Without the option, no CPI line.
    let plain = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert!(!plain.one("A").title.contains("CPI"));
}

/// cycles = event 0, instructions = event 1, no stall column; counts are (samples, period).
fn cycles_and_instructions() -> cpiflame_profile::Profile {
    Builder::new(&["cycles", "instructions"])
        // fast: 4,000 cycles, 16,000 instructions: CPI 0.25 (red end).
        .stack("app;main;fast", &[(4, 4_000), (16, 16_000)])
        // slow: 8,000 cycles, 1,000 instructions: CPI 8 (beyond the blue end).
        .stack("app;main;slow", &[(8, 8_000), (1, 1_000)])
        // mid: 3,000 cycles, 2,000 instructions: CPI 1.5.
        .stack("app;main;mid", &[(3, 3_000), (2, 2_000)])
        // blind: cycles but no instructions anywhere under it: unknown.
        .stack("app;main;blind", &[(1, 1_000), (0, 0)])
        // Instructions where no cycles sample landed: no width, but in main's CPI.
        .stack("app;main;unseen", &[(0, 0), (1, 1_000)])
        .build()
}

/// Cycles in column 0, instructions in column 1, no stalls.
fn cpi_columns() -> Columns {
    Columns {
        instructions: Some(Column(1)),
        ..Columns::new(0, None)
    }
}

#[test]
fn without_stalls_colour_is_the_inclusive_cpi_on_the_log_scale() {
    let p = cycles_and_instructions();
    let raw = render(&p, &cpi_columns(), &opts());
    let svg = parse(&raw, false);
    // Every drawn frame: the colour of its inclusive CPI, by hand.
    let expected = [
        ("fast", Some(4_000.0 / 16_000.0)),
        ("slow", Some(8_000.0 / 1_000.0)),
        ("mid", Some(3_000.0 / 2_000.0)),
        ("blind", None),
        // main = all four children + the instructions-only stack.
        ("main", Some(16_000.0 / 20_000.0)),
        ("app", Some(16_000.0 / 20_000.0)),
        ("all", Some(16_000.0 / 20_000.0)),
    ];
    assert_eq!(svg.frames.len(), expected.len());
    for (name, cpi) in expected {
        assert_eq!(svg.one(name).fill, cpi_color(cpi).to_string(), "{name}");
    }
    assert_eq!(svg.one("fast").fill, STALL_RED.to_string());
    assert_eq!(svg.one("slow").fill, STALL_BLUE.to_string());
    assert_eq!(svg.one("blind").fill, "#bebebe");
    // CPI 1.5 is log2(1.5)+2 = 2.585 octaves of 4 along the scale: past violet, towards blue.
    let t = (1.5f64.log2() + 2.0) / 4.0;
    assert_eq!(cpi_position(1.5), Some(t));
    assert_eq!(svg.one("mid").fill, stall_color(Some(t)).to_string());
    assert!(svg.named("unseen").is_empty(), "no cycles, no width");
    // Widths are cycles periods.
    assert_eq!(svg.one("all").n, 16_000);
}

#[test]
fn cpi_tooltips_give_cycles_instructions_cpi_and_ipc() {
    let p = cycles_and_instructions();
    let svg = parse(&render(&p, &cpi_columns(), &opts()), false);
    assert_eq!(
        svg.one("mid").title,
        "mid\ncycles: 3 samples, 3.00 k events (18.75% of all)\ninstructions: 2 samples, 2.00 k events\nCPI: 1.50 · IPC: 0.67"
    );
    assert_eq!(
        svg.one("blind").title,
        "blind\ncycles: 1 samples, 1.00 k events (6.25% of all)\ninstructions: none sampled · CPI: n/a"
    );
    assert!(svg
        .one("main")
        .title
        .ends_with("instructions: 20 samples, 20.0 k events\nCPI: 0.80 · IPC: 1.25"));
}

#[test]
fn cpi_subtitle_and_legend() {
    let p = cycles_and_instructions();
    let raw = render(&p, &cpi_columns(), &opts());
    let svg = parse(&raw, false);
    assert_eq!(
        svg.subtitle,
        "CPI 0.80 · IPC 1.25 · cycles: 16 samples, 16.0 k events · instructions: 20.0 k events"
    );
    assert!(raw.contains(r#"fill="url(#cpi-scale)""#));
    assert!(!raw.contains("stall-scale"));
    assert!(svg.texts.iter().any(|t| t == "CPI (log scale):"));
    for label in ["≤0.25", "0.5", "1", "2", "≥4"] {
        assert!(svg.texts.iter().any(|t| t == label), "legend label {label}");
    }
    // The gradient has the scale's stops: red at 0, violet (CPI 1) at the middle, blue at 1.
    assert!(raw.contains(r##"<linearGradient id="cpi-scale" x1="0" y1="0" x2="1" y2="0"><stop offset="0" stop-color="#ee5046"/><stop offset="0.5" stop-color="#b064d2"/><stop offset="1" stop-color="#4682f0"/></linearGradient>"##));
}

#[test]
fn with_a_stall_pair_colour_stays_the_stall_share_and_cpi_is_in_tooltips() {
    let p = Builder::new(&["cycles", "stalls", "instructions"])
        .stack("app;a", &[(10, 1_000), (5, 250), (4, 4_000)])
        .build();
    let svg = parse(
        &render(
            &p,
            &Columns {
                instructions: Some(Column(2)),
                ..Columns::new(0, Some(1))
            },
            &opts(),
        ),
        false,
    );
    let a = svg.one("a");
    assert_eq!(a.fill, stall_color(Some(0.25)).to_string());
    assert!(a.title.ends_with("CPI: 0.25 · IPC: 4.00"), "{}", a.title);
    assert!(svg.subtitle.contains("stalled: 25.0%"));
}

#[test]
fn widths_are_cycles_periods_not_samples() {
    // Frequency mode: few long samples in `idle_loop`, many short ones in `busy`.
    let p = Builder::new(&["cycles"])
        .stack("app;busy", &[(90, 9_000)])
        .stack("app;idle_loop", &[(10, 27_000)])
        .build();
    let svg = parse(&render(&p, &Columns::new(0, None), &opts()), false);
    let (busy, idle) = (svg.one("busy"), svg.one("idle_loop"));
    assert_eq!((busy.n, idle.n), (9_000, 27_000));
    assert!((idle.width - 3.0 * busy.width).abs() < 0.01);
    assert!(idle.title.contains("samples: 10, 27.0 k events (75.00%)"));
}

#[test]
fn cpi_picture_is_byte_identical_across_runs_and_input_order() {
    let p = cycles_and_instructions();
    let once = render(&p, &cpi_columns(), &opts());
    assert_eq!(once, render(&p, &cpi_columns(), &opts()));
    let mut reversed = Builder::new(&["cycles", "instructions"]);
    reversed
        .stack("app;main;unseen", &[(0, 0), (1, 1_000)])
        .stack("app;main;blind", &[(1, 1_000), (0, 0)])
        .stack("app;main;mid", &[(3, 3_000), (2, 2_000)])
        .stack("app;main;slow", &[(8, 8_000), (1, 1_000)])
        .stack("app;main;fast", &[(4, 4_000), (16, 16_000)]);
    assert_eq!(once, render(&reversed.build(), &cpi_columns(), &opts()));
}

/// A hybrid file whose stall event exists on P-cores only: widths are the cycles of both core
/// types, the stall share divides by the P-cores' cycles alone.
#[test]
fn hybrid_ratios_divide_by_the_cycles_of_the_cores_that_have_the_pair() {
    // Columns: cycles of both core types, stalls (cpu_core), cycles (cpu_core).
    let p = Builder::new(&["cycles", "stalls", "cycles (cpu_core)"])
        .stack("app;p_and_e", &[(30, 3000), (5, 500), (10, 1000)])
        .stack("app;e_only", &[(10, 1000), (0, 0), (0, 0)])
        .build();
    let with_ratio = Columns {
        ratio_cycles: Some(Column(2)),
        ..Columns::new(0, Some(1))
    };
    let svg = parse(&render(&p, &with_ratio, &opts()), false);
    // 500 stalled of the P-cores' 1000 cycles: 50%, not 500 of 3000.
    let both = svg.one("p_and_e");
    assert_eq!(both.fill, stall_color(Some(0.5)).to_string());
    assert!(
        both.title.contains("stalled: 50.0% of cycles"),
        "{}",
        both.title
    );
    // Widths stay the cycles of both core types: 3000 of 4000.
    assert!(both.title.contains("(75.00% of all)"), "{}", both.title);
    // A frame that ran on E-cores only has no P-core cycles: share unknown (grey).
    assert_eq!(svg.one("e_only").fill, stall_color(None).to_string());

    let without = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert_eq!(
        without.one("p_and_e").fill,
        stall_color(Some(500.0 / 3000.0)).to_string()
    );
}

/// A graph of over ten thousand frames is formatted on two threads; the bytes are those of
/// the one-thread drawing, and every frame is there once, in order.
#[test]
fn a_large_graph_drawn_on_two_threads_is_byte_identical_to_one_thread() {
    let mut b = Builder::new(&["cycles", "stalls"]);
    for i in 0..5_000u64 {
        b.stack(
            &format!("app;mod{};fn{i};leaf{}", i % 7, i % 3),
            &[(1 + i % 5, 100 + i), (i % 2, 50)],
        );
    }
    let p = b.build();
    let one = Options {
        single_threaded: true,
        ..opts()
    };
    let two = Options {
        single_threaded: false,
        ..opts()
    };
    let (a, b) = (
        render(&p, &Columns::new(0, Some(1)), &one),
        render(&p, &Columns::new(0, Some(1)), &two),
    );
    let frames = a.matches(r#"<g class="f""#).count();
    assert!(frames > 10_000, "{frames} frames: too few to be split");
    assert!(a == b, "the two-thread drawing differs");
    for i in [0, 2047, 2048, 4999] {
        assert_eq!(a.matches(&format!("<title>fn{i}\n")).count(), 1, "fn{i}");
    }
}
