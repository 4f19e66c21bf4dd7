//! `render_classic`: inferno's normalised differential flame graph (stalls before, cycles after).

mod common;

use common::{parse_xml_ok, Builder};
use cpiflame_profile::{Columns, Profile};
use cpiflame_render::{render_classic, Options, RenderError};

fn classic(profile: &Profile, stalls: Option<usize>, opts: &Options) -> String {
    let mut out = Vec::new();
    if let Err(e) = render_classic(profile, &Columns::new(0, stalls), opts, &mut out) {
        panic!("render_classic failed: {e}");
    }
    let svg = String::from_utf8(out).expect("UTF-8");
    parse_xml_ok(&svg);
    svg
}

/// Stalls are sampled ten times as often as cycles, so only normalisation makes them comparable:
/// `work` has 80% of the cycles but only 20% of the stalls (red), `wait` 20% of the cycles and
/// 80% of the stalls (blue).
fn profile() -> Profile {
    Builder::new(&["cycles", "stalls"])
        .stack("app;main;work", &[(80, 80), (200, 200)])
        .stack("app;main;wait<T>", &[(20, 20), (800, 800)])
        .build()
}

/// The `fill` of the `<rect>` following the `<title>` that starts with `name (`.
fn fill_of<'a>(svg: &'a str, name: &str) -> &'a str {
    let at = svg
        .find(&format!("<title>{name} ("))
        .unwrap_or_else(|| panic!("no frame {name} in\n{svg}"));
    let rest = &svg[at..];
    let f = rest.find("fill=\"").expect("fill") + 6;
    let end = rest[f..].find('"').expect("end quote");
    &rest[f..f + end]
}

#[test]
fn normalised_differential_colours_cycles_heavy_red_and_stall_heavy_blue() {
    let svg = classic(&profile(), Some(1), &Options::default());
    // Widths are cycles samples; deltas are cycles minus normalised stalls, as a share of all.
    assert!(svg.contains("<title>work (80 samples, 80.00%; +60.00%)</title>"));
    assert!(svg.contains("<title>wait&lt;T&gt; (20 samples, 20.00%; -60.00%)</title>"));
    // Without -n, `work` would be blue (80 - 200 < 0); with the roles swapped, widths would be
    // stall samples and `work` blue again.
    assert_eq!(fill_of(&svg, "work"), "rgb(255,100,100)");
    assert_eq!(fill_of(&svg, "wait&lt;T&gt;"), "rgb(100,100,255)");
    assert!(svg.contains("CPI Flame Graph"));
    assert!(svg.contains("red: more cycles than stalls"));
}

#[test]
fn classic_output_is_deterministic() {
    let p = profile();
    let o = Options {
        subtitle: Some("extra".into()),
        ..Options::default()
    };
    let a = classic(&p, Some(1), &o);
    assert_eq!(a, classic(&p, Some(1), &o));
    assert!(a.contains("extra"));
    let single = classic(&p, None, &o);
    assert_eq!(single, classic(&p, None, &o));
    assert!(single.contains("no stall data for this file"));
    assert!(single.contains("<title>work (80 samples, 80.00%)</title>"));
}

#[test]
fn classic_passes_width_direction_and_min_width() {
    let p = Builder::new(&["cycles", "stalls"])
        .stack("app;big", &[(9_999, 1), (1, 1)])
        .stack("app;tiny", &[(1, 1), (1, 1)])
        .build();
    let o = Options {
        width: 900,
        min_width: 0.5,
        inverted: true,
        ..Options::default()
    };
    let svg = classic(&p, Some(1), &o);
    assert!(svg.contains(r#"width="900""#));
    assert!(svg.contains("big ("));
    assert!(
        !svg.contains("tiny ("),
        "0.088 px frame kept despite min_width 0.5"
    );
    let kept = classic(
        &p,
        Some(1),
        &Options {
            min_width: 0.0,
            ..o
        },
    );
    assert!(kept.contains("tiny ("));
}

#[test]
fn classic_refuses_empty_profiles_before_writing() {
    let p = Builder::new(&["cycles", "stalls"])
        .stack("app;x", &[(0, 0), (3, 3)])
        .build();
    let mut out = Vec::new();
    let r = render_classic(&p, &Columns::new(0, Some(1)), &Options::default(), &mut out);
    assert!(matches!(r, Err(RenderError::NoSamples { .. })));
    assert!(out.is_empty());
}
