//! `--region NAME`: the samples kept are exactly those whose time, as `perf script` prints
//! it, lies inside one of the intervals the marked ray tracer (`fixtures/workloads/raytrace.c`
//! linked with the markers' C library) wrote for that region on the sample's own thread;
//! on cpiflame's recording and on perf's (`-k monotonic`, the marker files beside it after a
//! move); errors in one line.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{cpiflame, ok, repo_root, s, sampling_fixtures, Dir};

/// The marked ray tracer, built with the documented commands against the C library cargo
/// built beside this test binary (installed into `dir/prefix`); `None` (skip locally, failure
/// under CI) without pkg-config.
fn marked_raytrace(dir: &Dir) -> Option<PathBuf> {
    let has = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("pkg-config") {
        cpiflame_testkit::unavailable("pkg-config is not installed (scripts/test.sh installs it)");
        return None;
    }
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let prefix = dir.path("prefix");
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/install-markers-c.sh"))
        .args(["--prefix", s(&prefix), "--from", s(&deps)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "cpiflame_markers"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    assert!(flags.status.success());
    let exe = dir.path("raytrace");
    let out = Command::new("cc")
        .args(["-O2", "-g"])
        .arg(repo_root().join("fixtures/workloads/raytrace.c"))
        .args(String::from_utf8(flags.stdout).unwrap().split_whitespace())
        .args(["-lm", "-pthread"])
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// The oracle's intervals of `region`: every `marker-PID-TID.txt` in `dir` read here, the
/// thread taken from the file's name (cpiflame takes it from the recording's mmap records).
fn intervals(dir: &Path, region: &str) -> BTreeMap<i32, Vec<(u64, u64)>> {
    let mut by_tid: BTreeMap<i32, Vec<(u64, u64)>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(ids) = name
            .strip_prefix("marker-")
            .and_then(|n| n.strip_suffix(".txt"))
        else {
            continue;
        };
        let tid: i32 = ids.split('-').nth(1).unwrap().parse().unwrap();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let mut f = line.splitn(3, ' ');
            let (a, b, n) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            if n == region {
                by_tid
                    .entry(tid)
                    .or_default()
                    .push((a.parse().unwrap(), b.parse().unwrap()));
            }
        }
    }
    by_tid
}

/// Every sample as `perf script -F tid,time --ns` prints it: (tid, time in ns).
fn perf_samples(data: &Path) -> Vec<(i32, u64)> {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,time", "--ns", "-i", s(data)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let tid = f.next()?.parse().ok()?;
            let (sec, ns) = f.next()?.trim_end_matches(':').split_once('.')?;
            Some((
                tid,
                sec.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?,
            ))
        })
        .collect()
}

/// The samples `cpiflame script --region REGION` prints: (tid, time in ns).
fn our_samples(data: &Path, region: &str) -> BTreeSet<(i32, u64)> {
    ok(&cpiflame(&["script", "--region", region, s(data)]))
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with([' ', '\t']))
        .filter_map(|header| {
            let words: Vec<&str> = header.split_whitespace().collect();
            let at = words.iter().position(|w| {
                w.strip_suffix(':')
                    .and_then(|t| t.split_once('.'))
                    .is_some_and(|(a, b)| b.len() == 9 && a.parse::<u64>().is_ok())
            })?;
            let (sec, ns) = words[at].trim_end_matches(':').split_once('.')?;
            let tid = words[at - 1].parse().ok()?;
            Some((
                tid,
                sec.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?,
            ))
        })
        .collect()
}

/// What the oracle keeps: the samples inside one of their own thread's intervals (bounds
/// inclusive).
fn expected(
    samples: &[(i32, u64)],
    spans: &BTreeMap<i32, Vec<(u64, u64)>>,
) -> BTreeSet<(i32, u64)> {
    samples
        .iter()
        .filter(|(tid, t)| {
            spans
                .get(tid)
                .is_some_and(|v| v.iter().any(|&(a, b)| a <= *t && *t <= b))
        })
        .copied()
        .collect()
}

