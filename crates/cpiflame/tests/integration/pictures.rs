//! cpiflame's own pictures as a user sees them (issue 40, item 4), drawn by the binary and
//! measured by headless Chromium (`support::browser`): every kind (the CPI graph, the
//! wall-time graph of a `record --off-cpu` recording, the top-down picture of folded text
//! with its long subtitle, `diff` of cycles and of wall time, the memory graph, `--classic`,
//! the timeline page and the graph it draws) at 400, 1,200 and 2,000 px. Every `<text>`
//! the browser lays out lies inside the image (`getBoundingClientRect` against the root
//! `<svg>`'s), and so does every line of the page's header (`Range.getClientRects` of its
//! text against the page's width); the hover and search lines, once shown, too. The
//! renderer's estimate of a line ([`LINE_EM`]) is at least what the browser measures.
//!
//! Also: titles by the kind of picture (and `--title` over them), the statistics line of
//! folded counts, no stall-pair note on a top-down picture, and the timeline's heat map
//! using the width of the page (a 2-second recording's two columns fill it at 1,300 px; a
//! long recording's cells stay 6 px wide and the heat map scrolls).
//!
//! With `CPIFLAME_PICTURES=DIR` the pictures drawn are also copied to DIR, to look at.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use cpiflame_perf_data::abi::{callchain, misc, sample};
use cpiflame_perf_data::synth::{test_features, Recording};
use cpiflame_perf_data::write::{attr_flags, EventAttr, SampleFields};
use cpiflame_render::LINE_EM;
use support::browser::Browser;
use support::{cpiflame, ok, perf_works, s, Dir};

const WIDTHS: [u32; 3] = [400, 1200, 2000];
const NS: u64 = 1_000_000_000;
/// The first sample's second.
const ORIGIN: u64 = 1000;
const PID: i32 = 4321;

/// Kernel functions named from this text (a recording from another host, as timeline.rs's):
/// a leaf with a long name, so that labels and tooltips are long.
const KALLSYMS: &str = "ffffffff81001000 T benchmark_query_hash_join_probe_the_table_for_rows_matching_every_key_of_the_batch_and_copy_them_out\n\
ffffffff81002000 T stall_on_the_remote_memory_of_the_other_socket\n\
ffffffff81003000 T run_queries\n\
ffffffff81004000 T benchmark_main\n";

/// Writes a recording of `seconds` seconds from second [`ORIGIN`] (a stall event and a
/// cycles event, a sample pair every `step` ns), half of it in each leaf; the stalls in the
/// second leaf only.
fn write_cpi(path: &Path, seconds: u64, step: u64) {
    let sample_type = sample::TIME
        | sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::ID
        | sample::PERIOD
        | sample::CALLCHAIN;
    let attrs: Vec<EventAttr> = [
        (0x1a2, "resource_stalls.any"),
        (0x3c, "cpu_clk_unhalted.thread_p"),
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
    rec.comm(PID, PID, "benchmark", 1);
    let working = [0xffff_ffff_8100_1010, 0xffff_ffff_8100_3008];
    let stalled = [0xffff_ffff_8100_2010, 0xffff_ffff_8100_3008];
    let n = seconds * NS / step;
    for i in 0..n {
        let time = ORIGIN * NS + 3_000_000 + i * step;
        let leaf = if i % 2 == 0 { working } else { stalled };
        let mut chain = vec![callchain::KERNEL];
        chain.extend(leaf);
        chain.push(0xffff_ffff_8100_4008);
        let events: &[usize] = if i % 2 == 0 { &[1] } else { &[1, 0] };
        for &event in events {
            let fields = SampleFields {
                ip: chain[1],
                pid: PID,
                tid: PID,
                time: time + event as u64 * 1000,
                id: 100 + event as u64,
                period: 100_003,
                callchain: chain.clone(),
                misc: misc::KERNEL,
                ..SampleFields::default()
            };
            rec.sample(event, &fields);
        }
    }
    let mut features = test_features();
    features.arch = Some("x86_64".into());
    features.hostname = Some("elsewhere.example".into());
    features.os_release = Some("0.0.0-elsewhere".into());
    rec.finish(&features);
}

/// The issue's top-down folded text: Golden Cove's metrics, no cycles column.
const TOPDOWN: &str =
    "# columns: slots topdown-retiring topdown-bad-spec topdown-fe-bound topdown-be-bound\n\
app;main;f 8000000 1024000 256000 512000 6208000\n\
app;main;g 6300000 504000 126000 252000 5418000\n";
/// Sapphire Rapids.
const SPR: &str = "GenuineIntel,6,143,8";

/// `cpiflame record --off-cpu -o DATA -- offcpu 0.5 COMPUTE`, which must succeed.
fn record_off_cpu(offcpu: &Path, data: &Path, compute: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(["record", "--off-cpu", "-o"])
        .arg(data)
        .arg("--")
        .arg(offcpu)
        .args(["0.5", compute])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `cpiflame ARGS`, which must succeed, its output file's text.
fn draw(args: &[&str], out: &Path) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-o", s(out)]);
    ok(&cpiflame(&all));
    keep(out);
    std::fs::read_to_string(out).unwrap()
}

/// A copy of `file` in `$CPIFLAME_PICTURES`, when set (to look at).
fn keep(file: &Path) {
    if let Some(dir) = std::env::var_os("CPIFLAME_PICTURES") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(file, dir.join(file.file_name().unwrap())).unwrap();
    }
}

