//! The top-down picture drawn by `render`: the synthetic `{slots,cycles,topdown-*}:S`
//! recording on a Sapphire Rapids CPUID (`topdown.rs`'s writer) is drawn without a flag, each
//! frame's tooltip giving the level-1 split that `report --json` gives for the function and
//! that the test's own Golden Cove formula gives on `perf script`'s deltas summed per leaf;
//! the subtitle names the formula set; a frame is washed out exactly when the interval of its
//! dominant share from the planted per-sample deltas holds the runner-up's share;
//! `--topdown-color backend` is the stall scale; an unknown category is one error line; AMD
//! Zen 4 folded text with `--topdown-cpu` gives amdzen4's fractions; the bytes are the same
//! twice.

use crate::hot_lines::titles;
use crate::support;
use crate::topdown::{
    add, folded, frame, golden_cove, level1, perf_sums, planted, report, write_recording, zen4,
    zen_rows, EVENTS, ZEN,
};

use cpiflame_profile::interval::{mid_p, paired_share_interval, PairedMoments};
use support::{cpiflame, ok, s, Dir};

/// `top-down: retiring R% · bad spec B% · front end F% · back end E%`.
pub(crate) fn split(f: [f64; 4]) -> String {
    format!(
        "top-down: retiring {:.1}% · bad spec {:.1}% · front end {:.1}% · back end {:.1}%",
        100.0 * f[0],
        100.0 * f[1],
        100.0 * f[2],
        100.0 * f[3]
    )
}

pub(crate) fn title(svg: &str, name: &str) -> String {
    let mut all = titles(svg, name);
    assert_eq!(all.len(), 1, "frames named {name}: {all:?}");
    all.remove(0)
}

fn fill(svg: &str, name: &str) -> String {
    let at = svg
        .find(&format!("<title>{name}\n"))
        .unwrap_or_else(|| panic!("no frame {name}"));
    let rest = &svg[at..];
    let rect = &rest[rest.find("<rect").unwrap()..];
    rect.split("fill=\"").nth(1).unwrap()[..7].to_string()
}

fn render(args: &[&str]) -> String {
    let mut all = vec!["render"];
    all.extend(args);
    ok(&cpiflame(&all))
}

/// The 95% interval of share `k` of [ret, bs, fe, be] of the frame over `leaves`: the
/// interval of that metric over slots from the planted per-sample deltas, scaled onto the
/// share (share / ratio); with fewer than 3 samples (too few for the per-sample method)
/// the mid-p interval of the share as a proportion of the samples.
fn interval(leaves: &[&str], k: usize, fractions: [f64; 4]) -> (f64, f64) {
    let mut m = PairedMoments::default();
    for (leaf, d) in planted() {
        if leaves.contains(&leaf) {
            m.push(d[2 + k], d[0]);
        }
    }
    if m.n < 3 {
        let hits = (fractions[k] * m.n as f64).round() as u64;
        let i = mid_p(hits, m.n, 0.95).unwrap();
        return (i.lo, i.hi);
    }
    let i = paired_share_interval(&m, 0.95).unwrap();
    let scale = fractions[k] / m.ratio().unwrap();
    (i.lo * scale, i.hi * scale)
}

/// Whether the dominant share (index `dominant`) is washed out: its interval holds the
/// runner-up's share.
fn washed(leaves: &[&str], dominant: usize, fractions: [f64; 4]) -> bool {
    let runner_up = (0..4)
        .filter(|&k| k != dominant)
        .map(|k| fractions[k])
        .fold(f64::MIN, f64::max);
    interval(leaves, dominant, fractions).0 <= runner_up
}

