//! Reading the folded text format back into a [`Profile`]: the files `cpiflame fold`,
//! `stackcollapse-*.pl`, `inferno-collapse-*` and `difffolded.pl` write.
//!
//! # Format accepted
//!
//! One stack per line, root first, frames separated by `;`, then one or two counts separated
//! from the stack and from each other by spaces or tabs:
//!
//! ```text
//! # comment lines and blank lines are skipped
//! demo;main;memory_bound 120
//! demo;main;(anonymous namespace)::f() const 7
//! ```
//!
//! or, the two-count (differential) form, `stack stalls cycles` as `cpiflame fold` writes it
//! (FlameGraph's `difffolded.pl` writes `stack before after` the same way):
//!
//! ```text
//! demo;main;memory_bound 80 120
//! ```
//!
//! - **The stack** is everything before the last one or two counts, so frame names may
//!   contain spaces (`operator()`, `(anonymous namespace)::f`). Leading and trailing
//!   whitespace of a line is ignored.
//! - **How many counts** a file has is decided by its first stack line: two when the token
//!   before the last one is also a number, one otherwise. Every other line must have as many;
//!   a one-count file whose stack ends in a frame named like `f 12` is therefore read as
//!   having two counts. That ambiguity is the format's, not the reader's.
//! - **Counts** are unsigned decimal integers that fit in 64 bits. A fractional part of only
//!   zeros (`12.0`, `12.`, as some tools print whole numbers) is accepted; any other fraction,
//!   a sign, or anything else is an error. The counts of each column must add up to at most
//!   `u64::MAX` over the whole file.
//! - **Frames.** The first frame is the process (FlameGraph's root is the command name) and
//!   becomes [`FrameKind::Process`]. The others are [`FrameKind::User`], except names ending
//!   in `_[k]` ([`FrameKind::Kernel`]), `_[i]` ([`FrameKind::Inline`]) and `_[j]`
//!   ([`FrameKind::Jit`]), the annotations of `stackcollapse-perf.pl --kernel/--inline/--jit`,
//!   which are stripped. Other annotations (`_[w]`) stay part of the name. Modules are empty: folded files carry none.
//!   An empty frame name (`a;;b`, `a;b;`) is an error.
//! - **Comments.** Every line starting with `#` is one, as FlameGraph's own scripts write
//!   them; inferno skips only those starting with `# `, flamegraph.pl none. A file of another
//!   tool with a process named `#...` therefore loses those stacks here. cpiflame's writer
//!   never writes such a line, nor any name this reader would take apart differently from
//!   inferno and flamegraph.pl: it renames them ([`crate::folded_name`]).
//! - **Columns.** One count: a single event column named `samples`. Two counts: columns
//!   `stalls` (the first count) and `cycles` (the second), the order `cpiflame fold` writes
//!   them in. For a `difffolded.pl` file (`before after`) that makes `before` the "stalls"
//!   column; pick columns by index when that matters. A comment `# columns: NAME NAME` (or
//!   one name) before the first stack names the columns instead, when it names as many as
//!   there are counts: `cpiflame fold` writes `# columns: instructions cycles` before the
//!   CPI form, so that reading it back finds instructions, not stalls. FlameGraph's and
//!   inferno's tools skip it as a line without counts. A `# columns:` line naming three to
//!   [`MAX_COLUMNS`] columns makes the wide form: every stack line then ends in exactly that
//!   many counts (e.g. a top-down group, `# columns: slots cycles topdown-retiring ...`).
//! - **Periods.** Folded files carry no periods, so each [`Count`] has `period == samples`
//!   and every share computed from the profile is a ratio of samples.
//! - Lines with the same stack add up. A line whose counts are all zero is valid and adds
//!   nothing. Stacks appear in [`Profile::stacks`] in the order they are first seen.
//! - A file without a single stack line (empty, or only comments and blank lines) is an error.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead};

use crate::profile::{Count, EventColumn, Frame, FrameId, FrameKind, Profile};