/// The first line of `svg`'s title (`id="title"`): the whole title where it fits a line.
fn title_of(svg: &str) -> String {
    let start = svg.find("<text id=\"title\"").expect("a title");
    let text = &svg[start..];
    let text = &text[text.find('>').unwrap() + 1..];
    text[..text.find('<').unwrap()].to_string()
}

/// The statistics line's first line (`id="subtitle"`).
fn stats_of(svg: &str) -> String {
    let start = svg
        .find("<text id=\"subtitle\"")
        .expect("a statistics line");
    let text = &svg[start..];
    let text = &text[text.find('>').unwrap() + 1..];
    text[..text.find('<').unwrap()].to_string()
}

/// What the browser lays out of the SVG document `doc` (JavaScript naming a document):
/// the root `<svg>`'s width and, per non-empty `<text>`, its own text, left and right edge
/// (from the root's left), font size and the advance the browser measures
/// (`getComputedTextLength`).
fn measure_svg_js(doc: &str) -> String {
    format!(
        r#"(function () {{
  var d = {doc};
  var root = d.querySelector("svg");
  var box = root.getBoundingClientRect();
  var lines = [];
  d.querySelectorAll("text").forEach(function (t) {{
    var own = Array.prototype.filter.call(t.childNodes, function (c) {{ return c.nodeType === 3; }})
      .map(function (c) {{ return c.nodeValue; }}).join("");
    var r = t.getBoundingClientRect();
    if (own.trim() === "" || r.width === 0) {{ return; }}
    lines.push({{ text: own, left: r.left - box.left, right: r.right - box.left,
      px: parseFloat(d.defaultView.getComputedStyle(t).fontSize),
      length: t.getComputedTextLength(), frame: t.closest(".f, #frames") !== null }});
  }});
  return {{ width: box.width, lines: lines }};
}})()"#
    )
}

/// Checks every line [`measure_svg_js`] found in `doc` of `what`: inside the image (drawn
/// `width` px wide; `None`: scaled to its frame); and the estimate the renderer fits lines
/// with is at least the browser's advance for every line outside the frames. Returns how
/// many lines there were.
fn check_svg(browser: &mut Browser, doc: &str, width: Option<u32>, what: &str) -> usize {
    let v = browser.eval(&measure_svg_js(doc));
    let drawn = v["width"].as_f64().unwrap();
    if let Some(width) = width {
        assert_eq!(drawn, f64::from(width), "{what}: {v}");
    }
    let lines = v["lines"].as_array().unwrap();
    // What the test saw (shown with --nocapture): the widest line and the one nearest an
    // edge.
    let extent =
        |l: &serde_json::Value| (l["left"].as_f64().unwrap(), l["right"].as_f64().unwrap());
    let widest = lines.iter().max_by(|a, b| {
        let width = |l: &&serde_json::Value| extent(l).1 - extent(l).0;
        width(a).total_cmp(&width(b))
    });
    let nearest = lines.iter().min_by(|a, b| {
        let margin = |l: &&serde_json::Value| extent(l).0.min(drawn - extent(l).1);
        margin(a).total_cmp(&margin(b))
    });
    if let (Some(w), Some(n)) = (widest, nearest) {
        println!(
            "{what}, {drawn} px: {} lines; widest {} ({:.1} px), nearest an edge {} ({:.1} to {:.1} px)",
            lines.len(),
            w["text"],
            extent(w).1 - extent(w).0,
            n["text"],
            extent(n).0,
            extent(n).1,
        );
    }
    for l in lines {
        let (left, right) = (l["left"].as_f64().unwrap(), l["right"].as_f64().unwrap());
        assert!(
            left >= -0.5 && right <= drawn + 0.5,
            "{what} ({drawn} px wide): {} is drawn from {left:.1} to {right:.1} px",
            l["text"]
        );
        if l["frame"] == false {
            let chars = l["text"].as_str().unwrap().chars().count() as f64;
            let estimate = chars * l["px"].as_f64().unwrap() * LINE_EM;
            let measured = l["length"].as_f64().unwrap();
            assert!(
                estimate + 0.01 >= measured,
                "{what}: {} estimated {estimate:.1} px, measured {measured:.1} px",
                l["text"]
            );
        }
    }
    lines.len()
}