#[test]
fn synthetic_topdown_recording_is_drawn_with_report_s_fractions() {
    let dir = Dir::new("topdown-graph");
    let data = write_recording(&dir);
    let svg = render(&[s(&data)]);
    let doc = report(&[s(&data)]);
    let perf = perf_sums(&data);
    let by_perf = |leaf: &str| -> [u64; 6] {
        std::array::from_fn(|e| perf[&(leaf.to_string(), EVENTS[e].to_string())])
    };
    for (name, leaves) in [("f", vec!["f"]), ("g", vec!["g"]), ("main", vec!["f", "g"])] {
        let t = title(&svg, name);
        let json = level1(&frame(&doc, name)["topdown"]);
        assert!(t.contains(&split(json)), "{name}: {} in {t}", split(json));
        // perf script's deltas, summed per leaf by the test, through Golden Cove's formula.
        let sums = leaves.iter().map(|l| by_perf(l)).fold([0u64; 6], add);
        assert_eq!(golden_cove(sums), json, "{name}");
        // The dominant category, washed out when its interval holds the runner-up.
        let dominant = (0..4).fold(0, |best, k| if json[k] > json[best] { k } else { best });
        let label = ["retiring", "bad spec", "front end", "back end"][dominant];
        assert!(
            t.contains(&format!("dominant: {label} {:.1}%", 100.0 * json[dominant])),
            "{t}"
        );
        assert_eq!(
            t.contains("drawn washed out"),
            washed(&leaves, dominant, json),
            "{name}: {t}"
        );
    }
    // f: retiring 256/512 in two samples of equal ratios: no variance, but too few samples
    // to trust that, so washed out (the samples' bound); main's four samples disagree.
    assert!(title(&svg, "f").contains("washed out"));
    // The statistics line: the whole profile's split; the subtitle: the formula set and
    // what it leaves out.
    let totals = level1(&doc["totals"]["topdown"]);
    assert!(svg.contains(&split(totals)), "{svg}");
    assert!(
        svg.contains("top-down: Intel Golden Cove PERF_METRICS (spr/adl metrics) · without int_misc.uop_dropping"),
        "{svg}"
    );
    for swatch in [">retiring<", ">bad spec<", ">front end<", ">back end<"] {
        assert!(svg.contains(swatch), "{swatch}");
    }
    // Byte-determinism.
    assert_eq!(svg, render(&[s(&data)]));

    // One category on the stall scale: g's back end 352/512 = 68.75%, at 0.6875 between
    // the scale's violet (176,100,210) at 1/2 and blue (70,130,240) at 1.
    // Washed out when its interval (two samples) is wider than a quarter of the scale.
    let backend = render(&[s(&data), "--topdown-color", "backend"]);
    let g = level1(&frame(&doc, "g")["topdown"]);
    assert_eq!(g[3], 0.6875);
    let (lo, hi) = interval(&["g"], 3, g);
    let wide = hi - lo > 0.25;
    assert_eq!(title(&backend, "g").contains("washed out"), wide);
    let want = cpiflame_render::stall_color(Some(0.6875));
    let want = if wide {
        cpiflame_render::uncertain_color(want)
    } else {
        want
    };
    assert_eq!(fill(&backend, "g"), want.to_string());
    assert!(backend.contains(">back end share:<"));

    // A category the formulas do not have: one line naming the flag and the valid names.
    let out = cpiflame(&["render", s(&data), "--topdown-color", "memory-bound"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--topdown-color memory-bound")
            && err.contains("retiring, bad-speculation, frontend, backend"),
        "{err}"
    );
}

#[test]
fn zen4_folded_text_is_drawn_with_amdzen4_fractions() {
    let dir = Dir::new("topdown-graph-zen");
    let path = folded(&dir, "zen4.folded", &ZEN, &zen_rows());
    let svg = render(&[s(&path), "--topdown-cpu", "AuthenticAMD,25,17,1"]);
    for (leaf, r) in zen_rows() {
        let t = title(&svg, leaf);
        assert!(t.contains(&split(zen4(&r))), "{leaf}: {t}");
        // Folded counts are not samples: no interval, nothing washed out.
        assert!(!t.contains("interval"), "{t}");
    }
    assert!(svg.contains("top-down: AMD Zen 4 pipeline (6 slots per cycle)"));
    // A profile without top-down events is the CPI graph, and --topdown-color says why not.
    let plain = folded(
        &dir,
        "plain.folded",
        &["stalls", "cycles", "instructions"],
        &[("f", vec![10, 40, 20])],
    );
    assert!(!render(&[s(&plain)]).contains("top-down"));
    let out = cpiflame(&["render", s(&plain), "--topdown-color", "backend"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--topdown-color backend") && err.contains("plain.folded"),
        "{err}"
    );
}
