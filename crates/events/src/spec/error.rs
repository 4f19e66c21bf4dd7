//! What the event-spec parser refuses ([`SpecError`]), worded as perf's users need it: the
//! spec, the part of it at fault, and the nearest known name when a name is unknown.
//!
//! Messages only: this module must never decide what is valid (that is the parser's).

use std::fmt;

/// The modifiers listed by [`SpecError::UnknownModifier`].
const SUPPORTED_MODIFIERS: &str = "u, k, h, G, H, I, p, pp, ppp, S, D, e";

/// A spec that does not parse. Every variant names the whole spec text and the part at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// Nothing between two commas, or no text at all.
    Empty {
        spec: String,
    },
    /// Not a generic name, raw encoding or PMU spec.
    UnknownEvent {
        spec: String,
        name: String,
        suggestions: Vec<String>,
    },
    /// `pmu/...` without its closing `/`.
    Unterminated {
        spec: String,
        part: String,
    },
    BadPmuName {
        spec: String,
        part: String,
    },
    UnknownTerm {
        spec: String,
        pmu: String,
        term: String,
        /// Nearest known terms, or every known term when none is near.
        suggestions: Vec<String>,
        all_terms: Vec<String>,
    },
    BadNumber {
        spec: String,
        term: String,
        value: String,
    },
    ValueTooBig {
        spec: String,
        term: String,
        value: u64,
        bits: u32,
    },
    MissingValue {
        spec: String,
        term: String,
    },
    BadTerm {
        spec: String,
        term: String,
        reason: &'static str,
    },
    DuplicateTerm {
        spec: String,
        term: String,
    },
    /// Not a modifier perf knows.
    UnknownModifier {
        spec: String,
        part: String,
        modifier: char,
    },
    /// A modifier perf knows that cpiflame cannot honour (`P`, `W`, `b`, `R`, `X`).
    RefusedModifier {
        spec: String,
        part: String,
        modifier: char,
        reason: &'static str,
    },
    /// The same modifier twice (`p` excepted), which perf refuses too.
    DuplicateModifier {
        spec: String,
        part: String,
        modifier: char,
    },
    /// A term other than `period`, `freq`, `name` on a generic or raw event.
    UnsupportedTerm {
        spec: String,
        /// The event the terms follow (`cpu-clock`).
        event: String,
        term: String,
        /// Nearest of `period`, `freq`, `name`.
        suggestions: Vec<String>,
    },
    BadModifiers {
        spec: String,
        part: String,
        reason: &'static str,
    },
    Unsupported {
        spec: String,
        part: String,
        what: &'static str,
    },
    /// A `{...}` group that does not parse: nested, unbalanced, empty, or text after its
    /// closing brace other than `:modifiers`.
    BadGroup {
        spec: String,
        part: String,
        reason: &'static str,
    },
    /// [`parse_event`](crate::parse_event) given a list.
    NotOneEvent {
        spec: String,
        count: usize,
    },
}

impl SpecError {
    /// The whole spec text as given.
    pub fn spec(&self) -> &str {
        match self {
            SpecError::Empty { spec }
            | SpecError::UnknownEvent { spec, .. }
            | SpecError::Unterminated { spec, .. }
            | SpecError::BadPmuName { spec, .. }
            | SpecError::UnknownTerm { spec, .. }
            | SpecError::BadNumber { spec, .. }
            | SpecError::ValueTooBig { spec, .. }
            | SpecError::MissingValue { spec, .. }
            | SpecError::BadTerm { spec, .. }
            | SpecError::DuplicateTerm { spec, .. }
            | SpecError::UnknownModifier { spec, .. }
            | SpecError::RefusedModifier { spec, .. }
            | SpecError::DuplicateModifier { spec, .. }
            | SpecError::UnsupportedTerm { spec, .. }
            | SpecError::BadModifiers { spec, .. }
            | SpecError::Unsupported { spec, .. }
            | SpecError::BadGroup { spec, .. }
            | SpecError::NotOneEvent { spec, .. } => spec,
        }
    }
}

/// ` in 'SPEC'` unless the spec is just the offending part.
pub(super) struct In<'a>(&'a str, &'a str);

impl fmt::Display for In<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.trim() == self.1 {
            Ok(())
        } else {
            write!(f, " in '{}'", self.0)
        }
    }
}