/// What is wrong with a folded file; see [`FoldedError`] for where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FoldedErrorKind {
    /// Reading the input failed.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    /// The line is not UTF-8 text.
    #[error("not valid UTF-8")]
    NotUtf8,
    /// The line has no whitespace, so no count after a stack.
    #[error("no count after the stack (expected \"frame;frame COUNT\")")]
    MissingCount,
    /// The last token of the line is not a number.
    #[error("expected a count after the stack, found {found:?}")]
    NotACount { found: String },
    /// A count with a minus sign.
    #[error("count {found} is negative")]
    NegativeCount { found: String },
    /// A count with a fractional part other than zeros.
    #[error("count {found} is not a whole number")]
    FractionalCount { found: String },
    /// A count larger than `u64::MAX`.
    #[error("count {found} does not fit in 64 bits")]
    CountTooLarge { found: String },
    /// This line has a different number of counts than the first stack line.
    #[error("{found} count{}, but line {first_line} had {expected}", if *found == 1 { "" } else { "s" })]
    CountsMismatch {
        found: usize,
        expected: usize,
        first_line: usize,
    },
    /// Counts but no frames.
    #[error("empty stack")]
    EmptyStack,
    /// A frame with an empty name; `index` is 1-based (the root is frame 1).
    #[error("empty frame name (frame {index} of the stack)")]
    EmptyFrame { index: usize },
    /// The counts of one column, summed over the file so far, exceed `u64::MAX`.
    #[error("the {column} counts of the file add up to more than 64 bits")]
    TotalTooLarge { column: String },
    /// The file has no stack lines at all.
    #[error("no stacks")]
    NoStacks,
}

/// An error reading a folded file: which file (`source`, the name given to [`read_folded`]),
/// which line (1-based; 0 when the error concerns the whole file, as
/// [`FoldedErrorKind::NoStacks`] does) and what is wrong.
///
/// Displays as `SOURCE: line N: WHAT`, or `SOURCE: WHAT` for line 0.
#[derive(Debug)]
pub struct FoldedError {
    pub source: String,
    pub line: usize,
    pub kind: FoldedErrorKind,
}

impl fmt::Display for FoldedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source, self.kind)
        } else {
            write!(f, "{}: line {}: {}", self.source, self.line, self.kind)
        }
    }
}

impl std::error::Error for FoldedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            FoldedErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// A token that looks like a count: `[-]DIGITS[.DIGITS]`. `None` when it does not.
fn number_like(token: &str) -> Option<Result<u64, FoldedErrorKind>> {
    let unsigned = token.strip_prefix('-').unwrap_or(token);
    let (int, frac) = match unsigned.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (unsigned, None),
    };
    if int.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let found = || token.to_string();
    if unsigned.len() != token.len() {
        return Some(Err(FoldedErrorKind::NegativeCount { found: found() }));
    }
    if frac.is_some_and(|f| f.bytes().any(|b| b != b'0')) {
        return Some(Err(FoldedErrorKind::FractionalCount { found: found() }));
    }
    Some(
        int.parse::<u64>()
            .map_err(|_| FoldedErrorKind::CountTooLarge { found: found() }),
    )
}

fn is_blank(b: char) -> bool {
    b == ' ' || b == '\t'
}

/// Splits `line` (trimmed, non-empty) into the stack and its last token.
fn split_last(line: &str) -> Option<(&str, &str)> {
    let at = line.rfind(is_blank)?;
    Some((line[..at].trim_end_matches(is_blank), &line[at + 1..]))
}

/// The most counts a line of the wide form (`# columns:` naming more than two) may have.
pub const MAX_COLUMNS: usize = 16;

/// One parsed line: the stack text and its counts (`counts[..n]`).
struct Line<'a> {
    stack: &'a str,
    counts: [u64; MAX_COLUMNS],
    n: usize,
}

/// Parses a line of the wide form: exactly `n` counts (more than two) after the stack.
fn parse_wide(line: &str, n: usize) -> Result<Line<'_>, FoldedErrorKind> {
    let mut counts = [0u64; MAX_COLUMNS];
    let mut rest = line;
    for i in (0..n).rev() {
        let (before, token) = split_last(rest).unwrap_or(("", rest));
        counts[i] = match number_like(token) {
            Some(r) => r?,
            None => {
                return Err(FoldedErrorKind::NotACount {
                    found: token.to_string(),
                })
            }
        };
        rest = before;
    }
    if rest.is_empty() {
        return Err(FoldedErrorKind::EmptyStack);
    }
    Ok(Line {
        stack: rest,
        counts,
        n,
    })
}

