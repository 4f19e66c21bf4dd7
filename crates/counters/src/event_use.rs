//! What an event's spec asks for, checked against how the event is used. A spec fixes attr
//! bits (exclusions, precise level, pinned, exclusive, a sample rate, sample-read); some mean
//! nothing, or cannot work, for a given use, and those are refused with the event and the
//! modifier or term named, never dropped.

use std::fmt;

use cpiflame_events::{attr_flags, ResolvedEvent};

/// How an event is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Sampled into a ring buffer (`cpiflame record`).
    Sampling,
    /// Counted and read (`cpiflame stat`, the markers library).
    Counting,
}

/// A spec asked for something this use cannot honour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unhonoured {
    /// The event as named in its spec.
    pub event: String,
    /// What cannot be honoured, and why.
    pub what: &'static str,
}

impl fmt::Display for Unhonoured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {}: {}", self.event, self.what)
    }
}

impl std::error::Error for Unhonoured {}

/// The attr bitfield bits `event`'s spec fixes, for `use_`; `leader`: the event is the first
/// of its group. The caller ORs in its own bits. The `S` modifier is the caller's to honour
/// when sampling (it decides how the group is opened: see [`leader_sampling`]).
pub fn spec_bits(event: &ResolvedEvent, use_: Use, leader: bool) -> Result<u64, Unhonoured> {
    let refuse = |what| {
        Err(Unhonoured {
            event: event.name.clone(),
            what,
        })
    };
    if (event.pinned || event.exclusive) && !leader {
        // The kernel takes pinned and exclusive from a group's leader only.
        return refuse(
            "D (pinned) and e (exclusive) apply to the first event of a group: list it first",
        );
    }
    match use_ {
        Use::Counting if event.rate.is_some() => {
            refuse("period= and freq= set a sample rate, and counting does not sample")
        }
        Use::Counting if event.sample_read => {
            refuse("the S modifier reads counts into samples, and counting does not sample")
        }
        Use::Counting => Ok(event.attr_flags() & !attr_flags::FREQ),
        Use::Sampling => Ok(event.attr_flags()),
    }
}

/// Whether a sampled group (the leader first) is leader-sampled: its leader carries `S`
/// (`{a,b}:S`, or a lone `a:S`, which perf takes as a group of one), so the leader samples
/// with PERF_SAMPLE_READ and the members are read into its samples. `S` on a member whose
/// leader has none is refused: perf would make that member sample and read the group, which
/// no reader of cpiflame's files expects.
pub fn leader_sampling(group: &[ResolvedEvent]) -> Result<bool, Unhonoured> {
    let Some(leader) = group.first() else {
        return Ok(false);
    };
    if leader.sample_read {
        return Ok(true);
    }
    match group.iter().find(|e| e.sample_read) {
        Some(member) => Err(Unhonoured {
            event: member.name.clone(),
            what: "S on a group member other than the first: put it after the group ({a,b}:S) so the first event samples and reads the others",
        }),
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpiflame_events::parse_event;

    fn resolved(spec: &str) -> ResolvedEvent {
        parse_event(spec).unwrap().resolve(0)
    }

    #[test]
    fn bits_reach_the_attr_or_are_refused_by_name() {
        let pp = resolved("cpu-clock:pp");
        let bits = spec_bits(&pp, Use::Sampling, true).unwrap();
        assert_eq!(
            bits & attr_flags::PRECISE_IP_MASK,
            2 << attr_flags::PRECISE_IP_SHIFT
        );
        assert_eq!(spec_bits(&pp, Use::Counting, true), Ok(bits));

        let freq = resolved("cpu-clock/freq=500/");
        assert_ne!(
            spec_bits(&freq, Use::Sampling, true).unwrap() & attr_flags::FREQ,
            0
        );
        let refused = spec_bits(&freq, Use::Counting, true).unwrap_err();
        assert!(refused.to_string().contains("freq="), "{refused}");

        // S is honoured when sampling (by the recorder, which opens the group for it), and
        // refused when counting.
        let read = resolved("cpu-clock:S");
        assert_eq!(spec_bits(&read, Use::Sampling, true), Ok(read.attr_flags()));
        let refused = spec_bits(&read, Use::Counting, true).unwrap_err();
        assert!(refused.to_string().contains("S modifier"), "{refused}");

        let pinned = resolved("task-clock:D");
        assert_ne!(
            spec_bits(&pinned, Use::Counting, true).unwrap() & attr_flags::PINNED,
            0
        );
        let refused = spec_bits(&pinned, Use::Counting, false).unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("event task-clock:D: D (pinned)"),
            "{refused}"
        );
    }

    #[test]
    fn leader_sampling_is_the_leaders_s() {
        let group = |text: &str| -> Vec<ResolvedEvent> {
            cpiflame_events::parse_events(text)
                .unwrap()
                .iter()
                .map(|e| e.resolve(0))
                .collect()
        };
        assert_eq!(
            leader_sampling(&group("{cpu-clock,task-clock}:S")),
            Ok(true)
        );
        assert_eq!(leader_sampling(&group("cpu-clock:S")), Ok(true));
        assert_eq!(leader_sampling(&group("{cpu-clock,task-clock}")), Ok(false));
        assert_eq!(leader_sampling(&[]), Ok(false));
        let refused = leader_sampling(&group("{cpu-clock,task-clock:S}")).unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("event task-clock:S: S on a group member"),
            "{refused}"
        );
    }
}
