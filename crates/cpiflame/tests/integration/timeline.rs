//! `cpiflame timeline`: the page loaded in headless Chromium (Debian's `chromium`), driven
//! over the DevTools protocol (`support::browser`) with input the browser treats as a
//! mouse's and a keyboard's (`Input.dispatchMouseEvent`, `Input.dispatchKeyEvent`: the page
//! sees only trusted events, which the test checks): a range dragged on its heat map, and the
//! flame graph the page draws compared, frame by frame (name, position, width, colour), with
//! `render`'s SVG of exactly the samples in that range; then the same with the thread filter
//! set to one thread with the arrow keys (the filter focused by script, not by a click), and
//! with all threads again and a second range added by a shift-drag.
//!
//! The oracle: the synthetic recording's samples are known by construction, so the samples
//! of the selected cells are written to a second recording of their own and drawn with
//! `render`, and, for the range without a thread filter, `render --time TEXT` of the whole
//! recording with the `--time` text the page shows draws the same frames.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use cpiflame_perf_data::abi::{callchain, misc, sample};
use cpiflame_perf_data::synth::{test_features, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, SampleFields};
use cpiflame_render::{uncertain_color, Rgb};
use support::browser::{Browser, SHIFT};
use support::{cpiflame, Dir};

const PID: i32 = 4321;
const WORKER: i32 = 4322;
/// The first sample's second: the heat map's column 0.
const ORIGIN: u64 = 1000;
const NS: u64 = 1_000_000_000;
const KALLSYMS: &str = "ffffffff81001000 T phase_leaf\n\
ffffffff81002000 T stall_leaf\n\
ffffffff81003000 T caller\n\
ffffffff81004000 T entry\n";

/// One sample: time, thread, whether it is a stall (else cycles) sample, its chain.
struct Known {
    time: u64,
    tid: i32,
    stall: bool,
    chain: Vec<u64>,
}

/// Three seconds, a sample pair every 5 ms: second 0 on the main thread in `stall_leaf`
/// (every cycles sample with a stall sample), second 1 on the worker in `phase_leaf` (one
/// stall sample in four), second 2 both threads alternating.
fn known() -> Vec<Known> {
    let stalled = vec![
        callchain::KERNEL,
        0xffff_ffff_8100_2010,
        0xffff_ffff_8100_3008,
        0xffff_ffff_8100_4008,
    ];
    let working = vec![
        callchain::KERNEL,
        0xffff_ffff_8100_1010,
        0xffff_ffff_8100_3008,
        0xffff_ffff_8100_4008,
    ];
    let shallow = vec![
        callchain::KERNEL,
        0xffff_ffff_8100_3010,
        0xffff_ffff_8100_4008,
    ];
    let mut out = Vec::new();
    for i in 0..600u64 {
        let time = ORIGIN * NS + 3_000_000 + i * 5_000_000;
        let second = i / 200;
        let (tid, chain, stall) = match second {
            0 => (PID, &stalled, true),
            1 => (WORKER, &working, i % 4 == 0),
            _ if i % 2 == 0 => (PID, &shallow, i % 3 == 0),
            _ => (WORKER, &working, false),
        };
        out.push(Known {
            time,
            tid,
            stall: false,
            chain: chain.clone(),
        });
        if stall {
            out.push(Known {
                time: time + 1000,
                tid,
                stall: true,
                chain: chain.clone(),
            });
        }
    }
    out
}

/// Writes the samples `keep` selects as a recording from another host (kernel frames named
/// from the test's kallsyms text): a stall event and a cycles event, as synthetic.rs's.
fn write(path: &Path, keep: impl Fn(&Known) -> bool) {
    write_with(path, sample::TIME, keep)
}

/// [`write`], the samples carrying the fields `time` (`sample::TIME`, or none) says.
fn write_with(path: &Path, time: u64, keep: impl Fn(&Known) -> bool) {
    let sample_type = time
        | sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::ID
        | sample::PERIOD
        | sample::CALLCHAIN;
    let attrs: Vec<EventAttr> = [
        (0x1a2, "resource_stalls_any"),
        (0x3c, "cpu_clk_unhalted_thread_p"),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(config, name))| EventAttr {
        type_: 4,
        config,
        sample_period_or_freq: 100_003,
        sample_type,
        flags: attr_flags::SAMPLE_ID_ALL | attr_flags::COMM,
        name: Some(name.to_string()),
        ids: vec![100 + i as u64],
        ..EventAttr::default()
    })
    .collect();
    let mut rec = Recording::create(path, attrs);
    rec.comm(PID, PID, "app", 1);
    rec.comm(PID, WORKER, "worker", 2);
    for k in known().iter().filter(|k| keep(k)) {
        let event = usize::from(!k.stall);
        let fields = SampleFields {
            ip: k.chain[1],
            pid: PID,
            tid: k.tid,
            time: k.time,
            id: 100 + event as u64,
            period: 100_003,
            callchain: k.chain.clone(),
            misc: misc::KERNEL,
            ..SampleFields::default()
        };
        rec.sample(event, &fields);
    }
    let mut features = test_features();
    features.arch = Some("x86_64".into());
    features.hostname = Some("elsewhere.example".into());
    features.os_release = Some("0.0.0-elsewhere".into());
    rec.finish(&features);
}