/// The folded stacks of `fold --region REGION`, each with its count.
fn folded(data: &Path, region: &str) -> Vec<(String, u64)> {
    ok(&cpiflame(&["fold", "--region", region, s(data)]))
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (stack.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// `--region` on `data`, whose marker files are in `markers`; `stacks`: the recording has
/// call graphs, so the pixel samples' stacks can be checked too.
fn check(data: &Path, markers: &Path, stacks: bool) {
    let samples = perf_samples(data);
    for region in ["pixel", "frame"] {
        let spans = intervals(markers, region);
        assert!(!spans.is_empty(), "{region}: no intervals written");
        let want = expected(&samples, &spans);
        let got = our_samples(data, region);
        assert_eq!(
            got, want,
            "{region}: samples kept vs perf script's inside the intervals"
        );
        if region == "pixel" && stacks {
            assert!(
                want.len() > 50,
                "too few pixel samples to mean anything: {}",
                want.len()
            );
            assert!(want.len() < samples.len(), "every sample is a pixel's?");
            // Only the pixel work: the stacks kept are under render_rows, the pixel loop, but
            // for the few in the library's own code between its clock read and the counters'
            // (unwound through the library's debug build, some stop short of the loop).
            let stacks = folded(data, "pixel");
            let total: u64 = stacks.iter().map(|(_, n)| n).sum();
            assert_eq!(total as usize, want.len());
            let outside: Vec<&(String, u64)> = stacks
                .iter()
                .filter(|(s, _)| !s.contains(";render_rows"))
                .collect();
            let n: u64 = outside.iter().map(|(_, n)| n).sum();
            assert!(
                n * 20 <= total,
                "{n} of {total} pixel samples outside the loop: {outside:?}"
            );
        }
    }
}

#[test]
fn region_keeps_exactly_the_samples_inside_the_marked_intervals() {
    let Some(_) = sampling_fixtures() else { return };
    let dir = Dir::new("regions");
    let Some(exe) = marked_raytrace(&dir) else {
        return;
    };
    let rec = dir.path("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let data = rec.join("rt.data");
    // cpiflame record sets CPIFLAME_MARKERS_DIR to the recording's folder; two threads.
    ok(&cpiflame(&[
        "record",
        "-F",
        "4000",
        "-o",
        s(&data),
        "--",
        s(&exe),
        "-s",
        "200x150",
        "-t",
        "2",
        "-e",
        "task-clock",
    ]));
    assert_eq!(
        intervals(&rec, "pixel")
            .values()
            .map(Vec::len)
            .sum::<usize>(),
        200 * 150
    );
    check(&data, &rec, true);
    // The picture of the pixel work.
    let svg = ok(&cpiflame(&["render", "--region", "pixel", s(&data)]));
    assert!(
        svg.contains("shade") || svg.contains("trace"),
        "no pixel work drawn"
    );
    assert!(
        svg.contains("samples inside region pixel"),
        "the graph says what it shows"
    );

    // pprof: every sample of the region labelled with it (go tool pprof -tags).
    let pb = dir.path("pixel.pb.gz");
    ok(&cpiflame(&[
        "convert",
        "--to",
        "pprof",
        "--region",
        "pixel",
        "-o",
        s(&pb),
        s(&data),
    ]));
    let tags = Command::new("go")
        .args(["tool", "pprof", "-tags", "-symbolize=none"])
        .arg(&pb)
        .output();
    match tags {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let line = text
                .lines()
                .find(|l| l.contains("pixel"))
                .unwrap_or_else(|| panic!("no region label: {text}"));
            assert!(line.contains("100%"), "not every sample: {line}");
        }
        _ => cpiflame_testkit::unavailable(
            "go tool pprof does not run (scripts/test.sh installs golang-go)",
        ),
    }

    // perf's recording on CLOCK_MONOTONIC, the marker files beside it after a move.
    let perf_dir = dir.path("perf");
    std::fs::create_dir_all(&perf_dir).unwrap();
    let perf_data = perf_dir.join("perf.data");
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-N",
            "-k",
            "monotonic",
            "-e",
            "cpu-clock",
            "-F",
            "4000",
            "-o",
        ])
        .arg(&perf_data)
        .arg("--")
        .arg(&exe)
        .args(["-s", "160x120", "-e", "task-clock"])
        .env("CPIFLAME_MARKERS_DIR", &perf_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let moved = dir.path("moved");
    std::fs::rename(&perf_dir, &moved).unwrap();
    check(&moved.join("perf.data"), &moved, false);
}

#[test]
fn region_errors_are_one_line_naming_what_is_missing() {
    let Some(f) = sampling_fixtures() else { return };
    let dir = Dir::new("regions-errors");
    let data = dir.path("plain.data");
    ok(&cpiflame(&[
        "record",
        "-o",
        s(&data),
        "--",
        s(&f.raytrace),
        "-s",
        "40x30",
    ]));
    let one_line = |args: &[&str], says: &str| {
        let out = cpiflame(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    };
    // The bare ray tracer marks nothing.
    one_line(
        &["fold", "--region", "pixel", s(&data)],
        "has no marker file",
    );
    let script = dir.path("plain.txt");
    std::fs::write(&script, ok(&cpiflame(&["script", s(&data)]))).unwrap();
    one_line(
        &["fold", "--region", "pixel", s(&script)],
        "reads a perf.data recording",
    );
}

/// `samply import` of cpiflame's recording of the marked ray tracer reads the same marker
/// files (it finds them by the same mmap records): per thread, a marker for every line of
/// that thread's file, with its name, its duration to the microsecond.
#[test]
fn samply_import_shows_the_same_regions() {
    let Some(_) = sampling_fixtures() else { return };
    let samply = repo_root().join("target/tools/samply/bin/samply");
    if !samply.is_file() {
        cpiflame_testkit::unavailable(format!(
            "samply: {} missing (scripts/test.sh installs it with cargo install)",
            samply.display()
        ));
        return;
    }
    let dir = Dir::new("regions-samply");
    let Some(exe) = marked_raytrace(&dir) else {
        return;
    };
    let rec = dir.path("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let data = rec.join("rt.data");
    ok(&cpiflame(&[
        "record",
        "-o",
        s(&data),
        "--",
        s(&exe),
        "-s",
        "40x30",
        "-t",
        "2",
        "-e",
        "task-clock",
    ]));
    let json = dir.path("samply.json");
    let out = Command::new(&samply)
        .args(["import", "--save-only", "-o", s(&json), s(&data)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // Each thread's markers from marker files: (name, duration in µs rounded).
    let mut samply_markers: BTreeMap<i64, Vec<(String, i64)>> = BTreeMap::new();
    for t in profile["threads"].as_array().unwrap() {
        // A number or, in some samply versions, a string.
        let tid = t["tid"]
            .as_i64()
            .or_else(|| t["tid"].as_str().and_then(|v| v.parse().ok()))
            .unwrap();
        let strings = t["stringArray"].as_array().unwrap();
        let m = &t["markers"];
        for k in 0..m["length"].as_u64().unwrap() as usize {
            let data = &m["data"][k];
            if data["type"] != "SimpleMarker" {
                continue;
            }
            let name = strings[data["name"].as_u64().unwrap() as usize]
                .as_str()
                .unwrap();
            let ms = m["endTime"][k].as_f64().unwrap() - m["startTime"][k].as_f64().unwrap();
            samply_markers
                .entry(tid)
                .or_default()
                .push((name.to_string(), (ms * 1000.0).round() as i64));
        }
    }
    let mut ours: BTreeMap<i64, Vec<(String, i64)>> = BTreeMap::new();
    for entry in std::fs::read_dir(&rec).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(ids) = name
            .strip_prefix("marker-")
            .and_then(|n| n.strip_suffix(".txt"))
        else {
            continue;
        };
        let tid: i64 = ids.split('-').nth(1).unwrap().parse().unwrap();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let mut f = line.splitn(3, ' ');
            let a: u64 = f.next().unwrap().parse().unwrap();
            let b: u64 = f.next().unwrap().parse().unwrap();
            let us = ((b - a) as f64 / 1000.0).round() as i64;
            ours.entry(tid)
                .or_default()
                .push((f.next().unwrap().to_string(), us));
        }
    }
    assert_eq!(
        ours.len(),
        3,
        "main thread and two workers: {:?}",
        ours.keys()
    );
    for (tid, lines) in &mut ours {
        let theirs = samply_markers
            .get_mut(tid)
            .unwrap_or_else(|| panic!("samply: no markers on thread {tid}"));
        lines.sort();
        theirs.sort();
        assert_eq!(lines.len(), theirs.len(), "thread {tid}: markers");
        for (a, b) in lines.iter().zip(theirs.iter()) {
            assert_eq!(a.0, b.0, "thread {tid}");
            assert!(
                (a.1 - b.1).abs() <= 1,
                "thread {tid}: {a:?} vs samply's {b:?}"
            );
        }
    }
}

/// Every line of every marker file in `dir`, by region name: (tid, start, end) in
/// nanoseconds since `origin`, START and END ordered, sorted.
fn all_intervals(dir: &Path, origin: u64) -> BTreeMap<String, Vec<(i64, i64, i64)>> {
    let mut by_name: BTreeMap<String, Vec<(i64, i64, i64)>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(ids) = name
            .strip_prefix("marker-")
            .and_then(|n| n.strip_suffix(".txt"))
        else {
            continue;
        };
        let tid: i64 = ids.split('-').nth(1).unwrap().parse().unwrap();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let mut f = line.splitn(3, ' ');
            let (a, b, n) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            let (a, b): (i64, i64) = (a.parse().unwrap(), b.parse().unwrap());
            let origin = origin as i64;
            by_name.entry(n.to_string()).or_default().push((
                tid,
                a.min(b) - origin,
                a.max(b) - origin,
            ));
        }
    }
    for v in by_name.values_mut() {
        v.sort_unstable();
    }
    by_name
}

/// The timeline page of the marked ray tracer's recording carries every line of its marker
/// files, by region, in the page's time (nanoseconds since its first column), and draws
/// them as bands where that time is on the heat map (checked in Chromium, pixel by pixel).
#[test]
fn the_timeline_page_draws_every_marked_interval_as_a_band() {
    let Some(_) = sampling_fixtures() else { return };
    let dir = Dir::new("regions-timeline");
    let Some(exe) = marked_raytrace(&dir) else {
        return;
    };
    let rec = dir.path("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let data = rec.join("rt.data");
    ok(&cpiflame(&[
        "record",
        "-F",
        "4000",
        "-o",
        s(&data),
        "--",
        s(&exe),
        "-s",
        "400x300",
        "-t",
        "2",
    ]));
    let page = dir.path("timeline.html");
    ok(&cpiflame(&["timeline", "-o", s(&page), s(&data)]));
    let html = std::fs::read_to_string(&page).unwrap();
    let d = crate::timeline::page_data(&html);
    let origin = d["origin"].as_u64().unwrap() * 1_000_000_000;
    let mut shown: BTreeMap<String, Vec<(i64, i64, i64)>> = BTreeMap::new();
    let mut names = Vec::new();
    for r in d["regions"].as_array().expect("the page's regions") {
        let name = r["name"].as_str().unwrap().to_string();
        names.push(name.clone());
        let mut v: Vec<(i64, i64, i64)> = r["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let n = |k: usize| i[k].as_i64().unwrap();
                (n(0), n(1), n(2))
            })
            .collect();
        v.sort_unstable();
        shown.insert(name, v);
    }
    let want = all_intervals(&rec, origin);
    assert_eq!(
        names,
        want.keys().cloned().collect::<Vec<_>>(),
        "sorted names"
    );
    assert_eq!(
        shown, want,
        "the page's intervals vs the marker files' lines"
    );
    assert_eq!(shown["pixel"].len(), 400 * 300);
    assert_eq!(shown["frame"].len(), 2);

    if Command::new("chromium")
        .arg("--version")
        .output()
        .map_or(true, |o| !o.status.success())
    {
        cpiflame_testkit::unavailable("chromium is not installed (apt-get install chromium)");
        return;
    }
    let mut browser = support::browser::Browser::launch(&dir, 1400, 1000);
    browser.open(
        &format!("file://{}", page.display()),
        "document.getElementById('heatmap').hasAttribute('data-load-ms')",
    );
    let g = browser.eval(
        "(function () { var c = document.getElementById('heatmap'); var d = c.dataset; \
         return [d.left, d.top, d.cw, d.ch, d.rows, d.lane, c.width, c.height].map(Number); })()",
    );
    let g: Vec<i64> = g
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let (left, top, cw, ch, rows, lane) = (g[0], g[1], g[2], g[3], g[4], g[5]);
    let colour_of = [
        ("frame", [0x1b, 0x9e, 0x77]),
        ("output", [0xd9, 0x5f, 0x02]),
        ("pixel", [0x75, 0x70, 0xb3]),
    ];
    // Each frame interval's band, in the first column it covers, at its middle: along that
    // canvas row, the band's pixels are exactly lane `index`'s.
    let mut checked = 0;
    for (index, (region, rgb)) in colour_of.iter().enumerate() {
        assert_eq!(names[index], *region, "lane order");
        if *region != "frame" {
            continue;
        }
        for &(_, a, b) in &shown["frame"] {
            let ns = 1_000_000_000i64;
            let col = a.max(0) / ns;
            let (a, b) = (a.max(col * ns) - col * ns, b.min((col + 1) * ns) - col * ns);
            let mid = (a + b) / 2;
            let height = rows * ch;
            let y = top + height - mid * height / ns;
            let row: Vec<Vec<u8>> = serde_json::from_value(browser.eval(&format!(
                "(function () {{ var c = document.getElementById('heatmap'); \
                 var p = c.getContext('2d').getImageData(0, {y}, c.width, 1).data; var out = []; \
                 for (var i = 0; i < p.length; i += 4) {{ out.push([p[i], p[i + 1], p[i + 2]]); }} \
                 return out; }})()"
            )))
            .unwrap();
            let x0 = left + col * cw + index as i64 * lane;
            let drawn: Vec<i64> = (left + col * cw..left + (col + 1) * cw)
                .filter(|&x| row[x as usize] == rgb)
                .collect();
            assert_eq!(
                drawn,
                (x0..x0 + lane).collect::<Vec<_>>(),
                "{region} at {mid} ns into column {col} (canvas row {y})"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 2);

    // A click on the legend's `frame` selects the cells of its intervals: the two threads'
    // loops overlap, so one range, from the cell of the first start to the end of the cell
    // of the last end.
    let at = browser.eval(
        "(function () { var b = document.querySelector('button[data-region=\"frame\"]').getBoundingClientRect(); \
         return [b.left + b.width / 2, b.top + b.height / 2]; })()",
    );
    let at = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    browser.mouse("mouseMoved", at, 0, 0);
    browser.mouse("mousePressed", at, 1, 0);
    browser.mouse("mouseReleased", at, 0, 0);
    let cell_of = |t: i64| {
        (
            t.max(0) / 1_000_000_000,
            t.max(0) % 1_000_000_000 * rows / 1_000_000_000,
        )
    };
    let first = cell_of(shown["frame"].iter().map(|i| i.1).min().unwrap());
    let last = cell_of(shown["frame"].iter().map(|i| i.2).max().unwrap());
    let last = if last.1 + 1 == rows {
        (last.0 + 1, 0)
    } else {
        (last.0, last.1 + 1)
    };
    let text = |(col, row): (i64, i64)| {
        format!(
            "{}.{:06}",
            origin as i64 / 1_000_000_000 + col,
            row * 1_000_000 / rows
        )
    };
    assert_eq!(
        browser.eval("document.getElementById('time').value"),
        serde_json::json!(format!("{},{}", text(first), text(last)))
    );
    let shot = browser.call(
        "Page.captureScreenshot",
        serde_json::json!({ "format": "png", "clip": { "x": 0, "y": 0, "width": 1400, "height": 700, "scale": 1 } }),
    );
    let png = dir.path("bands.png");
    std::fs::write(
        &png,
        crate::timeline::base64_decode(shot["data"].as_str().unwrap()),
    )
    .unwrap();
    if let Some(keep) = std::env::var_os("CPIFLAME_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}
