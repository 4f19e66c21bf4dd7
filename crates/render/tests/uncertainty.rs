//! Intervals in the CPI graph: each frame's tooltip gives its stall share's (or CPI's)
//! interval, as `cpiflame_profile::interval::ratio_interval` computes it; a frame whose
//! interval is too wide for the colour scale is washed out and the legend says so; a
//! confident frame's colour is the one drawn without intervals.

mod common;

use common::{opts, parse, render, Builder};
use cpiflame_profile::interval::ratio_interval;
use cpiflame_profile::{Column, Columns, Count, Profile, Width};
use cpiflame_render::{cpi_color, stall_color, uncertain_color, Options};

fn c(samples: u64) -> Count {
    Count {
        samples,
        period: samples * 1000,
    }
}

/// `hot` has 2,000 cycles samples, 800 stalled; `thin` 20, 6 stalled.
fn profile() -> Profile {
    let mut b = Builder::new(&["cycles", "stalls"]);
    b.stack("app;main;hot", &[(2000, 2_000_000), (800, 800_000)]);
    b.stack("app;main;thin", &[(20, 20_000), (6, 6_000)]);
    b.build()
}

/// The two percentages after `prefix` in `title`: `LO% to HI%)`.
fn shown(title: &str, prefix: &str) -> (f64, f64) {
    let rest = title
        .split_once(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in {title}"))
        .1;
    let (lo, rest) = rest.split_once("% to ").unwrap();
    let hi = rest.split_once("%)").unwrap().0;
    (lo.parse().unwrap(), hi.parse().unwrap())
}

fn with_confidence(confidence: f64) -> Options {
    Options {
        confidence: Some(confidence),
        ..opts()
    }
}

#[test]
fn tooltips_give_the_interval_and_thin_frames_are_washed_out() {
    let p = profile();
    let svg = render(&p, &Columns::new(0, Some(1)), &with_confidence(0.95));
    let parsed = parse(&svg, false);
    let all_stalls = c(806);

    let hot = parsed.one("hot");
    // Counts this large take the closed-form Wilson interval, within 1% of mid-p's bounds
    // (`cpiflame_profile::ratios`), then rounded to a tenth of a point.
    let i = ratio_interval(c(800), c(2000), all_stalls, 0.95).unwrap();
    let (lo, hi) = shown(&hot.title, "stalled: 40.0% of cycles (95% interval ");
    assert!(
        (lo - 100.0 * i.lo).abs() <= 0.01 * 100.0 * i.lo + 0.05,
        "{lo} {i:?}"
    );
    assert!(
        (hi - 100.0 * i.hi).abs() <= 0.01 * 100.0 * i.hi + 0.05,
        "{hi} {i:?}"
    );
    // 2,000 samples: confident, the colour of its share as without intervals.
    assert_eq!(hot.fill, stall_color(Some(0.4)).to_string());
    assert!(!hot.title.contains("washed out"));

    let thin = parsed.one("thin");
    let i = ratio_interval(c(6), c(20), all_stalls, 0.95).unwrap();
    assert!(
        i.hi - i.lo > 0.25,
        "the fixture's thin frame is uncertain: {i:?}"
    );
    assert!(
        thin.title.contains(&format!(
            "(95% interval {:.1}% to {:.1}%)",
            i.lo * 100.0,
            i.hi * 100.0
        )),
        "{}",
        thin.title
    );
    assert_eq!(
        thin.fill,
        uncertain_color(stall_color(Some(0.3))).to_string()
    );
    assert!(thin.title.contains("drawn washed out"), "{}", thin.title);
    // The legend names the washed-out colour.
    assert!(svg.contains("too few samples to place on the scale"));

    // Without intervals, every frame has the colour of its share and no legend entry.
    let plain = parse(&render(&p, &Columns::new(0, Some(1)), &opts()), false);
    assert_eq!(plain.one("thin").fill, stall_color(Some(0.3)).to_string());
    assert!(!plain.one("thin").title.contains("interval"));
}

#[test]
fn a_lower_confidence_narrows_the_interval_until_the_frame_is_placed() {
    let p = profile();
    // At 50% the thin frame's interval is narrower than a quarter of the scale.
    let i = ratio_interval(c(6), c(20), c(806), 0.5).unwrap();
    assert!(i.hi - i.lo <= 0.25, "{i:?}");
    let svg = render(&p, &Columns::new(0, Some(1)), &with_confidence(0.5));
    let parsed = parse(&svg, false);
    assert_eq!(parsed.one("thin").fill, stall_color(Some(0.3)).to_string());
    assert!(parsed.one("thin").title.contains("(50% interval"));
    assert!(!svg.contains("too few samples to place on the scale"));
}

#[test]
fn cpi_coloured_frames_are_washed_out_when_their_interval_spans_an_octave() {
    // cycles and instructions, no stalls: the colour is the CPI.
    let mut b = Builder::new(&["cycles", "instructions"]);
    b.stack("app;main;hot", &[(4000, 4_000_000), (2000, 2_000_000)]);
    b.stack("app;main;thin", &[(4, 4_000), (2, 2_000)]);
    let p = b.build();
    let svg = render(
        &p,
        &Columns {
            instructions: Some(Column(1)),
            ..Columns::new(0, None)
        },
        &with_confidence(0.95),
    );
    let parsed = parse(&svg, false);
    assert_eq!(parsed.one("hot").fill, cpi_color(Some(2.0)).to_string());
    assert_eq!(
        parsed.one("thin").fill,
        uncertain_color(cpi_color(Some(2.0))).to_string()
    );
    let i = ratio_interval(
        Count {
            samples: 4,
            period: 4_000,
        },
        Count {
            samples: 2,
            period: 2_000,
        },
        Count {
            samples: 4004,
            period: 4_004_000,
        },
        0.95,
    )
    .unwrap();
    let hi = if i.hi.is_finite() {
        format!("{:.2}", i.hi)
    } else {
        "∞".to_string()
    };
    assert!(
        parsed
            .one("thin")
            .title
            .contains(&format!("(95% interval {:.2} to {hi})", i.lo)),
        "{}",
        parsed.one("thin").title
    );
}

#[test]
fn the_wall_time_graph_gives_the_stall_share_interval_in_its_tooltips() {
    let mut b = Builder::new(&[
        "cycles",
        "stalls",
        cpiflame_profile::wall::ON_CPU,
        cpiflame_profile::wall::RUNNABLE,
        cpiflame_profile::wall::BLOCKED,
    ]);
    b.stack(
        "app;main;hot",
        &[(20, 20_000), (6, 6_000), (20, 2_000), (0, 0), (1, 8_000)],
    );
    let p = b.build();
    let wall = cpiflame_profile::WallColumns::of(&p).expect("wall columns");
    let svg = render(
        &p,
        &Columns {
            width: Width::Wall(wall),
            ..Columns::new(0, Some(1))
        },
        &with_confidence(0.95),
    );
    let i = ratio_interval(c(6), c(20), c(6), 0.95).unwrap();
    let hot = parse(&svg, false);
    let title = &hot.one("hot").title;
    assert!(
        title.contains(&format!(
            "stalled: 30.0% of cycles (95% interval {:.1}% to {:.1}%)",
            i.lo * 100.0,
            i.hi * 100.0
        )),
        "{title}"
    );
}