/// One frame as drawn: name, x, width, y, fill.
type Drawn = (String, f64, f64, f64, String);

/// The frames of a CPI SVG `render` wrote.
fn svg_frames(svg: &str) -> Vec<Drawn> {
    svg.split("<g class=\"f\"")
        .skip(1)
        .map(|g| {
            let title = &g[g.find("<title>").unwrap() + 7..g.find("</title>").unwrap()];
            let name = unescape(title.lines().next().unwrap());
            let rect = &g[g.find("<rect").unwrap()..];
            let num = |n: &str| attr(rect, n).parse::<f64>().unwrap();
            (name, num("x"), num("width"), num("y"), attr(rect, "fill"))
        })
        .collect()
}

fn rgb(hex: &str) -> Rgb {
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap();
    Rgb(c(1), c(3), c(5))
}

fn hex(c: Rgb) -> String {
    c.to_string()
}

/// The value of attribute `name` of the first element in `s` that has it.
fn attr(s: &str, name: &str) -> String {
    let at = s.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    s[at..at + s[at..].find('"').unwrap()].to_string()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// `cpiflame COMMAND --kallsyms KALLSYMS --width 1000 DATA -o OUT`, which must succeed.
fn draw(command: &[&str], kallsyms: &str, data: &Path, out: &Path) {
    let tail = [
        "--kallsyms",
        kallsyms,
        "--width",
        "1000",
        support::s(data),
        "-o",
        support::s(out),
    ];
    support::ok(&cpiflame(&[command, &tail].concat()));
}

/// `render`'s graph of the samples `keep` selects: written to a recording of their own and
/// drawn; with `time` (the page's text, no thread filter: `render` has none) also checked to
/// equal `render --time` of the whole recording.
fn reference(
    dir: &Dir,
    name: &str,
    kallsyms: &str,
    time: Option<&str>,
    keep: impl Fn(&Known) -> bool,
) -> Vec<Drawn> {
    let (data, svg) = (
        dir.path(&format!("{name}.data")),
        dir.path(&format!("{name}.svg")),
    );
    write(&data, keep);
    draw(&["render"], kallsyms, &data, &svg);
    let subset = svg_frames(&std::fs::read_to_string(&svg).unwrap());
    if let Some(t) = time {
        // The issue's oracle: `render --time` of the whole recording with the page's text
        // draws the same frames as the samples written apart.
        draw(
            &["render", "--time", t],
            kallsyms,
            &dir.path("full.data"),
            &svg,
        );
        let timed = svg_frames(&std::fs::read_to_string(&svg).unwrap());
        // The --time graph's subtitle line moves every frame down by the same amount.
        let below = |frames: &[Drawn]| -> Vec<Drawn> {
            let bottom = frames.iter().map(|f| f.3).fold(f64::MIN, f64::max);
            frames
                .iter()
                .map(|f| (f.0.clone(), f.1, f.2, bottom - f.3, f.4.clone()))
                .collect()
        };
        assert_eq!(
            below(&timed),
            below(&subset),
            "render --time {t} against the selected samples' render"
        );
    }
    subset
}

/// What the test adds to the page: a record of the input events the page receives (whether
/// each is trusted, that is came from the browser's input pipeline and not from a script's
/// `dispatchEvent`), where a heat map cell is on the screen, and what the page shows.
const HARNESS: &str = r##"<script>
var errors = [];
var seen = [];
var loaded = false;
window.addEventListener("error", function (e) { errors.push(String(e.message)); });
window.addEventListener("load", function () { loaded = true; });
["mousedown", "mousemove", "mouseup", "keydown", "change"].forEach(function (type) {
  window.addEventListener(type, function (e) {
    seen.push({ type: e.type, trusted: e.isTrusted, target: e.target.id || e.target.nodeName,
      buttons: e.buttons === undefined ? null : e.buttons, shift: e.shiftKey === true });
  }, true);
});
// The viewport point (CSS pixels) at the middle of heat map cell (col, row), and whether it
// is inside the viewport.
function cell(col, row) {
  var c = document.getElementById("heatmap");
  var box = c.getBoundingClientRect();
  var d = c.dataset;
  var x = box.left + Number(d.left) + col * Number(d.cw) + Number(d.cw) / 2;
  var y = box.top + Number(d.top) + (Number(d.rows) - 1 - row) * Number(d.ch) + Number(d.ch) / 2;
  return [x, y, x >= 0 && y >= 0 && x < window.innerWidth && y < window.innerHeight];
}
// The index of the thread filter's option whose text contains `text`.
function option(text) {
  var f = document.getElementById("filter");
  for (var i = 0; i < f.options.length; i++) {
    if (f.options[i].textContent.indexOf(text) >= 0) { return i; }
  }
  return -1;
}
// What the page shows, and the events seen since the last report.
function report() {
  var frame = document.querySelector("#flamegraph iframe");
  var frames = frame === null ? [] : Array.prototype.map.call(
    frame.contentDocument.querySelectorAll("#frames g.f"), function (g) {
      var r = g.querySelector("rect");
      return [g.querySelector("title").textContent.split("\n")[0], Number(r.getAttribute("x")),
        Number(r.getAttribute("width")), Number(r.getAttribute("y")), r.getAttribute("fill")];
    });
  return { time: document.getElementById("time").value, frames: frames,
    loaded: document.getElementById("heatmap").hasAttribute("data-load-ms"), errors: errors,
    seen: seen.splice(0) };
}
</script>"##;

/// `(time text, frames, input events seen)` of a `report()`.
fn result(v: &Value) -> (String, Vec<Drawn>, Vec<Value>) {
    let frames = v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f[0].as_str().unwrap().to_string(),
                f[1].as_f64().unwrap(),
                f[2].as_f64().unwrap(),
                f[3].as_f64().unwrap(),
                f[4].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // The page's script ran to its end, and nothing threw since.
    assert_eq!(v["loaded"], true, "the page's script did not finish");
    assert_eq!(v["errors"], json!([]), "script errors");
    let seen = v["seen"].as_array().unwrap().clone();
    (v["time"].as_str().unwrap().to_string(), frames, seen)
}

/// Heat map cell `(col, row)`'s middle in the viewport, which it must be in.
fn cell(browser: &mut Browser, col: u32, row: u32) -> (f64, f64) {
    let v = browser.eval(&format!("cell({col}, {row})"));
    assert_eq!(
        v[2], true,
        "cell ({col}, {row}) is outside the viewport: {v}"
    );
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Drags with the mouse from cell `from` to cell `to` by way of `via`, Shift held if
/// `shift`: the pointer moved onto `from`, the left button pressed, moved with it held,
/// released; then waits for the page to have handled the release.
fn drag(browser: &mut Browser, from: (u32, u32), via: (u32, u32), to: (u32, u32), shift: bool) {
    let keys = if shift { SHIFT } else { 0 };
    let (from, via, to) = (
        cell(browser, from.0, from.1),
        cell(browser, via.0, via.1),
        cell(browser, to.0, to.1),
    );
    browser.mouse("mouseMoved", from, 0, keys);
    browser.mouse("mousePressed", from, 1, keys);
    browser.mouse("mouseMoved", via, 1, keys);
    browser.mouse("mouseMoved", to, 1, keys);
    browser.mouse("mouseReleased", to, 0, keys);
    browser.wait_for(
        "the page to see the mouse button released",
        "seen.some(function (e) { return e.type === 'mouseup'; })",
    );
}

/// The events of a [`drag`] as the page saw them: all trusted (from the browser's input
/// pipeline), a move onto the heat map, the button pressed on it, moves with the button
/// held, the release; Shift held throughout if `shift`.
fn assert_dragged(what: &str, seen: &[Value], shift: bool) {
    let mut kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["mousemove", "mousedown", "mousemove", "mouseup"],
        "{what}: {seen:?}"
    );
    let down = seen.iter().position(|e| e["type"] == "mousedown").unwrap();
    for (i, e) in seen.iter().enumerate() {
        assert_eq!(e["trusted"], true, "{what}: an untrusted event: {e}");
        assert_eq!(e["shift"], shift, "{what}: shift in {e}");
        assert_eq!(e["target"], "heatmap", "{what}: {e}");
        if i >= down && e["type"] != "mouseup" {
            assert_eq!(e["buttons"], 1, "{what}: the left button not held: {e}");
        }
    }
}

/// Chooses the thread filter's option whose text contains `text` with the keyboard: the
/// filter focused (by the script: `focus()`), then arrow keys pressed until it is selected.
/// Checks that the page saw only trusted key and change events on the filter.
fn choose_thread(browser: &mut Browser, text: &str) {
    let want = browser.eval(&format!("option({text:?})")).as_i64().unwrap();
    assert!(want >= 0, "no thread filter option {text}");
    let now = browser
        .eval("var f = document.getElementById('filter'); f.focus(); f.selectedIndex")
        .as_i64()
        .unwrap();
    assert_eq!(browser.eval("document.activeElement.id"), "filter");
    let (key, code) = if want > now {
        ("ArrowDown", 40)
    } else {
        ("ArrowUp", 38)
    };
    for _ in 0..want.abs_diff(now) {
        browser.key(key, key, code);
    }
    browser.wait_for(
        "the thread filter to change",
        &format!(
            "document.getElementById('filter').selectedIndex === {want} && \
             seen.filter(function (e) {{ return e.type === 'change'; }}).length === {}",
            want.abs_diff(now)
        ),
    );
}

/// The events of a [`choose_thread`]: all trusted, keys and changes of the filter only.
fn assert_chosen(what: &str, seen: &[Value]) {
    assert!(
        seen.iter().any(|e| e["type"] == "keydown"),
        "{what}: {seen:?}"
    );
    for e in seen {
        assert_eq!(e["trusted"], true, "{what}: an untrusted event: {e}");
        assert_eq!(e["target"], "filter", "{what}: {e}");
        assert!(
            e["type"] == "keydown" || e["type"] == "change",
            "{what}: {e}"
        );
    }
}

/// Frames equal: same names at the same rows, positions and widths within a pixel, same fill.
fn assert_same(what: &str, page: &[Drawn], reference: &[Drawn]) {
    let sorted = |v: &[Drawn]| {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.3.total_cmp(&b.3).then(a.1.total_cmp(&b.1)));
        v
    };
    let (page, reference) = (sorted(page), sorted(reference));
    assert!(
        reference.len() >= 4,
        "{what}: reference has too few frames: {reference:?}"
    );
    assert_eq!(
        page.len(),
        reference.len(),
        "{what}: frames\npage: {page:?}\nrender: {reference:?}"
    );
    for (p, r) in page.iter().zip(&reference) {
        assert_eq!((&p.0, p.3), (&r.0, r.3), "{what}: frame {p:?} vs {r:?}");
        // The same colour, or render's washed-out form of it: the page's graph draws no
        // confidence intervals (render's default --confidence 0.95 washes out frames whose
        // interval is too wide for the scale).
        let washed = hex(uncertain_color(rgb(&p.4)));
        assert!(
            p.4 == r.4 || washed == r.4,
            "{what}: colour of {p:?} vs {r:?}"
        );
        assert!(
            (p.1 - r.1).abs() < 1.0 && (p.2 - r.2).abs() < 1.0,
            "{what}: {p:?} vs {r:?}"
        );
    }
}

