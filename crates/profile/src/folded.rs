//! The folded text format (`frame;frame;frame count`), as stackcollapse-perf writes it and
//! FlameGraph and inferno read it.
//!
//! Names the format cannot carry as they are (a process named `#ffcpu`, control bytes, a
//! trailing `_[k]` on a user frame...) are renamed: see [`folded_name`].

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

use crate::profile::{FrameKind, Profile, Stack};

/// The annotations FlameGraph and inferno strip from the end of a name they show.
const ANNOTATIONS: [&str; 4] = ["_[k]", "_[i]", "_[j]", "_[w]"];

/// The name written for a frame whose name is empty (or only whitespace).
pub const EMPTY_NAME: &str = "[empty]";

/// How a frame named `name` is written in folded text (before the kind's annotation); `first`
/// when it is the first frame of its line. Names that need none of the rules below are
/// returned as they are.
///
/// The format has no escapes, and its three readers (cpiflame's own, [`crate::read`];
/// inferno's `flamegraph`; FlameGraph's `flamegraph.pl`) each take some names apart
/// differently. So that every line written here reads back as the same frames and counts in
/// all three, a frame's name is rewritten, in this order:
///
/// 1. **Control characters** (NUL, tab, newline, carriage return, the other C0 and C1
///    characters and DEL) become `\xNN` (C0, DEL) or `\u{NN}` (C1), hex, upper case: a
///    newline would end the line, a tab or carriage return is whitespace to some readers and
///    not to others.
/// 2. **Other whitespace** than the space (no-break space, the Unicode spaces, line and
///    paragraph separators) becomes a space: inferno trims it at line ends and splits counts
///    off at spaces only, cpiflame at spaces and tabs.
/// 3. **`;`** becomes `:`; FlameGraph has no way to keep it in a name.
/// 4. **Spaces at either end** are trimmed (again after rule 5, which leaves one at the
///    start of `_[k]`): cpiflame and inferno trim lines, cpiflame trims every name,
///    flamegraph.pl keeps them.
/// 5. A name **ending in an annotation**, `_[k]`, `_[i]`, `_[j]` or `_[w]`, gets a space for
///    that `_` (`f_[k]` is written `f [k]`): flamegraph.pl and inferno strip the annotation
///    from every frame they show, cpiflame takes `_[k]`, `_[i]` and `_[j]` for the frame's
///    kind. (The annotation this writer appends for a kernel, inlined or JIT frame comes
///    after the rewritten name: a kernel frame named `f_[k]` is written `f [k]_[k]`.)
/// 6. A name **ending in a number** after a space (`f 12`, `f -3`, `f 1.5`) gets `_` for that
///    space (`f_12`): as the last frame of a one-count line, every reader would take the
///    number for a count.
/// 7. An **empty** name (empty from the start, or only whitespace) becomes `[empty]`:
///    cpiflame refuses empty frames, the others show blank ones.
/// 8. The **first frame of a line starting with `#`** gets `\x23` for that `#` (a process
///    named `#ffcpu` is written `\x23ffcpu`): cpiflame skips lines starting with `#` as
///    comments, inferno those starting with `# `, flamegraph.pl none.
/// 9. The **first frame of a line that is a number** (`12`, `-3`, `1.5`) gets a `_` in front
///    (`_12`): alone on a one-count line (`12 5`), cpiflame would take it for a count.
///
/// (The first frame of a line is also written without its kind's annotation, which no
/// reader would take back: cpiflame takes it for the process whatever its name.)
///
/// The rewriting is a renaming, not an escape: no reader undoes it, so a name shows in every
/// flame graph as written. Two frames whose names are rewritten to the same text read back
/// as one (their stacks' counts add up), and writing what was read back gives the same text
/// again.
pub fn folded_name(name: &str, first: bool) -> Cow<'_, str> {
    if is_plain(name, first) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            ';' => out.push(':'),
            c if c.is_control() => {
                let code = u32::from(c);
                if code < 0x80 {
                    let _ = write!(out, "\\x{code:02X}");
                } else {
                    let _ = write!(out, "\\u{{{code:X}}}");
                }
            }
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    let mut name = out.trim_matches(' ').to_string();
    if ANNOTATIONS.iter().any(|a| name.ends_with(a)) {
        // `_[k]` is four ASCII bytes: the `_` is at len - 4.
        let at = name.len() - 4;
        name.replace_range(at..at + 1, " ");
    }
    if let Some(at) = number_suffix(&name) {
        name.replace_range(at..at + 1, "_");
    }
    let mut name = name.trim_matches(' ').to_string();
    if name.is_empty() {
        name.push_str(EMPTY_NAME);
    }
    if first && name.starts_with('#') {
        name.replace_range(0..1, "\\x23");
    }
    if first && is_number(&name) {
        name.insert(0, '_');
    }
    Cow::Owned(name)
}

