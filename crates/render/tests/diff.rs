//! Exact-arithmetic and behaviour tests of `render_diff`, reading its own SVG back.

mod common;

use common::{diff_opts, gone_section, node_check, parse, render_diff_svg, Builder, Drawn, Parsed};
use cpiflame_profile::{Columns, Profile, Width};
use cpiflame_render::{
    diff_color, render_diff, DiffOptions, RenderError, DIFF_GREW, DIFF_NEUTRAL, DIFF_SHRANK,
};

fn diff(before: &Profile, after: &Profile) -> Parsed {
    parse(
        &render_diff_svg(
            before,
            &Columns::new(0, None),
            after,
            &Columns::new(0, None),
            &diff_opts(),
        ),
        false,
    )
}

/// The change in points a frame's tooltip gives: `change: +15.00 points (...)`.
fn change(f: &Drawn) -> f64 {
    let line = f
        .title
        .lines()
        .find_map(|l| l.strip_prefix("change: "))
        .unwrap_or_else(|| panic!("no change line in {:?}", f.title));
    let number = line.split(' ').next().expect("number");
    number.parse().expect("a number")
}

#[test]
fn colour_is_the_change_of_the_inclusive_share() {
    // BEFORE: 400 samples, hot 100 (25%); AFTER: 800 samples, hot 320 (40%): +15 points.
    let before = Builder::new(&["cycles"])
        .stack("app;main;hot", &[(100, 100)])
        .stack("app;main;cold", &[(300, 300)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;main;hot", &[(320, 320)])
        .stack("app;main;cold", &[(480, 480)])
        .build();
    let svg = diff(&before, &after);
    let hot = svg.one("hot");
    assert_eq!(hot.fill, diff_color(0.15).to_string());
    // By hand: sqrt(15 / 20) = 0.8660 of the way from neutral (226,226,222) to red
    // (238,80,70): (236.39, 99.56, 90.36).
    assert_eq!(hot.fill, "#ec645a");
    assert_eq!(
        hot.title,
        "hot\nbefore: 100 samples, 100 cycles (25.00%)\nafter: 320 samples, 320 cycles (40.00%)\nchange: +15.00 points (+60.0% relative)"
    );
    // cold: 75% -> 60%, -15 points, on the blue side.
    let cold = svg.one("cold");
    assert_eq!(cold.fill, diff_color(-0.15).to_string());
    assert!(cold
        .title
        .contains("change: -15.00 points (-20.0% relative)"));
    // main and app hold everything in both runs: unchanged.
    assert_eq!(svg.one("main").fill, DIFF_NEUTRAL.to_string());
    assert_eq!(svg.one("all").fill, DIFF_NEUTRAL.to_string());
    // Inclusive, not self: hot's parent main has no self samples and is neutral although
    // its children changed; a leaf whose parent changes does not take the parent's colour.
    assert_ne!(svg.one("main").fill, hot.fill);
}

#[test]
fn an_unchanged_share_is_neutral_even_when_the_totals_differ() {
    let before = Builder::new(&["cycles"])
        .stack("app;main;a", &[(30, 30)])
        .stack("app;main;b", &[(90, 90)])
        .build();
    // Twice the samples, same proportions.
    let after = Builder::new(&["cycles"])
        .stack("app;main;a", &[(60, 60)])
        .stack("app;main;b", &[(180, 180)])
        .build();
    let svg = diff(&before, &after);
    for f in &svg.frames {
        assert_eq!(f.fill, DIFF_NEUTRAL.to_string(), "{}", f.name);
        assert!(
            f.title.contains("change: 0.00 points (0.0% relative)"),
            "{}",
            f.title
        );
    }
    assert!(svg
        .one("a")
        .title
        .contains("before: 30 samples, 30 cycles (25.00%)"));
    assert!(svg
        .one("a")
        .title
        .contains("after: 60 samples, 60 cycles (25.00%)"));
}

#[test]
fn a_new_frame_grew_from_zero_by_its_after_share() {
    let before = Builder::new(&["cycles"])
        .stack("app;main;old", &[(100, 100)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;main;old", &[(150, 150)])
        .stack("app;main;fresh", &[(40, 40)])
        .stack("app;main;tiny", &[(10, 10)])
        .build();
    let svg = diff(&before, &after);
    let fresh = svg.one("fresh");
    assert_eq!(change(fresh), 20.0);
    assert!(fresh
        .title
        .contains("before: 0 samples, 0 cycles (0.00%)\nafter: 40 samples, 40 cycles (20.00%)\nchange: +20.00 points (new in AFTER)"));
    assert_eq!(fresh.fill, diff_color(0.20).to_string());
    assert_eq!(fresh.fill, DIFF_GREW.to_string(), "20 points saturate");
    let tiny = svg.one("tiny");
    assert_eq!(change(tiny), 5.0);
    assert_eq!(tiny.fill, diff_color(0.05).to_string());
    assert_eq!(change(svg.one("old")), -25.0);
}

#[test]
fn a_parents_change_is_its_childrens_plus_its_own() {
    // BEFORE (200): A 40 (20%), B 60 (30%), G 30 (15%, gone in AFTER), p itself 20 (10%),
    // q 50 (25%). AFTER (500): A 150 (30%), B 100 (20%), p itself 75 (15%), q 175 (35%).
    let before = Builder::new(&["cycles"])
        .stack("app;p;A", &[(40, 40)])
        .stack("app;p;B", &[(60, 60)])
        .stack("app;p;G", &[(30, 30)])
        .stack("app;p", &[(20, 20)])
        .stack("app;q", &[(50, 50)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;p;A", &[(150, 150)])
        .stack("app;p;B", &[(100, 100)])
        .stack("app;p", &[(75, 75)])
        .stack("app;q", &[(175, 175)])
        .build();
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let svg = parse(&raw, false);
    let (a, b, p) = (
        change(svg.one("A")),
        change(svg.one("B")),
        change(svg.one("p")),
    );
    assert_eq!((a, b, p), (10.0, -10.0, -10.0));
    // G is not drawn (no AFTER width); the list under the graph gives its BEFORE share, and
    // its change is minus that share.
    assert!(svg.named("G").is_empty());
    let (_, rows, _) = gone_section(&raw);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].share, "15.00%");
    let g: f64 = -rows[0]
        .share
        .trim_end_matches('%')
        .parse::<f64>()
        .expect("share");
    // p's own change: 75/500 - 20/200 = +5 points.
    let own = (75.0 / 500.0 - 20.0 / 200.0) * 100.0;
    assert!(
        (p - (a + b + g + own)).abs() < 1e-9,
        "{p} != {a} + {b} + {g} + {own}"
    );
    // The colours follow: p -10, A +10, B -10.
    assert_eq!(svg.one("p").fill, diff_color(-0.10).to_string());
    assert_eq!(svg.one("A").fill, diff_color(0.10).to_string());
    assert_eq!(svg.one("q").fill, diff_color(0.10).to_string());
}

#[test]
fn vanished_stacks_are_listed_with_their_before_share_largest_first() {
    let before = Builder::new(&["cycles"])
        .stack("app;main;keep", &[(50, 50)])
        .stack("app;main;old;deeper", &[(20, 20)])
        .stack("app;main;old", &[(5, 5)])
        .stack("app;legacy_init", &[(25, 25)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;main;keep", &[(10, 10)])
        .build();
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let (heading, rows, more) = gone_section(&raw);
    assert_eq!(
        heading,
        "Gone in AFTER: 2 call path(s) with cycles samples in BEFORE and none in AFTER, 50.00% of BEFORE:"
    );
    // Only the top of a vanished subtree is listed, with its inclusive share.
    let listed: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r.share.as_str(), r.label.as_str()))
        .collect();
    // Equal shares keep tree order (siblings by name): legacy_init before main.
    assert_eq!(
        listed,
        vec![("25.00%", "app;legacy_init"), ("25.00%", "app;main;old")]
    );
    assert!(rows[1].title.starts_with(
        "app;main;old\nbefore: 25 samples, 25 cycles (25.00%)\nafter: no cycles samples"
    ));
    assert!(more.is_none());
    let svg = parse(&raw, false);
    for gone in ["old", "deeper", "legacy_init"] {
        assert!(svg.named(gone).is_empty(), "{gone} is drawn");
    }
}

#[test]
fn the_gone_list_is_capped_with_a_count_of_the_rest() {
    let mut before = Builder::new(&["cycles"]);
    before.stack("app;main", &[(100, 100)]);
    for i in 0..25u64 {
        // f00 has 1 sample, f24 has 25: largest first means f24 first.
        before.stack(&format!("app;main;f{i:02}"), &[(i + 1, i + 1)]);
    }
    let before = before.build();
    let after = Builder::new(&["cycles"])
        .stack("app;main", &[(10, 10)])
        .build();
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let (heading, rows, more) = gone_section(&raw);
    assert!(
        heading.starts_with("Gone in AFTER: 25 call path(s)"),
        "{heading}"
    );
    assert_eq!(rows.len(), 20);
    assert_eq!(rows[0].label, "app;main;f24");
    assert_eq!(rows[19].label, "app;main;f05");
    // BEFORE total: 100 + 1 + ... + 25 = 425; the five left: 1 + ... + 5 = 15 = 3.53%.
    assert_eq!(more.as_deref(), Some("+5 more, 3.53% of BEFORE together"));
    assert_eq!(rows[0].share, format!("{:.2}%", 2500.0 / 425.0));
}

#[test]
fn nothing_gone_says_so() {
    let p = Builder::new(&["cycles"])
        .stack("app;main", &[(1, 1)])
        .build();
    let raw = render_diff_svg(
        &p,
        &Columns::new(0, None),
        &p,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let (heading, rows, more) = gone_section(&raw);
    assert_eq!(
        heading,
        "Gone in AFTER: none (every call path of BEFORE still has cycles samples)"
    );
    assert!(rows.is_empty() && more.is_none());
}

#[test]
fn widths_come_from_after() {
    let before = Builder::new(&["cycles"])
        .stack("app;main;a", &[(900, 900)])
        .stack("app;main;b", &[(100, 100)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;main;a", &[(10, 10)])
        .stack("app;main;b", &[(30, 30)])
        .stack("app;main", &[(5, 5)])
        .build();
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let svg = parse(&raw, false);
    let (all, main, a, b) = (svg.one("all"), svg.one("main"), svg.one("a"), svg.one("b"));
    assert_eq!((all.n, main.n, a.n, b.n), (45, 45, 10, 30));
    assert_eq!((a.s, b.s), (0, 10));
    let px = 1180.0 / 45.0;
    assert!((all.width - 1180.0).abs() < 0.006);
    assert!((b.x - (10.0 + 10.0 * px)).abs() < 0.006);
    assert!((b.width - 30.0 * px).abs() < 0.006);
    // The script's total is AFTER's.
    assert!(raw.contains(r#"<g id="frames" data-total="45" "#));
}

#[test]
fn frames_are_matched_by_name_along_the_path_across_files() {
    // Different modules (a renamed binary), different frame ids (interned in another order),
    // and a same-named function elsewhere in the tree that must stay apart.
    let before = Builder::new(&["cycles"])
        .stack("app;helper@bench-v1", &[(10, 10)])
        .stack("app;main@bench-v1;work@bench-v1", &[(30, 30)])
        .build();
    let after = Builder::new(&["cpu-clock"])
        .stack("app;main@bench-v2;work@bench-v2", &[(60, 60)])
        .stack("app;main@bench-v2;helper@bench-v2", &[(20, 20)])
        .build();
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let svg = parse(&raw, false);
    let work = svg.one("work");
    assert!(
        work.title
            .starts_with("work\nmodule: bench-v2\nmodule in BEFORE: bench-v1\nbefore: 30 samples, 30 cycles (75.00%)\nafter: 60 samples, 60 cycles (75.00%)"),
        "{}",
        work.title
    );
    assert_eq!(work.fill, DIFF_NEUTRAL.to_string());
    // main;helper is new; app;helper is gone.
    assert!(svg.one("helper").title.contains("(new in AFTER)"));
    let (_, rows, _) = gone_section(&raw);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].label, "app;helper");
    // Different event names are both given.
    assert!(
        svg.subtitle
            .starts_with("before: 40 samples · after: 80 samples (events cycles → cpu-clock)"),
        "{}",
        svg.subtitle
    );
}

#[test]
fn stall_shares_before_and_after_when_both_runs_have_them() {
    // hot: 20% stalled -> 35% stalled; overall 10% -> 17.5%.
    let before = Builder::new(&["cycles", "stalls"])
        .stack("app;hot", &[(50, 1000), (10, 200)])
        .stack("app;cool", &[(50, 1000), (0, 0)])
        .build();
    let after = Builder::new(&["cycles", "stalls"])
        .stack("app;hot", &[(50, 1000), (20, 350)])
        .stack("app;cool", &[(50, 1000), (0, 0)])
        .build();
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, Some(1)),
        &after,
        &Columns::new(0, Some(1)),
        &diff_opts(),
    );
    let svg = parse(&raw, false);
    assert!(
        svg.one("hot")
            .title
            .ends_with("\nstalled: 20.0% → 35.0% of cycles (+15.0 points)"),
        "{}",
        svg.one("hot").title
    );
    assert!(svg
        .one("cool")
        .title
        .ends_with("\nstalled: 0.0% → 0.0% of cycles (0.0 points)"));
    assert_eq!(
        svg.subtitle,
        "before: 100 samples · after: 100 samples (event cycles) · stalled: 10.0% → 17.5%"
    );
    // The colour is the cycles share, not the stall share: unchanged here.
    assert_eq!(svg.one("hot").fill, DIFF_NEUTRAL.to_string());

    // Only AFTER has a stall column: no stall line in tooltips, n/a in the subtitle.
    let plain = Builder::new(&["cycles"])
        .stack("app;hot", &[(50, 1000)])
        .stack("app;cool", &[(50, 1000)])
        .build();
    let svg = parse(
        &render_diff_svg(
            &plain,
            &Columns::new(0, None),
            &after,
            &Columns::new(0, Some(1)),
            &diff_opts(),
        ),
        false,
    );
    assert!(!svg.one("hot").title.contains("stalled"));
    assert!(
        svg.subtitle.ends_with(" · stalled: n/a → 17.5%"),
        "{}",
        svg.subtitle
    );
    // Neither: no stall part at all.
    let svg = diff(&plain, &plain);
    assert_eq!(
        svg.subtitle,
        "before: 100 samples · after: 100 samples (event cycles)"
    );
}

#[test]
fn legend_shows_the_fixed_scale_with_its_labels() {
    let p = Builder::new(&["cycles"])
        .stack("app;main", &[(1, 1)])
        .build();
    let raw = render_diff_svg(
        &p,
        &Columns::new(0, None),
        &p,
        &Columns::new(0, None),
        &diff_opts(),
    );
    let svg = parse(&raw, false);
    assert!(raw.contains(&format!(
        r#"<linearGradient id="diff-scale" x1="0" y1="0" x2="1" y2="0"><stop offset="0" stop-color="{DIFF_SHRANK}"/><stop offset="0.5" stop-color="{DIFF_NEUTRAL}"/><stop offset="1" stop-color="{DIFF_GREW}"/></linearGradient>"#
    )));
    assert!(raw.contains(r#"fill="url(#diff-scale)""#));
    assert!(svg.texts.iter().any(|t| t == "share change (points):"));
    for label in ["-20", "-10", "-5", "-1", "0", "+1", "+5", "+10", "+20"] {
        assert!(svg.texts.iter().any(|t| t == label), "legend label {label}");
    }
    // Labels sit at their scale positions: 1200 px wide, a 300 px bar from x = 450; +5 points
    // is half way from the middle (600) to the right end (750).
    assert!(raw.contains(r#"<text x="675.0" y="79" text-anchor="middle">+5</text>"#));
    assert!(raw.contains(r#"<text x="750.0" y="79" text-anchor="middle">+20</text>"#));
    // A narrow image keeps only the ends and the middle.
    let o = DiffOptions {
        width: 400,
        ..diff_opts()
    };
    let narrow = parse(
        &render_diff_svg(&p, &Columns::new(0, None), &p, &Columns::new(0, None), &o),
        false,
    );
    assert!(narrow.texts.iter().any(|t| t == "+20"));
    assert!(!narrow.texts.iter().any(|t| t == "+5"));
}

#[test]
fn output_is_deterministic_and_independent_of_input_order() {
    let stacks: [(&str, [(u64, u64); 2]); 6] = [
        ("app;main;b", [(3, 30), (1, 10)]),
        ("app;main;a@x.so", [(4, 40), (4, 40)]),
        ("app;main;a@y.so", [(1, 10), (0, 0)]),
        ("app;main", [(2, 20), (0, 0)]),
        ("other;x@libx.so", [(7, 70), (2, 20)]),
        ("app;main;a@x.so;deep", [(1, 10), (0, 0)]),
    ];
    let build = |rev: bool, scale: u64, skip: usize| {
        let mut b = Builder::new(&["cycles", "stalls"]);
        let mut list: Vec<_> = stacks
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .collect();
        if rev {
            list.reverse();
        }
        for (_, (s, c)) in list {
            b.stack(s, &[(c[0].0 * scale, c[0].1), c[1]]);
        }
        b.build()
    };
    let (b_fwd, b_rev) = (build(false, 1, 99), build(true, 1, 99));
    let (a_fwd, a_rev) = (build(false, 3, 4), build(true, 3, 4));
    let once = render_diff_svg(
        &b_fwd,
        &Columns::new(0, Some(1)),
        &a_fwd,
        &Columns::new(0, Some(1)),
        &diff_opts(),
    );
    assert_eq!(
        once,
        render_diff_svg(
            &b_fwd,
            &Columns::new(0, Some(1)),
            &a_fwd,
            &Columns::new(0, Some(1)),
            &diff_opts()
        )
    );
    assert_eq!(
        once,
        render_diff_svg(
            &b_rev,
            &Columns::new(0, Some(1)),
            &a_rev,
            &Columns::new(0, Some(1)),
            &diff_opts()
        )
    );
    // The two a's of one run are one frame (matched by name).
    let svg = parse(&once, false);
    // Widths are AFTER's summed periods (the scale multiplies samples only): 40 + 10 + 10.
    assert_eq!(svg.one("a").n, 60);
}

#[test]
fn names_are_escaped_everywhere() {
    let nasty = r#"operator<<(std::ostream&, Foo<"a", 'b'> const&)"#;
    let before = Builder::new(&["c<y>cles"])
        .stack(&format!("a&b;{nasty}@lib<x>.so"), &[(5, 5)])
        .stack("a&b;gone<T>&", &[(5, 5)])
        .build();
    let after = Builder::new(&["c<y>cles"])
        .stack(&format!("a&b;{nasty}@lib<x>.so"), &[(5, 5)])
        .build();
    let o = DiffOptions {
        title: "Diff <&> \"q\"".into(),
        subtitle: Some("run 'a' & <b>".into()),
        ..diff_opts()
    };
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &o,
    );
    let svg = parse(&raw, false);
    assert!(svg.one(nasty).title.contains("module: lib<x>.so"));
    assert!(svg.texts.iter().any(|t| t == "Diff <&> \"q\""));
    assert!(svg.texts.iter().any(|t| t == "run 'a' & <b>"));
    assert!(svg.subtitle.contains("(event c<y>cles)"));
    let (_, rows, _) = gone_section(&raw);
    assert_eq!(rows[0].label, "a&b;gone<T>&");
    assert!(!raw.contains(nasty) && !raw.contains("gone<T>"));
}

#[test]
fn inverted_puts_the_root_on_top_and_keeps_the_list_under_the_frames() {
    let before = Builder::new(&["cycles"])
        .stack("app;main;a", &[(1, 1)])
        .stack("app;gone", &[(1, 1)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;main;a", &[(3, 3)])
        .build();
    let o = DiffOptions {
        inverted: true,
        ..diff_opts()
    };
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &o,
    );
    let icicle = parse(&raw, true);
    assert!(icicle.one("all").y < icicle.one("a").y);
    assert_eq!(icicle.one("a").depth, 3);
    let doc = roxmltree::Document::parse(&raw).expect("XML");
    let heading_y: f64 = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("h"))
        .and_then(|n| n.attribute("y"))
        .expect("heading")
        .parse()
        .expect("y");
    assert!(heading_y > icicle.one("a").y + 15.0);
}

#[test]
fn min_width_drops_narrow_frames_but_not_from_the_totals() {
    let before = Builder::new(&["cycles"])
        .stack("app;big", &[(5_000, 5_000)])
        .stack("app;tiny", &[(5_000, 5_000)])
        .build();
    let after = Builder::new(&["cycles"])
        .stack("app;big", &[(9_999, 9_999)])
        .stack("app;tiny", &[(1, 1)])
        .build();
    let o = DiffOptions {
        min_width: 0.2,
        ..diff_opts()
    };
    let raw = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &o,
    );
    let svg = parse(&raw, false);
    assert!(svg.named("tiny").is_empty());
    assert_eq!(svg.one("all").n, 10_000);
    // Too thin to draw is not gone.
    let (heading, _, _) = gone_section(&raw);
    assert!(heading.starts_with("Gone in AFTER: none"));
}

#[test]
fn errors_name_the_run_at_fault() {
    let p = Builder::new(&["cycles"])
        .stack("app;main", &[(1, 1)])
        .build();
    let empty = Builder::new(&["cycles"]).build();
    let mut out = Vec::new();
    let err = |r: Result<(), RenderError>| match r {
        Err(e) => e,
        Ok(()) => panic!("expected an error"),
    };
    let e = err(render_diff(
        &empty,
        &Columns::new(0, None),
        &p,
        &Columns::new(0, None),
        &diff_opts(),
        &mut out,
    ));
    assert_eq!(
        e.to_string(),
        "BEFORE profile: no samples of event `cycles` in the profile: there is nothing to draw"
    );
    let e = err(render_diff(
        &p,
        &Columns::new(0, None),
        &p,
        &Columns::new(0, Some(1)),
        &diff_opts(),
        &mut out,
    ));
    assert!(matches!(
        &e,
        RenderError::DiffSide { side: "AFTER", error } if matches!(**error, RenderError::NoSuchEvent { index: 1, count: 1 })
    ));
    let o = DiffOptions {
        width: 10,
        ..diff_opts()
    };
    let e = err(render_diff(
        &p,
        &Columns::new(0, None),
        &p,
        &Columns::new(0, None),
        &o,
        &mut out,
    ));
    assert!(matches!(e, RenderError::WidthTooSmall(10)));
    assert!(out.is_empty(), "nothing is written when validation fails");
}

#[test]
fn defaults_and_the_embedded_script() {
    let d = DiffOptions::default();
    assert_eq!(d.title, "Differential CPI Flame Graph");
    assert_eq!((d.width, d.min_width, d.inverted), (1200, 0.1, false));
    assert!(d.subtitle.is_none());
    let p = Builder::new(&["cycles"])
        .stack("app;main", &[(1, 1)])
        .build();
    let raw = render_diff_svg(&p, &Columns::new(0, None), &p, &Columns::new(0, None), &d);
    let svg = parse(&raw, false);
    assert!(svg
        .texts
        .iter()
        .any(|t| t == "Differential CPI Flame Graph"));
    // The same script as the CPI graph, and it parses.
    let cpi = parse(
        &common::render(&p, &Columns::new(0, None), &common::opts()),
        false,
    );
    assert_eq!(svg.script, cpi.script);
    assert!(svg.script.contains("function zoom"));
    node_check(&svg.script, "diff");
}

/// Both runs with the wall-time columns: widths are AFTER's wall time, colours the change of
/// each frame's share of its run's wall time, tooltips both runs' on-CPU, runnable and
/// blocked time. Here the cycles (cpu-clock) shares do not move while the wall shares do:
/// BEFORE: compute 100 ms on-CPU, sleep 300 ms blocked (wall shares 25%, 75%); AFTER:
/// compute 300 ms on-CPU + 20 ms runnable, sleep 80 ms blocked (80%, 20%).
#[test]
fn wall_time_runs_are_drawn_by_wall_time() {
    use cpiflame_profile::wall::{WallColumns, BLOCKED, ON_CPU, RUNNABLE};
    let columns = ["cpu-clock", ON_CPU, RUNNABLE, BLOCKED];
    const MS: u64 = 1_000_000;
    let before = Builder::new(&columns)
        .stack(
            "app;main;compute",
            &[(10, 10), (10, 100 * MS), (0, 0), (0, 0)],
        )
        .stack("app;main;sleep", &[(10, 10), (0, 0), (0, 0), (1, 300 * MS)])
        .build();
    let after = Builder::new(&columns)
        .stack(
            "app;main;compute",
            &[(30, 30), (30, 300 * MS), (2, 20 * MS), (0, 0)],
        )
        .stack("app;main;sleep", &[(30, 30), (0, 0), (0, 0), (1, 80 * MS)])
        .build();
    let wall = |p: &Profile| Columns {
        width: WallColumns::of(p).map_or(Width::Cycles, Width::Wall),
        ..Columns::new(0, None)
    };
    let text = render_diff_svg(&before, &wall(&before), &after, &wall(&after), &diff_opts());
    let svg = parse(&text, false);
    let (compute, sleep, all) = (svg.one("compute"), svg.one("sleep"), svg.one("all"));
    // Widths: AFTER's wall nanoseconds.
    assert_eq!(all.n, 400 * MS);
    assert_eq!(compute.n, 320 * MS);
    assert_eq!(sleep.n, 80 * MS);
    assert!(
        (compute.width / all.width - 0.8).abs() < 1e-3,
        "{compute:?}"
    );
    // Colours: +55 and -55 points of wall time (saturated); cycles shares were 50% → 50%.
    assert_eq!(compute.fill, diff_color(0.55).to_string());
    assert_eq!(sleep.fill, diff_color(-0.55).to_string());
    assert_eq!(
        compute.title,
        "compute\nbefore: wall 100 ms (25.00%): on-CPU 100 ms, runnable 0 ms, blocked 0 ms\
         \nafter: wall 320 ms (80.00%): on-CPU 300 ms, runnable 20.0 ms, blocked 0 ms\
         \ncycles samples: 10 → 30\nchange: +55.00 points of wall time (+220.0% relative)"
    );
    assert!(
        sleep.title.contains(
            "\nbefore: wall 300 ms (75.00%): on-CPU 0 ms, runnable 0 ms, blocked 300 ms\
             \nafter: wall 80.0 ms (20.00%): on-CPU 0 ms, runnable 0 ms, blocked 80.0 ms\n"
        ),
        "{}",
        sleep.title
    );
    assert!(
        svg.subtitle.contains(" · wall time: 400 ms → 400 ms"),
        "{}",
        svg.subtitle
    );
    assert!(text.contains("wall-time share change (points):"));
    // One side without the wall-time columns: the cycles picture, byte for byte.
    let cycles_only = render_diff_svg(
        &before,
        &Columns::new(0, None),
        &after,
        &Columns::new(0, None),
        &diff_opts(),
    );
    assert_eq!(
        render_diff_svg(
            &before,
            &wall(&before),
            &after,
            &Columns::new(0, None),
            &diff_opts()
        ),
        cycles_only
    );
    assert_eq!(parse(&cycles_only, false).one("compute").n, 30);
}

/// Wall time in BEFORE only: the vanished list counts it in wall time.
#[test]
fn wall_time_gone_in_after_is_listed_with_its_three_parts() {
    use cpiflame_profile::wall::{WallColumns, BLOCKED, ON_CPU, RUNNABLE};
    let columns = ["cpu-clock", ON_CPU, RUNNABLE, BLOCKED];
    let before = Builder::new(&columns)
        .stack("app;main;keep", &[(1, 1), (1, 1_000_000), (0, 0), (0, 0)])
        .stack(
            "app;main;wait",
            &[(1, 1), (0, 0), (1, 500_000), (1, 2_500_000)],
        )
        .build();
    let after = Builder::new(&columns)
        .stack("app;main;keep", &[(1, 1), (1, 1_000_000), (0, 0), (0, 0)])
        .build();
    let wall = |p: &Profile| Columns {
        width: WallColumns::of(p).map_or(Width::Cycles, Width::Wall),
        ..Columns::new(0, None)
    };
    let text = render_diff_svg(&before, &wall(&before), &after, &wall(&after), &diff_opts());
    assert!(
        text.contains("Gone in AFTER: 1 call path(s) with wall time in BEFORE and none in AFTER, 75.00% of BEFORE:"),
        "{:?}",
        gone_section(&text)
    );
    assert!(
        text.contains("\nbefore: wall 3.00 ms (75.00%): on-CPU 0 ms, runnable 0.500 ms, blocked 2.50 ms\nafter: no wall time"),
        "{:?}",
        gone_section(&text)
    );
}