#[test]
fn a_range_dragged_on_the_heat_map_draws_the_flame_graph_render_draws_of_that_range() {
    if Command::new("chromium")
        .arg("--version")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        cpiflame_testkit::unavailable("chromium is not installed (apt-get install chromium)");
        return;
    }
    let dir = Dir::new("timeline-browser");
    let kallsyms = dir.path("kallsyms.txt");
    std::fs::write(&kallsyms, KALLSYMS).unwrap();
    let kallsyms = support::s(&kallsyms);
    let data = dir.path("full.data");
    write(&data, |_| true);
    let page = dir.path("timeline.html");
    draw(&["timeline"], kallsyms, &data, &page);
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing loaded from anywhere (the SVG namespace is only a name).
    for outside in ["src=", "<link", "@import", "url(http", "fetch("] {
        assert!(
            !html.contains(outside),
            "the page loads something: {outside}"
        );
    }
    let harness = dir.path("harness.html");
    // Before the page's own `</body>` (its script writes one into the graph's frame).
    let end = html.rfind("</body>").unwrap();
    std::fs::write(
        &harness,
        format!("{}{HARNESS}\n{}", &html[..end], &html[end..]),
    )
    .unwrap();
    // Declared after `dir` (its profile's home), so closed before `dir` is removed.
    let mut browser = Browser::launch(&dir, 1400, 1000);
    browser.open(
        &format!("file://{}", harness.display()),
        "window.loaded === true && document.getElementById('heatmap').hasAttribute('data-load-ms')",
    );

    // Cell (0, 40) starts at 0.800 s into second 0; cell (1, 10) ends at 0.220 s into second 1.
    drag(&mut browser, (0, 40), (1, 5), (1, 10), false);
    let (time, frames, seen) = result(&browser.eval("report()"));
    assert_dragged("range", &seen, false);
    let (start, end) = (ORIGIN * NS + 800_000_000, (ORIGIN + 1) * NS + 220_000_000);
    assert_eq!(time, "1000.800000,1001.220000");
    let in_range = |k: &Known| (start..end).contains(&k.time);
    assert_same(
        "range",
        &frames,
        &reference(&dir, "range", kallsyms, Some(&time), in_range),
    );

    choose_thread(&mut browser, "thread 4322");
    let (time, frames, seen) = result(&browser.eval("report()"));
    assert_chosen("worker thread", &seen);
    assert_eq!(time, "1000.800000,1001.220000");
    let worker = |k: &Known| in_range(k) && k.tid == WORKER;
    assert_same(
        "worker thread",
        &frames,
        &reference(&dir, "worker", kallsyms, None, worker),
    );

    // All threads again, and a shift-drag adds cells (2, 20) to (2, 29): 2.400 s to 2.600 s
    // into second 2.
    choose_thread(&mut browser, "all (");
    let (_, _, seen) = result(&browser.eval("report()"));
    assert_chosen("all threads", &seen);
    drag(&mut browser, (2, 20), (2, 25), (2, 29), true);
    let (time, frames, seen) = result(&browser.eval("report()"));
    assert_dragged("two ranges", &seen, true);
    assert_eq!(time, "1000.800000,1001.220000 1002.400000,1002.600000");
    let (start2, end2) = (
        (ORIGIN + 2) * NS + 400_000_000,
        (ORIGIN + 2) * NS + 600_000_000,
    );
    let in_ranges = |k: &Known| in_range(k) || (start2..end2).contains(&k.time);
    assert_same(
        "two ranges",
        &frames,
        &reference(&dir, "ranges", kallsyms, Some(&time), in_ranges),
    );

    // The filter's first option counts the threads: "1 thread", not "1 threads" (issue 41).
    let all = "document.getElementById('filter').options[0].textContent";
    assert_eq!(browser.eval(all), "all (2 threads)");
    let (one, one_page) = (dir.path("one.data"), dir.path("one.html"));
    write(&one, |k| k.tid == PID);
    draw(&["timeline"], kallsyms, &one, &one_page);
    let url = format!("file://{}", one_page.display());
    browser.open(&url, "document.getElementById('filter').options.length > 0");
    assert_eq!(browser.eval(all), "all (1 thread)");
}

