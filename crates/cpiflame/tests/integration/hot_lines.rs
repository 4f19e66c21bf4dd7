//! The flame graph's hottest lines per frame against `cpiflame annotate`'s lines (which the
//! annotate tests check against `perf annotate` and `addr2line -i`), on perf's recording of
//! the hotloop fixture (`fixtures/workloads/hotloop.c`: `hot_loop` with `mix` inlined into
//! it, and the same work again on its own lines, so both groups of lines hold about half the
//! samples by construction, not by the CPU's skid): the inlined `mix` frame's lines are annotate's lines inlined from mix, `hot_loop`'s
//! are its own lines and the line of the inlined call, with the same shares (tooltips round
//! to whole percents; the graph's frames also hold the few samples taken in the kernel under
//! them, which annotate gives to the kernel). `report --lines` gives each function's hottest
//! self line, annotate's first.

use crate::support;

use std::collections::BTreeMap;

use serde_json::Value;
use support::{cpiflame, ok, perf_record, perf_works, s, shared_fixtures, Dir};

/// The tooltip of every frame named `name`.
pub(crate) fn titles(svg: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in svg.split("<title>").skip(1) {
        let title = part.split("</title>").next().unwrap_or("");
        let title = title
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        if title.lines().next() == Some(name) {
            out.push(title);
        }
    }
    out
}

/// `path:line` -> whole percent, from a tooltip's `hottest lines:` rows.
fn hottest(title: &str) -> Vec<(String, f64)> {
    let Some((_, rows)) = title.split_once("\nhottest lines:\n") else {
        return Vec::new();
    };
    rows.lines()
        .map(|row| {
            let mut parts = row.split_whitespace();
            let line = parts.next().unwrap().to_string();
            let share = parts.next().unwrap().trim_end_matches('%');
            (line, share.parse().unwrap_or(0.0))
        })
        .collect()
}

/// The last two components of a path, as the tooltips show it.
fn short(path: &str) -> String {
    let parts: Vec<&str> = path.rsplitn(3, '/').collect();
    match parts.as_slice() {
        [file, dir, _] => format!("{dir}/{file}"),
        _ => path.to_string(),
    }
}