/// Opens `file` (an SVG) and checks its lines ([`check_svg`]); then, for this crate's own
/// pictures, hovers the frame named `hover` (its long tooltip becomes the hover line) and
/// searches for a long pattern, and checks again.
fn check_picture(browser: &mut Browser, file: &Path, width: u32, what: &str, hover: &str) {
    let url = format!("file://{}", file.display());
    browser.open(&url, "document.readyState === 'complete'");
    let n = check_svg(browser, "document", Some(width), what);
    assert!(n > 5, "{what}: {n} lines");
    if what == "classic" {
        return;
    }
    // The hover line: the mouse over the frame (the browser's own hit testing).
    let at = browser.eval(&format!(
        r#"(function () {{
  var g = Array.prototype.find.call(document.querySelectorAll("g.f"), function (g) {{
    return g.querySelector("title").textContent.split("\n")[0] === {hover:?};
  }});
  var r = g.querySelector("rect").getBoundingClientRect();
  return [r.left + r.width / 2, r.top + r.height / 2];
}})()"#
    ));
    let at = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    browser.mouse("mouseMoved", at, 0, 0);
    browser.wait_for(
        "the hover line",
        "document.getElementById('details').textContent.length > 10",
    );
    let hovered = check_svg(browser, "document", Some(width), what);
    assert!(hovered > n, "{what}: {hovered} lines with the hover line");
    let details = browser.eval("document.getElementById('details').textContent");
    if width == 400 {
        assert!(
            details.as_str().unwrap().ends_with(".."),
            "{what}: {details}"
        );
    }
    // A search: the prompt answered with a long pattern, the Search button clicked.
    let pattern = "benchmark_query_hash_join_probe|stall_on_the_remote_memory|wait_for_the_lock_of_the_queue|f|g";
    let search = browser.eval(&format!(
        r#"window.prompt = function () {{ return {pattern:?}; }};
var r = document.getElementById("search").getBoundingClientRect();
[r.left + r.width / 2, r.top + r.height / 2]"#
    ));
    let search = (search[0].as_f64().unwrap(), search[1].as_f64().unwrap());
    browser.mouse("mousePressed", search, 1, 0);
    browser.mouse("mouseReleased", search, 0, 0);
    browser.wait_for(
        "the search line",
        "document.getElementById('matched').textContent.indexOf('Matched') === 0",
    );
    let shown = check_svg(browser, "document", Some(width), what);
    assert!(shown > n, "{what}: {shown} lines with the search line");
    let matched = browser.eval("document.getElementById('matched').textContent");
    if width == 400 {
        assert!(
            matched.as_str().unwrap().ends_with(".."),
            "{what}: {matched}"
        );
    }
}

