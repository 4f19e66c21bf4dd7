//! The event-spec parser (syntax and modifier rules in the crate doc). Parsing is pure: PMU
//! formats come from the caller (read with [`pmu_format`](crate::pmu_format)) or the built-in
//! layouts of [`PmuFormat::default_for`].
//!
//! The parser must never read the host itself: only [`EventKind::resolve_in`] and
//! [`EventSpec::resolve_in`] look up a PMU's type, through `crate::sysfs`. Its errors are
//! `error.rs`, its modifier rules `modifiers.rs`.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use crate::format::{ConfigWord, PmuFormat};
use crate::names::{TYPE_HARDWARE, TYPE_RAW, TYPE_SOFTWARE};
use crate::sysfs::{pmu_type, valid_pmu_name};

mod error;
mod modifiers;

pub use error::SpecError;
pub(crate) use error::{nearest, or_list};
use modifiers::{group_modifiers, parse_modifiers, Modifiers, PERF_MODIFIERS};

/// What an event is, before the PMU's type number is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// PERF_TYPE_HARDWARE with this config (`enum perf_hw_id`).
    Hardware(u64),
    /// PERF_TYPE_SOFTWARE with this config (`enum perf_sw_ids`).
    Software(u64),
    /// PERF_TYPE_RAW (`rNNNN`).
    Raw(u64),
    /// `pmu/terms/`: the type is the PMU's sysfs `type`.
    Pmu {
        pmu: String,
        config: u64,
        config1: u64,
        config2: u64,
    },
}

/// One parsed event. [`EventSpec::resolve`] turns it into the attr fields it fixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub kind: EventKind,
    /// The event as typed (one item of the list, trimmed), for messages.
    pub text: String,
    /// What perf displays and stores in EVENT_DESC: the `name=` term, else the text as typed
    /// (modifiers included).
    pub name: String,
    /// `period=` term.
    pub period: Option<u64>,
    /// `freq=` term.
    pub freq: Option<u64>,
    pub exclude_user: bool,
    pub exclude_kernel: bool,
    /// Set with `u` or `k` (perf excludes the hypervisor unless `h` is given too).
    pub exclude_hv: bool,
    /// Set by `G` (count only the guest).
    pub exclude_host: bool,
    /// perf's default with no modifier; kept by `u`, `p` and `H`, cleared by `G` or any other
    /// modifier string ([crate doc](crate#event-specs)).
    pub exclude_guest: bool,
    /// `I`.
    pub exclude_idle: bool,
    /// 0..=3, from `p`, `pp`, `ppp`.
    pub precise: u8,
    /// `S`.
    pub sample_read: bool,
    /// `D`.
    pub pinned: bool,
    /// `e`.
    pub exclusive: bool,
    /// A `G` or `H` modifier was given: a group's modifiers then leave the guest/host
    /// exclusions to the event's own (perf's `exclude_GH`).
    pub(crate) gh_modifier: bool,
}

/// A group of parsed events: one `{...}` group (its modifiers applied to every member), or
/// one event given outside braces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSpec {
    /// The events, the leader first.
    pub events: Vec<EventSpec>,
    /// Written as `{...}` (a group of one event outside braces is just that event).
    pub braced: bool,
}

/// The attr words of a resolved event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrConfig {
    pub type_: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
}

/// PMU formats by PMU name, for [`parse_events_with`].
pub type Formats = BTreeMap<String, PmuFormat>;

/// Generic events by perf name, aliases included: (name, attr type, config).
const GENERIC: &[(&str, u32, u64)] = &[
    ("cycles", TYPE_HARDWARE, 0),
    ("cpu-cycles", TYPE_HARDWARE, 0),
    ("instructions", TYPE_HARDWARE, 1),
    ("cache-references", TYPE_HARDWARE, 2),
    ("cache-misses", TYPE_HARDWARE, 3),
    ("branches", TYPE_HARDWARE, 4),
    ("branch-instructions", TYPE_HARDWARE, 4),
    ("branch-misses", TYPE_HARDWARE, 5),
    ("bus-cycles", TYPE_HARDWARE, 6),
    ("stalled-cycles-frontend", TYPE_HARDWARE, 7),
    ("idle-cycles-frontend", TYPE_HARDWARE, 7),
    ("stalled-cycles-backend", TYPE_HARDWARE, 8),
    ("idle-cycles-backend", TYPE_HARDWARE, 8),
    ("ref-cycles", TYPE_HARDWARE, 9),
    ("cpu-clock", TYPE_SOFTWARE, 0),
    ("task-clock", TYPE_SOFTWARE, 1),
    ("page-faults", TYPE_SOFTWARE, 2),
    ("faults", TYPE_SOFTWARE, 2),
    ("context-switches", TYPE_SOFTWARE, 3),
    ("cs", TYPE_SOFTWARE, 3),
    ("cpu-migrations", TYPE_SOFTWARE, 4),
    ("migrations", TYPE_SOFTWARE, 4),
    ("minor-faults", TYPE_SOFTWARE, 5),
    ("major-faults", TYPE_SOFTWARE, 6),
    ("alignment-faults", TYPE_SOFTWARE, 7),
    ("emulation-faults", TYPE_SOFTWARE, 8),
    ("dummy", TYPE_SOFTWARE, 9),
    ("bpf-output", TYPE_SOFTWARE, 10),
    ("cgroup-switches", TYPE_SOFTWARE, 11),
];

/// Terms every PMU spec takes besides its format's.
const BUILTIN_TERMS: [&str; 6] = ["config", "config1", "config2", "name", "period", "freq"];

/// The generic event perf knows by `name` (aliases included).
pub fn generic_event(name: &str) -> Option<EventKind> {
    GENERIC
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, type_, config)| match type_ {
            TYPE_HARDWARE => EventKind::Hardware(config),
            _ => EventKind::Software(config),
        })
}

/// Every generic name this parser accepts, aliases included.
pub fn generic_names() -> impl Iterator<Item = &'static str> {
    GENERIC.iter().map(|(n, _, _)| *n)
}

/// Parses a comma-separated event list with the built-in PMU formats.
pub fn parse_events(text: &str) -> Result<Vec<EventSpec>, SpecError> {
    parse_events_with(text, &Formats::new())
}

