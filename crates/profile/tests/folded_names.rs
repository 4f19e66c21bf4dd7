//! Names the folded format cannot carry as they are (issue 35 item 5): what `fold` writes
//! for them (the rule of `cpiflame_profile::folded_name`, spelled out here by hand), that
//! cpiflame's reader reads every such line back as the same frames and counts, and that
//! inferno's flamegraph, a reader written independently, parses the same frames with the
//! same counts at the same depths.

use std::collections::BTreeMap;

use cpiflame_profile::{
    read_folded, write_folded, write_folded_pair, Count, EventColumn, Frame, FrameKind, Profile,
};

use FrameKind::{Inline, Jit, Kernel, Process, User};

/// A stack: frames (name, kind), root first, and its sample counts in the two columns.
type Stack = (Vec<(&'static str, FrameKind)>, [u64; 2]);

/// Stacks with hostile names: a process starting with `#` (a mutated `offcpu`), control
/// bytes, `;`, annotation and count suffixes, whitespace at the ends, empty names, a process
/// named like a count alone on its line.
fn hostile() -> Vec<Stack> {
    vec![
        (
            vec![
                ("#ffcpu [27415]", Process),
                ("main", User),
                ("a;b", User),
                ("sym 8192", User),
            ],
            [3, 5],
        ),
        (
            vec![
                ("#ffcpu [27415]", Process),
                ("main", User),
                ("nul\0byte", User),
                ("k_[k]", Kernel),
            ],
            [1, 2],
        ),
        (
            vec![
                ("  padded\t", Process),
                ("tab\there", User),
                ("line\nbreak", User),
                ("cr\r", User),
                ("f_[k]", User),
            ],
            [2, 0],
        ),
        (
            vec![
                ("", Process),
                ("g_[w]", User),
                ("_[k] ", User),
                ("neg -3", User),
            ],
            [0, 4],
        ),
        (
            vec![
                ("worker", Process),
                ("nbsp\u{a0}end\u{a0}", User),
                ("c1\u{85}", User),
                ("  ", User),
                ("inl 12", Inline),
                ("", Jit),
            ],
            [7, 7],
        ),
        (vec![("worker", Process), ("frac 1.5", User)], [1, 1]),
        (vec![("# spaced", Process), ("x_[i]", User)], [1, 1]),
        (vec![("12", Process)], [2, 2]),
    ]
}

/// The same stacks as every reader must see them: the names `fold` writes, with the kinds
/// cpiflame reads back (annotations stripped), in the same order.
fn renamed() -> Vec<Stack> {
    vec![
        (
            vec![
                ("\\x23ffcpu [27415]", Process),
                ("main", User),
                ("a:b", User),
                ("sym_8192", User),
            ],
            [3, 5],
        ),
        (
            vec![
                ("\\x23ffcpu [27415]", Process),
                ("main", User),
                ("nul\\x00byte", User),
                ("k [k]", Kernel),
            ],
            [1, 2],
        ),
        (
            vec![
                ("padded\\x09", Process),
                ("tab\\x09here", User),
                ("line\\x0Abreak", User),
                ("cr\\x0D", User),
                ("f [k]", User),
            ],
            [2, 0],
        ),
        (
            vec![
                ("[empty]", Process),
                ("g [w]", User),
                ("[k]", User),
                ("neg_-3", User),
            ],
            [0, 4],
        ),
        (
            vec![
                ("worker", Process),
                ("nbsp end", User),
                ("c1\\u{85}", User),
                ("[empty]", User),
                ("inl_12", Inline),
                ("[empty]", Jit),
            ],
            [7, 7],
        ),
        (vec![("worker", Process), ("frac_1.5", User)], [1, 1]),
        (vec![("\\x23 spaced", Process), ("x [i]", User)], [1, 1]),
        (vec![("_12", Process)], [2, 2]),
    ]
}

fn profile_of(stacks: &[Stack]) -> Profile {
    let mut p = Profile::new(vec![
        EventColumn {
            name: "stalls".into(),
        },
        EventColumn {
            name: "cycles".into(),
        },
    ]);
    for (frames, counts) in stacks {
        let ids: Vec<_> = frames
            .iter()
            .map(|&(name, kind)| {
                p.intern(Frame {
                    name: name.into(),
                    module: String::new(),
                    kind,
                })
            })
            .collect();
        for (event, &samples) in counts.iter().enumerate() {
            if samples > 0 {
                let count = Count {
                    samples,
                    period: samples,
                };
                p.add(&ids, event, count);
            }
        }
    }
    p
}

/// Stacks as (frames with kinds, counts per column), sorted: an order-independent view.
type View = Vec<(Vec<(String, FrameKind)>, Vec<u64>)>;

/// A profile's stacks as a [`View`].
fn view(p: &Profile) -> View {
    let mut v: Vec<_> = p
        .stacks
        .iter()
        .map(|s| {
            let frames = s
                .frames
                .iter()
                .map(|&f| (p.frame(f).name.clone(), p.frame(f).kind))
                .collect();
            (frames, s.counts.iter().map(|c| c.samples).collect())
        })
        .collect();
    v.sort();
    v
}

/// `stacks` keeping only the columns `columns` (stacks with all of them zero dropped).
fn columns_of(stacks: &[Stack], columns: &[usize]) -> View {
    let mut v: Vec<_> = stacks
        .iter()
        .filter(|(_, c)| columns.iter().any(|&i| c[i] > 0))
        .map(|(frames, c)| {
            (
                frames.iter().map(|&(n, k)| (n.to_string(), k)).collect(),
                columns.iter().map(|&i| c[i]).collect(),
            )
        })
        .collect();
    v.sort();
    v
}

fn lines(text: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = std::str::from_utf8(text)
        .expect("fold writes UTF-8")
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn fold_renames_what_the_format_cannot_carry() {
    let p = profile_of(&hostile());
    let mut two = Vec::new();
    write_folded_pair(&p, 0, 1, &mut two).unwrap();
    assert_eq!(
        lines(&two),
        [
            "[empty];g [w];[k];neg_-3 0 4",
            "\\x23 spaced;x [i] 1 1",
            "\\x23ffcpu [27415];main;a:b;sym_8192 3 5",
            "\\x23ffcpu [27415];main;nul\\x00byte;k [k]_[k] 1 2",
            "_12 2 2",
            "padded\\x09;tab\\x09here;line\\x0Abreak;cr\\x0D;f [k] 2 0",
            "worker;frac_1.5 1 1",
            "worker;nbsp end;c1\\u{85};[empty];inl_12_[i];[empty]_[j] 7 7",
        ]
    );
}

#[test]
fn every_line_fold_writes_reads_back_as_the_same_frames_in_cpiflame() {
    let p = profile_of(&hostile());
    let mut two = Vec::new();
    write_folded_pair(&p, 0, 1, &mut two).unwrap();
    let back = read_folded(two.as_slice(), "two.folded").unwrap();
    assert_eq!(view(&back), columns_of(&renamed(), &[0, 1]));
    // Written again, the same text: the renaming is done once.
    let mut again = Vec::new();
    write_folded_pair(&back, 0, 1, &mut again).unwrap();
    assert_eq!(lines(&again), lines(&two));

    // The one-count form of each column: no name ending in a number reads as a second count,
    // no line starting with `#` as a comment.
    for column in 0..2 {
        let mut one = Vec::new();
        write_folded(&p, column, &mut one).unwrap();
        let back = read_folded(one.as_slice(), "one.folded").unwrap();
        assert_eq!(back.events.len(), 1, "{}", String::from_utf8_lossy(&one));
        assert_eq!(view(&back), columns_of(&renamed(), &[column]));
    }
}

/// The frames of inferno's flame graph of `folded`: (depth, name as shown, width in samples),
/// from each frame's `<title>` and `<rect>` (`fg:w`, and `y` for the depth), depth 0 being
/// inferno's `all` frame. Zero-width frames are left out.
fn inferno_frames(folded: &[u8]) -> Vec<(usize, String, u64)> {
    let mut options = inferno::flamegraph::Options::default();
    options.min_width = 0.0;
    let mut svg = Vec::new();
    inferno::flamegraph::from_reader(&mut options, folded, &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    let mut frames = Vec::new();
    let mut rest = svg.as_str();
    while let Some(at) = rest.find("<title>") {
        rest = &rest[at + "<title>".len()..];
        let end = rest.find("</title>").unwrap();
        let title = unescape(&rest[..end]);
        let rect = &rest[rest.find("<rect ").unwrap()..];
        let rect = &rect[..rect.find("/>").unwrap()];
        let attr = |name: &str| {
            let from = rect.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            rect[from..from + rect[from..].find('"').unwrap()].to_string()
        };
        let y: u64 = attr("y").parse().unwrap();
        let width: u64 = attr("fg:w").parse().unwrap();
        // `NAME (N samples, P%)`: the info in parentheses holds none.
        let name = title[..title.rfind(" (").unwrap()].to_string();
        frames.push((y, name, width));
    }
    // The root at the bottom: the largest y is depth 0.
    let mut ys: Vec<u64> = frames.iter().map(|f| f.0).collect();
    ys.sort_unstable_by(|a, b| b.cmp(a));
    ys.dedup();
    let mut v: Vec<_> = frames
        .into_iter()
        .filter(|f| f.2 > 0)
        .map(|(y, name, width)| (ys.iter().position(|&d| d == y).unwrap(), name, width))
        .collect();
    v.sort();
    v
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The frames a flame graph of `stacks` (in column `column`) has: each distinct path from the
/// root, with the counts of the stacks through it, at its depth (1 for the root frame).
fn expected_frames(stacks: &[Stack], column: usize) -> Vec<(usize, String, u64)> {
    let mut paths: BTreeMap<Vec<&str>, u64> = BTreeMap::new();
    for (frames, counts) in stacks {
        for depth in 1..=frames.len() {
            let path = frames[..depth].iter().map(|f| f.0).collect();
            *paths.entry(path).or_default() += counts[column];
        }
    }
    let total: u64 = stacks.iter().map(|s| s.1[column]).sum();
    let mut v: Vec<_> = paths
        .into_iter()
        .filter(|&(_, w)| w > 0)
        .map(|(path, w)| (path.len(), path.last().unwrap().to_string(), w))
        .chain([(0, "all".to_string(), total)])
        .collect();
    v.sort();
    v
}

#[test]
fn inferno_parses_the_same_frames_and_counts() {
    let p = profile_of(&hostile());
    // One count: the widths are the column's samples.
    for column in 0..2 {
        let mut one = Vec::new();
        write_folded(&p, column, &mut one).unwrap();
        assert_eq!(
            inferno_frames(&one),
            expected_frames(&renamed(), column),
            "column {column}:\n{}",
            String::from_utf8_lossy(&one)
        );
    }
    // Two counts: inferno reads `before after`, widths from the second.
    let mut two = Vec::new();
    write_folded_pair(&p, 0, 1, &mut two).unwrap();
    assert_eq!(
        inferno_frames(&two),
        expected_frames(&renamed(), 1),
        "{}",
        String::from_utf8_lossy(&two)
    );
}