/// Every picture but the timeline page: drawn at each width, titled by its kind, measured in
/// the browser.
#[test]
fn every_picture_s_lines_fit_its_width_in_the_browser() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (the wall-time recordings)");
        return;
    }
    let fixtures = support::shared_fixtures().unwrap();
    let dir = Dir::new("pictures");
    let kallsyms = dir.path("kallsyms");
    std::fs::write(&kallsyms, KALLSYMS).unwrap();
    let (cpi, cpi_after) = (dir.path("cpi.data"), dir.path("cpi-after.data"));
    write_cpi(&cpi, 2, 5_000_000);
    write_cpi(&cpi_after, 1, 4_000_000);
    let (wall, wall_after) = (dir.path("wall.data"), dir.path("wall-after.data"));
    record_off_cpu(&fixtures.offcpu, &wall, "1");
    record_off_cpu(&fixtures.offcpu, &wall_after, "3");
    let topdown = dir.path("topdown.folded");
    std::fs::write(&topdown, TOPDOWN).unwrap();
    let memory = crate::mem_render::loads(dir.root(), crate::mem_render::synthetic_pid(9));
    let leaf = "benchmark_query_hash_join_probe_the_table_for_rows_matching_every_key_of_the_batch_and_copy_them_out";
    let kallsyms = s(&kallsyms);

    let mut browser = Browser::launch(&dir, 2100, 1400);
    for width in WIDTHS {
        let w = width.to_string();
        let svg = |name: &str| dir.path(&format!("{name}-{width}.svg"));
        // (what, arguments, title, the frame to hover)
        let kinds: Vec<(&str, Vec<&str>, &str, &str)> = vec![
            (
                "cpi",
                vec!["render", s(&cpi), "--kallsyms", kallsyms],
                "CPI Flame Graph",
                leaf,
            ),
            (
                "wall",
                vec!["render", s(&wall)],
                "Wall-Time Flame Graph",
                "compute_spin",
            ),
            (
                "topdown",
                vec!["render", s(&topdown), "--topdown-cpu", SPR],
                "Top-Down Flame Graph",
                "g",
            ),
            (
                "diff",
                vec!["diff", s(&cpi), s(&cpi_after), "--kallsyms", kallsyms],
                "Differential CPI Flame Graph",
                leaf,
            ),
            (
                "wall-diff",
                vec!["diff", s(&wall), s(&wall_after)],
                "Differential Wall-Time Flame Graph",
                "compute_spin",
            ),
            (
                "memory",
                vec!["render", "--mem", s(&memory)],
                "Memory Load Flame Graph",
                "load_far",
            ),
            (
                "classic",
                vec!["render", "--classic", s(&cpi), "--kallsyms", kallsyms],
                "CPI Flame Graph",
                leaf,
            ),
        ];
        for (what, mut args, title, hover) in kinds {
            args.extend(["--width", &w]);
            let file = svg(what);
            let text = draw(&args, &file);
            // The default title says what the picture is (on one line from 1,200 px).
            if width >= 1200 {
                assert_eq!(title_of(&text), title, "{what}");
            }
            check_picture(&mut browser, &file, width, what, hover);
        }
    }
}

