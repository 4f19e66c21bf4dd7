//! Event modifiers (`:u`, `:pp`, `{...}:S`): what each sets in the attr, as perf's
//! `get_event_modifier` and `parse_events__modifier_event` make them mean (the rules are in
//! the crate doc), and which perf modifiers cpiflame refuses, with the reason.
//!
//! Pure: this module must never parse anything but the modifier string it is given.

use super::{EventSpec, SpecError};

/// Every letter perf takes as a modifier (6.1 and later), honoured or refused.
pub(super) const PERF_MODIFIERS: &str = "ukhGHIpPSDeWbRX";

/// The attr bits a modifier string sets, as perf's `get_event_modifier` sets them for one
/// event (not a group).
#[derive(Clone, Copy, Debug)]
pub(super) struct Modifiers {
    exclude_user: bool,
    exclude_kernel: bool,
    exclude_hv: bool,
    exclude_host: bool,
    exclude_guest: bool,
    exclude_idle: bool,
    precise: u8,
    sample_read: bool,
    pinned: bool,
    exclusive: bool,
    /// A `G` or `H` was given (perf's `exclude_GH`).
    exclude_gh: bool,
}

impl Default for Modifiers {
    /// No modifier: perf's `event_attr_init` excludes the guest (`perf_guest` is false unless
    /// perf runs with `--guest`).
    fn default() -> Modifiers {
        Modifiers {
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            exclude_host: false,
            exclude_guest: true,
            exclude_idle: false,
            precise: 0,
            sample_read: false,
            pinned: false,
            exclusive: false,
            exclude_gh: false,
        }
    }
}

impl Modifiers {
    pub(super) fn apply(self, mut spec: EventSpec) -> EventSpec {
        spec.exclude_user = self.exclude_user;
        spec.exclude_kernel = self.exclude_kernel;
        spec.exclude_hv = self.exclude_hv;
        spec.exclude_host = self.exclude_host;
        spec.exclude_guest = self.exclude_guest;
        spec.exclude_idle = self.exclude_idle;
        spec.precise = self.precise;
        spec.sample_read = self.sample_read;
        spec.pinned = self.pinned;
        spec.exclusive = self.exclusive;
        spec.gh_modifier = self.exclude_gh;
        spec
    }
}

/// Why a modifier perf knows is refused; `None` for the ones honoured.
pub(super) fn refused_modifier(c: char) -> Option<&'static str> {
    Some(match c {
        'P' => "it asks for the highest precise level the PMU allows, which perf finds by opening the event at levels 3, 2, 1 in turn; give p, pp or ppp",
        'W' => "weak groups are a perf tool feature",
        'b' => "BPF counters are a perf stat feature",
        'R' => "retirement latency sampling is a perf tool feature",
        'X' => "it keeps perf from regrouping events, and cpiflame does not regroup",
        _ => return None,
    })
}

/// Parses modifiers after perf's `get_event_modifier`: the first of `u`, `k`, `h` excludes
/// all three, and each then counts its own level again; the first of `G`, `H` excludes guest
/// and host, and each then counts its own again; `u` and `p` exclude the guest unless `G` or
/// `H` came first; a modifier string drops the default guest exclusion otherwise.
/// `after_colon`: the text followed a `:`, so it may not be empty.
pub(super) fn parse_modifiers(
    spec: &str,
    part: &str,
    text: &str,
    after_colon: bool,
) -> Result<Modifiers, SpecError> {
    if text.is_empty() {
        if after_colon {
            return Err(SpecError::BadModifiers {
                spec: spec.to_string(),
                part: part.to_string(),
                reason: "nothing after ':'",
            });
        }
        return Ok(Modifiers::default());
    }
    let start = Modifiers {
        exclude_guest: false,
        ..Modifiers::default()
    };
    modify(spec, part, text, start)
}