/// Whether `name` is written as it is: none of the rules of [`folded_name`] applies.
fn is_plain(name: &str, first: bool) -> bool {
    let rewritten = name.is_empty()
        || name.starts_with(' ')
        || name.ends_with(' ')
        || (first && name.starts_with('#'))
        || name
            .chars()
            .any(|c| c == ';' || c.is_control() || (c.is_whitespace() && c != ' '))
        || ANNOTATIONS.iter().any(|a| name.ends_with(a))
        || number_suffix(name).is_some()
        || (first && is_number(name));
    !rewritten
}

/// Where the space is, in a name ending in a space and a number: `Some` of its byte offset.
fn number_suffix(name: &str) -> Option<usize> {
    let at = name.rfind(' ')?;
    is_number(&name[at + 1..]).then_some(at)
}

/// Whether `token` is a number as the readers take counts (`[-]DIGITS[.[DIGITS]]`, cpiflame
/// refusing the signed and fractional ones as errors).
fn is_number(token: &str) -> bool {
    let unsigned = token.strip_prefix('-').unwrap_or(token);
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
}

fn write_stack<W: Write>(profile: &Profile, stack: &Stack, out: &mut W) -> io::Result<()> {
    for (i, &id) in stack.frames.iter().enumerate() {
        if i > 0 {
            out.write_all(b";")?;
        }
        let frame = profile.frame(id);
        out.write_all(folded_name(&frame.name, i == 0).as_bytes())?;
        // Kinds as stackcollapse-perf's --all (--kernel, --jit, --inline) annotates them;
        // FlameGraph and inferno strip the annotation when they show the name (and colour
        // by it), and cpiflame reads it back, except on the first frame, which it takes for
        // the process whatever its name: none there (a profile's first frame is a root
        // anyway), so that every reader sees the same name.
        if i == 0 {
            continue;
        }
        match frame.kind {
            FrameKind::Kernel => out.write_all(b"_[k]")?,
            FrameKind::Inline => out.write_all(b"_[i]")?,
            FrameKind::Jit => out.write_all(b"_[j]")?,
            FrameKind::Process | FrameKind::Thread | FrameKind::Cgroup | FrameKind::User => {}
        }
    }
    Ok(())
}

/// Writes one line per stack with a non-zero sample count of `event`: `stack samples`.
/// Stacks come out in the profile's order; call [`Profile::sort`] first for stable output.
pub fn write_folded<W: Write>(profile: &Profile, event: usize, mut out: W) -> io::Result<()> {
    for stack in &profile.stacks {
        let count = stack.counts[event].samples;
        if count == 0 {
            continue;
        }
        write_stack(profile, stack, &mut out)?;
        writeln!(out, " {count}")?;
    }
    Ok(())
}

/// Writes one line per stack with a non-zero summed period of `events` (summed over them):
/// `stack period`. For columns whose periods are the quantity itself rather than a sample's
/// weight: the wall-time columns ([`crate::wall`]), whose periods are nanoseconds and whose
/// samples only count the intervals that added to them; all three give the wall time.
pub fn write_folded_periods<W: Write>(
    profile: &Profile,
    events: &[usize],
    mut out: W,
) -> io::Result<()> {
    for stack in &profile.stacks {
        let period = events
            .iter()
            .fold(0u64, |sum, &e| sum.saturating_add(stack.counts[e].period));
        if period == 0 {
            continue;
        }
        write_stack(profile, stack, &mut out)?;
        writeln!(out, " {period}")?;
    }
    Ok(())
}