/// Parses a comma-separated event list; PMUs missing from `formats` use
/// [`PmuFormat::default_for`]. Groups (`{a,b}:S`) are flattened into their members, each
/// with the group's modifiers applied ([`parse_groups_with`] keeps them apart).
pub fn parse_events_with(text: &str, formats: &Formats) -> Result<Vec<EventSpec>, SpecError> {
    Ok(parse_groups_with(text, formats)?
        .into_iter()
        .flat_map(|g| g.events)
        .collect())
}

/// Parses an event list into its groups: each `{...}` is one [`GroupSpec`], each event
/// outside braces one of its own (as perf groups them). PMUs missing from `formats` use
/// [`PmuFormat::default_for`].
pub fn parse_groups_with(text: &str, formats: &Formats) -> Result<Vec<GroupSpec>, SpecError> {
    split_groups(text)?
        .into_iter()
        .map(|item| parse_list_item(text, item, formats))
        .collect()
}

/// One item of list `text`, parsed.
pub(crate) fn parse_list_item(
    text: &str,
    item: ListItem<'_>,
    formats: &Formats,
) -> Result<GroupSpec, SpecError> {
    match item {
        ListItem::Event(part) => Ok(GroupSpec {
            events: vec![parse_item(text, part, formats)?],
            braced: false,
        }),
        ListItem::Group {
            text: group,
            members,
            modifiers,
        } => {
            let events = members
                .into_iter()
                .enumerate()
                .map(|(i, m)| {
                    let event = parse_item(text, m, formats)?;
                    match modifiers {
                        Some(mods) => group_modifiers(text, group, mods, event, i == 0),
                        None => Ok(event),
                    }
                })
                .collect::<Result<_, _>>()?;
            Ok(GroupSpec {
                events,
                braced: true,
            })
        }
    }
}

/// One item of an event list: an event, or a `{...}` group.
pub(crate) enum ListItem<'a> {
    Event(&'a str),
    Group {
        /// The whole group as typed, modifiers included (for messages).
        text: &'a str,
        members: Vec<&'a str>,
        /// After `}:`.
        modifiers: Option<&'a str>,
    },
}

impl ListItem<'_> {
    /// The event texts of the item.
    pub(crate) fn parts(&self) -> Vec<&str> {
        match self {
            ListItem::Event(part) => vec![part],
            ListItem::Group { members, .. } => members.clone(),
        }
    }
}