/// Parses one trimmed, non-empty, non-comment line. `expected` is the number of counts the
/// file has, once known.
fn parse_line(line: &str, expected: Option<usize>) -> Result<Line<'_>, FoldedErrorKind> {
    if let Some(n) = expected.filter(|&n| n > 2) {
        return parse_wide(line, n);
    }
    let Some((rest, last)) = split_last(line) else {
        return Err(match number_like(line) {
            Some(Ok(_)) => FoldedErrorKind::EmptyStack,
            Some(Err(e)) => e,
            None => FoldedErrorKind::MissingCount,
        });
    };
    let last = match number_like(last) {
        Some(r) => r?,
        None => {
            return Err(FoldedErrorKind::NotACount {
                found: last.to_string(),
            })
        }
    };
    // A second count: the token before the last, when it looks like a number. On a line with
    // only that token left, it is a count too (and the stack is empty).
    let (second, stack) = match split_last(rest) {
        Some((stack, token)) => match number_like(token) {
            Some(r) => (Some(r), stack),
            None => (None, rest),
        },
        None => match number_like(rest) {
            Some(r) => (Some(r), ""),
            None => (None, rest),
        },
    };
    let mut counts = [0u64; MAX_COLUMNS];
    let line = match second {
        Some(first) => {
            counts[..2].copy_from_slice(&[first?, last]);
            Line {
                stack,
                counts,
                n: 2,
            }
        }
        None => {
            counts[0] = last;
            Line {
                stack: rest,
                counts,
                n: 1,
            }
        }
    };
    if let Some(expected) = expected {
        if expected != line.n {
            // The caller fills in `first_line`.
            return Err(FoldedErrorKind::CountsMismatch {
                found: line.n,
                expected,
                first_line: 0,
            });
        }
    }
    if line.stack.is_empty() {
        return Err(FoldedErrorKind::EmptyStack);
    }
    Ok(line)
}

/// The kind a non-root frame's annotation gives it, and the name without the annotation.
fn annotated(name: &str) -> (&str, FrameKind) {
    if let Some(n) = name.strip_suffix("_[k]") {
        (n, FrameKind::Kernel)
    } else if let Some(n) = name.strip_suffix("_[i]") {
        (n, FrameKind::Inline)
    } else if let Some(n) = name.strip_suffix("_[j]") {
        (n, FrameKind::Jit)
    } else {
        (name, FrameKind::User)
    }
}

/// The comment that names a folded file's count columns: `# columns: instructions cycles`.
pub const COLUMNS_COMMENT: &str = "# columns:";