/// Writes the two-count differential form `stack first second` (sample counts, not
/// normalised), which `flamegraph.pl` and `inferno-flamegraph` read as before/after:
/// `difffolded.pl` and flamegraph.pl treat the *first* column as "before" and the second as
/// "after", widths come from the second. `cpiflame fold` writes `stack stalls cycles` with a
/// stall pair and `stack instructions cycles` with only cycles and instructions, so that
/// widths are cycles in both.
///
/// The counts are samples, as for [`write_folded`] and as FlameGraph's tools expect; periods
/// (the CPI flame graph's widths and ratios) are not in folded text. For a fixed sampling
/// period the two are proportional; in frequency mode they are not.
pub fn write_folded_pair<W: Write>(
    profile: &Profile,
    first: usize,
    second: usize,
    mut out: W,
) -> io::Result<()> {
    for stack in &profile.stacks {
        let a = stack.counts[first].samples;
        let b = stack.counts[second].samples;
        if a == 0 && b == 0 {
            continue;
        }
        write_stack(profile, stack, &mut out)?;
        writeln!(out, " {a} {b}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Count, EventColumn, Frame, FrameId, FrameKind};

    fn frame(name: &str) -> Frame {
        Frame {
            name: name.into(),
            module: String::new(),
            kind: FrameKind::User,
        }
    }

    #[test]
    fn writes_single_and_pair_forms_in_sorted_order() {
        let mut p = Profile::new(vec![
            EventColumn {
                name: "stalls".into(),
            },
            EventColumn {
                name: "cycles".into(),
            },
        ]);
        let app = p.intern(frame("app"));
        let b = p.intern(frame("b"));
        let a = p.intern(frame("a;x"));
        p.add(
            &[app, b],
            1,
            Count {
                samples: 3,
                period: 30,
            },
        );
        p.add(
            &[app, a],
            1,
            Count {
                samples: 2,
                period: 20,
            },
        );
        p.add(
            &[app, a],
            0,
            Count {
                samples: 1,
                period: 10,
            },
        );
        p.sort();
        let mut one = Vec::new();
        write_folded(&p, 0, &mut one).unwrap();
        assert_eq!(String::from_utf8(one).unwrap(), "app;a:x 1\n");
        let mut two = Vec::new();
        write_folded_pair(&p, 0, 1, &mut two).unwrap();
        assert_eq!(String::from_utf8(two).unwrap(), "app;a:x 1 2\napp;b 0 3\n");
    }

    #[test]
    fn renaming_is_done_once_and_only_where_needed() {
        let names = [
            "",
            " ",
            "\t",
            "main",
            "#x",
            "# x",
            "12",
            "-3",
            "1.",
            "f 12",
            "f -3",
            "f 1.5",
            "f 1x",
            "_[k]",
            "_[k] ",
            "f_[w]",
            "f_[x]",
            "f [k]",
            "a;b",
            "nul\0",
            "\u{85}",
            "a\u{a0}",
            "\u{3000}b",
            "operator() const",
            "[unknown]",
            "#12",
            " _[i]",
        ];
        for first in [true, false] {
            for name in names {
                let once = folded_name(name, first);
                assert_eq!(
                    matches!(once, Cow::Borrowed(_)),
                    once == name,
                    "{name:?}: borrowed exactly when unchanged"
                );
                assert_eq!(folded_name(&once, first), once, "{name:?} renamed twice");
                assert!(
                    !once.is_empty() && once.trim() == once,
                    "{name:?} -> {once:?}"
                );
            }
        }
        assert_eq!(folded_name("#x", false), "#x");
        assert_eq!(folded_name("12", false), "12");
        assert_eq!(folded_name("f 1x", true), "f 1x");
        assert_eq!(folded_name("f_[x]", true), "f_[x]");
    }

    #[test]
    fn the_first_frame_carries_no_annotation() {
        let mut p = Profile::new(vec![EventColumn {
            name: "cycles".into(),
        }]);
        let kernel = |name: &str| Frame {
            name: name.into(),
            module: String::new(),
            kind: FrameKind::Kernel,
        };
        let root = p.intern(kernel("swapper"));
        let leaf = p.intern(kernel("do_idle"));
        let count = Count {
            samples: 2,
            period: 2,
        };
        p.add(&[root, leaf], 0, count);
        let mut text = Vec::new();
        write_folded(&p, 0, &mut text).unwrap();
        assert_eq!(String::from_utf8(text).unwrap(), "swapper;do_idle_[k] 2\n");
    }

    #[test]
    fn writes_instructions_then_cycles_samples_not_periods() {
        let mut p = Profile::new(vec![
            EventColumn {
                name: "cycles".into(),
            },
            EventColumn {
                name: "instructions".into(),
            },
        ]);
        let app = p.intern(frame("app"));
        let fast = p.intern(frame("fast"));
        let slow = p.intern(frame("slow"));
        let add = |p: &mut Profile, f: FrameId, e: usize, samples: u64| {
            // Periods unlike samples: the columns must stay samples.
            let period = samples * 1_000_003;
            p.add(&[app, f], e, Count { samples, period });
        };
        add(&mut p, fast, 0, 4);
        add(&mut p, fast, 1, 16);
        add(&mut p, slow, 0, 8);
        add(&mut p, slow, 1, 1);
        let only = p.intern(frame("only_instructions"));
        add(&mut p, only, 1, 2);
        p.sort();
        let mut two = Vec::new();
        // Instructions first ("before"), cycles second ("after": the widths).
        write_folded_pair(&p, 1, 0, &mut two).unwrap();
        assert_eq!(
            String::from_utf8(two).unwrap(),
            "app;fast 16 4\napp;only_instructions 2 0\napp;slow 1 8\n"
        );
    }
}