#[test]
fn tooltips_list_the_hottest_lines_as_annotate_weighs_them() {
    if !perf_works() {
        cpiflame_testkit::unavailable("sampling does not work here (`perf record` fails)");
        return;
    }
    let f = shared_fixtures().expect("fixtures build");
    let binary = f.dir.join("hotloop");
    let dir = Dir::new("hot-lines");
    let data = dir.path("hotloop.data");
    perf_record(&data, "cpu-clock", &["-c", "100000"], &[&binary]).expect("perf record");

    // annotate: each line's share of hot_loop's self weight; mix's lines are those the text
    // output marks as inlined from mix.
    let json: Value = serde_json::from_str(&ok(&cpiflame(&[
        "annotate",
        s(&data),
        "hot_loop",
        "--json",
    ])))
    .expect("JSON");
    let text = ok(&cpiflame(&["annotate", s(&data), "hot_loop"]));
    let mut own: BTreeMap<String, f64> = BTreeMap::new();
    let mut inlined: BTreeMap<String, f64> = BTreeMap::new();
    for l in json[0]["lines"].as_array().unwrap() {
        let key = format!("{}:{}", l["file"].as_str().unwrap(), l["line"]);
        let share = l["share"].as_f64().unwrap();
        let from_mix = text
            .lines()
            .any(|row| row.contains(&format!("  {key}  (inlined: mix)")));
        let at = format!("{}:{}", short(l["file"].as_str().unwrap()), l["line"]);
        if from_mix {
            inlined.insert(at, share);
        } else {
            own.insert(at, share);
        }
    }
    // By construction (hotloop.c), hot_loop runs the same instructions twice, half the work
    // each: first four calls of mix an iteration (20 of the loop's 23 instructions are mix's),
    // then the same four steps on its own lines, so on any CPU about half of its samples are on
    // its own lines and most of the other half on mix's (skid moves a sample a few
    // instructions within its loop, not to the other loop). The bounds leave room for one
    // loop running 1.5 times slower than its twin and for the first loop's own three
    // instructions taking a quarter of its samples; the shares compared below are annotate's
    // on this same file, whatever they are.
    let mix_total: f64 = inlined.values().sum();
    let own_total: f64 = own.values().sum();
    assert!(
        mix_total > 0.25 && own_total > 0.35,
        "hot_loop's two halves: mix's lines {mix_total:.3}, its own {own_total:.3}: {json}"
    );

    let svg = ok(&cpiflame(&["render", s(&data)]));
    let mix = titles(&svg, "mix");
    assert_eq!(mix.len(), 1, "one mix frame");
    let shown = hottest(&mix[0]);
    assert_eq!(shown.len(), inlined.len().min(3), "{}", mix[0]);
    for (line, percent) in &shown {
        let expected = 100.0 * inlined[line] / mix_total;
        assert!(
            (percent - expected).abs() <= 1.5,
            "mix: {line} {percent}% against annotate's {expected:.2}%\n{}",
            mix[0]
        );
    }

    // hot_loop's own lines, and the line of the inlined call for mix's samples (the source
    // line of the call is the line DWARF gives mix's inline site: the one of `x = mix(x, i)`).
    let hot = titles(&svg, "hot_loop");
    assert_eq!(hot.len(), 1, "one hot_loop frame");
    let shown = hottest(&hot[0]);
    let call = shown
        .iter()
        .find(|(line, _)| !own.contains_key(line))
        .unwrap_or_else(|| panic!("no line of the call to mix:\n{}", hot[0]));
    assert!(
        (call.1 - 100.0 * mix_total).abs() <= 1.5,
        "the call's line {} has {}%, mix has {:.2}% of hot_loop",
        call.0,
        call.1,
        100.0 * mix_total
    );
    let source =
        std::fs::read_to_string(support::repo_root().join("fixtures/workloads/hotloop.c")).unwrap();
    let number: usize = call.0.rsplit(':').next().unwrap().parse().unwrap();
    assert!(
        source
            .lines()
            .nth(number - 1)
            .unwrap()
            .contains("mix(x, i)"),
        "line {number} is not the call of mix"
    );
    for (line, percent) in shown.iter().filter(|(l, _)| own.contains_key(l)) {
        let expected = 100.0 * own[line];
        assert!(
            (percent - expected).abs() <= 1.5,
            "hot_loop: {line} {percent}% against annotate's {expected:.2}%\n{}",
            hot[0]
        );
    }

    // report --lines: each function's hottest self line. hot_loop's self samples are those
    // not in mix (mix is a frame of its own): annotate's own lines; mix's, the inlined ones.
    let report: Value =
        serde_json::from_str(&ok(&cpiflame(&["report", s(&data), "--lines", "--json"])))
            .expect("report JSON");
    let text = ok(&cpiflame(&["report", s(&data), "--lines"]));
    for (function, lines) in [("hot_loop", &own), ("mix", &inlined)] {
        let total: f64 = lines.values().sum();
        // annotate's hottest line; if two lines tie on annotate's count, either is right.
        let max = lines.values().copied().fold(0.0, f64::max);
        let top_share = max / total;
        let row = report["frames"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == function)
            .unwrap_or_else(|| panic!("no {function} row: {report}"));
        let hot = &row["hottest_line"];
        let at = format!("{}:{}", short(hot["file"].as_str().unwrap()), hot["line"]);
        assert!(
            lines.get(&at) == Some(&max),
            "{function}: {row} is not annotate's hottest line ({max}): {lines:?}"
        );
        let top = at;
        let share = hot["share"].as_f64().unwrap();
        assert!(
            (share - top_share).abs() < 0.015,
            "{function}: {share} against annotate's {top_share}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains(function) && l.contains(&top)),
            "{text}"
        );
    }
    // Text input has no addresses: one line naming the file and the flag.
    let folded = dir.path("x.folded");
    std::fs::write(&folded, "app;main 3\n").unwrap();
    let out = cpiflame(&["report", s(&folded), "--lines"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("x.folded") && err.contains("--lines"), "{err}");
}