/// The titles by kind, and `--title` over them; folded counts; the top-down subtitle.
#[test]
fn titles_say_what_the_picture_is_and_folded_counts_are_counts() {
    let dir = Dir::new("pictures-titles");
    let topdown = dir.path("topdown.folded");
    std::fs::write(&topdown, TOPDOWN).unwrap();
    let svg = draw(
        &["render", s(&topdown), "--topdown-cpu", SPR],
        &dir.path("td.svg"),
    );
    assert_eq!(title_of(&svg), "Top-Down Flame Graph");
    // Folded weights are counts (14,300,000 slots), and the statistics line says so.
    assert!(
        stats_of(&svg).starts_with("slots: 14,300,000 counts · top-down: retiring"),
        "{}",
        stats_of(&svg)
    );
    assert!(!svg.contains("samples ·"), "no 'samples' in the lines");
    // The subtitle names the formula set, without the stall-pair note the CPI graph of the
    // same file gives.
    assert!(svg.contains("top-down: Intel Golden Cove PERF_METRICS (spr/adl metrics)"));
    assert!(!svg.contains("no stall/cycles pair"), "{svg}");
    let flat = draw(
        &["render", s(&topdown), "--classic"],
        &dir.path("classic.svg"),
    );
    assert!(flat.contains("no stall/cycles pair recognised"));
    assert!(flat.contains("14,300,000 counts"));
    // The CPI graph of folded cycles and stalls; `diff` of two folded files.
    let folded = dir.path("cpi.folded");
    std::fs::write(
        &folded,
        "# columns: resource_stalls.any cpu_clk_unhalted.thread_p\napp;main;f 300 1000\n",
    )
    .unwrap();
    let cpi = draw(&["render", s(&folded)], &dir.path("cpi.svg"));
    assert_eq!(title_of(&cpi), "CPI Flame Graph");
    assert_eq!(
        stats_of(&cpi),
        "cycles: 1,000 counts (event cpu_clk_unhalted.thread_p) · stalled: 30.0% (event resource_stalls.any)"
    );
    let diff = draw(&["diff", s(&folded), s(&folded)], &dir.path("diff.svg"));
    assert_eq!(title_of(&diff), "Differential CPI Flame Graph");
    assert!(stats_of(&diff).starts_with("before: 1,000 counts · after: 1,000 counts"));
    // --title wins, in every picture.
    for args in [
        vec!["render", s(&topdown), "--topdown-cpu", SPR],
        vec!["render", s(&folded)],
        vec!["render", s(&folded), "--classic"],
        vec!["diff", s(&folded), s(&folded)],
    ] {
        let mut args = args.clone();
        args.extend(["--title", "Mine"]);
        let svg = draw(&args, &dir.path("mine.svg"));
        assert_eq!(title_of(&svg), "Mine", "{args:?}");
    }
    // The memory graph's.
    let memory = crate::mem_render::loads(dir.root(), crate::mem_render::synthetic_pid(10));
    let mem = draw(&["render", "--mem", s(&memory)], &dir.path("mem.svg"));
    assert_eq!(title_of(&mem), "Memory Load Flame Graph");
    let mem = draw(
        &["render", "--mem", s(&memory), "--title", "Mine"],
        &dir.path("mem.svg"),
    );
    assert_eq!(title_of(&mem), "Mine");
}

/// Wall-time recordings: the graph's, the strip's, the diff's and the timeline's titles.
#[test]
fn wall_time_pictures_are_titled_wall_time() {
    if !perf_works() {
        cpiflame_testkit::unavailable("perf cannot record here (the wall-time recordings)");
        return;
    }
    let fixtures = support::shared_fixtures().unwrap();
    let dir = Dir::new("pictures-wall-titles");
    let (wall, after) = (dir.path("wall.data"), dir.path("after.data"));
    record_off_cpu(&fixtures.offcpu, &wall, "1");
    record_off_cpu(&fixtures.offcpu, &after, "2");
    let graph = draw(&["render", s(&wall)], &dir.path("wall.svg"));
    assert_eq!(title_of(&graph), "Wall-Time Flame Graph");
    let strip = draw(&["render", "--strip", s(&wall)], &dir.path("strip.svg"));
    assert_eq!(title_of(&strip), "Wall-Time Flame Graph");
    let on_cpu = draw(
        &["render", "--on-cpu-only", s(&wall)],
        &dir.path("on-cpu.svg"),
    );
    assert_eq!(title_of(&on_cpu), "CPI Flame Graph");
    let diff = draw(&["diff", s(&wall), s(&after)], &dir.path("diff.svg"));
    assert_eq!(title_of(&diff), "Differential Wall-Time Flame Graph");
    let page = draw(&["timeline", s(&wall)], &dir.path("wall.html"));
    assert!(page.contains("<title>Wall-Time Timeline</title>"));
    assert!(page.contains("\"title\":\"Wall-Time Timeline\""));
    let page = draw(
        &["timeline", s(&wall), "--title", "Mine"],
        &dir.path("mine.html"),
    );
    assert!(page.contains("<title>Mine</title>"));
}

/// What the browser lays out of the timeline page's header: per line box of the text of
/// every element outside the heat map and the graph's frame, its text and left and right
/// edges; and the page's width.
const MEASURE_PAGE: &str = r#"(function () {
  var lines = [];
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeValue.trim() === "" || n.parentElement.closest("script, #flamegraph, #heatwrap")) {
      continue;
    }
    var range = document.createRange();
    range.selectNodeContents(n);
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (r.width > 0) {
        lines.push({ text: n.nodeValue, left: r.left, right: r.right });
      }
    });
  }
  var controls = document.querySelectorAll("select, input, button, canvas, iframe");
  Array.prototype.forEach.call(controls, function (c) {
    var r = c.getBoundingClientRect();
    if (c.id !== "heatmap") {
      lines.push({ text: "<" + c.nodeName + " " + c.id + ">", left: r.left, right: r.right });
    }
  });
  return { width: document.documentElement.clientWidth, lines: lines };
})()"#;

