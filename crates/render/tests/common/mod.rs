//! Helpers shared by the render tests: building profiles by hand and reading our own SVG back.

#![allow(dead_code)]

use cpiflame_profile::{Columns, Count, EventColumn, Frame, FrameKind, Profile};
use cpiflame_render::{render_cpi, render_wall, Options};

/// A profile builder: `stack("app;main;foo", cycles, stalls)` with `(samples, period)` pairs.
pub struct Builder {
    pub profile: Profile,
}

impl Builder {
    pub fn new(events: &[&str]) -> Self {
        Builder {
            profile: Profile::new(
                events
                    .iter()
                    .map(|n| EventColumn {
                        name: (*n).to_string(),
                    })
                    .collect(),
            ),
        }
    }

    /// Adds a stack given as `;`-separated names; a name may carry a module after `@` and a
    /// kind prefix (`!` kernel, `~` inline). The first frame is a process frame.
    pub fn stack(&mut self, frames: &str, counts: &[(u64, u64)]) -> &mut Self {
        let ids: Vec<u32> = frames
            .split(';')
            .enumerate()
            .map(|(i, f)| {
                let (kind, f) = if i == 0 {
                    (FrameKind::Process, f)
                } else if let Some(rest) = f.strip_prefix('!') {
                    (FrameKind::Kernel, rest)
                } else if let Some(rest) = f.strip_prefix('~') {
                    (FrameKind::Inline, rest)
                } else {
                    (FrameKind::User, f)
                };
                let (name, module) = f.split_once('@').unwrap_or((f, ""));
                self.profile.intern(Frame {
                    name: name.to_string(),
                    module: module.to_string(),
                    kind,
                })
            })
            .collect();
        for (event, &(samples, period)) in counts.iter().enumerate() {
            if samples != 0 || period != 0 {
                self.profile.add(&ids, event, Count { samples, period });
            }
        }
        self
    }

    pub fn build(&mut self) -> Profile {
        std::mem::take(&mut self.profile)
    }
}

/// One frame read back from a rendered SVG.
#[derive(Clone, Debug)]
pub struct Drawn {
    pub name: String,
    pub title: String,
    pub s: u64,
    pub n: u64,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub fill: String,
    pub label: String,
    /// Filled in by [`parse`] from the row: 0 for "all".
    pub depth: u32,
}

/// A rendered SVG read back: checks that it is well-formed XML on the way.
pub struct Parsed {
    pub frames: Vec<Drawn>,
    pub subtitle: String,
    pub texts: Vec<String>,
    pub script: String,
}

impl Parsed {
    pub fn named(&self, name: &str) -> Vec<&Drawn> {
        self.frames.iter().filter(|f| f.name == name).collect()
    }

    pub fn one(&self, name: &str) -> &Drawn {
        let v = self.named(name);
        assert_eq!(v.len(), 1, "expected exactly one frame named {name:?}");
        v[0]
    }

    /// Frames one level deeper than `parent` that lie within it.
    pub fn children(&self, parent: &Drawn) -> Vec<&Drawn> {
        self.frames
            .iter()
            .filter(|f| {
                f.depth == parent.depth + 1 && f.s >= parent.s && f.s + f.n <= parent.s + parent.n
            })
            .collect()
    }
}

pub fn parse(svg: &str, inverted: bool) -> Parsed {
    let doc = match roxmltree::Document::parse(svg) {
        Ok(d) => d,
        Err(e) => panic!("SVG is not well-formed XML: {e}"),
    };
    let mut frames = Vec::new();
    for g in doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("f"))
    {
        let child = |tag: &str| {
            g.children()
                .find(|c| c.has_tag_name(tag))
                .unwrap_or_else(|| panic!("frame without <{tag}>"))
        };
        let title = child("title").text().unwrap_or("").to_string();
        let rect = child("rect");
        let num = |v: Option<&str>| -> f64 { v.expect("attribute").parse().expect("number") };
        frames.push(Drawn {
            name: title.lines().next().unwrap_or("").to_string(),
            s: g.attribute("data-s").expect("data-s").parse().expect("int"),
            n: g.attribute("data-n").expect("data-n").parse().expect("int"),
            x: num(rect.attribute("x")),
            y: num(rect.attribute("y")),
            width: num(rect.attribute("width")),
            fill: rect.attribute("fill").expect("fill").to_string(),
            label: child("text").text().unwrap_or("").to_string(),
            title,
            depth: 0,
        });
    }
    if let Some(root_y) = frames.first().map(|f| f.y) {
        for f in &mut frames {
            let rows = if inverted { f.y - root_y } else { root_y - f.y };
            assert!(rows >= 0.0 && rows % 16.0 == 0.0, "frame off the row grid");
            f.depth = (rows / 16.0) as u32;
        }
    }
    let text_of = |id: &str| {
        doc.descendants()
            .find(|n| n.attribute("id") == Some(id))
            .and_then(|n| n.text())
            .unwrap_or("")
            .to_string()
    };
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    let script = doc
        .descendants()
        .find(|n| n.has_tag_name("script"))
        .and_then(|n| n.text())
        .unwrap_or("")
        .to_string();
    Parsed {
        frames,
        subtitle: text_of("subtitle"),
        texts,
        script,
    }
}