/// Reads a folded file (one- or two-count form, see the [module docs](self)) into a profile.
/// `source` names the input in errors (a file name, or `-` / `stdin`).
///
/// The profile's stacks are in first-seen order; call [`Profile::sort`] for sorted output.
pub fn read_folded(mut input: impl BufRead, source: &str) -> Result<Profile, FoldedError> {
    let err = |line: usize, kind: FoldedErrorKind| FoldedError {
        source: source.to_string(),
        line,
        kind,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut line_no = 0usize;
    // (number of counts, line that decided it)
    let mut shape: Option<(usize, usize)> = None;
    let mut profile = Profile::default();
    let mut totals = [0u64; MAX_COLUMNS];
    // Column names from a `# columns: A B` line before the first stack (see the module docs).
    let mut named: Option<Vec<String>> = None;
    // Interned frames by their text in the file (annotation included), so a frame already
    // seen costs a lookup and no allocation.
    let mut roots: HashMap<String, FrameId> = HashMap::new();
    let mut others: HashMap<String, FrameId> = HashMap::new();
    let mut stack: Vec<FrameId> = Vec::new();
    loop {
        buf.clear();
        let read = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(line_no + 1, FoldedErrorKind::Io(e)))?;
        if read == 0 {
            break;
        }
        line_no += 1;
        let text = std::str::from_utf8(&buf).map_err(|_| err(line_no, FoldedErrorKind::NotUtf8))?;
        let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
        if text.is_empty() || text.starts_with('#') {
            if shape.is_none() {
                if let Some(names) = text.strip_prefix(COLUMNS_COMMENT) {
                    named = Some(names.split_whitespace().map(str::to_string).collect());
                }
            }
            continue;
        }
        // A `# columns:` line naming more than two columns: the wide form, that many counts.
        let wide = named
            .as_ref()
            .map(Vec::len)
            .filter(|&n| (3..=MAX_COLUMNS).contains(&n));
        let parsed = parse_line(text, shape.map(|(n, _)| n).or(wide)).map_err(|kind| {
            let kind = match kind {
                FoldedErrorKind::CountsMismatch {
                    found, expected, ..
                } => FoldedErrorKind::CountsMismatch {
                    found,
                    expected,
                    first_line: shape.map_or(0, |(_, l)| l),
                },
                other => other,
            };
            err(line_no, kind)
        })?;
        if shape.is_none() {
            shape = Some((parsed.n, line_no));
            let defaults: &[&str] = if parsed.n == 1 {
                &["samples"]
            } else {
                &["stalls", "cycles"]
            };
            let names: Vec<String> = match named.take() {
                Some(names) if names.len() == parsed.n => names,
                _ => defaults.iter().map(|n| n.to_string()).collect(),
            };
            profile = Profile::new(names.into_iter().map(|name| EventColumn { name }).collect());
        }
        for (i, total) in totals.iter_mut().enumerate().take(parsed.n) {
            *total = total.checked_add(parsed.counts[i]).ok_or_else(|| {
                err(
                    line_no,
                    FoldedErrorKind::TotalTooLarge {
                        column: profile.events[i].name.clone(),
                    },
                )
            })?;
        }

        stack.clear();
        for (index, name) in parsed.stack.split(';').enumerate() {
            if name.is_empty() {
                return Err(err(
                    line_no,
                    FoldedErrorKind::EmptyFrame { index: index + 1 },
                ));
            }
            let map = if index == 0 { &mut roots } else { &mut others };
            let id = match map.get(name) {
                Some(&id) => id,
                None => {
                    let (plain, kind) = if index == 0 {
                        (name, FrameKind::Process)
                    } else {
                        annotated(name)
                    };
                    // Whitespace around a name cannot be written back (before the counts it
                    // reads as their separator): `a; b` is `a;b`, and ` _[k]` is empty.
                    let plain = plain.trim_matches(|c: char| c.is_ascii_whitespace());
                    if plain.is_empty() {
                        return Err(err(
                            line_no,
                            FoldedErrorKind::EmptyFrame { index: index + 1 },
                        ));
                    }
                    let id = profile.intern(Frame {
                        name: plain.to_string(),
                        module: String::new(),
                        kind,
                    });
                    map.insert(name.to_string(), id);
                    id
                }
            };
            stack.push(id);
        }
        for (event, &count) in parsed.counts[..parsed.n].iter().enumerate() {
            if count > 0 {
                profile.add(
                    &stack,
                    event,
                    Count {
                        samples: count,
                        period: count,
                    },
                );
            }
        }
    }
    if shape.is_none() {
        return Err(err(0, FoldedErrorKind::NoStacks));
    }
    Ok(profile)
}

/// A cheap guess, from the first bytes of a file (a few hundred are plenty), whether it is a
/// folded text file: the folded half of `cpiflame_perf_data::InputKind::detect`, which
/// decides an input's kind (magic numbers first) and is what readers are chosen by.
///
/// False for binary data such as perf.data (its header holds NUL bytes), for empty input,
/// and for anything that is not text (NUL or other control bytes, invalid UTF-8 other than a
/// character cut off at the end). When the bytes hold a complete first stack line (after
/// blank and `#` lines), that line must end in a digit. A prefix that holds only part of
/// the first line, or only comments, counts as folded: the reader then says what is wrong.
pub fn looks_folded(first_bytes: &[u8]) -> bool {
    if first_bytes.is_empty() {
        return false;
    }
    let text = match std::str::from_utf8(first_bytes) {
        Ok(t) => t,
        // A character cut off by the end of the buffer is fine; anything else is binary.
        Err(e) if e.error_len().is_none() => {
            match std::str::from_utf8(&first_bytes[..e.valid_up_to()]) {
                Ok(t) => t,
                Err(_) => return false,
            }
        }
        Err(_) => return false,
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return false;
    }
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let complete = lines.peek().is_some();
        let line = line.trim_matches(|c: char| c.is_ascii_whitespace());
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !complete {
            return true;
        }
        return line.ends_with(|c: char| c.is_ascii_digit()) && line.contains(is_blank);
    }
    true
}