/// Checks that every line of the page's header, and every control, lies inside the page
/// (`width` px).
fn check_page(browser: &mut Browser, width: u32) {
    let v = browser.eval(MEASURE_PAGE);
    let page_width = v["width"].as_f64().unwrap();
    assert_eq!(page_width, f64::from(width));
    let lines = v["lines"].as_array().unwrap();
    assert!(lines.len() >= 6, "{lines:?}");
    for l in lines {
        let (left, right) = (l["left"].as_f64().unwrap(), l["right"].as_f64().unwrap());
        assert!(
            left >= 0.0 && right <= page_width + 0.5,
            "the page at {width} px: {} from {left:.1} to {right:.1} px",
            l["text"]
        );
    }
}

/// Sets the viewport to `width` x 900 CSS pixels and waits for the page to have laid out
/// its heat map again.
fn viewport(browser: &mut Browser, width: u32) {
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false }),
    );
    browser.wait_for(
        "the viewport's width",
        &format!("document.documentElement.clientWidth === {width}"),
    );
}

/// The heat map's drawn width, the room of its box, its cells' width and whether it
/// scrolls.
fn heatmap(browser: &mut Browser) -> (f64, f64, f64, bool) {
    browser.wait_for(
        "the heat map to be laid out for the page's width",
        "(function () { var c = document.getElementById('heatmap'); \
         var w = document.getElementById('heatwrap'); \
         var cw = Math.max(6, Math.floor((w.clientWidth - 58) / Number(c.dataset.columns))); \
         return Number(c.dataset.cw) === cw; })()",
    );
    let v = browser.eval(
        "(function () { var c = document.getElementById('heatmap'); \
         var w = document.getElementById('heatwrap'); \
         return [c.getBoundingClientRect().width, w.clientWidth, Number(c.dataset.cw), \
         w.scrollWidth > w.clientWidth]; })()",
    );
    (
        v[0].as_f64().unwrap(),
        v[1].as_f64().unwrap(),
        v[2].as_f64().unwrap(),
        v[3].as_bool().unwrap(),
    )
}

/// How many pixels of the heat map's grid are painted with a cell's colour (neither the
/// page's background nor the grid's white).
fn painted(browser: &mut Browser) -> u64 {
    browser
        .eval(
            "(function () {
  var c = document.getElementById('heatmap');
  var d = c.dataset;
  var p = c.getContext('2d').getImageData(Number(d.left), Number(d.top),
    Number(d.columns) * Number(d.cw), Number(d.rows) * Number(d.ch)).data;
  var n = 0;
  for (var i = 0; i < p.length; i += 4) {
    var bg = p[i] === 0xf8 && p[i + 1] === 0xf8 && p[i + 2] === 0xf6;
    var white = p[i] === 255 && p[i + 1] === 255 && p[i + 2] === 255;
    if (!bg && !white) { n++; }
  }
  return n;
})()",
        )
        .as_u64()
        .unwrap()
}