/// The picture of `profile` its columns call for: the wall-time graph when their width is
/// wall time, else the CPI graph.
pub fn render(profile: &Profile, columns: &Columns, opts: &Options) -> String {
    let mut out = Vec::new();
    let drawn = match columns.wall() {
        Some(wall) => render_wall(profile, columns, wall, opts, &mut out),
        None => render_cpi(profile, columns, opts, &mut out),
    };
    if let Err(e) = drawn {
        panic!("rendering failed: {e}");
    }
    String::from_utf8(out).expect("SVG is UTF-8")
}

/// Options for tests: nothing dropped, fixed width.
pub fn opts() -> Options {
    Options {
        min_width: 0.0,
        ..Options::default()
    }
}

/// Panics unless `svg` is well-formed XML (a DOCTYPE, as inferno writes, is allowed).
pub fn parse_xml_ok(svg: &str) {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    if let Err(e) = roxmltree::Document::parse_with_options(svg, options) {
        panic!("SVG is not well-formed XML: {e}");
    }
}

/// Checks that `script` is valid JavaScript with `node --check`; skipped (with a note) when
/// `node` is not on PATH, a failure under CI=true.
pub fn node_check(script: &str, tag: &str) {
    let has_node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_node {
        cpiflame_testkit::unavailable(
            "the JavaScript syntax check needs `node`, which is not on PATH",
        );
        return;
    }
    let path =
        std::env::temp_dir().join(format!("cpiflame-render-{tag}-{}.js", std::process::id()));
    std::fs::write(&path, script).expect("write script");
    let out = std::process::Command::new("node")
        .arg("--check")
        .arg(&path)
        .output()
        .expect("run node");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "node --check failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Renders the differential graph; cycles are column 0 of both profiles.
pub fn render_diff_svg(
    before: &Profile,
    b_columns: &Columns,
    after: &Profile,
    a_columns: &Columns,
    opts: &cpiflame_render::DiffOptions,
) -> String {
    let mut out = Vec::new();
    if let Err(e) =
        cpiflame_render::render_diff(before, b_columns, after, a_columns, opts, &mut out)
    {
        panic!("render_diff failed: {e}");
    }
    String::from_utf8(out).expect("SVG is UTF-8")
}

/// Diff options for tests: nothing dropped, fixed width.
pub fn diff_opts() -> cpiflame_render::DiffOptions {
    cpiflame_render::DiffOptions {
        min_width: 0.0,
        ..cpiflame_render::DiffOptions::default()
    }
}

/// One row of the "gone in AFTER" list: the share text, the shown path and the tooltip.
#[derive(Clone, Debug)]
pub struct GoneRow {
    pub share: String,
    pub label: String,
    pub title: String,
}

/// The "gone in AFTER" section of a differential SVG: heading, rows, and the "+N more" line.
pub fn gone_section(svg: &str) -> (String, Vec<GoneRow>, Option<String>) {
    let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("gone"))
        .expect("a #gone section");
    let texts = |n: roxmltree::Node| -> Vec<String> {
        n.children()
            .filter(|c| c.has_tag_name("text"))
            .map(|c| c.text().unwrap_or("").to_string())
            .collect()
    };
    let top = texts(section);
    let heading = top.first().cloned().expect("heading");
    let more = top.get(1).cloned();
    let rows = section
        .children()
        .filter(|c| c.has_tag_name("g"))
        .map(|g| {
            let t = texts(g);
            GoneRow {
                share: t[0].clone(),
                label: t[1].clone(),
                title: g
                    .children()
                    .find(|c| c.has_tag_name("title"))
                    .and_then(|c| c.text())
                    .unwrap_or("")
                    .to_string(),
            }
        })
        .collect();
    (heading, rows, more)
}