/// Splits a list into events and `{...}` groups at the commas outside term lists and braces.
/// Groups do not nest (perf's grammar refuses that too).
pub(crate) fn split_groups(spec: &str) -> Result<Vec<ListItem<'_>>, SpecError> {
    let bad = |part: &str, reason| SpecError::BadGroup {
        spec: spec.to_string(),
        part: part.trim().to_string(),
        reason,
    };
    let mut tops = Vec::new();
    let (mut start, mut in_terms, mut open) = (0, false, None::<usize>);
    for (i, c) in spec.char_indices() {
        match c {
            '/' => in_terms = !in_terms,
            _ if in_terms => {}
            '{' if open.is_some() => {
                let from = open.unwrap_or(i);
                return Err(bad(&spec[from..], "groups do not nest"));
            }
            '{' => open = Some(i),
            '}' if open.is_none() => {
                return Err(bad(&spec[start..=i], "'}' without its '{'"));
            }
            '}' => open = None,
            ',' if open.is_none() => {
                tops.push(&spec[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if let Some(from) = open {
        return Err(bad(&spec[from..], "missing closing '}'"));
    }
    tops.push(&spec[start..]);
    let mut items = Vec::new();
    for top in tops {
        let part = top.trim();
        let Some(brace) = part.find('{') else {
            items.push(ListItem::Event(top));
            continue;
        };
        if brace != 0 {
            return Err(bad(part, "text before '{' (a group starts with '{')"));
        }
        // Groups do not nest, so the first '}' closes the group.
        let close = part.find('}').unwrap_or(part.len());
        let inner = part.get(1..close).unwrap_or("");
        if inner.trim().is_empty() {
            return Err(bad(part, "an empty group"));
        }
        let after = part.get(close + 1..).unwrap_or("");
        let modifiers = match after.strip_prefix(':') {
            Some(m) => Some(m),
            None if after.is_empty() => None,
            None => {
                return Err(bad(part, "only ':modifiers' may follow '}'"));
            }
        };
        items.push(ListItem::Group {
            text: part,
            members: split_list(inner)?,
            modifiers,
        });
    }
    Ok(items)
}

/// Parses exactly one event (`--stalls SPEC`, `--cycles SPEC`) with the built-in formats.
pub fn parse_event(text: &str) -> Result<EventSpec, SpecError> {
    parse_event_with(text, &Formats::new())
}

/// Parses exactly one event.
pub fn parse_event_with(text: &str, formats: &Formats) -> Result<EventSpec, SpecError> {
    let mut events = parse_events_with(text, formats)?;
    if events.len() != 1 {
        return Err(SpecError::NotOneEvent {
            spec: text.to_string(),
            count: events.len(),
        });
    }
    Ok(events.remove(0))
}

/// Splits at commas outside `pmu/.../` term lists.
pub(crate) fn split_list(spec: &str) -> Result<Vec<&str>, SpecError> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut in_terms = false;
    for (i, c) in spec.char_indices() {
        match c {
            '/' => in_terms = !in_terms,
            ',' if !in_terms => {
                items.push(&spec[start..i]);
                start = i + 1;
            }
            '{' | '}' if !in_terms => {
                // Only reached inside a group: split_groups handles the outer braces.
                return Err(SpecError::BadGroup {
                    spec: spec.to_string(),
                    part: spec.trim().to_string(),
                    reason: "groups do not nest",
                });
            }
            _ => {}
        }
    }
    if in_terms {
        return Err(SpecError::Unterminated {
            spec: spec.to_string(),
            part: spec[start..].trim().to_string(),
        });
    }
    items.push(&spec[start..]);
    Ok(items)
}

pub(crate) fn parse_item(
    spec: &str,
    item: &str,
    formats: &Formats,
) -> Result<EventSpec, SpecError> {
    let part = item.trim();
    if part.is_empty() {
        return Err(SpecError::Empty {
            spec: spec.to_string(),
        });
    }
    match part.find('/') {
        Some(slash) => match named_kind(spec, &part[..slash])? {
            Some(kind) => parse_named_terms_item(spec, part, slash, kind),
            None => parse_pmu_item(spec, part, slash, formats),
        },
        None => parse_named_item(spec, part, formats),
    }
}

/// The PMU a `pmu/terms/` item names (not a generic or raw event with terms).
pub(crate) fn named_item_base(part: &str) -> Option<&str> {
    let (base, _) = part.split_once('/')?;
    match named_kind("", base) {
        Ok(None) => Some(base),
        _ => None,
    }
}

/// A generic name or raw encoding: `Ok(Some(kind))`; anything else `Ok(None)`.
fn named_kind(spec: &str, base: &str) -> Result<Option<EventKind>, SpecError> {
    Ok(match parse_raw(spec, base)? {
        Some(config) => Some(EventKind::Raw(config)),
        None => generic_event(base),
    })
}

/// The core PMUs whose event aliases a bare name may be, in perf's order of preference:
/// `cpu`, then `cpu_core` (hybrid Intel's P-cores), then Arm PMUv3 PMUs.
fn core_alias<'a>(name: &str, formats: &'a Formats) -> Option<(&'a str, &'a PmuFormat, &'a str)> {
    let rank = |pmu: &str| match pmu {
        "cpu" => Some(0),
        "cpu_core" => Some(1),
        p if p.starts_with("armv8") || p.starts_with("armv9") => Some(2),
        _ => None,
    };
    formats
        .iter()
        .filter_map(|(pmu, f)| Some((rank(pmu)?, pmu.as_str(), f, f.alias(name)?)))
        .min_by_key(|&(r, ..)| r)
        .map(|(_, pmu, f, terms)| (pmu, f, terms))
}

/// The core PMUs a bare name could be an alias of, for the resolver to read: `part`'s
/// name when it is neither a generic event nor a raw encoding nor `pmu/terms/`.
pub(crate) fn bare_alias_candidate(part: &str) -> Option<&str> {
    if part.contains('/') {
        return None;
    }
    let base = part.split_once(':').map_or(part, |(b, _)| b).trim();
    matches!(named_kind("", base), Ok(None)).then_some(base)
}

/// Each valueless term that is none of the PMU's format terms but one of its event aliases
/// (`cpu/slots/`, `cpu_core/topdown-be-bound,name=x/`) replaced by the alias's terms.
fn expand_aliases(text: &str, format: &PmuFormat) -> String {
    split_outside_quotes(text)
        .into_iter()
        .map(|term| {
            let t = term.trim();
            match format.alias(t) {
                Some(terms) if !t.contains('=') && format.get(t).is_none() => terms,
                _ => term,
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn pmu_kind(pmu: &str, t: &Terms) -> EventKind {
    EventKind::Pmu {
        pmu: pmu.to_string(),
        config: t.words[0],
        config1: t.words[1],
        config2: t.words[2],
    }
}

fn parse_named_item(spec: &str, part: &str, formats: &Formats) -> Result<EventSpec, SpecError> {
    let (base, mods) = match part.split_once(':') {
        Some((base, mods)) => (base, Some(mods)),
        None => (part, None),
    };
    let Some(kind) = named_kind(spec, base)? else {
        if let Some((pmu, format, terms)) = core_alias(base, formats) {
            let mods = match mods {
                Some(m) => parse_modifiers(spec, part, m, true)?,
                None => Modifiers::default(),
            };
            let t = parse_terms(spec, pmu, terms, format)?;
            return Ok(mods.apply(new_spec(pmu_kind(pmu, &t), part, t)));
        }
        if let Some(m) = mods {
            if !m.is_empty() && !m.chars().all(|c| PERF_MODIFIERS.contains(c)) {
                return Err(SpecError::Unsupported {
                    spec: spec.to_string(),
                    part: part.to_string(),
                    what: "tracepoints (or unknown events with bad modifiers) are",
                });
            }
        }
        let mut known: Vec<&str> = generic_names().collect();
        known.extend(formats.values().flat_map(PmuFormat::alias_names));
        return Err(SpecError::UnknownEvent {
            spec: spec.to_string(),
            name: base.to_string(),
            suggestions: nearest(base, known),
        });
    };
    let mods = match mods {
        Some(m) => parse_modifiers(spec, part, m, true)?,
        None => Modifiers::default(),
    };
    Ok(mods.apply(new_spec(kind, part, Terms::default())))
}

/// An [`EventSpec`] with perf's defaults for everything modifiers set.
fn new_spec(kind: EventKind, part: &str, t: Terms) -> EventSpec {
    EventSpec {
        kind,
        text: part.to_string(),
        name: t.name.unwrap_or_else(|| part.to_string()),
        period: t.period,
        freq: t.freq,
        exclude_user: false,
        exclude_kernel: false,
        exclude_hv: false,
        exclude_host: false,
        exclude_guest: false,
        exclude_idle: false,
        precise: 0,
        sample_read: false,
        pinned: false,
        exclusive: false,
        gh_modifier: false,
    }
}

/// `rNNNN` / `r0xNNNN` (1 to 16 hex digits): `Ok(Some(config))`; anything else `Ok(None)`.
fn parse_raw(spec: &str, base: &str) -> Result<Option<u64>, SpecError> {
    let Some(rest) = base.strip_prefix('r') else {
        return Ok(None);
    };
    let digits = rest
        .strip_prefix("0x")
        .or_else(|| rest.strip_prefix("0X"))
        .unwrap_or(rest);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    u64::from_str_radix(digits, 16)
        .map(Some)
        .map_err(|_| SpecError::BadNumber {
            spec: spec.to_string(),
            term: "raw event".to_string(),
            value: base.to_string(),
        })
}

/// `name/terms/mods` split at the closing `/`: (terms, modifiers).
fn split_terms<'a>(
    spec: &str,
    part: &'a str,
    slash: usize,
) -> Result<(&'a str, Modifiers), SpecError> {
    let rest = &part[slash + 1..];
    let Some(close) = rest.find('/') else {
        return Err(SpecError::Unterminated {
            spec: spec.to_string(),
            part: part.to_string(),
        });
    };
    let after = &rest[close + 1..];
    let mods = match after.strip_prefix(':') {
        Some(m) => parse_modifiers(spec, part, m, true)?,
        None => parse_modifiers(spec, part, after, false)?,
    };
    Ok((&rest[..close], mods))
}

/// `cpu-clock/freq=500/u`, `r1a2/name=x/`: a generic or raw event with terms.
fn parse_named_terms_item(
    spec: &str,
    part: &str,
    slash: usize,
    kind: EventKind,
) -> Result<EventSpec, SpecError> {
    let (terms, mods) = split_terms(spec, part, slash)?;
    let event = &part[..slash];
    let t = parse_term_list(spec, terms, |_, key, _, _| {
        Err(SpecError::UnsupportedTerm {
            spec: spec.to_string(),
            event: event.to_string(),
            term: key.to_string(),
            suggestions: nearest(key, ["period", "freq", "name"]),
        })
    })?;
    Ok(mods.apply(new_spec(kind, part, t)))
}

fn parse_pmu_item(
    spec: &str,
    part: &str,
    slash: usize,
    formats: &Formats,
) -> Result<EventSpec, SpecError> {
    let pmu = &part[..slash];
    if !valid_pmu_name(pmu) {
        return Err(SpecError::BadPmuName {
            spec: spec.to_string(),
            part: part.to_string(),
        });
    }
    let (terms, mods) = split_terms(spec, part, slash)?;
    let default_format;
    let format = match formats.get(pmu) {
        Some(f) => f,
        None => {
            default_format = PmuFormat::default_for(pmu);
            &default_format
        }
    };
    let t = parse_terms(spec, pmu, &expand_aliases(terms, format), format)?;
    Ok(mods.apply(new_spec(pmu_kind(pmu, &t), part, t)))
}

#[derive(Default)]
struct Terms {
    words: [u64; 3],
    name: Option<String>,
    period: Option<u64>,
    freq: Option<u64>,
}

/// Decimal or `0x` hex; no value means 1 (`edge`).
fn term_number(spec: &str, key: &str, value: Option<&str>) -> Result<u64, SpecError> {
    match value {
        None => Ok(1),
        Some(v) => parse_number(v).ok_or_else(|| SpecError::BadNumber {
            spec: spec.to_string(),
            term: key.to_string(),
            value: v.to_string(),
        }),
    }
}

/// `text` split at commas outside quotes (`name='a,b'` is one term).
fn split_outside_quotes(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut quote) = (0, None);
    for (i, c) in text.char_indices() {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            (',', None) => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A comma-separated term list: `name`, `period` and `freq` are handled here, every other
/// term by `other(terms, key, value, term)`.
fn parse_term_list<F>(spec: &str, text: &str, mut other: F) -> Result<Terms, SpecError>
where
    F: FnMut(&mut Terms, &str, Option<&str>, &str) -> Result<(), SpecError>,
{
    let err_spec = || spec.to_string();
    let mut t = Terms::default();
    let mut seen: Vec<&str> = Vec::new();
    if text.trim().is_empty() {
        return Ok(t);
    }
    for term in split_outside_quotes(text) {
        let term = term.trim();
        if term.is_empty() {
            return Err(SpecError::BadTerm {
                spec: err_spec(),
                term: String::new(),
                reason: "empty term (two commas, or a comma before '/')",
            });
        }
        let (key, value) = match term.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (term, None),
        };
        if seen.contains(&key) {
            return Err(SpecError::DuplicateTerm {
                spec: err_spec(),
                term: key.to_string(),
            });
        }
        seen.push(key);
        match key {
            "name" => {
                let v = value.map(unquote).unwrap_or("");
                if v.is_empty() {
                    return Err(SpecError::MissingValue {
                        spec: err_spec(),
                        term: key.to_string(),
                    });
                }
                t.name = Some(v.to_string());
            }
            "period" | "freq" => {
                if matches!(value, None | Some("")) {
                    return Err(SpecError::MissingValue {
                        spec: err_spec(),
                        term: key.to_string(),
                    });
                }
                let v = term_number(spec, key, value)?;
                if v == 0 {
                    return Err(SpecError::BadTerm {
                        spec: err_spec(),
                        term: term.to_string(),
                        reason: "must be at least 1",
                    });
                }
                if key == "period" {
                    t.period = Some(v);
                } else {
                    t.freq = Some(v);
                }
            }
            _ => other(&mut t, key, value, term)?,
        }
    }
    if t.period.is_some() && t.freq.is_some() {
        return Err(SpecError::BadTerm {
            spec: err_spec(),
            term: "freq".to_string(),
            reason: "period and freq exclude each other",
        });
    }
    Ok(t)
}

fn parse_terms(spec: &str, pmu: &str, text: &str, format: &PmuFormat) -> Result<Terms, SpecError> {
    let err_spec = || spec.to_string();
    // Format fields are laid over the config terms afterwards, whatever the order typed.
    let mut fields = Vec::new();
    let mut t = parse_term_list(spec, text, |t, key, value, term| {
        match key {
            "config" => t.words[0] = term_number(spec, key, value)?,
            "config1" => t.words[1] = term_number(spec, key, value)?,
            "config2" => t.words[2] = term_number(spec, key, value)?,
            _ => {
                let Some(field) = format.get(key) else {
                    let candidates: Vec<String> = BUILTIN_TERMS
                        .iter()
                        .copied()
                        .chain(format.terms())
                        .map(str::to_string)
                        .collect();
                    return Err(SpecError::UnknownTerm {
                        spec: err_spec(),
                        pmu: pmu.to_string(),
                        term: key.to_string(),
                        suggestions: nearest(key, candidates.iter().map(String::as_str)),
                        all_terms: candidates,
                    });
                };
                let v = term_number(spec, key, value)?;
                let bits = field.encode(v).ok_or_else(|| SpecError::ValueTooBig {
                    spec: err_spec(),
                    term: key.to_string(),
                    value: v,
                    bits: field.width(),
                })?;
                let word = match field.word {
                    ConfigWord::Config => 0,
                    ConfigWord::Config1 => 1,
                    ConfigWord::Config2 => 2,
                    ConfigWord::Config3 => {
                        return Err(SpecError::Unsupported {
                            spec: err_spec(),
                            part: term.to_string(),
                            what: "terms in config3 are",
                        })
                    }
                };
                fields.push((word, field.mask, bits));
            }
        }
        Ok(())
    })?;
    for (word, mask, bits) in fields {
        t.words[word] = (t.words[word] & !mask) | bits;
    }
    Ok(t)
}

/// Decimal or `0x` hex.
fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => text.parse().ok(),
        None => None,
    }
}

/// perf accepts `name='X'`; the quotes are not part of the name.
fn unquote(v: &str) -> &str {
    for q in ['\'', '"'] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    v
}

impl EventKind {
    /// The PMU a `pmu/.../` spec names.
    pub fn pmu(&self) -> Option<&str> {
        match self {
            EventKind::Pmu { pmu, .. } => Some(pmu),
            _ => None,
        }
    }

    /// attr `type` and config words. `pmu_type` (the PMU's sysfs `type`, see [`pmu_type`]) is
    /// used for `Pmu` kinds only: `cpu` has PERF_TYPE_RAW (4) on non-hybrid x86, `cpu_core`
    /// and `cpu_atom` and `armv8_*` PMUs have their own numbers.
    pub fn resolve(&self, pmu_type: u32) -> AttrConfig {
        let simple = |type_, config| AttrConfig {
            type_,
            config,
            config1: 0,
            config2: 0,
        };
        match self {
            EventKind::Hardware(c) => simple(TYPE_HARDWARE, *c),
            EventKind::Software(c) => simple(TYPE_SOFTWARE, *c),
            EventKind::Raw(c) => simple(TYPE_RAW, *c),
            EventKind::Pmu {
                config,
                config1,
                config2,
                ..
            } => AttrConfig {
                type_: pmu_type,
                config: *config,
                config1: *config1,
                config2: *config2,
            },
        }
    }

    /// [`EventKind::resolve`] reading the PMU's type under `sysfs_root` (normally `/sys`) when
    /// the spec names one. Only the config words: [`EventSpec::resolve_in`] gives every attr
    /// field a spec fixes.
    pub fn resolve_in(&self, sysfs_root: &Path) -> io::Result<AttrConfig> {
        match self.pmu() {
            Some(pmu) => Ok(self.resolve(pmu_type(sysfs_root, pmu)?)),
            None => Ok(self.resolve(0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::error::edit_distance;
    use super::*;
    use crate::pmu::parse_pmu_type;
    use crate::sysfs::pmu_format;

    fn one(text: &str) -> EventSpec {
        parse_event(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn pmu_config(spec: &EventSpec) -> u64 {
        match &spec.kind {
            EventKind::Pmu { config, .. } => *config,
            other => panic!("not a PMU spec: {other:?}"),
        }
    }

    fn err(text: &str) -> SpecError {
        match parse_events(text) {
            Ok(v) => panic!("{text} parsed: {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn seed_recipes() {
        let s = one("cpu/event=0xa2,umask=0x1,name=resource_stalls_any,period=2000003/");
        assert_eq!(
            s.kind,
            EventKind::Pmu {
                pmu: "cpu".into(),
                config: 0x1a2,
                config1: 0,
                config2: 0
            }
        );
        assert_eq!(s.name, "resource_stalls_any");
        assert_eq!((s.period, s.freq, s.precise), (Some(2_000_003), None, 0));
        assert!(!s.exclude_user && !s.exclude_kernel && !s.exclude_hv);
        let c = one("cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted_thread_p,period=2000003/");
        assert_eq!(pmu_config(&c), 0x3c);
        assert_eq!(c.name, "cpu_clk_unhalted_thread_p");
        let s = one("cpu/event=0xa2,umask=0x1,cmask=0,name=resource_stalls_any,period=2000003/");
        assert_eq!(pmu_config(&s), 0x1a2);
        // Both together, as `perf record -e` took them.
        let both = parse_events(
            "cpu/event=0xa2,umask=0x1,name=resource_stalls_any,period=2000003/,\
             cpu/event=0x3c,umask=0x0,name=cpu_clk_unhalted_thread_p,period=2000003/",
        )
        .unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0].name, "resource_stalls_any");
        assert_eq!(pmu_config(&both[1]), 0x3c);
        // PERF_TYPE_RAW is what `cpu` has on non-hybrid x86.
        assert_eq!(
            both[0].kind.resolve(4),
            AttrConfig {
                type_: 4,
                config: 0x1a2,
                config1: 0,
                config2: 0
            }
        );
    }

    #[test]
    fn term_encodings() {
        // CYCLE_ACTIVITY.STALLS_TOTAL: cmask 4.
        assert_eq!(
            pmu_config(&one("cpu/event=0xa3,umask=0x04,cmask=4/")),
            0x0400_04a3
        );
        // UOPS_RETIRED.STALL_CYCLES: cmask 1, inv without a value.
        assert_eq!(
            pmu_config(&one("cpu/event=0xc2,umask=0x2,cmask=1,inv/")),
            0x0180_02c2
        );
        assert_eq!(pmu_config(&one("cpu/event=0xc2,edge,inv=1/")), 0x84_00c2);
        assert_eq!(pmu_config(&one("cpu_core/event=0x3c,any/")), 0x20_003c);
        // AMD event bits 8-11 in config 32-35 (built-in x86 layout and AMD's own).
        assert_eq!(
            pmu_config(&one("cpu/event=0x1d6,umask=0x1b/")),
            0x1_0000_1bd6
        );
        let mut formats = Formats::new();
        formats.insert("cpu".into(), PmuFormat::amd());
        let s =
            parse_event_with("cpu/event=0xd6,umask=0x1b,name=ex_no_retire.all/", &formats).unwrap();
        assert_eq!(pmu_config(&s), 0x1bd6);
        // config terms, laid under the format fields whatever the order.
        assert_eq!(pmu_config(&one("cpu/umask=0x1,config=0xff00a2/")), 0xff01a2);
        let s = one("cpu/config=0x1a2,config1=7,config2=0x10/");
        assert_eq!(
            s.kind.resolve(4),
            AttrConfig {
                type_: 4,
                config: 0x1a2,
                config1: 7,
                config2: 0x10
            }
        );
        // ARM: event is 16 bits; long lives in config1.
        let s = one("armv8_pmuv3_0/event=0x24,long,name=stall_backend/");
        assert_eq!(
            s.kind.resolve(10),
            AttrConfig {
                type_: 10,
                config: 0x24,
                config1: 1,
                config2: 0
            }
        );
        assert_eq!(s.kind.pmu(), Some("armv8_pmuv3_0"));
        let s = one("cpu//");
        assert_eq!((pmu_config(&s), s.name.as_str()), (0, "cpu//"));
    }

    #[test]
    fn names_periods_and_frequencies() {
        let s = one("cpu/event=0x3c,freq=4000/");
        assert_eq!((s.freq, s.period), (Some(4000), None));
        assert_eq!(s.name, "cpu/event=0x3c,freq=4000/");
        assert_eq!(one("cpu/event=0x3c,name='CPU_CLK.X'/").name, "CPU_CLK.X");
        assert_eq!(
            one("cpu/event=0xa3,umask=0x4,cmask=4,name=cycle_activity.stalls_total/").name,
            "cycle_activity.stalls_total"
        );
        assert_eq!(one(" cycles:u ").name, "cycles:u");
        // A quoted name may hold commas (perf's name of a metric's `event,cmask=N` event).
        let s = one("cpu/event=0x1a0,umask=0x1,cmask=0x6,name='no_ops,cmask=0x6'/");
        assert_eq!(
            (s.name.as_str(), pmu_config(&s)),
            ("no_ops,cmask=0x6", 0x1060001a0)
        );
    }

    #[test]
    fn generic_names_and_aliases() {
        let cases = [
            ("cycles", EventKind::Hardware(0)),
            ("cpu-cycles", EventKind::Hardware(0)),
            ("instructions", EventKind::Hardware(1)),
            ("cache-references", EventKind::Hardware(2)),
            ("cache-misses", EventKind::Hardware(3)),
            ("branches", EventKind::Hardware(4)),
            ("branch-instructions", EventKind::Hardware(4)),
            ("branch-misses", EventKind::Hardware(5)),
            ("bus-cycles", EventKind::Hardware(6)),
            ("stalled-cycles-frontend", EventKind::Hardware(7)),
            ("stalled-cycles-backend", EventKind::Hardware(8)),
            ("ref-cycles", EventKind::Hardware(9)),
            ("cpu-clock", EventKind::Software(0)),
            ("task-clock", EventKind::Software(1)),
            ("page-faults", EventKind::Software(2)),
            ("faults", EventKind::Software(2)),
            ("context-switches", EventKind::Software(3)),
            ("cs", EventKind::Software(3)),
            ("cpu-migrations", EventKind::Software(4)),
            ("migrations", EventKind::Software(4)),
            ("minor-faults", EventKind::Software(5)),
            ("major-faults", EventKind::Software(6)),
            ("alignment-faults", EventKind::Software(7)),
            ("emulation-faults", EventKind::Software(8)),
            ("dummy", EventKind::Software(9)),
        ];
        for (name, kind) in cases {
            let s = one(name);
            assert_eq!(s.kind, kind, "{name}");
            assert_eq!(s.name, name);
            // The canonical names agree with the file-side table.
            let attr = s.kind.resolve(0);
            let shown = crate::default_name(attr.type_, attr.config);
            assert_eq!(generic_event(&shown), Some(kind), "{name} -> {shown}");
        }
        let list = parse_events("cycles,instructions,cpu-clock").unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[2].kind.resolve(99).type_, 1);
    }

    #[test]
    fn raw_configs() {
        assert_eq!(one("r1a2").kind, EventKind::Raw(0x1a2));
        assert_eq!(one("r40004a3").kind, EventKind::Raw(0x0400_04a3));
        assert_eq!(one("r0x3c").kind, EventKind::Raw(0x3c));
        assert_eq!(one("rFFFFFFFFFFFFFFFF").kind, EventKind::Raw(u64::MAX));
        let s = one("r1a2:u");
        assert_eq!(
            (s.kind.clone(), s.name.as_str()),
            (EventKind::Raw(0x1a2), "r1a2:u")
        );
        assert_eq!(
            s.kind.resolve(8),
            AttrConfig {
                type_: 4,
                config: 0x1a2,
                config1: 0,
                config2: 0
            }
        );
        assert!(matches!(
            err("r1ffffffffffffffff"),
            SpecError::BadNumber { .. }
        ));
        // Not hex: a (misspelt) name.
        assert!(matches!(err("rxyz"), SpecError::UnknownEvent { .. }));
        assert!(matches!(err("r"), SpecError::UnknownEvent { .. }));
    }

    #[test]
    fn modifiers() {
        let s = one("cycles:u");
        assert!(!s.exclude_user && s.exclude_kernel && s.exclude_hv);
        let s = one("cycles:k");
        assert!(s.exclude_user && !s.exclude_kernel && s.exclude_hv);
        let s = one("cycles:uk");
        assert!(!s.exclude_user && !s.exclude_kernel && s.exclude_hv);
        let s = one("cycles:h");
        assert!(s.exclude_user && s.exclude_kernel && !s.exclude_hv);
        assert_eq!(one("cycles:p").precise, 1);
        assert_eq!(one("cycles:pp").precise, 2);
        let s = one("cycles:ppp");
        assert_eq!(s.precise, 3);
        assert!(!s.exclude_user && !s.exclude_kernel);
        let s = one("cycles:upp");
        assert_eq!(
            (s.precise, s.exclude_kernel, s.exclude_user),
            (2, true, false)
        );
        let s = one("cpu/event=0x3c/u");
        assert!(s.exclude_kernel && !s.exclude_user);
        let s = one("cpu/event=0x3c,name=c/:kp");
        assert!(s.exclude_user && !s.exclude_kernel && s.precise == 1);
        assert_eq!(s.name, "c");
        assert!(matches!(err("cycles:pppp"), SpecError::BadModifiers { .. }));
        assert!(matches!(err("cycles:"), SpecError::BadModifiers { .. }));
        let e = err("cycles:x");
        assert_eq!(
            e.to_string(),
            "unknown modifier 'x' in 'cycles:x' (supported: u, k, h, G, H, I, p, pp, ppp, S, D, e)"
        );
        assert!(matches!(
            err("cpu/event=0x3c/Z"),
            SpecError::UnknownModifier { modifier: 'Z', .. }
        ));
        let s = one("cpu/event=0x3c/G");
        assert!(s.exclude_host && !s.exclude_guest);
    }

    #[test]
    fn bad_specs() {
        let e = err("cpu/event=0x3c,umask=0");
        assert!(matches!(e, SpecError::Unterminated { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "unterminated PMU term list 'cpu/event=0x3c,umask=0' (missing closing '/')"
        );
        let e = err("cycles,cpu/event=0x3c");
        assert_eq!(
            e.to_string(),
            "unterminated PMU term list 'cpu/event=0x3c' (missing closing '/') in 'cycles,cpu/event=0x3c'"
        );
        let e = err("cpu/event=0xzz/");
        assert_eq!(
            e,
            SpecError::BadNumber {
                spec: "cpu/event=0xzz/".into(),
                term: "event".into(),
                value: "0xzz".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "bad number '0xzz' for 'event' in 'cpu/event=0xzz/'"
        );
        assert!(matches!(err("cpu/event=12a/"), SpecError::BadNumber { .. }));
        assert!(matches!(err("cpu/event=0x/"), SpecError::BadNumber { .. }));
        assert!(matches!(
            err("cpu/event=99999999999999999999/"),
            SpecError::BadNumber { .. }
        ));
        let e = err("cpu/event=0x3c,umsk=1/");
        assert!(matches!(&e, SpecError::UnknownTerm { term, .. } if term == "umsk"));
        assert_eq!(
            e.to_string(),
            "unknown term 'umsk' for PMU 'cpu' in 'cpu/event=0x3c,umsk=1/' (did you mean umask?)"
        );
        let e = err("cpu/zzzzzzzz=1/");
        assert!(
            e.to_string().contains("known terms: config, config1"),
            "{e}"
        );
        // The x86 built-in event field is 12 bits wide (AMD's 0-7,32-35); Intel's is 8.
        assert_eq!(pmu_config(&one("cpu/event=0x100/")), 1 << 32);
        assert!(matches!(
            err("cpu_core/event=0x100/"),
            SpecError::ValueTooBig { bits: 8, .. }
        ));
        let e = err("cpu/event=0x1000/");
        assert_eq!(
            e.to_string(),
            "value 0x1000 for 'event' does not fit in its 12 bits in 'cpu/event=0x1000/'"
        );
        assert!(matches!(
            err("cpu/cmask=256/"),
            SpecError::ValueTooBig { .. }
        ));
        assert!(matches!(
            err("cpu/event=1,event=2/"),
            SpecError::DuplicateTerm { .. }
        ));
        assert!(matches!(
            err("cpu/event=1,,umask=2/"),
            SpecError::BadTerm { .. }
        ));
        assert!(matches!(err("cpu/name/"), SpecError::MissingValue { .. }));
        assert!(matches!(err("cpu/period/"), SpecError::MissingValue { .. }));
        assert!(matches!(err("cpu/period=0/"), SpecError::BadTerm { .. }));
        assert!(matches!(
            err("cpu/period=1,freq=2/"),
            SpecError::BadTerm { .. }
        ));
        assert!(matches!(err("/event=1/"), SpecError::BadPmuName { .. }));
        assert!(matches!(err("c pu/event=1/"), SpecError::BadPmuName { .. }));
        assert!(matches!(err(""), SpecError::Empty { .. }));
        assert_eq!(err("").to_string(), "empty event spec");
        assert_eq!(
            err("cycles,,instructions").to_string(),
            "empty event in 'cycles,,instructions'"
        );
        assert!(matches!(err("cycles,"), SpecError::Empty { .. }));
        assert!(matches!(
            err("sched:sched_switch"),
            SpecError::Unsupported { .. }
        ));
        assert!(matches!(
            parse_event("cycles,instructions"),
            Err(SpecError::NotOneEvent { count: 2, .. })
        ));
        let e = err("cycles,cpu/event=0xzz/");
        assert_eq!(e.spec(), "cycles,cpu/event=0xzz/");
        // ARM's layout has no umask.
        assert!(matches!(
            err("armv8_pmuv3_0/event=0x24,umask=1/"),
            SpecError::UnknownTerm { .. }
        ));
    }

    #[test]
    fn unknown_names_suggest_the_nearest() {
        let e = err("cpu-clok");
        assert_eq!(
            e.to_string(),
            "unknown event 'cpu-clok' (did you mean cpu-clock?)"
        );
        assert!(
            matches!(&e, SpecError::UnknownEvent { suggestions, .. } if suggestions == &["cpu-clock"])
        );
        let e = err("cycles,instrutions");
        assert_eq!(
            e.to_string(),
            "unknown event 'instrutions' in 'cycles,instrutions' (did you mean instructions?)"
        );
        let e = err("stalled-cycles");
        assert!(e.to_string().contains("stalled-cycles-backend"), "{e}");
        let e = err("Cycles");
        assert!(e.to_string().contains("did you mean cycles"), "{e}");
        let e = err("zzzzzzzzzzzz");
        assert_eq!(
            e.to_string(),
            "unknown event 'zzzzzzzzzzzz': neither a generic event nor an alias in a core PMU's events/ (cpu, cpu_core, armv8_*) on this machine"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", "ABC"), 0);
        let near = nearest("cach-misses", generic_names());
        assert_eq!(near.first().map(String::as_str), Some("cache-misses"));
    }

    #[test]
    fn sysfs_readers_on_a_fixture_tree() {
        let root =
            std::env::temp_dir().join(format!("cpiflame-events-spec-{}", std::process::id()));
        let cpu = root.join("bus/event_source/devices/cpu");
        std::fs::create_dir_all(cpu.join("format")).unwrap();
        std::fs::write(cpu.join("type"), "4\n").unwrap();
        for (term, text) in [
            ("event", "config:0-7,32-35\n"),
            ("umask", "config:8-15\n"),
            ("edge", "config:18\n"),
            ("inv", "config:23\n"),
            ("cmask", "config:24-31\n"),
        ] {
            std::fs::write(cpu.join("format").join(term), text).unwrap();
        }
        assert_eq!(pmu_type(&root, "cpu").unwrap(), 4);
        let format = pmu_format(&root, "cpu").unwrap();
        assert_eq!(format, PmuFormat::amd());
        let mut formats = Formats::new();
        formats.insert("cpu".into(), format);
        let s =
            parse_event_with("cpu/event=0x76,umask=0x0,name=ls_not_halted_cyc/", &formats).unwrap();
        assert_eq!(s.kind.resolve_in(&root).unwrap().config, 0x76);
        assert_eq!(s.kind.resolve_in(&root).unwrap().type_, 4);
        assert_eq!(EventKind::Software(0).resolve_in(&root).unwrap().type_, 1);
        // AMD's format has no `any`.
        assert!(matches!(
            parse_event_with("cpu/event=0x3c,any/", &formats),
            Err(SpecError::UnknownTerm { .. })
        ));
        assert_eq!(
            pmu_type(&root, "cpu_core").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            pmu_type(&root, "../x").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        std::fs::write(cpu.join("type"), "four\n").unwrap();
        assert_eq!(
            pmu_type(&root, "cpu").unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        std::fs::write(cpu.join("format/umask"), "nonsense").unwrap();
        assert_eq!(
            pmu_format(&root, "cpu").unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(parse_pmu_type(" 10\n"), Some(10));
        assert_eq!(parse_pmu_type(""), None);
    }

    fn groups(text: &str) -> Vec<GroupSpec> {
        parse_groups_with(text, &Formats::new()).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn groups_keep_their_members_and_lone_events_are_groups_of_one() {
        let g = groups("{cpu-clock,task-clock}:S,page-faults");
        assert_eq!(g.len(), 2);
        assert!(g[0].braced && !g[1].braced);
        let names: Vec<&str> = g[0].events.iter().map(|e| e.name.as_str()).collect();
        // Members keep their own names (perf shows `cpu-clock`, not `cpu-clock:S`).
        assert_eq!(names, ["cpu-clock", "task-clock"]);
        assert!(g[0].events.iter().all(|e| e.sample_read));
        assert!(!g[1].events[0].sample_read);
        // The flat list is the members in order.
        let flat: Vec<String> = parse_events("{cpu-clock,task-clock}:S,page-faults")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(flat, ["cpu-clock", "task-clock", "page-faults"]);
        // PMU terms, commas inside them included, and spaces around members.
        let g = groups("{ cpu/event=0x3c,umask=0x0/ , cpu/event=0xc0/ }:S");
        assert_eq!(g[0].events.len(), 2);
        assert_eq!(pmu_config(&g[0].events[0]), 0x3c);
        assert_eq!(pmu_config(&g[0].events[1]), 0xc0);
        // A group without modifiers leaves each member as parsed alone.
        let g = groups("{cpu-clock:u,task-clock}");
        assert_eq!(g[0].events[0], one("cpu-clock:u"));
        assert_eq!(g[0].events[1], one("task-clock"));
    }

    /// Group modifiers start from each member's own (perf 6.1 `perf evlist -v` for the
    /// same specs: `{cpu-clock,task-clock}:S` keeps exclude_guest, `{cpu-clock:k,
    /// task-clock}:u` counts cpu-clock in user and kernel space, `D` reaches the leader only).
    #[test]
    fn group_modifiers_apply_to_every_member_as_perf_applies_them() {
        let g = groups("{cpu-clock,task-clock}:S");
        for e in &g[0].events {
            assert!(e.sample_read && e.exclude_guest && !e.exclude_user, "{e:?}");
        }
        let g = groups("{cpu-clock,task-clock}:u");
        for e in &g[0].events {
            assert!(!e.exclude_user && e.exclude_kernel && e.exclude_hv, "{e:?}");
            assert!(e.exclude_guest && !e.sample_read, "{e:?}");
        }
        let g = groups("{cpu-clock:k,task-clock/period=1000/}:uS");
        let (k, t) = (&g[0].events[0], &g[0].events[1]);
        assert!(
            !k.exclude_user && !k.exclude_kernel && k.exclude_hv,
            "{k:?}"
        );
        assert!(!t.exclude_user && t.exclude_kernel && t.exclude_hv, "{t:?}");
        assert!(k.sample_read && t.sample_read);
        assert_eq!(t.period, Some(1000));
        let g = groups("{cpu-clock,task-clock}:D");
        assert!(g[0].events[0].pinned && !g[0].events[1].pinned);
        // The group's modifiers alone decide S (perf resets it per member).
        let g = groups("{cpu-clock:S,task-clock}:u");
        assert!(!g[0].events[0].sample_read);
        // G/H given on a member keep its guest/host choice under the group's u.
        let g = groups("{cpu-clock:G,task-clock}:u");
        assert!(!g[0].events[0].exclude_guest && g[0].events[0].exclude_host);
        assert!(g[0].events[1].exclude_guest);
        // Precise levels add up, as in perf, and are capped.
        assert_eq!(groups("{cpu-clock:p,task-clock}:p")[0].events[0].precise, 2);
        assert!(matches!(
            err("{cpu-clock:pp,task-clock}:pp"),
            SpecError::BadModifiers { .. }
        ));
    }

    #[test]
    fn bad_groups_are_refused_naming_the_group() {
        for (text, part, says) in [
            (
                "{cpu-clock,{task-clock}}",
                "{cpu-clock,{task-clock}}",
                "nest",
            ),
            (
                "cpu-clock,{task-clock",
                "{task-clock",
                "missing closing '}'",
            ),
            ("cpu-clock}", "cpu-clock}", "without its '{'"),
            ("{}", "{}", "empty group"),
            ("{cpu-clock}x", "{cpu-clock}x", "':modifiers'"),
            ("x{cpu-clock}", "x{cpu-clock}", "before '{'"),
        ] {
            let e = err(text);
            assert!(
                matches!(&e, SpecError::BadGroup { part: p, .. } if p == part),
                "{text}: {e:?}"
            );
            let line = e.to_string();
            assert!(line.contains(part) && line.contains(says), "{text}: {line}");
            assert!(!line.contains('\n'), "{line}");
        }
        // A member's own error names the member; a group modifier's names the group.
        let e = err("{cpu-clock,task-clokc}:S");
        assert!(
            matches!(&e, SpecError::UnknownEvent { name, .. } if name == "task-clokc"),
            "{e:?}"
        );
        let e = err("{cpu-clock,task-clock}:Z");
        assert!(
            e.to_string()
                .starts_with("unknown modifier 'Z' in '{cpu-clock,task-clock}:Z'"),
            "{e}"
        );
        let e = err("{cpu-clock,task-clock}:SS");
        assert!(matches!(
            e,
            SpecError::DuplicateModifier { modifier: 'S', .. }
        ));
        assert!(matches!(
            err("{cpu-clock,task-clock}:"),
            SpecError::BadModifiers { .. }
        ));
        assert!(matches!(err("{cpu-clock,}"), SpecError::Empty { .. }));
    }
}