/// `render --strip`: a bucket of the strip above the frames for every stretch of the
/// recording, each coloured by the stall share of exactly the samples written in it.
#[test]
fn the_strip_colours_each_bucket_by_the_stall_share_of_its_samples() {
    let dir = Dir::new("timeline-strip");
    let kallsyms = dir.path("kallsyms.txt");
    std::fs::write(&kallsyms, KALLSYMS).unwrap();
    let data = dir.path("full.data");
    write(&data, |_| true);
    let svg = dir.path("strip.svg");
    let args = [
        "render",
        "--strip",
        "--kallsyms",
        support::s(&kallsyms),
        support::s(&data),
        "-o",
        support::s(&svg),
    ];
    support::ok(&cpiflame(&args));
    let svg = std::fs::read_to_string(&svg).unwrap();
    let strip = &svg[svg.find("<g id=\"strip\"").expect("a strip")..];
    let strip = &strip[..strip.find("</g>").unwrap()];
    let start: u64 = attr(strip, "data-start").parse().unwrap();
    let bucket: u64 = attr(strip, "data-bucket").parse().unwrap();
    let known = known();
    assert_eq!(start, known.iter().map(|k| k.time).min().unwrap());
    let mut seen = 0;
    for rect in strip.split("<rect").skip(1) {
        let i: u64 = attr(rect, "data-i").parse().unwrap();
        let (from, to) = (start + i * bucket, start + (i + 1) * bucket);
        let inside: Vec<&Known> = known
            .iter()
            .filter(|k| (from..to).contains(&k.time))
            .collect();
        let cycles = inside.iter().filter(|k| !k.stall).count() as u64;
        let stalls = inside.len() as u64 - cycles;
        // Every sample has the same period: the share is a ratio of counts.
        let expected = cpiflame_render::stall_color(Some(stalls as f64 / cycles as f64));
        assert_eq!(
            attr(rect, "fill"),
            expected.to_string(),
            "bucket {i}: {rect}"
        );
        assert!(
            rect.contains(&format!(": {cycles} samples, stalled ")),
            "bucket {i}: {rect}"
        );
        seen += cycles;
    }
    // Every cycles sample is in a drawn bucket.
    assert_eq!(seen, known.iter().filter(|k| !k.stall).count() as u64);
}