/// `a`, `a or b`, `a, b or c`.
pub(crate) fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Empty { spec } if spec.trim().is_empty() => write!(f, "empty event spec"),
            SpecError::Empty { spec } => write!(f, "empty event in '{spec}'"),
            SpecError::UnknownEvent {
                spec,
                name,
                suggestions,
            } => {
                write!(f, "unknown event '{name}'{}", In(spec, name))?;
                if !suggestions.is_empty() {
                    write!(f, " (did you mean {}?)", or_list(suggestions))?;
                } else {
                    write!(f, ": neither a generic event nor an alias in a core PMU's events/ (cpu, cpu_core, armv8_*) on this machine")?;
                }
                Ok(())
            }
            SpecError::Unterminated { spec, part } => write!(
                f,
                "unterminated PMU term list '{part}' (missing closing '/'){}",
                In(spec, part)
            ),
            SpecError::BadPmuName { spec, part } => {
                write!(f, "bad PMU name in '{part}'{}", In(spec, part))
            }
            SpecError::UnknownTerm {
                spec,
                pmu,
                term,
                suggestions,
                all_terms,
            } => {
                write!(f, "unknown term '{term}' for PMU '{pmu}' in '{spec}'")?;
                if suggestions.is_empty() {
                    write!(f, " (known terms: {})", all_terms.join(", "))
                } else {
                    write!(f, " (did you mean {}?)", or_list(suggestions))
                }
            }
            SpecError::BadNumber { spec, term, value } => {
                write!(f, "bad number '{value}' for '{term}' in '{spec}'")
            }
            SpecError::ValueTooBig {
                spec,
                term,
                value,
                bits,
            } => write!(
                f,
                "value {value:#x} for '{term}' does not fit in its {bits} bits in '{spec}'"
            ),
            SpecError::MissingValue { spec, term } => {
                write!(f, "term '{term}' needs a value ({term}=...) in '{spec}'")
            }
            SpecError::BadTerm { spec, term, reason } => {
                write!(f, "bad term '{term}' in '{spec}': {reason}")
            }
            SpecError::DuplicateTerm { spec, term } => {
                write!(f, "term '{term}' given twice in '{spec}'")
            }
            SpecError::UnknownModifier {
                spec,
                part,
                modifier,
            } => write!(
                f,
                "unknown modifier '{modifier}' in '{part}'{} (supported: {SUPPORTED_MODIFIERS})",
                In(spec, part)
            ),
            SpecError::RefusedModifier {
                spec,
                part,
                modifier,
                reason,
            } => write!(
                f,
                "modifier '{modifier}' in '{part}'{} is not supported: {reason}",
                In(spec, part)
            ),
            SpecError::DuplicateModifier {
                spec,
                part,
                modifier,
            } => write!(
                f,
                "modifier '{modifier}' given twice in '{part}'{}",
                In(spec, part)
            ),
            SpecError::UnsupportedTerm {
                spec,
                event,
                term,
                suggestions,
            } => {
                write!(
                    f,
                    "term '{term}' is not supported on '{event}' in '{spec}' (generic and raw events take period, freq and name"
                )?;
                if !suggestions.is_empty() {
                    write!(f, "; did you mean {}?", or_list(suggestions))?;
                }
                write!(f, ")")
            }
            SpecError::BadModifiers { spec, part, reason } => {
                write!(f, "bad modifiers in '{part}'{}: {reason}", In(spec, part))
            }
            SpecError::Unsupported { spec, part, what } => {
                write!(f, "'{part}'{}: {what} not supported", In(spec, part))
            }
            SpecError::BadGroup { spec, part, reason } => {
                write!(f, "bad group '{part}'{}: {reason}", In(spec, part))
            }
            SpecError::NotOneEvent { spec, count } => {
                write!(f, "expected one event, got {count} in '{spec}'")
            }
        }
    }
}

impl std::error::Error for SpecError {}

/// Levenshtein distance over chars, ignoring ASCII case.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let substitution = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(substitution);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Up to three candidates near `name`: within a third of its length in edits (at least 1),
/// or starting with it (4 characters or more), nearest first.
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let limit = (name.chars().count() / 3).max(1);
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let d = edit_distance(name, c);
            let prefix = lower.len() >= 4 && c.to_ascii_lowercase().starts_with(&lower);
            (d <= limit || prefix).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}
