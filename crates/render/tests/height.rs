//! A graph's height comes from the frames it draws: a stack narrower than `min_width` adds
//! no rows (it is not drawn), one wider than it does, in the CPI, differential and memory
//! graphs alike. (Issue 21, item 14: the demo's `diff.svg` showed rows of frames 0.2 to 3 px
//! wide; those are drawn, at the default `min_width` of 0.1 px, and zoom shows them.)

mod common;

use common::{render_diff_svg, Builder};
use cpiflame_profile::{Columns, Profile};
use cpiflame_render::{render_cpi, render_mem, DiffOptions, Options, ServedClass};

/// The `height` of an SVG's root element.
fn height(svg: &str) -> u32 {
    let at = svg.find(" height=\"").expect("a height") + 9;
    svg[at..].split('"').next().unwrap().parse().unwrap()
}

/// `app;main;work` with 10,000 samples, and, with `deep`, a stack 20 frames deeper with
/// `deep` samples beside it.
fn profile(deep: u64) -> Profile {
    let mut b = Builder::new(&["cycles"]);
    b.stack("app;main;work", &[(10_000, 10_000)]);
    if deep > 0 {
        let frames: Vec<String> = (0..20).map(|i| format!("!k{i}")).collect();
        b.stack(
            &format!("app;main;work;{}", frames.join(";")),
            &[(deep, deep)],
        );
    }
    b.build()
}

fn cpi(p: &Profile, min_width: f64) -> u32 {
    let opts = Options {
        min_width,
        ..Options::default()
    };
    let mut out = Vec::new();
    render_cpi(p, &Columns::new(0, None), &opts, &mut out).unwrap();
    height(&String::from_utf8(out).unwrap())
}

fn diff(p: &Profile, min_width: f64) -> u32 {
    let opts = DiffOptions {
        min_width,
        ..DiffOptions::default()
    };
    height(&render_diff_svg(
        &profile(0),
        &Columns::new(0, None),
        p,
        &Columns::new(0, None),
        &opts,
    ))
}

fn mem(p: &Profile, min_width: f64) -> u32 {
    let opts = Options {
        min_width,
        ..Options::default()
    };
    let classes = [ServedClass {
        name: "L1".to_string(),
        distance: Some(0.0),
    }];
    let mut out = Vec::new();
    render_mem(p, &classes, &opts, &mut out).unwrap();
    height(&String::from_utf8(out).unwrap())
}

#[test]
fn rows_come_from_frames_at_least_min_width_wide() {
    // 1180 px for 10,001 samples: one sample is 0.118 px, ten are 1.18 px.
    for (graph, draw) in [
        ("cpi", cpi as fn(&Profile, f64) -> u32),
        ("diff", diff),
        ("mem", mem),
    ] {
        let flat = draw(&profile(0), 0.1);
        // Narrower than min_width: not drawn, no rows.
        assert_eq!(draw(&profile(1), 0.5), flat, "{graph}");
        assert_eq!(draw(&profile(10), 2.0), flat, "{graph}");
        // Drawn: 20 rows of 16 px more.
        assert_eq!(draw(&profile(1), 0.1), flat + 20 * 16, "{graph}");
        assert_eq!(draw(&profile(10), 1.0), flat + 20 * 16, "{graph}");
    }
}