/// `timeline --time`: the page holds the samples in the ranges and no other, each cycles
/// sample in the cell of its time (the second walk of the records used to ignore `--time`:
/// every sample outside the ranges "matched no stack of the graph").
#[test]
fn a_time_range_s_page_holds_that_range_s_samples() {
    let dir = Dir::new("timeline-time");
    let data = dir.path("run.data");
    write(&data, |_| true);
    let kallsyms = dir.path("kallsyms");
    std::fs::write(&kallsyms, KALLSYMS).unwrap();
    let page = dir.path("t.html");
    // Seconds 1.2 to 2.5 of the recording: the worker's second and half of the last.
    let (from, to) = (ORIGIN * NS + 1_200_000_000, ORIGIN * NS + 2_500_000_000);
    let range = format!("{}.2,{}.5", ORIGIN + 1, ORIGIN + 2);
    let out = cpiflame(&[
        "timeline",
        "--kallsyms",
        support::s(&kallsyms),
        "--time",
        &range,
        support::s(&data),
        "-o",
        support::s(&page),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("match no stack"), "{stderr}");
    let (origin, rows, cells) = page_cells(&std::fs::read_to_string(&page).unwrap());
    let mut expected: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for k in known()
        .iter()
        .filter(|k| !k.stall && (from..=to).contains(&k.time))
    {
        let at = k.time - origin * NS;
        *expected
            .entry((at / NS, (at % NS) * rows / NS))
            .or_default() += 1;
    }
    let mut got: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    for ((cell, _), n) in cells {
        *got.entry(cell).or_default() += n;
    }
    assert!(expected.values().sum::<u64>() > 100);
    assert_eq!(got, expected);
}

/// A recording whose samples carry no time has no timeline: one error line naming the file.
#[test]
fn a_recording_without_sample_times_is_one_error_line() {
    let dir = Dir::new("timeline-no-time");
    let data = dir.path("untimed.data");
    write_with(&data, 0, |_| true);
    let out = cpiflame(&[
        "timeline",
        support::s(&data),
        "-o",
        support::s(&dir.path("t.html")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains("untimed.data") && errors[0].contains("no time"),
        "{stderr}"
    );
}

/// The page's data: the JSON object in its `<script id="data">`.
pub(crate) fn page_data(html: &str) -> Value {
    let open = "<script id=\"data\" type=\"application/json\">";
    let from = html.find(open).expect("the page's data") + open.len();
    let len = html[from..].find("</script>").unwrap();
    serde_json::from_str(&html[from..from + len]).unwrap()
}

/// Standard base64 with padding, decoded.
pub(crate) fn base64_decode(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|&c| c != b'=') {
        let v = ALPHABET.iter().position(|&a| a == c).expect("base64") as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

/// The page's samples of its first value (cycles: the width) per heat map cell and thread:
/// ((column, row), (tid, comm)) → samples, decoded from `cells` (see the timeline crate's
/// encode.rs for the layout), with the page's origin second and rows per second.
type CellCounts = BTreeMap<((u64, u64), (i64, String)), u64>;

fn page_cells(html: &str) -> (u64, u64, CellCounts) {
    let (data, entries) = page_entries(html);
    let rows = data["rows"].as_u64().unwrap();
    let threads = data["threads"].as_array().unwrap();
    let mut cells = CellCounts::new();
    for e in entries {
        let t = &threads[e.thread];
        let thread = (t[1].as_i64().unwrap(), t[2].as_str().unwrap().to_string());
        // The stack is left out: names differ between perf and cpiflame.
        *cells
            .entry(((e.cell / rows, e.cell % rows), thread))
            .or_default() += e.values[0].0;
    }
    (data["origin"].as_u64().unwrap(), rows, cells)
}

/// One (cell, thread, stack) entry of a page's `cells`: per value column, its samples and
/// its summed period over the column's unit.
struct CellEntry {
    cell: u64,
    thread: usize,
    values: Vec<(u64, u64)>,
}

/// The page's data and its `cells` decoded (see the timeline crate's encode.rs for the
/// layout: unsigned LEB128 numbers).
fn page_entries(html: &str) -> (Value, Vec<CellEntry>) {
    let data = page_data(html);
    let bytes = base64_decode(data["cells"].as_str().unwrap());
    let mut at = 0;
    let next = |at: &mut usize| {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = bytes[*at];
            *at += 1;
            v |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                return v;
            }
        }
    };
    let k = data["values"].as_array().unwrap().len();
    let mut entries = Vec::new();
    let mut cell = 0;
    while at < bytes.len() {
        cell += next(&mut at);
        for _ in 0..next(&mut at) {
            let thread = next(&mut at) as usize;
            for _ in 0..next(&mut at) {
                next(&mut at); // the stack's index less the previous one's
                let values = (0..k).map(|_| (next(&mut at), next(&mut at))).collect();
                entries.push(CellEntry {
                    cell,
                    thread,
                    values,
                });
            }
        }
        cell += 1;
    }
    (data, entries)
}

/// Every sample header's time (nanoseconds), tid and comm in `perf script` text of the
/// default fields (`COMM TID [CPU] SECONDS.FRACTION: PERIOD EVENT:`), the comm each thread
/// had at its first sample (as the page names threads).
fn script_times(text: &str) -> Vec<(u64, i64, String)> {
    let mut comms: BTreeMap<i64, String> = BTreeMap::new();
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with(['\t', ' ', '#']))
        .map(|l| {
            let toks: Vec<&str> = l.split_whitespace().collect();
            let t = toks
                .iter()
                .position(|t| t.ends_with(':') && t.contains('.'))
                .expect("a time");
            let (secs, frac) = toks[t].trim_end_matches(':').split_once('.').unwrap();
            let ns =
                secs.parse::<u64>().unwrap() * NS + format!("{frac:0<9}").parse::<u64>().unwrap();
            let mut id = t - 1;
            if toks[id].starts_with('[') {
                id -= 1;
            }
            let tid = toks[id].rsplit('/').next().unwrap().parse::<i64>().unwrap();
            let comm = comms.entry(tid).or_insert_with(|| toks[..id].join(" "));
            (ns, tid, comm.clone())
        })
        .collect()
}

/// `perf script` text with times (perf's default fields) has a timeline and a strip: its
/// heat map cells hold, per thread, the samples perf script prints in them (the oracle:
/// perf's own times), as the perf.data file's page does; `render --strip` of the text
/// (`--ns`, so the first sample starts the strip at the same nanosecond) has the perf.data
/// file's buckets and counts. Stacks are left out of the comparison: perf names frames
/// otherwise than cpiflame's unwinder does, and counts per time and thread do not depend
/// on names.
#[test]
fn perf_script_text_with_times_has_the_timeline_and_strip_of_its_perf_data() {
    let Some(f) = support::sampling_fixtures() else {
        return;
    };
    let dir = Dir::new("timeline-perf-script");
    let data = dir.path("perf.data");
    support::perf_record_with(
        &data,
        "cpu-clock",
        &["-g", "-q", "-N", "-F", "500"],
        &[support::s(&f.threads), "0.3"],
    )
    .expect("perf record");
    let text = dir.path("default.perf");
    std::fs::write(
        &text,
        support::perf_stdout(&["script", "-f", "-i", support::s(&data)]),
    )
    .unwrap();
    let ns_text = dir.path("ns.perf");
    let ns = support::perf_stdout(&["script", "-f", "--ns", "-i", support::s(&data)]);
    std::fs::write(&ns_text, &ns).unwrap();

    let page = |input: &Path, name: &str| {
        let out = dir.path(name);
        support::ok(&cpiflame(&[
            "timeline",
            support::s(input),
            "-o",
            support::s(&out),
        ]));
        page_cells(&std::fs::read_to_string(out).unwrap())
    };
    let (origin, rows, of_text) = page(&text, "text.html");
    let (data_origin, data_rows, of_data) = page(&data, "data.html");
    // perf script's own times, in the page's cells. Its default prints microseconds, cut
    // down from nanoseconds: cells start on whole microseconds, so no sample changes cell.
    let mut expected = CellCounts::new();
    for (ns, tid, comm) in script_times(&ns) {
        let since = ns - origin * NS;
        let cell = (since / NS, (since % NS) * rows / NS);
        *expected.entry((cell, (tid, comm))).or_default() += 1;
    }
    assert!(expected.len() > 3, "{expected:?}");
    assert!(
        expected
            .keys()
            .map(|(_, (tid, _))| tid)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1,
        "threads' samples: {expected:?}"
    );
    assert_eq!((origin, rows), (data_origin, data_rows));
    assert_eq!(
        of_text, expected,
        "the text's page against perf script's times"
    );
    assert_eq!(
        of_data, expected,
        "the perf.data file's page against perf script's times"
    );

    let strip = |input: &Path, name: &str| {
        let out = dir.path(name);
        support::ok(&cpiflame(&[
            "render",
            "--strip",
            support::s(input),
            "-o",
            support::s(&out),
        ]));
        let svg = std::fs::read_to_string(out).unwrap();
        let strip = &svg[svg.find("<g id=\"strip\"").expect("a strip")..];
        let strip = &strip[..strip.find("</g>").unwrap()];
        let buckets: Vec<(String, String)> = strip
            .split("<rect")
            .skip(1)
            .map(|r| {
                let title = &r[r.find("<title>").unwrap() + 7..r.find("</title>").unwrap()];
                (attr(r, "data-i"), title.to_string())
            })
            .collect();
        (
            attr(strip, "data-start"),
            attr(strip, "data-bucket"),
            buckets,
        )
    };
    let of_text = strip(&ns_text, "text.svg");
    assert!(of_text.2.len() > 10, "{of_text:?}");
    assert_eq!(of_text, strip(&data, "data.svg"));
    let first = script_times(&ns).iter().map(|t| t.0).min().unwrap();
    assert_eq!(of_text.0, first.to_string());
}

/// Per (tid, role) the summed values of a page's cells (`oncpu`, `runnable`, `blocked`,
/// `cycles`, ...): every value's period times its column's unit.
fn page_totals(html: &str) -> BTreeMap<(i64, String), u64> {
    let (data, entries) = page_entries(html);
    let threads = data["threads"].as_array().unwrap();
    let values: Vec<(String, u64)> = data["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v[0].as_str().unwrap().to_string(), v[1].as_u64().unwrap()))
        .collect();
    let mut totals = BTreeMap::new();
    for e in entries {
        let tid = threads[e.thread][1].as_i64().unwrap();
        for ((role, unit), (_, value)) in values.iter().zip(&e.values) {
            *totals.entry((tid, role.clone())).or_default() += value * unit;
        }
    }
    totals
}

/// A wall-time recording's page holds every thread's wall time, as `fold --tid` gives it,
/// the part the graph has only under the thread (`[blocked]`, `[runnable]`, `[on-CPU, not
/// sampled]`: perf's `--switch-events` gives no stack at a switch) included; its `perf
/// script` text's page holds the same.
#[test]
fn a_wall_time_recordings_page_and_its_texts_hold_every_threads_wall_time() {
    let Some(f) = support::sampling_fixtures() else {
        return;
    };
    let dir = Dir::new("timeline-wall");
    let data = dir.path("perf.data");
    support::perf_record_with(
        &data,
        "cpu-clock",
        &["-g", "-q", "-N", "--switch-events"],
        &[support::s(&f.offcpu)],
    )
    .expect("perf record");
    let text = dir.path("perf.txt");
    std::fs::write(
        &text,
        support::perf_stdout(&[
            "script",
            "-f",
            "--ns",
            "--show-switch-events",
            "--show-task-events",
            "-i",
            support::s(&data),
        ]),
    )
    .unwrap();
    let mut folded: BTreeMap<(i64, String), u64> = BTreeMap::new();
    for (role, event) in [
        ("oncpu", "on-cpu-time"),
        ("runnable", "runnable-time"),
        ("blocked", "blocked-time"),
    ] {
        let out = support::ok(&cpiflame(&[
            "fold",
            "--tid",
            "--event",
            event,
            support::s(&data),
        ]));
        for line in out.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let root = stack.split(';').next().unwrap();
            let tid: i64 = root.rsplit_once('/').unwrap().1.parse().unwrap();
            *folded.entry((tid, role.to_string())).or_default() += n.parse::<u64>().unwrap();
        }
    }
    folded.retain(|_, n| *n > 0);
    let off: u64 = folded
        .iter()
        .filter(|((_, role), _)| role != "oncpu")
        .map(|(_, n)| n)
        .sum();
    assert!(off > 500_000_000, "{folded:?}");
    for input in [&data, &text] {
        let out = dir.path("page.html");
        support::ok(&cpiflame(&[
            "timeline",
            support::s(input),
            "-o",
            support::s(&out),
        ]));
        let mut shown = page_totals(&std::fs::read_to_string(&out).unwrap());
        shown.retain(|(_, role), n| {
            *n > 0 && ["oncpu", "runnable", "blocked"].contains(&role.as_str())
        });
        assert_eq!(shown, folded, "{}", input.display());
    }
}

/// Folded text keeps each stack's total only: refused in one line saying so.
#[test]
fn folded_text_has_no_timeline_and_says_why() {
    let dir = Dir::new("timeline-folded");
    let folded = dir.path("run.folded");
    std::fs::write(&folded, "app;main;work 10\napp;main 3\n").unwrap();
    refused_over_time(
        &folded,
        &["run.folded", "folded text", "no time per sample"],
    );
}

/// `timeline` and `render --strip` of `file` are refused in one line (exit status 2) that
/// contains every one of `says`.
fn refused_over_time(file: &std::path::Path, says: &[&str]) {
    for args in [&["timeline"][..], &["render", "--strip"]] {
        let mut args = args.to_vec();
        args.extend([support::s(file), "-o", "/dev/null"]);
        let out = cpiflame(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(says.iter().all(|w| stderr.contains(w)), "{stderr}");
    }
}

/// `perf script` text printed without its time field (`-F comm,tid,event,ip,sym`, real
/// perf 6.1 output) is refused in one line naming the field to print.
#[test]
fn perf_script_text_without_times_is_one_line_naming_the_time_field() {
    let dir = Dir::new("timeline-script-untimed");
    let text = dir.path("untimed.perf");
    std::fs::write(
        &text,
        "sh 19439 cpu-clock: \n\t           148c8 get_common_indices.constprop.0\n\t               0 [unknown]\n\n\
         sh 19439 cpu-clock: \n\t           1d0b0 _dl_start\n\n",
    )
    .unwrap();
    refused_over_time(&text, &["untimed.perf", "time field", "-F +time"]);
}
