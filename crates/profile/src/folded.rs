//! The folded text format (`frame;frame;frame count`), as stackcollapse-perf writes it and
//! FlameGraph and inferno read it.

use std::io::{self, Write};

use crate::profile::{FrameKind, Profile, Stack};

fn write_stack<W: Write>(profile: &Profile, stack: &Stack, out: &mut W) -> io::Result<()> {
    for (i, &id) in stack.frames.iter().enumerate() {
        if i > 0 {
            out.write_all(b";")?;
        }
        // A ';' inside a name would split the frame when read back; FlameGraph has no escape.
        let frame = profile.frame(id);
        if frame.name.contains(';') {
            out.write_all(frame.name.replace(';', ":").as_bytes())?;
        } else {
            out.write_all(frame.name.as_bytes())?;
        }
        // Kinds as stackcollapse-perf's --all (--kernel, --jit, --inline) annotates them;
        // FlameGraph and inferno strip the annotation when they show the name (and colour
        // by it), and cpiflame reads it back.
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
