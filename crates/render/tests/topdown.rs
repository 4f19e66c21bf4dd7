//! The top-down picture on a hand-built profile of Golden Cove's columns (Sapphire Rapids:
//! `slots`, `cycles`, the four level-1 and four level-2 metrics) with dyadic sums, so every
//! fraction is exact: fills equal the colour function on the fractions `Plan::apply` gives
//! AND on the fractions worked out here by hand from spr-metrics.json's formulas; tooltips
//! carry the split; the legend has the swatches it should; a frame with 3 cycles samples is
//! washed out and one with 256 is not; `--topdown-color backend` is the stall scale.

mod common;

use common::{opts, parse, Builder};
use cpiflame_profile::interval::mid_p;
use cpiflame_profile::topdown::{plan, Category, Cpu, Machine, Plan};
use cpiflame_profile::{Columns, Profile};
use cpiflame_render::{
    render_topdown, stall_color, topdown_color, topdown_intensity, uncertain_color, Options,
    TopdownColour, TopdownLook, TOPDOWN_BACKEND, TOPDOWN_RETIRING,
};

const NAMES: [&str; 10] = [
    "slots",
    "cycles",
    "topdown-retiring",
    "topdown-bad-spec",
    "topdown-fe-bound",
    "topdown-be-bound",
    "topdown-heavy-ops",
    "topdown-br-mispredict",
    "topdown-fetch-lat",
    "topdown-mem-bound",
];

/// Summed periods of `hot` (256 cycles samples) and `thin` (3), in NAMES' order.
const HOT: [u64; 10] = [1024, 256_000, 64, 32, 32, 128, 16, 16, 16, 96];
const THIN: [u64; 10] = [512, 3_000, 48, 16, 40, 24, 8, 8, 8, 8];

fn profile(with_thin: bool) -> Profile {
    let mut b = Builder::new(&NAMES);
    let counts = |p: [u64; 10], samples: u64| -> Vec<(u64, u64)> {
        p.iter()
            .enumerate()
            .map(|(i, &v)| (if i == 1 { samples } else { 1 }, v))
            .collect()
    };
    b.stack("app;main;hot", &counts(HOT, 256));
    if with_thin {
        b.stack("app;main;thin", &counts(THIN, 3));
    }
    b.build()
}

fn spr(names: &[&str]) -> Plan {
    plan(
        names,
        &Machine::of(Cpu::from_perf_cpuid("GenuineIntel,6,143,8")),
    )
    .unwrap()
}

/// The top-down look and the options of a picture.
fn look(plan: Plan, colour: TopdownColour, confidence: Option<f64>) -> (TopdownLook, Options) {
    let options = Options {
        confidence,
        ..opts()
    };
    (TopdownLook { plan, colour }, options)
}

/// The top-down picture of `profile` with `look`.
fn render(profile: &Profile, columns: &Columns, look: &(TopdownLook, Options)) -> String {
    let mut out = Vec::new();
    if let Err(e) = render_topdown(profile, columns, &look.0, &look.1, &mut out) {
        panic!("render_topdown failed: {e}");
    }
    String::from_utf8(out).expect("SVG is UTF-8")
}

/// Golden Cove level 1 by hand (spr-metrics.json without UOP_DROPPING): each metric over
/// the four's sum, bad speculation `max(1 − (FE + BE + RET), 0)`. [ret, bs, fe, be].
fn by_hand(p: [u64; 10]) -> [f64; 4] {
    let sum = (p[2] + p[3] + p[4] + p[5]) as f64;
    let (ret, fe, be) = (p[2] as f64 / sum, p[4] as f64 / sum, p[5] as f64 / sum);
    [ret, (1.0 - (ret + fe + be)).max(0.0), fe, be]
}