/// The middle of heat map cell `(col, row)` in the viewport.
fn cell(browser: &mut Browser, col: u32, row: u32) -> (f64, f64) {
    let v = browser.eval(&format!(
        "(function () {{ var c = document.getElementById('heatmap'); \
         var b = c.getBoundingClientRect(); var d = c.dataset; \
         return [b.left + Number(d.left) + {col} * Number(d.cw) + Number(d.cw) / 2, \
         b.top + Number(d.top) + (Number(d.rows) - 1 - {row}) * Number(d.ch) + Number(d.ch) / 2]; }})()"
    ));
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// The timeline page: its heat map fills the page's width (a 2-second recording at 1,300
/// px), a long recording's scrolls; at 400, 1,200 and 2,000 px every line of its header and
/// of the graph it draws for a dragged range fits.
#[test]
fn the_timeline_page_uses_its_width_and_its_lines_fit() {
    let dir = Dir::new("pictures-timeline");
    let kallsyms = dir.path("kallsyms");
    std::fs::write(&kallsyms, KALLSYMS).unwrap();
    let (short, long) = (dir.path("short.data"), dir.path("long.data"));
    write_cpi(&short, 2, 5_000_000);
    write_cpi(&long, 400, 200_000_000);
    let mut browser = Browser::launch(&dir, 1300, 900);

    // Two seconds of the clock: two columns as wide as the page allows.
    let page = draw(
        &["timeline", s(&short), "--kallsyms", s(&kallsyms)],
        &dir.path("short.html"),
    );
    assert!(page.contains("<title>CPI Timeline</title>"));
    let ready = "document.getElementById('heatmap').hasAttribute('data-load-ms')";
    browser.open(
        &format!("file://{}", dir.path("short.html").display()),
        ready,
    );
    viewport(&mut browser, 1300);
    let (drawn, room, cw, scrolls) = heatmap(&mut browser);
    let columns = browser.eval("Number(document.getElementById('heatmap').dataset.columns)");
    assert_eq!(columns, 2);
    assert!(
        drawn >= 0.8 * room && !scrolls,
        "the heat map is {drawn} px of {room} ({cw} px cells)"
    );
    // Painted, after the resize too: both columns' cells are (every 5 ms, all 50 rows).
    let full = browser.eval(
        "(function () { var d = document.getElementById('heatmap').dataset; \
         return (Number(d.cw) - 1) * (Number(d.ch) - 1) * 100; })()",
    );
    assert_eq!(painted(&mut browser), full.as_u64().unwrap());

    // 400 seconds: cells at their least, the heat map scrolls in its box.
    draw(
        &["timeline", s(&long), "--kallsyms", s(&kallsyms)],
        &dir.path("long.html"),
    );
    browser.open(
        &format!("file://{}", dir.path("long.html").display()),
        ready,
    );
    let (drawn, room, cw, scrolls) = heatmap(&mut browser);
    assert_eq!(cw, 6.0);
    assert!(
        scrolls && drawn > room,
        "{drawn} px in {room} px, scrolls: {scrolls}"
    );
    let columns = browser.eval("Number(document.getElementById('heatmap').dataset.columns)");
    assert_eq!(columns, 400);

    // The short recording at each width: the header's lines, then a range dragged over
    // both columns and the graph it draws.
    for width in WIDTHS {
        let name = format!("timeline-{width}.html");
        let title = "A long title for the timeline page of the nightly benchmark run";
        draw(
            &[
                "timeline",
                s(&short),
                "--kallsyms",
                s(&kallsyms),
                "--width",
                &width.to_string(),
                "--title",
                title,
            ],
            &dir.path(&name),
        );
        browser.open(&format!("file://{}", dir.path(&name).display()), ready);
        viewport(&mut browser, width);
        let (drawn, room, _, _) = heatmap(&mut browser);
        assert!(drawn >= 0.8 * room, "{width}: {drawn} of {room}");
        assert!(
            painted(&mut browser) > 0,
            "{width}: the heat map is painted"
        );
        check_page(&mut browser, width);
        // A drag from the first cell to the last column's top: the graph of the range.
        let (from, to) = (cell(&mut browser, 0, 0), cell(&mut browser, 1, 49));
        browser.mouse("mouseMoved", from, 0, 0);
        browser.mouse("mousePressed", from, 1, 0);
        browser.mouse("mouseMoved", to, 1, 0);
        browser.mouse("mouseReleased", to, 0, 0);
        browser.wait_for(
            "the graph of the range",
            "document.querySelector('#flamegraph iframe') !== null && \
             document.querySelector('#flamegraph iframe').contentDocument.querySelector('#frames') !== null",
        );
        // The page with its graph, which is as wide as the page allows (the window is
        // --width wide here, and the page has margins: the graph is scaled down).
        check_page(&mut browser, width);
        let graph = "document.querySelector('#flamegraph iframe').contentDocument";
        let what = format!("the page's graph at {width}");
        let n = check_svg(&mut browser, graph, None, &what);
        assert!(n > 5, "{n} lines in the page's graph");
        let title_lines = browser.eval(&format!(
            "{graph}.querySelectorAll('text[id=title], text[style]').length"
        ));
        if width == 400 {
            assert!(title_lines.as_u64().unwrap() > 1, "the title wrapped");
        }
    }
}