/// A group's modifiers (`{a,b}:S`) applied to member `event`, as perf's
/// `parse_events__modifier_event` applies them to each member of a group: starting from
/// what the member's own modifiers set (so `{cycles:k,instructions}:u` counts cycles in
/// user and kernel space), except `S`, which the group's modifiers alone decide; pinned and
/// exclusive reach the leader only.
pub(super) fn group_modifiers(
    spec: &str,
    group: &str,
    text: &str,
    event: EventSpec,
    leader: bool,
) -> Result<EventSpec, SpecError> {
    if text.is_empty() {
        return Err(SpecError::BadModifiers {
            spec: spec.to_string(),
            part: group.to_string(),
            reason: "nothing after ':'",
        });
    }
    let own = Modifiers {
        exclude_user: event.exclude_user,
        exclude_kernel: event.exclude_kernel,
        exclude_hv: event.exclude_hv,
        exclude_host: event.exclude_host,
        exclude_guest: event.exclude_guest,
        exclude_idle: event.exclude_idle,
        precise: event.precise,
        sample_read: false,
        pinned: event.pinned,
        exclusive: event.exclusive,
        exclude_gh: event.gh_modifier,
    };
    let mut m = modify(spec, group, text, own)?;
    if !leader {
        (m.pinned, m.exclusive) = (event.pinned, event.exclusive);
    }
    Ok(m.apply(event))
}

/// Applies modifier string `text` to `m` (perf's `get_event_modifier` with `m` as the
/// event's attr so far).
pub(super) fn modify(
    spec: &str,
    part: &str,
    text: &str,
    mut m: Modifiers,
) -> Result<Modifiers, SpecError> {
    let mut exclude_gh = m.exclude_gh;
    let err_parts = || (spec.to_string(), part.to_string());
    let mut exclude = m.exclude_user || m.exclude_kernel || m.exclude_hv;
    let mut precise = u32::from(m.precise);
    m.sample_read = false;
    for (i, c) in text.char_indices() {
        if c != 'p' && text[..i].contains(c) {
            let (spec, part) = err_parts();
            return Err(SpecError::DuplicateModifier {
                spec,
                part,
                modifier: c,
            });
        }
        if let Some(reason) = refused_modifier(c) {
            let (spec, part) = err_parts();
            return Err(SpecError::RefusedModifier {
                spec,
                part,
                modifier: c,
                reason,
            });
        }
        match c {
            'u' | 'k' | 'h' => {
                if !exclude {
                    exclude = true;
                    (m.exclude_user, m.exclude_kernel, m.exclude_hv) = (true, true, true);
                }
                match c {
                    'u' => m.exclude_user = false,
                    'k' => m.exclude_kernel = false,
                    _ => m.exclude_hv = false,
                }
                if c == 'u' && !exclude_gh {
                    m.exclude_guest = true;
                }
            }
            'G' | 'H' => {
                if !exclude_gh {
                    exclude_gh = true;
                    (m.exclude_guest, m.exclude_host) = (true, true);
                }
                if c == 'G' {
                    m.exclude_guest = false;
                } else {
                    m.exclude_host = false;
                }
            }
            'p' => {
                precise += 1;
                // perf: "use of precise requires exclude_guest".
                if !exclude_gh {
                    m.exclude_guest = true;
                }
            }
            'I' => m.exclude_idle = true,
            'S' => m.sample_read = true,
            'D' => m.pinned = true,
            'e' => m.exclusive = true,
            _ => {
                let (spec, part) = err_parts();
                return Err(SpecError::UnknownModifier {
                    spec,
                    part,
                    modifier: c,
                });
            }
        }
    }
    if precise > 3 {
        return Err(SpecError::BadModifiers {
            spec: spec.to_string(),
            part: part.to_string(),
            reason: "precise level above 3 (p, pp or ppp)",
        });
    }
    m.precise = precise as u8;
    m.exclude_gh = exclude_gh;
    Ok(m)
}