#[test]
fn dominant_fills_tooltips_and_legend_follow_the_planted_fractions() {
    let p = profile(true);
    let plan = spr(&NAMES);
    let svg = render(
        &p,
        &Columns::new(1, None),
        &look(plan.clone(), TopdownColour::Dominant, Some(0.95)),
    );
    let parsed = parse(&svg, false);

    // hot: back end 128/256 = 1/2, retiring 1/4, front end 1/8, bad spec the rest 1/8;
    // memory bound 96/256 = 3/8 of it, core bound the rest 1/8: memory bound's shade at
    // intensity (1/2 − 1/4) / (3/4) = 1/3.
    assert_eq!(by_hand(HOT), [0.25, 0.125, 0.125, 0.5]);
    let b = plan.apply(&HOT).unwrap();
    assert_eq!(
        [
            b.retiring,
            b.bad_speculation,
            b.frontend_bound,
            b.backend_bound
        ],
        by_hand(HOT)
    );
    let hot = parsed.one("hot");
    let want = topdown_intensity(TOPDOWN_BACKEND[1], 1.0 / 3.0);
    assert_eq!(hot.fill, want.to_string());
    assert_eq!(
        hot.fill,
        topdown_color(Some(&b), TopdownColour::Dominant).to_string()
    );
    assert!(
        hot.title.contains(
            "top-down: retiring 25.0% · bad spec 12.5% · front end 12.5% · back end 50.0%"
        ),
        "{}",
        hot.title
    );
    assert!(
        hot.title
            .contains("back end: memory bound 37.5% · core bound 12.5%"),
        "{}",
        hot.title
    );
    // 256 samples: the binomial bound on its back-end share (128 of 256) stays above the
    // runner-up's 1/4: not washed out.
    let i = mid_p(128, 256, 0.95).unwrap();
    assert!(i.lo > 0.25, "{i:?}");
    assert!(!hot.title.contains("washed out"), "{}", hot.title);

    // thin: retiring 48/128 = 3/8, front end 5/16, back end 3/16, bad spec 1/8; heavy 1/16
    // so light operations (5/16) dominate: light operations' shade. 3 samples: the bound
    // on 3/8 of 3 samples holds the front end's 5/16, so the dominant category is not known.
    assert_eq!(by_hand(THIN), [0.375, 0.125, 0.3125, 0.1875]);
    let thin = parsed.one("thin");
    let i = mid_p(1, 3, 0.95).unwrap();
    assert!(i.contains(0.3125), "{i:?}");
    let shade = topdown_intensity(TOPDOWN_RETIRING[2], (0.375 - 0.25) / 0.75);
    assert_eq!(thin.fill, uncertain_color(shade).to_string());
    assert!(
        thin.title.contains(
            "dominant category uncertain (the runner-up is within its interval): drawn washed out"
        ),
        "{}",
        thin.title
    );

    // main: both stacks, each once: the sums' fractions.
    let both: [u64; 10] = std::array::from_fn(|k| HOT[k] + THIN[k]);
    let main = parsed.one("main");
    let b = plan.apply(&both).unwrap();
    assert_eq!(
        main.fill,
        topdown_color(Some(&b), TopdownColour::Dominant).to_string()
    );
    let [ret, bs, fe, be] = by_hand(both);
    let split = format!(
        "top-down: retiring {:.1}% · bad spec {:.1}% · front end {:.1}% · back end {:.1}%",
        100.0 * ret,
        100.0 * bs,
        100.0 * fe,
        100.0 * be
    );
    assert!(main.title.contains(&split), "{split} in {}", main.title);
    // The statistics line is the whole profile's split.
    assert!(parsed.subtitle.contains(&split), "{}", parsed.subtitle);

    // Legend: the four categories, the level-2 shades, the washed-out entry.
    for label in [
        "retiring",
        "bad spec",
        "front end",
        "back end",
        "memory bound",
        "light operations",
        "dominant category uncertain",
    ] {
        assert!(parsed.texts.iter().any(|t| t == label), "no {label:?}");
    }
    assert!(!parsed.texts.iter().any(|t| t == "SMT contention"));

    // Byte-determinism.
    let again = render(
        &p,
        &Columns::new(1, None),
        &look(plan.clone(), TopdownColour::Dominant, Some(0.95)),
    );
    assert_eq!(svg, again);
}

#[test]
fn legend_leaves_out_what_is_not_drawn() {
    // hot alone: no washed-out entry. Level-1 columns alone: no level-2 shades, the base hue.
    let p = profile(false);
    let plan = spr(&NAMES[..6]);
    let svg = render(
        &p,
        &Columns::new(1, None),
        &look(plan, TopdownColour::Dominant, Some(0.95)),
    );
    let parsed = parse(&svg, false);
    for label in ["retiring", "bad spec", "front end", "back end"] {
        assert!(parsed.texts.iter().any(|t| t == label), "no {label:?}");
    }
    for label in [
        "memory bound",
        "light operations",
        "dominant category uncertain",
    ] {
        assert!(!parsed.texts.iter().any(|t| t == label), "{label:?}");
    }
    let hot = parsed.one("hot");
    assert_eq!(
        hot.fill,
        topdown_intensity(TOPDOWN_BACKEND[0], 1.0 / 3.0).to_string()
    );
    assert!(!hot.title.contains("memory bound"), "{}", hot.title);
}

#[test]
fn one_category_is_its_share_on_the_stall_scale() {
    let p = profile(true);
    let plan = spr(&NAMES);
    let backend = Category::parse("backend", &plan).unwrap();
    assert_eq!(backend, Category::BackendBound);
    let svg = render(
        &p,
        &Columns::new(1, None),
        &look(plan.clone(), TopdownColour::Category(backend), None),
    );
    let parsed = parse(&svg, false);
    assert_eq!(parsed.one("hot").fill, stall_color(Some(0.5)).to_string());
    assert_eq!(
        parsed.one("thin").fill,
        stall_color(Some(0.1875)).to_string()
    );
    let both: [u64; 10] = std::array::from_fn(|k| HOT[k] + THIN[k]);
    assert_eq!(
        parsed.one("main").fill,
        stall_color(Some(by_hand(both)[3])).to_string()
    );
    assert!(parsed.texts.iter().any(|t| t == "back end share:"));
    // Level 2 by its name; an unknown name lists the valid ones.
    assert_eq!(
        Category::parse("memory-bound", &plan),
        Ok(Category::Level2(4))
    );
    let err = Category::parse("stalls", &plan).unwrap_err();
    assert!(
        err.contains("retiring, bad-speculation, frontend, backend, fetch-latency"),
        "{err}"
    );
    let svg = render(
        &p,
        &Columns::new(1, None),
        &look(plan, TopdownColour::Category(Category::Level2(4)), None),
    );
    // memory bound of hot: 96/256.
    assert_eq!(
        parse(&svg, false).one("hot").fill,
        stall_color(Some(0.375)).to_string()
    );
}
